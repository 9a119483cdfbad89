/* Status names and the one error reporter every CHECK macro goes through. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>

const char *dr_status_str(int status)
{
    switch (status) {
    case DR_OK: return "ok";
    case DR_ERR_NOMEM: return "out of memory";
    case DR_ERR_USAGE: return "usage error";
    case DR_ERR_CONFIG: return "config error";
    case DR_ERR_DATA: return "data error";
    case DR_ERR_IO: return "i/o error";
    case DR_ERR_DEVICE: return "device error";
    case DR_ERR_NODEVICE: return "no device";
    case DR_ERR_DB: return "database error";
    case DR_ERR_DIVERGED: return "diverged";
    case DR_ERR_INTERRUPTED: return "interrupted";
    case DR_ERR_INTERNAL: return "internal error";
    case DR_ERR_FENCED: return "run reclaimed by another worker";
    }
    return "unknown error";
}

int dr_report(int status, const char *file, int line, const char *lib, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "dawnrun: %s:%d: ", file, line);
    if (lib) fprintf(stderr, "%s: ", lib);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return status;
}

/* Status names, the one error reporter every CHECK macro goes through, and the hook that
 * lets the runner tidy the terminal before a message. */
#include "status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void (*message_hook)(void);

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

void dr_set_message_hook(void (*hook)(void))
{
    message_hook = hook;
}

void dr_message_begin(void)
{
    if (message_hook) message_hook();
}

int dr_debug(void)
{
    const char *v = getenv("DAWNRUN_DEBUG");
    return v && strcmp(v, "1") == 0;
}

int dr_eprintf(const char *fmt, ...)
{
    va_list ap;
    dr_message_begin();
    va_start(ap, fmt);
    int n = vfprintf(stderr, fmt, ap);
    va_end(ap);
    return n;
}

int dr_vreport(int status, const char *file, int line, const char *lib, const char *fmt,
               va_list ap)
{
    dr_message_begin();
    fputs("dawnrun: ", stderr);
    if (dr_debug()) fprintf(stderr, "%s:%d: ", file, line);
    if (lib) fprintf(stderr, "%s: ", lib);
    vfprintf(stderr, fmt, ap);
    if (status == DR_ERR_INTERNAL && !dr_debug())
        fputs(" (an internal error; DAWNRUN_DEBUG=1 shows where)", stderr);
    fputc('\n', stderr);
    return status;
}

int dr_report(int status, const char *file, int line, const char *lib, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    dr_vreport(status, file, line, lib, fmt, ap);
    va_end(ap);
    return status;
}

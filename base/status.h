/* Status codes shared by every module, and the macro family that checks calls and
 * jumps to a function's single cleanup label. Library code returns a dr_status;
 * only runner/ turns one into an exit code. */
#ifndef DAWNRUN_STATUS_H
#define DAWNRUN_STATUS_H

#include <stdarg.h>

enum dr_status {
    DR_OK = 0,
    DR_ERR_NOMEM,        /* host or device allocation failed */
    DR_ERR_USAGE,        /* bad command-line flag */
    DR_ERR_CONFIG,       /* bad experiment config (parse, schema, network shape) */
    DR_ERR_DATA,         /* missing or malformed data file */
    DR_ERR_IO,           /* other file-system failure */
    DR_ERR_DEVICE,       /* a CUDA / cuDNN / cuBLAS call failed */
    DR_ERR_NODEVICE,     /* the requested engine has no usable device here */
    DR_ERR_DB,           /* SQLite failure */
    DR_ERR_DIVERGED,     /* loss became NaN or infinite */
    DR_ERR_INTERRUPTED,  /* SIGINT / SIGTERM asked the run to stop */
    DR_ERR_INTERNAL,     /* a broken invariant: a bug in dawnrun */
    DR_ERR_FENCED        /* a results write was refused: the run was reclaimed or finished
                            by another worker (lease lost); stop working on it */
};

/* Short lower-case name of a status ("config error", ...). Never NULL. */
const char *dr_status_str(int status);

/* Prints "dawnrun: [lib: ]message" to stderr, after the message hook. `file` and `line`
 * are the source location of the check (__FILE__, __LINE__): they are printed, as
 * "dawnrun: file:line: [lib: ]message", only when DAWNRUN_DEBUG=1, since a user's file:line
 * is the config file's. Used by the CHECK macros; returns status so that it can be
 * assigned in one expression. */
int dr_report(int status, const char *file, int line, const char *lib, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

/* dr_report with the message's arguments as a va_list: for a module's own reporter that
 * names what failed as `lib` ("checkpoint FILE", a data file), so that its messages take
 * the one path every message takes. */
int dr_vreport(int status, const char *file, int line, const char *lib, const char *fmt,
               va_list ap) __attribute__((format(printf, 5, 0)));

/* fprintf(stderr, fmt, ...) after the message hook: every message to the user goes
 * through it or dr_report. Returns what fprintf returns. */
int dr_eprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The function called before any message is printed on stderr, NULL for none. runner/
 * registers one that erases the progress line it draws on a terminal (engine/ cannot
 * see it), so that a message never lands in the middle of that line. */
void dr_set_message_hook(void (*hook)(void));
/* Calls the message hook (if any): for a printer that writes to stderr by itself. */
void dr_message_begin(void);

/* 1 when the environment has DAWNRUN_DEBUG=1: messages then carry the source location
 * they come from. */
int dr_debug(void);

/* Sets rc and jumps to `cleanup` when `expr` (a dr_status) is not DR_OK. */
#define TRY(expr)                                                                          \
    do {                                                                                   \
        rc = (expr);                                                                       \
        if (rc != DR_OK) goto cleanup;                                                     \
    } while (0)

/* Reports a failure (dr_report: the source location only with DAWNRUN_DEBUG=1), sets rc
 * and jumps to `cleanup`. */
#define FAIL(status, ...)                                                                  \
    do {                                                                                   \
        rc = dr_report((status), __FILE__, __LINE__, NULL, __VA_ARGS__);                   \
        goto cleanup;                                                                      \
    } while (0)

/* A precondition that only a bug in the caller breaks (a shape, an index, a kind):
 * when `cond` is false, reports the message as an internal error, sets rc to
 * DR_ERR_INTERNAL and jumps to `cleanup`. */
#define EXPECT(cond, ...)                                                                  \
    do {                                                                                   \
        if (!(cond)) FAIL(DR_ERR_INTERNAL, __VA_ARGS__);                                   \
    } while (0)

/* Allocation check: reports what was being allocated. */
#define CHECK_ALLOC(ptr, what)                                                             \
    do {                                                                                   \
        if ((ptr) == NULL) FAIL(DR_ERR_NOMEM, "out of memory allocating %s", (what));      \
    } while (0)

#endif

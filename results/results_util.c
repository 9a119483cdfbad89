/* Shared plumbing of the results store: SQLite error reporting, the fork guard,
 * transactions, NULL-aware binders and column readers, run status names. */
#include "results_internal.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const status_names[] = {
    [RUN_PENDING] = "pending",   [RUN_RUNNING] = "running",   [RUN_DONE] = "done",
    [RUN_FAILED] = "failed",     [RUN_DIVERGED] = "diverged", [RUN_INTERRUPTED] = "interrupted",
};
#define N_STATUS ((int)(sizeof status_names / sizeof status_names[0]))

const char *results_status_name(enum results_run_status s)
{
    if ((int)s < 0 || (int)s >= N_STATUS) return "unknown";
    return status_names[s];
}

int results_status_parse(enum results_run_status *out, const char *name)
{
    for (int i = 0; name && i < N_STATUS; i++) {
        if (strcmp(name, status_names[i]) == 0) {
            *out = (enum results_run_status)i;
            return DR_OK;
        }
    }
    return DR_ERR_USAGE;
}

/* A hint that tells the user what the SQLite message means for dawnrun. */
static const char *hint_for(int primary)
{
    switch (primary) {
    case SQLITE_LOCKED:
        return " (a lock conflict inside this process)";
    case SQLITE_NOTADB:
        return " (not an SQLite database, or its header is damaged; the file was left "
               "untouched)";
    case SQLITE_CORRUPT:
        return " (the file is damaged; it was left untouched; `sqlite3 FILE .recover` may "
               "salvage it)";
    case SQLITE_READONLY:
        return " (check the permissions of the file and of its directory)";
    case SQLITE_CANTOPEN:
        return " (does the directory exist, and may this user write there?)";
    case SQLITE_FULL:
        return " (the disk is full; committed runs are intact)";
    default:
        return "";
    }
}

int results_sql_fail(const struct results *r, int sqlite_rc, const char *file, int line)
{
    const char *msg = (r && r->db) ? sqlite3_errmsg(r->db) : sqlite3_errstr(sqlite_rc);
    const char *path = (r && r->path) ? r->path : "(results database)";
    const char *hint = hint_for(sqlite_rc & 0xff);
    int sys = (r && r->db) ? sqlite3_system_errno(r->db) : 0;
    if ((sqlite_rc & 0xff) == SQLITE_IOERR && sys != 0)
        /* "disk I/O error" says little: name what the system said, e.g. a full disk */
        return dr_report(DR_ERR_DB, file, line, "sqlite", "%s: %s (%s)%s", path, msg,
                         strerror(sys),
                         sys == ENOSPC || sys == EDQUOT || sys == EFBIG
                             ? "; committed runs are intact" : "");
    if ((sqlite_rc & 0xff) == SQLITE_BUSY && r)
        return dr_report(DR_ERR_DB, file, line, "sqlite",
                         "%s: %s (another process held the lock for more than %d ms; retry "
                         "later, or look for a stuck dawnrun)", path, msg, r->busy_ms);
    return dr_report(DR_ERR_DB, file, line, "sqlite", "%s: %s%s", path, msg, hint);
}

int results_handle_ok(const struct results *r, const char *file, int line)
{
    if (!r || !r->db)
        return dr_report(DR_ERR_INTERNAL, file, line, NULL, "results: no open database");
    if (r->owner != getpid())
        return dr_report(DR_ERR_INTERNAL, file, line, NULL,
                         "results: %s was opened by process %d and used by process %d; "
                         "call results_open after fork()",
                         r->path, (int)r->owner, (int)getpid());
    return DR_OK;
}

int results_writable(const struct results *r, const char *file, int line)
{
    if (r->readonly)
        return dr_report(DR_ERR_DB, file, line, NULL, "%s: opened read-only, cannot write",
                         r->path);
    return DR_OK;
}

void results_tx_rollback(struct results *r)
{
    /* A failed statement may already have rolled the transaction back. */
    if (r && r->db && r->owner == getpid() && !sqlite3_get_autocommit(r->db))
        sqlite3_exec(r->db, "ROLLBACK", NULL, NULL, NULL);
}

int results_bind_text(sqlite3_stmt *st, int i, const char *s)
{
    if (!s) return sqlite3_bind_null(st, i);
    return sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
}

int results_bind_real(sqlite3_stmt *st, int i, double v)
{
    if (isnan(v)) return sqlite3_bind_null(st, i);
    return sqlite3_bind_double(st, i, v);
}

int results_bind_seed(sqlite3_stmt *st, int i, uint64_t seed)
{
    int64_t v;
    memcpy(&v, &seed, sizeof v);
    return sqlite3_bind_int64(st, i, v);
}

double results_col_real(sqlite3_stmt *st, int i)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL) return NAN;
    return sqlite3_column_double(st, i);
}

int results_col_int(sqlite3_stmt *st, int i, int dflt)
{
    if (sqlite3_column_type(st, i) == SQLITE_NULL) return dflt;
    return sqlite3_column_int(st, i);
}

char *results_col_text(sqlite3_stmt *st, int i, int *oom)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    if (!s) return NULL;
    char *copy = strdup((const char *)s);
    if (!copy) *oom = 1;
    return copy;
}

int results_pid_alive(int pid)
{
    if (pid <= 0) return 0;
    if (kill((pid_t)pid, 0) == 0) return 1;
    return errno == EPERM;
}

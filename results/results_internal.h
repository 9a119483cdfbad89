/* Private to results/: the connection handle, the CHECK_SQLITE macro every SQLite call
 * goes through, transaction helpers and column readers. */
#ifndef DAWNRUN_RESULTS_INTERNAL_H
#define DAWNRUN_RESULTS_INTERNAL_H

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "results.h"

struct results {
    sqlite3 *db;
    char *path;          /* as the caller spelled it, for messages */
    pid_t owner;         /* the process that opened it */
    int busy_ms;
    int readonly;
    int version;         /* schema version of the file (older ones only when read-only) */
};

/* The database's clock as Unix seconds with milliseconds, for use inside SQL text.
 * ('now' is fixed for the duration of one statement.) */
#define RESULTS_NOW_SQL "((julianday('now') - 2440587.5) * 86400.0)"

/* Reports a failed SQLite call as "sqlite: DBFILE: message" through dr_report (the
 * source location file:line only with DAWNRUN_DEBUG=1), with a hint for a lock held past
 * the timeout and for a non-database file, and returns DR_ERR_DB. */
int results_sql_fail(const struct results *r, int sqlite_rc, const char *file, int line);

/* Evaluates an SQLite call once; anything but SQLITE_OK / ROW / DONE is reported
 * (results_sql_fail: the database file and sqlite3_errmsg), sets rc = DR_ERR_DB and jumps
 * to `cleanup`. */
#define CHECK_SQLITE(r, call)                                                              \
    do {                                                                                   \
        int sqlite_rc_ = (call);                                                           \
        if (sqlite_rc_ != SQLITE_OK && sqlite_rc_ != SQLITE_ROW && sqlite_rc_ != SQLITE_DONE) { \
            rc = results_sql_fail((r), sqlite_rc_, __FILE__, __LINE__);                    \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

/* Fails with DR_ERR_INTERNAL (and touches nothing) when the handle is NULL or was opened
 * by another process: a connection must not cross fork(). */
#define CHECK_HANDLE(r)                                                                    \
    do {                                                                                   \
        TRY(results_handle_ok((r), __FILE__, __LINE__));                                   \
    } while (0)

int results_handle_ok(const struct results *r, const char *file, int line);

/* Fails with DR_ERR_DB, naming the file, when the handle was opened read-only. */
int results_writable(const struct results *r, const char *file, int line);

/* Transactions, reported at the caller's file:line. TX_BEGIN is BEGIN IMMEDIATE: it
 * takes the write lock at once (waiting up to the busy timeout), so a read-then-write
 * inside it can never fail half-way with SQLITE_BUSY. TX_BEGIN_READ is a deferred BEGIN:
 * a consistent snapshot for several reads. */
#define TX_BEGIN(r)                                                                        \
    do {                                                                                   \
        TRY(results_writable((r), __FILE__, __LINE__));                                    \
        CHECK_SQLITE((r), sqlite3_exec((r)->db, "BEGIN IMMEDIATE", NULL, NULL, NULL));     \
    } while (0)
#define TX_BEGIN_READ(r) CHECK_SQLITE((r), sqlite3_exec((r)->db, "BEGIN", NULL, NULL, NULL))
#define TX_COMMIT(r) CHECK_SQLITE((r), sqlite3_exec((r)->db, "COMMIT", NULL, NULL, NULL))

/* Rolls back if a transaction is open (and the handle belongs to this process). Every
 * function that opens a transaction calls it at `cleanup:` when rc != DR_OK. */
void results_tx_rollback(struct results *r);

/* sqlite3_prepare_v2 of a NUL-terminated statement, for use inside CHECK_SQLITE. */
#define RESULTS_PREPARE(r, st, sql) sqlite3_prepare_v2((r)->db, (sql), -1, (st), NULL)

/* Binders that map NaN / NULL / negative sentinels to SQL NULL. */
int results_bind_text(sqlite3_stmt *st, int i, const char *s);
int results_bind_real(sqlite3_stmt *st, int i, double v);
/* Binds a uint64 seed as the int64 with the same bits. */
int results_bind_seed(sqlite3_stmt *st, int i, uint64_t seed);

/* Column readers: NULL gives NaN / NULL / `dflt`. col_text returns a malloc'd copy and
 * sets *oom when the copy fails. */
double results_col_real(sqlite3_stmt *st, int i);
int results_col_int(sqlite3_stmt *st, int i, int dflt);
char *results_col_text(sqlite3_stmt *st, int i, int *oom);

/* The process has a live process with this pid (kill(pid, 0); EPERM counts as alive). */
int results_pid_alive(int pid);

/* Inserts experiment e unless one with its config hash exists (inside the caller's
 * transaction); created_at NaN means the database's clock now. *id gets the stored
 * experiment's id, *inserted whether this call added it, *text_differs 1 (and *id
 * untouched) when the stored one has another config text: the caller reports that. */
int results_experiment_upsert(struct results *db, int64_t *id, int *inserted,
                              int *text_differs, const struct results_experiment *e,
                              double created_at);

/* Inserts experiment id's params / overrides (positions 0..n-1) inside the caller's
 * transaction (results_params.c). */
int results_params_insert(struct results *db, int64_t id, const struct results_param *p, int n);
int results_overrides_insert(struct results *db, int64_t id, const char *const *o, int n);

/* Copies src's params of experiment src_id to db's experiment dst_id when dst_id has none,
 * and likewise its overrides, inside the caller's transaction on db (merge). */
int results_params_copy_missing(struct results *db, struct results *src, int64_t dst_id,
                                int64_t src_id);
/* Copies the sweeps recorded in src (opened read-only) into db, inside the caller's
 * transaction, after the experiments were merged: each member is mapped by config hash to
 * db's experiment; a sweep db already holds (same created_at, command and host) is
 * skipped. An input older than schema version 4 has none. results_sweep.c. */
int results_sweeps_merge(struct results *db, struct results *src);
/* Copies the sequential batches of src (with their members and looks) into db likewise,
 * after the experiments and sweeps were merged: a batch db holds (same key) is skipped.
 * results_sequential.c. */
int results_sequential_merge(struct results *db, struct results *src);

/* Inserts into binomial_ci the rows (every k = 0..n, Clopper-Pearson 95 %) missing for
 * any experiment's finished count n (done + diverged runs), inside the caller's write
 * transaction: every writer that changes a finished count calls it before committing.
 * Existing rows are left as they are. results_binomial.c. */
int results_binomial_fill(struct results *db);
/* results_binomial_fill in a transaction of its own, taken only when some row is
 * missing (a database written before version 5 or by a writer that did not fill it):
 * what a writable open does. */
int results_binomial_ensure(struct results *db);

#endif

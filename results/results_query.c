/* Reading the store for reports: experiments, runs, epochs and the per-run numbers of
 * an experiment's done runs. Results are malloc'd arrays of plain structs. */
#include "results_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/grow.h"

/* Returns arr (capacity *cap) with room for element `count` of `size` bytes, new slots
 * zeroed; NULL, with arr untouched, when out of memory. */
static void *grow(void *arr, int *cap, int count, size_t size)
{
    const int old = *cap;
    if (grow_reserve(&arr, cap, count + 1, 16, size) != DR_OK) return NULL;
    memset((char *)arr + (size_t)old * size, 0, (size_t)(*cap - old) * size);
    return arr;
}

/* Grows `arr` (a typed pointer variable) or fails with DR_ERR_NOMEM. */
#define GROW(arr, cap, count, what)                                                        \
    do {                                                                                   \
        void *grown_ = grow((arr), &(cap), (count), sizeof *(arr));                        \
        CHECK_ALLOC(grown_, (what));                                                       \
        (arr) = grown_;                                                                    \
    } while (0)

/* ---- experiments ----------------------------------------------------------------- */

/* The columns read_experiment reads, for a file of schema version 2 or later; a
 * version-1 file (read-only) has no notes column and reads NULL in its place. */
#define EXPERIMENT_COLUMNS                                                                 \
    "id, name, config_hash, config_text, dawnrun_version, git_rev, engine, device,"        \
    " platform, host, target_accuracy, created_at, notes"
#define EXPERIMENT_COLUMNS_V1                                                              \
    "id, name, config_hash, config_text, dawnrun_version, git_rev, engine, device,"        \
    " platform, host, target_accuracy, created_at, NULL"

/* Prepares `SELECT <experiment columns> FROM experiments <rest>` for this file's
 * schema version. */
static int prepare_experiments(struct results *db, sqlite3_stmt **st, const char *rest)
{
    int rc = DR_OK;
    char sql[512];
    snprintf(sql, sizeof sql, "SELECT %s FROM experiments %s",
             db->version >= 2 ? EXPERIMENT_COLUMNS : EXPERIMENT_COLUMNS_V1, rest);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, st, sql));
cleanup:
    return rc;
}

static void read_experiment(struct results_experiment *e, sqlite3_stmt *st, int *oom)
{
    e->id = sqlite3_column_int64(st, 0);
    e->name = results_col_text(st, 1, oom);
    e->config_hash = results_col_text(st, 2, oom);
    e->config_text = results_col_text(st, 3, oom);
    e->dawnrun_version = results_col_text(st, 4, oom);
    e->git_rev = results_col_text(st, 5, oom);
    e->engine = results_col_text(st, 6, oom);
    e->device = results_col_text(st, 7, oom);
    e->platform = results_col_text(st, 8, oom);
    e->host = results_col_text(st, 9, oom);
    e->target_accuracy = results_col_real(st, 10);
    e->created_at = results_col_real(st, 11);
    e->notes = results_col_text(st, 12, oom);
}

void results_experiment_clear(struct results_experiment *e)
{
    if (!e) return;
    free((void *)e->name);
    free((void *)e->config_hash);
    free((void *)e->config_text);
    free((void *)e->dawnrun_version);
    free((void *)e->git_rev);
    free((void *)e->engine);
    free((void *)e->device);
    free((void *)e->platform);
    free((void *)e->host);
    free((void *)e->notes);
    memset(e, 0, sizeof *e);
}

void results_experiments_free(struct results_experiment *arr, int n)
{
    for (int i = 0; arr && i < n; i++) results_experiment_clear(&arr[i]);
    free(arr);
}

/* Steps st to the end, collecting experiments. */
static int collect_experiments(struct results *db, sqlite3_stmt *st,
                               struct results_experiment **out, int *n)
{
    int rc = DR_OK;
    int step, cap = 0, count = 0, oom = 0;
    struct results_experiment *arr = NULL;
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        GROW(arr, cap, count, "experiment list");
        read_experiment(&arr[count++], st, &oom);
        if (oom) FAIL(DR_ERR_NOMEM, "out of memory reading experiments");
    }
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    results_experiments_free(arr, count);
    return rc;
}

int results_experiments_list(struct results *db, struct results_experiment **out, int *n)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    TRY(prepare_experiments(db, &st, "ORDER BY id"));
    TRY(collect_experiments(db, st, out, n));
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int results_experiments_find(struct results *db, struct results_experiment **out, int *n,
                             const char *key)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    int numeric = key && *key;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    if (!key) FAIL(DR_ERR_USAGE, "results: no experiment given");
    for (const char *p = key; *p; p++)
        if (!isdigit((unsigned char)*p)) numeric = 0;
    TRY(prepare_experiments(db, &st,
        "WHERE id = ?1 OR name = ?2"
        "    OR (length(?2) >= 6 AND substr(config_hash, 1, length(?2)) = ?2)"
        " ORDER BY id"));
    if (numeric && strlen(key) < 19)
        CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, strtoll(key, NULL, 10)));
    else
        CHECK_SQLITE(db, sqlite3_bind_null(st, 1));
    CHECK_SQLITE(db, results_bind_text(st, 2, key));
    TRY(collect_experiments(db, st, out, n));
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int results_experiment_get(struct results *db, struct results_experiment *out, int *found,
                           int64_t id)
{
    int rc = DR_OK;
    int step, oom = 0;
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    *found = 0;
    CHECK_HANDLE(db);
    TRY(prepare_experiments(db, &st, "WHERE id = ?1"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    if (step == SQLITE_ROW) {
        read_experiment(out, st, &oom);
        if (oom) FAIL(DR_ERR_NOMEM, "out of memory reading experiment %lld", (long long)id);
        *found = 1;
    }
cleanup:
    sqlite3_finalize(st);
    if (rc != DR_OK) results_experiment_clear(out);
    return rc;
}

/* ---- runs -------------------------------------------------------------------------- */

#define RUN_COLUMNS                                                                        \
    "id, experiment_id, seed, status, attempt, max_attempts, host, pid, device,"           \
    " lease_expires, heartbeat_at, created_at, started_at, ended_at, final_test_acc,"      \
    " train_time, total_time, target_time, target_epoch, error,"
/* SELECT RUN_COLUMNS, stalls ... tail: runs.stalls came with schema version 3, an older
 * file (read-only) reads 0 in its place. */
#define RUN_SELECT(db, tail)                                                               \
    ((db)->version >= 3 ? "SELECT " RUN_COLUMNS " stalls " tail                           \
                        : "SELECT " RUN_COLUMNS " 0 " tail)

static void read_run(struct results_run *r, sqlite3_stmt *st, int *oom)
{
    int64_t seed = sqlite3_column_int64(st, 2);
    r->id = sqlite3_column_int64(st, 0);
    r->experiment_id = sqlite3_column_int64(st, 1);
    memcpy(&r->seed, &seed, sizeof seed);
    if (results_status_parse(&r->status, (const char *)sqlite3_column_text(st, 3)) != DR_OK)
        r->status = RUN_FAILED;   /* unreachable: the CHECK constraint */
    r->attempt = sqlite3_column_int(st, 4);
    r->max_attempts = sqlite3_column_int(st, 5);
    r->host = results_col_text(st, 6, oom);
    r->pid = results_col_int(st, 7, 0);
    r->device = results_col_text(st, 8, oom);
    r->lease_expires = results_col_real(st, 9);
    r->heartbeat_at = results_col_real(st, 10);
    r->created_at = results_col_real(st, 11);
    r->started_at = results_col_real(st, 12);
    r->ended_at = results_col_real(st, 13);
    r->final_test_acc = results_col_real(st, 14);
    r->train_time = results_col_real(st, 15);
    r->total_time = results_col_real(st, 16);
    r->target_time = results_col_real(st, 17);
    r->target_epoch = results_col_int(st, 18, -1);
    r->error = results_col_text(st, 19, oom);
    r->stalls = sqlite3_column_int(st, 20);
}

void results_run_clear(struct results_run *r)
{
    if (!r) return;
    free((void *)r->host);
    free((void *)r->device);
    free((void *)r->error);
    memset(r, 0, sizeof *r);
}

void results_runs_free(struct results_run *arr, int n)
{
    for (int i = 0; arr && i < n; i++) results_run_clear(&arr[i]);
    free(arr);
}

int results_runs_list(struct results *db, struct results_run **out, int *n,
                      int64_t experiment_id)
{
    int rc = DR_OK;
    int step, cap = 0, count = 0, oom = 0;
    struct results_run *arr = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        RUN_SELECT(db, "FROM runs WHERE experiment_id = ?1 ORDER BY seed")));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, experiment_id));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        GROW(arr, cap, count, "run list");
        read_run(&arr[count++], st, &oom);
        if (oom) FAIL(DR_ERR_NOMEM, "out of memory reading runs");
    }
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    sqlite3_finalize(st);
    results_runs_free(arr, count);
    return rc;
}

int results_run_get(struct results *db, struct results_run *out, int *found, int64_t run_id)
{
    int rc = DR_OK;
    int step, oom = 0;
    sqlite3_stmt *st = NULL;
    memset(out, 0, sizeof *out);
    *found = 0;
    CHECK_HANDLE(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, RUN_SELECT(db, "FROM runs WHERE id = ?1")));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, run_id));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    if (step == SQLITE_ROW) {
        read_run(out, st, &oom);
        if (oom) FAIL(DR_ERR_NOMEM, "out of memory reading run %lld", (long long)run_id);
        *found = 1;
    }
cleanup:
    sqlite3_finalize(st);
    if (rc != DR_OK) results_run_clear(out);
    return rc;
}

/* ---- epochs and per-run values ------------------------------------------------------ */

int results_epochs_list(struct results *db, struct results_epoch **out, int *n, int64_t run_id)
{
    int rc = DR_OK;
    int step, cap = 0, count = 0;
    struct results_epoch *arr = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT epoch, lr, train_loss, train_acc, test_loss, test_acc, train_time,"
        " test_time, total_time, attempt, recorded_at"
        " FROM epochs WHERE run_id = ?1 ORDER BY epoch"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, run_id));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        GROW(arr, cap, count, "epoch list");
        struct results_epoch *e = &arr[count++];
        e->epoch = sqlite3_column_int(st, 0);
        e->lr = results_col_real(st, 1);
        e->train_loss = results_col_real(st, 2);
        e->train_acc = results_col_real(st, 3);
        e->test_loss = results_col_real(st, 4);
        e->test_acc = results_col_real(st, 5);
        e->train_time = results_col_real(st, 6);
        e->test_time = results_col_real(st, 7);
        e->total_time = results_col_real(st, 8);
        e->attempt = sqlite3_column_int(st, 9);
        e->recorded_at = results_col_real(st, 10);
    }
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    sqlite3_finalize(st);
    free(arr);
    return rc;
}

int results_done_values(struct results *db, double **out, int *n, int64_t experiment_id,
                        enum results_field field)
{
    int rc = DR_OK;
    int step, cap = 0, count = 0;
    double *arr = NULL;
    const char *column = NULL;
    char sql[256];
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    switch (field) {
    case RESULTS_FINAL_ACC: column = "final_test_acc"; break;
    case RESULTS_TRAIN_TIME: column = "train_time"; break;
    case RESULTS_TOTAL_TIME: column = "total_time"; break;
    case RESULTS_TARGET_TIME: column = "target_time"; break;
    case RESULTS_TARGET_EPOCH: column = "target_epoch"; break;
    }
    if (!column) FAIL(DR_ERR_INTERNAL, "results_done_values: unknown field %d", (int)field);
    /* column comes from the fixed list above, never from the user */
    snprintf(sql, sizeof sql,
             "SELECT %s FROM runs WHERE experiment_id = ?1 AND status = 'done'"
             " AND %s IS NOT NULL ORDER BY seed", column, column);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, sql));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, experiment_id));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        GROW(arr, cap, count, "value list");
        arr[count++] = sqlite3_column_double(st, 0);
    }
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    sqlite3_finalize(st);
    free(arr);
    return rc;
}

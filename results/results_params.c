/* The params and overrides tables: an experiment's resolved config as one row per leaf
 * setting and the command-line overrides that produced it, written with the experiment
 * (or filled in later for one registered before schema version 4) and read back. The
 * only SQL that touches these two tables. */
#include "results_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../base/grow.h"

int results_params_insert(struct results *db, int64_t id, const struct results_param *p, int n)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    if (n <= 0) return DR_OK;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "INSERT INTO params(experiment_id, key, position, value, type, num)"
        " VALUES (?1, ?2, ?6, ?3, ?4, ?5)"));
    for (int i = 0; i < n; i++) {
        if (!p[i].key || !p[i].value || !p[i].type)
            FAIL(DR_ERR_INTERNAL, "results: param %d of experiment %lld is incomplete", i,
                 (long long)id);
        CHECK_SQLITE(db, sqlite3_reset(st));
        CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
        CHECK_SQLITE(db, results_bind_text(st, 2, p[i].key));
        CHECK_SQLITE(db, sqlite3_bind_text(st, 3, p[i].value, -1, SQLITE_TRANSIENT));
        CHECK_SQLITE(db, results_bind_text(st, 4, p[i].type));
        CHECK_SQLITE(db, results_bind_real(st, 5, p[i].num));
        CHECK_SQLITE(db, sqlite3_bind_int(st, 6, i));
        CHECK_SQLITE(db, sqlite3_step(st));
    }
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int results_overrides_insert(struct results *db, int64_t id, const char *const *o, int n)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    if (n <= 0) return DR_OK;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "INSERT INTO overrides(experiment_id, position, text) VALUES (?1, ?2, ?3)"));
    for (int i = 0; i < n; i++) {
        CHECK_SQLITE(db, sqlite3_reset(st));
        CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
        CHECK_SQLITE(db, sqlite3_bind_int(st, 2, i));
        CHECK_SQLITE(db, sqlite3_bind_text(st, 3, o[i] ? o[i] : "", -1, SQLITE_TRANSIENT));
        CHECK_SQLITE(db, sqlite3_step(st));
    }
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* *count = the first column of `sql` (a count(*) with ?1 = id). */
static int count_rows(struct results *db, int *count, const char *sql, int64_t id)
{
    int rc = DR_OK, step;
    sqlite3_stmt *st = NULL;
    *count = 0;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, sql));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    if (step == SQLITE_ROW) *count = sqlite3_column_int(st, 0);
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int results_params_copy_missing(struct results *db, struct results *src, int64_t dst_id,
                                int64_t src_id)
{
    int rc = DR_OK, have = 0, n = 0, n_o = 0;
    struct results_param *p = NULL;
    char **o = NULL;
    TRY(count_rows(db, &have, "SELECT count(*) FROM params WHERE experiment_id = ?1", dst_id));
    if (have == 0) {
        TRY(results_params_get(src, &p, &n, src_id));
        TRY(results_params_insert(db, dst_id, p, n));
    }
    TRY(count_rows(db, &have, "SELECT count(*) FROM overrides WHERE experiment_id = ?1",
                   dst_id));
    if (have == 0) {
        TRY(results_overrides_get(src, &o, &n_o, src_id));
        TRY(results_overrides_insert(db, dst_id, (const char *const *)o, n_o));
    }
cleanup:
    results_params_free(p, n);
    results_overrides_free(o, n_o);
    return rc;
}

void results_params_free(struct results_param *p, int n)
{
    for (int i = 0; p && i < n; i++) {
        free((void *)p[i].key);
        free((void *)p[i].value);
        free((void *)p[i].type);
    }
    free(p);
}

void results_overrides_free(char **o, int n)
{
    for (int i = 0; o && i < n; i++) free(o[i]);
    free(o);
}

int results_params_get(struct results *db, struct results_param **out, int *n, int64_t id)
{
    int rc = DR_OK, step, cap = 0, count = 0, oom = 0;
    struct results_param *arr = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    if (db->version < 4) return DR_OK;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT key, value, type, num FROM params WHERE experiment_id = ?1 ORDER BY position"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        if (grow_reserve(&arr, &cap, count + 1, 64, sizeof *arr) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the params");
        struct results_param *p = &arr[count++];
        p->key = results_col_text(st, 0, &oom);
        p->value = results_col_text(st, 1, &oom);
        p->type = results_col_text(st, 2, &oom);
        p->num = results_col_real(st, 3);
        if (oom || !p->key || !p->value || !p->type)
            FAIL(oom ? DR_ERR_NOMEM : DR_ERR_DB, "%s: reading the params of experiment %lld%s",
                 db->path, (long long)id, oom ? ": out of memory" : ": a NULL field");
    }
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    sqlite3_finalize(st);
    results_params_free(arr, count);
    return rc;
}

int results_overrides_get(struct results *db, char ***out, int *n, int64_t id)
{
    int rc = DR_OK, step, cap = 0, count = 0, oom = 0;
    char **arr = NULL;
    sqlite3_stmt *st = NULL;
    *out = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    if (db->version < 4) return DR_OK;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT text FROM overrides WHERE experiment_id = ?1 ORDER BY position"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        if (grow_reserve(&arr, &cap, count + 1, 8, sizeof *arr) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the overrides");
        arr[count] = results_col_text(st, 0, &oom);
        count++;
        if (oom) FAIL(DR_ERR_NOMEM, "%s: out of memory reading overrides", db->path);
    }
    *out = arr;
    *n = count;
    arr = NULL;
cleanup:
    sqlite3_finalize(st);
    results_overrides_free(arr, count);
    return rc;
}

int results_experiments_without_params(struct results *db, int64_t **ids, int *n)
{
    int rc = DR_OK, step, cap = 0, count = 0;
    int64_t *arr = NULL;
    sqlite3_stmt *st = NULL;
    *ids = NULL;
    *n = 0;
    CHECK_HANDLE(db);
    if (db->version < 4) return DR_OK;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT id FROM experiments e"
        " WHERE NOT EXISTS (SELECT 1 FROM params p WHERE p.experiment_id = e.id) ORDER BY id"));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        if (grow_reserve(&arr, &cap, count + 1, 16, sizeof *arr) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating experiment ids");
        arr[count++] = sqlite3_column_int64(st, 0);
    }
    *ids = arr;
    *n = count;
    arr = NULL;
cleanup:
    sqlite3_finalize(st);
    free(arr);
    return rc;
}

int results_params_fill(struct results *db, int *written, int64_t id,
                        const struct results_param *p, int n)
{
    int rc = DR_OK, have = 0, exists = 0;
    if (written) *written = 0;
    CHECK_HANDLE(db);
    TX_BEGIN(db);
    TRY(count_rows(db, &exists, "SELECT count(*) FROM experiments WHERE id = ?1", id));
    if (!exists) FAIL(DR_ERR_DB, "%s: no experiment with id %lld", db->path, (long long)id);
    TRY(count_rows(db, &have, "SELECT count(*) FROM params WHERE experiment_id = ?1", id));
    if (have == 0) TRY(results_params_insert(db, id, p, n));
    TX_COMMIT(db);
    if (written) *written = have == 0 && n > 0;
cleanup:
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

/* Writing the queue's contents: registering an experiment (idempotent by config hash)
 * with its params and overrides, its notes, and making sure it has one run per seed (idempotent by (experiment, seed)). */
#include "results_internal.h"

#include <math.h>
#include <string.h>

static int required(const char *field, const char *value)
{
    int rc = DR_OK;
    if (!value || !*value) FAIL(DR_ERR_USAGE, "results: experiment %s is empty", field);
cleanup:
    return rc;
}

int results_experiment_upsert(struct results *db, int64_t *id, int *inserted,
                              int *text_differs, const struct results_experiment *e,
                              double created_at)
{
    int rc = DR_OK;
    int step;
    sqlite3_stmt *ins = NULL, *sel = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ins,
        "INSERT INTO experiments(name, config_hash, config_text, dawnrun_version, git_rev,"
        " engine, device, platform, host, target_accuracy, created_at, notes)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, COALESCE(?11, " RESULTS_NOW_SQL "),"
        " ?12) ON CONFLICT(config_hash) DO NOTHING"));
    CHECK_SQLITE(db, results_bind_text(ins, 1, e->name));
    CHECK_SQLITE(db, results_bind_text(ins, 2, e->config_hash));
    CHECK_SQLITE(db, results_bind_text(ins, 3, e->config_text));
    CHECK_SQLITE(db, results_bind_text(ins, 4, e->dawnrun_version));
    CHECK_SQLITE(db, results_bind_text(ins, 5, e->git_rev));
    CHECK_SQLITE(db, results_bind_text(ins, 6, e->engine));
    CHECK_SQLITE(db, results_bind_text(ins, 7, e->device));
    CHECK_SQLITE(db, results_bind_text(ins, 8, e->platform));
    CHECK_SQLITE(db, results_bind_text(ins, 9, e->host));
    CHECK_SQLITE(db, results_bind_real(ins, 10, e->target_accuracy));
    CHECK_SQLITE(db, results_bind_real(ins, 11, created_at));
    CHECK_SQLITE(db, results_bind_text(ins, 12, e->notes));
    CHECK_SQLITE(db, sqlite3_step(ins));
    *inserted = sqlite3_changes(db->db) > 0;

    CHECK_SQLITE(db, RESULTS_PREPARE(db, &sel,
        "SELECT id, config_text FROM experiments WHERE config_hash = ?1"));
    CHECK_SQLITE(db, results_bind_text(sel, 1, e->config_hash));
    CHECK_SQLITE(db, step = sqlite3_step(sel));
    if (step != SQLITE_ROW)
        FAIL(DR_ERR_INTERNAL, "%s: experiment %s not found after its insert", db->path,
             e->config_hash);
    const char *text = (const char *)sqlite3_column_text(sel, 1);
    *text_differs = !text || strcmp(text, e->config_text) != 0;
    if (!*text_differs) *id = sqlite3_column_int64(sel, 0);
cleanup:
    sqlite3_finalize(ins);
    sqlite3_finalize(sel);
    return rc;
}

int results_experiment_register(struct results *db, int64_t *id, int *created,
                                const struct results_experiment *e)
{
    return results_experiment_register_with(db, id, created, e, NULL);
}

int results_experiment_register_with(struct results *db, int64_t *id, int *created,
                                     const struct results_experiment *e,
                                     const struct results_experiment_extras *x)
{
    int rc = DR_OK;
    int inserted = 0, differs = 0;

    CHECK_HANDLE(db);
    TRY(required("name", e->name));
    TRY(required("config_hash", e->config_hash));
    TRY(required("config_text", e->config_text));
    TRY(required("dawnrun_version", e->dawnrun_version));
    TRY(required("engine", e->engine));

    TX_BEGIN(db);
    TRY(results_experiment_upsert(db, id, &inserted, &differs, e, NAN));
    if (differs)
        FAIL(DR_ERR_DB,
             "%s: experiment with config hash %s is already registered with a different "
             "config text (hash collision or a hash that leaves part of the config out)",
             db->path, e->config_hash);
    if (inserted && x) {
        TRY(results_params_insert(db, *id, x->params, x->n_params));
        TRY(results_overrides_insert(db, *id, x->overrides, x->n_overrides));
    }
    TX_COMMIT(db);
    if (created) *created = inserted;
cleanup:
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

int results_experiment_set_notes(struct results *db, int64_t id, const char *notes)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_HANDLE(db);
    TX_BEGIN(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st, "UPDATE experiments SET notes = ?2 WHERE id = ?1"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
    CHECK_SQLITE(db, results_bind_text(st, 2, notes && *notes ? notes : NULL));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (sqlite3_changes(db->db) == 0)
        FAIL(DR_ERR_USAGE, "%s: no experiment with id %lld", db->path, (long long)id);
    TX_COMMIT(db);
cleanup:
    sqlite3_finalize(st);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

int results_runs_ensure(struct results *db, int *added, int64_t experiment_id,
                        const uint64_t *seeds, int n_seeds, int max_attempts)
{
    int rc = DR_OK;
    int count = 0, step;
    sqlite3_stmt *chk = NULL, *ins = NULL;

    CHECK_HANDLE(db);
    if (n_seeds < 0 || (n_seeds > 0 && !seeds))
        FAIL(DR_ERR_INTERNAL, "results_runs_ensure: bad seed list (%d seeds)", n_seeds);
    if (max_attempts < 1)
        FAIL(DR_ERR_USAGE, "results: max attempts must be at least 1 (got %d)", max_attempts);

    TX_BEGIN(db);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &chk, "SELECT 1 FROM experiments WHERE id = ?1"));
    CHECK_SQLITE(db, sqlite3_bind_int64(chk, 1, experiment_id));
    CHECK_SQLITE(db, step = sqlite3_step(chk));
    if (step != SQLITE_ROW)
        FAIL(DR_ERR_DB, "%s: no experiment with id %lld", db->path, (long long)experiment_id);

    CHECK_SQLITE(db, RESULTS_PREPARE(db, &ins,
        "INSERT INTO runs(experiment_id, seed, max_attempts, created_at)"
        " VALUES (?1, ?2, ?3, " RESULTS_NOW_SQL ")"
        " ON CONFLICT(experiment_id, seed) DO NOTHING"));
    for (int i = 0; i < n_seeds; i++) {
        CHECK_SQLITE(db, sqlite3_reset(ins));
        CHECK_SQLITE(db, sqlite3_bind_int64(ins, 1, experiment_id));
        CHECK_SQLITE(db, results_bind_seed(ins, 2, seeds[i]));
        CHECK_SQLITE(db, sqlite3_bind_int(ins, 3, max_attempts));
        CHECK_SQLITE(db, sqlite3_step(ins));
        count += sqlite3_changes(db->db);
    }
    TX_COMMIT(db);
    if (added) *added = count;
cleanup:
    sqlite3_finalize(chk);
    sqlite3_finalize(ins);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

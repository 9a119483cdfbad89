/* Merging another results database (e.g. one per Slurm array task) into this one:
 * experiments matched by config hash, runs deduplicated by (experiment, seed) keeping
 * the better one with its epochs, all in one transaction, idempotent. */
#include "results_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* How good a run's state is as a result; the higher one wins a merge. A run running in
 * the destination (a live worker there) ranks above failed/interrupted copies, below
 * finished ones. */
static int rank(enum results_run_status s)
{
    switch (s) {
    case RUN_PENDING: return 0;
    case RUN_INTERRUPTED: return 1;
    case RUN_FAILED: return 2;
    case RUN_RUNNING: return 3;
    case RUN_DIVERGED: return 4;
    case RUN_DONE: return 5;
    }
    return 0;
}

/* The destination's view of one (experiment, seed). */
struct dst_run {
    int found;
    int64_t id;
    enum results_run_status status;
    int attempt;
    double ended_at;
};

/* Does the input's run beat ours? Same rank: the one that ended first (so the outcome
 * does not depend on merge order); a full tie keeps ours (idempotence). */
static int input_wins(const struct results_run *in, const struct dst_run *d)
{
    int ri = rank(in->status), rd = rank(d->status);
    if (ri != rd) return ri > rd;
    if (in->status == RUN_PENDING || in->status == RUN_INTERRUPTED) return 0;
    return !isnan(in->ended_at) && (isnan(d->ended_at) || in->ended_at < d->ended_at);
}

/* Finds or inserts the input's experiment in db (created_at and notes kept; an existing
 * experiment without notes takes the input's); *id = ours. */
static int merge_experiment(struct results *db, int64_t *id, int *added,
                            const struct results_experiment *e)
{
    int rc = DR_OK;
    int differs = 0;
    sqlite3_stmt *upd = NULL;
    TRY(results_experiment_upsert(db, id, added, &differs, e, e->created_at));
    if (differs)
        FAIL(DR_ERR_DB, "%s: experiment %s (hash %s) has a different config text than in "
             "the database being merged; nothing was merged", db->path, e->name,
             e->config_hash);
    if (e->notes && *e->notes) {
        CHECK_SQLITE(db, RESULTS_PREPARE(db, &upd,
            "UPDATE experiments SET notes = ?2 WHERE id = ?1 AND notes IS NULL"));
        CHECK_SQLITE(db, sqlite3_bind_int64(upd, 1, *id));
        CHECK_SQLITE(db, results_bind_text(upd, 2, e->notes));
        CHECK_SQLITE(db, sqlite3_step(upd));
    }
cleanup:
    sqlite3_finalize(upd);
    return rc;
}

static int find_dst_run(struct results *db, struct dst_run *d, int64_t experiment_id,
                        uint64_t seed)
{
    int rc = DR_OK;
    int step;
    sqlite3_stmt *st = NULL;
    memset(d, 0, sizeof *d);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT id, status, attempt, ended_at FROM runs WHERE experiment_id = ?1 AND seed = ?2"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, experiment_id));
    CHECK_SQLITE(db, results_bind_seed(st, 2, seed));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    if (step == SQLITE_ROW) {
        d->found = 1;
        d->id = sqlite3_column_int64(st, 0);
        if (results_status_parse(&d->status, (const char *)sqlite3_column_text(st, 1)) != DR_OK)
            d->status = RUN_FAILED;
        d->attempt = sqlite3_column_int(st, 2);
        d->ended_at = results_col_real(st, 3);
    }
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* Binds the input run's fields as ?3..?18 of an insert or update (?1, ?2: the caller's) (lease dropped). */
static int bind_run_fields(struct results *db, sqlite3_stmt *st, const struct results_run *r)
{
    int rc = DR_OK;
    CHECK_SQLITE(db, results_bind_text(st, 3, results_status_name(r->status)));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 4, r->attempt));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 5, r->max_attempts));
    CHECK_SQLITE(db, results_bind_text(st, 6, r->host));
    if (r->pid > 0)
        CHECK_SQLITE(db, sqlite3_bind_int(st, 7, r->pid));
    else
        CHECK_SQLITE(db, sqlite3_bind_null(st, 7));
    CHECK_SQLITE(db, results_bind_text(st, 8, r->device));
    CHECK_SQLITE(db, results_bind_real(st, 9, r->heartbeat_at));
    CHECK_SQLITE(db, results_bind_real(st, 10, r->created_at));
    CHECK_SQLITE(db, results_bind_real(st, 11, r->started_at));
    CHECK_SQLITE(db, results_bind_real(st, 12, r->ended_at));
    CHECK_SQLITE(db, results_bind_real(st, 13, r->final_test_acc));
    CHECK_SQLITE(db, results_bind_real(st, 14, r->train_time));
    CHECK_SQLITE(db, results_bind_real(st, 15, r->total_time));
    CHECK_SQLITE(db, results_bind_real(st, 16, r->target_time));
    if (r->target_epoch >= 0)
        CHECK_SQLITE(db, sqlite3_bind_int(st, 17, r->target_epoch));
    else
        CHECK_SQLITE(db, sqlite3_bind_null(st, 17));
    CHECK_SQLITE(db, results_bind_text(st, 18, r->error));
cleanup:
    return rc;
}

/* Inserts the input's run under our experiment; *id = the new run's id. */
static int insert_run(struct results *db, int64_t *id, int64_t experiment_id,
                      const struct results_run *r)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "INSERT INTO runs(experiment_id, seed, status, attempt, max_attempts, host, pid,"
        " device, heartbeat_at, created_at, started_at, ended_at, final_test_acc,"
        " train_time, total_time, target_time, target_epoch, error)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, coalesce(?10, " RESULTS_NOW_SQL "),"
        " ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, experiment_id));
    CHECK_SQLITE(db, results_bind_seed(st, 2, r->seed));
    TRY(bind_run_fields(db, st, r));
    CHECK_SQLITE(db, sqlite3_step(st));
    *id = sqlite3_last_insert_rowid(db->db);
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* Overwrites our run `id` with the input's, dropping our epochs. The attempt counter
 * never goes down, so a worker still holding our old claim stays fenced. */
static int replace_run(struct results *db, int64_t id, const struct results_run *r)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL, *del = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET status = ?3, attempt = max(attempt, ?4), max_attempts = ?5,"
        " host = ?6, pid = ?7, device = ?8, lease_expires = NULL, heartbeat_at = ?9,"
        " created_at = coalesce(?10, created_at), started_at = ?11, ended_at = ?12,"
        " final_test_acc = ?13, train_time = ?14, total_time = ?15, target_time = ?16,"
        " target_epoch = ?17, error = ?18"
        " WHERE id = ?1"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, id));
    TRY(bind_run_fields(db, st, r));
    CHECK_SQLITE(db, sqlite3_step(st));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &del, "DELETE FROM epochs WHERE run_id = ?1"));
    CHECK_SQLITE(db, sqlite3_bind_int64(del, 1, id));
    CHECK_SQLITE(db, sqlite3_step(del));
cleanup:
    sqlite3_finalize(st);
    sqlite3_finalize(del);
    return rc;
}

/* Copies the input run's epochs to our run `dst_id`. */
static int copy_epochs(struct results *db, struct results *src, int *copied, int64_t dst_id,
                       int64_t src_id)
{
    int rc = DR_OK;
    int n = 0;
    struct results_epoch *eps = NULL;
    sqlite3_stmt *st = NULL;
    TRY(results_epochs_list(src, &eps, &n, src_id));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "INSERT INTO epochs(run_id, epoch, attempt, lr, train_loss, train_acc, test_loss,"
        " test_acc, train_time, test_time, total_time, recorded_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)"));
    for (int i = 0; i < n; i++) {
        const struct results_epoch *e = &eps[i];
        CHECK_SQLITE(db, sqlite3_reset(st));
        CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, dst_id));
        CHECK_SQLITE(db, sqlite3_bind_int(st, 2, e->epoch));
        CHECK_SQLITE(db, sqlite3_bind_int(st, 3, e->attempt));
        CHECK_SQLITE(db, results_bind_real(st, 4, e->lr));
        CHECK_SQLITE(db, results_bind_real(st, 5, e->train_loss));
        CHECK_SQLITE(db, results_bind_real(st, 6, e->train_acc));
        CHECK_SQLITE(db, results_bind_real(st, 7, e->test_loss));
        CHECK_SQLITE(db, results_bind_real(st, 8, e->test_acc));
        CHECK_SQLITE(db, results_bind_real(st, 9, e->train_time));
        CHECK_SQLITE(db, results_bind_real(st, 10, e->test_time));
        CHECK_SQLITE(db, results_bind_real(st, 11, e->total_time));
        CHECK_SQLITE(db, results_bind_real(st, 12, isnan(e->recorded_at) ? 0.0 : e->recorded_at));
        CHECK_SQLITE(db, sqlite3_step(st));
    }
    *copied += n;
cleanup:
    sqlite3_finalize(st);
    free(eps);
    return rc;
}

/* Merges the runs of one input experiment into our experiment `dst_exp`. */
static int merge_runs(struct results *db, struct results *src, struct results_merge_stats *s,
                      int64_t dst_exp, int64_t src_exp)
{
    int rc = DR_OK;
    int n = 0;
    struct results_run *runs = NULL;
    struct dst_run d;
    TRY(results_runs_list(src, &runs, &n, src_exp));
    for (int i = 0; i < n; i++) {
        struct results_run *r = &runs[i];
        if (r->status == RUN_RUNNING) {
            /* its lease lives in the input file; here nobody is running it */
            r->status = RUN_INTERRUPTED;
            if (!r->error) {
                r->error = strdup("was running in the merged input");
                CHECK_ALLOC(r->error, "merge note");
            }
        }
        TRY(find_dst_run(db, &d, dst_exp, r->seed));
        int64_t id = d.id;
        if (!d.found) {
            TRY(insert_run(db, &id, dst_exp, r));
            s->runs_added++;
        } else if (input_wins(r, &d)) {
            TRY(replace_run(db, id, r));
            s->runs_replaced++;
        } else {
            s->runs_kept++;
            continue;
        }
        TRY(copy_epochs(db, src, &s->epochs_copied, id, r->id));
    }
cleanup:
    results_runs_free(runs, n);
    return rc;
}

int results_merge(struct results *db, struct results_merge_stats *stats, const char *in_path)
{
    int rc = DR_OK;
    int n = 0;
    struct results *src = NULL;
    struct results_experiment *exps = NULL;
    struct results_merge_stats s;

    memset(&s, 0, sizeof s);
    CHECK_HANDLE(db);
    TRY(results_writable(db, __FILE__, __LINE__));
    TRY(results_open_readonly(&src, in_path));
    TX_BEGIN_READ(src);   /* one snapshot of the input, even if it is live */
    TRY(results_experiments_list(src, &exps, &n));
    TX_BEGIN(db);
    for (int i = 0; i < n; i++) {
        int64_t dst_exp = 0;
        int added = 0;
        TRY(merge_experiment(db, &dst_exp, &added, &exps[i]));
        s.experiments_added += added;
        TRY(results_params_copy_missing(db, src, dst_exp, exps[i].id));
        TRY(merge_runs(db, src, &s, dst_exp, exps[i].id));
    }
    TRY(results_sweeps_merge(db, src));
    TRY(results_sequential_merge(db, src));
    TRY(results_binomial_fill(db));   /* the finished counts the merge made */
    TX_COMMIT(db);
    if (stats) *stats = s;
cleanup:
    if (rc != DR_OK) results_tx_rollback(db);
    results_tx_rollback(src);
    results_experiments_free(exps, n);
    results_close(src);
    return rc;
}

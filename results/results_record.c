/* A claimed run's writes, each fenced by (status = 'running', attempt = the lease's):
 * one transaction per epoch, discarding epochs past a resume point, and finishing (with
 * the hit-rate intervals of the new finished count, results_binomial.c). */
#include "results_internal.h"

#include <math.h>

#include "../base/crashpoint.h"

/* Inside a write transaction: DR_ERR_FENCED (quietly) unless the run is still running
 * under this lease's attempt. */
static int fence(struct results *db, const struct results_lease *lease)
{
    int rc = DR_OK;
    int step;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT 1 FROM runs WHERE id = ?1 AND attempt = ?2 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, lease->attempt));
    CHECK_SQLITE(db, step = sqlite3_step(st));
    if (step != SQLITE_ROW) rc = DR_ERR_FENCED;
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* Extends the lease inside the caller's transaction (an epoch is a sign of life). */
static int extend_lease(struct results *db, const struct results_lease *lease)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET lease_expires = " RESULTS_NOW_SQL " + ?2,"
        " heartbeat_at = " RESULTS_NOW_SQL " WHERE id = ?1"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_double(st, 2, lease->lease_seconds));
    CHECK_SQLITE(db, sqlite3_step(st));
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int results_epoch_record(struct results *db, const struct results_lease *lease,
                         const struct results_epoch *ep)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;

    CHECK_HANDLE(db);
    TX_BEGIN(db);
    TRY(fence(db, lease));
    /* Not INSERT OR REPLACE: the upsert keeps the row's identity and, through its WHERE,
     * can never let an older attempt overwrite a newer attempt's row, even if the fence
     * above were ever bypassed. */
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "INSERT INTO epochs(run_id, epoch, attempt, lr, train_loss, train_acc, test_loss,"
        " test_acc, train_time, test_time, total_time, recorded_at)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, " RESULTS_NOW_SQL ")"
        " ON CONFLICT(run_id, epoch) DO UPDATE SET attempt = excluded.attempt,"
        " lr = excluded.lr, train_loss = excluded.train_loss, train_acc = excluded.train_acc,"
        " test_loss = excluded.test_loss, test_acc = excluded.test_acc,"
        " train_time = excluded.train_time, test_time = excluded.test_time,"
        " total_time = excluded.total_time, recorded_at = excluded.recorded_at"
        " WHERE excluded.attempt >= epochs.attempt"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, ep->epoch));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 3, lease->attempt));
    CHECK_SQLITE(db, results_bind_real(st, 4, ep->lr));
    CHECK_SQLITE(db, results_bind_real(st, 5, ep->train_loss));
    CHECK_SQLITE(db, results_bind_real(st, 6, ep->train_acc));
    CHECK_SQLITE(db, results_bind_real(st, 7, ep->test_loss));
    CHECK_SQLITE(db, results_bind_real(st, 8, ep->test_acc));
    CHECK_SQLITE(db, results_bind_real(st, 9, ep->train_time));
    CHECK_SQLITE(db, results_bind_real(st, 10, ep->test_time));
    CHECK_SQLITE(db, results_bind_real(st, 11, ep->total_time));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (sqlite3_changes(db->db) == 0) {
        rc = DR_ERR_FENCED;   /* a newer attempt's row: keep it */
        goto cleanup;
    }
    TRY(extend_lease(db, lease));
    crashpoint("epoch-commit");   /* the epoch's transaction open, not yet committed */
    TX_COMMIT(db);
cleanup:
    sqlite3_finalize(st);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

int results_run_resume_at(struct results *db, const struct results_lease *lease, int epoch)
{
    int rc = DR_OK;
    sqlite3_stmt *del = NULL, *up = NULL;

    CHECK_HANDLE(db);
    TX_BEGIN(db);
    TRY(fence(db, lease));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &del,
        "DELETE FROM epochs WHERE run_id = ?1 AND epoch > ?2"));
    CHECK_SQLITE(db, sqlite3_bind_int64(del, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(del, 2, epoch));
    CHECK_SQLITE(db, sqlite3_step(del));
    /* the point before this attempt's own work: the epochs kept plus the checkpoint */
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &up,
        "UPDATE runs SET checkpoint_epoch = ?2,"
        " claim_progress = min(claim_progress,"
        "   coalesce((SELECT max(epoch) FROM epochs e WHERE e.run_id = ?1), 0) + ?2)"
        " WHERE id = ?1 AND checkpoint_epoch > ?2"));
    CHECK_SQLITE(db, sqlite3_bind_int64(up, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(up, 2, epoch));
    CHECK_SQLITE(db, sqlite3_step(up));
    sqlite3_finalize(up);
    up = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &up,
        "UPDATE runs SET checkpoint_epoch = ?2 WHERE id = ?1"));
    CHECK_SQLITE(db, sqlite3_bind_int64(up, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(up, 2, epoch));
    CHECK_SQLITE(db, sqlite3_step(up));
    TX_COMMIT(db);
cleanup:
    sqlite3_finalize(del);
    sqlite3_finalize(up);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

int results_run_checkpointed(struct results *db, const struct results_lease *lease, int epoch)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;

    CHECK_HANDLE(db);
    TRY(results_writable(db, __FILE__, __LINE__));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET checkpoint_epoch = ?3"
        " WHERE id = ?1 AND attempt = ?2 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, lease->attempt));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 3, epoch));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (sqlite3_changes(db->db) == 0) rc = DR_ERR_FENCED;
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int results_run_finish(struct results *db, const struct results_lease *lease,
                       const struct results_outcome *o)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;

    CHECK_HANDLE(db);
    if (o->status != RUN_DONE && o->status != RUN_FAILED && o->status != RUN_DIVERGED &&
        o->status != RUN_INTERRUPTED)
        FAIL(DR_ERR_INTERNAL, "results_run_finish: %s is not a final status",
             results_status_name(o->status));
    TX_BEGIN(db);   /* the run's end and the hit-rate intervals of its new finished count */
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET status = ?3, ended_at = " RESULTS_NOW_SQL ", lease_expires = NULL,"
        " final_test_acc = ?4, train_time = ?5, total_time = ?6, target_time = ?7,"
        " target_epoch = ?8, error = ?9"
        " WHERE id = ?1 AND attempt = ?2 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, lease->attempt));
    CHECK_SQLITE(db, results_bind_text(st, 3, results_status_name(o->status)));
    CHECK_SQLITE(db, results_bind_real(st, 4, o->final_test_acc));
    CHECK_SQLITE(db, results_bind_real(st, 5, o->train_time));
    CHECK_SQLITE(db, results_bind_real(st, 6, o->total_time));
    CHECK_SQLITE(db, results_bind_real(st, 7, o->target_time >= 0 ? o->target_time : NAN));
    if (o->target_epoch >= 0)
        CHECK_SQLITE(db, sqlite3_bind_int(st, 8, o->target_epoch));
    else
        CHECK_SQLITE(db, sqlite3_bind_null(st, 8));
    CHECK_SQLITE(db, results_bind_text(st, 9, o->error));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (sqlite3_changes(db->db) == 0) {
        rc = DR_ERR_FENCED;
        goto cleanup;
    }
    if (o->status == RUN_DONE || o->status == RUN_DIVERGED) TRY(results_binomial_fill(db));
    TX_COMMIT(db);
cleanup:
    sqlite3_finalize(st);
    if (rc != DR_OK) results_tx_rollback(db);
    return rc;
}

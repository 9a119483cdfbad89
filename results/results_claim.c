/* The database as a work queue: claiming a run under a lease (BEGIN IMMEDIATE, judged
 * on the database's clock), judging whether a vanished attempt made progress, counting
 * what a request would claim, and keeping the lease alive with fenced heartbeats.
 *
 * Progress: a run's progress point is its latest recorded epoch plus the epoch of its
 * newest recorded checkpoint (runs.checkpoint_epoch), both durable. Each claim stores
 * the point (runs.claim_progress); when a stale run is reclaimed, a point that did not
 * grow since the claim means the vanished attempt made no progress and runs.stalls
 * grows by one, anything else resets it. max_attempts stalls in a row fail the run. */
#include "results_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../base/grow.h"

void results_claim_init(struct results_claim *c)
{
    memset(c, 0, sizeof *c);
    c->lease_seconds = RESULTS_DEFAULT_LEASE_S;
    if (gethostname(c->host, sizeof c->host - 1) != 0) strcpy(c->host, "unknown-host");
    c->host[sizeof c->host - 1] = '\0';
    c->pid = (int)getpid();
}

/* One run of the request's selection, as the scan sees it. */
struct candidate {
    int64_t id, experiment_id;
    uint64_t seed;
    enum results_run_status status;
    int attempt, max_attempts, pid, expired, same_host;
    int stalls, claim_progress, last_epoch, checkpoint_epoch;
    int at_epoch, at_step;   /* -1: never seen */
    char host[256];
};

/* What a request would do with a run. */
enum verdict {
    V_FINISHED,      /* done or diverged: never claimed again */
    V_FAILED,        /* failed, and the request does not retry failed runs */
    V_ELSEWHERE,     /* running under a live owner */
    V_CLAIM,         /* claimable */
    V_ABANDON        /* a stale run at its stall limit: to be marked failed */
};

/* "[1,2,3]" for json_each, or NULL (any experiment, any seed) when n = 0. */
static int id_list_json(char **out, const int64_t *ids, int n)
{
    int rc = DR_OK;
    size_t cap = (size_t)n * 24 + 3, len = 0;
    char *s = NULL;
    *out = NULL;
    if (n <= 0) return DR_OK;
    s = malloc(cap);
    CHECK_ALLOC(s, "experiment id list");
    s[len++] = '[';
    for (int i = 0; i < n; i++)
        len += (size_t)snprintf(s + len, cap - len, "%s%lld", i ? "," : "", (long long)ids[i]);
    s[len++] = ']';
    s[len] = '\0';
    *out = s;
cleanup:
    return rc;
}

/* The seeds as stored (two's complement int64, as results_bind_seed writes them), in a
 * json_each list; NULL (any seed) when n = 0. */
static int seed_list_json(char **out, const uint64_t *seeds, int n)
{
    int rc = DR_OK;
    int64_t *ids = NULL;
    *out = NULL;
    if (n <= 0) return DR_OK;
    ids = malloc((size_t)n * sizeof *ids);
    CHECK_ALLOC(ids, "seed list");
    for (int i = 0; i < n; i++) memcpy(&ids[i], &seeds[i], sizeof ids[i]);
    TRY(id_list_json(out, ids, n));
cleanup:
    free(ids);
    return rc;
}

/* Every run of the request's experiments and seeds, in claim order (seed, then
 * experiment). */
static int scan_candidates(struct results *db, struct candidate **out, int *n,
                           const struct results_claim *req)
{
    int rc = DR_OK;
    int step, cap = 0, count = 0, oom = 0;
    char *ids = NULL, *seeds = NULL;
    struct candidate *c = NULL;
    sqlite3_stmt *st = NULL;

    TRY(id_list_json(&ids, req->experiment_ids, req->n_experiments));
    TRY(seed_list_json(&seeds, req->seeds, req->n_seeds));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT id, experiment_id, seed, status, attempt, max_attempts, pid,"
        "       lease_expires IS NULL OR lease_expires < " RESULTS_NOW_SQL ","
        "       host IS ?2, stalls, claim_progress,"
        "       coalesce((SELECT max(epoch) FROM epochs e WHERE e.run_id = runs.id), 0),"
        "       checkpoint_epoch, at_epoch, at_step, host"
        " FROM runs"
        " WHERE (?1 IS NULL OR experiment_id IN (SELECT value FROM json_each(?1)))"
        "   AND (?3 IS NULL OR seed IN (SELECT value FROM json_each(?3)))"
        " ORDER BY seed, experiment_id"));
    CHECK_SQLITE(db, results_bind_text(st, 1, ids));
    CHECK_SQLITE(db, results_bind_text(st, 2, req->host));
    CHECK_SQLITE(db, results_bind_text(st, 3, seeds));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        if (grow_reserve(&c, &cap, count + 1, 16, sizeof *c) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating claim candidates");
        struct candidate *k = &c[count++];
        int64_t seed = sqlite3_column_int64(st, 2);
        const char *status = (const char *)sqlite3_column_text(st, 3);
        k->id = sqlite3_column_int64(st, 0);
        k->experiment_id = sqlite3_column_int64(st, 1);
        memcpy(&k->seed, &seed, sizeof seed);
        if (results_status_parse(&k->status, status ? status : "") != DR_OK)
            FAIL(DR_ERR_DB, "%s: run %lld has the unknown status '%s'", db->path,
                 (long long)k->id, status ? status : "");
        k->attempt = sqlite3_column_int(st, 4);
        k->max_attempts = sqlite3_column_int(st, 5);
        k->pid = sqlite3_column_int(st, 6);
        k->expired = sqlite3_column_int(st, 7);
        k->same_host = sqlite3_column_int(st, 8);
        k->stalls = sqlite3_column_int(st, 9);
        k->claim_progress = sqlite3_column_int(st, 10);
        k->last_epoch = sqlite3_column_int(st, 11);
        k->checkpoint_epoch = sqlite3_column_int(st, 12);
        k->at_epoch = results_col_int(st, 13, -1);
        k->at_step = results_col_int(st, 14, -1);
        char *host = results_col_text(st, 15, &oom);
        if (oom) FAIL(DR_ERR_NOMEM, "out of memory reading the runs of %s", db->path);
        snprintf(k->host, sizeof k->host, "%s", host ? host : "?");
        free(host);
    }
    *out = c;
    *n = count;
    c = NULL;
cleanup:
    sqlite3_finalize(st);
    free(ids);
    free(seeds);
    free(c);
    return rc;
}

/* A running run whose owner has stopped: lease expired, or owner pid gone on this host. */
static int is_stale(const struct candidate *k)
{
    return k->expired || (k->same_host && !results_pid_alive(k->pid));
}

/* The run's progress point now: latest recorded epoch + newest recorded checkpoint. */
static int progress_now(const struct candidate *k)
{
    return k->last_epoch + k->checkpoint_epoch;
}

/* The stall count the run has once its latest attempt is judged: for a stale run, one
 * more unless the point grew since the claim; a retried failed run starts again. */
static int stalls_after(const struct candidate *k, const struct results_claim *req)
{
    int grew = progress_now(k) > k->claim_progress;
    if (k->status == RUN_FAILED && req->retry_failed) return 0;
    if (k->status == RUN_RUNNING) return grew ? 0 : k->stalls + 1;
    return grew ? 0 : k->stalls;
}

static enum verdict judge(const struct candidate *k, const struct results_claim *req)
{
    switch (k->status) {
    case RUN_DONE:
    case RUN_DIVERGED: return V_FINISHED;
    case RUN_FAILED: return req->retry_failed ? V_CLAIM : V_FAILED;
    case RUN_RUNNING:
        if (!is_stale(k)) return V_ELSEWHERE;
        return stalls_after(k, req) >= k->max_attempts ? V_ABANDON : V_CLAIM;
    default: return V_CLAIM;   /* pending, interrupted */
    }
}

/* Marks a stale run that reached its stall limit as failed, saying where it kept
 * stopping. */
static int abandon(struct results *db, const struct candidate *k, int stalls)
{
    int rc = DR_OK;
    char why[768], seen[96], ckpt[64];
    sqlite3_stmt *st = NULL;
    if (k->at_epoch >= 1)
        snprintf(seen, sizeof seen, "last seen in epoch %d at step %d", k->at_epoch,
                 k->at_step);
    else
        snprintf(seen, sizeof seen, "never seen training");
    if (k->checkpoint_epoch > 0)
        snprintf(ckpt, sizeof ckpt, "a checkpoint after epoch %d", k->checkpoint_epoch);
    else
        snprintf(ckpt, sizeof ckpt, "no checkpoint");
    snprintf(why, sizeof why,
             "abandoned: %d attempt%s in a row stopped at the same point without progress:"
             " %s, with %d epoch%s recorded and %s (last: attempt %d, host %s, pid %d)",
             stalls, stalls == 1 ? "" : "s", seen, k->last_epoch, k->last_epoch == 1 ? "" : "s", ckpt, k->attempt,
             k->host, k->pid);
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET status = 'failed', lease_expires = NULL, ended_at = " RESULTS_NOW_SQL ","
        " stalls = ?3, error = ?4"
        " WHERE id = ?1 AND attempt = ?2 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, k->id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, k->attempt));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 3, stalls));
    CHECK_SQLITE(db, results_bind_text(st, 4, why));
    CHECK_SQLITE(db, sqlite3_step(st));
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* Takes run k for req: running, attempt + 1, new owner and lease, the progress point
 * and stall count as judged. */
static int take(struct results *db, const struct candidate *k, const struct results_claim *req,
                int stalls)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET status = 'running', attempt = attempt + 1,"
        " error = CASE WHEN status = 'running' THEN printf('attempt %d (host %s, pid %d)"
        "   stopped without finishing', attempt, host, pid) ELSE error END,"
        " host = ?3, pid = ?4, device = ?5,"
        " lease_expires = " RESULTS_NOW_SQL " + ?6, heartbeat_at = " RESULTS_NOW_SQL ","
        " started_at = " RESULTS_NOW_SQL ", ended_at = NULL, final_test_acc = NULL,"
        " train_time = NULL, total_time = NULL, target_time = NULL, target_epoch = NULL,"
        " claim_progress = ?7, stalls = ?8, at_epoch = NULL, at_step = NULL"
        " WHERE id = ?1 AND attempt = ?2"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, k->id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, k->attempt));
    CHECK_SQLITE(db, results_bind_text(st, 3, req->host));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 4, req->pid));
    CHECK_SQLITE(db, results_bind_text(st, 5, req->device));
    CHECK_SQLITE(db, sqlite3_bind_double(st, 6, req->lease_seconds));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 7, progress_now(k)));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 8, stalls));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (sqlite3_changes(db->db) != 1)
        FAIL(DR_ERR_INTERNAL, "%s: run %lld changed under the write lock", db->path,
             (long long)k->id);
cleanup:
    sqlite3_finalize(st);
    return rc;
}

static int check_request(const struct results_claim *req)
{
    int rc = DR_OK;
    if (!(req->lease_seconds > 0) || !isfinite(req->lease_seconds))
        FAIL(DR_ERR_USAGE, "results: lease length must be positive (got %g s)",
             req->lease_seconds);
    if (req->n_experiments < 0 || (req->n_experiments > 0 && !req->experiment_ids))
        FAIL(DR_ERR_INTERNAL, "results: bad experiment list in a claim");
    if (req->n_seeds < 0 || (req->n_seeds > 0 && !req->seeds))
        FAIL(DR_ERR_INTERNAL, "results: bad seed list in a claim");
cleanup:
    return rc;
}

int results_claim_run(struct results *db, struct results_lease *lease,
                      const struct results_claim *req)
{
    int rc = DR_OK;
    int n = 0;
    struct candidate *c = NULL;

    memset(lease, 0, sizeof *lease);
    CHECK_HANDLE(db);
    TRY(check_request(req));

    TX_BEGIN(db);
    TRY(scan_candidates(db, &c, &n, req));
    for (int i = 0; i < n; i++) {
        const struct candidate *k = &c[i];
        enum verdict v = judge(k, req);
        if (v == V_ABANDON) TRY(abandon(db, k, stalls_after(k, req)));
        if (v != V_CLAIM) continue;
        TRY(take(db, k, req, stalls_after(k, req)));
        lease->run_id = k->id;
        lease->experiment_id = k->experiment_id;
        lease->seed = k->seed;
        lease->attempt = k->attempt + 1;
        lease->lease_seconds = req->lease_seconds;
        break;
    }
    TX_COMMIT(db);
cleanup:
    free(c);
    if (rc != DR_OK) {
        results_tx_rollback(db);
        memset(lease, 0, sizeof *lease);
    }
    return rc;
}

int results_claim_census(struct results *db, struct results_census *out,
                         const struct results_claim *req)
{
    int rc = DR_OK;
    int n = 0;
    struct candidate *c = NULL;

    memset(out, 0, sizeof *out);
    CHECK_HANDLE(db);
    TRY(check_request(req));
    TRY(scan_candidates(db, &c, &n, req));
    for (int i = 0; i < n; i++) {
        out->total++;
        switch (judge(&c[i], req)) {
        case V_FINISHED: out->finished++; break;
        case V_FAILED:
        case V_ABANDON: out->failed++; break;
        case V_ELSEWHERE: out->running_elsewhere++; break;
        case V_CLAIM: out->to_run++; break;
        }
    }
cleanup:
    free(c);
    return rc;
}

int results_runs_requeue_failed(struct results *db, int *requeued,
                                const struct results_claim *req)
{
    int rc = DR_OK;
    char *ids = NULL, *seeds = NULL;
    sqlite3_stmt *st = NULL;

    if (requeued) *requeued = 0;
    CHECK_HANDLE(db);
    TRY(check_request(req));
    TRY(results_writable(db, __FILE__, __LINE__));
    TRY(id_list_json(&ids, req->experiment_ids, req->n_experiments));
    TRY(seed_list_json(&seeds, req->seeds, req->n_seeds));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET status = 'pending', stalls = 0"
        " WHERE status = 'failed'"
        "   AND (?1 IS NULL OR experiment_id IN (SELECT value FROM json_each(?1)))"
        "   AND (?2 IS NULL OR seed IN (SELECT value FROM json_each(?2)))"));
    CHECK_SQLITE(db, results_bind_text(st, 1, ids));
    CHECK_SQLITE(db, results_bind_text(st, 2, seeds));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (requeued) *requeued = sqlite3_changes(db->db);
cleanup:
    sqlite3_finalize(st);
    free(ids);
    free(seeds);
    return rc;
}

int results_heartbeat_at(struct results *db, const struct results_lease *lease, int epoch,
                         int step)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_HANDLE(db);
    TRY(results_writable(db, __FILE__, __LINE__));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET lease_expires = " RESULTS_NOW_SQL " + ?3,"
        " heartbeat_at = " RESULTS_NOW_SQL ","
        " at_epoch = CASE WHEN ?4 >= 1 THEN ?4 ELSE at_epoch END,"
        " at_step = CASE WHEN ?4 >= 1 THEN ?5 ELSE at_step END"
        " WHERE id = ?1 AND attempt = ?2 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, lease->attempt));
    CHECK_SQLITE(db, sqlite3_bind_double(st, 3, lease->lease_seconds));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 4, epoch));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 5, step));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (sqlite3_changes(db->db) == 0) rc = DR_ERR_FENCED;
cleanup:
    sqlite3_finalize(st);
    return rc;
}

int results_heartbeat(struct results *db, const struct results_lease *lease)
{
    return results_heartbeat_at(db, lease, 0, 0);
}

/* The database as a work queue: claiming a run under a lease (BEGIN IMMEDIATE, judged
 * on the database's clock) and keeping the lease alive with fenced heartbeats. */
#include "results_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void results_claim_init(struct results_claim *c)
{
    memset(c, 0, sizeof *c);
    c->lease_seconds = RESULTS_DEFAULT_LEASE_S;
    if (gethostname(c->host, sizeof c->host - 1) != 0) strcpy(c->host, "unknown-host");
    c->host[sizeof c->host - 1] = '\0';
    c->pid = (int)getpid();
}

/* One row of the candidate scan. */
struct candidate {
    int64_t id, experiment_id;
    uint64_t seed;
    int running, attempt, max_attempts, pid, expired, same_host;
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

/* Every run this request could claim, in claim order (seed, then experiment). */
static int scan_candidates(struct results *db, struct candidate **out, int *n,
                           const struct results_claim *req)
{
    int rc = DR_OK;
    int step, cap = 0, count = 0;
    char *ids = NULL, *seeds = NULL;
    struct candidate *c = NULL;
    sqlite3_stmt *st = NULL;

    TRY(id_list_json(&ids, req->experiment_ids, req->n_experiments));
    TRY(seed_list_json(&seeds, req->seeds, req->n_seeds));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "SELECT id, experiment_id, seed, status = 'running', attempt, max_attempts, pid,"
        "       lease_expires IS NULL OR lease_expires < " RESULTS_NOW_SQL ","
        "       host IS ?2"
        " FROM runs"
        " WHERE (?1 IS NULL OR experiment_id IN (SELECT value FROM json_each(?1)))"
        "   AND (?4 IS NULL OR seed IN (SELECT value FROM json_each(?4)))"
        "   AND (status IN ('pending', 'interrupted')"
        "        OR (status = 'failed' AND ?3 AND attempt < max_attempts)"
        "        OR (status = 'running' AND (lease_expires IS NULL"
        "                                    OR lease_expires < " RESULTS_NOW_SQL
        "                                    OR host IS ?2)))"
        " ORDER BY seed, experiment_id"));
    CHECK_SQLITE(db, results_bind_text(st, 1, ids));
    CHECK_SQLITE(db, results_bind_text(st, 2, req->host));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 3, req->retry_failed ? 1 : 0));
    CHECK_SQLITE(db, results_bind_text(st, 4, seeds));
    for (;;) {
        CHECK_SQLITE(db, step = sqlite3_step(st));
        if (step != SQLITE_ROW) break;
        if (count == cap) {
            cap = cap ? 2 * cap : 16;
            struct candidate *grown = realloc(c, (size_t)cap * sizeof *c);
            CHECK_ALLOC(grown, "claim candidates");
            c = grown;
        }
        struct candidate *k = &c[count++];
        int64_t seed = sqlite3_column_int64(st, 2);
        k->id = sqlite3_column_int64(st, 0);
        k->experiment_id = sqlite3_column_int64(st, 1);
        memcpy(&k->seed, &seed, sizeof seed);
        k->running = sqlite3_column_int(st, 3);
        k->attempt = sqlite3_column_int(st, 4);
        k->max_attempts = sqlite3_column_int(st, 5);
        k->pid = sqlite3_column_int(st, 6);
        k->expired = sqlite3_column_int(st, 7);
        k->same_host = sqlite3_column_int(st, 8);
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

/* Marks a stale run that has used all its attempts as failed. */
static int abandon(struct results *db, const struct candidate *k)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET status = 'failed', lease_expires = NULL, ended_at = " RESULTS_NOW_SQL ","
        " error = printf('abandoned: attempt %d of %d (host %s, pid %d) stopped without"
        " finishing', attempt, max_attempts, host, pid)"
        " WHERE id = ?1 AND attempt = ?2 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, k->id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, k->attempt));
    CHECK_SQLITE(db, sqlite3_step(st));
cleanup:
    sqlite3_finalize(st);
    return rc;
}

/* Takes run k for req: running, attempt + 1, new owner and lease. */
static int take(struct results *db, const struct candidate *k, const struct results_claim *req)
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
        " train_time = NULL, total_time = NULL, target_time = NULL, target_epoch = NULL"
        " WHERE id = ?1 AND attempt = ?2"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, k->id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, k->attempt));
    CHECK_SQLITE(db, results_bind_text(st, 3, req->host));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 4, req->pid));
    CHECK_SQLITE(db, results_bind_text(st, 5, req->device));
    CHECK_SQLITE(db, sqlite3_bind_double(st, 6, req->lease_seconds));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (sqlite3_changes(db->db) != 1)
        FAIL(DR_ERR_INTERNAL, "%s: run %lld changed under the write lock", db->path,
             (long long)k->id);
cleanup:
    sqlite3_finalize(st);
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
    if (!(req->lease_seconds > 0) || !isfinite(req->lease_seconds))
        FAIL(DR_ERR_USAGE, "results: lease length must be positive (got %g s)",
             req->lease_seconds);
    if (req->n_experiments < 0 || (req->n_experiments > 0 && !req->experiment_ids))
        FAIL(DR_ERR_INTERNAL, "results_claim_run: bad experiment list");
    if (req->n_seeds < 0 || (req->n_seeds > 0 && !req->seeds))
        FAIL(DR_ERR_INTERNAL, "results_claim_run: bad seed list");

    TX_BEGIN(db);
    TRY(scan_candidates(db, &c, &n, req));
    for (int i = 0; i < n; i++) {
        const struct candidate *k = &c[i];
        if (k->running) {
            if (!is_stale(k)) continue;
            if (k->attempt >= k->max_attempts) {
                TRY(abandon(db, k));
                continue;
            }
        }
        TRY(take(db, k, req));
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

int results_heartbeat(struct results *db, const struct results_lease *lease)
{
    int rc = DR_OK;
    sqlite3_stmt *st = NULL;
    CHECK_HANDLE(db);
    TRY(results_writable(db, __FILE__, __LINE__));
    CHECK_SQLITE(db, RESULTS_PREPARE(db, &st,
        "UPDATE runs SET lease_expires = " RESULTS_NOW_SQL " + ?3,"
        " heartbeat_at = " RESULTS_NOW_SQL
        " WHERE id = ?1 AND attempt = ?2 AND status = 'running'"));
    CHECK_SQLITE(db, sqlite3_bind_int64(st, 1, lease->run_id));
    CHECK_SQLITE(db, sqlite3_bind_int(st, 2, lease->attempt));
    CHECK_SQLITE(db, sqlite3_bind_double(st, 3, lease->lease_seconds));
    CHECK_SQLITE(db, sqlite3_step(st));
    if (sqlite3_changes(db->db) == 0) rc = DR_ERR_FENCED;
cleanup:
    sqlite3_finalize(st);
    return rc;
}

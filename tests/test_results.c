/* Tests of the results store (results/): schema creation, idempotent registration,
 * claim order, leases and fencing, epochs, merge, error paths on bad files, and the
 * report statistics against values computed with scipy. A few raw SQLite calls set up
 * faults (a held lock, a newer schema) and inspect what the API does not expose. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "support.h"
#include "results/results.h"
#include "results/stats.h"

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}
}

/* ---- fixtures ---------------------------------------------------------------------- */

static struct results_experiment experiment(const char *name, const char *hash, const char *text)
{
    struct results_experiment e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.config_hash = hash;
    e.config_text = text;
    e.dawnrun_version = "0.1.0";
    e.git_rev = "abc123";
    e.engine = "cpu";
    e.host = "testhost";
    e.target_accuracy = 0.94;
    return e;
}

static struct results_claim claim_req(const char *host, int pid, double lease_s)
{
    struct results_claim c;
    results_claim_init(&c);
    snprintf(c.host, sizeof c.host, "%s", host);
    c.pid = pid;
    c.lease_seconds = lease_s;
    c.device = "cpu";
    return c;
}

static struct results_epoch epoch_row(int epoch, double test_acc)
{
    struct results_epoch e;
    memset(&e, 0, sizeof e);
    e.epoch = epoch;
    e.lr = 0.4;
    e.train_loss = 1.0 / epoch;
    e.train_acc = 0.5;
    e.test_loss = 0.9;
    e.test_acc = test_acc;
    e.train_time = 3.0;
    e.test_time = 0.5;
    e.total_time = 3.5 * epoch;
    return e;
}

static struct results_outcome outcome(enum results_run_status s, double acc)
{
    struct results_outcome o;
    memset(&o, 0, sizeof o);
    o.status = s;
    o.final_test_acc = acc;
    o.train_time = 30.0;
    o.total_time = 35.0;
    o.target_time = acc >= 0.94 ? 20.0 : -1;
    o.target_epoch = acc >= 0.94 ? 7 : -1;
    o.error = s == RUN_DONE ? NULL : "something broke";
    return o;
}

/* Records epoch `epoch` with test accuracy `acc` under lease l. */
static int rec(struct results *db, const struct results_lease *l, int epoch, double acc)
{
    struct results_epoch e = epoch_row(epoch, acc);
    return results_epoch_record(db, l, &e);
}

/* Finishes lease l's attempt with `status` and final accuracy `acc`. */
static int fin(struct results *db, const struct results_lease *l, enum results_run_status status,
               double acc)
{
    struct results_outcome o = outcome(status, acc);
    return results_run_finish(db, l, &o);
}

static int run_status(struct results *db, int64_t run_id)
{
    struct results_run r;
    int found = 0;
    if (results_run_get(db, &r, &found, run_id) != DR_OK || !found) return -1;
    int s = (int)r.status;
    results_run_clear(&r);
    return s;
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_schema(void)
{
    const char *p = support_path("schema.db");
    struct results *db = NULL;
    CHECK(results_open(&db, p) == DR_OK);
    CHECK(db != NULL);
    CHECK(results_check_integrity(db) == DR_OK);
    CHECK(strcmp(results_path(db), p) == 0);
    results_close(db);
    CHECK(support_sql_int(p, "PRAGMA user_version") == RESULTS_SCHEMA_VERSION);
    CHECK(support_sql_int(p, "PRAGMA application_id") == 0x44524e52);
    CHECK(support_sql_int(p, "SELECT count(*) FROM sqlite_schema WHERE name IN ('experiments',"
                             " 'runs', 'epochs', 'experiment_summary', 'run_summary')") == 5);
    char mode[16] = "";
    sqlite3 *raw = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open(p, &raw) == SQLITE_OK &&
        sqlite3_prepare_v2(raw, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        snprintf(mode, sizeof mode, "%s", (const char *)sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    sqlite3_close(raw);
    CHECK(strcmp(mode, "wal") == 0);

    /* reopening an existing database changes nothing; read-only opening works */
    CHECK(results_open(&db, p) == DR_OK);
    results_close(db);
    CHECK(results_open_readonly(&db, p) == DR_OK);
    int64_t id = 0;
    struct results_experiment e = experiment("ro", "hash-ro", "text");
    support_capture_begin();
    CHECK(results_experiment_register(db, &id, NULL, &e) == DR_ERR_DB);
    support_capture_end();
    results_close(db);
    CHECK(support_sql_int(p, "SELECT count(*) FROM experiments") == 0);
    results_close(NULL);
}

static void test_register(void)
{
    struct results *db = NULL;
    int64_t id1 = 0, id2 = 0, id3 = 0;
    int created = -1;
    CHECK(results_open(&db, support_path("register.db")) == DR_OK);
    struct results_experiment e = experiment("dawn", "0123456789abcdef", "net = dawn;");
    CHECK(results_experiment_register(db, &id1, &created, &e) == DR_OK);
    CHECK(created == 1 && id1 > 0);
    CHECK(results_experiment_register(db, &id2, &created, &e) == DR_OK);
    CHECK(created == 0 && id2 == id1);

    /* same hash, different text: refused, nothing changed */
    struct results_experiment bad = experiment("dawn", "0123456789abcdef", "net = other;");
    support_capture_begin();
    CHECK(results_experiment_register(db, &id3, &created, &bad) == DR_ERR_DB);
    support_capture_end();

    /* missing required field */
    struct results_experiment empty = experiment("", "h", "t");
    support_capture_begin();
    CHECK(results_experiment_register(db, &id3, NULL, &empty) == DR_ERR_USAGE);
    support_capture_end();

    struct results_experiment e2 = experiment("dawn", "fedcba9876543210", "net = dawn; x = 1;");
    e2.target_accuracy = NAN;
    e2.git_rev = NULL;
    CHECK(results_experiment_register(db, &id3, NULL, &e2) == DR_OK);
    CHECK(id3 != id1);

    struct results_experiment *list = NULL;
    int n = 0;
    CHECK(results_experiments_list(db, &list, &n) == DR_OK);
    CHECK(n == 2);
    if (n == 2) {
        CHECK(list[0].id == id1 && strcmp(list[0].config_text, "net = dawn;") == 0);
        CHECK(strcmp(list[0].git_rev, "abc123") == 0);
        CHECK(list[0].target_accuracy == 0.94);
        CHECK(list[0].created_at > 1.6e9);   /* Unix seconds, database clock */
        CHECK(list[1].git_rev == NULL && isnan(list[1].target_accuracy));
    }
    results_experiments_free(list, n);

    CHECK(results_experiments_find(db, &list, &n, "dawn") == DR_OK && n == 2);
    results_experiments_free(list, n);
    CHECK(results_experiments_find(db, &list, &n, "fedcba98") == DR_OK && n == 1);
    if (n == 1) CHECK(list[0].id == id3);
    results_experiments_free(list, n);
    CHECK(results_experiments_find(db, &list, &n, "fedc") == DR_OK && n == 0);   /* too short */
    results_experiments_free(list, n);
    char key[32];
    snprintf(key, sizeof key, "%lld", (long long)id1);
    CHECK(results_experiments_find(db, &list, &n, key) == DR_OK && n == 1);
    results_experiments_free(list, n);
    CHECK(results_experiments_find(db, &list, &n, "x' OR 1=1 --") == DR_OK && n == 0);
    results_experiments_free(list, n);

    struct results_experiment got;
    int found = 0;
    CHECK(results_experiment_get(db, &got, &found, id1) == DR_OK && found);
    CHECK(found && strcmp(got.name, "dawn") == 0 && strcmp(got.engine, "cpu") == 0);
    results_experiment_clear(&got);
    CHECK(results_experiment_get(db, &got, &found, 9999) == DR_OK && !found);

    /* runs_ensure: one run per seed, idempotent */
    uint64_t seeds[] = {0, 1, 2, 3, 4};
    uint64_t more[] = {3, 5, UINT64_MAX};
    int added = -1;
    CHECK(results_runs_ensure(db, &added, id1, seeds, 5, 3) == DR_OK && added == 5);
    CHECK(results_runs_ensure(db, &added, id1, seeds, 5, 3) == DR_OK && added == 0);
    CHECK(results_runs_ensure(db, &added, id1, more, 3, 3) == DR_OK && added == 2);
    support_capture_begin();
    CHECK(results_runs_ensure(db, &added, 9999, seeds, 5, 3) == DR_ERR_DB);
    support_capture_end();
    struct results_run *runs = NULL;
    CHECK(results_runs_list(db, &runs, &n, id1) == DR_OK && n == 7);
    int has_max = 0;
    for (int i = 0; i < n; i++) {
        CHECK(runs[i].status == RUN_PENDING && runs[i].attempt == 0);
        CHECK(runs[i].max_attempts == 3 && runs[i].host == NULL && runs[i].target_epoch == -1);
        if (runs[i].seed == UINT64_MAX) has_max = 1;
    }
    CHECK(has_max);   /* a seed of 2^64 - 1 round-trips */
    results_runs_free(runs, n);
    results_close(db);
}

static void test_claim_order(void)
{
    struct results *db = NULL;
    int64_t a = 0, b = 0;
    struct results_lease l;
    CHECK(results_open(&db, support_path("order.db")) == DR_OK);
    struct results_experiment ea = experiment("a", "hash-a", "a");
    struct results_experiment eb = experiment("b", "hash-b", "b");
    CHECK(results_experiment_register(db, &a, NULL, &ea) == DR_OK);
    CHECK(results_experiment_register(db, &b, NULL, &eb) == DR_OK);
    uint64_t sa[] = {4, 2, 0, 3, 1};
    uint64_t sb[] = {1, 0};
    CHECK(results_runs_ensure(db, NULL, a, sa, 5, 3) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, b, sb, 2, 3) == DR_OK);

    /* only experiment a: seeds in order */
    struct results_claim req = claim_req("host1", (int)getpid(), 60);
    req.experiment_ids = &a;
    req.n_experiments = 1;
    CHECK(results_claim_run(db, &l, &req) == DR_OK);
    CHECK(l.run_id > 0 && l.experiment_id == a && l.seed == 0 && l.attempt == 1);
    CHECK(l.lease_seconds == 60);
    CHECK(results_claim_run(db, &l, &req) == DR_OK && l.experiment_id == a && l.seed == 1);

    /* any experiment: seed first, then experiment id */
    struct results_claim any = claim_req("host1", (int)getpid(), 60);
    const int64_t expect_exp[] = {b, b, a, a, a};
    const uint64_t expect_seed[] = {0, 1, 2, 3, 4};
    for (int i = 0; i < 5; i++) {
        CHECK(results_claim_run(db, &l, &any) == DR_OK);
        CHECK(l.experiment_id == expect_exp[i] && l.seed == expect_seed[i]);
        /* a failed run is not claimed again unless asked */
        if (i == 0) CHECK(results_run_finish(db, &l, &(struct results_outcome){
                              .status = RUN_FAILED, .final_test_acc = NAN, .train_time = NAN,
                              .total_time = NAN, .target_time = NAN, .target_epoch = -1,
                              .error = "out of memory"}) == DR_OK);
    }
    CHECK(results_claim_run(db, &l, &any) == DR_OK && l.run_id == 0);   /* queue empty */
    any.retry_failed = 1;
    CHECK(results_claim_run(db, &l, &any) == DR_OK);
    CHECK(l.experiment_id == b && l.seed == 0 && l.attempt == 2);
    struct results_run r;
    int found = 0;
    CHECK(results_run_get(db, &r, &found, l.run_id) == DR_OK && found);
    CHECK(r.status == RUN_RUNNING && r.pid == (int)getpid() && strcmp(r.host, "host1") == 0);
    CHECK(strcmp(r.device, "cpu") == 0 && r.lease_expires > r.heartbeat_at);
    CHECK(r.error && strcmp(r.error, "out of memory") == 0);   /* previous attempt's reason */
    results_run_clear(&r);

    /* an interrupted run is claimable again, without the retry flag */
    CHECK(results_run_finish(db, &l, &(struct results_outcome){
              .status = RUN_INTERRUPTED, .final_test_acc = NAN, .train_time = NAN,
              .total_time = NAN, .target_time = NAN, .target_epoch = -1,
              .error = "SIGINT"}) == DR_OK);
    any.retry_failed = 0;
    CHECK(results_claim_run(db, &l, &any) == DR_OK && l.seed == 0 && l.attempt == 3);

    /* bad lease length */
    any.lease_seconds = 0;
    support_capture_begin();
    CHECK(results_claim_run(db, &l, &any) == DR_ERR_USAGE && l.run_id == 0);
    support_capture_end();
    results_close(db);
}

static void test_fencing(void)
{
    struct results *db = NULL;
    int64_t x = 0;
    struct results_lease old, cur;
    struct results_epoch *eps = NULL;
    int n = 0;
    const char *p = support_path("fence.db");
    CHECK(results_open(&db, p) == DR_OK);
    struct results_experiment e = experiment("x", "hash-x", "x");
    CHECK(results_experiment_register(db, &x, NULL, &e) == DR_OK);
    uint64_t seeds[] = {7};
    CHECK(results_runs_ensure(db, NULL, x, seeds, 1, 5) == DR_OK);

    /* worker A: a very short lease, then "paused" past it */
    struct results_claim ra = claim_req("hostA", 1, 0.05);
    CHECK(results_claim_run(db, &old, &ra) == DR_OK && old.attempt == 1);
    CHECK(results_epoch_record(db, &old, &(struct results_epoch){0}) == DR_OK);
    struct results_epoch e1 = epoch_row(1, 0.50);
    CHECK(results_epoch_record(db, &old, &e1) == DR_OK);
    CHECK(rec(db, &old, 2, 0.60) == DR_OK);
    sleep_s(0.3);
    /* expired but not yet reclaimed: the owner may still renew */
    CHECK(results_heartbeat(db, &old) == DR_OK);
    sleep_s(0.3);

    /* worker B on another host reclaims the expired lease */
    struct results_claim rb = claim_req("hostB", 2, 60);
    CHECK(results_claim_run(db, &cur, &rb) == DR_OK);
    CHECK(cur.run_id == old.run_id && cur.attempt == 2);
    struct results_run r;
    int found = 0;
    CHECK(results_run_get(db, &r, &found, cur.run_id) == DR_OK && found);
    CHECK(r.error && strstr(r.error, "hostA") != NULL);
    results_run_clear(&r);

    /* B resumes after epoch 1: A's epoch-2 row is discarded, epoch 1 kept */
    CHECK(results_run_resume_at(db, &cur, 1) == DR_OK);
    CHECK(results_epochs_list(db, &eps, &n, cur.run_id) == DR_OK && n == 2);
    free(eps);

    /* A wakes up: every late write is rejected and changes nothing */
    CHECK(results_heartbeat(db, &old) == DR_ERR_FENCED);
    CHECK(rec(db, &old, 2, 0.99) == DR_ERR_FENCED);
    CHECK(rec(db, &old, 1, 0.99) == DR_ERR_FENCED);
    CHECK(results_run_resume_at(db, &old, 0) == DR_ERR_FENCED);
    CHECK(results_run_finish(db, &old, &(struct results_outcome){
              .status = RUN_DONE, .final_test_acc = 0.99, .train_time = 1, .total_time = 1,
              .target_time = 1, .target_epoch = 1}) == DR_ERR_FENCED);
    CHECK(run_status(db, cur.run_id) == RUN_RUNNING);
    CHECK(results_epochs_list(db, &eps, &n, cur.run_id) == DR_OK && n == 2);
    if (n == 2) CHECK(eps[1].epoch == 1 && eps[1].test_acc == 0.50 && eps[1].attempt == 1);
    free(eps);

    /* B redoes epoch 1 (replacing A's row: same epoch, newer attempt) and goes on */
    CHECK(results_heartbeat(db, &cur) == DR_OK);
    CHECK(rec(db, &cur, 1, 0.55) == DR_OK);
    struct results_epoch e2 = epoch_row(2, 0.945);
    e2.train_loss = NAN;   /* unknown numbers round-trip as NaN */
    CHECK(results_epoch_record(db, &cur, &e2) == DR_OK);
    CHECK(results_epoch_record(db, &cur, &e2) == DR_OK);   /* same attempt: idempotent */
    CHECK(results_epochs_list(db, &eps, &n, cur.run_id) == DR_OK && n == 3);
    if (n == 3) {
        CHECK(eps[1].test_acc == 0.55 && eps[1].attempt == 2);
        CHECK(eps[2].test_acc == 0.945 && isnan(eps[2].train_loss) && eps[2].total_time == 7.0);
        CHECK(eps[2].recorded_at > 1.6e9);
    }
    free(eps);
    CHECK(support_sql_int(p, "SELECT count(*) FROM epochs") == 3);

    CHECK(fin(db, &cur, RUN_DONE, 0.945) == DR_OK);
    CHECK(fin(db, &cur, RUN_DONE, 0.945) == DR_ERR_FENCED);
    CHECK(results_heartbeat(db, &cur) == DR_ERR_FENCED);
    CHECK(rec(db, &cur, 3, 0.9) == DR_ERR_FENCED);
    CHECK(results_run_get(db, &r, &found, cur.run_id) == DR_OK && found);
    CHECK(r.status == RUN_DONE && r.final_test_acc == 0.945 && r.target_epoch == 7);
    CHECK(r.target_time == 20.0 && r.error == NULL && isnan(r.lease_expires));
    CHECK(r.ended_at >= r.started_at);
    results_run_clear(&r);

    /* finishing with a non-final status is a bug */
    support_capture_begin();
    CHECK(results_run_finish(db, &cur, &(struct results_outcome){.status = RUN_PENDING}) ==
          DR_ERR_INTERNAL);
    support_capture_end();

    /* a done run is never claimed again */
    struct results_lease none;
    rb.retry_failed = 1;
    CHECK(results_claim_run(db, &none, &rb) == DR_OK && none.run_id == 0);
    CHECK(results_check_integrity(db) == DR_OK);
    results_close(db);
}

static void test_stale_and_limits(void)
{
    struct results *db = NULL;
    int64_t x = 0;
    struct results_lease l1, l2;
    CHECK(results_open(&db, support_path("stale.db")) == DR_OK);
    struct results_experiment e = experiment("s", "hash-s", "s");
    CHECK(results_experiment_register(db, &x, NULL, &e) == DR_OK);
    uint64_t s0[] = {0};
    CHECK(results_runs_ensure(db, NULL, x, s0, 1, 2) == DR_OK);

    /* a live owner on this host with a valid lease keeps its run */
    struct results_claim me = claim_req("samehost", (int)getpid(), 600);
    CHECK(results_claim_run(db, &l1, &me) == DR_OK && l1.attempt == 1);
    CHECK(results_claim_run(db, &l2, &me) == DR_OK && l2.run_id == 0);

    /* its owner's pid is gone: reclaimed at once by a worker on the same host */
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0);
    struct results_run r;
    int found = 0;
    struct results *db2 = NULL;
    CHECK(results_open(&db2, support_path("stale.db")) == DR_OK);
    struct results_claim dead = claim_req("samehost", (int)child, 600);
    /* hand the run to the dead pid: finish as interrupted, reclaim as the dead worker */
    CHECK(fin(db, &l1, RUN_INTERRUPTED, NAN) == DR_OK);
    CHECK(results_claim_run(db2, &l1, &dead) == DR_OK && l1.attempt == 2);
    struct results_claim other_host = claim_req("otherhost", (int)getpid(), 600);
    CHECK(results_claim_run(db, &l2, &other_host) == DR_OK && l2.run_id == 0);
    /* attempt 2 vanished without progress: stall 1 of 2, reclaimed */
    CHECK(results_claim_run(db, &l2, &me) == DR_OK && l2.run_id == l1.run_id);
    CHECK(l2.attempt == 3);
    const char *sp = support_path("stale.db");
    CHECK(support_sql_int(sp, "SELECT stalls FROM runs WHERE seed = 0") == 1);
    /* an interrupted attempt is no stall: the count stays; the next vanished one, still
     * without progress, is stall 2 of 2: marked failed instead of claimed */
    CHECK(fin(db, &l2, RUN_INTERRUPTED, NAN) == DR_OK);
    CHECK(results_claim_run(db2, &l1, &dead) == DR_OK && l1.attempt == 4);
    CHECK(support_sql_int(sp, "SELECT stalls FROM runs WHERE seed = 0") == 1);
    struct results_census census;
    CHECK(results_claim_census(db, &census, &me) == DR_OK);
    CHECK(census.total == 1 && census.failed == 1 && census.to_run == 0);
    CHECK(results_claim_run(db, &l2, &me) == DR_OK && l2.run_id == 0);
    CHECK(results_run_get(db, &r, &found, l1.run_id) == DR_OK && found);
    CHECK(r.status == RUN_FAILED && r.error &&
          strstr(r.error, "abandoned: 2 attempts in a row stopped at the same point") != NULL &&
          strstr(r.error, "never seen training") != NULL && strstr(r.error, "attempt 4") != NULL);
    results_run_clear(&r);
    CHECK(results_claim_census(db, &census, &me) == DR_OK);
    CHECK(census.failed == 1 && census.to_run == 0);
    /* a retry always reruns it, with a fresh budget */
    me.retry_failed = 1;
    CHECK(results_claim_census(db, &census, &me) == DR_OK);
    CHECK(census.failed == 0 && census.to_run == 1);
    CHECK(results_claim_run(db, &l2, &me) == DR_OK && l2.run_id == l1.run_id);
    CHECK(l2.attempt == 5 && support_sql_int(sp, "SELECT stalls FROM runs WHERE seed = 0") == 0);
    CHECK(results_claim_census(db, &census, &me) == DR_OK);
    CHECK(census.running_elsewhere == 1 && census.to_run == 0);   /* a live owner holds it */
    me.retry_failed = 0;
    results_close(db2);

    /* below the limit the same situation is reclaimed */
    uint64_t s1[] = {1};
    CHECK(results_runs_ensure(db, NULL, x, s1, 1, 3) == DR_OK);
    CHECK(results_claim_run(db, &l1, &dead) == DR_OK && l1.seed == 1 && l1.attempt == 1);
    CHECK(results_claim_run(db, &l2, &me) == DR_OK);
    CHECK(l2.run_id == l1.run_id && l2.attempt == 2);
    CHECK(results_heartbeat(db, &l1) == DR_ERR_FENCED);
    results_close(db);
}

/* Progress: a run whose vanished attempts each recorded an epoch or a checkpoint is
 * reclaimed however often that happens, even with a limit of one; one that vanished at
 * the same point fails, naming the point; failed runs are requeued with a fresh budget;
 * a lost checkpoint lowers the claim's point so that redoing the work counts. */
static void test_progress(void)
{
    struct results *db = NULL;
    int64_t x = 0;
    struct results_lease gone, me_l;
    struct results_run r;
    int found = 0;
    const char *p = support_path("progress.db");
    CHECK(results_open(&db, p) == DR_OK);
    struct results_experiment e = experiment("p", "hash-p", "p");
    CHECK(results_experiment_register(db, &x, NULL, &e) == DR_OK);
    uint64_t s0[] = {0};
    CHECK(results_runs_ensure(db, NULL, x, s0, 1, 1) == DR_OK);
    pid_t child = fork();
    if (child == 0) _exit(0);
    waitpid(child, NULL, 0);
    struct results_claim dead = claim_req("h", (int)child, 600);
    struct results_claim me = claim_req("h", (int)getpid(), 600);

    /* five vanished attempts, each one step further: an epoch, then its checkpoint */
    for (int i = 0; i < 5; i++) {
        CHECK(results_claim_run(db, &gone, &dead) == DR_OK && gone.attempt == i + 1);
        /* resumed from the checkpoint after epoch i / 2, it records the next epoch, and
         * every second attempt also its checkpoint */
        int epoch = i / 2 + 1;
        CHECK(results_run_resume_at(db, &gone, i / 2) == DR_OK);
        CHECK(rec(db, &gone, epoch, 0.5) == DR_OK);
        if (i % 2 == 1) CHECK(results_run_checkpointed(db, &gone, epoch) == DR_OK);
        CHECK(results_heartbeat_at(db, &gone, epoch + 1, 3) == DR_OK);
        CHECK(support_sql_int(p, "SELECT stalls FROM runs") == 0);
    }
    CHECK(support_sql_int(p, "SELECT count(*) FROM epochs") == 3);
    CHECK(support_sql_int(p, "SELECT checkpoint_epoch FROM runs") == 2);
    /* the sixth resumes at the checkpoint (epoch 3 recorded, its checkpoint not), redoes
     * epoch 3 and vanishes before the checkpoint: the same point, a stall */
    CHECK(results_claim_run(db, &gone, &dead) == DR_OK && gone.attempt == 6);
    CHECK(results_run_resume_at(db, &gone, 2) == DR_OK);
    CHECK(support_sql_int(p, "SELECT count(*) FROM epochs") == 2);
    CHECK(rec(db, &gone, 3, 0.5) == DR_OK);
    CHECK(results_heartbeat_at(db, &gone, 3, 10) == DR_OK);
    CHECK(results_claim_run(db, &me_l, &me) == DR_OK && me_l.run_id == 0);
    CHECK(results_run_get(db, &r, &found, gone.run_id) == DR_OK && found);
    CHECK(r.status == RUN_FAILED && r.error);
    if (r.error) {
        CHECK(strstr(r.error, "abandoned: 1 attempt in a row stopped at the same point") != NULL);
        CHECK(strstr(r.error, "last seen in epoch 3 at step 10, with 3 epochs recorded and a "
                              "checkpoint after epoch 2 (last: attempt 6, host h, pid") != NULL);
    }
    results_run_clear(&r);

    /* requeued: pending with a fresh budget; the epochs stay for the resume */
    struct results_claim all = claim_req("h", (int)getpid(), 600);
    int requeued = 0;
    CHECK(results_runs_requeue_failed(db, &requeued, &all) == DR_OK && requeued == 1);
    CHECK(run_status(db, gone.run_id) == RUN_PENDING);
    CHECK(support_sql_int(p, "SELECT stalls FROM runs") == 0);
    CHECK(results_claim_run(db, &me_l, &me) == DR_OK && me_l.attempt == 7);
    CHECK(results_runs_requeue_failed(db, &requeued, &all) == DR_OK && requeued == 0);

    /* the checkpoint is lost: a restart from scratch lowers the claim's point, so the
     * first epoch it records again is progress */
    CHECK(support_sql_int(p, "SELECT claim_progress FROM runs") == 5);
    CHECK(results_run_resume_at(db, &me_l, 0) == DR_OK);
    CHECK(support_sql_int(p, "SELECT claim_progress FROM runs") == 0);
    CHECK(support_sql_int(p, "SELECT checkpoint_epoch FROM runs") == 0);
    CHECK(support_sql_int(p, "SELECT count(*) FROM epochs") == 0);
    CHECK(results_run_checkpointed(db, &gone, 1) == DR_ERR_FENCED);   /* an old attempt's */
    CHECK(results_run_resume_at(db, &gone, 0) == DR_ERR_FENCED);
    results_close(db);
}

static void test_values(void)
{
    struct results *db = NULL;
    int64_t x = 0;
    struct results_lease l;
    CHECK(results_open(&db, support_path("values.db")) == DR_OK);
    struct results_experiment e = experiment("v", "hash-v", "v");
    CHECK(results_experiment_register(db, &x, NULL, &e) == DR_OK);
    uint64_t seeds[] = {0, 1, 2, 3, 4};
    CHECK(results_runs_ensure(db, NULL, x, seeds, 5, 3) == DR_OK);
    const double acc[] = {0.9412, 0.9398, 0.9431, 0.9405, NAN};
    struct results_claim req = claim_req("h", (int)getpid(), 60);
    for (int i = 0; i < 5; i++) {
        CHECK(results_claim_run(db, &l, &req) == DR_OK && l.seed == (uint64_t)i);
        CHECK(fin(db, &l, i < 4 ? RUN_DONE : RUN_DIVERGED, acc[i]) ==
              DR_OK);
    }
    double *v = NULL;
    int n = 0;
    CHECK(results_done_values(db, &v, &n, x, RESULTS_FINAL_ACC) == DR_OK && n == 4);
    for (int i = 0; i < n && i < 4; i++) CHECK(v[i] == acc[i]);
    free(v);
    CHECK(results_done_values(db, &v, &n, x, RESULTS_TARGET_EPOCH) == DR_OK && n == 3);
    if (n == 3) CHECK(v[0] == 7 && v[1] == 7 && v[2] == 7);
    free(v);
    CHECK(results_done_values(db, &v, &n, x, RESULTS_TARGET_TIME) == DR_OK && n == 3);
    free(v);
    CHECK(results_done_values(db, &v, &n, x, RESULTS_TRAIN_TIME) == DR_OK && n == 4);
    free(v);
    CHECK(results_done_values(db, &v, &n, 999, RESULTS_FINAL_ACC) == DR_OK && n == 0 && !v);
    results_close(db);

    /* the SQL view agrees: 4 done, 3 hits, median of 0.9398 0.9405 0.9412 0.9431 */
    const char *p = support_path("values.db");
    CHECK(support_sql_int(p, "SELECT done FROM experiment_summary") == 4);
    CHECK(support_sql_int(p, "SELECT hits FROM experiment_summary") == 3);
    CHECK(support_sql_int(p, "SELECT round(median_acc * 1000000) FROM experiment_summary")
          == 940850);
    CHECK(support_sql_int(p, "SELECT count(*) FROM run_summary WHERE status = 'diverged'") == 1);
}

/* Builds a run in db: claim seed `seed` of experiment `exp`, `epochs` epochs, finish. */
static void make_run(struct results *db, int64_t exp, uint64_t seed, int epochs,
                     enum results_run_status status, double acc)
{
    struct results_lease l;
    struct results_claim req = claim_req("h", (int)getpid(), 60);
    req.experiment_ids = &exp;
    req.n_experiments = 1;
    uint64_t s[] = {seed};
    CHECK(results_runs_ensure(db, NULL, exp, s, 1, 3) == DR_OK);
    /* claim until we hold this seed (earlier seeds were finished by earlier calls) */
    CHECK(results_claim_run(db, &l, &req) == DR_OK);
    CHECK(l.seed == seed);
    for (int e = 1; e <= epochs; e++)
        CHECK(rec(db, &l, e, acc - 0.01 * (epochs - e)) == DR_OK);
    if (status != RUN_RUNNING) CHECK(fin(db, &l, status, acc) == DR_OK);
}

/* Statuses and accuracies of an experiment found by hash, as a comparable string. */
static void describe(char *out, size_t size, struct results *db, const char *hash)
{
    struct results_experiment *ex = NULL;
    struct results_run *runs = NULL;
    int ne = 0, nr = 0;
    size_t len = 0;
    out[0] = '\0';
    if (results_experiments_find(db, &ex, &ne, hash) != DR_OK || ne != 1) goto done;
    if (results_runs_list(db, &runs, &nr, ex[0].id) != DR_OK) goto done;
    for (int i = 0; i < nr && len < size; i++) {
        struct results_epoch *eps = NULL;
        int n = 0;
        results_epochs_list(db, &eps, &n, runs[i].id);
        double last = n ? eps[n - 1].test_acc : -1;
        len += (size_t)snprintf(out + len, size - len, "%llu:%s:%.4f:%d:%.4f ",
                                (unsigned long long)runs[i].seed,
                                results_status_name(runs[i].status),
                                isnan(runs[i].final_test_acc) ? -1 : runs[i].final_test_acc,
                                n, last);
        free(eps);
    }
done:
    results_runs_free(runs, nr);
    results_experiments_free(ex, ne);
}

static void test_merge(void)
{
    struct results *a = NULL, *b = NULL, *out = NULL, *out2 = NULL;
    int64_t ax = 0, bx = 0, by = 0;
    struct results_merge_stats st;
    char d1[2048], d2[2048], d3[2048];
    CHECK(results_open(&a, support_path("task-a.db")) == DR_OK);
    CHECK(results_open(&b, support_path("task-b.db")) == DR_OK);
    struct results_experiment ex = experiment("x", "hash-merge-x", "x");
    struct results_experiment ey = experiment("y", "hash-merge-y", "y");
    CHECK(results_experiment_register(a, &ax, NULL, &ex) == DR_OK);
    CHECK(results_experiment_register(b, &by, NULL, &ey) == DR_OK);   /* ids differ */
    CHECK(results_experiment_register(b, &bx, NULL, &ex) == DR_OK);
    CHECK(ax != bx);
    /* A: seed 0 done, 1 failed, 2 still running. B: 1 done, 2 done, 3 pending. */
    make_run(a, ax, 0, 3, RUN_DONE, 0.941);
    make_run(a, ax, 1, 1, RUN_FAILED, 0.2);
    make_run(a, ax, 2, 2, RUN_RUNNING, 0.5);
    make_run(b, bx, 1, 3, RUN_DONE, 0.943);
    make_run(b, bx, 2, 3, RUN_DONE, 0.938);
    uint64_t s3[] = {3};
    CHECK(results_runs_ensure(b, NULL, bx, s3, 1, 3) == DR_OK);
    make_run(b, by, 0, 2, RUN_DONE, 0.95);
    results_close(a);
    results_close(b);

    CHECK(results_open(&out, support_path("merged.db")) == DR_OK);
    CHECK(results_merge(out, &st, support_path("task-a.db")) == DR_OK);
    CHECK(st.experiments_added == 1 && st.runs_added == 3 && st.runs_replaced == 0);
    CHECK(st.epochs_copied == 6);
    CHECK(results_merge(out, &st, support_path("task-b.db")) == DR_OK);
    CHECK(st.experiments_added == 1 && st.runs_added == 2 && st.runs_replaced == 2);
    CHECK(st.runs_kept == 0 && st.epochs_copied == 3 + 3 + 2);
    describe(d1, sizeof d1, out, "hash-merge-x");
    CHECK(strcmp(d1, "0:done:0.9410:3:0.9410 1:done:0.9430:3:0.9430 2:done:0.9380:3:0.9380 "
                     "3:pending:-1.0000:0:-1.0000 ") == 0);
    fprintf(stderr, "merged: %s\n", d1);
    /* the merge wrote the hit-rate intervals of the finished counts it made: x 3, y 1 */
    CHECK(support_sql_int(support_path("merged.db"), "SELECT count(*) * 10 + max(n)"
                                                     " FROM binomial_ci") == 63);
    CHECK(support_sql_int(support_path("merged.db"),
                          "SELECT count(*) FROM experiment_summary WHERE finished > 0"
                          " AND (hit_ci_lo IS NULL OR hit_ci_hi IS NULL)") == 0);

    /* idempotent: merging either input again changes nothing */
    CHECK(results_merge(out, &st, support_path("task-b.db")) == DR_OK);
    CHECK(st.experiments_added == 0 && st.runs_added == 0 && st.runs_replaced == 0);
    CHECK(st.runs_kept == 4 && st.epochs_copied == 0);
    CHECK(results_merge(out, &st, support_path("task-a.db")) == DR_OK);
    CHECK(st.runs_added == 0 && st.runs_replaced == 0 && st.runs_kept == 3);
    describe(d2, sizeof d2, out, "hash-merge-x");
    CHECK(strcmp(d1, d2) == 0);
    /* merging a database into itself is a no-op */
    CHECK(results_merge(out, &st, support_path("merged.db")) == DR_OK);
    CHECK(st.experiments_added == 0 && st.runs_added == 0 && st.runs_replaced == 0);
    CHECK(st.runs_kept == 5);
    describe(d2, sizeof d2, out, "hash-merge-x");
    CHECK(strcmp(d1, d2) == 0);
    CHECK(results_check_integrity(out) == DR_OK);

    /* the other order gives the same runs */
    CHECK(results_open(&out2, support_path("merged2.db")) == DR_OK);
    CHECK(results_merge(out2, NULL, support_path("task-b.db")) == DR_OK);
    CHECK(results_merge(out2, NULL, support_path("task-a.db")) == DR_OK);
    describe(d3, sizeof d3, out2, "hash-merge-x");
    CHECK(strcmp(d1, d3) == 0);
    describe(d2, sizeof d2, out, "hash-merge-y");
    describe(d3, sizeof d3, out2, "hash-merge-y");
    CHECK(strcmp(d2, d3) == 0 && strcmp(d2, "0:done:0.9500:2:0.9500 ") == 0);
    results_close(out2);

    /* the running run of A arrives as interrupted when nothing better exists */
    CHECK(results_open(&out2, support_path("merged3.db")) == DR_OK);
    CHECK(results_merge(out2, NULL, support_path("task-a.db")) == DR_OK);
    describe(d3, sizeof d3, out2, "hash-merge-x");
    CHECK(strstr(d3, "2:interrupted:") != NULL);

    /* bad inputs: missing file, not a database; nothing merged */
    support_capture_begin();
    CHECK(results_merge(out2, NULL, support_path("missing.db")) == DR_ERR_DB);
    const char *msg = support_capture_end();
    CHECK(strstr(msg, "missing.db") != NULL);
    results_close(out2);
    results_close(out);
}

/* Recorded sweeps: every record is a new sweep; axes and members come back in order; a
 * member that is not registered records nothing; a merge copies sweeps once, mapping
 * members by config hash. */
static void test_sweeps(void)
{
    struct results *a = NULL, *out = NULL;
    int64_t x1 = 0, x2 = 0, s1 = 0, s2 = 0, bad = 0;
    int found = -1, n = -1;
    struct results_sweep got, *list = NULL;
    CHECK(results_open(&a, support_path("sweeps-a.db")) == DR_OK);
    CHECK(results_sweep_get(a, &got, &found, 0) == DR_OK && found == 0);
    struct results_experiment e1 = experiment("s:lr=0.1", "hash-sweep-1", "a");
    struct results_experiment e2 = experiment("s:lr=0.2", "hash-sweep-2", "b");
    CHECK(results_experiment_register(a, &x1, NULL, &e1) == DR_OK);
    CHECK(results_experiment_register(a, &x2, NULL, &e2) == DR_OK);
    struct results_sweep_axis axes[] = {{"train.lr", "0.1,0.2"}};
    int64_t members[] = {x2, x1};
    struct results_sweep s = {0, 0, "dawnrun run 'a b.cfg'", "h1", axes, 1, members, 2};
    CHECK(results_sweep_record(a, &s1, &s) == DR_OK && s1 > 0);
    CHECK(results_sweep_record(a, &s2, &s) == DR_OK && s2 > s1);   /* a re-launch: new */
    int64_t missing[] = {x1, 999};
    struct results_sweep sb = {0, 0, "dawnrun run c.cfg", "h1", axes, 1, missing, 2};
    support_capture_begin();
    CHECK(results_sweep_record(a, &bad, &sb) == DR_ERR_DB && bad == 0);
    CHECK(strstr(support_capture_end(), "not a registered experiment") != NULL);
    CHECK(results_sweeps_list(a, &list, &n) == DR_OK && n == 2);   /* nothing of the bad one */
    results_sweeps_free(list, n);
    CHECK(results_sweep_get(a, &got, &found, 0) == DR_OK && found == 1 && got.id == s2);
    CHECK(got.n_axes == 1 && !strcmp(got.axes[0].key, "train.lr") &&
          !strcmp(got.axes[0].vals, "0.1,0.2"));
    CHECK(got.n_members == 2 && got.members[0] == x2 && got.members[1] == x1);
    CHECK(!strcmp(got.command, "dawnrun run 'a b.cfg'") && !strcmp(got.host, "h1"));
    CHECK(got.created_at > 1e9);
    results_sweep_clear(&got);
    CHECK(results_sweep_get(a, &got, &found, s1) == DR_OK && found == 1 && got.id == s1);
    results_sweep_clear(&got);
    CHECK(results_sweep_get(a, &got, &found, 77) == DR_OK && found == 0);
    results_close(a);

    /* merge: ids differ in the output (another experiment registered first) */
    CHECK(results_open(&out, support_path("sweeps-out.db")) == DR_OK);
    struct results_experiment e0 = experiment("other", "hash-sweep-0", "c");
    int64_t x0 = 0;
    CHECK(results_experiment_register(out, &x0, NULL, &e0) == DR_OK);
    CHECK(results_merge(out, NULL, support_path("sweeps-a.db")) == DR_OK);
    CHECK(results_merge(out, NULL, support_path("sweeps-a.db")) == DR_OK);   /* once */
    CHECK(results_sweeps_list(out, &list, &n) == DR_OK && n == 2);
    for (int i = 0; i < n; i++) {
        struct results_experiment m0, m1;
        int f0 = 0, f1 = 0;
        CHECK(list[i].n_members == 2 && list[i].n_axes == 1);
        CHECK(results_experiment_get(out, &m0, &f0, list[i].members[0]) == DR_OK && f0);
        CHECK(results_experiment_get(out, &m1, &f1, list[i].members[1]) == DR_OK && f1);
        CHECK(!strcmp(m0.config_hash, "hash-sweep-2") && !strcmp(m1.config_hash, "hash-sweep-1"));
        results_experiment_clear(&m0);
        results_experiment_clear(&m1);
    }
    results_sweeps_free(list, n);
    CHECK(results_check_integrity(out) == DR_OK);
    results_close(out);
}

static void test_bad_files(void)
{
    struct results *db = NULL;
    long len = 0;
    char *before = NULL;
    const char *msg;

    /* a text file */
    const char *junk = support_path("junk.db");
    FILE *f = fopen(junk, "w");
    for (int i = 0; i < 100; i++) fputs("this is a text file, not a database\n", f);
    fclose(f);
    before = support_read_file(junk, &len);
    support_capture_begin();
    CHECK(results_open(&db, junk) == DR_ERR_DB && db == NULL);
    msg = support_capture_end();
    CHECK(strstr(msg, junk) != NULL && strstr(msg, "not a database") != NULL);
    support_capture_begin();
    CHECK(results_open_readonly(&db, junk) == DR_ERR_DB && db == NULL);
    support_capture_end();
    CHECK(support_file_unchanged(junk, before, len));
    free(before);

    /* an SQLite database of somebody else: not even switched to WAL */
    const char *other = support_path("other.db");
    CHECK(support_sql_exec(other, "CREATE TABLE t(x); INSERT INTO t VALUES (42);") == SQLITE_OK);
    before = support_read_file(other, &len);
    support_capture_begin();
    CHECK(results_open(&db, other) == DR_ERR_DB);
    msg = support_capture_end();
    CHECK(strstr(msg, other) != NULL && strstr(msg, "not a dawnrun results database") != NULL);
    CHECK(support_file_unchanged(other, before, len));
    CHECK(support_sql_int(other, "SELECT x FROM t") == 42);
    free(before);

    /* a results database from a newer dawnrun */
    const char *newer = support_path("newer.db");
    CHECK(results_open(&db, newer) == DR_OK);
    results_close(db);
    CHECK(support_sql_exec(newer, "PRAGMA user_version = 99") == SQLITE_OK);
    before = support_read_file(newer, &len);
    support_capture_begin();
    CHECK(results_open(&db, newer) == DR_ERR_DB);
    msg = support_capture_end();
    CHECK(strstr(msg, newer) != NULL && strstr(msg, "newer dawnrun") != NULL);
    support_capture_begin();
    CHECK(results_open_readonly(&db, newer) == DR_ERR_DB);
    support_capture_end();
    CHECK(support_file_unchanged(newer, before, len));
    CHECK(support_sql_int(newer, "PRAGMA user_version") == 99);
    free(before);

    /* missing file for reading, a directory, a path in a missing directory */
    support_capture_begin();
    CHECK(results_open_readonly(&db, support_path("nope.db")) == DR_ERR_DB);
    CHECK(results_open(&db, support_tmpdir()) == DR_ERR_DB);
    CHECK(results_open(&db, support_path("no/such/dir.db")) == DR_ERR_DB);
    msg = support_capture_end();
    CHECK(strstr(msg, "no/such/dir.db") != NULL);
    CHECK(access(support_path("nope.db"), F_OK) != 0);

    /* a damaged header: reported, not rewritten */
    const char *cut = support_path("cut.db");
    CHECK(results_open(&db, cut) == DR_OK);
    results_close(db);
    int fd = open(cut, O_WRONLY);
    CHECK(fd >= 0 && write(fd, "garbage garbage garbage garbage", 31) == 31);
    close(fd);
    before = support_read_file(cut, &len);
    support_capture_begin();
    CHECK(results_open(&db, cut) == DR_ERR_DB);
    msg = support_capture_end();
    CHECK(strstr(msg, cut) != NULL);
    CHECK(support_file_unchanged(cut, before, len));
    free(before);
}

static void test_locked(void)
{
    struct results *db = NULL;
    const char *p = support_path("locked.db");
    int64_t x = 0;
    CHECK(results_open(&db, p) == DR_OK);
    struct results_experiment e = experiment("l", "hash-l", "l");
    CHECK(results_experiment_register(db, &x, NULL, &e) == DR_OK);
    sqlite3 *holder = NULL;
    CHECK(sqlite3_open(p, &holder) == SQLITE_OK);
    CHECK(sqlite3_exec(holder, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    CHECK(results_set_busy_timeout(db, 100) == DR_OK);
    uint64_t seeds[] = {0, 1};
    int added = -1;
    support_capture_begin();
    CHECK(results_runs_ensure(db, &added, x, seeds, 2, 3) == DR_ERR_DB);
    const char *msg = support_capture_end();
    CHECK(strstr(msg, p) != NULL && strstr(msg, "locked") != NULL);
    CHECK(added == -1);
    /* reading still works under another writer (WAL) */
    struct results_experiment *list = NULL;
    int n = 0;
    CHECK(results_experiments_list(db, &list, &n) == DR_OK && n == 1);
    results_experiments_free(list, n);
    sqlite3_exec(holder, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(holder);
    CHECK(results_runs_ensure(db, &added, x, seeds, 2, 3) == DR_OK && added == 2);
    results_close(db);
}

static void test_fork_guard(void)
{
    struct results *db = NULL;
    int64_t x = 0;
    CHECK(results_open(&db, support_path("fork.db")) == DR_OK);
    struct results_experiment e = experiment("f", "hash-f", "f");
    CHECK(results_experiment_register(db, &x, NULL, &e) == DR_OK);
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) {
        /* the inherited handle is refused, and closing it leaves the parent's alone */
        int code = 0;
        int fd = open("/dev/null", O_WRONLY);
        dup2(fd, 2);
        if (results_runs_ensure(db, NULL, x, (uint64_t[]){1}, 1, 3) != DR_ERR_INTERNAL) code = 1;
        results_close(db);
        struct results *mine = NULL;
        if (results_open(&mine, support_path("fork.db")) != DR_OK) code = 2;
        if (results_runs_ensure(mine, NULL, x, (uint64_t[]){2}, 1, 3) != DR_OK) code = 3;
        results_close(mine);
        _exit(code);
    }
    int status = -1;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    struct results_run *runs = NULL;
    int n = 0;
    CHECK(results_runs_list(db, &runs, &n, x) == DR_OK && n == 1);
    if (n == 1) CHECK(runs[0].seed == 2);
    results_runs_free(runs, n);
    CHECK(results_check_integrity(db) == DR_OK);
    results_close(db);
}

/* Expected values computed with scipy 1.17.1 / numpy 2.4.6 (script in the comments):
 *   a = [0.9412, 0.9398, 0.9431, 0.9405, 0.9420]; b = [0.9387, 0.9401, 0.9379, 0.9395,
 *   0.9410, 0.9383]; x = [3, 1, 4, 1, 5, 9, 2, 6]
 *   mean, std(ddof=1), np.median, np.quantile(v, .25/.75),
 *   mean -+ stats.t.ppf(0.975, n-1) * std / sqrt(n)
 *   stats.t.ppf(0.975, df); stats.t.cdf(t, df); special.betainc(a, b, x)
 *   stats.ttest_ind(a, b, equal_var=False)
 *   stats.mannwhitneyu(a, b, alternative='two-sided', method='exact' / 'asymptotic') */
static void test_stats(void)
{
    const double a[] = {0.9412, 0.9398, 0.9431, 0.9405, 0.9420};
    const double b[] = {0.9387, 0.9401, 0.9379, 0.9395, 0.9410, 0.9383};
    const double x[] = {3, 1, 4, 1, 5, 9, 2, 6};
    struct stats_summary s;

    CHECK(stats_summarize(&s, a, 5) == DR_OK);
    CHECK(s.n == 5);
    CHECK_NEAR(s.mean, 0.94131999999999993, 1e-15);
    CHECK_NEAR(s.std, 0.0012872451204025, 1e-15);
    CHECK_NEAR(s.median, 0.9412, 1e-15);
    CHECK_NEAR(s.q1, 0.9405, 1e-15);
    CHECK_NEAR(s.q3, 0.942, 1e-15);
    CHECK_NEAR(s.iqr, 0.0015, 1e-14);
    CHECK_NEAR(s.ci_lo, 0.9397216740771327, 1e-12);
    CHECK_NEAR(s.ci_hi, 0.94291832592286717, 1e-12);
    CHECK(s.min == 0.9398 && s.max == 0.9431);

    CHECK(stats_summarize(&s, x, 8) == DR_OK);
    CHECK_NEAR(s.mean, 3.875, 1e-14);
    CHECK_NEAR(s.std, 2.7483761439387129, 1e-13);
    CHECK_NEAR(s.median, 3.5, 1e-14);
    CHECK_NEAR(s.q1, 1.75, 1e-14);
    CHECK_NEAR(s.q3, 5.25, 1e-14);
    CHECK_NEAR(s.ci_lo, 1.5773000431592457, 1e-11);
    CHECK_NEAR(s.ci_hi, 6.1726999568407539, 1e-11);

    /* NaNs are left out; one value has no spread; none is all NaN */
    const double with_nan[] = {NAN, 2.0};
    CHECK(stats_summarize(&s, with_nan, 2) == DR_OK);
    CHECK(s.n == 1 && s.mean == 2.0 && s.median == 2.0 && isnan(s.std) && isnan(s.ci_lo));
    CHECK(stats_summarize(&s, with_nan, 0) == DR_OK && s.n == 0 && isnan(s.mean));
    CHECK(isnan(stats_quantile_sorted(x, 0, 0.5)));

    CHECK_NEAR(stats_t_quantile(0.975, 1), 12.706204736174694, 1e-10);
    CHECK_NEAR(stats_t_quantile(0.975, 2), 4.3026527297494619, 1e-11);
    CHECK_NEAR(stats_t_quantile(0.975, 4), 2.7764451051977934, 1e-12);
    CHECK_NEAR(stats_t_quantile(0.975, 10), 2.2281388519862739, 1e-12);
    CHECK_NEAR(stats_t_quantile(0.975, 30), 2.0422724563012378, 1e-12);
    CHECK_NEAR(stats_t_quantile(0.025, 4), -2.7764451051977934, 1e-12);
    CHECK_NEAR(stats_t_cdf(0.5, 3), 0.67427601757592448, 1e-13);
    CHECK_NEAR(stats_t_cdf(-1.7, 7.5), 0.06503304917866852, 1e-13);
    CHECK_NEAR(stats_t_cdf(2.2, 1), 0.86420025121990807, 1e-13);
    CHECK_NEAR(stats_t_cdf(4.0, 12), 0.99911915187780254, 1e-13);
    CHECK_NEAR(stats_betainc(0.5, 0.5, 0.3), 0.36901011956554536, 1e-13);
    CHECK_NEAR(stats_betainc(2, 3, 0.4), 0.52479999999999993, 1e-13);
    CHECK_NEAR(stats_betainc(10, 0.5, 0.9), 0.15164090963470994, 1e-13);
    CHECK_NEAR(stats_betainc(1.5, 20, 0.05), 0.44342120168569027, 1e-13);
    CHECK(isnan(stats_betainc(-1, 1, 0.5)) && stats_betainc(2, 2, 1) == 1.0);
    CHECK_NEAR(stats_normal_cdf(1.959963984540054), 0.975, 1e-12);

    struct stats_test t;
    CHECK(stats_welch(&t, a, 5, b, 6) == DR_OK);
    CHECK_NEAR(t.statistic, 2.7647553729228203, 1e-11);
    CHECK_NEAR(t.df, 8.278063764610874, 1e-9);
    CHECK_NEAR(t.p, 0.023712769599961523, 1e-12);
    CHECK(stats_welch(&t, b, 6, a, 5) == DR_OK);
    CHECK_NEAR(t.statistic, -2.7647553729228203, 1e-11);
    CHECK_NEAR(t.p, 0.023712769599961523, 1e-12);
    const double c1[] = {1, 1, 1};
    CHECK(stats_welch(&t, c1, 3, c1, 3) == DR_OK && isnan(t.p));
    support_capture_begin();
    CHECK(stats_welch(&t, a, 1, b, 6) == DR_ERR_USAGE);
    support_capture_end();

    CHECK(stats_mann_whitney(&t, a, 5, b, 6, STATS_MWU_EXACT) == DR_OK);
    CHECK(t.statistic == 27 && t.exact == 1);
    CHECK_NEAR(t.p, 0.030303030303030304, 1e-12);
    CHECK(stats_mann_whitney(&t, a, 5, b, 6, STATS_MWU_AUTO) == DR_OK && t.exact == 1);
    CHECK(stats_mann_whitney(&t, a, 5, b, 6, STATS_MWU_ASYMPTOTIC) == DR_OK);
    CHECK(t.statistic == 27 && t.exact == 0);
    CHECK_NEAR(t.p, 0.035763766590977887, 1e-12);
    const double c[] = {1, 2, 2, 3, 5, 5, 5, 8};
    const double d[] = {2, 4, 5, 6, 6, 9, 10};
    CHECK(stats_mann_whitney(&t, c, 8, d, 7, STATS_MWU_AUTO) == DR_OK);   /* ties */
    CHECK(t.statistic == 14.5 && t.exact == 0);
    CHECK_NEAR(t.p, 0.12725393975018059, 1e-12);
    support_capture_begin();
    CHECK(stats_mann_whitney(&t, c, 8, d, 7, STATS_MWU_EXACT) == DR_ERR_USAGE);
    support_capture_end();
    const double e[] = {1.1, 2.3, 0.7};
    const double f[] = {3.1, 4.4, 2.9, 5.0};
    CHECK(stats_mann_whitney(&t, e, 3, f, 4, STATS_MWU_AUTO) == DR_OK);
    CHECK(t.statistic == 0 && t.exact == 1);
    CHECK_NEAR(t.p, 0.057142857142857141, 1e-12);
    CHECK(stats_mann_whitney(&t, f, 4, e, 3, STATS_MWU_AUTO) == DR_OK);
    CHECK(t.statistic == 12);
    CHECK_NEAR(t.p, 0.057142857142857141, 1e-12);
}

int main(void)
{
    if (support_tmpdir_make("/tmp/dawnrun-test-results-XXXXXX") != 0) return 1;
    test_schema();
    test_register();
    test_claim_order();
    test_fencing();
    test_stale_and_limits();
    test_progress();
    test_values();
    test_merge();
    test_sweeps();
    test_bad_files();
    test_locked();
    test_fork_guard();
    test_stats();
    return support_tmpdir_finish(check_finish("test_results"));
}

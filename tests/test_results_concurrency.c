/* Concurrency test of the results store: several processes, released at the same
 * instant, open one brand-new database (racing on schema creation), register the same
 * experiment, add the same seeds and claim runs until none is left. Every seed must be
 * claimed exactly once, every run end done after one attempt, and nothing be lost.
 * Then a worker stopped (SIGSTOP) past its lease finds its run reclaimed and every late
 * write rejected. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <time.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "support.h"
#include "results/results.h"

#define N_WORKERS 6
#define N_SEEDS 48
#define N_ROUNDS 3
#define EPOCHS_PER_RUN 2

/* Exit codes of a worker, one per step that can fail. */
enum { WORKER_OK = 0, WORKER_OPEN = 10, WORKER_REGISTER, WORKER_ENSURE, WORKER_CLAIM, WORKER_EPOCH, WORKER_FINISH, WORKER_REPORT };

/* One worker process: waits for the gate to open (EOF), then works the queue and writes
 * each claimed seed to report_fd (8-byte writes to a pipe are atomic). */
static int worker(const char *path, int gate_fd, int report_fd)
{
    char c;
    while (read(gate_fd, &c, 1) < 0 && errno == EINTR) {}
    struct results *db = NULL;
    if (results_open(&db, path) != DR_OK) return WORKER_OPEN;   /* after fork, never before */

    struct results_experiment e;
    memset(&e, 0, sizeof e);
    e.name = "race";
    e.config_hash = "race-hash";
    e.config_text = "train { epochs = 2; }";
    e.dawnrun_version = "test";
    e.engine = "cpu";
    e.target_accuracy = 0.5;
    int64_t exp_id = 0;
    if (results_experiment_register(db, &exp_id, NULL, &e) != DR_OK) return WORKER_REGISTER;
    uint64_t seeds[N_SEEDS];
    for (int i = 0; i < N_SEEDS; i++) seeds[i] = (uint64_t)i;
    if (results_runs_ensure(db, NULL, exp_id, seeds, N_SEEDS, 3) != DR_OK) return WORKER_ENSURE;

    struct results_claim req;
    results_claim_init(&req);
    req.experiment_ids = &exp_id;
    req.n_experiments = 1;
    for (;;) {
        struct results_lease l;
        if (results_claim_run(db, &l, &req) != DR_OK) return WORKER_CLAIM;
        if (l.run_id == 0) break;
        for (int ep = 1; ep <= EPOCHS_PER_RUN; ep++) {
            struct results_epoch r = {.epoch = ep, .lr = 0.1, .train_loss = 1.0, .train_acc = 0.5,
                                      .test_loss = 1.0, .test_acc = 0.5 + 0.01 * ep,
                                      .train_time = 0.01, .test_time = 0.01,
                                      .total_time = 0.02 * ep};
            if (results_epoch_record(db, &l, &r) != DR_OK) return WORKER_EPOCH;
        }
        struct results_outcome o = {.status = RUN_DONE, .final_test_acc = 0.52,
                                    .train_time = 0.02, .total_time = 0.04,
                                    .target_time = 0.01, .target_epoch = 1};
        if (results_run_finish(db, &l, &o) != DR_OK) return WORKER_FINISH;
        if (write(report_fd, &l.seed, sizeof l.seed) != (ssize_t)sizeof l.seed) return WORKER_REPORT;
    }
    results_close(db);
    return WORKER_OK;
}

static void round_once(int round)
{
    char path[512];
    int gate[2], report[2];
    pid_t pids[N_WORKERS];
    int claims[N_SEEDS] = {0};

    snprintf(path, sizeof path, "%s/round-%d.db", support_tmpdir(), round);
    if (pipe(gate) != 0 || pipe(report) != 0) {
        perror("pipe");
        CHECK(0);
        return;
    }
    fflush(NULL);
    for (int i = 0; i < N_WORKERS; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            close(gate[1]);
            close(report[0]);
            _exit(worker(path, gate[0], report[1]));
        }
        CHECK(pids[i] > 0);
    }
    close(gate[0]);
    close(report[1]);
    close(gate[1]);   /* opens the gate: every worker's read returns at once */

    uint64_t seed;
    ssize_t got;
    int total = 0, bogus = 0;
    while ((got = read(report[0], &seed, sizeof seed)) != 0) {
        if (got < 0 && errno == EINTR) continue;
        if (got != (ssize_t)sizeof seed) break;
        if (seed < N_SEEDS)
            claims[seed]++;
        else
            bogus++;
        total++;
    }
    close(report[0]);
    for (int i = 0; i < N_WORKERS; i++) {
        int status = -1;
        if (pids[i] > 0) waitpid(pids[i], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            fprintf(stderr, "round %d: worker %d ended with status %d\n", round, i, status);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == WORKER_OK);
    }
    CHECK(total == N_SEEDS && bogus == 0);
    int once = 1;
    for (int s = 0; s < N_SEEDS; s++)
        if (claims[s] != 1) {
            fprintf(stderr, "round %d: seed %d claimed %d times\n", round, s, claims[s]);
            once = 0;
        }
    CHECK(once);

    /* the database agrees: one experiment, every run done on its first attempt */
    struct results *db = NULL;
    CHECK(results_open_readonly(&db, path) == DR_OK);
    struct results_experiment *ex = NULL;
    int ne = 0;
    CHECK(results_experiments_list(db, &ex, &ne) == DR_OK && ne == 1);
    struct results_run *runs = NULL;
    int nr = 0;
    if (ne == 1) CHECK(results_runs_list(db, &runs, &nr, ex[0].id) == DR_OK);
    CHECK(nr == N_SEEDS);
    int good = 1, epochs = 0;
    for (int i = 0; i < nr; i++) {
        if (runs[i].status != RUN_DONE || runs[i].attempt != 1 || runs[i].seed != (uint64_t)i)
            good = 0;
        struct results_epoch *eps = NULL;
        int n = 0;
        CHECK(results_epochs_list(db, &eps, &n, runs[i].id) == DR_OK);
        epochs += n;
        free(eps);
    }
    CHECK(good);
    CHECK(epochs == N_SEEDS * EPOCHS_PER_RUN);
    CHECK(results_check_integrity(db) == DR_OK);
    results_runs_free(runs, nr);
    results_experiments_free(ex, ne);
    results_close(db);
}

static struct results_experiment paused_experiment(void)
{
    struct results_experiment e;
    memset(&e, 0, sizeof e);
    e.name = "paused";
    e.config_hash = "paused-hash";
    e.config_text = "paused";
    e.dawnrun_version = "test";
    e.engine = "cpu";
    e.target_accuracy = NAN;
    return e;
}

/* The stopped worker: claims seed 0 with a short lease, records epoch 1, stops itself;
 * once continued, every write must come back DR_ERR_FENCED. Exit 0 when they all do. */
static int paused_worker(const char *path)
{
    struct results *db = NULL;
    struct results_experiment e = paused_experiment();
    int64_t exp_id = 0;
    uint64_t seed = 0;
    struct results_lease l;
    struct results_claim req;
    if (results_open(&db, path) != DR_OK) return 10;
    if (results_experiment_register(db, &exp_id, NULL, &e) != DR_OK) return 11;
    if (results_runs_ensure(db, NULL, exp_id, &seed, 1, 3) != DR_OK) return 12;
    results_claim_init(&req);
    req.lease_seconds = 0.2;
    if (results_claim_run(db, &l, &req) != DR_OK || l.attempt != 1) return 13;
    struct results_epoch ep = {.epoch = 1, .test_acc = 0.1, .lr = NAN, .train_loss = NAN,
                               .train_acc = NAN, .test_loss = NAN, .train_time = NAN,
                               .test_time = NAN, .total_time = NAN};
    if (results_epoch_record(db, &l, &ep) != DR_OK) return 14;
    raise(SIGSTOP);
    /* continued: the parent has reclaimed the run */
    ep.epoch = 2;
    if (results_heartbeat(db, &l) != DR_ERR_FENCED) return 20;
    if (results_epoch_record(db, &l, &ep) != DR_ERR_FENCED) return 21;
    ep.epoch = 1;
    ep.test_acc = 0.99;
    if (results_epoch_record(db, &l, &ep) != DR_ERR_FENCED) return 22;
    struct results_outcome o = {.status = RUN_DONE, .final_test_acc = 0.99, .train_time = 1,
                                .total_time = 1, .target_time = NAN, .target_epoch = -1};
    if (results_run_finish(db, &l, &o) != DR_ERR_FENCED) return 23;
    results_close(db);
    return 0;
}

static void test_paused_worker(void)
{
    const char *path = support_path("paused.db");
    int status = -1;
    fflush(NULL);
    pid_t child = fork();
    if (child == 0) _exit(paused_worker(path));
    CHECK(child > 0);
    if (child <= 0) return;
    waitpid(child, &status, WUNTRACED);
    CHECK(WIFSTOPPED(status));
    if (!WIFSTOPPED(status)) return;
    struct timespec ts = {0, 400 * 1000 * 1000};   /* twice the worker's lease */
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {}

    /* another worker on another host reclaims the expired run and finishes it */
    struct results *db = NULL;
    struct results_lease l;
    struct results_claim req;
    struct results_run r;
    int found = 0;
    CHECK(results_open(&db, path) == DR_OK);
    results_claim_init(&req);
    snprintf(req.host, sizeof req.host, "elsewhere");
    CHECK(results_claim_run(db, &l, &req) == DR_OK);
    CHECK(l.run_id > 0 && l.seed == 0 && l.attempt == 2);
    struct results_epoch ep = {.epoch = 1, .test_acc = 0.5, .lr = NAN, .train_loss = NAN,
                               .train_acc = NAN, .test_loss = NAN, .train_time = NAN,
                               .test_time = NAN, .total_time = NAN};
    CHECK(results_epoch_record(db, &l, &ep) == DR_OK);

    kill(child, SIGCONT);
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        fprintf(stderr, "paused worker ended with status %d\n", status);

    struct results_outcome o = {.status = RUN_DONE, .final_test_acc = 0.5, .train_time = 1,
                                .total_time = 1, .target_time = NAN, .target_epoch = -1};
    CHECK(results_run_finish(db, &l, &o) == DR_OK);
    CHECK(results_run_get(db, &r, &found, l.run_id) == DR_OK && found);
    CHECK(r.status == RUN_DONE && r.attempt == 2 && r.final_test_acc == 0.5);
    results_run_clear(&r);
    struct results_epoch *eps = NULL;
    int n = 0;
    CHECK(results_epochs_list(db, &eps, &n, l.run_id) == DR_OK && n == 1);
    if (n == 1) CHECK(eps[0].test_acc == 0.5 && eps[0].attempt == 2);
    free(eps);
    CHECK(results_check_integrity(db) == DR_OK);
    results_close(db);
}

int main(void)
{
    if (support_tmpdir_make("/tmp/dawnrun-test-concurrency-XXXXXX") != 0) return 1;
    for (int r = 0; r < N_ROUNDS; r++) round_once(r);
    test_paused_worker();
    return support_tmpdir_finish(check_finish("test_results_concurrency"));
}

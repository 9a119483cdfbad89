/* Fuzz target: opening, reading and merging a results database made of mutated bytes.
 * A small valid database (two experiments, done, failed and pending runs, epochs) is
 * made at start-up through the results API. Input byte [0]: bit 0 picks how the rest
 * becomes the file (0: as it is; 1: as patches on the valid database, each a 4-byte
 * offset, a length byte and the bytes), bit 1 also opens it read-write (which migrates
 * an older schema) first. Then it is opened read-only and every experiment, run and
 * epoch listed, and it is merged into a fresh database, which must then pass its
 * integrity check. Refusals must be clean errors, never a crash. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/status.h"
#include "results/results.h"
#include "fuzz.h"

static char in_path[600], out_path[600];
static unsigned char *valid;
static size_t valid_n;

static void remove_db(const char *path)
{
    static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
    char p[700];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof(p), "%s%s", path, suffix[i]);
        unlink(p);
    }
}

#define MUST(call)                                                                        \
    do {                                                                                  \
        if ((call) != DR_OK) {                                                            \
            fprintf(stderr, "fuzz_results: set-up failed: %s\n", #call);                  \
            abort();                                                                      \
        }                                                                                 \
    } while (0)

/* The valid database: experiment 1 with a done run (two epochs), a failed run and a
 * pending one; experiment 2 with one pending run. */
static void make_valid(const char *path)
{
    struct results *db = NULL;
    MUST(results_open(&db, path));
    struct results_experiment e = {0};
    e.name = "fuzz-a";
    e.config_hash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    e.config_text = "name = \"fuzz-a\";\n";
    e.dawnrun_version = "0.1.0";
    e.engine = "cpu";
    e.target_accuracy = 0.94;
    e.notes = "a note";
    int64_t id1 = 0, id2 = 0;
    MUST(results_experiment_register(db, &id1, NULL, &e));
    e.name = "fuzz-b";
    e.config_hash = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";
    e.config_text = "name = \"fuzz-b\";\n";
    e.target_accuracy = NAN;
    e.notes = NULL;
    MUST(results_experiment_register(db, &id2, NULL, &e));
    uint64_t seeds[3] = {0, 1, 2};
    MUST(results_runs_ensure(db, NULL, id1, seeds, 3, 3));
    MUST(results_runs_ensure(db, NULL, id2, seeds, 1, 3));

    struct results_claim req;
    struct results_lease lease;
    results_claim_init(&req);
    req.experiment_ids = &id1;
    req.n_experiments = 1;
    MUST(results_claim_run(db, &lease, &req));
    for (int ep = 1; ep <= 2; ep++) {
        struct results_epoch r = {ep, 0.1 * ep, 2.0 / ep, 0.3 * ep, 2.1 / ep, 0.35 * ep,
                                  1.5, 0.25, 1.75 * ep, 0, 0};
        MUST(results_epoch_record(db, &lease, &r));
    }
    struct results_outcome done = {RUN_DONE, 0.7, 3.0, 3.5, 2.5, 2, NULL};
    MUST(results_run_finish(db, &lease, &done));
    MUST(results_claim_run(db, &lease, &req));
    struct results_outcome failed = {RUN_FAILED, NAN, NAN, NAN, NAN, -1, "out of memory"};
    MUST(results_run_finish(db, &lease, &failed));
    results_close(db);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = fuzz_dir("results");
    char valid_path[600];
    fuzz_path(valid_path, sizeof(valid_path), dir, "valid.db");
    fuzz_path(in_path, sizeof(in_path), dir, "in.db");
    fuzz_path(out_path, sizeof(out_path), dir, "out.db");
    make_valid(valid_path);
    valid = fuzz_read(valid_path, &valid_n);
    if (!valid || valid_n == 0) abort();
    remove_db(valid_path);
    return 0;
}

/* Lists everything in db the way report, runs and show do. */
static void read_all(struct results *db)
{
    struct results_experiment *ex = NULL;
    int n_ex = 0;
    if (results_experiments_list(db, &ex, &n_ex) != DR_OK) return;
    for (int i = 0; i < n_ex && i < 16; i++) {
        struct results_run *runs = NULL;
        int n_runs = 0;
        if (results_runs_list(db, &runs, &n_runs, ex[i].id) == DR_OK) {
            for (int k = 0; k < n_runs && k < 16; k++) {
                struct results_epoch *eps = NULL;
                int n_eps = 0;
                if (results_epochs_list(db, &eps, &n_eps, runs[k].id) == DR_OK) free(eps);
                FUZZ_ASSERT(results_status_name(runs[k].status) != NULL);
            }
            results_runs_free(runs, n_runs);
        }
        double *v = NULL;
        int n_v = 0;
        if (results_done_values(db, &v, &n_v, ex[i].id, RESULTS_FINAL_ACC) == DR_OK) free(v);
        if (results_done_values(db, &v, &n_v, ex[i].id, RESULTS_TARGET_TIME) == DR_OK) free(v);
        struct results_experiment *found = NULL;
        int n_found = 0;
        if (ex[i].config_hash &&
            results_experiments_find(db, &found, &n_found, ex[i].config_hash) == DR_OK)
            results_experiments_free(found, n_found);
    }
    results_experiments_free(ex, n_ex);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    remove_db(in_path);
    remove_db(out_path);
    if ((data[0] & 1) == 0) {
        fuzz_write(in_path, rest, n);
    } else {
        unsigned char *buf = malloc(valid_n);
        if (!buf) abort();
        memcpy(buf, valid, valid_n);
        while (n >= 5) {
            uint32_t off;
            memcpy(&off, rest, 4);
            size_t len = rest[4] % 32 + 1;
            rest += 5;
            n -= 5;
            if (len > n) len = n;
            off %= (uint32_t)valid_n;
            if (len > valid_n - off) len = valid_n - off;
            memcpy(buf + off, rest, len);
            rest += len;
            n -= len;
        }
        fuzz_write(in_path, buf, valid_n);
        free(buf);
    }

    struct results *db = NULL;
    if (data[0] & 2) {
        if (results_open(&db, in_path) == DR_OK) {
            read_all(db);
            results_close(db);
        }
        db = NULL;
    }
    if (results_open_readonly(&db, in_path) == DR_OK) {
        results_check_integrity(db);
        read_all(db);
        results_close(db);
    }
    db = NULL;
    struct results *out = NULL;
    if (results_open(&out, out_path) != DR_OK) abort();
    struct results_merge_stats st;
    memset(&st, 0, sizeof(st));
    int rc = results_merge(out, &st, in_path);
    if (rc == DR_OK) FUZZ_ASSERT(results_check_integrity(out) == DR_OK);
    read_all(out);
    results_close(out);
    return 0;
}

/* The scheduler of `dawnrun run`: a batch's experiments registered in the results store
 * (one run per seed), and one worker's loop over the queue: claim a run, train it
 * (resuming from its checkpoint), record each epoch as it ends, finish it; until no run
 * of the batch is left or a signal asks to stop. docs/runner.md describes the protocol. */
#ifndef DAWNRUN_RUNNER_SCHEDULER_H
#define DAWNRUN_RUNNER_SCHEDULER_H

#include <stdint.h>

#include "runner/cli/cli.h"
#include "kernels/backend.h"
#include "engine/core/data.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "results/results.h"

#define SCHED_LABEL_MAX 512

/* One experiment of the batch, loaded, and (after scheduler_register) registered. */
struct sched_experiment {
    struct experiment e;                 /* resolved config (sweep section stripped) */
    struct graph g;
    char name[SCHED_LABEL_MAX];          /* name in the store */
    char identity[65];                   /* config_hash in the store: the experiment's key */
    char config_hash[65];                /* experiment_hash(&e): checkpoints must match it */
    int64_t id;                          /* store id; 0 until registered */
    const struct dataset *train, *test;  /* the data it trains on (not owned) */
    uint64_t *seeds;                     /* its seeds (owned) */
    int n_seeds;
    char **overrides;                    /* the --set flags, then its sweep values, as
                                            applied: recorded at registration (owned) */
    int n_overrides;
};

struct sched_batch {
    struct sched_experiment *x;          /* owned array */
    int n;
};

/* What an experiment is registered with, besides its config. */
struct sched_provenance {
    const char *engine;                  /* "cpu", "cuda" */
    const char *device;                  /* the backend's device_name */
    const char *platform;                /* OS, compiler, ... */
    const char *host;
    const char *git_rev;
};

/* Back-fills the params of experiments registered before they were kept, then registers
 * every experiment of b with its params and overrides (filling x[i].id) and makes sure it
 * has one run per
 * seed (results_runs_ensure, max_attempts as the stall limit: attempts in a row that
 * vanished without progress). An experiment already in
 * the store keeps its record; when its identity is a name (--experiment) and the
 * registered config text differs from this one, a warning says so. An experiment
 * registered with another engine is refused (DR_ERR_USAGE): its runs must be comparable.
 * Returns a dr_status. */
int scheduler_register(struct results *db, struct sched_batch *b,
                       const struct sched_provenance *prov, int max_attempts);

/* How one worker runs the queue. */
struct sched_options {
    const char *db_path;
    const char *checkpoint_dir;          /* created if missing */
    double lease_s;
    int keep_checkpoints;
    const char *device;                  /* recorded with each claim ("cpu", "cuda:1") */
    const char *prefix;                  /* put before every line printed ("" = none) */
    int progress;                        /* 1: a progress bar on stdout (a terminal) */
};

/* The engine a worker trains on. The backend is made with cli_backend(&common, the
 * experiment's train.precision) when the first run needs it, and made again when a run
 * of another precision comes (a sweep over train.precision). */
struct sched_engine {
    struct cli_common common;            /* engine ("cpu" | "cuda", not "auto"), device, threads */
    struct backend be;                   /* ops NULL: none yet */
    int precision;                       /* what be was made for */
};

/* What a worker did. */
struct sched_tally {
    int done, diverged, failed, interrupted, dropped;   /* runs by how they ended */
    int last_error;                      /* the dr_status of the last failed run */
};

/* Opens the results store at o->db_path (so it must be called after any fork), then
 * claims runs of b's experiments and seeds one at a time and runs each on eng until none
 * is claimable. Each run's epoch table is printed as `dawnrun train` prints it; a run
 * that fails (engine error) is recorded as failed and the worker moves on, unless
 * three runs in a row failed. Returns DR_OK; DR_ERR_INTERRUPTED when SIGINT/SIGTERM
 * stopped it (the run in progress is marked interrupted, its checkpoint kept);
 * DR_ERR_DB when the store failed; the last run's error after three failed runs in a
 * row (the worker stops: an engine that fails every run would fail the whole queue). */
int scheduler_work(struct sched_tally *tally, const struct sched_batch *b,
                   struct sched_engine *eng, const struct sched_options *o);

/* The exit code of a worker that returned rc with tally: 130/143 when a signal stopped
 * it, the code of rc for a store or device failure, 1 when a run failed, else 0. */
int scheduler_exit_code(int rc, const struct sched_tally *tally);


/* What the claims of b's workers would do with its runs now (results_claim_census over
 * b's experiments and seeds, failed runs not retried); with requeue_failed, b's failed
 * runs are first made pending again with a fresh budget (--retry-failed) and
 * *requeued (may be NULL) gets how many. */
int scheduler_census(struct results *db, struct results_census *out, int *requeued,
                     const struct sched_batch *b, int requeue_failed);

/* Deletes the checkpoint files of b's finished (done or diverged) runs in checkpoint_dir,
 * or, with keep_checkpoints, only the temporary files killed writers left beside them:
 * what a process killed after recording a run's end did not get to delete. Returns a
 * dr_status of the store; a file that cannot be deleted is a warning. */
int scheduler_tidy(struct results *db, const struct sched_batch *b, const char *checkpoint_dir,
                   int keep_checkpoints);

/* The checkpoint file of (experiment, seed) in dir: DIR/IDENTITY[0:16]-seedN.ckpt. */
void scheduler_checkpoint_path(char *buf, size_t n, const char *dir,
                               const struct sched_experiment *x, uint64_t seed);

/* Frees what the batch owns (configs, graphs, seed lists, the array). */
void sched_batch_free(struct sched_batch *b);

#endif

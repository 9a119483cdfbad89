/* `dawnrun run A.cfg B.cfg --until-decided`: a batch that grows in rounds of seeds, every
 * experiment alike, until the comparison of each member with the first (the baseline) is
 * decided by an anytime-valid confidence sequence (results/sequential.h), or the cap of
 * seeds is reached. Every look and the decision are recorded with the batch; several
 * processes running the same command share the batch, its runs and its looks.
 * docs/runner.md describes the loop. */
#ifndef DAWNRUN_RUNNER_DECIDE_H
#define DAWNRUN_RUNNER_DECIDE_H

#include <stdint.h>

#include "scheduler.h"

#define DECIDE_DEFAULT_ALPHA 0.05
#define DECIDE_DEFAULT_DELTA 0.001   /* 0.1 pp */
#define DECIDE_DEFAULT_ROUND 5
#define DECIDE_DEFAULT_MAX_SEEDS 50
#define DECIDE_POLL_S 2              /* how often a waiting process looks at the store */
#define DECIDE_METRIC "final_test_acc"

/* The design of a batch. */
struct decide_design {
    double alpha;                    /* error level of the whole batch, in (0, 1) */
    double delta;                    /* equivalence margin, as an accuracy (0.001 = 0.1 pp) */
    int round;                       /* seeds added to every experiment per round, >= 1 */
    int max_seeds;                   /* the cap on each experiment's seeds, >= round */
};

/* What decide_run needs besides the batch. */
struct decide_spec {
    const char *db_path;
    struct decide_design design;
    int64_t sweep_id;                /* the sweep this command recorded; 0: none */
    const char *command;             /* the command line, shell-quoted */
    const char *host;
    int max_attempts;                /* for the runs it adds (results_runs_ensure) */
};

/* Works the queue of b's experiments and seeds once (the scheduler's workers, in this
 * process or forked): returns the exit code of a plain batch. */
typedef int (*decide_work_fn)(void *ctx);

/* The batch key: sha256 hex of the design, the method, the metric and the members'
 * identities in order. DR_OK or DR_ERR_NOMEM. */
int decide_key(char key[65], const struct sched_batch *b, const struct decide_design *d);

/* Gives every experiment of b the seeds of the first round, 0..round-1 (replacing the
 * config's seeds). DR_ERR_NOMEM. */
int decide_first_seeds(struct sched_batch *b, const struct decide_design *d);

/* Whether b's batch (by key) has already ended in the database at db_path: *ended = 1
 * after printing its decision. A missing database or batch: *ended = 0. Opens the
 * database read-only and writes nothing. */
int decide_ended(int *ended, const char *db_path, const struct sched_batch *b,
                 const struct decide_design *d);

/* The loop, on b registered (ids set, the first round's runs ensured): finds or records
 * the batch, then per look l = 1, 2, ... at n = min(l * round, max_seeds) seeds gives
 * every experiment runs for seeds 0..m-1 where m = n + its failed or diverged runs among
 * them, works the queue with work(ctx), waits for runs other processes hold, and looks
 * at the n lowest-seed done runs of each: one line per comparison on stdout and the look
 * in the store. Stops when every comparison is decided or at max_seeds, recording the
 * outcome. *exit_code: 0 decided or capped; a signal's code (the batch resumes when the
 * command is run again); the work's code when it failed otherwise. Returns a dr_status
 * (DR_ERR_DB, DR_ERR_DATA when an experiment cannot get n done runs within
 * 2 * max_seeds seeds). */
int decide_run(int *exit_code, struct sched_batch *b, const struct decide_spec *s,
               decide_work_fn work, void *ctx);

#endif

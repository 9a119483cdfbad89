/* The results store: experiments, their runs (one per seed) and each run's epochs, kept
 * in one SQLite file that is also the work queue of a batch. This module is the only
 * code in dawnrun that speaks SQL; the schema is schemas/results.sql, the protocol
 * (claims, leases, fencing, merge) is described in docs/results.md.
 *
 * Rules for callers:
 *   - A `struct results` is one connection owned by one process. Never carry it across
 *     fork(): call results_open() in the child. (A handle used in another process than
 *     the one that opened it fails with DR_ERR_INTERNAL and touches nothing.)
 *   - Every function returns a dr_status; errors are reported to stderr with the
 *     database file's name. Writes are transactions: a failure changes nothing.
 *     DR_ERR_FENCED (the run was taken away from this worker) is an expected outcome and
 *     is returned without a message.
 *   - Unknown numbers (not measured, never reached, NaN) are NaN in these structs and
 *     NULL in the database. Timestamps are Unix seconds read from the database's clock.
 *   - Seeds are uint64_t; values of 2^63 and above are stored as negative integers and
 *     come back unchanged. */
#ifndef DAWNRUN_RESULTS_H
#define DAWNRUN_RESULTS_H

#include <stdint.h>

#include "../base/status.h"

#define RESULTS_SCHEMA_VERSION 5    /* schemas/results.sql; see docs/results.md, Versioning */
#define RESULTS_DEFAULT_BUSY_MS 15000     /* wait this long for another writer's lock */
#define RESULTS_DEFAULT_LEASE_S 60.0      /* a claim is stale after this without heartbeat */
#define RESULTS_DEFAULT_MAX_ATTEMPTS 3

struct results;   /* opaque: one connection */

enum results_run_status {
    RUN_PENDING,
    RUN_RUNNING,
    RUN_DONE,
    RUN_FAILED,
    RUN_DIVERGED,
    RUN_INTERRUPTED
};

/* "pending", "running", ... (the strings stored in runs.status). Never NULL. */
const char *results_status_name(enum results_run_status s);
/* Parses a status name; returns DR_OK or DR_ERR_USAGE for an unknown name. */
int results_status_parse(enum results_run_status *out, const char *name);

/* ---- opening --------------------------------------------------------------------- */

/* Opens (creating if missing) the results database at `path` for reading and writing:
 * WAL journal, busy timeout RESULTS_DEFAULT_BUSY_MS, foreign keys on. A brand-new file
 * gets the schema in one BEGIN IMMEDIATE transaction guarded by user_version, so many
 * processes may open the same new file at once. An older schema is migrated forward in
 * the same way: one transaction, the version re-read under the write lock, so exactly
 * one of several concurrent openers migrates and a failed migration changes nothing.
 * Fails with DR_ERR_DB (message naming the file, nothing deleted or changed) for a
 * non-SQLite or corrupt file, an SQLite file that is not a dawnrun results database,
 * a schema newer than RESULTS_SCHEMA_VERSION, or a lock held past the timeout. */
int results_open(struct results **out, const char *path);

/* Opens an existing results database read-only (reports, export, the input of a merge).
 * Never creates, migrates or writes. Any schema version from 1 to RESULTS_SCHEMA_VERSION
 * is read: what an older file lacks reads as unknown (e.g. notes = NULL). */
int results_open_readonly(struct results **out, const char *path);

/* Closes the connection and frees the handle; NULL is a no-op. In a process other than
 * the one that opened it (after fork) it only frees memory and leaves SQLite's state
 * alone, so the parent's connection is not disturbed. */
void results_close(struct results *db);

/* How long a write waits for another process's lock before failing (milliseconds). */
int results_set_busy_timeout(struct results *db, int ms);

/* The path given to results_open. */
const char *results_path(const struct results *db);

/* Runs PRAGMA integrity_check and foreign_key_check; DR_OK when both are clean, else
 * DR_ERR_DB with the first problem reported. */
int results_check_integrity(struct results *db);

/* ---- experiments ----------------------------------------------------------------- */

struct results_experiment {
    int64_t id;                      /* output only */
    const char *name;
    const char *config_hash;         /* identity: equal hash = same experiment */
    const char *config_text;         /* the resolved config */
    const char *dawnrun_version;
    const char *git_rev;             /* may be NULL */
    const char *engine;              /* "cpu", "cuda" */
    const char *device;              /* may be NULL */
    const char *platform;            /* driver / library versions, may be NULL */
    const char *host;                /* may be NULL */
    double target_accuracy;          /* NaN = none */
    double created_at;               /* output only */
    const char *notes;               /* the user's own words about it, may be NULL */
};

/* Registers e (id and created_at ignored; notes kept when not NULL) and returns its id;
 * when an experiment with the same config_hash exists, returns that one's id and changes
 * nothing (created = 0).
 * The same hash with a different config_text is an error (DR_ERR_DB). `created` may be
 * NULL. Required fields: name, config_hash, config_text, dawnrun_version, engine. */
int results_experiment_register(struct results *db, int64_t *id, int *created,
                                const struct results_experiment *e);

/* All experiments, by id. Free with results_experiments_free. */
int results_experiments_list(struct results *db, struct results_experiment **out, int *n);

/* Experiments matching `key`: a decimal id, an exact name, or a config_hash prefix of at
 * least 6 characters; by id. n = 0 when nothing matches. */
int results_experiments_find(struct results *db, struct results_experiment **out, int *n,
                             const char *key);

/* One experiment by id; *found = 0 (and *out zeroed) when there is none. Free with
 * results_experiment_clear. */
int results_experiment_get(struct results *db, struct results_experiment *out, int *found,
                           int64_t id);

/* Sets (or, with NULL or "", clears) the notes of experiment `id`, in one transaction.
 * No such experiment: DR_ERR_USAGE, reported naming the database. */
int results_experiment_set_notes(struct results *db, int64_t id, const char *notes);

void results_experiment_clear(struct results_experiment *e);
void results_experiments_free(struct results_experiment *arr, int n);

/* ---- params and overrides (results_params.c) --------------------------------------- */

/* One leaf setting of an experiment's resolved config, as the params table holds it
 * (the runner flattens config_text; this module only stores and reads). */
struct results_param {
    const char *key;                 /* "train.lr_schedule.values" */
    const char *value;               /* its text: 0.2, true, reflect, [0, 8, 30] */
    const char *type;                /* "int", "float", "bool", "string", "list" */
    double num;                      /* int, float and bool (0/1) as a number; NaN: none */
};

/* What an experiment is registered with besides its row: its params and the command-line
 * overrides that produced it ("key.path=value", the --set flags, then a sweep member's
 * values), in order. Either list may be empty. */
struct results_experiment_extras {
    const struct results_param *params;
    int n_params;
    const char *const *overrides;
    int n_overrides;
};

/* results_experiment_register that also writes x's params and overrides, in the same
 * transaction, when (and only when) this call creates the experiment: a re-registration
 * of an existing hash changes nothing. x may be NULL (none). */
int results_experiment_register_with(struct results *db, int64_t *id, int *created,
                                     const struct results_experiment *e,
                                     const struct results_experiment_extras *x);

/* The params of experiment `id`, in their position order (the resolved config's). n = 0
 * when it has none, or the file predates them (schema version < 4). Free with results_params_free. */
int results_params_get(struct results *db, struct results_param **out, int *n, int64_t id);
void results_params_free(struct results_param *p, int n);

/* The overrides of experiment `id`, by position; n = 0 when none or unknown. Free with
 * results_overrides_free. */
int results_overrides_get(struct results *db, char ***out, int *n, int64_t id);
void results_overrides_free(char **o, int n);

/* The ids of the experiments that have no params yet (registered before schema version
 * 4), by id. *ids is malloc'd (NULL when n = 0). */
int results_experiments_without_params(struct results *db, int64_t **ids, int *n);

/* Writes the params of experiment `id` in one transaction, unless it already has some
 * (another process filled them first): then nothing changes. No such experiment:
 * DR_ERR_DB. *written (may be NULL) = 1 when this call wrote them. */
int results_params_fill(struct results *db, int *written, int64_t id,
                        const struct results_param *p, int n);

/* ---- runs: the queue --------------------------------------------------------------- */

/* Makes sure experiment `experiment_id` has one run per seed, adding missing ones as
 * pending with the given retry limit; existing runs are untouched, so launching the same
 * batch twice adds nothing. `added` (may be NULL) gets the number of new runs. */
int results_runs_ensure(struct results *db, int *added, int64_t experiment_id,
                        const uint64_t *seeds, int n_seeds, int max_attempts);

/* What a worker asks for when it claims. Fill with results_claim_init, then adjust. */
struct results_claim {
    const int64_t *experiment_ids;   /* claim only runs of these experiments ... */
    int n_experiments;               /* ... or of any experiment when 0 */
    const uint64_t *seeds;           /* claim only runs of these seeds ... */
    int n_seeds;                     /* ... or of any seed when 0 */
    int retry_failed;                /* also claim failed runs (their stall count restarts) */
    double lease_seconds;            /* lease length; > 0 */
    char host[256];                  /* lease owner */
    int pid;
    const char *device;              /* may be NULL */
};

/* Defaults: any experiment, any seed, no retry of failed runs, RESULTS_DEFAULT_LEASE_S,
 * this host (gethostname) and pid, no device. */
void results_claim_init(struct results_claim *c);

/* What the claimant holds: every fenced write below takes it. */
struct results_lease {
    int64_t run_id;                  /* 0 when nothing was claimed */
    int64_t experiment_id;
    uint64_t seed;
    int attempt;                     /* fencing token: this claim's attempt number */
    double lease_seconds;
};

/* Claims one run in a BEGIN IMMEDIATE transaction. Candidates, among req's experiments
 * and seeds, ordered by seed then experiment id: pending and interrupted runs; failed
 * runs when req->retry_failed (a caller looping over claims gets a run that fails again
 * back at once: runner code requeues instead, see results_runs_requeue_failed); running
 * runs whose lease has expired on the database's clock, or whose owner is on req->host
 * and whose pid no longer exists (stale).
 * A stale run's vanished attempt is a stall when the run's progress point (latest
 * recorded epoch + runs.checkpoint_epoch) did not grow since that attempt's claim; any
 * growth resets the count. A stale run whose stalls reach max_attempts is marked failed,
 * its error saying where it kept stopping (epoch and step of the last heartbeat, epochs
 * recorded, checkpoint), instead of claimed. The claimed run becomes running, attempt
 * += 1 (the fencing token), owner and lease set, its progress point stored.
 * lease->run_id = 0 when no run is claimable (still DR_OK). */
int results_claim_run(struct results *db, struct results_lease *lease,
                      const struct results_claim *req);

/* What a claim with req would do with the runs of its selection, right now. */
struct results_census {
    int total;
    int finished;                    /* done or diverged */
    int failed;                      /* failed and not retried, or about to be abandoned */
    int running_elsewhere;           /* running under a live owner */
    int to_run;                      /* claimable */
};

/* Classifies req's runs exactly as results_claim_run would, changing nothing. */
int results_claim_census(struct results *db, struct results_census *out,
                         const struct results_claim *req);

/* Makes req's failed runs pending again with their stall count at 0 (a fresh budget),
 * in one statement; *requeued (may be NULL) gets how many. */
int results_runs_requeue_failed(struct results *db, int *requeued,
                                const struct results_claim *req);

/* Extends the lease by lease->lease_seconds from now (database clock). Returns
 * DR_ERR_FENCED, changing nothing, when the run is no longer running under this attempt
 * (it was reclaimed, finished, or merged over): the caller must stop working on it. */
int results_heartbeat(struct results *db, const struct results_lease *lease);

/* results_heartbeat that also records where the attempt is: epoch (1-based, the one in
 * progress) and step within it (runs.at_epoch, at_step; epoch < 1 records nothing). */
int results_heartbeat_at(struct results *db, const struct results_lease *lease, int epoch,
                         int step);

/* One finished epoch of a run. Field for field the engine's epoch record. */
struct results_epoch {
    int epoch;
    double lr;
    double train_loss, train_acc;
    double test_loss, test_acc;
    double train_time, test_time;    /* seconds in this epoch */
    double total_time;               /* cumulative since the run began */
    int attempt;                     /* output only: the attempt that wrote the row */
    double recorded_at;              /* output only */
};

/* Records one epoch in its own transaction and extends the lease. Fenced: returns
 * DR_ERR_FENCED, changing nothing, unless the run is running under lease->attempt. An
 * existing row for the same epoch is replaced only by the same or a newer attempt (a
 * resumed attempt redoing an epoch its predecessor recorded). */
int results_epoch_record(struct results *db, const struct results_lease *lease,
                         const struct results_epoch *ep);

/* A claimed attempt's start point, in one fenced transaction: it resumes after `epoch`
 * epochs (0: from scratch) from a checkpoint holding them, so the epochs numbered above
 * it are discarded and runs.checkpoint_epoch is set to it. When the point is below the
 * one stored at the claim (a checkpoint was lost or unusable), the claim's point is
 * lowered with it, so that redoing lost work counts as progress. */
int results_run_resume_at(struct results *db, const struct results_lease *lease, int epoch);

/* Records that a checkpoint holding `epoch` epochs is durably written
 * (runs.checkpoint_epoch). Fenced as above. */
int results_run_checkpointed(struct results *db, const struct results_lease *lease, int epoch);

/* How an attempt ended. */
struct results_outcome {
    enum results_run_status status;  /* RUN_DONE, RUN_FAILED, RUN_DIVERGED, RUN_INTERRUPTED */
    double final_test_acc;           /* NaN = unknown */
    double train_time, total_time;   /* NaN = unknown */
    double target_time;              /* NaN or < 0 = target never reached */
    int target_epoch;                /* < 0 = never reached */
    const char *error;               /* NULL for done */
};

/* Ends the attempt: sets status, end time, results and error, and drops the lease; a
 * done or diverged run adds, in the same transaction, the binomial_ci rows of its
 * experiment's new finished count. Fenced: DR_ERR_FENCED, changing nothing, unless the
 * run is running under lease->attempt. */
int results_run_finish(struct results *db, const struct results_lease *lease,
                       const struct results_outcome *o);

/* ---- runs and epochs: reading ------------------------------------------------------ */

struct results_run {
    int64_t id, experiment_id;
    uint64_t seed;
    enum results_run_status status;
    int attempt, max_attempts;
    int stalls;                      /* attempts in a row that vanished without progress */
    const char *host;                /* NULL when never claimed */
    int pid;                         /* 0 when never claimed */
    const char *device;
    double lease_expires, heartbeat_at;
    double created_at, started_at, ended_at;
    double final_test_acc, train_time, total_time, target_time;
    int target_epoch;                /* -1 = never reached */
    const char *error;
};

/* The runs of an experiment, by seed. Free with results_runs_free. */
int results_runs_list(struct results *db, struct results_run **out, int *n,
                      int64_t experiment_id);

/* One run by id; *found = 0 when there is none. Free with results_run_clear. */
int results_run_get(struct results *db, struct results_run *out, int *found, int64_t run_id);

void results_run_clear(struct results_run *r);
void results_runs_free(struct results_run *arr, int n);

/* The epochs of a run, by epoch number. Free with free(). */
int results_epochs_list(struct results *db, struct results_epoch **out, int *n,
                        int64_t run_id);

/* Per-run numbers a report summarises. */
enum results_field {
    RESULTS_FINAL_ACC,
    RESULTS_TRAIN_TIME,
    RESULTS_TOTAL_TIME,
    RESULTS_TARGET_TIME,
    RESULTS_TARGET_EPOCH
};

/* The field's values over the experiment's done runs, by seed, leaving out runs where it
 * is unknown (so RESULTS_TARGET_TIME lists only the runs that reached the target).
 * *out is malloc'd (NULL when n = 0); free with free(). */
int results_done_values(struct results *db, double **out, int *n, int64_t experiment_id,
                        enum results_field field);

/* ---- sweeps: the grids `dawnrun run` expanded ---------------------------------------- */

/* One swept key and its values as given ("train.lr", "0.2,0.4"). */
struct results_sweep_axis {
    const char *key;
    const char *vals;
};

/* A recorded sweep: one `dawnrun run` that expanded a grid. */
struct results_sweep {
    int64_t id;                      /* output only */
    double created_at;               /* output only: the database's clock */
    const char *command;             /* the whole command line, shell-quoted */
    const char *host;                /* may be NULL */
    struct results_sweep_axis *axes; /* n_axes, in the order of the grid's dimensions */
    int n_axes;
    int64_t *members;                /* experiment ids, one per combination, grid order */
    int n_members;
};

/* Records s (its id and created_at ignored) with its axes and members in one
 * transaction, and returns the new sweep's id: every call adds a sweep, so a re-launch of
 * the same grid is a new record whose members are the same experiments. Every member must
 * be a registered experiment (DR_ERR_DB otherwise, nothing recorded). */
int results_sweep_record(struct results *db, int64_t *id, const struct results_sweep *s);

/* The recorded sweeps, by id (oldest first), with their axes and members. Free with
 * results_sweeps_free. A file older than schema version 4 has none. */
int results_sweeps_list(struct results *db, struct results_sweep **out, int *n);

/* One sweep by id, or the newest (the highest id) when id is 0; *found = 0 (and *out
 * zeroed) when there is none. Free with results_sweep_clear. */
int results_sweep_get(struct results *db, struct results_sweep *out, int *found, int64_t id);

void results_sweep_clear(struct results_sweep *s);
void results_sweeps_free(struct results_sweep *arr, int n);

/* ---- sequential batches: run until decided (results_sequential.c) -------------------- */

/* The design of a batch run with `dawnrun run --until-decided`, as recorded. */
struct results_seq_design {
    const char *key;                 /* sha256 hex of the design and the members' hashes */
    const char *command;             /* the command line, shell-quoted */
    const char *host;                /* may be NULL */
    int64_t sweep_id;                /* the sweep the members came from; 0: none */
    const char *method;              /* the method, named in full */
    const char *metric;              /* "final_test_acc" */
    double alpha, delta;
    int round_size, max_seeds;
    const int64_t *members;          /* experiment ids; [0] is the baseline */
    int n_members;                   /* >= 2 */
};

/* One look at one compared member (position >= 1). */
struct results_seq_look {
    int look;                        /* 1, 2, ... */
    int position;
    int n;                           /* seeds per experiment used */
    double estimate;                 /* mean difference (member - baseline); NaN: unknown */
    double cs_lo, cs_hi;             /* the confidence sequence; NaN: not yet bounded */
    double log_e;
    char decision[12];               /* "different" | "equivalent" | "undecided" */
    double at;                       /* output only: when it was recorded */
};

/* A member of a recorded batch with its outcome so far. */
struct results_seq_member {
    int position;
    int64_t experiment_id;
    char decision[12];               /* "" for the baseline */
    int has_look;                    /* 1: last holds its latest recorded look */
    struct results_seq_look last;
};

/* A recorded sequential batch. */
struct results_seq_batch {
    int64_t id;
    double created_at;
    char *key, *command, *host, *method, *metric;
    int64_t sweep_id;                /* 0: none */
    double alpha, delta;
    int round_size, max_seeds;
    char status[12];                 /* "running" | "decided" | "cap" */
    int seeds_used;                  /* 0: no look yet */
    double decided_at;               /* NaN while running */
    int looks;                       /* the highest look recorded (0: none) */
    struct results_seq_member *members;  /* by position */
    int n_members;
};

/* Finds the batch with d->key, or records it (status running) with its members (the
 * baseline's decision NULL, the others' undecided), in one transaction: every process of
 * one command gets the same row. *id gets its id. A member that is not a registered
 * experiment: DR_ERR_DB, nothing recorded. */
int results_seq_batch_open(struct results *db, int64_t *id, const struct results_seq_design *d);

/* Records the looks (INSERT OR IGNORE: a look already recorded, by this process or
 * another, is kept as it is), sets the decision of each member that was undecided and is
 * decided by its look, and seeds_used (never lowered) while the batch is running, in one
 * transaction. */
int results_seq_looks_record(struct results *db, int64_t batch_id,
                             const struct results_seq_look *looks, int n_looks, int seeds_used);

/* Ends a running batch: status "decided" or "cap", seeds_used, decided_at = now. A batch
 * that has already ended is left as it is. */
int results_seq_batch_end(struct results *db, int64_t batch_id, const char *status,
                          int seeds_used);

/* The batch with this key; *found = 0 (and *out zeroed) when none (or the file predates
 * schema version 5). Free with results_seq_batch_clear. */
int results_seq_batch_find(struct results *db, struct results_seq_batch *out, int *found,
                           const char *key);

/* The batches (by id) with at least one member among the n ids; every batch when n = 0.
 * Free with results_seq_batches_free. */
int results_seq_batches_of(struct results *db, struct results_seq_batch **out, int *n_out,
                           const int64_t *ids, int n);

/* The looks of one batch, by look then position. *out malloc'd (NULL when none). */
int results_seq_looks_list(struct results *db, struct results_seq_look **out, int *n,
                           int64_t batch_id);

void results_seq_batch_clear(struct results_seq_batch *b);
void results_seq_batches_free(struct results_seq_batch *arr, int n);

/* ---- merging ----------------------------------------------------------------------- */

struct results_merge_stats {
    int experiments_added;
    int runs_added;
    int runs_replaced;               /* the input's run was better than ours */
    int runs_kept;                   /* ours was at least as good */
    int epochs_copied;
};

/* Merges the results database at in_path (opened read-only, left unchanged) into db, in
 * one transaction: experiments matched by config_hash; runs by (experiment, seed), where
 * the better run wins, its epochs coming with it: done > diverged > running (a live
 * worker on db) > failed > interrupted > pending; between two of the same rank the one
 * that ended first; on a full tie ours. A run that is running in the input arrives as
 * interrupted: its lease belongs to the input file. The attempt counter never decreases.
 * Notes come with an added experiment; an existing one without notes takes the input's.
 * Params and overrides come with an added experiment (and fill an existing one that has
 * none; it keeps its own otherwise). Recorded sweeps come along, their members mapped to
 * our experiments; a sweep already here (same time, command and host) is not copied
 * again. Sequential batches come along likewise (matched by key), with their members
 * and looks. Merging the same input twice changes nothing the second time. stats may be NULL. */
int results_merge(struct results *db, struct results_merge_stats *stats, const char *in_path);

#endif

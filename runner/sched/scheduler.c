/* One worker of `dawnrun run` (see scheduler.h): registration of a batch, then the
 * claim -> train -> record loop with heartbeats, checkpoints, resume and fencing. */
#include "scheduler.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "runner/cli/cli.h"
#include "engine/core/checkpoint.h"
#include "base/crashpoint.h"
#include "base/sha256.h"
#include "base/status.h"
#include "engine/core/train.h"
#include "runner/cli/first_use.h"
#include "runner/cli/progress.h"
#include "runner/report/report_internal.h"

#define SCHED_FAILS_IN_A_ROW 3

/* ---- output ---------------------------------------------------------------------------- */

/* Prints to stdout with o->prefix before every line, in one write, so that the lines of
 * several workers sharing a terminal do not mix within a line. */
static void say(const struct sched_options *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void say(const struct sched_options *o, const char *fmt, ...)
{
    char stack[2048], *text = stack, *out = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(stack, sizeof(stack), fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof(stack)) {
        text = malloc((size_t)n + 1);
        if (!text) return;
        va_start(ap, fmt);
        vsnprintf(text, (size_t)n + 1, fmt, ap);
        va_end(ap);
    }
    const char *prefix = o->prefix ? o->prefix : "";
    size_t plen = strlen(prefix), lines = 1;
    for (const char *p = text; *p; p++) lines += *p == '\n';
    out = malloc((size_t)n + lines * plen + 1);
    if (out) {
        char *w = out;
        int at_start = 1;
        for (const char *p = text; *p; p++) {
            if (at_start && plen) {
                memcpy(w, prefix, plen);
                w += plen;
            }
            *w++ = *p;
            at_start = *p == '\n';
        }
        progress_clear();
        fwrite(out, 1, (size_t)(w - out), stdout);
        fflush(stdout);
    }
    free(out);
    if (text != stack) free(text);
}

/* The table printer's output for one row (or the header when r is NULL), as a string. */
static void say_table(const struct sched_options *o, const struct epoch_record *r)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return;
    if (r) table_print_row(f, r);
    else table_print_header(f);
    fclose(f);
    say(o, "%s", buf);
    free(buf);
}

static double mono_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- registration ---------------------------------------------------------------------- */

/* The experiment already stored under x's identity, if any: *id = 0 when none. */
static int find_registered(struct results *db, int64_t *id, char **text, char **engine,
                           const struct sched_experiment *x)
{
    int rc = DR_OK, n = 0;
    struct results_experiment *found = NULL;
    *id = 0;
    *text = *engine = NULL;
    TRY(results_experiments_find(db, &found, &n, x->identity));
    for (int i = 0; i < n; i++) {
        if (strcmp(found[i].config_hash, x->identity) != 0) continue;
        *id = found[i].id;
        *text = strdup(found[i].config_text ? found[i].config_text : "");
        *engine = strdup(found[i].engine ? found[i].engine : "");
        CHECK_ALLOC(*text, "a config text");
        CHECK_ALLOC(*engine, "an engine name");
        break;
    }
cleanup:
    results_experiments_free(found, n);
    return rc;
}

/* Registers r, x's experiment, with its params (its resolved config flattened) and the
 * overrides that produced it, in one transaction. */
static int register_with_params(struct results *db, int64_t *id, const struct results_experiment *r,
                                const struct sched_experiment *x)
{
    int rc = DR_OK;
    struct param_list p = {0};
    struct results_param *rows = NULL;
    TRY(experiment_params_from_text(&p, x->e.resolved));
    TRY(report_params_rows(&rows, &p));
    struct results_experiment_extras extras = {rows, p.n, (const char *const *)x->overrides,
                                               x->n_overrides};
    TRY(results_experiment_register_with(db, id, NULL, r, &extras));
cleanup:
    free(rows);
    param_list_free(&p);
    return rc;
}

int scheduler_register(struct results *db, struct sched_batch *b,
                       const struct sched_provenance *prov, int max_attempts)
{
    int rc = DR_OK;
    char *text = NULL, *engine = NULL;
    TRY(report_params_backfill(db, NULL));   /* experiments registered before params */
    for (int i = 0; i < b->n; i++) {
        struct sched_experiment *x = &b->x[i];
        int64_t id = 0;
        TRY(find_registered(db, &id, &text, &engine, x));
        if (id == 0) {
            struct results_experiment r = {
                .name = x->name,
                .config_hash = x->identity,
                .config_text = x->e.resolved,
                .dawnrun_version = DAWNRUN_VERSION,
                .git_rev = prov->git_rev,
                .engine = prov->engine,
                .device = prov->device,
                .platform = prov->platform,
                .host = prov->host,
                .target_accuracy = x->e.target_accuracy,
            };
            TRY(register_with_params(db, &id, &r, x));
            TRY(find_registered(db, &id, &text, &engine, x)); /* a concurrent registration wins */
        }
        if (strcmp(engine, prov->engine) != 0) {
            dr_eprintf("dawnrun: experiment '%s' (%.16s) is registered for the %s engine; its runs "
                       "must not mix engines: run it with --engine %s, or give this batch its own "
                       "--experiment NAME\n",
                       x->name, x->identity, engine, engine);
            rc = DR_ERR_USAGE;
            goto cleanup;
        }
        if (strcmp(text, x->e.resolved) != 0) {
            char registered[65];
            sha256_hex(registered, text, strlen(text));
            dr_eprintf("dawnrun: warning: experiment '%s' was registered with another config "
                       "(hash %.16s); its new runs train on this one (hash %.16s), and the store "
                       "keeps the first config's text\n",
                       x->name, registered, x->config_hash);
        }
        x->id = id;
        TRY(results_runs_ensure(db, NULL, id, x->seeds, x->n_seeds, max_attempts));
        free(text);
        free(engine);
        text = engine = NULL;
    }
cleanup:
    free(text);
    free(engine);
    return rc;
}

void sched_batch_free(struct sched_batch *b)
{
    for (int i = 0; b->x && i < b->n; i++) {
        graph_free(&b->x[i].g);
        experiment_free(&b->x[i].e);
        free(b->x[i].seeds);
        for (int k = 0; k < b->x[i].n_overrides; k++) free(b->x[i].overrides[k]);
        free(b->x[i].overrides);
    }
    free(b->x);
    b->x = NULL;
    b->n = 0;
}

void scheduler_checkpoint_path(char *buf, size_t n, const char *dir,
                               const struct sched_experiment *x, uint64_t seed)
{
    snprintf(buf, n, "%s/%.16s-seed%llu.ckpt", dir, x->identity, (unsigned long long)seed);
}

int scheduler_tidy(struct results *db, const struct sched_batch *b, const char *checkpoint_dir,
                   int keep_checkpoints)
{
    int rc = DR_OK;
    char path[EXPERIMENT_PATH_MAX + 128];
    for (int i = 0; i < b->n; i++) {
        struct results_run *runs = NULL;
        int n = 0;
        TRY(results_runs_list(db, &runs, &n, b->x[i].id));
        for (int r = 0; r < n; r++) {
            if (runs[r].status != RUN_DONE && runs[r].status != RUN_DIVERGED) continue;
            scheduler_checkpoint_path(path, sizeof(path), checkpoint_dir, &b->x[i], runs[r].seed);
            if ((keep_checkpoints ? checkpoint_remove_leftovers(path) : checkpoint_remove(path)) !=
                DR_OK)
                dr_eprintf("dawnrun: warning: the checkpoint files above were left in place\n");
        }
        results_runs_free(runs, n);
    }
cleanup:
    return rc;
}

/* ---- one run --------------------------------------------------------------------------- */

/* The run a worker holds, as the training hooks see it. */
struct run_ctx {
    const struct sched_options *o;
    struct results *db;
    struct results_lease lease;
    const char *ckpt;    /* the run's checkpoint file */
    double beat_every, last_beat;
    int fenced;          /* a write was refused: the run is not ours any more */
    int store_rc;        /* the store failed (or refused a write) in a hook: drop the run */
    int beat_warned;
    struct first_use_epochs first;   /* this attempt's first epochs, for its first-use line */
};

static void run_on_step(void *user, int epoch, int step, int steps)
{
    struct run_ctx *c = user;
    if (c->o->progress) progress_draw(epoch, step, steps);
    /* every few seconds, after the epoch's first step (so the store knows which epoch an
     * attempt was in when it stopped), and after its last step, so that the evaluation and
     * the checkpoint that follow start with a full lease */
    double now = mono_now();
    if (c->fenced || (step > 1 && step < steps && now - c->last_beat < c->beat_every)) return;
    c->last_beat = now;
    int rc = results_heartbeat_at(c->db, &c->lease, epoch, step);
    if (rc == DR_ERR_FENCED) {
        c->fenced = 1;
    } else if (rc != DR_OK && !c->beat_warned) {
        dr_eprintf("dawnrun: warning: heartbeat of run %lld failed (%s); training on\n",
                   (long long)c->lease.run_id, dr_status_str(rc));
        c->beat_warned = 1;
    }
}

static int run_should_stop(void *user)
{
    struct run_ctx *c = user;
    return c->fenced || cli_stop_requested(NULL);
}

/* A store write of the run's: a refused one means the run was taken over. */
static int run_store(struct run_ctx *c, int rc)
{
    if (rc == DR_ERR_FENCED) c->fenced = 1;
    if (rc != DR_OK) c->store_rc = rc;
    return rc;
}

/* After each epoch: the epoch's row goes to the store in its own transaction, then the
 * table row is printed. Nothing is written once the run is not ours. */
static int run_on_epoch(void *user, const struct epoch_record *r, const struct train_progress *p)
{
    struct run_ctx *c = user;
    (void)p;
    if (c->fenced) return run_store(c, DR_ERR_FENCED);
    struct results_epoch row = {r->epoch, r->lr, r->train_loss, r->train_acc, r->test_loss,
                                r->test_acc, r->train_time, r->test_time, r->total_time, 0, 0};
    int rc = run_store(c, results_epoch_record(c->db, &c->lease, &row));
    if (rc != DR_OK) return rc;
    crashpoint("epoch-committed");
    first_use_epoch_seen(&c->first, r->epoch, r->train_time);
    progress_epoch_end(r->epoch, r->train_loss);
    say_table(c->o, r);
    return DR_OK;
}

/* After each epoch that did not diverge: a checkpoint (none after the last epoch unless
 * --keep-checkpoints), and the store learns it. A checkpoint that cannot be written is a
 * warning: a resume starts from an earlier one. */
static int run_checkpoint(void *user, const struct trainer *t, const struct train_progress *p)
{
    struct run_ctx *c = user;
    if (p->epoch == t->plan.epochs && !c->o->keep_checkpoints) return DR_OK;
    if (checkpoint_save(c->ckpt, t, p) != DR_OK) {
        say(c->o, "warning: no checkpoint after epoch %d (see above); a resume starts "
                  "from an earlier one\n", p->epoch);
        return DR_OK;
    }
    crashpoint("checkpoint-renamed");
    return run_store(c, results_run_checkpointed(c->db, &c->lease, p->epoch));
}

static const char *signal_name(int sig)
{
    return sig == SIGTERM ? "SIGTERM" : "SIGINT";
}

/* Ends the attempt; a refused write means the run was taken over. */
static int finish(struct run_ctx *c, enum results_run_status status,
                  const struct train_progress *p, int final, const char *error)
{
    struct results_outcome out = {
        .status = status,
        .final_test_acc = final ? p->last_test_acc : NAN,
        .train_time = p->train_time,
        .total_time = p->total_time,
        .target_time = p->target_time,
        .target_epoch = p->target_epoch,
        .error = error,
    };
    int rc = results_run_finish(c->db, &c->lease, &out);
    if (rc == DR_ERR_FENCED) c->fenced = 1;
    return rc;
}

/* Restores the run's checkpoint into t when there is a usable one; p is left at the
 * start of the run otherwise. Returns DR_OK or a backend error. */
static int resume(struct run_ctx *c, struct trainer *t, struct train_progress *p,
                  const char *path, uint64_t seed)
{
    int found = 0;
    struct train_progress q;
    int rc = checkpoint_load(t, &q, &found, path);
    if (rc == DR_ERR_DATA || rc == DR_ERR_IO) {
        say(c->o, "checkpoint %s is unusable (see above): seed %llu starts from scratch\n",
            path, (unsigned long long)seed);
        return DR_OK;
    }
    if (rc != DR_OK || !found) return rc;
    *p = q;
    say(c->o, "resuming after epoch %d from %s\n", p->epoch, path);
    return DR_OK;
}

/* Makes eng's backend fit x (created on first use, made again for another precision).
 * The failure of a backend is the failure of the run that needed it. */
static int engine_for(struct sched_engine *eng, const struct sched_experiment *x)
{
    int precision = (int)x->e.train.precision;
    if (eng->be.ops && eng->precision == precision) return DR_OK;
    backend_destroy(&eng->be);
    memset(&eng->be, 0, sizeof(eng->be));
    int rc = cli_backend(&eng->common, precision, &eng->be);
    if (rc != DR_OK) memset(&eng->be, 0, sizeof(eng->be));
    eng->precision = precision;
    return rc;
}

static void count(struct sched_tally *tally, enum results_run_status s)
{
    switch (s) {
    case RUN_DONE: tally->done++; break;
    case RUN_DIVERGED: tally->diverged++; break;
    case RUN_INTERRUPTED: tally->interrupted++; break;
    default: tally->failed++; break;
    }
}

/* Trains the claimed run of x on eng's backend and records it. Returns DR_OK when the run ended in
 * any recorded way (or was dropped after being fenced), DR_ERR_INTERRUPTED when a signal
 * stopped it, DR_ERR_DB when the store failed; *ended tells how it ended (RUN_RUNNING:
 * dropped, nothing recorded). */
static int run_one(struct run_ctx *c, const struct sched_experiment *x, struct sched_engine *eng,
                   enum results_run_status *ended, int *error)
{
    struct backend *be = &eng->be;
    const struct sched_options *o = c->o;
    const uint64_t seed = c->lease.seed;
    struct trainer t;
    struct train_progress p;
    struct backend_counters before = {0};
    char ckpt[EXPERIMENT_PATH_MAX + 128], why[256] = "", first[512] = "";
    int rc = DR_OK, train_rc = DR_OK;
    enum results_run_status status = RUN_DONE;

    *ended = RUN_RUNNING;
    memset(&t, 0, sizeof(t));
    train_progress_start(&p);
    scheduler_checkpoint_path(ckpt, sizeof(ckpt), o->checkpoint_dir, x, seed);
    c->ckpt = ckpt;
    train_rc = engine_for(eng, x);
    say(o, "\n%s  seed %llu  attempt %d  (run %lld)  %s: %s\n", x->name,
        (unsigned long long)seed, c->lease.attempt, (long long)c->lease.run_id,
        eng->common.engine, be->ops ? be->ops->device_name(be->ctx) : "no device");
    if (train_rc == DR_OK && be->ops->counters) train_rc = be->ops->counters(be->ctx, &before);
    if (train_rc == DR_OK)
        train_rc = trainer_create(&t, &x->e, &x->g, be, x->train, x->test, seed);
    if (train_rc == DR_OK) train_rc = resume(c, &t, &p, ckpt, seed);
    if (train_rc != DR_OK) {
        snprintf(why, sizeof(why), "%s while setting up the run", dr_status_str(train_rc));
        status = RUN_FAILED;
        goto record_end;
    }
    /* the run is ours: temporary files of killed writers go, and the store learns the
     * point this attempt starts from (epochs past it are discarded) */
    (void)checkpoint_remove_leftovers(ckpt);
    rc = run_store(c, results_run_resume_at(c->db, &c->lease, p.epoch));
    if (rc != DR_OK) goto drop;

    struct train_hooks hooks = {run_on_epoch, run_checkpoint, run_on_step, run_should_stop, c};
    say_table(o, NULL);
    progress_run_begin(t.plan.epochs, t.plan.batch);
    memset(&c->first, 0, sizeof(c->first));
    train_rc = trainer_run(&t, &hooks, &p);
    /* after the table: what first use cost this run (nothing where nothing is counted;
     * a later run on the same engine finds its graphs and algorithms made) */
    if (first_use_run_line(first, sizeof(first), be, &before, &c->first))
        say(o, "%s\n", first);
    if (c->fenced || c->store_rc != DR_OK) {
        rc = c->store_rc;
        goto drop;
    }
    if (train_rc == DR_ERR_DIVERGED) {
        status = RUN_DIVERGED;
        snprintf(why, sizeof(why), "the loss diverged (NaN or inf) in epoch %d", p.epoch);
    } else if (train_rc == DR_ERR_INTERRUPTED) {
        status = RUN_INTERRUPTED;
        snprintf(why, sizeof(why), "stopped by %s in epoch %d", signal_name(cli_stop_signal()),
                 p.epoch + 1);
    } else if (train_rc != DR_OK) {
        status = RUN_FAILED;
        snprintf(why, sizeof(why), "%s in epoch %d", dr_status_str(train_rc), p.epoch + 1);
    }

record_end:
    *error = train_rc;
    rc = finish(c, status, &p, status == RUN_DONE || status == RUN_DIVERGED,
                status == RUN_DONE ? NULL : why);
    if (rc != DR_OK) goto drop;
    crashpoint("run-finished");
    *ended = status;
    if (status == RUN_DONE)
        say(o, "done: final test acc %.4f after %d epochs; train time %.2f s, total %.2f s\n",
            p.last_test_acc, p.epoch, p.train_time, p.total_time);
    else
        say(o, "%s: %s%s\n", results_status_name(status), why,
            status == RUN_INTERRUPTED ? "; the checkpoint is kept for a resume" : "");
    if ((status == RUN_DONE || status == RUN_DIVERGED) && !o->keep_checkpoints &&
        checkpoint_remove(ckpt) != DR_OK)
        dr_eprintf("dawnrun: warning: the checkpoint files above were left in place\n");
    trainer_free(&t);
    return status == RUN_INTERRUPTED ? DR_ERR_INTERRUPTED : DR_OK;

drop:
    trainer_free(&t);
    if (c->fenced) {
        say(o, "run %lld (seed %llu) was taken over by another worker (its lease ran out): "
               "dropping it, nothing more is written\n",
            (long long)c->lease.run_id, (unsigned long long)seed);
        return cli_stop_requested(NULL) ? DR_ERR_INTERRUPTED : DR_OK;
    }
    dr_eprintf("dawnrun: run %lld (seed %llu): the results store failed (%s); stopping "
               "this worker, the run will be reclaimed when its lease runs out\n",
               (long long)c->lease.run_id, (unsigned long long)seed, dr_status_str(rc));
    return DR_ERR_DB;
}

/* ---- the worker loop ------------------------------------------------------------------- */

static int make_dir(const char *dir)
{
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) return DR_OK;
    dr_eprintf("dawnrun: cannot create the checkpoint directory %s: %s\n", dir,
               strerror(errno));
    return DR_ERR_IO;
}

/* The union of the batch's seeds (the claim's seed filter); *out malloc'd. */
static int batch_seeds(uint64_t **out, int *n, const struct sched_batch *b)
{
    int rc = DR_OK, total = 0, k = 0;
    for (int i = 0; i < b->n; i++) total += b->x[i].n_seeds;
    uint64_t *s = malloc((size_t)(total ? total : 1) * sizeof(*s));
    CHECK_ALLOC(s, "the seed list");
    for (int i = 0; i < b->n; i++)
        for (int j = 0; j < b->x[i].n_seeds; j++) {
            int seen = 0;
            for (int m = 0; m < k && !seen; m++) seen = s[m] == b->x[i].seeds[j];
            if (!seen) s[k++] = b->x[i].seeds[j];
        }
    *out = s;
    *n = k;
cleanup:
    return rc;
}

int scheduler_census(struct results *db, struct results_census *out, int *requeued,
                     const struct sched_batch *b, int requeue_failed)
{
    int rc = DR_OK, n_seeds = 0;
    int64_t *ids = NULL;
    uint64_t *seeds = NULL;
    struct results_claim req;
    if (requeued) *requeued = 0;
    ids = malloc((size_t)(b->n ? b->n : 1) * sizeof(*ids));
    CHECK_ALLOC(ids, "the experiment list");
    for (int i = 0; i < b->n; i++) ids[i] = b->x[i].id;
    TRY(batch_seeds(&seeds, &n_seeds, b));
    results_claim_init(&req);
    req.experiment_ids = ids;
    req.n_experiments = b->n;
    req.seeds = seeds;
    req.n_seeds = n_seeds;
    if (requeue_failed) TRY(results_runs_requeue_failed(db, requeued, &req));
    TRY(results_claim_census(db, out, &req));
cleanup:
    free(ids);
    free(seeds);
    return rc;
}

int scheduler_exit_code(int rc, const struct sched_tally *tally)
{
    if (rc == DR_ERR_INTERRUPTED || cli_stop_requested(NULL))
        return cli_exit_code(DR_ERR_INTERRUPTED);
    if (rc != DR_OK) return cli_exit_code(rc);
    return tally->failed > 0 ? EXIT_FAILURE_OTHER : EXIT_OK;
}

int scheduler_work(struct sched_tally *tally, const struct sched_batch *b,
                   struct sched_engine *eng, const struct sched_options *o)
{
    int rc = DR_OK, fails = 0, n_seeds = 0;
    struct results *db = NULL;
    int64_t *ids = NULL;
    uint64_t *seeds = NULL;
    struct results_claim req;

    memset(tally, 0, sizeof(*tally));
    cli_signals_install();
    TRY(make_dir(o->checkpoint_dir));
    ids = malloc((size_t)(b->n ? b->n : 1) * sizeof(*ids));
    CHECK_ALLOC(ids, "the experiment list");
    for (int i = 0; i < b->n; i++) ids[i] = b->x[i].id;
    TRY(batch_seeds(&seeds, &n_seeds, b));
    TRY(results_open(&db, o->db_path));

    results_claim_init(&req);
    req.experiment_ids = ids;
    req.n_experiments = b->n;
    req.seeds = seeds;
    req.n_seeds = n_seeds;
    req.retry_failed = 0;   /* --retry-failed requeued them (scheduler_census): each once */
    req.lease_seconds = o->lease_s;
    req.device = o->device;
    while (!cli_stop_requested(NULL)) {
        struct run_ctx c;
        memset(&c, 0, sizeof(c));
        c.o = o;
        c.db = db;
        c.beat_every = o->lease_s / 6.0 < 10.0 ? o->lease_s / 6.0 : 10.0;
        c.last_beat = mono_now();
        TRY(results_claim_run(db, &c.lease, &req));
        if (c.lease.run_id == 0) break;
        const struct sched_experiment *x = NULL;
        for (int i = 0; i < b->n && !x; i++)
            if (b->x[i].id == c.lease.experiment_id) x = &b->x[i];
        if (!x) FAIL(DR_ERR_INTERNAL, "claimed run %lld of an experiment outside the batch",
                     (long long)c.lease.run_id);
        enum results_run_status ended;
        int error = DR_OK;
        rc = run_one(&c, x, eng, &ended, &error);
        if (ended == RUN_FAILED) tally->last_error = error;
        if (ended == RUN_RUNNING) tally->dropped++;
        else count(tally, ended);
        if (rc != DR_OK) goto cleanup;
        fails = ended == RUN_FAILED ? fails + 1 : 0;
        if (fails == SCHED_FAILS_IN_A_ROW) {
            dr_eprintf("dawnrun: %d runs in a row failed on %s: this worker stops\n", fails,
                       o->device ? o->device : eng->common.engine);
            rc = error != DR_OK ? error : DR_ERR_INTERNAL;
            goto cleanup;
        }
    }
    if (cli_stop_requested(NULL)) rc = DR_ERR_INTERRUPTED;
cleanup:
    results_close(db);
    free(ids);
    free(seeds);
    return rc;
}

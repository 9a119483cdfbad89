/* The loop of `dawnrun run --until-decided` (see decide.h): rounds of seeds for every
 * experiment of the batch, a wait for the runs other processes hold, a look at each
 * comparison with the anytime-valid confidence sequence for the mean difference of the
 * final accuracies (results/sequential.h), the looks and the outcome
 * recorded with the batch. */
#include "decide.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runner/cli/cli.h"
#include "base/sha256.h"
#include "results/sequential.h"

int decide_key(char key[65], const struct sched_batch *b, const struct decide_design *d)
{
    int rc = DR_OK;
    size_t cap = 512 + strlen(SEQ_METHOD_NAME) + (size_t)b->n * 72, len = 0;
    char *text = malloc(cap);
    CHECK_ALLOC(text, "the batch key");
    len += (size_t)snprintf(text + len, cap - len,
                            "dawnrun sequential batch\nmethod=%s\nmetric=%s\nalpha=%.17g\n"
                            "delta=%.17g\nround=%d\nmax_seeds=%d\n", SEQ_METHOD_NAME,
                            DECIDE_METRIC, d->alpha, d->delta, d->round, d->max_seeds);
    for (int i = 0; i < b->n; i++)
        len += (size_t)snprintf(text + len, cap - len, "member=%s\n", b->x[i].identity);
    sha256_hex(key, text, len);
cleanup:
    free(text);
    return rc;
}

/* Gives x the seeds 0..m-1. */
static int set_seeds(struct sched_experiment *x, int m)
{
    int rc = DR_OK;
    uint64_t *s = malloc((size_t)(m > 0 ? m : 1) * sizeof *s);
    CHECK_ALLOC(s, "a seed list");
    for (int j = 0; j < m; j++) s[j] = (uint64_t)j;
    free(x->seeds);
    x->seeds = s;
    x->n_seeds = m;
cleanup:
    return rc;
}

int decide_first_seeds(struct sched_batch *b, const struct decide_design *d)
{
    int rc = DR_OK;
    for (int i = 0; i < b->n; i++) TRY(set_seeds(&b->x[i], d->round));
cleanup:
    return rc;
}

/* ---- output ---------------------------------------------------------------------------- */

/* "+0.84 pp" (a difference of accuracies). */
static void fmt_pp(char *buf, size_t n, double v)
{
    if (isnan(v)) snprintf(buf, n, "-");
    else snprintf(buf, n, "%+.2f pp", 100.0 * v);
}

/* "95 % confidence sequence +0.31..+1.37 pp" or "... unbounded". */
static void fmt_cs(char *buf, size_t n, double alpha_each, double lo, double hi)
{
    char level[32];
    snprintf(level, sizeof level, "%.4g %%", 100.0 * (1.0 - alpha_each));
    if (!isfinite(lo) || !isfinite(hi))
        snprintf(buf, n, "%s confidence sequence unbounded", level);
    else
        snprintf(buf, n, "%s confidence sequence %+.2f..%+.2f pp", level, 100.0 * lo,
                 100.0 * hi);
}

/* Prints "B vs A: mean difference +0.84 pp, 95 % confidence sequence +0.31..+1.37 pp:
 * different". */
static void print_comparison(const struct sched_batch *b, int pos, double alpha_each,
                             const struct results_seq_look *l)
{
    char est[32], cs[96];
    fmt_pp(est, sizeof est, l->estimate);
    fmt_cs(cs, sizeof cs, alpha_each, l->cs_lo, l->cs_hi);
    printf("%s vs %s: mean difference %s, %s: %s", b->x[pos].name, b->x[0].name, est, cs,
           l->decision);
}

/* The closing line: "decided after N seeds per experiment: ..." or "not decided at the
 * cap of N seeds: ...", each comparison at its last look. */
static void say_outcome(const struct sched_batch *b, int decided, int seeds, double alpha_each,
                        const struct results_seq_look *last)
{
    if (decided) printf("decided after %d seeds per experiment: ", seeds);
    else printf("not decided at the cap of %d seeds: ", seeds);
    for (int i = 1; i < b->n; i++) {
        if (i > 1) printf("; ");
        print_comparison(b, i, alpha_each, &last[i]);
    }
    printf("\n");
    fflush(stdout);
}

static double alpha_each_of(const struct decide_design *d, int n_members)
{
    struct seq_design s = {d->alpha, d->delta, d->round, d->max_seeds, n_members - 1};
    return seq_alpha_each(&s);
}

int decide_ended(int *ended, const char *db_path, const struct sched_batch *b,
                 const struct decide_design *d)
{
    int rc = DR_OK, found = 0;
    struct results *db = NULL;
    struct results_seq_batch rec;
    struct results_seq_look *last = NULL;
    char key[65];
    memset(&rec, 0, sizeof rec);
    *ended = 0;
    if (access(db_path, F_OK) != 0) return DR_OK;
    TRY(decide_key(key, b, d));
    /* read-write: another process may be creating this file's schema this instant, and a
     * read-only open would refuse the still empty file; the writer's open waits for it */
    TRY(results_open(&db, db_path));
    TRY(results_seq_batch_find(db, &rec, &found, key));
    if (!found || !strcmp(rec.status, "running") || rec.n_members != b->n) goto cleanup;
    last = calloc((size_t)b->n, sizeof *last);
    CHECK_ALLOC(last, "the looks");
    for (int i = 1; i < rec.n_members; i++) last[i] = rec.members[i].last;
    printf("sequential batch %lld ended before (%s, recorded in %s); nothing to run\n",
           (long long)rec.id, rec.status, db_path);
    say_outcome(b, !strcmp(rec.status, "decided"), rec.seeds_used, alpha_each_of(d, b->n), last);
    *ended = 1;
cleanup:
    free(last);
    results_seq_batch_clear(&rec);
    results_close(db);
    return rc;
}

/* ---- one round ------------------------------------------------------------------------- */

/* The seeds x needs for n done runs: 0..*m-1 with *m = n + its failed or diverged runs
 * among them. */
static int seeds_needed(struct results *db, int *m, const struct sched_experiment *x, int n)
{
    int rc = DR_OK, count = 0;
    struct results_run *runs = NULL;
    TRY(results_runs_list(db, &runs, &count, x->id));
    *m = n;
    for (;;) {
        int bad = 0;
        for (int k = 0; k < count; k++)
            bad += runs[k].seed < (uint64_t)*m &&
                   (runs[k].status == RUN_FAILED || runs[k].status == RUN_DIVERGED);
        if (n + bad == *m) break;
        *m = n + bad;
    }
cleanup:
    results_runs_free(runs, count);
    return rc;
}

/* Brings every experiment to n done runs: adds the seeds each needs, works the queue,
 * waits for runs held elsewhere, until nothing of the batch is left to run. *code gets a
 * non-zero exit code when the work was stopped (a signal) or failed. The connection *db
 * is closed while the queue is worked and opened again after. */
static int round_complete(int *code, struct results **db, struct sched_batch *b,
                          const struct decide_spec *s, int n, decide_work_fn work, void *ctx)
{
    int rc = DR_OK, said_wait = 0;
    *code = EXIT_OK;
    for (;;) {
        int changed = 0;
        for (int i = 0; i < b->n; i++) {
            struct sched_experiment *x = &b->x[i];
            int m = 0;
            TRY(seeds_needed(*db, &m, x, n));
            if (m > 2 * s->design.max_seeds)
                FAIL(DR_ERR_DATA, "experiment '%s' cannot get %d done runs within %d seeds "
                     "(%d of its runs failed or diverged): the batch stops undecided",
                     x->name, n, 2 * s->design.max_seeds, m - n);
            if (m == x->n_seeds) continue;
            TRY(set_seeds(x, m));
            TRY(results_runs_ensure(*db, NULL, x->id, x->seeds, x->n_seeds, s->max_attempts));
            changed = 1;
        }
        struct results_census c;
        TRY(scheduler_census(*db, &c, NULL, b, 0));
        if (c.to_run > 0) {
            results_close(*db);
            *db = NULL;
            int w = work(ctx);
            TRY(results_open(db, s->db_path));
            /* a failed run (1) is replaced by one more seed; anything else stops */
            if (w != EXIT_OK && w != EXIT_FAILURE_OTHER) {
                *code = w;
                goto cleanup;
            }
            said_wait = 0;
            continue;
        }
        if (c.running_elsewhere > 0) {
            if (!said_wait)
                printf("waiting for %d run%s held by other processes\n", c.running_elsewhere,
                       c.running_elsewhere == 1 ? "" : "s");
            fflush(stdout);
            said_wait = 1;
            for (int t = 0; t < 10 * DECIDE_POLL_S && !cli_stop_requested(NULL); t++)
                nanosleep(&(struct timespec){0, 100000000L}, NULL);
            if (cli_stop_requested(NULL)) {
                *code = cli_exit_code(DR_ERR_INTERRUPTED);
                goto cleanup;
            }
            continue;
        }
        if (!changed) break;
    }
cleanup:
    return rc;
}

/* The look at n seeds of member pos against the baseline: the n lowest-seed done runs
 * of each, paired by seed rank. */
static int look_member(struct results_seq_look *out, struct results *db,
                       const struct sched_batch *b, int pos, int n, int look, double alpha_each,
                       double delta)
{
    int rc = DR_OK, n0 = 0, n1 = 0;
    double *a0 = NULL, *a1 = NULL, *d = NULL;
    struct seq_look l;
    TRY(results_done_values(db, &a0, &n0, b->x[0].id, RESULTS_FINAL_ACC));
    TRY(results_done_values(db, &a1, &n1, b->x[pos].id, RESULTS_FINAL_ACC));
    if (n0 < n || n1 < n)
        FAIL(DR_ERR_DATA, "the look at %d seeds found only %d done runs of '%s' and %d of "
             "'%s' (a run held elsewhere failed?): run the command again", n, n0,
             b->x[0].name, n1, b->x[pos].name);
    d = malloc((size_t)n * sizeof *d);
    CHECK_ALLOC(d, "the differences");
    for (int j = 0; j < n; j++) d[j] = a1[j] - a0[j];
    TRY(seq_look_at(&l, d, n, alpha_each, delta));
    memset(out, 0, sizeof *out);
    out->look = look;
    out->position = pos;
    out->n = n;
    out->estimate = l.estimate;
    out->cs_lo = l.cs_lo;
    out->cs_hi = l.cs_hi;
    out->log_e = l.log_e;
    out->at = NAN;
    snprintf(out->decision, sizeof out->decision, "%s", seq_decision_name(l.decision));
cleanup:
    free(a0);
    free(a1);
    free(d);
    return rc;
}

/* ---- the loop -------------------------------------------------------------------------- */

int decide_run(int *exit_code, struct sched_batch *b, const struct decide_spec *s,
               decide_work_fn work, void *ctx)
{
    int rc = DR_OK, n_looks = 0;
    struct results *db = NULL;
    struct results_seq_look *last = NULL, *looks = NULL;
    int64_t *members = NULL, batch_id = 0;
    char key[65];
    const struct decide_design *d = &s->design;
    double alpha_each = alpha_each_of(d, b->n);
    *exit_code = EXIT_OK;
    last = calloc((size_t)b->n, sizeof *last);
    looks = calloc((size_t)b->n, sizeof *looks);
    members = calloc((size_t)b->n, sizeof *members);
    CHECK_ALLOC(last, "the looks");
    CHECK_ALLOC(looks, "the looks");
    CHECK_ALLOC(members, "the members");
    for (int i = 0; i < b->n; i++) members[i] = b->x[i].id;
    TRY(decide_key(key, b, d));
    struct results_seq_design rec = {
        .key = key, .command = s->command, .host = s->host, .sweep_id = s->sweep_id,
        .method = SEQ_METHOD_NAME, .metric = DECIDE_METRIC, .alpha = d->alpha,
        .delta = d->delta, .round_size = d->round, .max_seeds = d->max_seeds,
        .members = members, .n_members = b->n,
    };
    TRY(results_open(&db, s->db_path));
    TRY(results_seq_batch_open(db, &batch_id, &rec));
    printf("until decided (sequential batch %lld): %d comparison%s with %s; alpha %g (%.4g %% "
           "confidence sequence each), delta %.2f pp, rounds of %d seeds, cap %d\n",
           (long long)batch_id, b->n - 1, b->n == 2 ? "" : "s", b->x[0].name, d->alpha,
           100.0 * (1.0 - alpha_each), 100.0 * d->delta, d->round, d->max_seeds);
    fflush(stdout);
    for (int i = 1; i < b->n; i++) snprintf(last[i].decision, sizeof last[i].decision, "undecided");
    int n = 0, all_decided = 0;
    for (int look = 1; !all_decided && n < d->max_seeds; look++) {
        n = look * d->round < d->max_seeds ? look * d->round : d->max_seeds;
        TRY(round_complete(exit_code, &db, b, s, n, work, ctx));
        if (*exit_code != EXIT_OK) {
            dr_eprintf("dawnrun: the batch stopped before its look at %d seeds; run the same "
                       "command again to resume it\n", n);
            goto cleanup;
        }
        n_looks = 0;
        for (int i = 1; i < b->n; i++) {
            if (strcmp(last[i].decision, "undecided")) continue;   /* decided: kept */
            TRY(look_member(&looks[n_looks], db, b, i, n, look, alpha_each, d->delta));
            last[i] = looks[n_looks++];
        }
        TRY(results_seq_looks_record(db, batch_id, looks, n_looks, n));
        all_decided = 1;
        for (int i = 1; i < b->n; i++) {
            if (last[i].look == look) {
                printf("look %d (%d seeds each): ", look, n);
                print_comparison(b, i, alpha_each, &last[i]);
                printf("\n");
            } else {
                printf("look %d (%d seeds each): %s vs %s: %s at look %d\n", look, n,
                       b->x[i].name, b->x[0].name, last[i].decision, last[i].look);
            }
            all_decided &= strcmp(last[i].decision, "undecided") != 0;
        }
        fflush(stdout);
    }
    TRY(results_seq_batch_end(db, batch_id, all_decided ? "decided" : "cap", n));
    say_outcome(b, all_decided, n, alpha_each, last);
cleanup:
    results_close(db);
    free(last);
    free(looks);
    free(members);
    return rc;
}

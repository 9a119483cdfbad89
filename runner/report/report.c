/* The batch report's figures: reads each experiment's runs from the results store,
 * summarises accuracies and times (results/stats.h), finds when each run first reached
 * the target, compares every experiment with the first, and hands the result to the
 * writer of the requested format. */
#include "report_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "engine/core/train.h"

int report_format_parse(enum report_format *out, const char *name)
{
    static const struct {
        const char *name;
        enum report_format fmt;
    } formats[] = {
        {"table", REPORT_TABLE},
        {"csv", REPORT_CSV},
        {"json", REPORT_JSON},
        {"markdown", REPORT_MARKDOWN},
        {"html", REPORT_HTML},
    };
    for (size_t i = 0; name && i < sizeof formats / sizeof formats[0]; i++) {
        if (!strcmp(name, formats[i].name)) {
            *out = formats[i].fmt;
            return 0;
        }
    }
    return -1;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Median of n values (reordered in place); NaN when n = 0. */
static double median_of(double *v, int n)
{
    if (n < 1) return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return stats_quantile_sorted(v, n, 0.5);
}

/* The first epoch of a done run at which its test accuracy reached `target`, and the
 * train time up to and including it, from the run's epoch rows (train_progress_epoch,
 * the rule the training loop follows). A run without epoch
 * rows falls back to the values stored with it, which were computed against the
 * experiment's own target and so only count when that is the target used. */
static int time_to_target(struct results *db, const struct results_run *run, double target,
                          double own_target, int *epoch, double *seconds)
{
    int rc = DR_OK;
    int n = 0;
    struct results_epoch *eps = NULL;
    struct train_progress p;
    *epoch = -1;
    *seconds = NAN;
    TRY(results_epochs_list(db, &eps, &n, run->id));
    if (n == 0) {
        if (target == own_target && run->target_epoch >= 0) {
            *epoch = run->target_epoch;
            *seconds = run->target_time;
        }
        goto cleanup;
    }
    train_progress_start(&p);
    for (int i = 0; i < n && p.target_epoch < 0; i++)
        train_progress_epoch(&p, eps[i].epoch, eps[i].train_time, eps[i].test_time,
                             eps[i].test_acc, eps[i].test_loss, target);
    if (p.target_epoch >= 0) {
        *epoch = p.target_epoch;
        *seconds = p.target_time;
    }
cleanup:
    free(eps);
    return rc;
}

/* Fills e for the n experiments ids pooled (one: that experiment; e->x is the first
 * one's record, e->target the target used for it). Each run counts against its own
 * experiment's target when `target` is NaN. */
int report_exp_compute(struct report_exp *e, struct results *db, const int64_t *ids, int n,
                       double target)
{
    int rc = DR_OK;
    int n_runs = 0, found = 0, n_total = 0, n_ttt = 0, cap = 0;
    struct results_run *runs = NULL;
    struct results_experiment x = {0};
    double *total = NULL, *epochs = NULL, *ttt = NULL;

    e->n_members = n;
    e->hits = -1;
    e->hit_rate = e->hit_ci_lo = e->hit_ci_hi = NAN;
    for (int m = 0; m < n; m++) {
        TRY(results_experiment_get(db, &x, &found, ids[m]));
        if (!found)
            FAIL(DR_ERR_USAGE, "%s: no experiment with id %lld", results_path(db),
                 (long long)ids[m]);
        double t = isnan(target) ? x.target_accuracy : target;
        TRY(results_runs_list(db, &runs, &n_runs, ids[m]));
        if (e->total + n_runs + 1 > cap) {
            cap = e->total + n_runs + 1;
            double *g1 = realloc(e->acc, sizeof(double) * (size_t)cap);
            if (g1) e->acc = g1;
            double *g2 = realloc(e->train_time, sizeof(double) * (size_t)cap);
            if (g2) e->train_time = g2;
            double *g3 = realloc(total, sizeof(double) * (size_t)cap);
            if (g3) total = g3;
            double *g4 = realloc(epochs, sizeof(double) * (size_t)cap);
            if (g4) epochs = g4;
            double *g5 = realloc(ttt, sizeof(double) * (size_t)cap);
            if (g5) ttt = g5;
            if (!g1 || !g2 || !g3 || !g4 || !g5)
                FAIL(DR_ERR_NOMEM, "out of memory reading the runs of experiment %lld",
                     (long long)ids[m]);
        }
        if (m == 0) {
            e->x = x;
            memset(&x, 0, sizeof x);
            e->target = t;
        }
        e->total += n_runs;
        if (!isnan(t) && e->hits < 0) e->hits = 0;
        for (int i = 0; i < n_runs; i++) {
            const struct results_run *run = &runs[i];
            if ((int)run->status >= 0 && (int)run->status < REPORT_N_STATUS)
                e->n_status[run->status]++;
            if (run->status == RUN_DIVERGED) e->finished++;
            if (run->status != RUN_DONE) continue;
            e->finished++;
            if (!isnan(run->final_test_acc)) e->acc[e->n_acc++] = run->final_test_acc;
            if (!isnan(run->train_time)) e->train_time[e->n_train_time++] = run->train_time;
            if (!isnan(run->total_time)) total[n_total++] = run->total_time;
            if (isnan(t)) continue;
            if (run->final_test_acc >= t) e->hits++;
            int epoch;
            double seconds;
            double own = m == 0 ? e->x.target_accuracy : x.target_accuracy;
            TRY(time_to_target(db, run, t, own, &epoch, &seconds));
            if (epoch >= 0) {
                epochs[e->reached++] = epoch;
                if (!isnan(seconds)) ttt[n_ttt++] = seconds;
            }
        }
        results_runs_free(runs, n_runs);
        runs = NULL;
        n_runs = 0;
        results_experiment_clear(&x);
    }
    if (e->hits >= 0 && e->finished > 0) {
        /* computed here, not read from binomial_ci: --target may differ from the stored
         * target, and pooled groups add up counts no row was written for */
        e->hit_rate = (double)e->hits / e->finished;
        TRY(stats_binomial_ci(&e->hit_ci_lo, &e->hit_ci_hi, e->hits, e->finished, 0.95));
    }
    TRY(stats_summarize(&e->acc_stats, e->acc, e->n_acc));
    /* an accuracy lies in [0, 1]: so does what the report says of its mean (with two
     * runs, t = 12.7 stretches the t interval past both ends) */
    if (e->acc_stats.n > 1) {
        e->acc_stats.ci_lo = fmax(e->acc_stats.ci_lo, 0.0);
        e->acc_stats.ci_hi = fmin(e->acc_stats.ci_hi, 1.0);
    }
    TRY(stats_summarize(&e->train_time_stats, e->train_time, e->n_train_time));
    TRY(stats_summarize(&e->total_time_stats, total, n_total));
    e->epochs_to_target = median_of(epochs, e->reached);
    e->time_to_target = median_of(ttt, n_ttt);
cleanup:
    results_runs_free(runs, n_runs);
    results_experiment_clear(&x);
    free(total);
    free(epochs);
    free(ttt);
    return rc;
}

static void test_unknown(struct stats_test *t)
{
    t->statistic = t->df = t->p = NAN;
    t->exact = 0;
}

/* Welch's t and Mann-Whitney U of a against b where the samples allow them (NaN p
 * otherwise). */
static int two_sample(struct stats_test *welch, struct stats_test *mwu, const double *a,
                      int na, const double *b, int nb)
{
    int rc = DR_OK;
    test_unknown(welch);
    test_unknown(mwu);
    if (na >= 2 && nb >= 2) TRY(stats_welch(welch, a, na, b, nb));
    if (na >= 1 && nb >= 1) TRY(stats_mann_whitney(mwu, a, na, b, nb, STATS_MWU_AUTO));
cleanup:
    return rc;
}

/* The smallest differences of e against first that their done runs detect (the
 * report_cmp fields mde_*): NaN unless each side has two values with some spread; for
 * the train time that of the Mann-Whitney test the report prints, +inf when it cannot
 * give p < alpha with these runs. */
static int report_mde(struct report_cmp *c, const struct report_exp *e,
                      const struct report_exp *first)
{
    int rc = DR_OK;
    const struct stats_summary *a = &e->acc_stats, *a0 = &first->acc_stats;
    const struct stats_summary *t = &e->train_time_stats, *t0 = &first->train_time_stats;
    c->mde_acc = c->mde_time = c->mde_time_rel = NAN;
    c->time_runs_min = stats_mwu_min_n(REPORT_MDE_ALPHA);
    if (a->n >= 2 && a0->n >= 2)
        c->mde_acc = stats_power_t_mde(stats_pooled_sd(a->std, a0->std), a->n, a0->n,
                                       REPORT_MDE_ALPHA, REPORT_MDE_POWER);
    if (t->n >= 2 && t0->n >= 2) {
        TRY(stats_power_mwu_mde(&c->mde_time, stats_pooled_sd(t->std, t0->std), t->n, t0->n,
                                REPORT_MDE_ALPHA, REPORT_MDE_POWER));
        c->mde_time_rel = c->mde_time / t0->median;
    }
cleanup:
    return rc;
}

/* Experiment e against the first one. */
static int compare(struct report_cmp *c, const struct report_exp *e,
                   const struct report_exp *first)
{
    int rc = DR_OK;
    c->d_acc_mean = e->acc_stats.mean - first->acc_stats.mean;
    c->d_time_median = e->train_time_stats.median - first->train_time_stats.median;
    c->d_time_rel = c->d_time_median / first->train_time_stats.median;
    TRY(two_sample(&c->acc_welch, &c->acc_mwu, e->acc, e->n_acc, first->acc, first->n_acc));
    TRY(two_sample(&c->time_welch, &c->time_mwu, e->train_time, e->n_train_time,
                   first->train_time, first->n_train_time));
    TRY(report_mde(c, e, first));
cleanup:
    return rc;
}

int report_compute(struct report *r, struct results *db, const int64_t *experiment_ids, int n,
                   double target)
{
    int rc = DR_OK;
    memset(r, 0, sizeof *r);
    r->db_path = results_path(db);
    r->db = db;
    r->target = target;
    if (n < 0) FAIL(DR_ERR_INTERNAL, "report: negative experiment count %d", n);
    r->exps = calloc((size_t)n + 1, sizeof *r->exps);
    r->cmp = calloc((size_t)n + 1, sizeof *r->cmp);
    if (!r->exps || !r->cmp) FAIL(DR_ERR_NOMEM, "out of memory allocating the report");
    for (int i = 0; i < n; i++) {
        r->n = i + 1;
        TRY(report_exp_compute(&r->exps[i], db, &experiment_ids[i], 1, target));
    }
    TRY(report_compare_all(r));
    TRY(report_params_attach(r, db, experiment_ids, n));
cleanup:
    return rc;
}

int report_compare_all(struct report *r)
{
    int rc = DR_OK;
    int n = r->n;
    if (n > 0) {
        struct report_cmp *c0 = &r->cmp[0];
        c0->d_acc_mean = c0->d_time_median = c0->d_time_rel = NAN;
        c0->mde_acc = c0->mde_time = c0->mde_time_rel = NAN;
        c0->time_runs_min = 0;
        test_unknown(&c0->acc_welch);
        test_unknown(&c0->acc_mwu);
        test_unknown(&c0->time_welch);
        test_unknown(&c0->time_mwu);
    }
    for (int i = 1; i < n; i++) TRY(compare(&r->cmp[i], &r->exps[i], &r->exps[0]));
cleanup:
    return rc;
}

void report_free(struct report *r)
{
    report_params_detach(r);
    for (int i = 0; r->exps && i < r->n; i++) {
        results_experiment_clear(&r->exps[i].x);
        free(r->exps[i].group_value);
        free(r->exps[i].acc);
        free(r->exps[i].train_time);
    }
    free(r->exps);
    free(r->cmp);
    memset(r, 0, sizeof *r);
}

int report_print(FILE *f, struct results *db, const int64_t *experiment_ids, int n,
                 double target, enum report_format fmt)
{
    int rc = DR_OK;
    struct report r;
    TRY(report_compute(&r, db, experiment_ids, n, target));
    if (fmt == REPORT_HTML) {
        TRY(report_write_html(f, db, &r));
        if (fflush(f) != 0 || ferror(f)) FAIL(DR_ERR_IO, "report: write error");
    } else {
        TRY(report_write(f, &r, fmt));
    }
cleanup:
    report_free(&r);
    return rc;
}

int report_write(FILE *f, const struct report *r, enum report_format fmt)
{
    int rc = DR_OK;
    switch (fmt) {
    case REPORT_TABLE: TRY(report_write_table(f, r)); break;
    case REPORT_CSV: TRY(report_write_csv(f, r)); break;
    case REPORT_JSON: TRY(report_write_json(f, r)); break;
    case REPORT_MARKDOWN: TRY(report_write_markdown(f, r)); break;
    default: FAIL(DR_ERR_INTERNAL, "report: unknown format %d", (int)fmt);
    }
    if (fflush(f) != 0 || ferror(f)) FAIL(DR_ERR_IO, "report: write error");
cleanup:
    return rc;
}

/* The points of the chart's lines and bands (see plot_series.h): a run's values, the
 * median and quartiles across runs per epoch, the schedule, on either x axis. */
#include "plot_series.h"

#include <math.h>
#include <stdlib.h>

#include "base/status.h"
#include "results/stats.h"

double plot_panel_value(enum plot_panel p, const struct results_epoch *e)
{
    switch (p) {
    case PLOT_ACC: return 100.0 * e->test_acc;
    case PLOT_LOSS: return e->train_loss;
    case PLOT_LR: return e->lr;
    default: return NAN;
    }
}

/* Run r's cumulative train time up to and including its row i. */
static double run_time(const struct plot_run *r, int i)
{
    double t = 0.0;
    for (int k = 0; k <= i; k++) t += r->epochs[k].train_time;
    return isfinite(t) ? t : NAN;
}

/* The index of run r's row for epoch k, or -1. */
static int row_of(const struct plot_run *r, int k)
{
    for (int i = 0; i < r->n_epochs; i++)
        if (r->epochs[i].epoch == k) return i;
    return -1;
}

static int max_epoch(const struct plot_experiment *e)
{
    int m = 0;
    for (int r = 0; r < e->n_runs; r++)
        for (int i = 0; i < e->runs[r].n_epochs; i++)
            if (e->runs[r].epochs[i].epoch > m) m = e->runs[r].epochs[i].epoch;
    return m;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Sorts v[0..n) and returns its q-quantile (NaN when n = 0). */
static double quantile(double *v, int n, double q)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return stats_quantile_sorted(v, n, q);
}

int plot_series_run(struct plot_point **pts, int *n, const struct plot_run *r,
                    enum plot_panel p, enum plot_x x)
{
    int rc = DR_OK;
    *n = 0;
    *pts = malloc(((size_t)r->n_epochs + 1) * sizeof **pts);
    CHECK_ALLOC(*pts, "a line of the plot");
    for (int i = 0; i < r->n_epochs; i++) {
        double v = plot_panel_value(p, &r->epochs[i]);
        double at = x == PLOT_X_TIME ? run_time(r, i) : r->epochs[i].epoch;
        if (!isfinite(v) || !isfinite(at)) continue;
        (*pts)[(*n)++] = (struct plot_point){at, v, v, v};
    }
cleanup:
    return rc;
}

int plot_series_time_at(double *out, const struct plot_experiment *e, int k)
{
    int rc = DR_OK;
    double *t = NULL;
    int n = 0;
    *out = 0.0;
    if (k == 0) return DR_OK;
    t = malloc(((size_t)e->n_runs + 1) * sizeof *t);
    CHECK_ALLOC(t, "the epoch times of the plot");
    for (int r = 0; r < e->n_runs; r++) {
        int i = row_of(&e->runs[r], k);
        double v = i >= 0 ? run_time(&e->runs[r], i) : NAN;
        if (isfinite(v)) t[n++] = v;
    }
    *out = quantile(t, n, 0.5);
cleanup:
    free(t);
    return rc;
}

int plot_series_median(struct plot_point **pts, int *n, const struct plot_experiment *e,
                       enum plot_panel p, enum plot_x x)
{
    int rc = DR_OK;
    int last = max_epoch(e);
    double *v = NULL;
    *n = 0;
    *pts = malloc(((size_t)last + 1) * sizeof **pts);
    v = malloc(((size_t)e->n_runs + 1) * sizeof *v);
    if (!*pts || !v) FAIL(DR_ERR_NOMEM, "out of memory for the median of the plot");
    for (int k = 1; k <= last; k++) {
        int m = 0;
        for (int r = 0; r < e->n_runs; r++) {
            int i = row_of(&e->runs[r], k);
            double val = i >= 0 ? plot_panel_value(p, &e->runs[r].epochs[i]) : NAN;
            if (isfinite(val)) v[m++] = val;
        }
        double at = k;
        if (x == PLOT_X_TIME) TRY(plot_series_time_at(&at, e, k));
        if (m == 0 || !isfinite(at)) continue;
        double med = quantile(v, m, 0.5);
        (*pts)[(*n)++] = (struct plot_point){at, med, stats_quantile_sorted(v, m, 0.25),
                                             stats_quantile_sorted(v, m, 0.75)};
    }
cleanup:
    free(v);
    return rc;
}

int plot_series_schedule(struct plot_point **pts, int *n, const struct plot_experiment *e,
                         enum plot_x x)
{
    int rc = DR_OK;
    double *t = NULL;
    int known = 0;   /* epochs 0..known have a time */
    *n = 0;
    *pts = malloc(((size_t)e->n_lr + 1) * sizeof **pts);
    CHECK_ALLOC(*pts, "the learning-rate line of the plot");
    if (x == PLOT_X_TIME) {
        int last = max_epoch(e);
        t = malloc(((size_t)last + 1) * sizeof *t);
        CHECK_ALLOC(t, "the epoch times of the plot");
        t[0] = 0.0;
        while (known < last) {
            TRY(plot_series_time_at(&t[known + 1], e, known + 1));
            if (!isfinite(t[known + 1])) break;
            known++;
        }
    }
    for (int i = 0; i < e->n_lr; i++) {
        double at = e->lr_epoch[i], v = e->lr[i];
        if (x == PLOT_X_TIME) {
            /* step point in epoch k + 1, the interval (k, k + 1] */
            double k = ceil(at) - 1.0;
            if (k < 0.0) k = 0.0;
            if (!(k + 1.0 <= known)) continue;
            int j = (int)k;
            at = t[j] + (at - k) * (t[j + 1] - t[j]);
        }
        if (!isfinite(at) || !isfinite(v)) continue;
        (*pts)[(*n)++] = (struct plot_point){at, v, v, v};
    }
cleanup:
    free(t);
    return rc;
}

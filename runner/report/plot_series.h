/* Private to the SVG writer (plot_svg.c): the points each line and band of a chart is
 * drawn through, in data units, computed from the runs' epoch rows: one run's values,
 * the median and quartiles over an experiment's runs per epoch, the schedule's learning
 * rate, each on the epoch or the train-time axis. */
#ifndef DAWNRUN_RUNNER_PLOT_SERIES_H
#define DAWNRUN_RUNNER_PLOT_SERIES_H

#include "plot_chart.h"

/* A point of a line: x (epoch or seconds), y, and the band around it (lo = hi = y for
 * one run's line or the schedule). */
struct plot_point {
    double x, y, lo, hi;
};

/* The value panel p plots for one epoch row (accuracy in percent). */
double plot_panel_value(enum plot_panel p, const struct results_epoch *e);

/* Run r's finite values in panel p, ascending by epoch; on the time axis at the run's
 * cumulative train time (rows with no finite time left out). *pts malloc'd (n + 1). */
int plot_series_run(struct plot_point **pts, int *n, const struct plot_run *r,
                    enum plot_panel p, enum plot_x x);

/* Per epoch k with a finite value in at least one run of e: y = the median, lo/hi = the
 * 25th/75th percentiles of those values (stats_quantile_sorted), x = k or e's time at k
 * (plot_series_time_at; epochs without one are left out). */
int plot_series_median(struct plot_point **pts, int *n, const struct plot_experiment *e,
                       enum plot_panel p, enum plot_x x);

/* Experiment e's train time at the end of epoch k into *out: the median over its runs
 * with a row for epoch k of their cumulative train time there (each run's rows'
 * train_time summed up to k, non-finite sums left out); 0 for k = 0; NaN when no run has
 * one. DR_OK or DR_ERR_NOMEM. */
int plot_series_time_at(double *out, const struct plot_experiment *e, int k);

/* e's schedule points (lr_epoch, lr); on the time axis each epoch's points are spread
 * between e's times at its ends (plot_series_time_at), and the points past
 * the last epoch with a time are left out. */
int plot_series_schedule(struct plot_point **pts, int *n, const struct plot_experiment *e,
                         enum plot_x x);

#endif

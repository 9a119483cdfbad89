/* What a chart of training curves is drawn from (plot_svg.h writes it): experiments,
 * their runs' epoch rows and learning-rate curves, the style and the x axis. Types only.
 *
 * The structs grew additively: a chart filled as before (the new fields zero) draws what
 * it always drew, one line per run over epochs with the recorded lr, except that long
 * labels are now wrapped in the legend instead of cut. Fill them with designated
 * initializers so that later additions stay zero. */
#ifndef DAWNRUN_RUNNER_PLOT_CHART_H
#define DAWNRUN_RUNNER_PLOT_CHART_H

#include <stdint.h>

#include "results/results.h"

/* One run: its epoch rows, ascending by epoch number, and its final test accuracy when
 * it has one (a done run). */
struct plot_run {
    uint64_t seed;
    const struct results_epoch *epochs;   /* n_epochs */
    int n_epochs;
    int has_final;                        /* 1: final_acc is the run's outcome, drawn as
                                             a point of the final-accuracy strip */
    double final_acc;                     /* a fraction */
};

/* One experiment: one colour; its runs, and optionally its learning rate per step. */
struct plot_experiment {
    const char *label;                    /* legend text, any UTF-8 (escaped when written),
                                             wrapped over lines, never cut */
    double target;                        /* accuracy drawn dashed; NaN = none */
    const struct plot_run *runs;          /* n_runs */
    int n_runs;
    /* The learning rate as the trainer applies it (plot_lr.h builds it from the stored
     * config): n_lr points (lr_epoch[i], lr[i]), lr_epoch ascending, in epochs (a step's
     * point at the end of that step, so epoch k's last step sits at k). n_lr = 0: the LR
     * panel draws the lr column of the epoch rows instead, like the other panels. */
    const double *lr_epoch;               /* n_lr */
    const double *lr;                     /* n_lr */
    int n_lr;
};

/* How the runs of each experiment are drawn. */
enum plot_style {
    PLOT_STYLE_SEEDS = 0,   /* one line per run (the zero value) */
    PLOT_STYLE_MEDIAN,      /* per experiment and epoch the median over its runs that have a
                               finite value there as a line, the 25th-75th percentile as a
                               translucent band (stats_quantile_sorted: linear between
                               closest ranks, the report's median) */
};

/* What the x axis measures. */
enum plot_x {
    PLOT_X_EPOCH = 0,       /* the epoch number (the zero value) */
    PLOT_X_TIME,            /* cumulative train time in seconds: a run's epoch rows'
                               train_time summed up to that epoch (evaluation excluded); in
                               PLOT_STYLE_MEDIAN the median over the runs at each epoch */
};

struct plot_chart {
    const char *title;                    /* may be NULL */
    const struct plot_experiment *exps;   /* n_exps */
    int n_exps;
    enum plot_style style;                /* 0 = PLOT_STYLE_SEEDS */
    enum plot_x x;                        /* 0 = PLOT_X_EPOCH */
    const char *caption;                  /* a line under the title (e.g. the keys the
                                             labels are built from); NULL = none */
};

/* The panels, top to bottom; PLOT_N_PANELS of them. */
enum plot_panel { PLOT_ACC, PLOT_LOSS, PLOT_LR, PLOT_N_PANELS };

#endif

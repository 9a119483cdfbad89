/* Training curves as a standalone SVG document, written by dawnrun itself: three panels
 * sharing the epoch axis (test accuracy, train loss, learning rate), one line per run
 * (seed), one colour per experiment, a legend, ticks with labels, and each target
 * accuracy as a dashed line on the accuracy panel. Used by `dawnrun plot`. */
#ifndef DAWNRUN_RUNNER_PLOT_SVG_H
#define DAWNRUN_RUNNER_PLOT_SVG_H

#include <stdint.h>
#include <stdio.h>

#include "results/results.h"

/* One run: its epoch rows, by epoch number. */
struct plot_run {
    uint64_t seed;
    const struct results_epoch *epochs;   /* n_epochs */
    int n_epochs;
};

/* One experiment: one colour, one line per run in each panel. */
struct plot_experiment {
    const char *label;                    /* legend text, any UTF-8 (escaped when written) */
    double target;                        /* accuracy drawn dashed; NaN = none */
    const struct plot_run *runs;          /* n_runs */
    int n_runs;
};

struct plot_chart {
    const char *title;                    /* may be NULL */
    const struct plot_experiment *exps;   /* n_exps */
    int n_exps;
};

/* The panels, top to bottom; PLOT_N_PANELS of them. */
enum plot_panel { PLOT_ACC, PLOT_LOSS, PLOT_LR, PLOT_N_PANELS };

/* Writes the chart to f as one SVG document (UTF-8, well-formed XML). Each run gets one
 * <polyline class="run"> per panel in which it has at least one finite value, with
 * data-experiment (index into exps), data-seed and data-panel ("acc", "loss", "lr")
 * attributes; NaN and infinite values (a diverged epoch) are left out of the line. Each
 * distinct target is one <line class="target"> with a stroke-dasharray. Experiments
 * beyond the palette's ten colours reuse them. Write errors are left in ferror(f).
 * Returns DR_OK, or DR_ERR_INTERNAL for a malformed chart (negative counts, NULL
 * arrays with counts). */
int plot_svg_write(FILE *f, const struct plot_chart *c);

#endif

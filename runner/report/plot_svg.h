/* Training curves as a standalone SVG document, written by dawnrun itself: three panels
 * sharing one x axis (epochs, or cumulative train time), top to bottom test accuracy,
 * train loss and learning rate; per experiment one colour and either one line per run
 * (seed) or the median over its runs with the interquartile band; the learning rate per
 * step from the experiment's schedule; a legend whose labels are never cut; each target
 * accuracy as a dashed line on the accuracy panel. Used by `dawnrun plot` and embedded
 * inline by the HTML report.
 *
 * The chart's structs are in plot_chart.h (included here). */
#ifndef DAWNRUN_RUNNER_PLOT_SVG_H
#define DAWNRUN_RUNNER_PLOT_SVG_H

#include <stdio.h>

#include "plot_chart.h"

/* Writes the chart to f as one SVG document (UTF-8, well-formed XML). Each panel is a
 * <g class="panel" id="panel-acc|loss|lr"> with data-x-lo, data-x-hi, data-y-lo and
 * data-y-hi (its axes' ranges) around a <rect class="frame"> (the plotting area), so a
 * reader can map values to user units. Lines carry data-experiment (index into exps) and
 * data-panel ("acc", "loss", "lr"):
 * - PLOT_STYLE_SEEDS: one <polyline class="run" data-seed=...> per run and panel in which
 *   it has at least one finite value;
 * - PLOT_STYLE_MEDIAN: one <polyline class="median" data-runs=N> per experiment and panel
 *   with a finite value (N: its runs with epoch rows) and a <polygon class="band"> (upper
 *   quartile left to right, then lower quartile back) under it;
 * - an experiment with n_lr > 0 has one <polyline class="schedule"> in the LR panel
 *   instead of run or median lines there (on the time axis: up to its last epoch with a
 *   time, each epoch's steps spread evenly over the median train time of that epoch).
 * NaN and infinite values (a diverged epoch) are left out of the lines. Each distinct
 * target is one <line class="target"> with a stroke-dasharray. The legend has one
 * <text class="label" data-experiment=...> per experiment whose <tspan> lines, joined,
 * are the label followed by " (N runs)".
 * Under the curves, when some run has a final accuracy (has_final), the strip of final
 * accuracies: <g class="panel" id="panel-final"> (data-x-lo/hi its accuracy axis in %),
 * one row per experiment (<g class="strip" data-experiment=... data-reach="k/n">), one
 * <circle class="final" data-experiment data-seed data-acc> per such run (data-acc the
 * fraction, with a <title> "seed S: A %"), the experiment's target as a <line
 * class="strip-target"> across its row and "k/n >= T %" (runs at or above it, of those
 * drawn) at the row's end. Experiments beyond the palette's ten colours
 * reuse them. Write errors are left in ferror(f). Returns DR_OK, DR_ERR_NOMEM, or
 * DR_ERR_INTERNAL for a malformed chart (negative counts, NULL arrays with counts, an
 * unknown style or axis). */
int plot_svg_write(FILE *f, const struct plot_chart *c);

#endif

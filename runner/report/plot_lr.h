/* The learning-rate curve of an experiment for the plot's LR panel: the value the trainer
 * uses at every step, rebuilt from the experiment's stored resolved config (its params),
 * through the engine's own step count (experiment_steps) and per-step rule
 * (train_step_hparams), so it is the number the lr column of the epoch rows records. */
#ifndef DAWNRUN_RUNNER_PLOT_LR_H
#define DAWNRUN_RUNNER_PLOT_LR_H

#include "engine/core/experiment.h"

/* The schedule's value s at each step, as points (epoch[i], lr[i]) ascending: step j of
 * epoch k (0-based, n_k steps in that epoch, the last epoch possibly partial) sits at
 * k + (j + 1) / n_k, the end of the step, so the last step of epoch k + 1 lands on k + 1
 * with the value that epoch's row records. s is the number the lr column holds and the
 * one a mean loss is stepped with; with train.loss = "sum" the step applies s / batch to
 * the summed gradient, the same update. The points are the steps that begin or end an
 * epoch and the two steps either side of each knot: the values between two consecutive
 * points are linear in the step, so the polyline through them passes through every
 * step's value exactly, the warm-up included, with a few points per epoch.
 * Returns DR_OK with *n = 0 (nothing allocated) when the params do not describe a
 * schedule (train.epochs, train.batch_size, train.lr_schedule.knots/values missing or
 * malformed, or a batch larger than the images), DR_OK with the points (malloc'd, free
 * both), or DR_ERR_NOMEM. */
int plot_lr_from_params(double **epoch, double **lr, int *n, const struct param_list *params);

#endif

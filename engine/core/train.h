/* The training loop of one run: Page's recipe (engine/core/experiment.h) on one backend,
 * epoch by epoch. trainer_run is the only epoch loop: `dawnrun train` and the scheduler
 * of `dawnrun run` both drive it, through hooks. The caller owns printing, recording and
 * checkpoints: it gets each epoch's record and the run's progress through a callback, is
 * asked after each epoch to checkpoint, and may ask the loop to stop between steps. */
#ifndef DAWNRUN_TRAIN_H
#define DAWNRUN_TRAIN_H

#include <stdint.h>

#include "kernels/backend.h"
#include "data.h"
#include "experiment.h"
#include "graph.h"
#include "model.h"
#include "run_plan.h"

struct epoch_record {
    int epoch;            /* 1-based */
    double lr;            /* schedule value (before the 1/batch scaling) at the epoch's last step */
    double train_loss;    /* mean per-example loss over the epoch's training batches */
    double train_acc;
    double test_loss, test_acc;
    double train_time;    /* seconds of training in this epoch (no evaluation) */
    double test_time;
    double total_time;    /* cumulative training + evaluation time since the run began */
};

/* How far a run has got: what a checkpoint keeps besides the tensors, and what the run's
 * record ends with. */
struct train_progress {
    int epoch;              /* epochs finished (the next one to train, 0-based) */
    double train_time;      /* cumulative seconds of training, evaluation excluded */
    double total_time;      /* cumulative seconds of training and evaluation */
    double target_time;     /* train_time when the target was first reached, -1 never */
    int target_epoch;       /* epoch (1-based) when first reached, -1 never */
    double last_test_acc;   /* test accuracy and loss after epoch `epoch` (NaN before) */
    double last_test_loss;
};

/* The progress of a run that has not begun. */
void train_progress_start(struct train_progress *p);

/* Counts one more finished epoch into p: epoch (1-based) with its seconds of training
 * and of evaluation (a NaN counts as 0) and its test accuracy and loss. The first epoch
 * whose test accuracy reaches `target` (>=; a NaN accuracy or target never does) sets
 * target_epoch to `epoch` and target_time to the training seconds up to and including
 * it. This is the one definition of time-to-target: the training loop keeps it as a run
 * goes, and the report applies it to a run's stored epoch rows (for another target). */
void train_progress_epoch(struct train_progress *p, int epoch, double train_time,
                          double test_time, double test_acc, double test_loss, double target);

#define TRAIN_TTA_MAX_VIEWS 6

struct trainer;

/* What the caller of trainer_run does around the loop. Every member may be NULL. */
struct train_hooks {
    /* called after each epoch's evaluation, with its record (total_time filled) and the
     * progress including it; also for an epoch that diverged (the last). A non-zero
     * return stops the run with it (after a diverged epoch the run ends diverged). */
    int (*on_epoch)(void *user, const struct epoch_record *r, const struct train_progress *p);
    /* called after on_epoch returned DR_OK for an epoch that did not diverge, so that the
     * caller may write a checkpoint of t at p (p->epoch == t->plan.epochs after the last
     * one); a non-zero return stops the run with it */
    int (*checkpoint)(void *user, const struct trainer *t, const struct train_progress *p);
    /* called after each step (step within the epoch, 1-based) */
    void (*on_step)(void *user, int epoch, int step, int steps);
    /* polled between steps; non-zero stops the run with DR_ERR_INTERRUPTED */
    int (*should_stop)(void *user);
    void *user;
};

/* A run in progress: model, datasets on the backend, the step counter, and the plans of
 * a training step and of an evaluation batch with the per-step state they read from
 * backend memory (cursors, rows, the learning-rate table). */
struct trainer {
    const struct experiment *e;
    const struct graph *g;
    struct backend *be;
    struct model model;
    struct tensor images, image_labels;        /* training set on the backend */
    struct tensor test_images, test_labels;
    struct tensor perm_rows;                   /* I32 (train_count): the epoch's permutation,
                                                  written once per epoch */
    struct tensor test_rows;                   /* I32 (test_count): 0..test_count-1 */
    struct tensor cursor;                      /* I32 (PLAN_CURSOR_LEN): the training
                                                  step's {global step, epoch, batch} */
    struct tensor eval_cursor;                 /* I32 (PLAN_CURSOR_LEN): the evaluation's */
    struct tensor lr_table;                    /* F32 (total_steps): the lr of each step */
    struct tensor group_tables[PARAM_KIND_COUNT];   /* F32 (total_steps): the lr of each
                                                  step of groups[i] (train.groups) */
    struct model_opt_group groups[PARAM_KIND_COUNT];  /* the kinds with a group of their own */
    int n_groups;
    struct tensor tta_logits;                  /* ACT like the logits: the weighted sum
                                                  over test-time views (eval.tta only) */
    struct plan step_plan;                     /* one training step */
    struct plan eval_plan, eval_last_plan;     /* a full and the last evaluation batch */
    struct augment_params tta_views[TRAIN_TTA_MAX_VIEWS];
    float tta_weights[TRAIN_TTA_MAX_VIEWS];
    int32_t *perm;                             /* host: the epoch's permutation */
    int epoch_steps;                           /* steps trainer_step may still take in the
                                                  epoch trainer_epoch_begin started */
    struct run_plan plan;                      /* of e on the two data sets */
    long step;                                 /* global steps done */
    uint64_t seed;
};

/* Plans the run (experiment_plan on the data sets' sizes: DR_ERR_CONFIG, with its
 * message, when train has fewer images than a batch), builds the model for e (batch
 * max(train, eval)), uploads both datasets, the test rows and the learning-rate table
 * (train_step_hparams' lr of every global step), initialises parameters from seed
 * (whitening filters from `train`), starts the weight average when train.average asks
 * for one, and builds the step plan and the two evaluation plans. An engine without
 * the plan's ops (augment_step, sgd_multi, cursor_advance; lerp_multi when averaging):
 * DR_ERR_INTERNAL naming the op. */
int trainer_create(struct trainer *t, const struct experiment *e, const struct graph *g,
                   struct backend *be, const struct dataset *train, const struct dataset *test,
                   uint64_t seed);
void trainer_free(struct trainer *t);

/* Starts epoch `epoch` (0-based) of the training plan: the epoch's permutation
 * (shuffle_epoch) written to perm_rows, the cursor written as {t->step, epoch, 0}, and
 * the model's batch size set to the training batch. The only host-to-device writes of
 * an epoch's steps. */
int trainer_epoch_begin(struct trainer *t, int epoch);

/* One training step: the step plan (batch at the cursor, forward, loss, backward, SGD
 * with the learning rate of the cursor's global step, cursor advance), run with
 * plan_compute (model_run_plan: node by node with timings when profiling). Steps
 * beyond the epoch trainer_epoch_begin started: DR_ERR_INTERNAL. It does not count the
 * step or average the weights: trainer_after_step does both. */
int trainer_step(struct trainer *t);

/* Counts a finished step (t->step) and applies train.average: an EMA or Lookahead update
 * when the new count is a multiple of `every`, and Lookahead's final w = avg after the
 * last step of the run. */
int trainer_after_step(struct trainer *t);

/* Trains epoch `epoch` (0-based) and evaluates; fills r. */
int trainer_epoch(struct trainer *t, int epoch, const struct train_hooks *hooks,
                  struct epoch_record *r);

/* Evaluates the test set: mean loss and accuracy, with the averaged weights under an
 * EMA, over the views of eval.tta. */
int trainer_evaluate(struct trainer *t, double *loss, double *acc);

/* The epoch loop: trains epochs p->epoch .. t->plan.epochs - 1 (p from
 * train_progress_start, or from a checkpoint restored into t), counting each finished
 * epoch into p (train_progress_epoch, against e->target_accuracy) and calling hooks as
 * struct train_hooks says. p is left as far as the run got, also on failure; an epoch cut
 * short is not counted. Returns DR_OK, DR_ERR_DIVERGED, DR_ERR_INTERRUPTED, an engine
 * error, or the non-zero return of a hook. */
int trainer_run(struct trainer *t, const struct train_hooks *hooks, struct train_progress *p);

/* The views of test-time augmentation `kind` (engine/core/experiment.h) as fixed augment
 * parameters with their weights, views and weights each of TRAIN_TTA_MAX_VIEWS entries;
 * returns how many. views NULL: only the count. TTA_NONE: 1, and nothing is written (the
 * plain test batch is the one view). */
int train_tta_views(struct augment_params *views, float *weights, enum tta_kind kind);

/* The lr and weight decay actually applied at a global step, with Page's scaling for a
 * summed loss (lr / batch, wd * batch), and the loss-gradient scale. */
void train_step_hparams(const struct experiment *e, long step, int steps_per_epoch, float *lr,
                        float *wd, float *grad_scale, double *sched);

#endif

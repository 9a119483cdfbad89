/* The training loop of one run: Page's recipe (engine/experiment.h) on one backend,
 * epoch by epoch. The caller owns printing and recording: it gets one epoch_record per
 * epoch through a callback, and may ask the loop to stop between steps. */
#ifndef DAWNRUN_TRAIN_H
#define DAWNRUN_TRAIN_H

#include <stdint.h>

#include "../kernels/backend.h"
#include "data.h"
#include "experiment.h"
#include "graph.h"
#include "model.h"

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

struct train_hooks {
    /* called after each epoch's evaluation; a non-zero return stops the run with it */
    int (*on_epoch)(void *user, const struct epoch_record *r);
    /* called after each step (step within the epoch, 1-based) */
    void (*on_step)(void *user, int epoch, int step, int steps);
    /* polled between steps; non-zero stops the run with DR_ERR_INTERRUPTED */
    int (*should_stop)(void *user);
    void *user;
};

struct train_result {
    int epochs_done;
    double final_test_acc, final_test_loss;
    double train_time;    /* all epochs, evaluation excluded */
    double total_time;
    double target_time;   /* cumulative train time when target accuracy first reached, -1 never */
    int target_epoch;     /* epoch when it was first reached, -1 never */
};

/* A run in progress: model, datasets on the backend, the step counter. */
struct trainer {
    const struct experiment *e;
    const struct graph *g;
    struct backend *be;
    struct model model;
    struct tensor images, image_labels;        /* training set on the backend */
    struct tensor test_images, test_labels;
    struct tensor rows;                        /* I32 (batch) dataset rows of a step */
    struct tensor tta_logits;                  /* ACT like the logits: the weighted sum
                                                  over test-time views (eval.tta only) */
    int32_t *perm;                             /* host: the epoch's permutation */
    int32_t *test_rows;                        /* host: 0..test_count-1 */
    int train_count, test_count;
    int steps_per_epoch;
    long total_steps;                          /* round(epochs * steps_per_epoch) */
    int n_epochs;                              /* ceil(total_steps / steps_per_epoch) */
    long step;                                 /* global steps done */
    uint64_t seed;
};

/* Builds the model for e (batch max(train, eval)), uploads both datasets, initialises
 * parameters from seed (whitening filters from `train`), and starts the weight average
 * when train.average asks for one. */
int trainer_create(struct trainer *t, const struct experiment *e, const struct graph *g,
                   struct backend *be, const struct dataset *train, const struct dataset *test,
                   uint64_t seed);
void trainer_free(struct trainer *t);

/* One training step on the given dataset rows (train.batch_size of them) of `epoch`:
 * augment, forward, loss, backward, SGD with the given hyperparameters (times the
 * experiment's per-kind scales). It does not count the step or average the weights:
 * trainer_epoch does both (trainer_after_step). */
int trainer_step(struct trainer *t, int epoch, const int32_t *rows, float lr, float wd,
                 float grad_scale);

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

/* Runs every epoch, calling hooks; fills res (also on failure, as far as it got).
 * Returns DR_OK, DR_ERR_DIVERGED, DR_ERR_INTERRUPTED or an engine error. */
int trainer_run(struct trainer *t, const struct train_hooks *hooks, struct train_result *res);

#define TRAIN_TTA_MAX_VIEWS 6

/* The views of test-time augmentation `kind` (engine/experiment.h) as fixed augment
 * parameters with their weights, views and weights each of TRAIN_TTA_MAX_VIEWS entries;
 * returns how many. views NULL: only the count. TTA_NONE: 1, and nothing is written (the
 * plain test batch is the one view). */
int train_tta_views(struct augment_params *views, float *weights, enum tta_kind kind);

/* The lr and weight decay actually applied at a global step, with Page's scaling for a
 * summed loss (lr / batch, wd * batch), and the loss-gradient scale. */
void train_step_hparams(const struct experiment *e, long step, int steps_per_epoch, float *lr,
                        float *wd, float *grad_scale, double *sched);

#endif

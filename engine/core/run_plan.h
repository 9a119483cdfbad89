/* The plan of a run: how many images it trains and evaluates on, in batches of what
 * size, for how many steps and epochs. One computation, from the experiment and the
 * data set sizes, read by `validate`, `train`, `run` and `bench` and by the trainer. */
#ifndef DAWNRUN_RUN_PLAN_H
#define DAWNRUN_RUN_PLAN_H

#include "experiment.h"

/* A count argument of experiment_plan meaning "the images the config asks for":
 * data.train_subset / data.test_subset, or all of CIFAR-10's when that is 0. */
#define RUN_PLAN_CONFIG_IMAGES (-1)

struct run_plan {
    int batch;             /* train.batch_size: images per training step */
    int eval_batch;        /* eval.batch_size, or batch when that is 0 */
    int train_count;       /* images trained on */
    int test_count;        /* images evaluated after each epoch */
    int steps_per_epoch;   /* full batches of train_count (the rest of an epoch is dropped) */
    long total_steps;      /* round(train.epochs * steps_per_epoch), at least 1 */
    int epochs;            /* ceil(total_steps / steps_per_epoch): the last may be partial */
    int eval_batches;      /* batches of one evaluation: ceil(test_count / eval_batch) */
    int eval_last;         /* images in the last of them (eval_batch when it is full;
                              0 when test_count is 0) */
};

/* The plan of training e on train_count images and evaluating on test_count
 * (RUN_PLAN_CONFIG_IMAGES for either: the images the config asks for); the steps come
 * from experiment_steps. Returns DR_OK, or DR_ERR_CONFIG with one message
 * ("CONFIG: train.batch_size B is larger than the training set (N images)") when the
 * training images do not fill one batch: experiment_load refuses such a config for the
 * images it asks for, so this is a data set smaller than them. out is zeroed first. */
int experiment_plan(struct run_plan *out, const struct experiment *e, int train_count,
                    int test_count);

#endif

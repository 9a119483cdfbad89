/* The facts of a run computed once: experiment_plan (batch sizes, steps, epochs, the
 * images trained and evaluated on, the last partial evaluation batch, the refusal of a
 * batch larger than the training set) and train_progress_epoch (time-to-target on a
 * synthetic epoch list, as the training loop and the report apply it). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "base/status.h"
#include "engine/core/run_plan.h"
#include "engine/core/train.h"

static void experiment_init(struct experiment *e, int batch, int eval_batch, double epochs)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->path, sizeof(e->path), "(plan test)");
    e->train.batch_size = batch;
    e->eval.batch_size = eval_batch;
    e->train.epochs = epochs;
}

static void test_plan(void)
{
    struct experiment e;
    struct run_plan p;

    /* Page's 30-epoch DAWN_net recipe on all of CIFAR-10 */
    experiment_init(&e, 512, 0, 30);
    CHECK(experiment_plan(&p, &e, RUN_PLAN_CONFIG_IMAGES, RUN_PLAN_CONFIG_IMAGES) == DR_OK);
    CHECK(p.batch == 512 && p.eval_batch == 512);
    CHECK(p.train_count == 50000 && p.test_count == 10000);
    CHECK(p.steps_per_epoch == 97 && p.total_steps == 2910 && p.epochs == 30);
    CHECK(p.eval_batches == 20 && p.eval_last == 10000 - 19 * 512);

    /* a subset, its own eval batch with a last partial batch, fractional epochs */
    experiment_init(&e, 128, 300, 2.5);
    e.data.train_subset = 1280;
    e.data.test_subset = 500;
    CHECK(experiment_plan(&p, &e, RUN_PLAN_CONFIG_IMAGES, RUN_PLAN_CONFIG_IMAGES) == DR_OK);
    CHECK(p.train_count == 1280 && p.test_count == 500);
    CHECK(p.batch == 128 && p.eval_batch == 300);
    CHECK(p.steps_per_epoch == 10 && p.total_steps == 25 && p.epochs == 3);
    CHECK(p.eval_batches == 2 && p.eval_last == 200);

    /* the data sets' own sizes win over the config's */
    CHECK(experiment_plan(&p, &e, 1000, 600) == DR_OK);
    CHECK(p.train_count == 1000 && p.test_count == 600);
    CHECK(p.steps_per_epoch == 7 && p.total_steps == 18 && p.epochs == 3);
    CHECK(p.eval_batches == 2 && p.eval_last == 300);

    /* a run shorter than half a step trains one step in one epoch; a test set that is
     * one exact batch has no partial one; an empty one has none at all */
    experiment_init(&e, 100, 0, 0.01);
    CHECK(experiment_plan(&p, &e, 1000, 100) == DR_OK);
    CHECK(p.steps_per_epoch == 10 && p.total_steps == 1 && p.epochs == 1);
    CHECK(p.eval_batches == 1 && p.eval_last == 100);
    CHECK(experiment_plan(&p, &e, 1000, 0) == DR_OK);
    CHECK(p.eval_batches == 0 && p.eval_last == 0);

    /* a batch larger than the training set: refused (with its message on stderr) */
    experiment_init(&e, 2000, 0, 1);
    CHECK(experiment_plan(&p, &e, 1280, 500) == DR_ERR_CONFIG);
    CHECK(p.steps_per_epoch == 0 && p.total_steps == 0);
    CHECK(experiment_plan(&p, &e, 0, 500) == DR_ERR_CONFIG);
    CHECK(experiment_plan(&p, &e, 2000, 500) == DR_OK && p.steps_per_epoch == 1);
}

static void test_time_to_target(void)
{
    /* epoch, train s, test s, test acc */
    static const double eps[][4] = {
        {1, 10.0, 1.0, 0.50}, {2, 10.0, 1.0, 0.93}, {3, NAN, 1.0, 0.94},
        {4, 12.0, NAN, 0.95}, {5, 10.0, 1.0, 0.90},
    };
    struct train_progress p;
    train_progress_start(&p);
    CHECK(p.epoch == 0 && p.target_epoch == -1 && p.target_time == -1.0);
    CHECK(p.train_time == 0.0 && p.total_time == 0.0 && isnan(p.last_test_acc));
    for (int i = 0; i < 5; i++)
        train_progress_epoch(&p, (int)eps[i][0], eps[i][1], eps[i][2], eps[i][3], 0.25, 0.94);
    /* reached at epoch 3 (>=), its NaN train time counted as 0: 20 s; later epochs above
     * the target do not move it */
    CHECK(p.target_epoch == 3);
    CHECK(p.target_time == 20.0);
    CHECK(p.epoch == 5 && p.train_time == 42.0 && p.total_time == 46.0);
    CHECK(p.last_test_acc == 0.90 && p.last_test_loss == 0.25);

    /* a higher target: reached later, or never */
    train_progress_start(&p);
    for (int i = 0; i < 5; i++)
        train_progress_epoch(&p, (int)eps[i][0], eps[i][1], eps[i][2], eps[i][3], 0.25, 0.95);
    CHECK(p.target_epoch == 4 && p.target_time == 32.0);
    train_progress_start(&p);
    for (int i = 0; i < 5; i++)
        train_progress_epoch(&p, (int)eps[i][0], eps[i][1], eps[i][2], eps[i][3], 0.25, 0.96);
    CHECK(p.target_epoch == -1 && p.target_time == -1.0);
    /* a NaN accuracy or target never reaches */
    train_progress_start(&p);
    train_progress_epoch(&p, 1, 1.0, 1.0, NAN, 0.0, 0.5);
    train_progress_epoch(&p, 2, 1.0, 1.0, 0.9, 0.0, NAN);
    CHECK(p.target_epoch == -1);

    /* resumed progress carries on: epoch numbers are the caller's */
    struct train_progress q = {2, 20.0, 22.0, -1.0, -1, 0.93, 0.3};
    train_progress_epoch(&q, 3, 5.0, 1.0, 0.94, 0.2, 0.94);
    CHECK(q.epoch == 3 && q.target_epoch == 3 && q.target_time == 25.0 && q.total_time == 28.0);
}

int main(void)
{
    test_plan();
    test_time_to_target();
    return check_finish("run_plan");
}

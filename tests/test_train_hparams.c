/* The per-step hyperparameters of the training loop: Page's scaling for a summed loss
 * (lr = schedule / batch, wd = weight_decay * batch, gradient scale 1) and the plain
 * mean-loss form, with the schedule evaluated at fractional epoch step / steps_per_epoch. */
#include <math.h>
#include <string.h>

#include "check.h"
#include "engine/core/train.h"

int main(void)
{
    struct experiment e;
    memset(&e, 0, sizeof(e));
    e.train.batch_size = 512;
    e.train.weight_decay = 5e-4;
    e.train.loss = LOSS_SUM;
    e.train.lr.count = 3;
    e.train.lr.knots[0] = 0, e.train.lr.knots[1] = 8, e.train.lr.knots[2] = 30;
    e.train.lr.values[0] = 0, e.train.lr.values[1] = 0.4, e.train.lr.values[2] = 0;

    float lr, wd, gs;
    double sched;
    train_step_hparams(&e, 0, 97, &lr, &wd, &gs, &sched);
    CHECK(sched == 0.0 && lr == 0.0f);
    /* step 388 of 97 per epoch = epoch 4.0: halfway up to 0.4 */
    train_step_hparams(&e, 388, 97, &lr, &wd, &gs, &sched);
    CHECK_NEAR(sched, 0.2, 1e-12);
    CHECK(lr == (float)(0.2 / 512));
    CHECK(wd == (float)(5e-4 * 512));
    CHECK(gs == 1.0f);
    /* epoch 19 = halfway down from 0.4 at 8 to 0 at 30 */
    train_step_hparams(&e, 19 * 97, 97, &lr, &wd, &gs, &sched);
    CHECK_NEAR(sched, 0.2, 1e-12);
    /* past the last knot the last value holds */
    train_step_hparams(&e, 40 * 97, 97, &lr, &wd, &gs, &sched);
    CHECK(sched == 0.0);

    e.train.loss = LOSS_MEAN;
    train_step_hparams(&e, 388, 97, &lr, &wd, &gs, &sched);
    CHECK(lr == 0.2f);
    CHECK(wd == 5e-4f);
    CHECK(gs == 1.0f / 512);
    return check_finish("train_hparams");
}

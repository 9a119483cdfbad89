/* The training loop (see train.h): per epoch the permutation and the cursor written
 * once, then one plan run per step (batch, forward, loss, backward, SGD, cursor) and the
 * weight average; evaluation as one plan run per batch, and one epoch_record per epoch. */
#include "train.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "shuffle.h"
#include "base/status.h"

static double train_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void train_step_hparams(const struct experiment *e, long step, int steps_per_epoch, float *lr,
                        float *wd, float *grad_scale, double *sched)
{
    double s = schedule_at(&e->train.lr, (double)step / (double)steps_per_epoch);
    double b = (double)e->train.batch_size;
    if (sched) *sched = s;
    if (e->train.loss == LOSS_SUM) {
        *lr = (float)(s / b);
        *wd = (float)(e->train.weight_decay * b);
        *grad_scale = 1.0f;
    } else {
        *lr = (float)s;
        *wd = (float)e->train.weight_decay;
        *grad_scale = (float)(1.0 / b);
    }
}

static int upload_dataset(struct trainer *t, struct tensor *img, struct tensor *lab,
                          const struct dataset *d)
{
    int rc = DR_OK;
    const struct backend_ops *ops = t->be->ops;
    *img = (struct tensor){NULL, TENSOR_U8, d->count, 3, 32, 32};
    *lab = (struct tensor){NULL, TENSOR_U8, d->count, 1, 1, 1};
    TRY(ops->tensor_alloc(t->be->ctx, img));
    TRY(ops->tensor_alloc(t->be->ctx, lab));
    TRY(ops->tensor_write(t->be->ctx, img, d->images));
    TRY(ops->tensor_write(t->be->ctx, lab, d->labels));
cleanup:
    return rc;
}

/* An I32 or F32 tensor of count values on the backend, written from host. */
static int upload_vector(struct trainer *t, struct tensor *out, enum tensor_kind kind, int count,
                         const void *host)
{
    int rc = DR_OK;
    *out = (struct tensor){NULL, kind, count, 1, 1, 1};
    TRY(t->be->ops->tensor_alloc(t->be->ctx, out));
    if (host) TRY(t->be->ops->tensor_write(t->be->ctx, out, host));
cleanup:
    return rc;
}

/* The learning rate of every global step (train_step_hparams' lr, the floats the step
 * applies), written once into t->lr_table. */
static int upload_lr_table(struct trainer *t)
{
    int rc = DR_OK;
    long steps = t->plan.total_steps;
    float *lr = malloc((size_t)steps * sizeof(float));
    CHECK_ALLOC(lr, "the learning-rate table");
    for (long s = 0; s < steps; s++) {
        float wd, gscale;
        train_step_hparams(t->e, s, t->plan.steps_per_epoch, &lr[s], &wd, &gscale, NULL);
    }
    EXPECT(steps <= INT32_MAX, "a run of %ld steps", steps);
    TRY(upload_vector(t, &t->lr_table, TENSOR_F32, (int)steps, lr));
cleanup:
    free(lr);
    return rc;
}

/* Every kind with a group of its own (train.groups) as a model_opt_group with its own
 * learning-rate table: the group's schedule (or train's) at each step, divided by the
 * batch size for an SGD group with the summed loss as train_step_hparams does, as it is
 * for a Muon group. */
static int upload_groups(struct trainer *t)
{
    int rc = DR_OK;
    const struct experiment *e = t->e;
    const long steps = t->plan.total_steps;
    float *lr = malloc((size_t)steps * sizeof(float));
    CHECK_ALLOC(lr, "a parameter group's learning-rate table");
    EXPECT(steps <= INT32_MAX, "a run of %ld steps", steps);
    for (int k = 0; k < PARAM_KIND_COUNT; k++) {
        const struct param_group *pg = &e->train.groups[k];
        if (!pg->own) continue;
        const int muon = pg->optimizer == OPTIMIZER_MUON;
        const struct schedule *sched = pg->lr.count > 0 ? &pg->lr : &e->train.lr;
        const double per = e->train.loss == LOSS_SUM && !muon ? (double)e->train.batch_size : 1.0;
        for (long s = 0; s < steps; s++)
            lr[s] = (float)(schedule_at(sched, (double)s / (double)t->plan.steps_per_epoch) / per);
        struct model_opt_group *gr = &t->groups[t->n_groups];
        TRY(upload_vector(t, &t->group_tables[t->n_groups], TENSOR_F32, (int)steps, lr));
        *gr = (struct model_opt_group){1u << k, muon, &t->group_tables[t->n_groups],
                                       (float)pg->momentum, pg->nesterov, muon_ns_default()};
        gr->ns.steps = e->train.muon.ns_steps;
        gr->ns.a = (float)e->train.muon.ns_coefficients[0];
        gr->ns.b = (float)e->train.muon.ns_coefficients[1];
        gr->ns.c = (float)e->train.muon.ns_coefficients[2];
        gr->ns.eps = (float)e->train.muon.ns_eps;
        gr->ns.normalize = e->train.muon.normalize;
        t->n_groups++;
    }
cleanup:
    free(lr);
    return rc;
}

/* The training step's plan and the evaluation's two (a full and the last batch). */
static int build_plans(struct trainer *t)
{
    int rc = DR_OK;
    const struct experiment *e = t->e;
    float lr, wd, gscale;
    train_step_hparams(e, 0, t->plan.steps_per_epoch, &lr, &wd, &gscale, NULL);
    struct model_batch_src train = {&t->images, &t->image_labels, &t->perm_rows, &t->cursor,
                                    t->plan.batch, t->seed};
    struct model_step_opts o = {&e->augment,
                                (float)e->train.label_smoothing,
                                gscale,
                                wd,
                                (float)e->train.momentum,
                                e->train.nesterov,
                                e->train.lr_scale,
                                e->train.wd_scale,
                                &t->lr_table,
                                t->groups,
                                t->n_groups};
    TRY(model_plan_train(&t->step_plan, &t->model, &train, &o));
    struct model_batch_src test = {&t->test_images, &t->test_labels, &t->test_rows,
                                   &t->eval_cursor, t->plan.eval_batch, t->seed};
    int nviews = e->eval.tta == TTA_NONE ? 0 : train_tta_views(t->tta_views, t->tta_weights,
                                                                e->eval.tta);
    TRY(model_plan_eval(&t->eval_plan, &t->model, &test, t->tta_views, t->tta_weights, nviews,
                        &t->tta_logits));
    TRY(model_plan_eval(&t->eval_last_plan, &t->model, &test, t->tta_views, t->tta_weights,
                        nviews, &t->tta_logits));
cleanup:
    return rc;
}

int trainer_create(struct trainer *t, const struct experiment *e, const struct graph *g,
                   struct backend *be, const struct dataset *train, const struct dataset *test,
                   uint64_t seed)
{
    int rc = DR_OK;
    int32_t *test_rows = NULL;
    memset(t, 0, sizeof(*t));
    t->e = e;
    t->g = g;
    t->be = be;
    t->seed = seed;
    TRY(experiment_plan(&t->plan, e, train->count, test->count));
    int batch = t->plan.batch, eval_batch = t->plan.eval_batch;

    TRY(model_create(&t->model, g, be, batch > eval_batch ? batch : eval_batch));
    TRY(model_init_params(&t->model, seed));
    TRY(model_init_whiten(&t->model, train));
    if (e->train.average.kind != AVERAGE_NONE) TRY(model_average_start(&t->model));
    if (e->eval.tta != TTA_NONE) {
        const struct layer *out = &g->layers[g->output];
        t->tta_logits = (struct tensor){NULL, TENSOR_ACT, eval_batch, out->c, out->h, out->w};
        TRY(be->ops->tensor_alloc(be->ctx, &t->tta_logits));
    }
    TRY(upload_dataset(t, &t->images, &t->image_labels, train));
    TRY(upload_dataset(t, &t->test_images, &t->test_labels, test));
    t->perm = malloc((size_t)t->plan.train_count * sizeof(int32_t));
    CHECK_ALLOC(t->perm, "the epoch permutation");
    TRY(upload_vector(t, &t->perm_rows, TENSOR_I32, t->plan.train_count, NULL));
    int test_count = test->count > 0 ? test->count : 1;
    test_rows = malloc((size_t)test_count * sizeof(int32_t));
    CHECK_ALLOC(test_rows, "the test row list");
    for (int i = 0; i < test_count; i++) test_rows[i] = i;
    TRY(upload_vector(t, &t->test_rows, TENSOR_I32, test_count, test_rows));
    TRY(upload_vector(t, &t->cursor, TENSOR_I32, PLAN_CURSOR_LEN, NULL));
    TRY(upload_vector(t, &t->eval_cursor, TENSOR_I32, PLAN_CURSOR_LEN, NULL));
    TRY(upload_lr_table(t));
    TRY(upload_groups(t));
    TRY(build_plans(t));
cleanup:
    free(test_rows);
    if (rc != DR_OK) trainer_free(t);
    return rc;
}

void trainer_free(struct trainer *t)
{
    if (!t->be) return;
    const struct backend_ops *ops = t->be->ops;
    struct tensor *ts[] = {&t->images,     &t->image_labels, &t->test_images, &t->test_labels,
                           &t->perm_rows,  &t->test_rows,    &t->cursor,      &t->eval_cursor,
                           &t->lr_table,   &t->tta_logits};
    for (size_t i = 0; i < sizeof(ts) / sizeof(ts[0]); i++)
        if (ts[i]->data) ops->tensor_free(t->be->ctx, ts[i]);
    for (int i = 0; i < PARAM_KIND_COUNT; i++)
        if (t->group_tables[i].data) ops->tensor_free(t->be->ctx, &t->group_tables[i]);
    plan_free(&t->step_plan);
    plan_free(&t->eval_plan);
    plan_free(&t->eval_last_plan);
    model_free(&t->model);
    free(t->perm);
    memset(t, 0, sizeof(*t));
}

/* Reads and clears the (summed loss, correct) accumulators. */
static int take_stats(struct trainer *t, double *loss_sum, double *correct)
{
    int rc = DR_OK;
    float s[2];
    TRY(t->be->ops->tensor_read(t->be->ctx, s, &t->model.stats));
    TRY(t->be->ops->tensor_zero(t->be->ctx, &t->model.stats));
    *loss_sum = s[0];
    *correct = s[1];
cleanup:
    return rc;
}

int train_tta_views(struct augment_params *views, float *weights, enum tta_kind kind)
{
    static const int shift[3][2] = {{0, 0}, {-1, -1}, {1, 1}};
    if (kind == TTA_NONE) return 1;
    int nshift = kind == TTA_FLIP_TRANSLATE ? 3 : 1, n = 0;
    if (!views) return 2 * nshift;
    for (int s = 0; s < nshift; s++)
        for (int f = 0; f < 2; f++) {
            views[n] = (struct augment_params){0};
            views[n].pad = 1;
            views[n].pad_mode = PAD_REFLECT;
            views[n].view = 1;
            views[n].view_dx = shift[s][0];
            views[n].view_dy = shift[s][1];
            views[n].view_flip = f;
            weights[n] = kind == TTA_FLIP ? 0.5f : s == 0 ? 0.25f : 0.125f;
            n++;
        }
    return n;
}

int trainer_evaluate(struct trainer *t, double *loss, double *acc)
{
    int rc = DR_OK;
    struct model *m = &t->model;
    const struct backend_ops *ops = t->be->ops;
    const struct run_plan *plan = &t->plan;
    const int32_t start[PLAN_CURSOR_LEN] = {0};
    int swapped = 0;
    double ls = 0, cs = 0;
    if (t->e->train.average.kind == AVERAGE_EMA) {
        model_average_swap(m);
        swapped = 1;
    }
    TRY(ops->tensor_zero(t->be->ctx, &m->stats));
    TRY(ops->tensor_write(t->be->ctx, &t->eval_cursor, start));
    for (int b = 0; b < plan->eval_batches; b++) {
        int last = b == plan->eval_batches - 1;
        int n = last ? plan->eval_last : plan->eval_batch;
        TRY(model_set_batch(m, n));
        t->tta_logits.n = n;
        /* the last batch has a plan of its own when it is smaller, so that each plan
         * always runs on the same sizes */
        TRY(model_run_plan(m, last && n != plan->eval_batch ? &t->eval_last_plan : &t->eval_plan));
    }
    TRY(take_stats(t, &ls, &cs));
    *loss = plan->test_count ? ls / plan->test_count : 0.0;
    *acc = plan->test_count ? cs / plan->test_count : 0.0;
cleanup:
    if (swapped) model_average_swap(m);
    return rc;
}

int trainer_epoch_begin(struct trainer *t, int epoch)
{
    int rc = DR_OK;
    const struct backend_ops *ops = t->be->ops;
    EXPECT(t->step >= 0 && t->step <= INT32_MAX, "global step %ld", t->step);
    int32_t cursor[PLAN_CURSOR_LEN] = {0};
    cursor[CURSOR_STEP] = (int32_t)t->step;
    cursor[CURSOR_EPOCH] = epoch;
    cursor[CURSOR_INDEX] = 0;
    shuffle_epoch(t->perm, t->plan.train_count, t->seed, epoch);
    TRY(ops->tensor_write(t->be->ctx, &t->perm_rows, t->perm));
    TRY(ops->tensor_write(t->be->ctx, &t->cursor, cursor));
    TRY(model_set_batch(&t->model, t->plan.batch));
    t->epoch_steps = t->plan.steps_per_epoch;
cleanup:
    return rc;
}

int trainer_step(struct trainer *t)
{
    int rc = DR_OK;
    EXPECT(t->epoch_steps > 0, "a training step outside an epoch's batches");
    TRY(model_set_batch(&t->model, t->plan.batch));   /* an evaluation may have changed it */
    TRY(model_run_plan(&t->model, &t->step_plan));
    t->epoch_steps--;
cleanup:
    return rc;
}

int trainer_after_step(struct trainer *t)
{
    const struct experiment *e = t->e;
    int every = e->train.average.every > 0 ? e->train.average.every : 1;
    t->step++;
    if (e->train.average.kind == AVERAGE_NONE) return DR_OK;
    if (t->step % every == 0) {
        double rho;
        if (e->train.average.kind == AVERAGE_EMA) {
            rho = pow(e->train.average.momentum, every);
        } else {
            double frac = (double)t->step / (double)t->plan.total_steps;
            rho = pow(e->train.average.decay, every) * frac * frac * frac;
        }
        int rc = model_average_update(&t->model, (float)(1.0 - rho),
                                      e->train.average.kind == AVERAGE_LOOKAHEAD);
        if (rc != DR_OK) return rc;
    }
    if (e->train.average.kind == AVERAGE_LOOKAHEAD && t->step == t->plan.total_steps)
        return model_average_update(&t->model, 0.0f, 1);
    return DR_OK;
}

int trainer_epoch(struct trainer *t, int epoch, const struct train_hooks *hooks,
                  struct epoch_record *r)
{
    int rc = DR_OK;
    const struct experiment *e = t->e;
    struct model *m = &t->model;
    const struct backend_ops *ops = t->be->ops;
    void *ctx = t->be->ctx;
    int batch = t->plan.batch;
    long first = (long)epoch * t->plan.steps_per_epoch;
    long last = first + t->plan.steps_per_epoch;
    if (last > t->plan.total_steps) last = t->plan.total_steps;
    int steps = (int)(last - first);
    double sched = 0.0, ls = 0, cs = 0;

    memset(r, 0, sizeof(*r));
    r->epoch = epoch + 1;
    double t0 = train_now();
    TRY(trainer_epoch_begin(t, epoch));
    TRY(ops->tensor_zero(ctx, &m->stats));
    for (int s = 0; s < steps; s++) {
        if (hooks && hooks->should_stop && hooks->should_stop(hooks->user))
            FAIL(DR_ERR_INTERRUPTED, "stopped by a signal at epoch %d step %d", epoch + 1, s + 1);
        TRY(trainer_step(t));
        TRY(trainer_after_step(t));
        if (hooks && hooks->on_step) hooks->on_step(hooks->user, epoch + 1, s + 1, steps);
    }
    if (steps > 0) {   /* the schedule's value at the epoch's last step */
        float lr, wd, gscale;
        train_step_hparams(e, t->step - 1, t->plan.steps_per_epoch, &lr, &wd, &gscale, &sched);
    }
    TRY(take_stats(t, &ls, &cs));
    TRY(ops->synchronize(ctx));
    r->train_time = train_now() - t0;
    r->lr = sched;
    r->train_loss = ls / ((double)steps * batch);
    r->train_acc = cs / ((double)steps * batch);
    double t1 = train_now();
    TRY(trainer_evaluate(t, &r->test_loss, &r->test_acc));
    r->test_time = train_now() - t1;
    if (!isfinite(r->train_loss) || !isfinite(r->test_loss)) rc = DR_ERR_DIVERGED;
cleanup:
    return rc;
}

void train_progress_start(struct train_progress *p)
{
    *p = (struct train_progress){0, 0.0, 0.0, -1.0, -1, NAN, NAN};
}

void train_progress_epoch(struct train_progress *p, int epoch, double train_time,
                          double test_time, double test_acc, double test_loss, double target)
{
    double train = isnan(train_time) ? 0.0 : train_time;
    double test = isnan(test_time) ? 0.0 : test_time;
    p->epoch = epoch;
    p->train_time += train;
    p->total_time += train + test;
    p->last_test_acc = test_acc;
    p->last_test_loss = test_loss;
    if (p->target_epoch < 0 && test_acc >= target) {
        p->target_epoch = epoch;
        p->target_time = p->train_time;
    }
}

int trainer_run(struct trainer *t, const struct train_hooks *hooks, struct train_progress *p)
{
    int rc = DR_OK;
    static const struct train_hooks none = {0};
    if (!hooks) hooks = &none;
    for (int ep = p->epoch; ep < t->plan.epochs; ep++) {
        struct epoch_record r;
        rc = trainer_epoch(t, ep, hooks, &r);
        if (rc != DR_OK && rc != DR_ERR_DIVERGED) break;
        train_progress_epoch(p, ep + 1, r.train_time, r.test_time, r.test_acc, r.test_loss,
                             t->e->target_accuracy);
        r.total_time = p->total_time;
        int hook_rc = hooks->on_epoch ? hooks->on_epoch(hooks->user, &r, p) : DR_OK;
        if (rc == DR_ERR_DIVERGED) break;
        if (hook_rc == DR_OK && hooks->checkpoint) hook_rc = hooks->checkpoint(hooks->user, t, p);
        if (hook_rc != DR_OK) {
            rc = hook_rc;
            break;
        }
    }
    return rc;
}

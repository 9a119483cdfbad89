/* The selfcheck's data and training cases: the augmentation (group augment: the GPU batch
 * against the CPU batch for a seed, bit for bit in fp32, within one rounding to the half
 * type otherwise; labels equal), and short training runs from the same initial weights
 * on both engines, each step one run of the trainer's step plan (group train: 10 steps
 * of a small network with every layer type of the shipped configs, then an evaluation;
 * group toolbox: 10 steps of a network with the speed-training options, a dropout and a
 * temperature, stepping with trainer_after_step so that Lookahead acts, then an
 * evaluation with 6 test-time views). The per-step losses and the test loss must
 * track within the tolerance. Each augmentation case runs a BATCH node alone
 * (kernels/plan.h): augment with the cursor at the first batch of its rows, augment_step
 * (group augment too) with the cursor at a batch past the first and a stride longer than
 * the batch. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/rng.h"
#include "engine/core/data.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "selfcheck_case.h"
#include "engine/core/shuffle.h"
#include "engine/core/train.h"

#define TRAIN_STEPS 10
#define TRAIN_BATCH 32
#define TRAIN_IMAGES (TRAIN_STEPS * TRAIN_BATCH)
#define TOOLBOX_STEPS 10               /* the speed-training options' run */
#define PREACT_STEPS 6                 /* the pre-activation network's run */
#define TEST_IMAGES 100
#define EVAL_BATCH 64                  /* 100 = 64 + 36: the last batch is partial */

/* A dataset of count images whose class shows (a bright band in one channel at a
 * class-dependent height) under uniform noise, so that a small network learns it. */
static int learnable_dataset(struct dataset *d, int count, uint32_t salt)
{
    d->count = count;
    d->images = malloc((size_t)count * CIFAR10_IMAGE_BYTES);
    d->labels = malloc((size_t)count);
    if (!d->images || !d->labels) return DR_ERR_NOMEM;
    for (int i = 0; i < count; i++) {
        struct rng4 r = rng_draw(salt, SC_RNG_STREAM, 2, (uint32_t)i, 0);
        int label = (int)rng_below(r.v[0], CIFAR10_CLASSES);
        d->labels[i] = (uint8_t)label;
        uint8_t *img = d->images + (size_t)i * CIFAR10_IMAGE_BYTES;
        for (int j = 0; j < CIFAR10_IMAGE_BYTES; j += 4) {
            struct rng4 q = rng_draw(salt, SC_RNG_STREAM, 3, (uint32_t)i, (uint32_t)j);
            for (int b = 0; b < 4; b++) img[j + b] = (uint8_t)(q.v[b] >> 25);   /* 0..127 */
        }
        for (int y = 3 * label; y < 3 * label + 3; y++)
            for (int x = 0; x < 32; x++) img[(label % 3) * 1024 + y * 32 + x] += 128;
    }
    return DR_OK;
}

/* ------------------------------------------------------------------ augmentation */

struct augment_row {
    const char *name;
    int test;                   /* 1: the test batch (normalise only), params unused */
    struct augment_params params;
    int epoch;
};

static const struct augment_row AUGMENT_ROWS[] = {
    {"pad4_reflect_crop_flip_cut8_e0", 0, {4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0}, 0},
    {"pad4_reflect_crop_flip_cut8_e7", 0, {4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0}, 7},
    {"pad16_zero_crop_flip_cut5_e3", 0, {16, PAD_ZERO, 1, 1, 5, 0, 0, 0, 0, 0}, 3},
    {"centre_noflip_e1", 0, {4, PAD_REFLECT, 0, 0, 0, 0, 0, 0, 0, 0}, 1},
    {"pad2_crop_altflip_e3", 0, {2, PAD_REFLECT, 1, 1, 0, 1, 0, 0, 0, 0}, 3},
    {"view+1+1_mirrored_e0", 0, {1, PAD_REFLECT, 1, 1, 8, 0, 1, 1, 1, 1}, 0},
    {"view-1-1_e0", 0, {1, PAD_REFLECT, 1, 1, 8, 0, 1, -1, -1, 0}, 0},
    {"test_batch", 1, {0}, 0},
};

#define AUG_IMAGES 200
#define AUG_CAP 64
#define AUG_N 50

/* images SC_S0 (AUG_IMAGES), their labels SC_S1, rows SC_S2 (rows_cap entries of which
 * the first rows_n hold the epoch's permutation); the batch SC_Y and its labels SC_Y2 of
 * AUG_N images */
static int augment_inputs(struct sc_env *e, const struct augment_row *a, int rows_cap,
                          int rows_n)
{
    int rc = DR_OK;
    struct dataset d = {0};
    int32_t *perm = NULL;
    TRY(learnable_dataset(&d, AUG_IMAGES, 5));
    TRY(sc_tensor(e, SC_S0, "images", TENSOR_U8, d.count, 3, 32, 32));
    TRY(sc_tensor(e, SC_S1, "image_labels", TENSOR_U8, d.count, 1, 1, 1));
    TRY(sc_tensor(e, SC_S2, "rows", TENSOR_I32, rows_cap, 1, 1, 1));
    TRY(sc_tensor(e, SC_Y, "x", TENSOR_ACT, AUG_CAP, 3, 32, 32));
    TRY(sc_tensor(e, SC_Y2, "labels", TENSOR_I32, AUG_CAP, 1, 1, 1));
    sc_set_n(e, SC_S2, rows_n);
    sc_set_n(e, SC_Y, AUG_N);
    sc_set_n(e, SC_Y2, AUG_N);
    TRY(sc_write_raw(e, SC_S0, d.images));
    TRY(sc_write_raw(e, SC_S1, d.labels));
    perm = malloc(sizeof(int32_t) * (size_t)d.count);
    CHECK_ALLOC(perm, "the selfcheck permutation");
    shuffle_epoch(perm, d.count, 99, a->epoch);
    TRY(sc_write_raw(e, SC_S2, perm));
cleanup:
    free(perm);
    dataset_free(&d);
    return rc;
}

/* A BATCH node alone: the batch SC_Y, SC_Y2 from the images SC_S0, SC_S1 and the rows
 * SC_S2 at the cursor SC_S3, batch i's rows at i * stride. */
static int batch_run(struct sc_side *t, const struct augment_row *a, int stride)
{
    const union plan_params p = {.batch = {a->test ? NULL : &a->params, stride, 1234567}};
    return plan_run_op(t->be, PLAN_BATCH, PLAN_DSTS(SC_T(t, SC_Y), SC_T(t, SC_Y2)),
                       PLAN_SRCS(SC_T(t, SC_S0), SC_T(t, SC_S1), SC_T(t, SC_S2), SC_T(t, SC_S3)),
                       0, &p);
}

/* the cursor SC_S3 at batch index, in the row's epoch */
static int augment_cursor(struct sc_env *e, const struct augment_row *a, int index)
{
    int rc = DR_OK;
    const int32_t cursor[PLAN_CURSOR_LEN] = {17, a->epoch, index, 0};
    TRY(sc_tensor(e, SC_S3, "cursor", TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1));
    TRY(sc_write_raw(e, SC_S3, cursor));
cleanup:
    return rc;
}

/* the batch's rows are the permutation's first AUG_N: batch 0 of stride AUG_N */
static int augment_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    TRY(augment_inputs(e, c->attr, AUG_CAP, AUG_N));
    TRY(augment_cursor(e, c->attr, 0));
cleanup:
    return rc;
}

static int augment_run(struct sc_side *t, const struct sc_case *c)
{
    return batch_run(t, c->attr, AUG_N);
}

/* augment_step: the epoch's whole permutation (AUG_IMAGES rows) and a cursor at batch
 * STEP_INDEX of STEP_STRIDE rows (more than the batch of AUG_N), so that the batch is
 * rows[STEP_INDEX * STEP_STRIDE ..] and the epoch the cursor's. */
#define STEP_STRIDE 60
#define STEP_INDEX 2

/* as augment_build, with rows SC_S2 of AUG_IMAGES and the cursor SC_S3 at STEP_INDEX */
static int augment_step_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    TRY(augment_inputs(e, c->attr, AUG_IMAGES, AUG_IMAGES));
    TRY(augment_cursor(e, c->attr, STEP_INDEX));
cleanup:
    return rc;
}

static int augment_step_run(struct sc_side *t, const struct sc_case *c)
{
    return batch_run(t, c->attr, STEP_STRIDE);
}

/* The augmentation rows augment_step is checked with (indices of AUGMENT_ROWS). */
static const int AUGMENT_STEP_ROWS[] = {1, 2, 7};

/* A small network with every layer type of the shipped configs: conv-bn-relu blocks, max
 * pools, residual adds (one folded into the batch norm before it, one standalone whose sum
 * enters a batch norm, as in a pre-activation block), a CELU, a batch norm between two
 * convolutions, max and average pools concatenated, flatten, a linear layer with bias and
 * a fixed scale. */
static int small_net(struct net_spec *spec)
{
    struct layer_spec *l;
    int ok = 1;
#define ADD(name, type, in1, in2) ok = ok && (l = sc_layer(spec, name, type, in1, in2)) != NULL
    ADD("prep", LAYER_CONV, "", "");
    if (ok) l->out = 16;
    ADD("prep_bn", LAYER_BN, "", "");
    ADD("prep_relu", LAYER_RELU, "", "");
    ADD("pool1", LAYER_MAXPOOL, "", "");
    if (ok) l->k = l->stride = 2;
    ADD("conv2", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("bn2", LAYER_BN, "", "");
    ADD("act2", LAYER_CELU, "", "");
    if (ok) l->alpha = 0.3f;
    ADD("res", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("res_bn", LAYER_BN, "", "");
    ADD("res_relu", LAYER_RELU, "", "");
    ADD("add", LAYER_ADD, "act2", "res_relu");   /* folded into res_bn's pass */
    ADD("sum", LAYER_ADD, "add", "act2");        /* an add of its own ... */
    ADD("sum_bn", LAYER_BN, "", "");             /* ... that takes this batch norm's statistics */
    ADD("sum_relu", LAYER_RELU, "", "");
    ADD("pool2", LAYER_MAXPOOL, "", "");
    if (ok) l->k = l->stride = 2;
    ADD("mid", LAYER_CONV, "", "");              /* conv-bn-relu-conv: the batch norm */
    if (ok) {                                    /* inside the convolutions */
        l->out = 16;
        l->k = 1;
    }
    ADD("mid_bn", LAYER_BN, "", "");
    ADD("mid_relu", LAYER_RELU, "", "");
    ADD("mid2", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("down", LAYER_CONV, "", "");
    if (ok) {
        l->out = 64;
        l->stride = 2;
        l->bias = 1;
    }
    ADD("gmax", LAYER_GMAXPOOL, "down", "");
    ADD("gavg", LAYER_AVGPOOL, "down", "");
    if (ok) l->k = l->stride = 4;
    ADD("cat", LAYER_CONCAT, "gmax", "gavg");
    ADD("flat", LAYER_FLATTEN, "", "");
    ADD("linear", LAYER_LINEAR, "", "");
    if (ok) {
        l->out = 10;
        l->bias = 1;
    }
    ADD("logits", LAYER_SCALE, "", "");
    if (ok) l->scale = 0.125f;
#undef ADD
    return ok ? DR_OK : DR_ERR_NOMEM;
}

/* A pre-activation network for the batch norm inside and around the convolutions: a
 * conv-bn-relu stem and pool, a batch norm between two convolutions, then one whose relu
 * only two convolutions read (a pre-activation block's branch and 1x1 shortcut; the
 * convolution between the two batch norms reads one's apply and sums for the other),
 * their sum into a batch norm, two blocks with identity shortcuts (each batch norm's relu
 * read by a convolution and the block's add; the first add's sum into the next batch
 * norm, the second's into the pool), a global max pool, a linear layer and a fixed
 * scale.
 * Trained gently (preact_experiment), so that the engines' rounding differences stay
 * small. */
static int preact_net(struct net_spec *spec)
{
    struct layer_spec *l;
    int ok = 1;
#define ADD(name, type, in1, in2) ok = ok && (l = sc_layer(spec, name, type, in1, in2)) != NULL
    ADD("stem", LAYER_CONV, "", "");
    if (ok) l->out = 16;
    ADD("stem_bn", LAYER_BN, "", "");
    ADD("stem_relu", LAYER_RELU, "", "");
    ADD("pool", LAYER_MAXPOOL, "", "");
    if (ok) l->k = l->stride = 2;
    ADD("c1", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("bn1", LAYER_BN, "", "");                /* inside c1 and c2 */
    ADD("relu1", LAYER_RELU, "", "");
    ADD("c2", LAYER_CONV, "", "");               /* bn1's apply in, bn2's sums out */
    if (ok) l->out = 32;
    ADD("bn2", LAYER_BN, "", "");                /* its relu read by c3 and sc only */
    ADD("relu2", LAYER_RELU, "", "");
    ADD("c3", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("sc", LAYER_CONV, "relu2", "");
    if (ok) {
        l->out = 32;
        l->k = 1;
    }
    ADD("join", LAYER_ADD, "c3", "sc");
    ADD("join_bn", LAYER_BN, "", "");            /* its relu read by c4 and id1 only */
    ADD("join_relu", LAYER_RELU, "", "");
    ADD("c4", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("id1", LAYER_ADD, "join_relu", "c4");    /* recomputes join_relu, sums for id_bn */
    ADD("id_bn", LAYER_BN, "", "");
    ADD("id_relu", LAYER_RELU, "", "");
    ADD("c5", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("id2", LAYER_ADD, "c5", "id_relu");      /* recomputes id_relu, the sum alone */
    ADD("gmax", LAYER_GMAXPOOL, "", "");
    ADD("flat", LAYER_FLATTEN, "", "");
    ADD("linear", LAYER_LINEAR, "", "");
    if (ok) {
        l->out = 10;
        l->bias = 1;
    }
    ADD("logits", LAYER_SCALE, "", "");
    if (ok) l->scale = 0.125f;
#undef ADD
    return ok ? DR_OK : DR_ERR_NOMEM;
}

/* The speed-training options on one network: a 2x2 whitening layer with its negations
 * and a bias, GELU, dirac-started convs, ghost batch norm (4 parts) with frozen scales,
 * CELU, a global max pool, a dropout before a bias-free linear layer with airbench's 1/9
 * scale (its mask drawn from each step's cursor, the identity in evaluation), and a
 * trained temperature of the logits (starting at 1.5). It pools early to stay cheap under
 * the emulated CUDA runtime. */
static int toolbox_net(struct net_spec *spec)
{
    struct layer_spec *l;
    int ok = 1;
#define ADD(name, type) ok = ok && (l = sc_layer(spec, name, type, "", "")) != NULL
    ADD("whiten", LAYER_WHITEN);
    if (ok) {
        l->k = 2;
        l->pad = 0;
        l->eps = 5e-4f;
        l->negate = 1;
        l->bias = 1;
        l->bias_epochs = 1;
        l->whiten_images = TRAIN_IMAGES;
    }
    ADD("act0", LAYER_GELU);
    ADD("pool0", LAYER_MAXPOOL);
    if (ok) l->k = l->stride = 2;
    ADD("conv1", LAYER_CONV);
    if (ok) {
        l->out = 32;
        l->dirac = 1;
    }
    ADD("pool1", LAYER_MAXPOOL);
    if (ok) l->k = l->stride = 2;
    ADD("bn1", LAYER_BN);
    if (ok) {
        l->splits = 4;
        l->freeze_weight = 1;
        l->eps = 1e-12f;
        l->momentum = 0.4f;
    }
    ADD("act1", LAYER_CELU);
    if (ok) l->alpha = 0.3f;
    ADD("conv2", LAYER_CONV);
    if (ok) {
        l->out = 32;
        l->dirac = 1;
    }
    ADD("bn2", LAYER_BN);
    if (ok) l->splits = 4;
    ADD("act2", LAYER_GELU);
    ADD("gmax", LAYER_GMAXPOOL);
    ADD("flat", LAYER_FLATTEN);
    ADD("drop", LAYER_DROPOUT);
    if (ok) l->p = 0.25f;
    ADD("linear", LAYER_LINEAR);
    if (ok) {
        l->out = 10;
        l->bias = 0;
    }
    ADD("logits", LAYER_SCALE);
    if (ok) l->scale = 1.0f / 9.0f;
    ADD("temp", LAYER_TEMPERATURE);
    if (ok) l->init = 1.5f;
#undef ADD
    return ok ? DR_OK : DR_ERR_NOMEM;
}

static void small_experiment(struct experiment *e, int precision)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "selfcheck");
    snprintf(e->path, sizeof(e->path), "(selfcheck network)");
    e->train.epochs = 1.0;
    e->train.batch_size = TRAIN_BATCH;
    e->train.lr.count = 2;
    e->train.lr.knots[0] = 0.0;
    e->train.lr.knots[1] = 1.0;
    e->train.lr.values[0] = 0.2;
    e->train.lr.values[1] = 0.2;
    e->train.momentum = 0.9;
    e->train.nesterov = 1;
    e->train.weight_decay = 5e-4;
    e->train.loss = LOSS_SUM;
    e->train.label_smoothing = 0.2;
    e->train.precision = (enum precision)precision;
    e->augment = (struct augment_params){4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0};
    e->eval.batch_size = EVAL_BATCH;
    e->seeds = 1;
    for (int k = 0; k < PARAM_KIND_COUNT; k++) e->train.lr_scale[k] = e->train.wd_scale[k] = 1.0;
}

/* The toolbox run's options: airbench's translate and alternating flip, BN shifts at
 * lr x 64 and wd / 64, the temperature at lr / 4 without weight decay, Lookahead every 2
 * steps, and 6-view test-time augmentation. */
static void toolbox_experiment(struct experiment *e, int precision)
{
    small_experiment(e, precision);
    e->train.momentum = 0.85;
    e->augment = (struct augment_params){2, PAD_REFLECT, 1, 1, 0, 1, 0, 0, 0, 0};
    e->train.lr_scale[PARAM_BN_B] = 64.0;
    e->train.wd_scale[PARAM_BN_B] = 1.0 / 64.0;
    e->train.lr_scale[PARAM_TEMPERATURE] = 0.25;
    e->train.wd_scale[PARAM_TEMPERATURE] = 0.0;
    e->train.average.kind = AVERAGE_LOOKAHEAD;
    e->train.average.every = 2;
    e->train.average.decay = 0.95;
    e->eval.tta = TTA_FLIP_TRANSLATE;
}

/* The pre-activation network's run: the small network's options at a tenth of its
 * learning rate. */
static void preact_experiment(struct experiment *e, int precision)
{
    small_experiment(e, precision);
    e->train.lr.values[0] = e->train.lr.values[1] = 0.02;
}

/* The training runs (sc_case.arg). */
enum { RUN_SMALL, RUN_TOOLBOX, RUN_PREACT, RUN_COUNT };

static int run_steps(int kind)
{
    return kind == RUN_TOOLBOX ? TOOLBOX_STEPS : kind == RUN_PREACT ? PREACT_STEPS : TRAIN_STEPS;
}

/* Summed loss and correct count accumulated by a trainer's model, then cleared. */
static int take_loss(struct trainer *t, double *loss)
{
    int rc = DR_OK;
    float st[2];
    TRY(t->be->ops->tensor_read(t->be->ctx, st, &t->model.stats));
    TRY(t->be->ops->tensor_zero(t->be->ctx, &t->model.stats));
    *loss = st[0];
cleanup:
    return rc;
}

/* A training run's network and graph (kind: RUN_SMALL the small network, RUN_TOOLBOX the
 * speed-training options, RUN_PREACT the pre-activation network), and one engine's trainer
 * of it on the selfcheck's datasets, at epoch 0's permutation of seed 42, step 0. */
struct train_fixture {
    struct net_spec spec;
    struct graph g;
    struct experiment e;
    struct dataset train, test;
    struct trainer tr;
    char err[512];
};

/* Fills f's network and graph for kind in precision (f zeroed by the caller). */
static int fixture_graph(struct train_fixture *f, int kind, int precision)
{
    int rc = DR_OK;
    if (kind == RUN_TOOLBOX) {
        toolbox_experiment(&f->e, precision);
        TRY(toolbox_net(&f->spec));
    } else if (kind == RUN_PREACT) {
        preact_experiment(&f->e, precision);
        TRY(preact_net(&f->spec));
    } else {
        small_experiment(&f->e, precision);
        TRY(small_net(&f->spec));
    }
    TRY(graph_build(&f->g, &f->spec, 3, 32, 32, f->err, sizeof(f->err)));
cleanup:
    return rc;
}

/* Fills f (zeroed by the caller) for kind on engine side t: graph, datasets, trainer. */
static int fixture_open(struct train_fixture *f, struct sc_side *t, int kind)
{
    int rc = DR_OK;
    TRY(fixture_graph(f, kind, t->precision));
    TRY(learnable_dataset(&f->train, TRAIN_IMAGES, 11));
    TRY(learnable_dataset(&f->test, TEST_IMAGES, 12));
    TRY(trainer_create(&f->tr, &f->e, &f->g, t->be, &f->train, &f->test, 42));
    TRY(trainer_epoch_begin(&f->tr, 0));   /* epoch 0's permutation of seed 42, step 0 */
cleanup:
    return rc;
}

/* Frees what f holds, first saying a config error's text when rc is one. */
static void fixture_close(struct train_fixture *f, int rc)
{
    if (rc == DR_ERR_CONFIG && f->err[0]) dr_eprintf("%s\n", f->err);
    trainer_free(&f->tr);
    dataset_free(&f->train);
    dataset_free(&f->test);
    graph_free(&f->g);
    net_spec_free(&f->spec);
}

/* The training run of c (c->arg: its kind, struct train_fixture) on one engine: the mean
 * loss of each step into host slot SC_S0, the test loss and accuracy after it into SC_S1
 * and SC_S2. */
static int train_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    const int steps = run_steps(c->arg);
    struct train_fixture f = {0};
    double loss, acc;
    TRY(fixture_open(&f, t, c->arg));
    for (int step = 0; step < steps; step++) {
        TRY(trainer_step(&f.tr));
        TRY(trainer_after_step(&f.tr));   /* counts the step; the toolbox's Lookahead */
        TRY(take_loss(&f.tr, &loss));
        t->host[SC_S0][step] = (float)(loss / TRAIN_BATCH);
    }
    TRY(trainer_evaluate(&f.tr, &loss, &acc));
    t->host[SC_S1][0] = (float)loss;
    t->host[SC_S2][0] = (float)acc;
cleanup:
    fixture_close(&f, rc);
    return rc;
}

static int train_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    TRY(sc_host(e, SC_S0, "loss", run_steps(c->arg)));
    TRY(sc_host(e, SC_S1, "test_loss", 1));
    TRY(sc_host(e, SC_S2, "test_acc", 1));   /* shown, not compared */
cleanup:
    return rc;
}

/* The pre-activation network's first training step on one engine (every fused path of
 * its blocks, and their shortcuts inside the convolutions, at work): the step's logits
 * into host slot SC_Y and every parameter's gradient, concatenated in parameter order,
 * into SC_DW. Its loss alone (train_run) hardly moves with the network's inner values, so
 * this case compares those values themselves. */
static int preact_step_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    struct train_fixture f = {0};
    size_t at = 0;
    (void)c;
    TRY(fixture_open(&f, t, RUN_PREACT));
    TRY(trainer_step(&f.tr));
    TRY(t->be->ops->tensor_read(t->be->ctx, t->host[SC_Y], &f.tr.model.y[f.g.output]));
    for (int i = 0; i < f.g.n_params; i++) {
        const struct tensor *dp = &f.tr.model.dp[i];
        EXPECT(at + tensor_count(dp) <= t->host_n[SC_DW], "selfcheck: %zu gradient values, "
               "%zu expected", at + tensor_count(dp), t->host_n[SC_DW]);
        TRY(t->be->ops->tensor_read(t->be->ctx, t->host[SC_DW] + at, dp));
        at += tensor_count(dp);
    }
    EXPECT(at == t->host_n[SC_DW], "selfcheck: %zu gradient values, %zu expected", at,
           t->host_n[SC_DW]);
cleanup:
    fixture_close(&f, rc);
    return rc;
}

/* The host slots of preact_step_run: the logits (batch x classes) and the gradients. */
static int preact_step_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    struct train_fixture f = {0};
    size_t grads = 0;
    (void)c;
    TRY(fixture_graph(&f, RUN_PREACT, 0));
    for (int i = 0; i < f.g.n_params; i++)
        grads += (size_t)f.g.params[i].n * f.g.params[i].c * f.g.params[i].h * f.g.params[i].w;
    TRY(sc_host(e, SC_Y, "logits", (size_t)TRAIN_BATCH * f.g.layers[f.g.output].c));
    TRY(sc_host(e, SC_DW, "dparams", grads));
cleanup:
    fixture_close(&f, rc);
    return rc;
}

/* Largest relative difference of the per-step training loss and of the test loss. Half
 * precisions train on rounded weights and activations, and training amplifies
 * differences: a host emulation of the engine's kernels saw 3e-3 and 4e-3 at worst in
 * fp16 and bf16 (1e-7 in fp32). */
#define TRAIN_TOL {2e-3, 2e-2, 5e-2}
/* The pre-activation network's first step, its logits and gradients against the largest
 * of each (SC_MAX_REL): fp32 sums in other orders, the half types' storage roundings. A
 * host emulation of the engine saw 4e-7 in fp32, 6e-2 in fp16 with every node run alone
 * and 9e-2 with the fused graphs, 0.14 in bf16; a shortcut's operand or gradient dropped
 * inside the fused graphs gave 0.77 and 0.82 in fp16. */
#define PREACT_STEP_TOL {1e-5, 0.25, 0.4}
/* The augmentation: fp32 exact, the half types within one rounding of the CPU value. */
#define AUGMENT_TOL {0.0, 1.0 / 2048.0, 1.0 / 256.0}

int sc_cases_train(struct sc_table *t)
{
    int rc = DR_OK;
    for (size_t i = 0; i < sizeof(AUGMENT_ROWS) / sizeof(AUGMENT_ROWS[0]); i++) {
        struct sc_case c = {.group = "augment", .build = augment_build, .run = augment_run,
                            .metric = SC_ELEM_REL, .tol = AUGMENT_TOL, .attr = &AUGMENT_ROWS[i],
                            .n_outputs = 2, .outputs = {SC_Y, SC_Y2}};
        sc_name(&c, "augment", "%s", AUGMENT_ROWS[i].name);
        TRY(sc_table_add(t, &c));
    }
    for (size_t i = 0; i < sizeof(AUGMENT_STEP_ROWS) / sizeof(AUGMENT_STEP_ROWS[0]); i++) {
        const struct augment_row *a = &AUGMENT_ROWS[AUGMENT_STEP_ROWS[i]];
        struct sc_case c = {.group = "augment", .build = augment_step_build,
                            .run = augment_step_run, .metric = SC_ELEM_REL, .tol = AUGMENT_TOL,
                            .attr = a, .n_outputs = 2, .outputs = {SC_Y, SC_Y2}};
        sc_name(&c, "augment_step", "%s_b%d_s%d", a->name, STEP_INDEX, STEP_STRIDE);
        TRY(sc_table_add(t, &c));
    }
    for (int kind = 0; kind < RUN_COUNT; kind++) {
        const int toolbox = kind == RUN_TOOLBOX;
        struct sc_case c = {.group = toolbox ? "toolbox" : "train", .build = train_build,
                            .run = train_run, .metric = SC_ELEM_REL, .tol = TRAIN_TOL,
                            .show = 1, .arg = kind, .n_outputs = 2,
                            .outputs = {SC_S0, SC_S1}};
        if (toolbox) sc_name(&c, "toolbox", "speed_options_%dsteps_b%d", TOOLBOX_STEPS, TRAIN_BATCH);
        else if (kind == RUN_PREACT)
            sc_name(&c, "train", "preact_net_%dsteps_b%d", PREACT_STEPS, TRAIN_BATCH);
        else sc_name(&c, "train", "small_net_%dsteps_b%d", TRAIN_STEPS, TRAIN_BATCH);
        TRY(sc_table_add(t, &c));
    }
    {
        struct sc_case c = {.group = "train", .build = preact_step_build, .run = preact_step_run,
                            .metric = SC_MAX_REL, .tol = PREACT_STEP_TOL, .n_outputs = 2,
                            .outputs = {SC_Y, SC_DW}};
        sc_name(&c, "train", "preact_net_step1_b%d", TRAIN_BATCH);
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

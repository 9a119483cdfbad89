/* The selfcheck's cases of our own kernels (group ops): batch norm (plain and ghost, a
 * large mean), the fused batch norm with a ReLU and a residual add, a max pool or the
 * add before it (kernels/plan.h, PLAN_FUSED_OPS: each engine runs it fused where it
 * supports it, else as its decomposition), every activation kind, max and average pools
 * (ties, global, overlapping windows), concat, add, scale, scaled copy, flatten, the
 * cross-entropy loss, dropout and temperature, each forward, backward and backward
 * accumulating where the op has them. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "selfcheck_case.h"

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ batch norm */

struct bn_shape {
    int n, c, hw;
    float offset;               /* the inputs' mean */
    int splits;                 /* ghost batch norm: statistics over each of that many parts */
};

static const struct bn_shape BN_SHAPES[] = {
    {16, 64, 32, 0.0f, 0},
    {32, 256, 4, 30.0f, 0},     /* large mean */
    {16, 64, 32, 0.0f, 4},      /* ghost */
    {32, 256, 4, 30.0f, 16},
};

/* slots: S0 save_mean, S1 save_invstd, S2 running_mean, S3 running_var */
static int bn_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct bn_shape *s = c->attr;
    const int parts = s->splits > 1 ? s->splits : 1;
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DY, "dy", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DX, "dx", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_W, "gamma", TENSOR_PARAM, s->c, 1, 1, 1));
    TRY(sc_tensor(e, SC_B, "beta", TENSOR_PARAM, s->c, 1, 1, 1));
    TRY(sc_tensor(e, SC_DW, "dgamma", TENSOR_PARAM, s->c, 1, 1, 1));
    TRY(sc_tensor(e, SC_DB, "dbeta", TENSOR_PARAM, s->c, 1, 1, 1));
    TRY(sc_tensor(e, SC_S0, "mean", TENSOR_F32, parts * s->c, 1, 1, 1));
    TRY(sc_tensor(e, SC_S1, "invstd", TENSOR_F32, parts * s->c, 1, 1, 1));
    TRY(sc_tensor(e, SC_S2, "rmean", TENSOR_F32, s->c, 1, 1, 1));
    TRY(sc_tensor(e, SC_S3, "rvar", TENSOR_F32, s->c, 1, 1, 1));
    TRY(sc_random(e, SC_X, s->offset - 2.0f, s->offset + 2.0f));
    TRY(sc_random(e, SC_W, 0.5f, 1.5f));
    TRY(sc_random(e, SC_B, -0.5f, 0.5f));
    TRY(sc_random(e, SC_S2, -0.5f, 0.5f));
    TRY(sc_random(e, SC_S3, 0.5f, 2.0f));
    TRY(sc_random(e, SC_DY, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DX, -1.0f, 1.0f));
cleanup:
    return rc;
}

static int bn_forward_train_run(struct sc_side *t, const struct sc_case *c)
{
    const struct bn_shape *s = c->attr;
    const union plan_params a = {.bn = {1e-5f, 0.1f, s->splits}};
    return plan_run_op(t->be, PLAN_BN_FWD_TRAIN,
                       PLAN_DSTS(SC_T(t, SC_Y), SC_T(t, SC_S0), SC_T(t, SC_S1), SC_T(t, SC_S2),
                                 SC_T(t, SC_S3)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_W), SC_T(t, SC_B)), 0, &a);
}

static int bn_forward_eval_run(struct sc_side *t, const struct sc_case *c)
{
    const struct bn_shape *s = c->attr;
    const union plan_params a = {.bn = {1e-5f, 0.1f, s->splits}};
    return plan_run_op(t->be, PLAN_BN_FWD_EVAL, PLAN_DSTS(SC_T(t, SC_Y)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_W), SC_T(t, SC_B), SC_T(t, SC_S2),
                                 SC_T(t, SC_S3)),
                       0, &a);
}

/* the saved statistics from each engine's own forward pass, then the backward */
static int bn_backward_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    TRY(bn_forward_train_run(t, c));
    TRY(plan_run_op(t->be, PLAN_BN_BWD, PLAN_DSTS(SC_T(t, SC_DX), SC_T(t, SC_DW), SC_T(t, SC_DB)),
                    PLAN_SRCS(SC_T(t, SC_DY), SC_T(t, SC_X), SC_T(t, SC_W), SC_T(t, SC_S0),
                              SC_T(t, SC_S1)),
                    (unsigned)c->acc, NULL));
cleanup:
    return rc;
}

/* The variant part of a batch-norm case's name: the shape, the mean, the ghost parts. */
static void bn_variant(char *v, size_t size, const struct bn_shape *s)
{
    snprintf(v, size, "%dx%dx%dx%d_mean%.0f", s->n, s->c, s->hw, s->hw, s->offset);
    if (s->splits > 1) snprintf(v + strlen(v), size - strlen(v), "_ghost%d", s->splits);
}

static int add_bn(struct sc_table *t, const struct bn_shape *s)
{
    int rc = DR_OK;
    char v[48];
    bn_variant(v, sizeof(v), s);
    struct sc_case c = {.group = "ops", .build = bn_build, .metric = SC_MAX_REL,
                        .tol = SC_TOL_OP, .attr = s};
    sc_name(&c, "bn_forward_train", "%s", v);
    c.run = bn_forward_train_run;
    c.n_outputs = 5;
    memcpy(c.outputs, (int[]){SC_Y, SC_S0, SC_S1, SC_S2, SC_S3}, 5 * sizeof(int));
    TRY(sc_table_add(t, &c));
    sc_name(&c, "bn_forward_eval", "%s", v);
    c.run = bn_forward_eval_run;
    c.n_outputs = 1;
    c.outputs[0] = SC_Y;
    TRY(sc_table_add(t, &c));
    sc_name(&c, "bn_backward", "%s", v);
    c.run = bn_backward_run;
    c.n_outputs = 3;
    memcpy(c.outputs, (int[]){SC_DX, SC_DW, SC_DB}, 3 * sizeof(int));
    TRY(sc_table_add(t, &c));
    sc_name(&c, "bn_backward_acc", "%s", v);
    c.acc = 1;
    c.n_outputs = 1;
    c.outputs[0] = SC_DX;
    TRY(sc_table_add(t, &c));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ fused batch norm */

/* The fused batch norm cases' variants (sc_case.arg bits): the max pool after the
 * activation (2 x 2 windows), the add before the batch norm. */
enum { BNA_POOL = 1, BNA_ADD_IN = 2 };

/* The pool cases' max pool: 2 x 2 windows tiling the plane. */
static const struct pool_attr BNA_POOL_2X2 = {POOL_MAX, 2, 2, 2, 2};

/* bn_build's slots, and: X2 the residual, Y2 the ReLU's output, DX2 the add's output, S4
 * the kept coefficients (the engine's own layout: not compared), S5 the ReLU's dx */
static int bn_act_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct bn_shape *s = c->attr;
    const int parts = s->splits > 1 ? s->splits : 1;
    TRY(bn_build(e, c));
    TRY(sc_tensor(e, SC_X2, "residual", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_Y2, "act", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DX2, "sum", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_S4, "coef", TENSOR_F32, PLAN_BN_COEF_PER_CHANNEL * parts * s->c, 1, 1,
                  1));
    TRY(sc_tensor(e, SC_S5, "dact", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_random(e, SC_X2, -1.0f, 1.0f));
cleanup:
    return rc;
}

/* x for the pool cases: each 2 x 2 window holds a whole number near the shape's mean plus
 * 0.25 times a permutation of 0 .. 3, exact in every precision, so that after the batch
 * norm (the same increasing map on a channel) each window's maximum is one element,
 * far from the others, on both engines. */
static int pool_window_x(struct sc_env *e, const struct bn_shape *s)
{
    int rc = DR_OK;
    const int hw = s->hw, half = hw / 2;
    const size_t planes = (size_t)s->n * s->c, windows = planes * half * half;
    float *x = malloc(sizeof(float) * planes * hw * hw);
    float *u = malloc(sizeof(float) * 2 * windows);
    if (!x || !u) FAIL(DR_ERR_NOMEM, "out of memory for the pool case's input");
    sc_uniform(e, u, 2 * windows, 0.0f, 1.0f);
    for (size_t w = 0; w < windows; w++) {
        const size_t plane = w / ((size_t)half * half), at = w % ((size_t)half * half);
        const int wy = (int)(at / (size_t)half), wx = (int)(at % (size_t)half);
        const float base = floorf(s->offset) - 2.0f + floorf(u[2 * w] * 4.0f);
        int left[4] = {0, 1, 2, 3}, code = (int)(u[2 * w + 1] * 24.0f) % 24;
        for (int k = 0; k < 4; k++) {   /* the code's permutation, rank by rank */
            const int radix = 4 - k, pick = code % radix;
            code /= radix;
            const int rank = left[pick];
            left[pick] = left[radix - 1];
            const size_t i = (plane * hw + (size_t)(2 * wy + k / 2)) * hw + 2 * wx + k % 2;
            x[i] = base + 0.25f * (float)rank;
        }
    }
    TRY(sc_write(e, SC_X, x));
cleanup:
    free(x);
    free(u);
    return rc;
}

/* Slot (count values) from centre - 1 to centre + 1 in steps of 1/8: with centre a
 * multiple of 1/8 below 16 in magnitude, the sum of two such slots is exact in every
 * precision, so that the add-before cases compare the batch norm, not the rounding of
 * the sum (in bf16 a mean of 30 alone would cost a relative 0.1 after the batch norm). */
static int eighths_around(struct sc_env *e, int slot, float centre, size_t count)
{
    int rc = DR_OK;
    float *v = malloc(sizeof(float) * count);
    if (!v) FAIL(DR_ERR_NOMEM, "out of memory for the add case's input");
    sc_uniform(e, v, count, 0.0f, 1.0f);
    for (size_t i = 0; i < count; i++) v[i] = centre + floorf(v[i] * 17.0f - 8.0f) / 8.0f;
    TRY(sc_write(e, slot, v));
cleanup:
    free(v);
    return rc;
}

/* bn_act_build's slots, and by the variant: with the pool, S6 its output, S7 its dy, S8
 * its dx (the activation's dy), x as pool_window_x; with the add before, X2 and S6 its
 * operands (eighths_around half the shape's mean each), x their sum. */
static int bn_act_variant_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct bn_shape *s = c->attr;
    TRY(bn_act_build(e, c));
    if (c->arg & BNA_POOL) {
        TRY(sc_tensor(e, SC_S6, "pool", TENSOR_ACT, s->n, s->c, s->hw / 2, s->hw / 2));
        TRY(sc_tensor(e, SC_S7, "dpool_y", TENSOR_ACT, s->n, s->c, s->hw / 2, s->hw / 2));
        TRY(sc_tensor(e, SC_S8, "dpool", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
        TRY(sc_random(e, SC_S7, -1.0f, 1.0f));
        TRY(pool_window_x(e, s));
    }
    if (c->arg & BNA_ADD_IN) {
        const size_t count = (size_t)s->n * s->c * s->hw * s->hw;
        TRY(sc_tensor(e, SC_S6, "add_b", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
        TRY(eighths_around(e, SC_X2, floorf(s->offset * 4.0f) / 8.0f, count));
        TRY(eighths_around(e, SC_S6, floorf(s->offset * 4.0f) / 8.0f, count));
    }
cleanup:
    return rc;
}

/* The fused forward (train: with the coefficients kept; eval: from the running
 * statistics), the residual added when c->acc says so (train; eval always), or the pool
 * or the add before as c->arg says (the fused ops take no accumulate flag: the field
 * picks the variant). The batch norm's output is kept but with the pool. */
static int bn_act_fwd_run(struct sc_side *t, const struct sc_case *c, int train)
{
    struct plan_node n;
    const struct bn_shape *s = c->attr;
    const int pool = c->arg & BNA_POOL, add_in = c->arg & BNA_ADD_IN;
    const int res = !pool && !add_in && (train ? c->acc : 1);
    struct tensor *out = pool ? SC_T(t, SC_S6) : res ? SC_T(t, SC_DX2) : NULL;
    plan_node_init(&n, train ? PLAN_BN_ACT_TRAIN : PLAN_BN_ACT_EVAL);
    if (train)
        plan_node_set_tensors(&n,
                              PLAN_DSTS(SC_T(t, SC_Y), SC_T(t, SC_S0), SC_T(t, SC_S1),
                                        SC_T(t, SC_S2), SC_T(t, SC_S3), SC_T(t, SC_Y2), out,
                                        SC_T(t, SC_S4), add_in ? SC_T(t, SC_X) : NULL),
                              PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_W), SC_T(t, SC_B),
                                        res ? SC_T(t, SC_X2) : NULL, NULL, NULL,
                                        add_in ? SC_T(t, SC_X2) : NULL,
                                        add_in ? SC_T(t, SC_S6) : NULL));
    else
        plan_node_set_tensors(&n,
                              PLAN_DSTS(SC_T(t, SC_Y), NULL, NULL, NULL, NULL, SC_T(t, SC_Y2),
                                        out, NULL, NULL),
                              PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_W), SC_T(t, SC_B),
                                        res ? SC_T(t, SC_X2) : NULL, SC_T(t, SC_S2),
                                        SC_T(t, SC_S3), NULL, NULL));
    n.par.bn_act.bn = (struct bn_attr){1e-5f, 0.1f, s->splits};
    n.par.bn_act.kind = ACT_RELU;
    n.par.bn_act.keep_y = !pool;
    n.par.bn_act.add_in = add_in != 0;
    if (pool) n.par.bn_act.pool = BNA_POOL_2X2;
    return plan_run_one(t->be, &n);
}

static int bn_act_train_run(struct sc_side *t, const struct sc_case *c)
{
    return bn_act_fwd_run(t, c, 1);
}

static int bn_act_eval_run(struct sc_side *t, const struct sc_case *c)
{
    return bn_act_fwd_run(t, c, 0);
}

/* each engine's own fused forward (no residual; the pool as c->arg says), then the fused
 * backward (with the pool: from the pool's dy) */
static int bn_act_bwd_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    struct plan_node n;
    const int pool = c->arg & BNA_POOL;
    const struct sc_case fwd = {.attr = c->attr, .acc = 0, .arg = pool};
    TRY(bn_act_fwd_run(t, &fwd, 1));
    plan_node_init(&n, PLAN_BN_ACT_BWD);
    plan_node_set_tensors(&n,
                          PLAN_DSTS(SC_T(t, SC_DX), SC_T(t, SC_DW), SC_T(t, SC_DB),
                                    SC_T(t, SC_S5), pool ? SC_T(t, SC_S8) : NULL),
                          PLAN_SRCS(SC_T(t, pool ? SC_S7 : SC_DY), SC_T(t, SC_X), SC_T(t, SC_W),
                                    SC_T(t, SC_S0), SC_T(t, SC_S1), SC_T(t, SC_Y),
                                    SC_T(t, SC_S4), pool ? SC_T(t, SC_Y2) : NULL,
                                    pool ? SC_T(t, SC_S6) : NULL));
    n.acc = (unsigned)c->acc;
    n.par.bn_act.kind = ACT_RELU;
    if (pool) n.par.bn_act.pool = BNA_POOL_2X2;
    TRY(plan_run_one(t->be, &n));
cleanup:
    return rc;
}

/* The pool variants (one part, an even plane): the forward in training and evaluation,
 * then the backward. */
static int add_bn_act_pool(struct sc_table *t, struct sc_case *c, const char *v)
{
    int rc = DR_OK;
    c->build = bn_act_variant_build;
    c->arg = BNA_POOL;
    c->acc = 0;
    sc_name(c, "bn_act_train_pool", "%s", v);
    c->run = bn_act_train_run;
    c->n_outputs = 5;
    memcpy(c->outputs, (int[]){SC_S6, SC_S0, SC_S1, SC_S2, SC_S3}, 5 * sizeof(int));
    TRY(sc_table_add(t, c));
    sc_name(c, "bn_act_eval_pool", "%s", v);
    c->run = bn_act_eval_run;
    c->n_outputs = 1;
    TRY(sc_table_add(t, c));
    sc_name(c, "bn_act_bwd_pool", "%s", v);
    c->run = bn_act_bwd_run;
    c->n_outputs = 3;
    memcpy(c->outputs, (int[]){SC_DX, SC_DW, SC_DB}, 3 * sizeof(int));
    TRY(sc_table_add(t, c));
cleanup:
    return rc;
}

static int add_bn_act(struct sc_table *t, const struct bn_shape *s)
{
    int rc = DR_OK;
    char v[48];
    bn_variant(v, sizeof(v), s);
    struct sc_case c = {.group = "ops", .build = bn_act_build, .metric = SC_MAX_REL,
                        .tol = SC_TOL_OP, .attr = s};
    sc_name(&c, "bn_act_train", "%s", v);
    c.run = bn_act_train_run;
    c.n_outputs = 6;
    memcpy(c.outputs, (int[]){SC_Y, SC_Y2, SC_S0, SC_S1, SC_S2, SC_S3}, 6 * sizeof(int));
    TRY(sc_table_add(t, &c));
    sc_name(&c, "bn_act_train_residual", "%s", v);
    c.acc = 1;
    c.outputs[1] = SC_DX2;
    TRY(sc_table_add(t, &c));
    c.acc = 0;
    if (s->splits <= 1) {   /* evaluation has no parts */
        sc_name(&c, "bn_act_eval", "%s", v);
        c.run = bn_act_eval_run;
        c.n_outputs = 2;
        memcpy(c.outputs, (int[]){SC_Y, SC_DX2}, 2 * sizeof(int));
        TRY(sc_table_add(t, &c));
    }
    sc_name(&c, "bn_act_bwd", "%s", v);
    c.run = bn_act_bwd_run;
    c.n_outputs = 3;
    memcpy(c.outputs, (int[]){SC_DX, SC_DW, SC_DB}, 3 * sizeof(int));
    TRY(sc_table_add(t, &c));
    sc_name(&c, "bn_act_bwd_acc", "%s", v);
    c.acc = 1;
    c.n_outputs = 1;
    c.outputs[0] = SC_DX;
    TRY(sc_table_add(t, &c));
    /* the add before the batch norm: its sum, the activation and the statistics */
    sc_name(&c, "bn_act_train_add_in", "%s", v);
    c.build = bn_act_variant_build;
    c.run = bn_act_train_run;
    c.arg = BNA_ADD_IN;
    c.acc = 0;
    c.n_outputs = 6;
    memcpy(c.outputs, (int[]){SC_X, SC_Y2, SC_S0, SC_S1, SC_S2, SC_S3}, 6 * sizeof(int));
    TRY(sc_table_add(t, &c));
    if (s->splits <= 1 && s->hw % 2 == 0) TRY(add_bn_act_pool(t, &c, v));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ activations */

#define ACT_N 8
#define ACT_C 64
#define ACT_HW 16
#define ACT_ALPHA 0.3f          /* celu's alpha; the other kinds do not read it */

static int act_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    (void)c;
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, ACT_N, ACT_C, ACT_HW, ACT_HW));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, ACT_N, ACT_C, ACT_HW, ACT_HW));
    TRY(sc_tensor(e, SC_DY, "dy", TENSOR_ACT, ACT_N, ACT_C, ACT_HW, ACT_HW));
    TRY(sc_tensor(e, SC_DX, "dx", TENSOR_ACT, ACT_N, ACT_C, ACT_HW, ACT_HW));
    TRY(sc_random(e, SC_X, -4.0f, 4.0f));   /* past hardswish's knees at +-3 too */
    TRY(sc_random(e, SC_DY, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DX, -1.0f, 1.0f));
cleanup:
    return rc;
}

static int act_forward_run(struct sc_side *t, const struct sc_case *c)
{
    const union plan_params a = {.act = {(enum act_kind)c->arg, ACT_ALPHA}};
    return plan_run_op(t->be, PLAN_ACT_FWD, PLAN_DSTS(SC_T(t, SC_Y)), PLAN_SRCS(SC_T(t, SC_X)),
                       0, &a);
}

static int act_backward_run(struct sc_side *t, const struct sc_case *c)
{
    const union plan_params a = {.act = {(enum act_kind)c->arg, ACT_ALPHA}};
    return plan_run_op(t->be, PLAN_ACT_BWD, PLAN_DSTS(SC_T(t, SC_DX)),
                       PLAN_SRCS(SC_T(t, SC_DY), SC_T(t, SC_X)), (unsigned)c->acc, &a);
}

/* Every kind of kernels/activation.h, 0 .. ACT_KIND_COUNT - 1. */
static int add_acts(struct sc_table *t)
{
    int rc = DR_OK;
    for (int kind = 0; kind < ACT_KIND_COUNT; kind++) {
        const char *name = act_kind_name((enum act_kind)kind);
        struct sc_case c = {.group = "ops", .build = act_build, .metric = SC_MAX_REL,
                            .tol = SC_TOL_OP, .arg = kind};
        sc_name(&c, "act_forward", "%s_%dx%dx%dx%d", name, ACT_N, ACT_C, ACT_HW, ACT_HW);
        c.run = act_forward_run;
        c.n_outputs = 1;
        c.outputs[0] = SC_Y;
        TRY(sc_table_add(t, &c));
        for (int acc = 0; acc < 2; acc++) {
            sc_name(&c, acc ? "act_backward_acc" : "act_backward", "%s_%dx%dx%dx%d", name, ACT_N,
                    ACT_C, ACT_HW, ACT_HW);
            c.run = act_backward_run;
            c.acc = acc;
            c.outputs[0] = SC_DX;
            TRY(sc_table_add(t, &c));
        }
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ pools */

struct pool_shape {
    enum pool_kind kind;
    int n, c, hw, k, stride;
    int levels;                 /* > 0: inputs take that many distinct values (ties) */
};

static const struct pool_shape POOL_SHAPES[] = {
    {POOL_MAX, 8, 64, 16, 2, 2, 0},
    {POOL_MAX, 8, 64, 16, 2, 2, 3},     /* ties */
    {POOL_MAX, 4, 16, 9, 2, 2, 4},      /* stride = window, an edge no window covers */
    {POOL_AVG, 8, 64, 16, 2, 2, 0},
    {POOL_MAX, 8, 256, 4, 4, 4, 0},     /* global */
    {POOL_AVG, 8, 256, 4, 4, 4, 0},
    {POOL_MAX, 4, 16, 9, 3, 2, 4},      /* overlapping */
    {POOL_AVG, 4, 16, 9, 3, 2, 0},
};

static int pool_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct pool_shape *s = c->attr;
    const int ho = (s->hw - s->k) / s->stride + 1;
    const size_t count = (size_t)s->n * s->c * s->hw * s->hw;
    float *host = NULL;
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DX, "dx", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, s->n, s->c, ho, ho));
    TRY(sc_tensor(e, SC_DY, "dy", TENSOR_ACT, s->n, s->c, ho, ho));
    host = malloc(count * sizeof(float));
    CHECK_ALLOC(host, "selfcheck pool input");
    sc_uniform(e, host, count, -2.0f, 2.0f);
    if (s->levels)
        for (size_t i = 0; i < count; i++) host[i] = floorf((host[i] + 2.0f) * s->levels / 4.0f);
    TRY(sc_write(e, SC_X, host));
    TRY(sc_random(e, SC_DY, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DX, -1.0f, 1.0f));
cleanup:
    free(host);
    return rc;
}

static union plan_params pool_attr_of(const struct pool_shape *s)
{
    return (union plan_params){.pool = {s->kind, s->k, s->k, s->stride, s->stride}};
}

static int pool_forward_run(struct sc_side *t, const struct sc_case *c)
{
    const union plan_params a = pool_attr_of(c->attr);
    return plan_run_op(t->be, PLAN_POOL_FWD, PLAN_DSTS(SC_T(t, SC_Y)), PLAN_SRCS(SC_T(t, SC_X)),
                       0, &a);
}

/* the forward output from each engine's own forward pass, then the backward */
static int pool_backward_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    const union plan_params a = pool_attr_of(c->attr);
    TRY(pool_forward_run(t, c));
    TRY(plan_run_op(t->be, PLAN_POOL_BWD, PLAN_DSTS(SC_T(t, SC_DX)),
                    PLAN_SRCS(SC_T(t, SC_DY), SC_T(t, SC_X), SC_T(t, SC_Y)), (unsigned)c->acc,
                    &a));
cleanup:
    return rc;
}

static int add_pool(struct sc_table *t, const struct pool_shape *s)
{
    int rc = DR_OK;
    char v[48];
    snprintf(v, sizeof(v), "%s_k%ds%d_%dx%dx%dx%d%s", s->kind == POOL_MAX ? "max" : "avg", s->k,
             s->stride, s->n, s->c, s->hw, s->hw, s->levels ? "_ties" : "");
    struct sc_case c = {.group = "ops", .build = pool_build, .metric = SC_MAX_REL,
                        .tol = SC_TOL_OP, .attr = s, .n_outputs = 1};
    sc_name(&c, "pool_forward", "%s", v);
    c.run = pool_forward_run;
    c.outputs[0] = SC_Y;
    TRY(sc_table_add(t, &c));
    for (int acc = 0; acc < 2; acc++) {
        sc_name(&c, acc ? "pool_backward_acc" : "pool_backward", "%s", v);
        c.run = pool_backward_run;
        c.acc = acc;
        c.outputs[0] = SC_DX;
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ concat */

struct concat_shape {
    int n, c0, c1, hw;
    int skip_first;             /* the first input has no gradient */
};

static const struct concat_shape CONCAT_SHAPES[] = {
    {8, 256, 256, 1, 0},
    {4, 16, 48, 8, 1},
};

static int concat_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct concat_shape *s = c->attr;
    TRY(sc_tensor(e, SC_X, "x0", TENSOR_ACT, s->n, s->c0, s->hw, s->hw));
    TRY(sc_tensor(e, SC_X2, "x1", TENSOR_ACT, s->n, s->c1, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DX, "dx0", TENSOR_ACT, s->n, s->c0, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DX2, "dx1+=", TENSOR_ACT, s->n, s->c1, s->hw, s->hw));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, s->n, s->c0 + s->c1, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DY, "dy", TENSOR_ACT, s->n, s->c0 + s->c1, s->hw, s->hw));
    TRY(sc_random(e, SC_X, -1.0f, 1.0f));
    TRY(sc_random(e, SC_X2, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DY, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DX, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DX2, -1.0f, 1.0f));    /* accumulated into */
cleanup:
    return rc;
}

static int concat_forward_run(struct sc_side *t, const struct sc_case *c)
{
    (void)c;
    return plan_run_op(t->be, PLAN_CONCAT_FWD, PLAN_DSTS(SC_T(t, SC_Y)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_X2)), 0, NULL);
}

/* dx0 overwritten (unless skipped), dx1 accumulated */
static int concat_backward_run(struct sc_side *t, const struct sc_case *c)
{
    const struct concat_shape *s = c->attr;
    return plan_run_op(t->be, PLAN_CONCAT_BWD,
                       PLAN_DSTS(s->skip_first ? NULL : SC_T(t, SC_DX), SC_T(t, SC_DX2)),
                       PLAN_SRCS(SC_T(t, SC_DY)), 1u << 1, NULL);
}

static int add_concat(struct sc_table *t, const struct concat_shape *s)
{
    int rc = DR_OK;
    char v[48];
    snprintf(v, sizeof(v), "%d+%d_%dx%dx%d%s", s->c0, s->c1, s->n, s->hw, s->hw,
             s->skip_first ? "_nodx0" : "");
    struct sc_case c = {.group = "ops", .build = concat_build, .metric = SC_MAX_REL,
                        .tol = SC_TOL_OP, .attr = s, .n_outputs = 1};
    sc_name(&c, "concat_forward", "%s", v);
    c.run = concat_forward_run;
    c.outputs[0] = SC_Y;
    TRY(sc_table_add(t, &c));
    sc_name(&c, "concat_backward", "%s", v);
    c.run = concat_backward_run;
    c.n_outputs = 0;
    if (!s->skip_first) c.outputs[c.n_outputs++] = SC_DX;
    c.outputs[c.n_outputs++] = SC_DX2;
    TRY(sc_table_add(t, &c));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ add, scale, flatten */

struct plain_shape {
    int n, c, hw;
};

static const struct plain_shape PLAIN_SHAPES[] = {
    {8, 64, 16},
    {4, 32, 1},
};

/* a, b: SC_X, SC_X2; flattened: SC_S0 (y), SC_S1 (dy) */
static int plain_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct plain_shape *s = c->attr;
    TRY(sc_tensor(e, SC_X, "a", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_X2, "b", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_Y2, "y2", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_S0, "yflat", TENSOR_ACT, s->n, s->c * s->hw * s->hw, 1, 1));
    TRY(sc_tensor(e, SC_S1, "dyflat", TENSOR_ACT, s->n, s->c * s->hw * s->hw, 1, 1));
    TRY(sc_random(e, SC_X, -2.0f, 2.0f));
    TRY(sc_random(e, SC_X2, -2.0f, 2.0f));
    TRY(sc_random(e, SC_Y, -1.0f, 1.0f));
    TRY(sc_random(e, SC_Y2, -1.0f, 1.0f));
    TRY(sc_random(e, SC_S1, -1.0f, 1.0f));
cleanup:
    return rc;
}

static int add_forward_run(struct sc_side *t, const struct sc_case *c)
{
    (void)c;
    return plan_run_op(t->be, PLAN_ADD_FWD, PLAN_DSTS(SC_T(t, SC_Y)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_X2)), 0, NULL);
}

static int scale_forward_run(struct sc_side *t, const struct sc_case *c)
{
    (void)c;
    return plan_run_op(t->be, PLAN_SCALE_FWD, PLAN_DSTS(SC_T(t, SC_Y)), PLAN_SRCS(SC_T(t, SC_X)),
                       0, &(union plan_params){.scale = {0.125f}});
}

/* A SCALED_COPY node alone: slot dx (=|+=) s * slot dy. */
static int scaled_copy(struct sc_side *t, int dx, int dy, float s, unsigned acc)
{
    return plan_run_op(t->be, PLAN_SCALED_COPY, PLAN_DSTS(SC_T(t, dx)), PLAN_SRCS(SC_T(t, dy)),
                       acc, &(union plan_params){.scale = {s}});
}

/* overwriting: y = a (add's backward), y2 = b / 2 (scale's); accumulating: y += a / 4 */
static int scaled_copy_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    if (c->acc) return scaled_copy(t, SC_Y, SC_X, 0.25f, 1);
    TRY(scaled_copy(t, SC_Y, SC_X, 1.0f, 0));
    TRY(scaled_copy(t, SC_Y2, SC_X2, 0.5f, 0));
cleanup:
    return rc;
}

static int flatten_forward_run(struct sc_side *t, const struct sc_case *c)
{
    (void)c;
    return plan_run_op(t->be, PLAN_FLATTEN_FWD, PLAN_DSTS(SC_T(t, SC_S0)),
                       PLAN_SRCS(SC_T(t, SC_X)), 0, NULL);
}

/* y = dyflat unflattened; b += dyflat */
static int flatten_backward_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    (void)c;
    TRY(plan_run_op(t->be, PLAN_FLATTEN_BWD, PLAN_DSTS(SC_T(t, SC_Y)), PLAN_SRCS(SC_T(t, SC_S1)),
                    0, NULL));
    TRY(plan_run_op(t->be, PLAN_FLATTEN_BWD, PLAN_DSTS(SC_T(t, SC_X2)),
                    PLAN_SRCS(SC_T(t, SC_S1)), 1, NULL));
cleanup:
    return rc;
}

static int add_plain(struct sc_table *t, const struct plain_shape *s)
{
    int rc = DR_OK;
    static const struct {
        const char *op;
        sc_run_fn run;
        int acc, outputs[2], n_outputs;
    } OPS[] = {
        {"add_forward", add_forward_run, 0, {SC_Y}, 1},
        {"scale_forward", scale_forward_run, 0, {SC_Y}, 1},
        {"scaled_copy", scaled_copy_run, 0, {SC_Y, SC_Y2}, 2},
        {"scaled_copy_acc", scaled_copy_run, 1, {SC_Y}, 1},
        {"flatten_forward", flatten_forward_run, 0, {SC_S0}, 1},
        {"flatten_backward", flatten_backward_run, 0, {SC_Y, SC_X2}, 2},
    };
    for (size_t i = 0; i < COUNT_OF(OPS); i++) {
        struct sc_case c = {.group = "ops", .build = plain_build, .run = OPS[i].run,
                            .metric = SC_MAX_REL, .tol = SC_TOL_OP, .attr = s, .acc = OPS[i].acc,
                            .n_outputs = OPS[i].n_outputs};
        memcpy(c.outputs, OPS[i].outputs, sizeof(OPS[i].outputs));
        sc_name(&c, OPS[i].op, "%dx%dx%dx%d", s->n, s->c, s->hw, s->hw);
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the loss */

struct xent_shape {
    int n, k;
    float smoothing, scale;
};

static const struct xent_shape XENT_SHAPES[] = {
    {32, 10, 0.0f, 1.0f},
    {32, 10, 0.2f, 1.0f / 32.0f},
};

/* logits SC_X, probs SC_Y, dlogits SC_DX, labels SC_S0, stats SC_S1 */
static int xent_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct xent_shape *s = c->attr;
    int32_t *lab = NULL;
    float *u = NULL;
    const float start[2] = {1.5f, 2.0f};   /* the loss adds to what is there */
    TRY(sc_tensor(e, SC_X, "logits", TENSOR_ACT, s->n, s->k, 1, 1));
    TRY(sc_tensor(e, SC_Y, "probs", TENSOR_ACT, s->n, s->k, 1, 1));
    TRY(sc_tensor(e, SC_DX, "dlogits", TENSOR_ACT, s->n, s->k, 1, 1));
    TRY(sc_tensor(e, SC_S0, "labels", TENSOR_I32, s->n, 1, 1, 1));
    TRY(sc_tensor(e, SC_S1, "stats", TENSOR_F32, 2, 1, 1, 1));
    lab = malloc(sizeof(int32_t) * (size_t)s->n);
    u = malloc(sizeof(float) * (size_t)s->n);
    CHECK_ALLOC(lab, "selfcheck labels");
    CHECK_ALLOC(u, "selfcheck labels");
    sc_uniform(e, u, (size_t)s->n, 0.0f, (float)s->k);
    for (int i = 0; i < s->n; i++) lab[i] = (int32_t)u[i] < s->k ? (int32_t)u[i] : s->k - 1;
    TRY(sc_write_raw(e, SC_S0, lab));
    TRY(sc_write_raw(e, SC_S1, start));
    TRY(sc_random(e, SC_X, -4.0f, 4.0f));
    TRY(sc_random(e, SC_DX, -1.0f, 1.0f));
cleanup:
    free(lab);
    free(u);
    return rc;
}

static int xent_forward_run(struct sc_side *t, const struct sc_case *c)
{
    const struct xent_shape *s = c->attr;
    const union plan_params a = {.xent = {s->smoothing, 0.0f}};
    return plan_run_op(t->be, PLAN_XENT_FWD, PLAN_DSTS(SC_T(t, SC_S1), SC_T(t, SC_Y)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_S0)), 0, &a);
}

/* the probabilities from each engine's own forward pass, then the backward */
static int xent_backward_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct xent_shape *s = c->attr;
    TRY(xent_forward_run(t, c));
    TRY(plan_run_op(t->be, PLAN_XENT_BWD, PLAN_DSTS(SC_T(t, SC_DX)),
                    PLAN_SRCS(SC_T(t, SC_Y), SC_T(t, SC_S0)), 0,
                    &(union plan_params){.xent = {s->smoothing, s->scale}}));
cleanup:
    return rc;
}

static int add_xent(struct sc_table *t, const struct xent_shape *s)
{
    int rc = DR_OK;
    struct sc_case c = {.group = "ops", .build = xent_build, .metric = SC_MAX_REL,
                        .tol = SC_TOL_OP, .attr = s};
    sc_name(&c, "xent_forward", "%dx%d_smooth%.1f_scale%.3g", s->n, s->k, s->smoothing, s->scale);
    c.run = xent_forward_run;
    c.n_outputs = 2;
    c.outputs[0] = SC_Y;
    c.outputs[1] = SC_S1;
    TRY(sc_table_add(t, &c));
    sc_name(&c, "xent_backward", "%dx%d_smooth%.1f_scale%.3g", s->n, s->k, s->smoothing, s->scale);
    c.run = xent_backward_run;
    c.n_outputs = 1;
    c.outputs[0] = SC_DX;
    TRY(sc_table_add(t, &c));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ dropout */

struct dropout_shape {
    int n, c, hw;
    float p;
};

static const struct dropout_shape DROPOUT_SHAPES[] = {
    {8, 64, 16, 0.5f},
    {32, 512, 1, 0.2f},   /* before a classifier: (n, features, 1, 1) */
    {3, 5, 7, 0.1f},      /* planes of 49: no multiple of 4 */
};

/* The cursor of every dropout case: a step with all of its 32 bits in use. */
static const int32_t DROPOUT_CURSOR[PLAN_CURSOR_LEN] = {[CURSOR_STEP] = 123457,
                                                       [CURSOR_EPOCH] = 4, [CURSOR_INDEX] = 9};

/* |v| in [0.25, 2), either sign: no half-precision subnormal, so each output is within
 * one rounding of the reference relative to itself. */
static int dropout_values(struct sc_env *e, int slot, size_t count)
{
    int rc = DR_OK;
    float *v = malloc(sizeof(float) * count), *sign = malloc(sizeof(float) * count);
    CHECK_ALLOC(v, "selfcheck inputs");
    CHECK_ALLOC(sign, "selfcheck inputs");
    sc_uniform(e, v, count, 0.25f, 2.0f);
    sc_uniform(e, sign, count, -1.0f, 1.0f);
    for (size_t i = 0; i < count; i++) v[i] = sign[i] < 0.0f ? -v[i] : v[i];
    TRY(sc_write(e, slot, v));
cleanup:
    free(v);
    free(sign);
    return rc;
}

/* x SC_X, y SC_Y, dy SC_DY, dx SC_DX (the accumulating case's starting values), the
 * cursor SC_S0 */
static int dropout_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct dropout_shape *s = c->attr;
    const size_t count = (size_t)s->n * s->c * s->hw * s->hw;
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DY, "dy", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DX, "dx", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_S0, "cursor", TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1));
    TRY(dropout_values(e, SC_X, count));
    TRY(dropout_values(e, SC_DY, count));
    TRY(dropout_values(e, SC_DX, count));
    TRY(sc_random(e, SC_Y, -1.0f, 1.0f));
    TRY(sc_write_raw(e, SC_S0, DROPOUT_CURSOR));
cleanup:
    return rc;
}

/* The nodes' parameters: the case's p, a seed with both halves set, layer 3. */
static union plan_params dropout_params(const struct sc_case *c)
{
    const struct dropout_shape *s = c->attr;
    return (union plan_params){.dropout = {.seed = 0x9e3779b97f4a7c15ull, .p = s->p, .layer = 3}};
}

static int dropout_forward_run(struct sc_side *t, const struct sc_case *c)
{
    const union plan_params a = dropout_params(c);
    return plan_run_op(t->be, PLAN_DROPOUT_FWD, PLAN_DSTS(SC_T(t, SC_Y)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_S0)), 0, &a);
}

static int dropout_backward_run(struct sc_side *t, const struct sc_case *c)
{
    const union plan_params a = dropout_params(c);
    return plan_run_op(t->be, PLAN_DROPOUT_BWD, PLAN_DSTS(SC_T(t, SC_DX)),
                       PLAN_SRCS(SC_T(t, SC_DY), SC_T(t, SC_S0)), (unsigned)c->acc, &a);
}

/* The mask is the same bits on both engines and each value one product (and one sum)
 * rounded in fp32: in fp32 the outputs must be equal (maxrel 0); in fp16 / bf16 the
 * tested engine rounds once more, to its type (2^-11 / 2^-8 of the value, not more of
 * the output's scale), with a factor 2 for the accumulating sum's fp32 roundings. */
static int add_dropout(struct sc_table *t, const struct dropout_shape *s)
{
    int rc = DR_OK;
    static const struct {
        const char *op;
        sc_run_fn run;
        int acc, output;
    } OPS[] = {
        {"dropout_forward", dropout_forward_run, 0, SC_Y},
        {"dropout_backward", dropout_backward_run, 0, SC_DX},
        {"dropout_backward_acc", dropout_backward_run, 1, SC_DX},
    };
    for (size_t i = 0; i < COUNT_OF(OPS); i++) {
        struct sc_case c = {.group = "ops", .build = dropout_build, .run = OPS[i].run,
                            .metric = SC_MAX_REL, .tol = {0.0, 1e-3, 8e-3}, .attr = s,
                            .acc = OPS[i].acc, .n_outputs = 1, .outputs = {OPS[i].output}};
        sc_name(&c, OPS[i].op, "%dx%dx%dx%d_p%g", s->n, s->c, s->hw, s->hw, (double)s->p);
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ temperature */

struct temperature_shape {
    int n, c, hw;
};

static const struct temperature_shape TEMPERATURE_SHAPES[] = {
    {512, 10, 1},    /* the logits of a batch */
    {3, 5, 7},       /* 735 elements: one block, a part of it idle */
    {20, 64, 32},    /* 1,310,720 elements: more than the CUDA twin's 256 blocks cover */
};

/* x SC_X, y SC_Y, dy SC_DY, dx SC_DX (the accumulating case's starting values), t SC_W
 * (one value), dt SC_DW (one value, junk before the backward overwrites it) */
static int temperature_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct temperature_shape *s = c->attr;
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DY, "dy", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_DX, "dx", TENSOR_ACT, s->n, s->c, s->hw, s->hw));
    TRY(sc_tensor(e, SC_W, "t", TENSOR_PARAM, 1, 1, 1, 1));
    TRY(sc_tensor(e, SC_DW, "dt", TENSOR_PARAM, 1, 1, 1, 1));
    TRY(sc_random(e, SC_X, -4.0f, 4.0f));
    TRY(sc_random(e, SC_Y, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DY, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DX, -1.0f, 1.0f));
    TRY(sc_random(e, SC_W, 0.5f, 2.0f));
    TRY(sc_random(e, SC_DW, 100.0f, 200.0f));
cleanup:
    return rc;
}

static int temperature_forward_run(struct sc_side *t, const struct sc_case *c)
{
    (void)c;
    return plan_run_op(t->be, PLAN_TEMPERATURE_FWD, PLAN_DSTS(SC_T(t, SC_Y)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_W)), 0, NULL);
}

/* dx (c->acc: added to) and dt; the case without outputs[0] == SC_DX computes dt alone */
static int temperature_backward_run(struct sc_side *t, const struct sc_case *c)
{
    struct tensor *dx = c->outputs[0] == SC_DX ? SC_T(t, SC_DX) : NULL;
    return plan_run_op(t->be, PLAN_TEMPERATURE_BWD, PLAN_DSTS(dx, SC_T(t, SC_DW)),
                       PLAN_SRCS(SC_T(t, SC_DY), SC_T(t, SC_X), SC_T(t, SC_W)),
                       (unsigned)c->acc, NULL);
}

/* y and dx are one product (and one sum) rounded in fp32 from the same inputs: equal in
 * fp32 (maxrel 0); in fp16 / bf16 the tested engine rounds once more, to its type, with a
 * factor 2 for the accumulating sum (as dropout's cases). dt is a double sum of exact
 * products on both engines, in different orders, rounded once to fp32: 0 in practice. */
static int add_temperature(struct sc_table *t, const struct temperature_shape *s)
{
    int rc = DR_OK;
    static const struct {
        const char *op;
        sc_run_fn run;
        int acc, n_outputs, outputs[2];
    } OPS[] = {
        {"temperature_forward", temperature_forward_run, 0, 1, {SC_Y}},
        {"temperature_backward", temperature_backward_run, 0, 2, {SC_DX, SC_DW}},
        {"temperature_backward_acc", temperature_backward_run, 1, 2, {SC_DX, SC_DW}},
        {"temperature_backward_dt", temperature_backward_run, 0, 1, {SC_DW}},
    };
    for (size_t i = 0; i < COUNT_OF(OPS); i++) {
        struct sc_case c = {.group = "ops", .build = temperature_build, .run = OPS[i].run,
                            .metric = SC_MAX_REL, .tol = {0.0, 1e-3, 8e-3}, .attr = s,
                            .acc = OPS[i].acc, .n_outputs = OPS[i].n_outputs,
                            .outputs = {OPS[i].outputs[0], OPS[i].outputs[1]}};
        sc_name(&c, OPS[i].op, "%dx%dx%dx%d", s->n, s->c, s->hw, s->hw);
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

int sc_cases_ops(struct sc_table *t)
{
    int rc = DR_OK;
    for (size_t i = 0; i < COUNT_OF(BN_SHAPES); i++) TRY(add_bn(t, &BN_SHAPES[i]));
    for (size_t i = 0; i < COUNT_OF(BN_SHAPES); i++) TRY(add_bn_act(t, &BN_SHAPES[i]));
    TRY(add_acts(t));
    for (size_t i = 0; i < COUNT_OF(POOL_SHAPES); i++) TRY(add_pool(t, &POOL_SHAPES[i]));
    for (size_t i = 0; i < COUNT_OF(CONCAT_SHAPES); i++) TRY(add_concat(t, &CONCAT_SHAPES[i]));
    for (size_t i = 0; i < COUNT_OF(PLAIN_SHAPES); i++) TRY(add_plain(t, &PLAIN_SHAPES[i]));
    for (size_t i = 0; i < COUNT_OF(XENT_SHAPES); i++) TRY(add_xent(t, &XENT_SHAPES[i]));
    for (size_t i = 0; i < COUNT_OF(DROPOUT_SHAPES); i++)
        TRY(add_dropout(t, &DROPOUT_SHAPES[i]));
    for (size_t i = 0; i < COUNT_OF(TEMPERATURE_SHAPES); i++)
        TRY(add_temperature(t, &TEMPERATURE_SHAPES[i]));
cleanup:
    return rc;
}

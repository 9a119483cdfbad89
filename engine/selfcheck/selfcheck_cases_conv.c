/* The selfcheck's cases of the ops behind cuDNN and cuBLAS: convolutions (group conv: the
 * shapes of DAWN_net and ResNet-9, a partial batch, the whitening layer's 2x2 filter) and
 * linear layers, forward, backward and backward accumulating. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "selfcheck_case.h"

/* ------------------------------------------------------------------ convolutions */

struct conv_shape {
    int n, cap;                 /* batch, and the batch allocated (n < cap: partial) */
    int ci, co, hw, k, stride, pad;
    int bias;
    int image;                  /* the input is the image batch: no dx */
};

static const struct conv_shape CONV_SHAPES[] = {
    {8, 8, 3, 64, 32, 3, 1, 1, 0, 1},       /* prep */
    {8, 8, 64, 128, 16, 3, 2, 1, 1, 0},     /* strided, bias */
    {8, 8, 64, 128, 16, 1, 2, 0, 0, 0},     /* 1x1 shortcut */
    {6, 8, 128, 128, 8, 3, 1, 1, 0, 0},     /* partial batch */
    {8, 8, 3, 24, 32, 2, 1, 0, 1, 1},       /* whitening: fixed filter, trained bias */
};

/* The tensors of an op with a weight and a bias, as a convolution with a k x k filter
 * from ci channels of hw x hw to co channels of ho x ho (a linear layer: k = hw = ho = 1):
 * x, dx (cap, ci, hw, hw) and y, dy (cap, co, ho, ho), used at n images; w, dw
 * (co, ci, k, k) with w uniform in [-w_range, w_range]; b, db (co). The gradients start
 * random: they are accumulated into or overwritten. */
static int weighted_build(struct sc_env *e, int n, int cap, int ci, int hw, int co, int ho,
                          int k, float w_range)
{
    int rc = DR_OK;
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, cap, ci, hw, hw));
    TRY(sc_tensor(e, SC_DX, "dx", TENSOR_ACT, cap, ci, hw, hw));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, cap, co, ho, ho));
    TRY(sc_tensor(e, SC_DY, "dy", TENSOR_ACT, cap, co, ho, ho));
    TRY(sc_tensor(e, SC_W, "w", TENSOR_PARAM, co, ci, k, k));
    TRY(sc_tensor(e, SC_DW, "dw", TENSOR_PARAM, co, ci, k, k));
    TRY(sc_tensor(e, SC_B, "b", TENSOR_PARAM, co, 1, 1, 1));
    TRY(sc_tensor(e, SC_DB, "db", TENSOR_PARAM, co, 1, 1, 1));
    sc_set_n(e, SC_X, n);
    sc_set_n(e, SC_DX, n);
    sc_set_n(e, SC_Y, n);
    sc_set_n(e, SC_DY, n);
    TRY(sc_random(e, SC_X, -2.0f, 2.0f));
    TRY(sc_random(e, SC_W, -w_range, w_range));
    TRY(sc_random(e, SC_B, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DY, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DX, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DW, -1.0f, 1.0f));
    TRY(sc_random(e, SC_DB, -1.0f, 1.0f));
cleanup:
    return rc;
}

static int conv_build(struct sc_env *e, const struct sc_case *c)
{
    const struct conv_shape *s = c->attr;
    const int ho = (s->hw + 2 * s->pad - s->k) / s->stride + 1;
    return weighted_build(e, s->n, s->cap, s->ci, s->hw, s->co, ho, s->k, 0.3f);
}

static int conv_forward_run(struct sc_side *t, const struct sc_case *c)
{
    const struct conv_shape *s = c->attr;
    const union plan_params a = {.conv = {s->k, s->stride, s->pad}};
    return plan_run_op(t->be, PLAN_CONV_FWD, PLAN_DSTS(SC_T(t, SC_Y)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_W), s->bias ? SC_T(t, SC_B) : NULL),
                       0, &a);
}

/* dx unless the input is the image batch, dw, db with a bias (not when accumulating) */
static int conv_backward_run(struct sc_side *t, const struct sc_case *c)
{
    const struct conv_shape *s = c->attr;
    const union plan_params a = {.conv = {s->k, s->stride, s->pad}};
    return plan_run_op(t->be, PLAN_CONV_BWD,
                       PLAN_DSTS(s->image ? NULL : SC_T(t, SC_DX), SC_T(t, SC_DW),
                                 s->bias && !c->acc ? SC_T(t, SC_DB) : NULL),
                       PLAN_SRCS(SC_T(t, SC_DY), SC_T(t, SC_X), SC_T(t, SC_W)),
                       (unsigned)c->acc, &a);
}

/* the whitening layer: a fixed filter with a trained bias, db only */
static int conv_backward_db_run(struct sc_side *t, const struct sc_case *c)
{
    const struct conv_shape *s = c->attr;
    const union plan_params a = {.conv = {s->k, s->stride, s->pad}};
    struct tensor no_dw = *SC_T(t, SC_DW);   /* not computed: a handle without data */
    no_dw.data = NULL;
    return plan_run_op(t->be, PLAN_CONV_BWD, PLAN_DSTS(NULL, &no_dw, SC_T(t, SC_DB)),
                       PLAN_SRCS(SC_T(t, SC_DY), SC_T(t, SC_X), SC_T(t, SC_W)), 0, &a);
}

static int add_conv(struct sc_table *t, const struct conv_shape *s)
{
    int rc = DR_OK;
    char v[48];
    snprintf(v, sizeof(v), "%d-%d_%dx%d_k%ds%dp%d_n%d", s->ci, s->co, s->hw, s->hw, s->k,
             s->stride, s->pad, s->n);
    if (s->n != s->cap) snprintf(v + strlen(v), sizeof(v) - strlen(v), "of%d", s->cap);
    if (s->bias) snprintf(v + strlen(v), sizeof(v) - strlen(v), "_bias");
    if (s->image) snprintf(v + strlen(v), sizeof(v) - strlen(v), "_image");
    struct sc_case c = {.group = "conv", .build = conv_build, .metric = SC_MAX_REL,
                        .tol = SC_TOL_OP, .attr = s};
    sc_name(&c, "conv_forward", "%s", v);
    c.run = conv_forward_run;
    c.n_outputs = 1;
    c.outputs[0] = SC_Y;
    TRY(sc_table_add(t, &c));

    sc_name(&c, "conv_backward", "%s", v);
    c.run = conv_backward_run;
    c.n_outputs = 0;
    if (!s->image) c.outputs[c.n_outputs++] = SC_DX;
    c.outputs[c.n_outputs++] = SC_DW;
    if (s->bias) c.outputs[c.n_outputs++] = SC_DB;
    TRY(sc_table_add(t, &c));

    if (s->image && s->bias) {
        sc_name(&c, "conv_backward_db", "%s", v);
        c.run = conv_backward_db_run;
        c.n_outputs = 1;
        c.outputs[0] = SC_DB;
        TRY(sc_table_add(t, &c));
    }
    if (!s->image) {
        sc_name(&c, "conv_backward_acc", "%s", v);
        c.run = conv_backward_run;
        c.acc = 1;
        c.n_outputs = 2;
        c.outputs[0] = SC_DX;
        c.outputs[1] = SC_DW;
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ linear layers */

struct linear_shape {
    int n, cap, in, out, bias;
};

static const struct linear_shape LINEAR_SHAPES[] = {
    {16, 16, 512, 10, 1},
    {12, 16, 256, 10, 0},   /* partial batch, no bias */
};

static int linear_build(struct sc_env *e, const struct sc_case *c)
{
    const struct linear_shape *s = c->attr;
    return weighted_build(e, s->n, s->cap, s->in, 1, s->out, 1, 1, 0.1f);
}

static int linear_forward_run(struct sc_side *t, const struct sc_case *c)
{
    const struct linear_shape *s = c->attr;
    return plan_run_op(t->be, PLAN_LINEAR_FWD, PLAN_DSTS(SC_T(t, SC_Y)),
                       PLAN_SRCS(SC_T(t, SC_X), SC_T(t, SC_W), s->bias ? SC_T(t, SC_B) : NULL),
                       0, NULL);
}

static int linear_backward_run(struct sc_side *t, const struct sc_case *c)
{
    const struct linear_shape *s = c->attr;
    return plan_run_op(t->be, PLAN_LINEAR_BWD,
                       PLAN_DSTS(SC_T(t, SC_DX), SC_T(t, SC_DW),
                                 s->bias ? SC_T(t, SC_DB) : NULL),
                       PLAN_SRCS(SC_T(t, SC_DY), SC_T(t, SC_X), SC_T(t, SC_W)),
                       (unsigned)c->acc, NULL);
}

static int add_linear(struct sc_table *t, const struct linear_shape *s)
{
    int rc = DR_OK;
    char v[48];
    snprintf(v, sizeof(v), "%d-%d_n%d", s->in, s->out, s->n);
    if (s->n != s->cap) snprintf(v + strlen(v), sizeof(v) - strlen(v), "of%d", s->cap);
    if (s->bias) snprintf(v + strlen(v), sizeof(v) - strlen(v), "_bias");
    struct sc_case c = {.group = "ops", .build = linear_build, .metric = SC_MAX_REL,
                        .tol = SC_TOL_OP, .attr = s};
    sc_name(&c, "linear_forward", "%s", v);
    c.run = linear_forward_run;
    c.n_outputs = 1;
    c.outputs[0] = SC_Y;
    TRY(sc_table_add(t, &c));
    for (int acc = 0; acc < 2; acc++) {
        sc_name(&c, acc ? "linear_backward_acc" : "linear_backward", "%s", v);
        c.run = linear_backward_run;
        c.acc = acc;
        c.n_outputs = 0;
        c.outputs[c.n_outputs++] = SC_DX;
        c.outputs[c.n_outputs++] = SC_DW;
        if (s->bias) c.outputs[c.n_outputs++] = SC_DB;
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

int sc_cases_conv(struct sc_table *t)
{
    int rc = DR_OK;
    for (size_t i = 0; i < sizeof(CONV_SHAPES) / sizeof(CONV_SHAPES[0]); i++)
        TRY(add_conv(t, &CONV_SHAPES[i]));
    for (size_t i = 0; i < sizeof(LINEAR_SHAPES) / sizeof(LINEAR_SHAPES[0]); i++)
        TRY(add_linear(t, &LINEAR_SHAPES[i]));
cleanup:
    return rc;
}

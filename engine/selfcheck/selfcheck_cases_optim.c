/* The selfcheck's cases of the optimiser's ops (group ops): an SGD node of one item
 * (sgd_update: the learning rate from a table of one value) and a LERP node of one
 * (param_lerp), which are fp32 in every precision in the CPU twin's rounding order and so
 * must equal it to the bit; and a linear forward after each, through which the tested
 * engine's compute copy of the weights (in its type) must have followed the fp32 master.
 * The steps are large next to the weights, so that a stale copy would miss by far more
 * than the tolerance.
 *
 * The plan's own ops the same way: sgd_multi over tensors of odd sizes with their own
 * learning-rate scales, weight decays and training epochs (some frozen at the cursor's
 * epoch), the step's learning rate read from a table at the cursor's step; lerp_multi
 * over PARAM and F32 tensors; cursor_advance. Their many tensors are made by the run
 * itself from inputs the build drew, and their values read back into host outputs.
 * And the engine's counts (backend_ops.counters; an engine without them is not checked):
 * one launch for any number of items and nothing copied, allocated or awaited in a
 * steady-state multi-tensor call; a second convolution of a shape makes only its
 * execution calls; a model's parameters and statistics take one allocation, not one
 * per tensor. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "selfcheck_case.h"

#define OPT_OUT 10
#define OPT_IN 512
#define OPT_BATCH 16

/* The nodes the cases run, each alone (plan_run_op). */

/* y = x w^T: a LINEAR_FWD node without bias. */
static int linear(struct sc_side *t, struct tensor *y, const struct tensor *x,
                  const struct tensor *w)
{
    return plan_run_op(t->be, PLAN_LINEAR_FWD, PLAN_DSTS(y), PLAN_SRCS(x, w, NULL), 0, NULL);
}

/* An SGD node over count items, momentum 0.9, the learning rate from lr at the cursor. */
static int sgd_node(struct sc_side *t, const struct sgd_item *items, int count,
                    const struct tensor *lr, const struct tensor *cursor, int nesterov)
{
    const union plan_params a = {.sgd = {items, count, 0.9f, nesterov}};
    return plan_run_op(t->be, PLAN_SGD, NULL, 0, PLAN_SRCS(lr, cursor), 0, &a);
}

/* A LERP node over count items. */
static int lerp_node(struct sc_side *t, const struct lerp_item *items, int count, float tt,
                     int copy_back)
{
    const union plan_params a = {.lerp = {items, count, tt, copy_back}};
    return plan_run_op(t->be, PLAN_LERP, NULL, 0, NULL, 0, 0, &a);
}

/* ------------------------------------------------------------------ sgd_update */

/* The step cursor at the first step of the first epoch. */
static const int32_t FIRST_CURSOR[PLAN_CURSOR_LEN] = {0, 0, 0, 0};

/* w SC_W, v SC_B, dw SC_DW; the learning-rate table of one value SC_S0 and the cursor
 * SC_S1; the linear forward's x SC_X, y SC_Y */
static int sgd_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const float lr = 0.05f;
    (void)c;
    TRY(sc_tensor(e, SC_S0, "lr_table", TENSOR_F32, 1, 1, 1, 1));
    TRY(sc_tensor(e, SC_S1, "cursor", TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1));
    TRY(sc_write_raw(e, SC_S0, &lr));
    TRY(sc_write_raw(e, SC_S1, FIRST_CURSOR));
    TRY(sc_tensor(e, SC_W, "w", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_B, "v", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_DW, "dw", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, OPT_BATCH, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, OPT_BATCH, OPT_OUT, 1, 1));
    TRY(sc_random(e, SC_W, -0.1f, 0.1f));
    TRY(sc_random(e, SC_B, -0.01f, 0.01f));
    TRY(sc_random(e, SC_DW, -1.0f, 1.0f));
    TRY(sc_random(e, SC_X, -1.0f, 1.0f));
cleanup:
    return rc;
}

/* one item, lr 0.05 (the table's) x 1 */
static int sgd_run(struct sc_side *t, const struct sc_case *c)
{
    const struct sgd_item item = {SC_T(t, SC_W), SC_T(t, SC_B), SC_T(t, SC_DW), 1.0,
                                  5e-4f * 512.0f, 0};
    return sgd_node(t, &item, 1, SC_T(t, SC_S0), SC_T(t, SC_S1), c->arg);
}

static int sgd_linear_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    TRY(sgd_run(t, c));
    TRY(linear(t, SC_T(t, SC_Y), SC_T(t, SC_X), SC_T(t, SC_W)));
cleanup:
    return rc;
}

static int add_sgd(struct sc_table *t, int nesterov)
{
    int rc = DR_OK;
    const char *v = nesterov ? "_nesterov" : "";
    struct sc_case c = {.group = "ops", .build = sgd_build, .run = sgd_run,
                        .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .arg = nesterov,
                        .n_outputs = 3, .outputs = {SC_W, SC_B, SC_DW}};
    sc_name(&c, "sgd_update", "%dx%d%s", OPT_OUT, OPT_IN, v);
    TRY(sc_table_add(t, &c));
    /* the tested engine computes with w rounded to its type, the reference with fp32 */
    c = (struct sc_case){.group = "ops", .build = sgd_build, .run = sgd_linear_run,
                         .metric = SC_MAX_REL, .tol = SC_TOL_OP2, .arg = nesterov,
                         .n_outputs = 1, .outputs = {SC_Y}};
    sc_name(&c, "sgd_linear", "%dx%d%s", OPT_OUT, OPT_IN, v);
    TRY(sc_table_add(t, &c));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ param_lerp */

/* avg SC_B, w SC_W (PARAM (10, 512) or F32 (256): c->arg); x SC_X, y(avg) SC_Y, y(w) SC_Y2 */
static int lerp_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    if (c->arg == TENSOR_PARAM) {
        TRY(sc_tensor(e, SC_B, "avg", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
        TRY(sc_tensor(e, SC_W, "w", TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1));
        TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, OPT_BATCH, OPT_IN, 1, 1));
        TRY(sc_tensor(e, SC_Y, "y(avg)", TENSOR_ACT, OPT_BATCH, OPT_OUT, 1, 1));
        TRY(sc_tensor(e, SC_Y2, "y(w)", TENSOR_ACT, OPT_BATCH, OPT_OUT, 1, 1));
        TRY(sc_random(e, SC_X, -1.0f, 1.0f));
    } else {
        TRY(sc_tensor(e, SC_B, "avg", TENSOR_F32, 256, 1, 1, 1));
        TRY(sc_tensor(e, SC_W, "w", TENSOR_F32, 256, 1, 1, 1));
    }
    TRY(sc_random(e, SC_B, -0.1f, 0.1f));
    TRY(sc_random(e, SC_W, -0.5f, 0.5f));
cleanup:
    return rc;
}

static int lerp_run(struct sc_side *t, const struct sc_case *c)
{
    const struct lerp_item item = {SC_T(t, SC_B), SC_T(t, SC_W)};
    return lerp_node(t, &item, 1, 0.25f, c->acc);
}

/* the average, then a linear forward with it and (copied back) with the weight */
static int lerp_linear_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    TRY(lerp_run(t, c));
    TRY(linear(t, SC_T(t, SC_Y), SC_T(t, SC_X), SC_T(t, SC_B)));
    if (c->acc) TRY(linear(t, SC_T(t, SC_Y2), SC_T(t, SC_X), SC_T(t, SC_W)));
cleanup:
    return rc;
}

/* copy_back travels in c->acc */
static int add_lerp(struct sc_table *t, enum tensor_kind kind, int copy_back)
{
    int rc = DR_OK;
    char v[32];
    snprintf(v, sizeof(v), "%s%s", kind == TENSOR_PARAM ? "param_10x512" : "f32_256",
             copy_back ? "_copyback" : "");
    struct sc_case c = {.group = "ops", .build = lerp_build, .run = lerp_run,
                        .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .arg = (int)kind,
                        .acc = copy_back, .n_outputs = 2, .outputs = {SC_B, SC_W}};
    sc_name(&c, "param_lerp", "%s", v);
    TRY(sc_table_add(t, &c));
    if (kind == TENSOR_PARAM) {
        /* the tested engine computes with the weights rounded to its type */
        c = (struct sc_case){.group = "ops", .build = lerp_build, .run = lerp_linear_run,
                             .metric = SC_MAX_REL, .tol = SC_TOL_OP2, .arg = (int)kind,
                             .acc = copy_back, .n_outputs = copy_back ? 2 : 1,
                             .outputs = {SC_Y, SC_Y2}};
        sc_name(&c, "lerp_linear", "%s", v);
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the plan's own ops */

/* One tensor of a multi-tensor case. */
struct multi_tensor {
    enum tensor_kind kind;
    int n, c, h, w;
    double lr_scale;   /* sgd_multi */
    float wd;
    int train_epochs;
};

/* The first is the linear weight (OPT_OUT, OPT_IN) the forward after the step uses; the
 * others span 0, 1 and several chunks of a block; at epoch MULTI_EPOCH the items with
 * 0 < train_epochs <= MULTI_EPOCH are frozen. */
#define MULTI_EPOCH 3
static const struct multi_tensor SGD_TENSORS[] = {
    {TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1, 1.0, 5e-4f * 512.0f, 0},
    {TENSOR_PARAM, 1, 1, 1, 1, 64.0, 5e-4f / 64.0f, 0},
    {TENSOR_PARAM, 7, 1, 1, 1, 1.0 / 9.0, 0.0f, 2},            /* frozen */
    {TENSOR_PARAM, 5, 3, 3, 3, 0.5, 1e-3f, 5},
    {TENSOR_PARAM, 2049, 1, 1, 1, 1.0, 5e-4f, 4},
    {TENSOR_PARAM, 4099, 1, 1, 1, 3.0, 2e-3f, MULTI_EPOCH},    /* frozen from this epoch */
};
#define SGD_COUNT ((int)(sizeof(SGD_TENSORS) / sizeof(SGD_TENSORS[0])))

static const struct multi_tensor LERP_TENSORS[] = {
    {TENSOR_PARAM, OPT_OUT, OPT_IN, 1, 1, 0, 0, 0},
    {TENSOR_PARAM, 7, 1, 1, 1, 0, 0, 0},
    {TENSOR_F32, 13, 1, 1, 1, 0, 0, 0},
    {TENSOR_PARAM, 2049, 1, 1, 1, 0, 0, 0},
    {TENSOR_F32, 300, 1, 1, 1, 0, 0, 0},
};
#define LERP_COUNT ((int)(sizeof(LERP_TENSORS) / sizeof(LERP_TENSORS[0])))

#define MULTI_STEPS 8   /* the learning-rate table's length */
static const int32_t MULTI_CURSOR[PLAN_CURSOR_LEN] = {5, MULTI_EPOCH, 2, 0};

static size_t multi_count(const struct multi_tensor *m)
{
    return (size_t)m->n * (size_t)m->c * (size_t)m->h * (size_t)m->w;
}

/* The elements of the first count tensors of list. */
static size_t multi_total(const struct multi_tensor *list, int count)
{
    size_t total = 0;
    for (int i = 0; i < count; i++) total += multi_count(&list[i]);
    return total;
}

/* Allocates `per` tensors for each of the count rows of list (ts[i * per + j]) on side s
 * and writes each from `in`, consecutively (the canonical host form). */
static int multi_alloc(struct sc_side *s, struct tensor *ts, const struct multi_tensor *list,
                       int count, int per, const float *in)
{
    int rc = DR_OK;
    for (int i = 0; i < count; i++)
        for (int j = 0; j < per; j++) {
            struct tensor *t = &ts[i * per + j];
            *t = (struct tensor){.kind = list[i].kind, .n = list[i].n, .c = list[i].c,
                                 .h = list[i].h, .w = list[i].w};
            TRY(s->be->ops->tensor_alloc(s->be->ctx, t));
            TRY(s->be->ops->tensor_write(s->be->ctx, t, in));
            in += multi_count(&list[i]);
        }
cleanup:
    return rc;
}

/* Reads tensor j of each row (ts[i * per + j]) into out, consecutively. */
static int multi_read(struct sc_side *s, float *out, struct tensor *ts,
                      const struct multi_tensor *list, int count, int per, int j)
{
    int rc = DR_OK;
    for (int i = 0; i < count; i++) {
        TRY(s->be->ops->tensor_read(s->be->ctx, out, &ts[i * per + j]));
        out += multi_count(&list[i]);
    }
cleanup:
    return rc;
}

static void multi_free(struct sc_side *s, struct tensor *ts, int n)
{
    for (int i = 0; i < n; i++)
        if (ts[i].data) s->be->ops->tensor_free(s->be->ctx, &ts[i]);
}

/* Both sides' host slot `slot` (count values) uniform in [lo, hi), the same on both. */
static void multi_draw(struct sc_env *e, int slot, size_t off, size_t count, float lo, float hi)
{
    sc_uniform(e, e->side[0].host[slot] + off, count, lo, hi);
    memcpy(e->side[1].host[slot] + off, e->side[0].host[slot] + off, count * sizeof(float));
}

/* The learning-rate table SC_S0, the cursor SC_S1 (MULTI_CURSOR), the forward's x SC_X
 * and y SC_Y (and y of the second tensor SC_Y2, lerp); the inputs (host) SC_S2, the
 * outputs (host): sgd w SC_W, v SC_B, dw SC_DW; lerp avg SC_B, w SC_W. */
static int multi_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const int lerp = c->attr == (const void *)LERP_TENSORS;
    const size_t total =
        lerp ? multi_total(LERP_TENSORS, LERP_COUNT) : multi_total(SGD_TENSORS, SGD_COUNT);
    float lr[MULTI_STEPS];
    TRY(sc_tensor(e, SC_S0, "lr_table", TENSOR_F32, MULTI_STEPS, 1, 1, 1));
    TRY(sc_tensor(e, SC_S1, "cursor", TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1));
    sc_uniform(e, lr, MULTI_STEPS, 0.01f, 0.1f);
    TRY(sc_write_raw(e, SC_S0, lr));
    TRY(sc_write_raw(e, SC_S1, MULTI_CURSOR));
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, OPT_BATCH, OPT_IN, 1, 1));
    TRY(sc_tensor(e, SC_Y, lerp ? "y(avg)" : "y", TENSOR_ACT, OPT_BATCH, OPT_OUT, 1, 1));
    if (lerp) TRY(sc_tensor(e, SC_Y2, "y(w)", TENSOR_ACT, OPT_BATCH, OPT_OUT, 1, 1));
    TRY(sc_random(e, SC_X, -1.0f, 1.0f));
    if (lerp) {
        TRY(sc_host(e, SC_S2, "inputs", 2 * total));
        multi_draw(e, SC_S2, 0, total, -0.1f, 0.1f);          /* the averages */
        multi_draw(e, SC_S2, total, total, -0.5f, 0.5f);      /* the weights */
        TRY(sc_host(e, SC_B, "avg", total));
        TRY(sc_host(e, SC_W, "w", total));
    } else {
        TRY(sc_host(e, SC_S2, "inputs", 3 * total));
        multi_draw(e, SC_S2, 0, total, -0.1f, 0.1f);          /* w */
        multi_draw(e, SC_S2, total, total, -0.01f, 0.01f);    /* v */
        multi_draw(e, SC_S2, 2 * total, total, -1.0f, 1.0f);  /* dw */
        TRY(sc_host(e, SC_W, "w", total));
        TRY(sc_host(e, SC_B, "v", total));
        TRY(sc_host(e, SC_DW, "dw", total));
    }
cleanup:
    return rc;
}

/* The inputs of row i, tensor j (of per), as multi_alloc takes them: rows one after the
 * other, each row's tensors side by side, from the build's draws (kind by kind). */
static void multi_inputs(float *out, const float *in, const struct multi_tensor *list, int count,
                         int per)
{
    const size_t total = multi_total(list, count);
    size_t off = 0;
    for (int i = 0; i < count; i++) {
        const size_t n = multi_count(&list[i]);
        for (int j = 0; j < per; j++) {
            memcpy(out, in + (size_t)j * total + off, n * sizeof(float));
            out += n;
        }
        off += n;
    }
}

/* sgd_multi on SGD_TENSORS (w, v, dw each), nesterov c->arg, at MULTI_CURSOR; then the
 * linear forward with the first weight. */
static int sgd_multi_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    struct tensor ts[3 * SGD_COUNT];
    struct sgd_item items[SGD_COUNT];
    const size_t total = multi_total(SGD_TENSORS, SGD_COUNT);
    float *in = malloc(3 * total * sizeof(float));
    memset(ts, 0, sizeof(ts));
    CHECK_ALLOC(in, "the selfcheck's sgd_multi inputs");
    multi_inputs(in, t->host[SC_S2], SGD_TENSORS, SGD_COUNT, 3);
    TRY(multi_alloc(t, ts, SGD_TENSORS, SGD_COUNT, 3, in));
    for (int i = 0; i < SGD_COUNT; i++)
        items[i] = (struct sgd_item){&ts[3 * i], &ts[3 * i + 1], &ts[3 * i + 2],
                                     SGD_TENSORS[i].lr_scale, SGD_TENSORS[i].wd,
                                     SGD_TENSORS[i].train_epochs};
    TRY(sgd_node(t, items, SGD_COUNT, SC_T(t, SC_S0), SC_T(t, SC_S1), c->arg));
    TRY(linear(t, SC_T(t, SC_Y), SC_T(t, SC_X), &ts[0]));
    TRY(multi_read(t, t->host[SC_W], ts, SGD_TENSORS, SGD_COUNT, 3, 0));
    TRY(multi_read(t, t->host[SC_B], ts, SGD_TENSORS, SGD_COUNT, 3, 1));
    TRY(multi_read(t, t->host[SC_DW], ts, SGD_TENSORS, SGD_COUNT, 3, 2));
cleanup:
    multi_free(t, ts, 3 * SGD_COUNT);
    free(in);
    return rc;
}

/* lerp_multi (t = 0.25, copy_back c->acc) on LERP_TENSORS (avg, w each); then the linear
 * forward with the first average and, copied back, the first weight. */
static int lerp_multi_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    struct tensor ts[2 * LERP_COUNT];
    struct lerp_item items[LERP_COUNT];
    const size_t total = multi_total(LERP_TENSORS, LERP_COUNT);
    float *in = malloc(2 * total * sizeof(float));
    memset(ts, 0, sizeof(ts));
    CHECK_ALLOC(in, "the selfcheck's lerp_multi inputs");
    multi_inputs(in, t->host[SC_S2], LERP_TENSORS, LERP_COUNT, 2);
    TRY(multi_alloc(t, ts, LERP_TENSORS, LERP_COUNT, 2, in));
    for (int i = 0; i < LERP_COUNT; i++) items[i] = (struct lerp_item){&ts[2 * i], &ts[2 * i + 1]};
    TRY(lerp_node(t, items, LERP_COUNT, 0.25f, c->acc));
    TRY(linear(t, SC_T(t, SC_Y), SC_T(t, SC_X), &ts[0]));
    TRY(linear(t, SC_T(t, SC_Y2), SC_T(t, SC_X), &ts[1]));
    TRY(multi_read(t, t->host[SC_B], ts, LERP_TENSORS, LERP_COUNT, 2, 0));
    TRY(multi_read(t, t->host[SC_W], ts, LERP_TENSORS, LERP_COUNT, 2, 1));
cleanup:
    multi_free(t, ts, 2 * LERP_COUNT);
    free(in);
    return rc;
}

static int add_multi(struct sc_table *t)
{
    int rc = DR_OK;
    static const double OP2[SC_PRECISIONS] = SC_TOL_OP2;
    for (int nesterov = 1; nesterov >= 0; nesterov--) {
        const char *v = nesterov ? "_nesterov" : "";
        struct sc_case c = {.group = "ops", .build = multi_build, .run = sgd_multi_run,
                            .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .arg = nesterov,
                            .attr = SGD_TENSORS, .n_outputs = 3,
                            .outputs = {SC_W, SC_B, SC_DW}};
        sc_name(&c, "sgd_multi", "%d_tensors_e%d%s", SGD_COUNT, MULTI_EPOCH, v);
        TRY(sc_table_add(t, &c));
        /* the tested engine computes with w rounded to its type, the reference with fp32 */
        c.metric = SC_MAX_REL;
        memcpy(c.tol, OP2, sizeof(OP2));
        c.n_outputs = 1;
        c.outputs[0] = SC_Y;
        sc_name(&c, "sgd_multi_linear", "%d_tensors%s", SGD_COUNT, v);
        TRY(sc_table_add(t, &c));
    }
    for (int copy_back = 0; copy_back < 2; copy_back++) {
        const char *v = copy_back ? "_copyback" : "";
        struct sc_case c = {.group = "ops", .build = multi_build, .run = lerp_multi_run,
                            .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .acc = copy_back,
                            .attr = LERP_TENSORS, .n_outputs = 2, .outputs = {SC_B, SC_W}};
        sc_name(&c, "lerp_multi", "%d_tensors%s", LERP_COUNT, v);
        TRY(sc_table_add(t, &c));
        c.metric = SC_MAX_REL;
        memcpy(c.tol, OP2, sizeof(OP2));
        c.n_outputs = 2;
        c.outputs[0] = SC_Y;
        c.outputs[1] = SC_Y2;
        sc_name(&c, "lerp_multi_linear", "%d_tensors%s", LERP_COUNT, v);
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ cursor_advance */

static int cursor_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    (void)c;
    TRY(sc_tensor(e, SC_S1, "cursor", TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1));
    TRY(sc_write_raw(e, SC_S1, MULTI_CURSOR));
cleanup:
    return rc;
}

/* c->arg advances */
static int cursor_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    for (int i = 0; i < c->arg; i++)
        TRY(plan_run_op(t->be, PLAN_CURSOR_ADVANCE, PLAN_DSTS(SC_T(t, SC_S1)), NULL, 0, 0, NULL));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the engine's counts */

/* The counts (host SC_S3), each with the value an engine must show; an engine that counts
 * nothing (the reference) shows the expected values. */
enum count_check {
    COUNT_SGD_LAUNCHES_1,    /* kernel launches of a steady-state sgd_multi of one item */
    COUNT_SGD_LAUNCHES_ALL,  /* ... of SGD_COUNT items */
    COUNT_LERP_LAUNCHES,     /* ... of a steady-state lerp_multi of LERP_COUNT items */
    COUNT_STEADY_TRAFFIC,    /* copies, memsets, waits, allocations and frees of those */
    COUNT_FIRST_UPLOADS,     /* host-to-device copies of the first call with an items array */
    COUNT_CHANGED_UPLOADS,   /* ... of the first call after one item's lr_scale changed */
    COUNT_CONV_FWD_AGAIN,    /* cuDNN calls of a second conv_forward of a shape */
    COUNT_CONV_BWD_AGAIN,    /* ... of a second conv_backward (data and filter) */
    COUNT_CONV_FIRST_MORE,   /* 1 when the first conv_forward made more than the second */
    COUNT_MODEL_ALLOCS,      /* allocations of a model's parameter and statistic tensors */
    COUNT_MODEL_FREES,       /* frees when they are all freed */
    COUNT_CHECKS
};
static const float COUNT_EXPECTED[COUNT_CHECKS] = {1, 1, 1, 0, 1, 1, 1, 2, 1, 1, 1};

static int counts_build(struct sc_env *e, const struct sc_case *c)
{
    (void)c;
    return sc_host(e, SC_S3, "counts", COUNT_CHECKS);
}

/* The counters since *since, into *d; *since moves to now. */
static int counts_since(struct sc_side *s, struct backend_counters *since,
                        struct backend_counters *d)
{
    int rc = DR_OK;
    struct backend_counters now;
    TRY(s->be->ops->counters(s->be->ctx, &now));
    backend_counters_diff(d, &now, since);
    *since = now;
cleanup:
    return rc;
}

static uint64_t traffic(const struct backend_counters *d)
{
    return d->h2d_copies + d->d2h_copies + d->d2d_copies + d->memsets + d->syncs + d->allocs +
           d->frees;
}

/* A model's tensors: for each of MODEL_LAYERS conv layers with batch norm, the weight,
 * BN scale and shift with momentum and gradient each (PARAM), the running and saved
 * statistics (F32); then the count of allocations they took, and of frees when freed. */
#define MODEL_LAYERS 8
#define MODEL_PER_LAYER 13
static int counts_model(struct sc_side *s, float *allocs, float *frees)
{
    int rc = DR_OK;
    struct tensor ts[MODEL_LAYERS * MODEL_PER_LAYER];
    struct backend_counters since, d;
    memset(ts, 0, sizeof(ts));
    TRY(s->be->ops->counters(s->be->ctx, &since));
    for (int l = 0; l < MODEL_LAYERS; l++) {
        const int ci = 3 + 8 * l, co = 11 + 8 * l;
        struct tensor *t = &ts[l * MODEL_PER_LAYER];
        for (int j = 0; j < MODEL_PER_LAYER; j++) {
            if (j < 3) t[j] = (struct tensor){.kind = TENSOR_PARAM, .n = co, .c = ci, .h = 3, .w = 3};
            else if (j < 9) t[j] = (struct tensor){.kind = TENSOR_PARAM, .n = co, .c = 1, .h = 1, .w = 1};
            else t[j] = (struct tensor){.kind = TENSOR_F32, .n = co, .c = 1, .h = 1, .w = 1};
            TRY(s->be->ops->tensor_alloc(s->be->ctx, &t[j]));
        }
    }
    TRY(counts_since(s, &since, &d));
    *allocs = (float)d.allocs;
    multi_free(s, ts, MODEL_LAYERS * MODEL_PER_LAYER);
    TRY(counts_since(s, &since, &d));
    *frees = (float)d.frees;
cleanup:
    multi_free(s, ts, MODEL_LAYERS * MODEL_PER_LAYER);
    return rc;
}

/* Two conv_forward and two conv_backward calls on a shape no other case uses; the cuDNN
 * calls of the second of each, and whether the first forward made more. */
static int counts_conv(struct sc_side *s, float *out)
{
    int rc = DR_OK;
    const union plan_params a = {.conv = {3, 2, 1}};
    struct tensor x = {.kind = TENSOR_ACT, .n = 3, .c = 5, .h = 7, .w = 7};
    struct tensor w = {.kind = TENSOR_PARAM, .n = 6, .c = 5, .h = 3, .w = 3};
    struct tensor y = {.kind = TENSOR_ACT, .n = 3, .c = 6, .h = 4, .w = 4};
    struct tensor dx = x, dw = w, dy = y;
    struct tensor *all[] = {&x, &w, &y, &dx, &dw, &dy};
    struct backend_counters since, d;
    uint64_t first = 0;
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        TRY(s->be->ops->tensor_alloc(s->be->ctx, all[i]));
    TRY(s->be->ops->counters(s->be->ctx, &since));
    for (int pass = 0; pass < 2; pass++) {
        TRY(plan_run_op(s->be, PLAN_CONV_FWD, PLAN_DSTS(&y), PLAN_SRCS(&x, &w, NULL), 0, &a));
        TRY(counts_since(s, &since, &d));
        if (pass == 0) first = d.cudnn_calls;
        else out[COUNT_CONV_FWD_AGAIN] = (float)d.cudnn_calls;
        TRY(plan_run_op(s->be, PLAN_CONV_BWD, PLAN_DSTS(&dx, &dw, NULL), PLAN_SRCS(&dy, &x, &w),
                        0, &a));
        TRY(counts_since(s, &since, &d));
        if (pass == 1) out[COUNT_CONV_BWD_AGAIN] = (float)d.cudnn_calls;
    }
    out[COUNT_CONV_FIRST_MORE] = first > (uint64_t)out[COUNT_CONV_FWD_AGAIN];
cleanup:
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i]->data) s->be->ops->tensor_free(s->be->ctx, all[i]);
    return rc;
}

/* sgd_multi on one item and on all SGD_COUNT (each called twice: the second is the
 * steady state), again after an lr_scale changed, and lerp_multi on LERP_COUNT. */
static int counts_multi(struct sc_side *s, float *out)
{
    int rc = DR_OK;
    struct tensor ts[3 * SGD_COUNT], lr = {.kind = TENSOR_F32, .n = MULTI_STEPS, .c = 1, .h = 1, .w = 1};
    struct tensor cursor = {.kind = TENSOR_I32, .n = PLAN_CURSOR_LEN, .c = 1, .h = 1, .w = 1};
    struct sgd_item items[SGD_COUNT];
    struct lerp_item pairs[SGD_COUNT];
    struct backend_counters since, d;
    uint64_t steady = 0;
    const float rate[MULTI_STEPS] = {0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f, 0.1f};
    memset(ts, 0, sizeof(ts));
    for (int i = 0; i < 3 * SGD_COUNT; i++) {
        const struct multi_tensor *m = &SGD_TENSORS[i / 3];
        ts[i] = (struct tensor){.kind = TENSOR_PARAM, .n = m->n, .c = m->c, .h = m->h, .w = m->w};
        TRY(s->be->ops->tensor_alloc(s->be->ctx, &ts[i]));
    }
    TRY(s->be->ops->tensor_alloc(s->be->ctx, &lr));
    TRY(s->be->ops->tensor_alloc(s->be->ctx, &cursor));
    TRY(s->be->ops->tensor_write(s->be->ctx, &lr, rate));
    TRY(s->be->ops->tensor_write(s->be->ctx, &cursor, MULTI_CURSOR));
    for (int i = 0; i < SGD_COUNT; i++) {
        items[i] = (struct sgd_item){&ts[3 * i], &ts[3 * i + 1], &ts[3 * i + 2],
                                     SGD_TENSORS[i].lr_scale, SGD_TENSORS[i].wd,
                                     SGD_TENSORS[i].train_epochs};
        pairs[i] = (struct lerp_item){&ts[3 * i], &ts[3 * i + 1]};
    }
    TRY(s->be->ops->synchronize(s->be->ctx));
    TRY(s->be->ops->counters(s->be->ctx, &since));
    for (int all = 0; all < 2; all++) {
        const int n = all ? SGD_COUNT : 1;
        TRY(sgd_node(s, items, n, &lr, &cursor, 1));
        TRY(counts_since(s, &since, &d));
        if (all) out[COUNT_FIRST_UPLOADS] = (float)d.h2d_copies;
        TRY(sgd_node(s, items, n, &lr, &cursor, 1));
        TRY(counts_since(s, &since, &d));
        out[all ? COUNT_SGD_LAUNCHES_ALL : COUNT_SGD_LAUNCHES_1] = (float)d.kernel_launches;
        steady += traffic(&d);
    }
    items[SGD_COUNT - 1].lr_scale *= 2.0;
    TRY(sgd_node(s, items, SGD_COUNT, &lr, &cursor, 1));
    TRY(counts_since(s, &since, &d));
    out[COUNT_CHANGED_UPLOADS] = (float)d.h2d_copies;
    TRY(lerp_node(s, pairs, LERP_COUNT, 0.5f, 1));
    TRY(counts_since(s, &since, &d));
    TRY(lerp_node(s, pairs, LERP_COUNT, 0.5f, 1));
    TRY(counts_since(s, &since, &d));
    out[COUNT_LERP_LAUNCHES] = (float)d.kernel_launches;
    steady += traffic(&d);
    out[COUNT_STEADY_TRAFFIC] = (float)steady;
    TRY(s->be->ops->synchronize(s->be->ctx));
cleanup:
    multi_free(s, ts, 3 * SGD_COUNT);
    if (lr.data) s->be->ops->tensor_free(s->be->ctx, &lr);
    if (cursor.data) s->be->ops->tensor_free(s->be->ctx, &cursor);
    return rc;
}

static int counts_run(struct sc_side *s, const struct sc_case *c)
{
    int rc = DR_OK;
    float *out = s->host[SC_S3];
    (void)c;
    memcpy(out, COUNT_EXPECTED, sizeof(COUNT_EXPECTED));
    if (!s->be->ops->counters) return DR_OK;   /* an engine that counts nothing */
    TRY(counts_model(s, &out[COUNT_MODEL_ALLOCS], &out[COUNT_MODEL_FREES]));
    TRY(counts_conv(s, out));
    TRY(counts_multi(s, out));
cleanup:
    return rc;
}

int sc_cases_optim(struct sc_table *t)
{
    int rc = DR_OK;
    TRY(add_sgd(t, 1));
    TRY(add_sgd(t, 0));
    TRY(add_lerp(t, TENSOR_PARAM, 0));
    TRY(add_lerp(t, TENSOR_PARAM, 1));
    TRY(add_lerp(t, TENSOR_F32, 1));
    TRY(add_multi(t));
    struct sc_case c = {.group = "ops", .build = cursor_build, .run = cursor_run,
                        .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .arg = 3,
                        .n_outputs = 1, .outputs = {SC_S1}};
    sc_name(&c, "cursor_advance", "x%d", c.arg);
    TRY(sc_table_add(t, &c));
    c = (struct sc_case){.group = "ops", .build = counts_build, .run = counts_run,
                         .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .show = 1,
                         .n_outputs = 1, .outputs = {SC_S3}};
    sc_name(&c, "engine_counts", "multi_tensor_conv_arena");
    TRY(sc_table_add(t, &c));
cleanup:
    return rc;
}

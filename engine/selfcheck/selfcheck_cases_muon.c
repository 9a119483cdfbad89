/* The selfcheck's cases of Muon (group ops): muon_multi over weights of several shapes
 * (two of one shape, so that an engine batching a shape's products batches them; one
 * with more rows than columns, so that the iteration runs on the transpose; one frozen at
 * the cursor's epoch), its learning rate read from a table at the cursor's step, against
 * the CPU twin (kernels/muon.h):
 *   - muon_multi/momentum: the momentum buffers, fp32 in the CPU twin's per-element
 *     order on every engine, equal to the bit;
 *   - muon_multi/weights: the weights after the step. The CUDA engine runs the
 *     Newton-Schulz iteration in bf16 with fp32 accumulation in every precision (the
 *     published recipe's arithmetic), the CPU twin in fp32: the difference is a few bf16
 *     roundings of the update, lr * (about 1 / sqrt(columns)) per element, against
 *     weights renormalised to about 1 / sqrt(columns) per element;
 *   - muon_multi/linear: a linear forward with the first weight after the step, through
 *     which the tested engine's compute copy must have followed the fp32 master. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "selfcheck_case.h"

#define MUON_OUT 10
#define MUON_IN 96
#define MUON_BATCH 8
#define MUON_EPOCH 2
#define MUON_STEPS 4   /* the learning-rate table's length */

/* One weight of the case: its shape, lr_scale and train_epochs. */
struct muon_tensor {
    int n, c, h, w;
    double lr_scale;
    int train_epochs;
};

static const struct muon_tensor MUON_TENSORS[] = {
    {MUON_OUT, MUON_IN, 1, 1, 1.0, 0},   /* the linear weight the forward uses */
    {16, 8, 3, 3, 1.0, 0},
    {16, 8, 3, 3, 0.5, 5},               /* the same shape: one batch with the one before */
    {40, 3, 2, 2, 2.0, 0},               /* 40 x 12: more rows than columns */
    {8, 4, 3, 3, 1.0, MUON_EPOCH},       /* frozen from the cursor's epoch on */
};
#define MUON_COUNT ((int)(sizeof(MUON_TENSORS) / sizeof(MUON_TENSORS[0])))
static const int32_t MUON_CURSOR[PLAN_CURSOR_LEN] = {2, MUON_EPOCH, 1, 0};

static size_t muon_count(const struct muon_tensor *m)
{
    return (size_t)m->n * (size_t)m->c * (size_t)m->h * (size_t)m->w;
}

static size_t muon_total(void)
{
    size_t total = 0;
    for (int i = 0; i < MUON_COUNT; i++) total += muon_count(&MUON_TENSORS[i]);
    return total;
}

/* The table SC_S0, the cursor SC_S1, the forward's x SC_X and y SC_Y; the inputs (host)
 * SC_S2: every w, then every v, then every dw; the outputs (host): w SC_W, v SC_B. */
static int muon_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const size_t total = muon_total();
    float lr[MUON_STEPS];
    (void)c;
    TRY(sc_tensor(e, SC_S0, "lr_table", TENSOR_F32, MUON_STEPS, 1, 1, 1));
    TRY(sc_tensor(e, SC_S1, "cursor", TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1));
    sc_uniform(e, lr, MUON_STEPS, 0.02f, 0.1f);
    TRY(sc_write_raw(e, SC_S0, lr));
    TRY(sc_write_raw(e, SC_S1, MUON_CURSOR));
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, MUON_BATCH, MUON_IN, 1, 1));
    TRY(sc_tensor(e, SC_Y, "y", TENSOR_ACT, MUON_BATCH, MUON_OUT, 1, 1));
    TRY(sc_random(e, SC_X, -1.0f, 1.0f));
    TRY(sc_host(e, SC_S2, "inputs", 3 * total));
    sc_uniform(e, e->side[0].host[SC_S2], total, -0.3f, 0.3f);                  /* w */
    sc_uniform(e, e->side[0].host[SC_S2] + total, total, -0.5f, 0.5f);          /* v */
    sc_uniform(e, e->side[0].host[SC_S2] + 2 * total, total, -1.0f, 1.0f);      /* dw */
    memcpy(e->side[1].host[SC_S2], e->side[0].host[SC_S2], 3 * total * sizeof(float));
    TRY(sc_host(e, SC_W, "w", total));
    TRY(sc_host(e, SC_B, "v", total));
cleanup:
    return rc;
}

/* muon_multi (momentum 0.6, Nesterov c->arg, 3 iterations) on MUON_TENSORS at MUON_CURSOR;
 * then the linear forward with the first weight. */
static int muon_run(struct sc_side *t, const struct sc_case *c)
{
    int rc = DR_OK;
    struct tensor ts[3 * MUON_COUNT];
    struct sgd_item items[MUON_COUNT];
    const size_t total = muon_total();
    const float *in = t->host[SC_S2];
    struct muon_ns ns = muon_ns_default();
    size_t off = 0;
    ns.steps = 3;
    memset(ts, 0, sizeof(ts));
    for (int i = 0; i < MUON_COUNT; i++) {
        const struct muon_tensor *m = &MUON_TENSORS[i];
        for (int j = 0; j < 3; j++) {
            struct tensor *x = &ts[3 * i + j];
            *x = (struct tensor){NULL, TENSOR_PARAM, m->n, m->c, m->h, m->w};
            TRY(t->be->ops->tensor_alloc(t->be->ctx, x));
            TRY(t->be->ops->tensor_write(t->be->ctx, x, in + (size_t)j * total + off));
        }
        items[i] = (struct sgd_item){&ts[3 * i], &ts[3 * i + 1], &ts[3 * i + 2], m->lr_scale,
                                     0.0f, m->train_epochs};
        off += muon_count(m);
    }
    const union plan_params a = {.muon = {items, MUON_COUNT, 0.6f, c->arg, ns}};
    TRY(plan_run_op(t->be, PLAN_MUON, NULL, 0, PLAN_SRCS(SC_T(t, SC_S0), SC_T(t, SC_S1)), 0,
                    &a));
    TRY(plan_run_op(t->be, PLAN_LINEAR_FWD, PLAN_DSTS(SC_T(t, SC_Y)),
                    PLAN_SRCS(SC_T(t, SC_X), &ts[0], NULL), 0, NULL));
    off = 0;
    for (int i = 0; i < MUON_COUNT; i++) {
        TRY(t->be->ops->tensor_read(t->be->ctx, t->host[SC_W] + off, &ts[3 * i]));
        TRY(t->be->ops->tensor_read(t->be->ctx, t->host[SC_B] + off, &ts[3 * i + 1]));
        off += muon_count(&MUON_TENSORS[i]);
    }
cleanup:
    for (int i = 0; i < 3 * MUON_COUNT; i++)
        if (ts[i].data) t->be->ops->tensor_free(t->be->ctx, &ts[i]);
    return rc;
}

int sc_cases_muon(struct sc_table *t)
{
    int rc = DR_OK;
    static const double NS[SC_PRECISIONS] = {5e-3, 5e-3, 5e-3};
    static const double LIN[SC_PRECISIONS] = {1e-2, 2e-2, 1e-1};
    for (int nesterov = 1; nesterov >= 0; nesterov--) {
        const char *v = nesterov ? "_nesterov" : "";
        struct sc_case c = {.group = "ops", .build = muon_build, .run = muon_run,
                            .metric = SC_EXACT_BITS, .tol = SC_TOL_EXACT, .arg = nesterov,
                            .n_outputs = 1, .outputs = {SC_B}};
        sc_name(&c, "muon_multi", "momentum_%d_tensors%s", MUON_COUNT, v);
        TRY(sc_table_add(t, &c));
        c.metric = SC_MAX_REL;
        memcpy(c.tol, NS, sizeof(NS));
        c.outputs[0] = SC_W;
        sc_name(&c, "muon_multi", "weights_%d_tensors%s", MUON_COUNT, v);
        TRY(sc_table_add(t, &c));
        memcpy(c.tol, LIN, sizeof(LIN));
        c.outputs[0] = SC_Y;
        sc_name(&c, "muon_multi", "linear%s", v);
        TRY(sc_table_add(t, &c));
    }
cleanup:
    return rc;
}

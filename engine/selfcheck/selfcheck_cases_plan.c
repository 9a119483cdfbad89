/* The selfcheck's plan cases (group plan): small networks' whole passes as the plan's
 * builder makes them (model_plan_pass: the forward pass, the loss and, in training, the
 * backward, fused as a training step's plan or an evaluation batch's, with the fused
 * nodes each engine takes), run by the engine under test and by the reference from the
 * same input, weights and batch-norm state; the logits, the loss, every parameter's
 * gradient, the batch norms' statistics, and the values and gradients every fused form
 * writes are compared.
 *
 * The networks: [conv1 ->] bn1 -> act1 -> conv2 -> bn2 -> act2 -> add(residual, act2) ->
 * flatten -> linear -> cross-entropy, the residual by topology:
 *   residual  act1's output (conv2's backward adds into its gradient);
 *   acc       conv1's output (bn1's backward adds into its gradient);
 *   shared    bn1's output (read twice, so it must be written; act1's backward adds, so
 *             it is not folded into bn1's);
 *   nulldx    act1's output, bn1 reading the input itself (no conv1: its dx NULL);
 * eval: conv1 -> bn1 (eval) -> act1 -> flatten -> linear -> cross-entropy, forward only;
 * eval_shared: shared's forward in eval mode;
 * pool: conv1 -> bn1 -> act1 -> max pool (3x3 windows tiling the 6x6 plane) -> flatten ->
 * linear -> cross-entropy and the backward (the pool folded into the batch norm's passes,
 * the activation's output and gradient never written); eval_pool: its forward in eval
 * mode. The rows cover every activation kind, ghost batch norm, and channel counts that
 * allow 16-byte packs (8) and that do not (6). In the half precisions a ReLU network
 * puts the batch norms' statistics inside the convolutions writing their x, and the
 * residual add inside conv2 in evaluation (cuDNN's arithmetic, not ours).
 *
 * On an engine that counts its work (backend_ops.counters), a case runs the pass three
 * times: node by node (DAWNRUN_CUDA_FUSE=0: every fused node as its decomposition); fused,
 * which must make fewer kernel launches and move fewer bytes, and, where the engine put
 * nothing inside cuDNN's graphs, give the node-by-node run's bits; and fused again, which
 * must give the same bits (the engine is asked for deterministic algorithms and engines:
 * selfcheck_run). The fused run is compared with the reference. The "/unfused" variant
 * compares the node-by-node run itself with the reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "engine/core/graph.h"
#include "engine/core/model.h"
#include "kernels/plan.h"
#include "kernels/precision.h"
#include "selfcheck_case.h"

#define PL_N 8      /* images */
#define PL_HW 6     /* height = width */
#define PL_K 10     /* classes */
#define PL_CIN 3    /* input channels before conv1 */
#define PL_POOL 3   /* the pool topologies' window and stride */
#define PL_TOL {1e-3, 0.5, 0.5}

enum pl_topo { TOPO_RESIDUAL, TOPO_ACC, TOPO_SHARED, TOPO_NULLDX, TOPO_POOL, TOPO_EVAL,
               TOPO_EVAL_SHARED, TOPO_EVAL_POOL };

struct plan_row {
    const char *name;
    enum pl_topo topo;
    enum act_kind kind;
    int splits;     /* ghost batch norm */
    int channels;   /* of both batch norms */
};

static const struct plan_row PLAN_ROWS[] = {
    {"residual_relu", TOPO_RESIDUAL, ACT_RELU, 1, 8},
    {"residual_gelu", TOPO_RESIDUAL, ACT_GELU, 1, 8},
    {"residual_celu", TOPO_RESIDUAL, ACT_CELU, 1, 8},
    {"residual_silu_c6", TOPO_RESIDUAL, ACT_SILU, 1, 6},
    {"residual_hardswish", TOPO_RESIDUAL, ACT_HARDSWISH, 1, 8},
    {"ghost2_relu", TOPO_RESIDUAL, ACT_RELU, 2, 8},
    {"ghost4_celu_c6", TOPO_RESIDUAL, ACT_CELU, 4, 6},
    {"acc_relu", TOPO_ACC, ACT_RELU, 1, 8},
    {"shared_gelu", TOPO_SHARED, ACT_GELU, 2, 8},
    {"nulldx_relu", TOPO_NULLDX, ACT_RELU, 1, 8},
    {"eval_relu", TOPO_EVAL, ACT_RELU, 1, 8},
    {"eval_gelu_c6", TOPO_EVAL, ACT_GELU, 1, 6},
    {"eval_shared_celu", TOPO_EVAL_SHARED, ACT_CELU, 1, 8},
    {"pool_relu", TOPO_POOL, ACT_RELU, 1, 8},
    {"pool_gelu_c6", TOPO_POOL, ACT_GELU, 1, 6},
    {"pool_hardswish_c6", TOPO_POOL, ACT_HARDSWISH, 1, 6},
    {"eval_pool_celu", TOPO_EVAL_POOL, ACT_CELU, 1, 8},
};
#define PLAN_ROW_COUNT ((int)(sizeof(PLAN_ROWS) / sizeof(PLAN_ROWS[0])))

static int has_conv1(const struct plan_row *r)
{
    return r->topo != TOPO_NULLDX;
}

/* Whether row r's pass is a training one (else an evaluation). */
static int is_train(const struct plan_row *r)
{
    return r->topo < TOPO_EVAL;
}

static int pooled(const struct plan_row *r)
{
    return r->topo == TOPO_POOL || r->topo == TOPO_EVAL_POOL;
}

/* Whether row r has the second block (conv2, bn2, act2, the add). */
static int two_blocks(const struct plan_row *r)
{
    return r->topo != TOPO_EVAL && !pooled(r);
}

/* The layer type of activation kind k. */
static enum layer_type act_layer(enum act_kind k)
{
#define ACT_LAYER_ROW_(ID, NAME, READS_ALPHA, P) \
    case ACT_##ID: return LAYER_##ID;
    switch (k) {
        ACT_KINDS(ACT_LAYER_ROW_, ~)
    case ACT_KIND_COUNT: break;
    }
#undef ACT_LAYER_ROW_
    return LAYER_RELU;
}

/* Appends row r's block k (1 or 2): conv<k> (3x3, pad 1, no bias; none when conv is 0),
 * bn<k>, act<k>. 1, or 0 when out of memory. */
static int block(struct net_spec *s, const struct plan_row *r, int k, int conv)
{
    char name[3][8];
    struct layer_spec *l = NULL;
    snprintf(name[0], sizeof(name[0]), "conv%d", k);
    snprintf(name[1], sizeof(name[1]), "bn%d", k);
    snprintf(name[2], sizeof(name[2]), "act%d", k);
    if (conv) {
        if (!(l = sc_layer(s, name[0], LAYER_CONV, "", ""))) return 0;
        l->out = r->channels, l->k = 3, l->pad = 1;
    }
    if (!(l = sc_layer(s, name[1], LAYER_BN, "", ""))) return 0;
    l->splits = r->splits;
    if (!(l = sc_layer(s, name[2], act_layer(r->kind), "", ""))) return 0;
    l->alpha = 0.75f;
    return 1;
}

/* Row r's network into g. Its layers' names: conv1, bn1, act1, conv2, bn2, act2, add,
 * pool, flat, linear (those of the topology). Convolutions 3x3, pad 1, and the linear
 * layer without bias. */
static int row_graph(struct graph *g, const struct plan_row *r)
{
    int rc = DR_OK;
    struct net_spec s = {0};
    struct layer_spec *l = NULL;
    char err[256];
    int ok = 1;
    const char *residual = r->topo == TOPO_ACC ? "conv1"
                           : r->topo == TOPO_SHARED || r->topo == TOPO_EVAL_SHARED ? "bn1"
                                                                                   : "act1";
#define L(name, type, in1, in2) ok = ok && (l = sc_layer(&s, name, type, in1, in2)) != NULL
    ok = block(&s, r, 1, has_conv1(r));
    if (pooled(r)) {
        L("pool", LAYER_MAXPOOL, "", "");
        if (ok) l->k = l->stride = PL_POOL;
    }
    if (two_blocks(r)) {
        ok = ok && block(&s, r, 2, 1);
        L("add", LAYER_ADD, residual, "act2");
    }
    L("flat", LAYER_FLATTEN, "", "");
    L("linear", LAYER_LINEAR, "", "");
    if (ok) l->out = PL_K;
#undef L
    if (!ok) FAIL(DR_ERR_NOMEM, "out of memory building a selfcheck network");
    rc = graph_build(g, &s, has_conv1(r) ? PL_CIN : r->channels, PL_HW, PL_HW, err, sizeof(err));
    if (rc != DR_OK) dr_eprintf("selfcheck plan %s: %s\n", r->name, err);
cleanup:
    net_spec_free(&s);
    return rc;
}

/* The layer of g named name, or -1. */
static int layer_of(const struct graph *g, const char *name)
{
    for (int i = 0; i < g->count; i++)
        if (!strcmp(g->layers[i].spec.name, name)) return i;
    return -1;
}

/* Host outputs (slots), each the concatenation of the tensors listed for it. */
#define OUT_ACTS SC_Y
#define OUT_LOGITS SC_Y2
#define OUT_LOSS SC_S1
#define OUT_DPARAMS SC_DW
#define OUT_DACTS SC_DX
#define OUT_BNSTATS SC_S2
#define OUT_COUNT 6
static const int OUT_SLOTS[OUT_COUNT] = {OUT_ACTS, OUT_LOGITS, OUT_LOSS, OUT_DPARAMS,
                                         OUT_DACTS, OUT_BNSTATS};

/* Whether row r's gradients below its max pool are left out of the comparison: in a half
 * type two values of a window may round to one maximum, the first of which takes the
 * window's gradient (as the pool's backward on the stored values does), where the fp32
 * reference sees a strict order; so one element's gradient moves to its neighbour. The
 * fused pool's backward is checked exactly by the bn_act pool cases (inputs without such
 * ties), and here in fp32. */
static int tie_routed(const struct plan_row *r, int precision)
{
    return pooled(r) && precision != PRECISION_FP32;
}

/* The most tensors one output lists. */
#define OUT_MAX 32

/* The model tensors of host output `out` of row r (model m of g), in order, into list;
 * their number. Only values every fused form writes: the add's sum, the pool's output or
 * (one block, no pool) act1's, which the flatten reads; the logits and probabilities; the
 * loss; every parameter gradient; bn1's input gradient (conv1's output's, but see
 * tie_routed) and the
 * flatten's input gradient (the model's tensors: where the builder makes one gradient
 * another's alias, the one it writes); the batch norms' running and saved statistics. */
static int out_list(const struct tensor **list, int out, const struct plan_row *r,
                    const struct graph *g, const struct model *m, int precision)
{
    int n = 0;
    const int train = is_train(r);
    const char *bns[2] = {"bn1", two_blocks(r) ? "bn2" : NULL};
    const char *head = two_blocks(r) ? "add" : pooled(r) ? "pool" : "act1";
    switch (out) {
    case 0: list[n++] = &m->y[layer_of(g, head)]; break;
    case 1:
        list[n++] = &m->y[g->output];
        list[n++] = &m->probs;
        break;
    case 2: list[n++] = &m->stats; break;
    case 3:
        for (int k = 0; train && k < g->n_params; k++) list[n++] = &m->dp[k];
        break;
    case 4:
        if (!train) break;
        /* (acc: conv1's gradient is the add's, the builder's alias, listed next; a pool in
         * a half type: see tie_routed) */
        if (has_conv1(r) && r->topo != TOPO_ACC && !tie_routed(r, precision))
            list[n++] = &m->dy[layer_of(g, "conv1")];
        list[n++] = &m->dy[layer_of(g, head)];
        break;
    case 5:
        for (int b = 0; b < 2 && bns[b]; b++) {
            const int i = layer_of(g, bns[b]);
            list[n++] = &m->bn_rmean[i];
            list[n++] = &m->bn_rvar[i];
            if (train) list[n++] = &m->bn_mean[i], list[n++] = &m->bn_invstd[i];
        }
        break;
    }
    return n;
}

/* The case's inputs: x SC_X, conv1's weights SC_W, conv2's SC_X2, the linear layer's SC_B,
 * labels SC_S0; the host outputs, sized from a model of the network on the reference. */
static int plan_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct plan_row *r = c->attr;
    const int ch = r->channels;
    static const char *const names[OUT_COUNT] = {"acts", "logits", "loss", "dparams", "dacts",
                                                 "bnstats"};
    int32_t labels[PL_N];
    float u[PL_N];
    struct graph g = {0};
    struct model m = {0};
    TRY(row_graph(&g, r));
    TRY(model_create(&m, &g, e->side[0].be, PL_N));
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, PL_N, has_conv1(r) ? PL_CIN : ch, PL_HW, PL_HW));
    TRY(sc_random(e, SC_X, -1.0f, 1.0f));
    if (has_conv1(r)) {
        TRY(sc_tensor(e, SC_W, "w1", TENSOR_PARAM, ch, PL_CIN, 3, 3));
        TRY(sc_random(e, SC_W, -0.4f, 0.4f));
    }
    if (two_blocks(r)) {
        TRY(sc_tensor(e, SC_X2, "w2", TENSOR_PARAM, ch, ch, 3, 3));
        TRY(sc_random(e, SC_X2, -0.2f, 0.2f));
    }
    {
        const struct layer *lin = &g.layers[layer_of(&g, "linear")];
        const struct param_desc *d = &g.params[lin->param_first];
        TRY(sc_tensor(e, SC_B, "w3", TENSOR_PARAM, d->n, d->c, d->h, d->w));
        TRY(sc_random(e, SC_B, -0.1f, 0.1f));
    }
    TRY(sc_tensor(e, SC_S0, "labels", TENSOR_I32, PL_N, 1, 1, 1));
    sc_uniform(e, u, PL_N, 0.0f, (float)PL_K);
    for (int i = 0; i < PL_N; i++) labels[i] = (int32_t)u[i] % PL_K;
    TRY(sc_write_raw(e, SC_S0, labels));
    for (int o = 0; o < OUT_COUNT; o++) {
        const struct tensor *list[OUT_MAX];
        size_t count = 0;
        const int n = out_list(list, o, r, &g, &m, e->precision);
        for (int k = 0; k < n; k++) count += tensor_count(list[k]);
        TRY(sc_host(e, OUT_SLOTS[o], names[o], count));
    }
cleanup:
    model_free(&m);
    graph_free(&g);
    return rc;
}

/* Copies the side's slot into model tensor t (of its count), through the host. */
static int copy_slot(struct sc_side *s, struct tensor *t, int slot, float *buf)
{
    int rc = DR_OK;
    const struct backend_ops *o = s->be->ops;
    TRY(o->tensor_read(s->be->ctx, buf, SC_T(s, slot)));
    TRY(o->tensor_write(s->be->ctx, t, buf));
cleanup:
    return rc;
}

/* The pass's state before a run: the input, labels and weights from the case's slots, the
 * batch norms' parameters and running statistics, the loss sums zero; every other tensor
 * of the model NaN, so that a value a run fails to write (or reads before it is written)
 * shows, not one left by an earlier run. */
static int reset_state(struct sc_side *s, struct model *m, const struct graph *g,
                       const struct plan_row *r)
{
    int rc = DR_OK;
    const struct backend_ops *o = s->be->ops;
    float gb[2][64], *buf = NULL;
    size_t most = tensor_count(&m->stats);
    for (int i = 0; i < g->count; i++) {
        const struct tensor *ts[] = {&m->y[i], &m->dy[i], &m->bn_coef[i], &m->bn_vec[i]};
        for (size_t k = 0; k < sizeof(ts) / sizeof(ts[0]); k++)
            if (tensor_count(ts[k]) > most) most = tensor_count(ts[k]);
    }
    for (int k = 0; k < g->n_params; k++)
        if (tensor_count(&m->p[k]) > most) most = tensor_count(&m->p[k]);
    buf = malloc(most * sizeof(float));
    CHECK_ALLOC(buf, "selfcheck plan state");
    for (size_t i = 0; i < most; i++) buf[i] = NAN;
    for (int i = 1; i < g->count; i++) {
        struct tensor *ts[] = {&m->y[i], &m->dy[i], &m->bn_mean[i], &m->bn_invstd[i],
                               &m->bn_coef[i], &m->bn_vec[i]};
        for (size_t k = 0; k < sizeof(ts) / sizeof(ts[0]); k++)
            if (ts[k]->data) TRY(o->tensor_write(s->be->ctx, ts[k], buf));
    }
    for (int k = 0; k < g->n_params; k++) TRY(o->tensor_write(s->be->ctx, &m->dp[k], buf));
    for (int ch = 0; ch < r->channels; ch++) {
        gb[0][ch] = 1.0f + 0.125f * (float)((ch * 7) % 5 - 2);   /* positive: also a variance */
        gb[1][ch] = 0.0625f * (float)((ch * 3) % 4 - 1);
    }
    for (int i = 1; i < g->count; i++) {
        const struct layer *l = &g->layers[i];
        if (l->spec.type != LAYER_BN) continue;
        TRY(o->tensor_write(s->be->ctx, &m->p[l->param_first], gb[0]));
        TRY(o->tensor_write(s->be->ctx, &m->p[l->param_first + 1], gb[1]));
        TRY(o->tensor_write(s->be->ctx, &m->bn_rmean[i], gb[1]));
        TRY(o->tensor_write(s->be->ctx, &m->bn_rvar[i], gb[0]));
    }
    TRY(o->tensor_zero(s->be->ctx, &m->stats));
    TRY(copy_slot(s, &m->y[0], SC_X, buf));
    if (has_conv1(r))
        TRY(copy_slot(s, &m->p[g->layers[layer_of(g, "conv1")].param_first], SC_W, buf));
    if (two_blocks(r))
        TRY(copy_slot(s, &m->p[g->layers[layer_of(g, "conv2")].param_first], SC_X2, buf));
    TRY(copy_slot(s, &m->p[g->layers[layer_of(g, "linear")].param_first], SC_B, buf));
    TRY(o->tensor_read(s->be->ctx, buf, SC_T(s, SC_S0)));   /* I32 labels, raw */
    TRY(o->tensor_write(s->be->ctx, &m->labels, buf));
cleanup:
    free(buf);
    return rc;
}

/* Reads the outputs into outs[o] (each OUT_SLOTS[o]'s host count). */
static int read_outputs(float **outs, struct sc_side *s, const struct model *m,
                        const struct graph *g, const struct plan_row *r)
{
    int rc = DR_OK;
    TRY(s->be->ops->synchronize(s->be->ctx));
    for (int o = 0; o < OUT_COUNT; o++) {
        const struct tensor *list[OUT_MAX];
        size_t at = 0;
        const int n = out_list(list, o, r, g, m, s->precision);
        for (int k = 0; k < n; k++) {
            TRY(s->be->ops->tensor_read(s->be->ctx, outs[o] + at, list[k]));
            at += tensor_count(list[k]);
        }
    }
cleanup:
    return rc;
}

/* Sets DAWNRUN_CUDA_FUSE to value (NULL: unset). */
static void set_fuse(const char *value)
{
    if (value) setenv("DAWNRUN_CUDA_FUSE", value, 1);
    else unsetenv("DAWNRUN_CUDA_FUSE");
}

/* Runs the pass once from the initial state into the host outputs outs; counts (when not
 * NULL) gets what the engine counted for it. */
static int run_once(float **outs, struct backend_counters *counts, struct sc_side *s,
                    struct model *m, const struct graph *g, const struct plan_row *r,
                    struct plan *p)
{
    int rc = DR_OK;
    struct backend_counters before, after;
    TRY(reset_state(s, m, g, r));
    TRY(s->be->ops->synchronize(s->be->ctx));
    if (counts) TRY(s->be->ops->counters(s->be->ctx, &before));
    TRY(plan_compute(s->be, p));
    if (counts) {
        TRY(s->be->ops->counters(s->be->ctx, &after));
        backend_counters_diff(counts, &after, &before);
    }
    TRY(read_outputs(outs, s, m, g, r));
cleanup:
    return rc;
}

/* Whether p has a node with the batch norm inside cuDNN's convolution graphs. */
static int has_conv_nodes(const struct plan *p)
{
    for (int i = 0; i < p->count; i++)
        if (p->nodes[i].op == PLAN_CONV_FUSED_FWD || p->nodes[i].op == PLAN_CONV_FUSED_BWD)
            return 1;
    return 0;
}

static int plan_run(struct sc_side *s, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct plan_row *r = c->attr;
    const int unfused_only = c->arg;
    struct graph g = {0};
    struct model m = {0};
    struct plan p = {0};
    float *outs[OUT_COUNT] = {0}, *unfused[OUT_COUNT] = {0}, *again[OUT_COUNT] = {0};
    char *saved = getenv("DAWNRUN_CUDA_FUSE") ? strdup(getenv("DAWNRUN_CUDA_FUSE")) : NULL;
    const int counted = s->be->ops->counters != NULL;
    struct backend_counters node_counts, whole_counts;
    TRY(row_graph(&g, r));
    TRY(model_create(&m, &g, s->be, PL_N));
    set_fuse("1");   /* the plan as the builder fuses it for this engine */
    TRY(model_plan_pass(&p, &m, is_train(r), 0.0f, 1.0f / PL_N));
    set_fuse(saved);
    for (int o = 0; o < OUT_COUNT; o++) {
        outs[o] = s->host[OUT_SLOTS[o]];
        unfused[o] = malloc((s->host_n[OUT_SLOTS[o]] + 1) * sizeof(float));
        CHECK_ALLOC(unfused[o], "selfcheck plan outputs");
        again[o] = malloc((s->host_n[OUT_SLOTS[o]] + 1) * sizeof(float));
        CHECK_ALLOC(again[o], "selfcheck plan outputs");
    }
    if (!counted) {   /* the reference */
        TRY(run_once(outs, NULL, s, &m, &g, r, &p));
        goto cleanup;
    }
    set_fuse("0");
    TRY(run_once(unfused_only ? outs : unfused, &node_counts, s, &m, &g, r, &p));
    set_fuse(saved);
    if (unfused_only) goto cleanup;
    set_fuse("1");
    TRY(run_once(outs, &whole_counts, s, &m, &g, r, &p));
    TRY(run_once(again, NULL, s, &m, &g, r, &p));
    set_fuse(saved);
    for (int o = 0; o < OUT_COUNT; o++) {
        const double d = sc_error(SC_EXACT_BITS, again[o], outs[o], s->host_n[OUT_SLOTS[o]]);
        EXPECT(d == 0.0, "plan %s: %.0f values of output %d differ between two runs of the "
                         "same pass", c->name, d, o);
    }
    EXPECT(whole_counts.kernel_launches < node_counts.kernel_launches,
           "plan %s: the fused pass made %llu kernel launches, node by node %llu", c->name,
           (unsigned long long)whole_counts.kernel_launches,
           (unsigned long long)node_counts.kernel_launches);
    EXPECT(whole_counts.kernel_bytes_read + whole_counts.kernel_bytes_written <
               node_counts.kernel_bytes_read + node_counts.kernel_bytes_written,
           "plan %s: the fused pass moved %llu bytes, node by node %llu", c->name,
           (unsigned long long)(whole_counts.kernel_bytes_read + whole_counts.kernel_bytes_written),
           (unsigned long long)(node_counts.kernel_bytes_read + node_counts.kernel_bytes_written));
    /* our own fused kernels compute every value as the separate ones do */
    for (int o = 0; o < OUT_COUNT && !has_conv_nodes(&p); o++) {
        const size_t n = s->host_n[OUT_SLOTS[o]];
        const double d = sc_error(SC_EXACT_BITS, outs[o], unfused[o], n);
        EXPECT(d == 0.0, "plan %s: %.0f values of output %d differ between the fused and the "
                         "node-by-node run", c->name, d, o);
    }
cleanup:
    set_fuse(saved);
    free(saved);
    for (int o = 0; o < OUT_COUNT; o++) {
        free(unfused[o]);
        free(again[o]);
    }
    plan_free(&p);
    model_free(&m);
    graph_free(&g);
    return rc;
}

int sc_cases_plan(struct sc_table *t)
{
    int rc = DR_OK;
    for (int i = 0; i < PLAN_ROW_COUNT; i++)
        for (int unfused = 0; unfused < 2; unfused++) {
            struct sc_case c = {.group = "plan", .build = plan_build, .run = plan_run,
                                .metric = SC_MAX_REL, .tol = PL_TOL, .attr = &PLAN_ROWS[i],
                                .arg = unfused, .n_outputs = OUT_COUNT};
            for (int o = 0; o < OUT_COUNT; o++) c.outputs[o] = OUT_SLOTS[o];
            sc_name(&c, "plan", "%s%s", PLAN_ROWS[i].name, unfused ? "/unfused" : "");
            TRY(sc_table_add(t, &c));
        }
cleanup:
    return rc;
}

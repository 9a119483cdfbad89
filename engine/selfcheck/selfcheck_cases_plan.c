/* The selfcheck's plan cases (group plan): small training steps and evaluation batches
 * built by hand as plans (kernels/plan.h), run whole by the engine under test
 * (plan_compute, where an engine may fuse nodes) and node by node by the reference
 * (plan_run_each); every output, statistic and gradient is compared.
 *
 * The step: [conv1 ->] bn1 -> act -> conv2 -> bn2 -> act -> add(residual, act2) ->
 * flatten -> linear -> cross-entropy, then the backward pass (the add's backward as two
 * scaled copies) with the accumulate flags a graph gives. The residual is, by topology:
 *   residual  act1's output (conv2's backward accumulates into its gradient);
 *   acc       conv1's output (bn1's backward accumulates into its gradient);
 *   shared    bn1's output (read twice, so it must be written; act1's backward
 *             accumulates, so it cannot be folded into bn1's);
 *   nulldx    act1's output, bn1 reading the input itself (its dx NULL: no conv1);
 *   accin     act1's output, act2's backward adding into a gradient that holds values
 *             from before the step (so it cannot be folded into bn2's).
 * eval: conv1 -> bn1 (eval) -> act -> flatten -> linear -> cross-entropy forward;
 * eval_shared: the step's forward in eval mode with bn1's output as the residual (read
 * by the add alone, besides act1);
 * eval_views: two test-time views, each a scale of x (as a batch node rewrites the input)
 * and the step's forward in eval mode over the same tensors, their logits summed with
 * weights (scaled copies) before the cross-entropy: each view's pass fuses on its own;
 * pool: conv1 -> bn1 -> act -> max pool (3x3 windows tiling the 6x6 plane) -> flatten ->
 * linear -> cross-entropy and the backward (the pool folded into the batch norm's passes,
 * the activation's output and gradient never written); eval_pool: its forward in eval
 * mode. The rows cover every activation kind, ghost batch
 * norm, and channel counts that allow 16-byte packs (8) and that do not (6).
 *
 * On an engine that counts its work (backend_ops.counters), a case runs the step three
 * times: node by node (DAWNRUN_CUDA_FUSE=0); whole with the engine's own fused kernels
 * only (DAWNRUN_CUDA_FUSE_CONV=0), which must make fewer kernel launches and move fewer
 * bytes, and give the same bits, as the node-by-node run; and whole as the environment
 * says (the batch norm inside cuDNN's convolutions where it fuses: cuDNN's arithmetic,
 * not ours), the run compared with the reference; in the half precisions, where that run
 * has cuDNN's fused graphs, it runs a second time and must give the same bits (the engine
 * is asked for deterministic algorithms and engines: selfcheck_run). The "/unfused"
 * variant compares the node-by-node run itself with the reference. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/plan.h"
#include "kernels/precision.h"
#include "selfcheck_case.h"

#define PL_N 8      /* images */
#define PL_HW 6     /* height = width */
#define PL_K 10     /* classes */
#define PL_CIN 3    /* input channels before conv1 */
#define PL_TOL {1e-3, 0.5, 0.5}

enum pl_topo { TOPO_RESIDUAL, TOPO_ACC, TOPO_SHARED, TOPO_NULLDX, TOPO_ACCIN, TOPO_POOL,
                TOPO_EVAL, TOPO_EVAL_SHARED, TOPO_EVAL_VIEWS, TOPO_EVAL_POOL };
#define PL_POOL 3   /* the pool topologies' window and stride */

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
    {"accin_gelu", TOPO_ACCIN, ACT_GELU, 1, 8},
    {"eval_relu", TOPO_EVAL, ACT_RELU, 1, 8},
    {"eval_gelu_c6", TOPO_EVAL, ACT_GELU, 1, 6},
    {"eval_shared_celu", TOPO_EVAL_SHARED, ACT_CELU, 1, 8},
    {"eval_views_relu", TOPO_EVAL_VIEWS, ACT_RELU, 1, 8},
    {"eval_views_gelu_c6", TOPO_EVAL_VIEWS, ACT_GELU, 1, 6},
    {"pool_relu", TOPO_POOL, ACT_RELU, 1, 8},
    {"pool_gelu_c6", TOPO_POOL, ACT_GELU, 1, 6},
    {"pool_hardswish_c6", TOPO_POOL, ACT_HARDSWISH, 1, 6},
    {"eval_pool_celu", TOPO_EVAL_POOL, ACT_CELU, 1, 8},
};
#define PLAN_ROW_COUNT ((int)(sizeof(PLAN_ROWS) / sizeof(PLAN_ROWS[0])))

/* The tensors one side allocates for itself (the inputs are the case's slots). */
enum pl_t {
    T_C1, T_Y1, T_A1, T_C2, T_Y2, T_A2, T_S, T_F, T_L, T_P, T_STATS,
    T_G1, T_B1, T_SM1, T_SI1, T_RM1, T_RV1, T_G2, T_B2, T_SM2, T_SI2, T_RM2, T_RV2,
    T_DL, T_DF, T_DS, T_DA2, T_DY2, T_DC2, T_DA1, T_DY1, T_DC1, T_DXIN,
    T_DW1, T_DW2, T_DW3, T_DG1, T_DB1, T_DG2, T_DB2,
    T_XV, T_VS,   /* eval_views: a view's input, the weighted sum of the views' logits */
    T_PO, T_DPO,  /* pool: the pool's output and its gradient */
    T_COUNT
};

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

struct pl_net {
    struct tensor t[T_COUNT];
    const struct tensor *x, *w1, *w2, *w3, *labels;   /* the case's slots */
    const struct tensor *bn1_in, *residual;
    struct tensor *d_residual, *d_bn1_in;
};

static int has_conv1(const struct plan_row *r)
{
    return r->topo != TOPO_NULLDX;
}

/* Whether row r's plan is a training step (else an evaluation batch), and whether it has
 * the second block (conv2, bn2, act2, add). */
static int is_train(const struct plan_row *r)
{
    return r->topo < TOPO_EVAL;
}

/* Whether row r's act1 output goes through the max pool (one block). */
static int pooled(const struct plan_row *r)
{
    return r->topo == TOPO_POOL || r->topo == TOPO_EVAL_POOL;
}

static int two_blocks(const struct plan_row *r)
{
    return r->topo != TOPO_EVAL && !pooled(r);
}

/* The features the linear layer reads. */
static int features(const struct plan_row *r)
{
    const int side = pooled(r) ? PL_HW / PL_POOL : PL_HW;
    return r->channels * side * side;
}

/* The test-time views of row r's evaluation (1: none), and each view's scale of x and
 * weight. */
static int views(const struct plan_row *r)
{
    return r->topo == TOPO_EVAL_VIEWS ? 2 : 1;
}
static const float VIEW_SCALE[2] = {0.5f, -1.0f}, VIEW_WEIGHT[2] = {0.75f, 0.25f};

static int x_channels(const struct plan_row *r)
{
    return has_conv1(r) ? PL_CIN : r->channels;
}

/* The tensors of host output `out`, in order, into list; returns their number. */
static int out_list(int *list, int out, const struct plan_row *r)
{
    int n = 0;
    const int train = is_train(r), conv1 = has_conv1(r);
    switch (out) {
    case 0:   /* not act2's output, which only the add reads (a fused step may skip it);
                 nor, in a training step whose act1 output only conv2 reads (acc), act1's
                 output, which the batch norm inside the convolutions never writes */
        if (pooled(r)) list[n++] = T_PO;   /* act1's output is never written there */
        else if (!(train && r->topo == TOPO_ACC)) list[n++] = T_A1;
        if (two_blocks(r)) list[n++] = T_S;
        break;
    case 1:
        list[n++] = T_L, list[n++] = T_P;
        if (views(r) > 1) list[n++] = T_VS;
        break;
    case 2: list[n++] = T_STATS; break;
    case 3:
        if (!train) break;
        if (conv1) list[n++] = T_DW1;
        if (two_blocks(r)) list[n++] = T_DW2;
        list[n++] = T_DW3, list[n++] = T_DG1, list[n++] = T_DB1;
        if (two_blocks(r)) list[n++] = T_DG2, list[n++] = T_DB2;
        break;
    case 4:
        if (!train) break;
        if (conv1) list[n++] = T_DXIN, list[n++] = T_DC1;
        if (two_blocks(r)) list[n++] = T_DC2, list[n++] = T_DS;
        if (r->topo != TOPO_ACC && !pooled(r)) list[n++] = T_DA1;   /* likewise its gradient */
        if (pooled(r)) list[n++] = T_DPO;
        break;
    case 5:
        list[n++] = T_RM1, list[n++] = T_RV1;
        if (!train && two_blocks(r)) list[n++] = T_RM2, list[n++] = T_RV2;
        if (train) list[n++] = T_SM1, list[n++] = T_SI1;
        if (train && two_blocks(r))
            list[n++] = T_SM2, list[n++] = T_SI2, list[n++] = T_RM2, list[n++] = T_RV2;
        break;
    }
    return n;
}

/* The shape of tensor i of the net of row r. */
static struct tensor pl_shape(int i, const struct plan_row *r)
{
    const int c = r->channels, s = r->splits > 1 ? r->splits : 1;
    const int feat = features(r), side = PL_HW / PL_POOL;
    switch ((enum pl_t)i) {
    case T_C1: case T_Y1: case T_A1: case T_C2: case T_Y2: case T_A2: case T_S:
    case T_DS: case T_DA2: case T_DY2: case T_DC2: case T_DA1: case T_DY1: case T_DC1:
        return (struct tensor){NULL, TENSOR_ACT, PL_N, c, PL_HW, PL_HW};
    case T_DXIN: case T_XV:
        return (struct tensor){NULL, TENSOR_ACT, PL_N, x_channels(r), PL_HW, PL_HW};
    case T_VS: return (struct tensor){NULL, TENSOR_ACT, PL_N, PL_K, 1, 1};
    case T_PO: case T_DPO: return (struct tensor){NULL, TENSOR_ACT, PL_N, c, side, side};
    case T_F: case T_DF: return (struct tensor){NULL, TENSOR_ACT, PL_N, feat, 1, 1};
    case T_L: case T_P: case T_DL: return (struct tensor){NULL, TENSOR_ACT, PL_N, PL_K, 1, 1};
    case T_STATS: return (struct tensor){NULL, TENSOR_F32, 2, 1, 1, 1};
    case T_G1: case T_B1: case T_G2: case T_B2:
    case T_DG1: case T_DB1: case T_DG2: case T_DB2:
        return (struct tensor){NULL, TENSOR_PARAM, c, 1, 1, 1};
    case T_SM1: case T_SI1: case T_SM2: case T_SI2:
        return (struct tensor){NULL, TENSOR_F32, s * c, 1, 1, 1};
    case T_RM1: case T_RV1: case T_RM2: case T_RV2:
        return (struct tensor){NULL, TENSOR_F32, c, 1, 1, 1};
    case T_DW1: return (struct tensor){NULL, TENSOR_PARAM, c, PL_CIN, 3, 3};
    case T_DW2: return (struct tensor){NULL, TENSOR_PARAM, c, c, 3, 3};
    case T_DW3: return (struct tensor){NULL, TENSOR_PARAM, PL_K, feat, 1, 1};
    case T_COUNT: break;
    }
    return (struct tensor){0};
}

/* The case's inputs: x SC_X, conv1's weights SC_W, conv2's SC_X2, the linear layer's SC_B,
 * labels SC_S0; the host outputs. */
static int plan_build(struct sc_env *e, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct plan_row *r = c->attr;
    const int ch = r->channels;
    static const char *const names[OUT_COUNT] = {"acts", "logits", "loss", "dparams", "dacts",
                                                 "bnstats"};
    int32_t labels[PL_N];
    float u[PL_N];
    TRY(sc_tensor(e, SC_X, "x", TENSOR_ACT, PL_N, x_channels(r), PL_HW, PL_HW));
    TRY(sc_random(e, SC_X, -1.0f, 1.0f));
    if (has_conv1(r)) {
        TRY(sc_tensor(e, SC_W, "w1", TENSOR_PARAM, ch, PL_CIN, 3, 3));
        TRY(sc_random(e, SC_W, -0.4f, 0.4f));
    }
    TRY(sc_tensor(e, SC_X2, "w2", TENSOR_PARAM, ch, ch, 3, 3));
    TRY(sc_random(e, SC_X2, -0.2f, 0.2f));
    TRY(sc_tensor(e, SC_B, "w3", TENSOR_PARAM, PL_K, features(r), 1, 1));
    TRY(sc_random(e, SC_B, -0.1f, 0.1f));
    TRY(sc_tensor(e, SC_S0, "labels", TENSOR_I32, PL_N, 1, 1, 1));
    sc_uniform(e, u, PL_N, 0.0f, (float)PL_K);
    for (int i = 0; i < PL_N; i++) labels[i] = (int32_t)u[i] % PL_K;
    TRY(sc_write_raw(e, SC_S0, labels));
    for (int o = 0; o < OUT_COUNT; o++) {
        int list[T_COUNT];
        size_t count = 0;
        const int n = out_list(list, o, r);
        for (int k = 0; k < n; k++) {
            struct tensor t = pl_shape(list[k], r);
            count += tensor_count(&t);
        }
        TRY(sc_host(e, OUT_SLOTS[o], names[o], count));
    }
cleanup:
    return rc;
}

static struct plan_node *node(struct plan *p, enum plan_op op, enum plan_phase phase)
{
    return plan_append(p, op, phase, -1);
}

/* Builds the step of row r over net's tensors into p. */
static int build_plan(struct plan *p, struct pl_net *net, const struct plan_row *r)
{
    int rc = DR_OK;
    struct tensor *t = net->t;
    struct plan_node *n;
    const struct conv_attr conv = {3, 1, 1};
    const struct bn_attr bn = {1e-5f, 0.1f, r->splits};
    const struct pool_attr pool = {POOL_MAX, PL_POOL, PL_POOL, PL_POOL, PL_POOL};
    const int train = is_train(r), conv1 = has_conv1(r);
    const float alpha = 0.75f;
/* Sets n's slots: SLOTS(DST(outputs...), SRC(inputs...)). */
#define DST PLAN_DSTS
#define SRC PLAN_SRCS
#define SLOTS(dsts, srcs) plan_node_set_tensors(n, dsts, srcs)
#define NODE(op, phase)                                                                    \
    do {                                                                                   \
        n = node(p, (op), (phase));                                                        \
        CHECK_ALLOC(n, "a selfcheck plan");                                                \
    } while (0)
    for (int v = 0; v < views(r); v++) {
        const struct tensor *in = net->x;
        if (views(r) > 1) {   /* the view's batch */
            NODE(PLAN_SCALE_FWD, PLAN_PHASE_BATCH);
            SLOTS(DST(&t[T_XV]), SRC(net->x));
            n->par.scale.s = VIEW_SCALE[v];
            in = &t[T_XV];
        }
        if (conv1) {
            NODE(PLAN_CONV_FWD, PLAN_PHASE_FORWARD);
            SLOTS(DST(&t[T_C1]), SRC(in, net->w1, NULL));
            n->par.conv = conv;
        }
        if (train) {
            NODE(PLAN_BN_FWD_TRAIN, PLAN_PHASE_FORWARD);
            SLOTS(DST(&t[T_Y1], &t[T_SM1], &t[T_SI1], &t[T_RM1], &t[T_RV1]),
                  SRC(net->bn1_in, &t[T_G1], &t[T_B1]));
            n->par.bn = bn;
        } else {
            NODE(PLAN_BN_FWD_EVAL, PLAN_PHASE_FORWARD);
            SLOTS(DST(&t[T_Y1]), SRC(net->bn1_in, &t[T_G1], &t[T_B1], &t[T_RM1], &t[T_RV1]));
            n->par.bn = bn;
        }
        NODE(PLAN_ACT_FWD, PLAN_PHASE_FORWARD);
        SLOTS(DST(&t[T_A1]), SRC(&t[T_Y1]));
        n->par.act.kind = r->kind;
        n->par.act.alpha = alpha;
        const struct tensor *head = &t[T_A1];
        if (pooled(r)) {
            NODE(PLAN_POOL_FWD, PLAN_PHASE_FORWARD);
            SLOTS(DST(&t[T_PO]), SRC(&t[T_A1]));
            n->par.pool = pool;
            head = &t[T_PO];
        }
        if (two_blocks(r)) {
            NODE(PLAN_CONV_FWD, PLAN_PHASE_FORWARD);
            SLOTS(DST(&t[T_C2]), SRC(&t[T_A1], net->w2, NULL));
            n->par.conv = conv;
            if (train) {
                NODE(PLAN_BN_FWD_TRAIN, PLAN_PHASE_FORWARD);
                SLOTS(DST(&t[T_Y2], &t[T_SM2], &t[T_SI2], &t[T_RM2], &t[T_RV2]),
                      SRC(&t[T_C2], &t[T_G2], &t[T_B2]));
                n->par.bn = bn;
            } else {
                NODE(PLAN_BN_FWD_EVAL, PLAN_PHASE_FORWARD);
                SLOTS(DST(&t[T_Y2]), SRC(&t[T_C2], &t[T_G2], &t[T_B2], &t[T_RM2], &t[T_RV2]));
                n->par.bn = bn;
            }
            NODE(PLAN_ACT_FWD, PLAN_PHASE_FORWARD);
            SLOTS(DST(&t[T_A2]), SRC(&t[T_Y2]));
            n->par.act.kind = r->kind;
            n->par.act.alpha = alpha;
            NODE(PLAN_ADD_FWD, PLAN_PHASE_FORWARD);
            SLOTS(DST(&t[T_S]), SRC(net->residual, &t[T_A2]));
            head = &t[T_S];
        }
        NODE(PLAN_FLATTEN_FWD, PLAN_PHASE_FORWARD);
        SLOTS(DST(&t[T_F]), SRC(head));
        NODE(PLAN_LINEAR_FWD, PLAN_PHASE_FORWARD);
        SLOTS(DST(&t[T_L]), SRC(&t[T_F], net->w3, NULL));
        if (views(r) > 1) {
            NODE(PLAN_SCALED_COPY, PLAN_PHASE_LOSS);
            SLOTS(DST(&t[T_VS]), SRC(&t[T_L]));
            n->par.scale.s = VIEW_WEIGHT[v];
            n->acc = v > 0;
        }
    }
    NODE(PLAN_XENT_FWD, PLAN_PHASE_LOSS);
    SLOTS(DST(&t[T_STATS], &t[T_P]), SRC(views(r) > 1 ? &t[T_VS] : &t[T_L], net->labels));
    n->par.xent.smoothing = 0.0f;
    if (!train) goto cleanup;

    NODE(PLAN_XENT_BWD, PLAN_PHASE_LOSS);
    SLOTS(DST(&t[T_DL]), SRC(&t[T_P], net->labels));
    n->par.xent.smoothing = 0.0f;
    n->par.xent.scale = 1.0f / PL_N;
    NODE(PLAN_LINEAR_BWD, PLAN_PHASE_BACKWARD);
    SLOTS(DST(&t[T_DF], &t[T_DW3], NULL), SRC(&t[T_DL], &t[T_F], net->w3));
    NODE(PLAN_FLATTEN_BWD, PLAN_PHASE_BACKWARD);
    SLOTS(DST(pooled(r) ? &t[T_DPO] : &t[T_DS]), SRC(&t[T_DF]));
    if (pooled(r)) {
        NODE(PLAN_POOL_BWD, PLAN_PHASE_BACKWARD);
        SLOTS(DST(&t[T_DA1]), SRC(&t[T_DPO], &t[T_A1], &t[T_PO]));
        n->par.pool = pool;
    } else {   /* the second block: the add's backward, act2, bn2, conv2 */
        NODE(PLAN_SCALED_COPY, PLAN_PHASE_BACKWARD);
        SLOTS(DST(&t[T_DA2]), SRC(&t[T_DS]));
        n->par.scale.s = 1.0f;
        NODE(PLAN_SCALED_COPY, PLAN_PHASE_BACKWARD);
        SLOTS(DST(net->d_residual), SRC(&t[T_DS]));
        n->par.scale.s = 1.0f;
        NODE(PLAN_ACT_BWD, PLAN_PHASE_BACKWARD);
        SLOTS(DST(&t[T_DY2]), SRC(&t[T_DA2], &t[T_Y2]));
        n->par.act.kind = r->kind;
        n->par.act.alpha = alpha;
        n->acc = r->topo == TOPO_ACCIN;
        NODE(PLAN_BN_BWD, PLAN_PHASE_BACKWARD);
        SLOTS(DST(&t[T_DC2], &t[T_DG2], &t[T_DB2]),
              SRC(&t[T_DY2], &t[T_C2], &t[T_G2], &t[T_SM2], &t[T_SI2]));
        NODE(PLAN_CONV_BWD, PLAN_PHASE_BACKWARD);
        SLOTS(DST(&t[T_DA1], &t[T_DW2], NULL), SRC(&t[T_DC2], &t[T_A1], net->w2));
        n->par.conv = conv;
        n->acc = net->d_residual == &t[T_DA1];
    }
    NODE(PLAN_ACT_BWD, PLAN_PHASE_BACKWARD);
    SLOTS(DST(&t[T_DY1]), SRC(&t[T_DA1], &t[T_Y1]));
    n->par.act.kind = r->kind;
    n->par.act.alpha = alpha;
    n->acc = net->d_residual == &t[T_DY1];
    NODE(PLAN_BN_BWD, PLAN_PHASE_BACKWARD);
    SLOTS(DST(net->d_bn1_in, &t[T_DG1], &t[T_DB1]),
          SRC(&t[T_DY1], net->bn1_in, &t[T_G1], &t[T_SM1], &t[T_SI1]));
    n->acc = net->d_residual == &t[T_DC1];
    if (conv1) {
        NODE(PLAN_CONV_BWD, PLAN_PHASE_BACKWARD);
        SLOTS(DST(&t[T_DXIN], &t[T_DW1], NULL), SRC(&t[T_DC1], net->x, net->w1));
        n->par.conv = conv;
    }
#undef NODE
#undef SLOTS
#undef SRC
#undef DST
cleanup:
    return rc;
}

/* The step's state before a run: batch-norm parameters and running statistics, the loss
 * sums; every other tensor of the net NaN, so that a value a run fails to write shows
 * (not one left by an earlier run). */
static int reset_state(struct sc_side *s, struct pl_net *net, const struct plan_row *r)
{
    int rc = DR_OK;
    const struct backend_ops *o = s->be->ops;
    float g[64], b[64], *nan = NULL;
    size_t most = 0;
    for (int i = 0; i < T_COUNT; i++)
        if (tensor_count(&net->t[i]) > most) most = tensor_count(&net->t[i]);
    nan = malloc(most * sizeof(float));
    CHECK_ALLOC(nan, "selfcheck plan state");
    for (size_t i = 0; i < most; i++) nan[i] = NAN;
    for (int i = 0; i < T_COUNT; i++)
        if (net->t[i].kind == TENSOR_ACT || i == T_SM1 || i == T_SI1 || i == T_SM2 ||
            i == T_SI2 || i >= T_DW1)
            TRY(o->tensor_write(s->be->ctx, &net->t[i], nan));
    for (int ch = 0; ch < r->channels; ch++) {
        g[ch] = 1.0f + 0.125f * (float)((ch * 7) % 5 - 2);   /* positive: also a variance */
        b[ch] = 0.0625f * (float)((ch * 3) % 4 - 1);
    }
    TRY(o->tensor_write(s->be->ctx, &net->t[T_G1], g));
    TRY(o->tensor_write(s->be->ctx, &net->t[T_B1], b));
    TRY(o->tensor_write(s->be->ctx, &net->t[T_G2], g));
    TRY(o->tensor_write(s->be->ctx, &net->t[T_B2], b));
    for (int i = T_RM1; i <= T_RV2; i += T_RM2 - T_RM1) {   /* rm1, rv1, then rm2, rv2 */
        TRY(o->tensor_write(s->be->ctx, &net->t[i], b));
        TRY(o->tensor_write(s->be->ctx, &net->t[i + 1], g));
    }
    TRY(o->tensor_zero(s->be->ctx, &net->t[T_STATS]));
    if (r->topo == TOPO_ACCIN) {   /* what act2's backward adds to */
        for (size_t i = 0; i < tensor_count(&net->t[T_DY2]); i++)
            nan[i] = 0.01f * (float)((int)(i % 7) - 3);
        TRY(o->tensor_write(s->be->ctx, &net->t[T_DY2], nan));
    }
cleanup:
    free(nan);
    return rc;
}

/* Reads the outputs into outs[o] (each OUT_SLOTS[o]'s host count). */
static int read_outputs(float **outs, struct sc_side *s, struct pl_net *net,
                        const struct plan_row *r)
{
    int rc = DR_OK;
    TRY(s->be->ops->synchronize(s->be->ctx));
    for (int o = 0; o < OUT_COUNT; o++) {
        int list[T_COUNT];
        size_t at = 0;
        const int n = out_list(list, o, r);
        for (int k = 0; k < n; k++) {
            const struct tensor *t = &net->t[list[k]];
            TRY(s->be->ops->tensor_read(s->be->ctx, outs[o] + at, t));
            at += tensor_count(t);
        }
    }
cleanup:
    return rc;
}

/* Sets the environment variable var to value (NULL: unset). */
static void set_env(const char *var, const char *value)
{
    if (value) setenv(var, value, 1);
    else unsetenv(var);
}

/* Sets DAWNRUN_CUDA_FUSE to value (NULL: unset). */
static void set_fuse(const char *value)
{
    set_env("DAWNRUN_CUDA_FUSE", value);
}

/* Runs the step once from the initial state into the host outputs outs; counts (when not
 * NULL) gets what the engine counted for it. */
static int run_once(float **outs, struct backend_counters *counts, struct sc_side *s,
                    struct pl_net *net, const struct plan_row *r, struct plan *p,
                    int whole)
{
    int rc = DR_OK;
    struct backend_counters before, after;
    TRY(reset_state(s, net, r));
    TRY(s->be->ops->synchronize(s->be->ctx));
    if (counts) TRY(s->be->ops->counters(s->be->ctx, &before));
    TRY(whole ? plan_compute(s->be, p) : plan_run_each(s->be, p, NULL, NULL));
    if (counts) {
        TRY(s->be->ops->counters(s->be->ctx, &after));
        backend_counters_diff(counts, &after, &before);
    }
    TRY(read_outputs(outs, s, net, r));
cleanup:
    return rc;
}

static int plan_run(struct sc_side *s, const struct sc_case *c)
{
    int rc = DR_OK;
    const struct plan_row *r = c->attr;
    const int unfused_only = c->arg;
    struct pl_net net;
    struct plan p = {0};
    float *outs[OUT_COUNT] = {0}, *unfused[OUT_COUNT] = {0}, *ownfused[OUT_COUNT] = {0};
    float *again[OUT_COUNT] = {0};
    char *saved = getenv("DAWNRUN_CUDA_FUSE") ? strdup(getenv("DAWNRUN_CUDA_FUSE")) : NULL;
    char *saved_conv =
        getenv("DAWNRUN_CUDA_FUSE_CONV") ? strdup(getenv("DAWNRUN_CUDA_FUSE_CONV")) : NULL;
    const int counted = s->be->ops->counters != NULL;
    memset(&net, 0, sizeof(net));
    for (int i = 0; i < T_COUNT; i++) {
        net.t[i] = pl_shape(i, r);
        TRY(s->be->ops->tensor_alloc(s->be->ctx, &net.t[i]));
    }
    net.x = SC_T(s, SC_X);
    net.w1 = SC_T(s, SC_W);
    net.w2 = SC_T(s, SC_X2);
    net.w3 = SC_T(s, SC_B);
    net.labels = SC_T(s, SC_S0);
    net.bn1_in = has_conv1(r) ? &net.t[T_C1] : net.x;
    net.d_bn1_in = has_conv1(r) ? &net.t[T_DC1] : NULL;
    net.residual = r->topo == TOPO_ACC ? &net.t[T_C1]
                   : r->topo == TOPO_SHARED || r->topo == TOPO_EVAL_SHARED ? &net.t[T_Y1]
                                                                           : &net.t[T_A1];
    net.d_residual = r->topo == TOPO_ACC ? &net.t[T_DC1]
                     : r->topo == TOPO_SHARED ? &net.t[T_DY1] : &net.t[T_DA1];
    TRY(build_plan(&p, &net, r));
    for (int o = 0; o < OUT_COUNT; o++) {
        outs[o] = s->host[OUT_SLOTS[o]];
        unfused[o] = malloc((s->host_n[OUT_SLOTS[o]] + 1) * sizeof(float));
        CHECK_ALLOC(unfused[o], "selfcheck plan outputs");
        ownfused[o] = malloc((s->host_n[OUT_SLOTS[o]] + 1) * sizeof(float));
        CHECK_ALLOC(ownfused[o], "selfcheck plan outputs");
        again[o] = malloc((s->host_n[OUT_SLOTS[o]] + 1) * sizeof(float));
        CHECK_ALLOC(again[o], "selfcheck plan outputs");
    }
    if (!counted) {   /* the reference: node by node */
        TRY(run_once(outs, NULL, s, &net, r, &p, 0));
        goto cleanup;
    }
    struct backend_counters node_counts, whole_counts;
    set_fuse("0");
    TRY(run_once(unfused_only ? outs : unfused, &node_counts, s, &net, r, &p, 1));
    set_fuse(saved);
    if (unfused_only) goto cleanup;
    /* our own fused kernels, without the batch norm inside cuDNN's convolutions (whose
     * arithmetic is cuDNN's: the run after this one, compared with the reference) */
    set_fuse("1");
    set_env("DAWNRUN_CUDA_FUSE_CONV", "0");
    TRY(run_once(ownfused, &whole_counts, s, &net, r, &p, 1));
    set_env("DAWNRUN_CUDA_FUSE_CONV", saved_conv);
    TRY(run_once(outs, NULL, s, &net, r, &p, 1));
    if (s->precision != PRECISION_FP32) {
        /* the batch norm inside cuDNN's fused graphs (half precisions only): cuDNN's engines,
         * which the engine asked for deterministic (selfcheck_run), give the same bits again */
        TRY(run_once(again, NULL, s, &net, r, &p, 1));
        for (int o = 0; o < OUT_COUNT; o++) {
            const double d = sc_error(SC_EXACT_BITS, again[o], outs[o], s->host_n[OUT_SLOTS[o]]);
            EXPECT(d == 0.0, "plan %s: %.0f values of output %d differ between two runs of the "
                             "same step", c->name, d, o);
        }
    }
    set_fuse(saved);
    EXPECT(whole_counts.kernel_launches < node_counts.kernel_launches,
           "plan %s: the fused step made %llu kernel launches, node by node %llu", c->name,
           (unsigned long long)whole_counts.kernel_launches,
           (unsigned long long)node_counts.kernel_launches);
    EXPECT(whole_counts.kernel_bytes_read + whole_counts.kernel_bytes_written <
               node_counts.kernel_bytes_read + node_counts.kernel_bytes_written,
           "plan %s: the fused step moved %llu bytes, node by node %llu", c->name,
           (unsigned long long)(whole_counts.kernel_bytes_read + whole_counts.kernel_bytes_written),
           (unsigned long long)(node_counts.kernel_bytes_read + node_counts.kernel_bytes_written));
    for (int o = 0; o < OUT_COUNT; o++) {
        const size_t n = s->host_n[OUT_SLOTS[o]];
        const double d = sc_error(SC_EXACT_BITS, ownfused[o], unfused[o], n);
        EXPECT(d == 0.0, "plan %s: %.0f values of output %d differ between the fused and the "
                         "node-by-node run", c->name, d, o);
    }
cleanup:
    set_fuse(saved);
    set_env("DAWNRUN_CUDA_FUSE_CONV", saved_conv);
    free(saved);
    free(saved_conv);
    for (int o = 0; o < OUT_COUNT; o++) {
        free(unfused[o]);
        free(ownfused[o]);
        free(again[o]);
    }
    plan_free(&p);
    for (int i = 0; i < T_COUNT; i++)
        if (net.t[i].data) s->be->ops->tensor_free(s->be->ctx, &net.t[i]);
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

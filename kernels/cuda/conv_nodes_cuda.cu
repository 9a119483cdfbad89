/* The CUDA engine's nodes with a batch norm inside the convolutions (kernels/plan.h:
 * CONV_FUSED_FWD, CONV_FUSED_BWD, BN_APPLY_BWD, ADD_PRO, and the BN_ACT_TRAIN nodes with a
 * batch norm's vectors or a recomputed operand): which it takes (cuda_conv_nodes_supported)
 * and the runners of the first four, handing the nodes' slots to cuDNN's fused graphs
 * (conv_fused_cuda.cu) and to the passes of our own around them (conv_bn_cuda.cu,
 * bn_cuda.cu); the BN_ACT_TRAIN runner is fused_nodes_cuda.cu's, all variants. A batch norm's
 * vectors (enum plan_bn_vec) are one tensor of the plan's builder per batch norm: the sums
 * the convolution writing its x takes, its apply's scale and bias (in the compute type),
 * its weight gradients where its own tensors do not take them, and its input gradient's
 * coefficients.
 *
 * The engine is asked about a node when the builder builds it and again at each of its
 * runs (plan_run_node), so the answer must not change in between, or a node's partner
 * (the batch norm reading a convolution's sums, the convolution reading a batch norm's
 * vectors) would meet its decomposition: c->fuse_conv is read once per engine, and a
 * convolution's graph, built when the builder asked, is found built (a training step's
 * shapes do not change). An evaluation batch's smaller last batch may build new graphs at
 * its plan's first (eager) run; its convolution nodes (an add after, no prologue, no sums)
 * have no partner, so a refusal there runs the node alone as its decomposition.
 *
 * The batch norm goes inside the convolutions in the half precisions only: in fp32 the
 * engine's convolutions are FMA-only to match the CPU engine (conv_cuda.cu), and cuDNN's
 * fused engines may compute fp32 on TF32 tensor cores (the graph API has no math type). */
#include "cuda_internal.h"

#include "conv_bn_cuda.h"
#include "conv_fused_cuda.h"

/* The prologue (apply and ReLU) of the batch norm whose vectors vec are. */
static struct cuda_conv_prologue prologue_of(const struct tensor *vec)
{
    return {cuda_bn_vec(vec, PLAN_BNV_SCALE), cuda_bn_vec(vec, PLAN_BNV_BIAS)};
}

static int has_data(const struct tensor *t)
{
    return t && t->data;
}

/* CONV_FUSED_FWD node n's graph: the input through the prologue's apply when it has one,
 * the residual added (recomputed through its batch norm's apply when the node says so)
 * and the sum written as the add's output, the output summed for the next batch norm.
 * pro and res_pro hold the prologues the arguments point to. */
static struct cuda_conv_fused_args fwd_args(const struct plan_node *n,
                                            struct cuda_conv_prologue *pro,
                                            struct cuda_conv_prologue *res_pro)
{
    struct cuda_conv_fused_args args = {};
    const struct tensor *px = n->src[PLAN_CF_PRO_X], *rx = n->src[PLAN_CF_RES_X];
    const struct tensor *sums = n->dst[PLAN_CF_SUMS];
    args.kind = CUDA_CONV_FUSED_FWD;
    args.a = &n->par.conv;
    args.y = n->dst[PLAN_CF_OUT] ? n->dst[PLAN_CF_OUT] : n->dst[PLAN_Y];
    args.x = px ? px : n->src[PLAN_X];
    args.w = n->src[PLAN_W];
    if (px) {
        *pro = prologue_of(n->src[PLAN_CF_PRO_VEC]);
        args.pro = pro;
    }
    if (sums) {
        args.sum = cuda_bn_vec(sums, PLAN_BNV_SUM);
        args.sqsum = cuda_bn_vec(sums, PLAN_BNV_SQSUM);
    }
    if (n->src[PLAN_CF_RES]) {
        args.res = rx ? rx : n->src[PLAN_CF_RES];
        if (rx) {
            *res_pro = prologue_of(n->src[PLAN_CF_RES_VEC]);
            args.res_pro = res_pro;
        }
    }
    return args;
}

/* CONV_FUSED_BWD node n's weight gradient, x read as the batch norm's x through the
 * prologue pro. */
static struct cuda_conv_fused_args wgrad_args(const struct plan_node *n,
                                              const struct cuda_conv_prologue *pro)
{
    struct cuda_conv_fused_args args = {};
    args.kind = CUDA_CONV_FUSED_WGRAD;
    args.a = &n->par.conv;
    args.dw = n->dst[PLAN_DW];
    args.x = n->src[PLAN_CB_PRO_X];
    args.w = n->src[PLAN_BWD_W];
    args.dy = n->src[PLAN_DY];
    args.pro = pro;
    return args;
}

/* CONV_FUSED_BWD node n's data gradient (plus what dx holds when the node adds to it: the
 * gradient the activation's other readers gave it) through the ReLU's mask into the batch
 * norm's dy (PLAN_CB_DZ), with its weight gradients (its own tensors, or the vectors'
 * where it has none) and its input gradient's coefficients. */
static struct cuda_conv_fused_args dgrad_dbn_args(const struct plan_node *n)
{
    struct cuda_conv_fused_args args = {};
    const struct tensor *vec = n->dst[PLAN_CB_VEC];
    const struct tensor *dg = n->dst[PLAN_CB_DGAMMA], *db = n->dst[PLAN_CB_DBETA];
    args.kind = CUDA_CONV_FUSED_DGRAD_DBN;
    args.a = &n->par.conv;
    args.dz = n->dst[PLAN_CB_DZ];
    args.dscale = has_data(dg) ? (float *)dg->data : cuda_bn_vec(vec, PLAN_BNV_DSCALE);
    args.dbias = has_data(db) ? (float *)db->data : cuda_bn_vec(vec, PLAN_BNV_DBIAS);
    args.eq_dy = cuda_bn_vec(vec, PLAN_BNV_EQ_DY);
    args.eq_x = cuda_bn_vec(vec, PLAN_BNV_EQ_X);
    args.eq_b = cuda_bn_vec(vec, PLAN_BNV_EQ_B);
    args.dy = n->src[PLAN_DY];
    args.w = n->src[PLAN_BWD_W];
    args.x = n->src[PLAN_CB_PRO_X];
    args.mean = (const float *)n->src[PLAN_CB_MEAN]->data;
    args.invstd = (const float *)n->src[PLAN_CB_INVSTD]->data;
    args.gamma = (const float *)n->src[PLAN_CB_GAMMA]->data;
    args.beta = (const float *)n->src[PLAN_CB_BETA]->data;
    args.res = PLAN_NODE_ACC(n, PLAN_DX) ? n->dst[PLAN_DX] : NULL;
    return args;
}

/* Whether cuDNN runs the graph of args (built and tried at the first question for its
 * key; an error while asking is said by conv_fused_cuda.cu and taken as no). */
static int usable(struct cuda_ctx *c, const struct cuda_conv_fused_args *args)
{
    return cuda_conv_fused_usable(c, args) > 0;
}

/* A BN_ACT_TRAIN node with vectors or a recomputed operand: its vectors of one part (the
 * rule checked), and the coefficients a batch norm without the convolution's sums
 * computes kept for the prologue (PLAN_BNA_COEF) when it writes no elementwise output. */
static int bn_vec_node_ok(const struct plan_node *n)
{
    if (!n->dst[PLAN_BNA_VEC]) return 1;
    return n->src[PLAN_BNA_VEC_IN] || n->dst[PLAN_BNA_COEF];
}

int cuda_conv_nodes_supported(struct cuda_ctx *c, const struct plan_node *n)
{
    if (c->dt == CUDA_F32 || !c->fuse_conv) return 0;
    switch (n->op) {
    case PLAN_CONV_FUSED_FWD: {
        struct cuda_conv_prologue pro, res_pro;
        const struct cuda_conv_fused_args args = fwd_args(n, &pro, &res_pro);
        return usable(c, &args);
    }
    case PLAN_CONV_FUSED_BWD: {
        const struct cuda_conv_prologue pro = prologue_of(n->src[PLAN_CB_PRO_VEC]);
        const struct cuda_conv_fused_args wargs = wgrad_args(n, &pro);
        if (has_data(n->dst[PLAN_DW]) && !usable(c, &wargs)) return 0;
        if (!n->dst[PLAN_CB_DZ]) return 1;
        const struct cuda_conv_fused_args dargs = dgrad_dbn_args(n);
        return usable(c, &dargs);
    }
    case PLAN_BN_APPLY_BWD:
    case PLAN_ADD_PRO: return 1;   /* the rules checked one part */
    case PLAN_BN_ACT_TRAIN: return bn_vec_node_ok(n);
    default: return 0;
    }
}

int cuda_run_conv_fused_fwd(void *ctx, const struct plan_node *n)
{
    struct cuda_conv_prologue pro, res_pro;
    const struct cuda_conv_fused_args args = fwd_args(n, &pro, &res_pro);
    return cuda_conv_fused_run((struct cuda_ctx *)ctx, &args);
}

int cuda_run_conv_fused_bwd(void *ctx, const struct plan_node *n)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const struct cuda_conv_prologue pro = prologue_of(n->src[PLAN_CB_PRO_VEC]);
    if (has_data(n->dst[PLAN_DW])) {
        const struct cuda_conv_fused_args args = wgrad_args(n, &pro);
        TRY(cuda_conv_fused_run(c, &args));
    }
    if (n->dst[PLAN_CB_DZ]) {
        const struct cuda_conv_fused_args args = dgrad_dbn_args(n);
        TRY(cuda_conv_fused_run(c, &args));
    } else if (has_data(n->dst[PLAN_DX])) {   /* the data gradient as it is */
        TRY(cuda_conv_backward(c, n->dst[PLAN_DX], NULL, NULL, n->src[PLAN_DY],
                               n->src[PLAN_BWD_X], n->src[PLAN_BWD_W], &n->par.conv,
                               PLAN_NODE_ACC(n, PLAN_DX)));
    }
cleanup:
    return rc;
}

int cuda_run_bn_apply_bwd(void *ctx, const struct plan_node *n)
{
    const struct tensor *vec = n->src[PLAN_BAB_VEC];
    if (!has_data(n->dst[PLAN_DX])) return DR_OK;   /* the weight gradients are written */
    return cuda_bn_eq_apply((struct cuda_ctx *)ctx, n->dst[PLAN_DX], n->src[PLAN_DY],
                            n->src[PLAN_BWD_X], cuda_bn_vec(vec, PLAN_BNV_EQ_DY),
                            cuda_bn_vec(vec, PLAN_BNV_EQ_X), cuda_bn_vec(vec, PLAN_BNV_EQ_B),
                            PLAN_NODE_ACC(n, PLAN_DX));
}

int cuda_run_add_pro(void *ctx, const struct plan_node *n)
{
    /* the first operand recomputed from the batch norm's x; the sum's order does not
     * change its bits */
    return cuda_add_fused((struct cuda_ctx *)ctx, n->dst[PLAN_Y], NULL, n->src[PLAN_AP_X],
                          (const float *)n->src[PLAN_AP_COEF]->data, n->src[PLAN_ADD_B], NULL,
                          NULL, NULL);
}

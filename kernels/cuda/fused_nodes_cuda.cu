/* The CUDA engine's fused nodes (kernels/plan.h, PLAN_FUSED_OPS), as the plan's builder
 * emits them: which it takes (cuda_fused_supported) and the batch norm's runners, each
 * handing the node's slots to the fused batch-norm passes (bn_cuda.cu, fused_bn_cuda.cu,
 * bn_pool_cuda.cu). The passes apply every activation kind; with a residual or a pool the
 * activation's output is never written, and the batch norm's only when keep_y says so;
 * with a batch norm's vectors (PLAN_BNA_VEC) none is, and the apply's scale and bias are
 * (conv_bn_cuda.cu). The other nodes with the batch norm inside the convolutions are
 * conv_nodes_cuda.cu's. */
#include "cuda_internal.h"
#include "conv_bn_cuda.h"
#include "../../base/env.h"

static_assert(COEF_FWD_COUNT == PLAN_BN_COEF_PER_CHANNEL,
              "the kept coefficients' size (kernels/plan.h) is the fused passes'");

/* Whether n is a BN_ACT_TRAIN node with a batch norm's vectors or a recomputed operand,
 * which goes with the convolutions' fused nodes (conv_nodes_cuda.cu). */
static int with_vectors(const struct plan_node *n)
{
    return n->op == PLAN_BN_ACT_TRAIN && (n->dst[PLAN_BNA_VEC] || n->src[PLAN_BNA_VEC_IN] ||
                                          n->src[PLAN_BNA_ADD_PRO_X]);
}

int cuda_fused_supported(struct cuda_ctx *c, const struct plan_node *n)
{
    if (!c || !env_switch_on("DAWNRUN_CUDA_FUSE")) return 0;
    const int own = n->op == PLAN_BN_ACT_TRAIN || n->op == PLAN_BN_ACT_EVAL ||
                    n->op == PLAN_BN_ACT_BWD;
    if (!own || with_vectors(n)) {
        if (!cuda_conv_nodes_supported(c, n)) return 0;
        if (!own) return 1;
    }
    const int bwd = n->op == PLAN_BN_ACT_BWD;
    const struct tensor *x = n->src[bwd ? PLAN_BWD_X : PLAN_X];
    if (!x || !x->data) return 0;
    if (n->par.bn_act.pool.kh > 0) {   /* one part; the rule checked the tiling */
        const int parts = bwd ? plan_bn_parts(x, n->src[PLAN_BWD_SAVE_MEAN], NULL)
                              : plan_bn_parts(x, NULL, &n->par.bn_act.bn);
        if (parts != 1 || (!bwd && n->par.bn_act.keep_y)) return 0;
    }
    return 1;
}

/* The activation of fused node n. */
static struct cuda_bn_act node_act(const struct plan_node *n)
{
    return (struct cuda_bn_act){n->par.bn_act.kind, n->par.bn_act.alpha};
}

/* The pool of fused node n, or NULL when it has none (into *pool). */
static const struct cuda_bn_pool *node_pool(struct cuda_bn_pool *pool, const struct plan_node *n)
{
    if (n->par.bn_act.pool.kh <= 0) return NULL;
    *pool = (struct cuda_bn_pool){n->par.bn_act.pool.kh, n->par.bn_act.pool.kw};
    return pool;
}

/* The fused forward's output: the residual add's or the pool's, else the activation's. */
static struct tensor *node_out(const struct plan_node *n)
{
    return n->dst[PLAN_BNA_OUT] ? n->dst[PLAN_BNA_OUT] : n->dst[PLAN_BNA_ACT];
}

int cuda_run_bn_act_train(void *ctx, const struct plan_node *n)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const struct tensor *vec = n->dst[PLAN_BNA_VEC], *in = n->src[PLAN_BNA_VEC_IN];
    const struct tensor *px = n->src[PLAN_BNA_ADD_PRO_X];
    const struct bn_attr *a = &n->par.bn_act.bn;
    const struct cuda_bn_act act = node_act(n);
    struct cuda_bn_pool pool_buf;
    const struct cuda_bn_pool *pool = node_pool(&pool_buf, n);   /* none with vectors */
    float *coef = n->dst[PLAN_BNA_COEF] ? (float *)n->dst[PLAN_BNA_COEF]->data : NULL;
    /* with vectors no elementwise output: the statistics, kept coefficients and vectors */
    struct tensor *y = !vec && n->par.bn_act.keep_y ? n->dst[PLAN_Y] : NULL;
    struct tensor *out = vec ? NULL : node_out(n);
    if (vec && !coef)   /* statistics from the convolution's sums, the apply's vectors */
        return cuda_bn_sums_finalize(c, cuda_bn_vec(vec, PLAN_BNV_SCALE),
                                     cuda_bn_vec(vec, PLAN_BNV_BIAS), n->dst[PLAN_SAVE_MEAN],
                                     n->dst[PLAN_SAVE_INVSTD], n->dst[PLAN_RUNNING_MEAN],
                                     n->dst[PLAN_RUNNING_VAR], cuda_bn_vec(in, PLAN_BNV_SUM),
                                     cuda_bn_vec(in, PLAN_BNV_SQSUM), n->src[PLAN_GAMMA],
                                     n->src[PLAN_BETA], n->src[PLAN_X], a);
    if (n->par.bn_act.add_in) {   /* its first operand recomputed from px when given */
        TRY(cuda_bn_train_add_fused(c, y, out, n->src[PLAN_BNA_RES], vec ? NULL : &act, pool,
                                    coef, n->dst[PLAN_SAVE_MEAN], n->dst[PLAN_SAVE_INVSTD],
                                    n->dst[PLAN_RUNNING_MEAN], n->dst[PLAN_RUNNING_VAR],
                                    n->dst[PLAN_BNA_SUM], px ? px : n->src[PLAN_BNA_ADD_A],
                                    px ? (const float *)n->src[PLAN_BNA_ADD_PRO_COEF]->data
                                       : NULL,
                                    n->src[PLAN_BNA_ADD_B], n->src[PLAN_GAMMA],
                                    n->src[PLAN_BETA], a));
    } else {   /* its statistics from the convolution's sums when given */
        const struct cuda_bn_sums sums = {NULL, in ? cuda_bn_vec(in, PLAN_BNV_SUM) : NULL,
                                          in ? cuda_bn_vec(in, PLAN_BNV_SQSUM) : NULL};
        TRY(cuda_bn_train_fused(c, y, out, n->src[PLAN_BNA_RES], vec ? NULL : &act, pool, coef,
                                in ? &sums : NULL, n->dst[PLAN_SAVE_MEAN],
                                n->dst[PLAN_SAVE_INVSTD], n->dst[PLAN_RUNNING_MEAN],
                                n->dst[PLAN_RUNNING_VAR], n->src[PLAN_X], n->src[PLAN_GAMMA],
                                n->src[PLAN_BETA], a));
    }
    if (vec)   /* the prologue's scale and bias from the coefficients kept */
        TRY(cuda_bn_prologue_from_coef(c, cuda_bn_vec(vec, PLAN_BNV_SCALE),
                                       cuda_bn_vec(vec, PLAN_BNV_BIAS), coef, n->src[PLAN_X]->c));
cleanup:
    return rc;
}

int cuda_run_bn_act_eval(void *ctx, const struct plan_node *n)
{
    const struct cuda_bn_act act = node_act(n);
    struct cuda_bn_pool pool_buf;
    const struct cuda_bn_pool *pool = node_pool(&pool_buf, n);
    return cuda_bn_eval_fused((struct cuda_ctx *)ctx,
                              n->par.bn_act.keep_y ? n->dst[PLAN_Y] : NULL, node_out(n),
                              n->src[PLAN_BNA_RES], &act, pool, n->src[PLAN_X],
                              n->src[PLAN_GAMMA], n->src[PLAN_BETA], n->src[PLAN_BNA_RMEAN],
                              n->src[PLAN_BNA_RVAR], &n->par.bn_act.bn);
}

int cuda_run_bn_act_bwd(void *ctx, const struct plan_node *n)
{
    const struct cuda_bn_act act = node_act(n);
    struct cuda_bn_pool pool_buf;
    const struct cuda_bn_pool *pool = node_pool(&pool_buf, n);
    return cuda_bn_backward_fused((struct cuda_ctx *)ctx, n->dst[PLAN_DX], n->dst[PLAN_DGAMMA],
                                  n->dst[PLAN_DBETA], n->src[PLAN_DY], &act, pool,
                                  (const float *)n->src[PLAN_BNA_BWD_COEF]->data,
                                  n->src[PLAN_BWD_X], n->src[PLAN_BWD_GAMMA],
                                  n->src[PLAN_BWD_SAVE_MEAN], n->src[PLAN_BWD_SAVE_INVSTD],
                                  PLAN_NODE_ACC(n, PLAN_DX));
}

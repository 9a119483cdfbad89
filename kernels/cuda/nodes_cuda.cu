/* The CUDA engine's nodes (backend_ops.supports, run_node): the runner table, one runner
 * per op of kernels/plan.h, each handing the node's slots and parameters to the op
 * family's function (cuda_internal.h), and for the fused ops the engine takes, their
 * fused kernels (fused_nodes_cuda.cu, conv_nodes_cuda.cu). Every node of a plan comes here
 * through plan_run_node. */
#include "cuda_internal.h"

int cuda_run_batch(void *ctx, const struct plan_node *n)
{
    return cuda_augment_step(ctx, n->dst[PLAN_BATCH_X], n->dst[PLAN_BATCH_LABELS],
                                n->src[PLAN_BATCH_IMAGES], n->src[PLAN_BATCH_IMAGE_LABELS],
                                n->src[PLAN_BATCH_ROWS], n->src[PLAN_BATCH_CURSOR],
                                n->par.batch.stride, n->par.batch.aug, n->par.batch.seed);
}

int cuda_run_conv_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_conv_forward(ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_W],
                                n->src[PLAN_B], &n->par.conv);
}

int cuda_run_conv_bwd(void *ctx, const struct plan_node *n)
{
    return cuda_conv_backward(ctx, n->dst[PLAN_DX], n->dst[PLAN_DW], n->dst[PLAN_DB],
                                 n->src[PLAN_DY], n->src[PLAN_BWD_X], n->src[PLAN_BWD_W],
                                 &n->par.conv, PLAN_NODE_ACC(n, PLAN_DX));
}

int cuda_run_bn_fwd_train(void *ctx, const struct plan_node *n)
{
    return cuda_bn_forward_train(ctx, n->dst[PLAN_Y], n->dst[PLAN_SAVE_MEAN],
                                    n->dst[PLAN_SAVE_INVSTD], n->dst[PLAN_RUNNING_MEAN],
                                    n->dst[PLAN_RUNNING_VAR], n->src[PLAN_X],
                                    n->src[PLAN_GAMMA], n->src[PLAN_BETA], &n->par.bn);
}

int cuda_run_bn_fwd_eval(void *ctx, const struct plan_node *n)
{
    return cuda_bn_forward_eval(ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_GAMMA],
                                   n->src[PLAN_BETA], n->src[PLAN_RUNNING_MEAN],
                                   n->src[PLAN_RUNNING_VAR], &n->par.bn);
}

int cuda_run_bn_bwd(void *ctx, const struct plan_node *n)
{
    return cuda_bn_backward(ctx, n->dst[PLAN_DX], n->dst[PLAN_DGAMMA],
                               n->dst[PLAN_DBETA], n->src[PLAN_DY], n->src[PLAN_BWD_X],
                               n->src[PLAN_BWD_GAMMA], n->src[PLAN_BWD_SAVE_MEAN],
                               n->src[PLAN_BWD_SAVE_INVSTD], PLAN_NODE_ACC(n, PLAN_DX));
}

int cuda_run_act_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_act_forward(ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->par.act.kind,
                               n->par.act.alpha);
}

int cuda_run_act_bwd(void *ctx, const struct plan_node *n)
{
    return cuda_act_backward(ctx, n->dst[PLAN_DX], n->src[PLAN_DY], n->src[PLAN_BWD_X],
                                n->par.act.kind, n->par.act.alpha, PLAN_NODE_ACC(n, PLAN_DX));
}

int cuda_run_pool_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_pool_forward(ctx, n->dst[PLAN_Y], n->src[PLAN_X], &n->par.pool);
}

int cuda_run_pool_bwd(void *ctx, const struct plan_node *n)
{
    return cuda_pool_backward(ctx, n->dst[PLAN_DX], n->src[PLAN_DY], n->src[PLAN_BWD_X],
                                 n->src[PLAN_BWD_Y], &n->par.pool, PLAN_NODE_ACC(n, PLAN_DX));
}

int cuda_run_concat_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_concat_forward(ctx, n->dst[PLAN_Y], n->src, n->n_src);
}

int cuda_run_concat_bwd(void *ctx, const struct plan_node *n)
{
    int accumulate[PLAN_NODE_MAX_DST];
    for (int i = 0; i < PLAN_NODE_MAX_DST; i++) accumulate[i] = PLAN_NODE_ACC(n, i);
    return cuda_concat_backward(ctx, n->dst, n->src[PLAN_DY], n->n_dst, accumulate);
}

int cuda_run_add_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_add_forward(ctx, n->dst[PLAN_Y], n->src[PLAN_ADD_A], n->src[PLAN_ADD_B]);
}

int cuda_run_scale_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_scale_forward(ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->par.scale.s);
}

int cuda_run_scaled_copy(void *ctx, const struct plan_node *n)
{
    return cuda_scaled_copy(ctx, n->dst[PLAN_DX], n->src[PLAN_DY], n->par.scale.s,
                               PLAN_NODE_ACC(n, PLAN_DX));
}

int cuda_run_flatten_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_flatten_forward(ctx, n->dst[PLAN_Y], n->src[PLAN_X]);
}

int cuda_run_flatten_bwd(void *ctx, const struct plan_node *n)
{
    return cuda_flatten_backward(ctx, n->dst[PLAN_DX], n->src[PLAN_DY],
                                    PLAN_NODE_ACC(n, PLAN_DX));
}

int cuda_run_xent_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_xent_forward(ctx, n->dst[PLAN_XENT_STATS], n->dst[PLAN_XENT_PROBS],
                                n->src[PLAN_XENT_LOGITS], n->src[PLAN_XENT_LABELS],
                                n->par.xent.smoothing);
}

int cuda_run_xent_bwd(void *ctx, const struct plan_node *n)
{
    return cuda_xent_backward(ctx, n->dst[PLAN_XENT_DLOGITS], n->src[PLAN_XENT_BWD_PROBS],
                                 n->src[PLAN_XENT_LABELS], n->par.xent.smoothing,
                                 n->par.xent.scale);
}

int cuda_run_sgd(void *ctx, const struct plan_node *n)
{
    return cuda_sgd_multi(ctx, n->par.sgd.items, n->par.sgd.count,
                             n->src[PLAN_SGD_LR_TABLE], n->src[PLAN_SGD_CURSOR],
                             n->par.sgd.momentum, n->par.sgd.nesterov);
}

int cuda_run_muon(void *ctx, const struct plan_node *n)
{
    return cuda_muon_multi(ctx, n->par.muon.items, n->par.muon.count,
                           n->src[PLAN_SGD_LR_TABLE], n->src[PLAN_SGD_CURSOR],
                           n->par.muon.momentum, n->par.muon.nesterov, &n->par.muon.ns);
}

int cuda_run_lerp(void *ctx, const struct plan_node *n)
{
    return cuda_lerp_multi(ctx, n->par.lerp.items, n->par.lerp.count, n->par.lerp.t,
                           n->par.lerp.copy_back);
}

int cuda_run_cursor_advance(void *ctx, const struct plan_node *n)
{
    return cuda_cursor_advance(ctx, n->dst[PLAN_CURSOR]);
}

/* One row of the runner table: the op it runs, so that the table's order is checked. */
struct cuda_node_row {
    enum plan_op op;
    int (*run)(void *ctx, const struct plan_node *n);
};

/* The runner table, in enum plan_op's order (generated from PLAN_OPS, then
 * PLAN_FUSED_OPS): the fused ops' runners are fused_nodes_cuda.cu's, taken where
 * cuda_fused_supported says so (else plan_run_node runs their decompositions). */
#define CUDA_NODE_ROW_(id, name) {PLAN_##id, cuda_run_##name},
static const struct cuda_node_row cuda_nodes[] = {PLAN_OPS(CUDA_NODE_ROW_)
                                                      PLAN_FUSED_OPS(CUDA_NODE_ROW_)};
#undef CUDA_NODE_ROW_
static_assert(sizeof(cuda_nodes) / sizeof(cuda_nodes[0]) == PLAN_OP_COUNT,
              "the CUDA engine has a runner for every op");

int cuda_supports(void *ctx, const struct plan_node *n)
{
    if ((unsigned)n->op >= PLAN_OP_COUNT || cuda_nodes[n->op].op != n->op ||
        cuda_nodes[n->op].run == NULL)
        return 0;
    return !plan_op_is_fused(n->op) || cuda_fused_supported((struct cuda_ctx *)ctx, n);
}

int cuda_run_node(void *ctx, const struct plan_node *n)
{
    int rc = DR_OK;
    EXPECT(cuda_supports(ctx, n), "the CUDA engine has no runner for plan op %d", (int)n->op);
    rc = cuda_nodes[n->op].run(ctx, n);
cleanup:
    return rc;
}

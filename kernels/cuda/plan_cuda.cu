/* Runs a plan (kernels/plan.h) on the CUDA engine: every node through the engine's own
 * table (plan_run_each), replayed as a graph where graph_cuda.cu can. What is fused was
 * decided by the plan's builder, which asked the engine about each fused node
 * (cuda_supports: fused_nodes_cuda.cu, conv_nodes_cuda.cu); a fused node the engine does
 * not take when it runs (DAWNRUN_CUDA_FUSE=0, read at each question) runs as its
 * reference decomposition, so a plan built with fusion runs node by node. The engine keeps
 * nothing per plan beyond its captured graphs: what a fused node keeps between its parts
 * (a batch norm's coefficients and vectors) is in the model's tensors the node names. */
#include "cuda_internal.h"

int cuda_plan_execute(struct cuda_ctx *c, const struct plan *p)
{
    const struct backend b = {c->ops, c};
    return plan_run_each(&b, p, NULL, NULL);
}

int cuda_plan_compute(void *ctx, const struct plan *p)
{
    return cuda_graph_run((struct cuda_ctx *)ctx, p, cuda_plan_execute);
}

void cuda_plan_forget(void *ctx, const struct plan *p)
{
    cuda_graph_forget((struct cuda_ctx *)ctx, p);
}

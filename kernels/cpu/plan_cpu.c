/* The CPU engine's fused ops (kernels/plan.h, PLAN_FUSED_OPS): the batch norm with its
 * activation (and a residual add) in one pass over memory instead of two or three, and
 * its backward with the activation's backward folded in (bn_fused.h). The fused passes
 * compute every element as the separate kernels do, so a fused node's results are its
 * decomposition's (plan_fused_expand) bit for bit (tests/test_plan.c compares them). They
 * apply a ReLU only, and take neither a max pool, the add before the batch norm, nor
 * the vectors of a batch norm whose passes the convolutions take: the engine supports
 * other fused nodes (and the convolutions' fused ops) as their decomposition
 * (plan_run_node), and the builder emits that instead. DAWNRUN_CPU_FUSE=0
 * (read at each question) supports none of them, so that plans built then run every
 * plain node one by one. */
#include <stdlib.h>
#include <string.h>

#include "../../base/env.h"
#include "../../base/status.h"
#include "bn_fused.h"
#include "plan_cpu.h"

_Static_assert(BN_COEF_COUNT == PLAN_BN_COEF_PER_CHANNEL,
               "the kept coefficients' size (kernels/plan.h) is the CPU passes'");

int cpu_fused_supported(const struct plan_node *n)
{
    if (!env_switch_on("DAWNRUN_CPU_FUSE")) return 0;
    if (n->par.bn_act.kind != ACT_RELU || n->par.bn_act.pool.kh > 0 || n->par.bn_act.add_in ||
        (n->op == PLAN_BN_ACT_TRAIN && (n->dst[PLAN_BNA_VEC] || n->src[PLAN_BNA_VEC_IN])))
        return 0;
    if (n->op == PLAN_BN_ACT_BWD) {   /* sizes from the batch norm's x */
        const struct tensor *d = n->src[PLAN_DY], *x = n->src[PLAN_BWD_X];
        return d && d->data && x && tensor_same_shape(d, x);
    }
    const struct tensor *y = n->dst[PLAN_Y], *x = n->src[PLAN_X];   /* sizes from x */
    return x && x->data && tensor_same_shape(y, x);
}

/* The fused forward's output (the add's, else the activation's) and its residual. */
static float *fused_out(const struct plan_node *n)
{
    return cpu_slot_data(n->dst[PLAN_BNA_OUT] ? n->dst[PLAN_BNA_OUT] : n->dst[PLAN_BNA_ACT]);
}

int cpu_run_bn_act_train(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    const struct bn_attr *a = &n->par.bn_act.bn;
    bn_train_fused_cpu(n->par.bn_act.keep_y ? cpu_slot_data(n->dst[PLAN_Y]) : NULL, fused_out(n),
                       cpu_slot_data(n->dst[PLAN_BNA_COEF]), cpu_slot_data(n->dst[PLAN_SAVE_MEAN]),
                       cpu_slot_data(n->dst[PLAN_SAVE_INVSTD]),
                       cpu_slot_data(n->dst[PLAN_RUNNING_MEAN]),
                       cpu_slot_data(n->dst[PLAN_RUNNING_VAR]), cpu_slot_data(x),
                       cpu_slot_data(n->src[PLAN_BNA_RES]), cpu_slot_data(n->src[PLAN_GAMMA]),
                       cpu_slot_data(n->src[PLAN_BETA]), n->par.bn_act.res_first, x->c, x->n,
                       x->h * x->w, plan_bn_parts(x, NULL, a), a->eps, a->momentum);
    return DR_OK;
}

int cpu_run_bn_act_eval(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    bn_eval_fused_cpu(n->par.bn_act.keep_y ? cpu_slot_data(n->dst[PLAN_Y]) : NULL, fused_out(n),
                      cpu_slot_data(x), cpu_slot_data(n->src[PLAN_BNA_RES]),
                      cpu_slot_data(n->src[PLAN_GAMMA]), cpu_slot_data(n->src[PLAN_BETA]),
                      cpu_slot_data(n->src[PLAN_BNA_RMEAN]), cpu_slot_data(n->src[PLAN_BNA_RVAR]),
                      n->par.bn_act.res_first, x->c, x->n, x->h * x->w, n->par.bn_act.bn.eps);
    return DR_OK;
}

int cpu_run_bn_act_bwd(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_BWD_X];
    bn_backward_fused_cpu(cpu_slot_data(n->dst[PLAN_DX]), cpu_slot_data(n->dst[PLAN_DGAMMA]),
                          cpu_slot_data(n->dst[PLAN_DBETA]), cpu_slot_data(n->src[PLAN_DY]),
                          cpu_slot_data(n->src[PLAN_BNA_BWD_COEF]), cpu_slot_data(x),
                          cpu_slot_data(n->src[PLAN_BWD_GAMMA]),
                          cpu_slot_data(n->src[PLAN_BWD_SAVE_INVSTD]), x->c, x->n, x->h * x->w,
                          plan_bn_parts(x, n->src[PLAN_BWD_SAVE_MEAN], NULL),
                          PLAN_NODE_ACC(n, PLAN_DX));
    return DR_OK;
}

/* The fused ops' reference decompositions and their rule (plan_fused.h). */
#include "plan_fused.h"

#include "../base/status.h"

/* Appends to parts[*count] a node of kind op in n's phase and layer. */
static struct plan_node *part(struct plan_node *parts, int *count, const struct plan_node *n,
                              enum plan_op op)
{
    struct plan_node *q = &parts[(*count)++];
    plan_node_init(q, op);
    q->phase = n->phase;
    q->layer = n->layer;
    return q;
}

/* The activation and the residual add after a fused batch norm's forward (either kind). */
static void act_and_add(struct plan_node *parts, int *count, const struct plan_node *n)
{
    struct plan_node *a = part(parts, count, n, PLAN_ACT_FWD);
    plan_node_set_tensors(a, PLAN_DSTS(n->dst[PLAN_BNA_ACT]), PLAN_SRCS(n->dst[PLAN_Y]));
    a->par.act.kind = n->par.bn_act.kind;
    a->par.act.alpha = n->par.bn_act.alpha;
    if (!n->dst[PLAN_BNA_OUT]) return;
    struct plan_node *q = part(parts, count, n, PLAN_ADD_FWD);
    const struct tensor *act = n->dst[PLAN_BNA_ACT], *res = n->src[PLAN_BNA_RES];
    if (n->par.bn_act.res_first)
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_OUT]), PLAN_SRCS(res, act));
    else
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_OUT]), PLAN_SRCS(act, res));
}

int plan_fused_expand(struct plan_node *parts, const struct plan_node *n)
{
    int count = 0;
    struct plan_node *q = NULL;
    switch (n->op) {
    case PLAN_BN_ACT_TRAIN:
        q = part(parts, &count, n, PLAN_BN_FWD_TRAIN);
        plan_node_set_tensors(q,
                              PLAN_DSTS(n->dst[PLAN_Y], n->dst[PLAN_SAVE_MEAN],
                                        n->dst[PLAN_SAVE_INVSTD], n->dst[PLAN_RUNNING_MEAN],
                                        n->dst[PLAN_RUNNING_VAR]),
                              PLAN_SRCS(n->src[PLAN_X], n->src[PLAN_GAMMA], n->src[PLAN_BETA]));
        q->par.bn = n->par.bn_act.bn;
        act_and_add(parts, &count, n);
        break;
    case PLAN_BN_ACT_EVAL:
        q = part(parts, &count, n, PLAN_BN_FWD_EVAL);
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_Y]),
                              PLAN_SRCS(n->src[PLAN_X], n->src[PLAN_GAMMA], n->src[PLAN_BETA],
                                        n->src[PLAN_BNA_RMEAN], n->src[PLAN_BNA_RVAR]));
        q->par.bn = n->par.bn_act.bn;
        act_and_add(parts, &count, n);
        break;
    case PLAN_BN_ACT_BWD:
        q = part(parts, &count, n, PLAN_ACT_BWD);
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_DACT]),
                              PLAN_SRCS(n->src[PLAN_DY], n->src[PLAN_BNA_BWD_Y]));
        q->par.act.kind = n->par.bn_act.kind;
        q->par.act.alpha = n->par.bn_act.alpha;
        q = part(parts, &count, n, PLAN_BN_BWD);
        plan_node_set_tensors(q,
                              PLAN_DSTS(n->dst[PLAN_DX], n->dst[PLAN_DGAMMA], n->dst[PLAN_DBETA]),
                              PLAN_SRCS(n->dst[PLAN_BNA_DACT], n->src[PLAN_BWD_X],
                                        n->src[PLAN_BWD_GAMMA], n->src[PLAN_BWD_SAVE_MEAN],
                                        n->src[PLAN_BWD_SAVE_INVSTD]));
        q->acc = n->acc & 1u;   /* dx's accumulate flag */
        break;
    default: break;   /* a plain op */
    }
    return count;
}

int plan_op_is_fused(enum plan_op op)
{
#define PLAN_FUSED_CASE_(id, name) case PLAN_##id:
    switch (op) {
    PLAN_FUSED_OPS(PLAN_FUSED_CASE_)
        return 1;
    default: return 0;
    }
#undef PLAN_FUSED_CASE_
}

/* Whether coef holds the coefficients of a batch norm of `parts` parts over c channels. */
static int coef_fits(const struct tensor *coef, int parts, int c)
{
    return coef && coef->data && coef->kind == TENSOR_F32 &&
           tensor_count(coef) == (size_t)PLAN_BN_COEF_PER_CHANNEL * (size_t)parts * (size_t)c;
}

int plan_fused_rule(const struct plan_node *n)
{
    int rc = DR_OK;
    struct plan_node parts[PLAN_FUSED_MAX_PARTS];
    const char *name = plan_op_name(n->op);
    const int count = plan_fused_expand(parts, n);
    EXPECT(count > 0, "plan node %s: not a fused op", name);
    for (int i = 0; i < count; i++) TRY(plan_node_check(&parts[i]));
    if (n->op == PLAN_BN_ACT_BWD) {
        const struct tensor *x = n->src[PLAN_BWD_X];
        const int s = plan_bn_parts(x, n->src[PLAN_BWD_SAVE_MEAN], NULL);
        EXPECT(coef_fits(n->src[PLAN_BNA_BWD_COEF], s, x->c),
               "plan node %s: kept coefficients not of %d parts of %d channels", name, s, x->c);
        goto cleanup;
    }
    EXPECT(!n->dst[PLAN_BNA_OUT] == !n->src[PLAN_BNA_RES],
           "plan node %s: a residual without the add's output, or the reverse", name);
    EXPECT(n->par.bn_act.keep_y == 0 || n->par.bn_act.keep_y == 1,
           "plan node %s: keep_y %d", name, n->par.bn_act.keep_y);
    if (n->op == PLAN_BN_ACT_EVAL) {
        EXPECT(!n->dst[PLAN_BNA_COEF], "plan node %s: kept coefficients", name);
    } else if (n->dst[PLAN_BNA_COEF]) {
        const struct tensor *x = n->src[PLAN_X];
        const int s = plan_bn_parts(x, NULL, &n->par.bn_act.bn);
        EXPECT(coef_fits(n->dst[PLAN_BNA_COEF], s, x->c),
               "plan node %s: kept coefficients not of %d parts of %d channels", name, s, x->c);
    }
cleanup:
    return rc;
}

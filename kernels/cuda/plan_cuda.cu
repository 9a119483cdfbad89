/* Runs a plan (kernels/plan.h) on the CUDA engine: every node through the engine's own
 * table, except the patterns fused here, replayed as a graph where graph_cuda.cu can.
 *
 * Which nodes fuse (docs/gpu.md, "Fused paths") is decided by the analysis every engine
 * shares (kernels/plan_fuse.h), over the whole plan once per plan and signature
 * (plan_signature), kept in c->plans: batch norm, forward and evaluation, with the
 * activation after it (and a residual add after that), an activation's backward folded
 * into the batch norm's backward, and a residual add taking the statistics of the batch
 * norm that reads its output. The CUDA engine's fused kernels take every
 * activation kind and leave values unwritten in any plan whose own nodes allow it
 * (plan_fuse_caps below); this file keeps the analyses, the device buffers of the
 * coefficients a fused forward keeps for its backward and of the partial sums an add
 * takes for its batch norm, and runs the steps.
 * DAWNRUN_CUDA_FUSE=0 (read at each run of a plan) runs every node one by one. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

extern "C" {
#include "../plan_fuse.h"
}

/* The analysis of one plan. */
struct plan_entry {
    const struct plan *p;
    uint64_t sig;
    int count;
    struct plan_fuse_step *steps;   /* (count) */
    size_t *coef_at;                /* (count): where steps[i].keeps_coef, the float offset
                                       of node i's kept coefficients in coef */
    float *coef;                    /* device: the kept coefficients of every fused forward
                                       that keeps them */
    size_t coef_floats;
    size_t *stats_at;               /* (count): where steps[i].kind is ADD_STATS, the double
                                       offset of the partial sums it takes in stats */
    double *stats;                  /* device: the statistics' partial sums each such add
                                       takes for its batch norm */
    size_t stats_doubles;
};

struct plan_cache {
    struct plan_entry *e;
    int n, cap;
};

/* What the fused kernels (bn_cuda.cu) take beyond the shared rules: every activation
 * kind (the same device functions as the act kernels), and an add taking a batch norm's
 * statistics; the kernels check their shapes themselves. */
static const struct plan_fuse_caps CUDA_FUSE_CAPS = {PLAN_FUSE_ALL_ACTS, 0, NULL, NULL, 1};

static void entry_clear(struct cuda_ctx *c, struct plan_entry *e)
{
    if (e->coef) cuda_counted_free(c, e->coef);
    if (e->stats) cuda_counted_free(c, e->stats);
    free(e->coef_at);
    free(e->stats_at);
    free(e->steps);
    memset(e, 0, sizeof(*e));
}

/* Finds the fused steps of p into e, with the device buffer of the coefficients they keep. */
static int analyse(struct cuda_ctx *c, struct plan_entry *e, const struct plan *p)
{
    int rc = DR_OK;
    const size_t slots = (size_t)(p->count ? p->count : 1);
    e->p = p;
    e->sig = plan_signature(p);
    e->count = p->count;
    e->steps = (struct plan_fuse_step *)calloc(slots, sizeof(*e->steps));
    CHECK_ALLOC(e->steps, "the CUDA plan analysis");
    e->coef_at = (size_t *)calloc(slots, sizeof(*e->coef_at));
    CHECK_ALLOC(e->coef_at, "the CUDA plan analysis");
    e->stats_at = (size_t *)calloc(slots, sizeof(*e->stats_at));
    CHECK_ALLOC(e->stats_at, "the CUDA plan analysis");
    plan_fuse_analyse(e->steps, p, &CUDA_FUSE_CAPS);
    e->coef_floats = 0;
    for (int i = 0; i < p->count; i++) {
        if (!e->steps[i].keeps_coef) continue;
        const struct plan_node *n = &p->nodes[i];   /* a BN_FWD_TRAIN */
        const int splits = n->u.bn_fwd_train.a.splits > 1 ? n->u.bn_fwd_train.a.splits : 1;
        e->coef_at[i] = e->coef_floats;
        /* 16-byte aligned pieces */
        e->coef_floats += ((size_t)COEF_FWD_COUNT * splits * n->u.bn_fwd_train.x->c + 3) / 4 * 4;
    }
    if (e->coef_floats)
        CHECK_CUDA(cuda_counted_malloc(c, (void **)&e->coef, sizeof(float) * e->coef_floats));
    e->stats_doubles = 0;
    for (int i = 0; i < p->count; i++) {
        if (e->steps[i].kind != PLAN_FUSE_ADD_STATS) continue;
        const struct plan_node *bn = &p->nodes[e->steps[i].stats];   /* a BN_FWD_TRAIN */
        e->stats_at[i] = e->stats_doubles;
        /* 16-byte aligned pieces */
        e->stats_doubles +=
            (cuda_bn_partial_count(bn->u.bn_fwd_train.x, &bn->u.bn_fwd_train.a) + 1) / 2 * 2;
    }
    if (e->stats_doubles)
        CHECK_CUDA(
            cuda_counted_malloc(c, (void **)&e->stats, sizeof(double) * e->stats_doubles));
cleanup:
    return rc;
}

/* The entry of p in c's cache, analysed for its current signature. */
static int plan_entry_for(struct cuda_ctx *c, const struct plan *p, struct plan_entry **out)
{
    int rc = DR_OK;
    struct plan_cache *pc = (struct plan_cache *)c->plans;
    struct plan_entry *e = NULL;
    if (!pc) {
        pc = (struct plan_cache *)calloc(1, sizeof(*pc));
        CHECK_ALLOC(pc, "the CUDA plan cache");
        c->plans = pc;
    }
    for (int i = 0; i < pc->n && !e; i++)
        if (pc->e[i].p == p) e = &pc->e[i];
    if (e && (e->sig != plan_signature(p) || e->count != p->count)) {
        CHECK_CUDA(cuda_counted_sync(c));   /* the old coefficients may still be in use */
        entry_clear(c, e);
        TRY(analyse(c, e, p));
    }
    if (!e) {
        if (pc->n == pc->cap) {
            const int cap = pc->cap ? 2 * pc->cap : 4;
            struct plan_entry *grown =
                (struct plan_entry *)realloc(pc->e, (size_t)cap * sizeof(*grown));
            CHECK_ALLOC(grown, "the CUDA plan cache");
            pc->e = grown;
            pc->cap = cap;
        }
        e = &pc->e[pc->n++];
        memset(e, 0, sizeof(*e));
        TRY(analyse(c, e, p));
    }
    *out = e;
cleanup:
    return rc;
}

/* Runs node i of p as its step says. */
static int run_step(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e, int i)
{
    const struct plan_fuse_step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i];
    struct cuda_bn_act act = {ACT_RELU, 0.0f};
    switch (s->kind) {
    case PLAN_FUSE_SKIP: return DR_OK;
    case PLAN_FUSE_BN_TRAIN: {
        const struct plan_node *a = s->act >= 0 ? &p->nodes[s->act] : NULL;
        const struct plan_node *q = s->add >= 0 ? &p->nodes[s->add] : NULL;
        if (a) act = (struct cuda_bn_act){a->u.act_fwd.kind, a->u.act_fwd.alpha};
        return cuda_bn_train_fused(c, s->keep_y || !a ? n->u.bn_fwd_train.y : NULL,
                                   q ? q->u.add_fwd.y : a ? a->u.act_fwd.y : NULL,
                                   q ? plan_fuse_add_other(q, a->u.act_fwd.y, NULL) : NULL,
                                   a ? &act : NULL,
                                   s->keeps_coef ? e->coef + e->coef_at[i] : NULL,
                                   s->stats >= 0 ? e->stats + e->stats_at[s->stats] : NULL,
                                   n->u.bn_fwd_train.save_mean, n->u.bn_fwd_train.save_invstd,
                                   n->u.bn_fwd_train.running_mean, n->u.bn_fwd_train.running_var,
                                   n->u.bn_fwd_train.x, n->u.bn_fwd_train.gamma,
                                   n->u.bn_fwd_train.beta, &n->u.bn_fwd_train.a);
    }
    case PLAN_FUSE_BN_EVAL: {
        const struct plan_node *a = &p->nodes[s->act];
        const struct plan_node *q = s->add >= 0 ? &p->nodes[s->add] : NULL;
        act = (struct cuda_bn_act){a->u.act_fwd.kind, a->u.act_fwd.alpha};
        return cuda_bn_eval_fused(c, s->keep_y ? n->u.bn_fwd_eval.y : NULL,
                                  q ? q->u.add_fwd.y : a->u.act_fwd.y,
                                  q ? plan_fuse_add_other(q, a->u.act_fwd.y, NULL) : NULL, &act,
                                  n->u.bn_fwd_eval.x, n->u.bn_fwd_eval.gamma,
                                  n->u.bn_fwd_eval.beta, n->u.bn_fwd_eval.running_mean,
                                  n->u.bn_fwd_eval.running_var, &n->u.bn_fwd_eval.a);
    }
    case PLAN_FUSE_BN_BWD: {
        const struct plan_node *a = &p->nodes[s->act];
        act = (struct cuda_bn_act){a->u.act_bwd.kind, a->u.act_bwd.alpha};
        return cuda_bn_backward_fused(c, n->u.bn_bwd.dx, n->u.bn_bwd.dgamma, n->u.bn_bwd.dbeta,
                                      a->u.act_bwd.dy, &act, e->coef + e->coef_at[s->fwd],
                                      n->u.bn_bwd.x, n->u.bn_bwd.gamma, n->u.bn_bwd.save_mean,
                                      n->u.bn_bwd.save_invstd, n->u.bn_bwd.accumulate);
    }
    case PLAN_FUSE_ADD_STATS: {
        const struct plan_node *bn = &p->nodes[s->stats];
        return cuda_add_bn_partial(c, n->u.add_fwd.y, e->stats + e->stats_at[i], n->u.add_fwd.a,
                                   n->u.add_fwd.b, bn->u.bn_fwd_train.save_mean,
                                   bn->u.bn_fwd_train.save_invstd, &bn->u.bn_fwd_train.a);
    }
    case PLAN_FUSE_RUN:
    case PLAN_FUSE_KIND_COUNT: break;
    }
    const struct backend b = {c->ops, c};
    return plan_run_node(&b, n);
}

int cuda_plan_execute(struct cuda_ctx *c, const struct plan *p)
{
    int rc = DR_OK;
    struct plan_entry *e = NULL;
    if (!plan_fuse_enabled("DAWNRUN_CUDA_FUSE")) {
        const struct backend b = {c->ops, c};
        return plan_run_each(&b, p, NULL, NULL);
    }
    TRY(plan_entry_for(c, p, &e));
    for (int i = 0; i < p->count; i++) TRY(run_step(c, p, e, i));
cleanup:
    return rc;
}

int cuda_plan_compute(void *ctx, const struct plan *p)
{
    return cuda_graph_run((struct cuda_ctx *)ctx, p, cuda_plan_execute);
}

void cuda_plan_release(struct cuda_ctx *c)
{
    struct plan_cache *pc = (struct plan_cache *)c->plans;
    if (pc) {
        for (int i = 0; i < pc->n; i++) entry_clear(c, &pc->e[i]);
        free(pc->e);
        free(pc);
    }
    c->plans = NULL;
}

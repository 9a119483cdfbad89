/* Runs a plan (kernels/plan.h) on the CPU engine: every node through its runner,
 * except the batch-norm patterns fused into one pass over memory instead of two or three
 * (bn_fused.h). Which nodes fuse is decided by the analysis every engine shares
 * (kernels/plan_fuse.h), once per plan and signature (plan_signature); this file says what
 * the CPU's fused passes take (plan_fuse_caps: ReLU only, the batch norm's tensors with
 * data and of its input's shape, values left unwritten only in replayable plans), keeps
 * the analyses and the coefficients a fused forward keeps for its backward, and runs the
 * steps. The fused passes compute every element as the separate kernels do, so the
 * results are plan_run_each's bit for bit (tests/test_plan.c compares them).
 * DAWNRUN_CPU_FUSE=0 (read at each run of a plan) runs every node one by one. */
#include "plan_cpu.h"

#include <stdlib.h>
#include <string.h>

#include "../../base/grow.h"
#include "../../base/status.h"
#include "../plan_fuse.h"
#include "bn_fused.h"

struct plan_entry {
    const struct plan *p;
    uint64_t sig;
    int count;
    struct plan_fuse_step *steps;   /* (count) */
    size_t *coef_at;                /* (count): where steps[i].keeps_coef, the float offset
                                       of node i's kept coefficients in coef */
    float *coef;                    /* every kept forward's coefficients */
};

struct cpu_plan_cache {
    struct plan_entry *e;
    int n, cap;
};

/* plan_fuse_caps.forward_ok: the fused forward passes take their sizes from x, so x must
 * have data and the shape of the batch norm's output. */
static int cpu_forward_ok(const struct plan_node *bn, const struct plan_node *act)
{
    const struct tensor *y = bn->dst[PLAN_Y], *x = bn->src[PLAN_X];   /* train or eval */
    (void)act;
    return x && x->data && tensor_same_shape(y, x);
}

/* plan_fuse_caps.backward_ok: the fused backward takes its sizes from the batch norm's x,
 * so the activation's dy must have data and that shape. */
static int cpu_backward_ok(const struct plan_node *act, const struct plan_node *bwd)
{
    const struct tensor *d = act->src[PLAN_DY], *x = bwd->src[PLAN_BWD_X];
    return d->data && x && tensor_same_shape(d, x);
}

static const struct plan_fuse_caps CPU_FUSE_CAPS = {
    .act_kinds = 1u << ACT_RELU,
    .replayable_only = 1,
    .forward_ok = cpu_forward_ok,
    .backward_ok = cpu_backward_ok,
    .add_stats = 0,   /* the adds and their batch norms run as they are */
};

const struct plan_fuse_caps *cpu_plan_fuse_caps(void)
{
    return &CPU_FUSE_CAPS;
}

static void entry_clear(struct plan_entry *e)
{
    free(e->coef);
    free(e->coef_at);
    free(e->steps);
    memset(e, 0, sizeof(*e));
}

/* The number of batch-norm parts of forward node n (its save_mean's count / c). */
static int bn_parts(const struct plan_node *n)
{
    return plan_bn_parts(n->src[PLAN_X], NULL, &n->par.bn);
}

/* Finds the fused steps of p into e, with room for the coefficients they keep. */
static int analyse(struct plan_entry *e, const struct plan *p)
{
    int rc = DR_OK;
    const size_t slots = (size_t)(p->count ? p->count : 1);
    e->p = p;
    e->sig = plan_signature(p);
    e->count = p->count;
    e->steps = calloc(slots, sizeof(*e->steps));
    CHECK_ALLOC(e->steps, "the CPU plan analysis");
    e->coef_at = calloc(slots, sizeof(*e->coef_at));
    CHECK_ALLOC(e->coef_at, "the CPU plan analysis");
    plan_fuse_analyse(e->steps, p, &CPU_FUSE_CAPS);
    size_t coef_floats = 0;
    for (int i = 0; i < p->count; i++) {
        if (!e->steps[i].keeps_coef) continue;
        const struct plan_node *n = &p->nodes[i];   /* a BN_FWD_TRAIN */
        e->coef_at[i] = coef_floats;
        coef_floats += (size_t)BN_COEF_COUNT * bn_parts(n) * n->src[PLAN_X]->c;
    }
    if (coef_floats) {
        e->coef = calloc(coef_floats, sizeof(float));
        CHECK_ALLOC(e->coef, "the CPU plan's batch-norm coefficients");
    }
cleanup:
    return rc;
}

/* The entry of p in the cache, analysed for its current signature. */
static int entry_for(struct cpu_plan_cache **cache, const struct plan *p,
                     struct plan_entry **out)
{
    int rc = DR_OK;
    struct cpu_plan_cache *pc = *cache;
    struct plan_entry *e = NULL;
    if (!pc) {
        pc = calloc(1, sizeof(*pc));
        CHECK_ALLOC(pc, "the CPU plan cache");
        *cache = pc;
    }
    for (int i = 0; i < pc->n && !e; i++)
        if (pc->e[i].p == p) e = &pc->e[i];
    if (e && (e->sig != plan_signature(p) || e->count != p->count)) {
        entry_clear(e);
        TRY(analyse(e, p));
    }
    if (!e) {
        if (grow_reserve(&pc->e, &pc->cap, pc->n + 1, 4, sizeof(*pc->e)) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the CPU plan cache");
        e = &pc->e[pc->n++];
        memset(e, 0, sizeof(*e));
        TRY(analyse(e, p));
    }
    *out = e;
cleanup:
    return rc;
}

static float *fdata(const struct tensor *t)
{
    return t ? (float *)t->data : NULL;
}

/* A fused forward's outputs: *out (the ReLU's or the add's), *res and res_first (the
 * add's other operand and whether it comes first), from step s. */
static void fused_outputs(float **out, const float **res, int *res_first,
                          const struct plan *p, const struct plan_fuse_step *s)
{
    const struct plan_node *a = s->act >= 0 ? &p->nodes[s->act] : NULL;
    const struct plan_node *q = s->add >= 0 ? &p->nodes[s->add] : NULL;
    *out = q ? fdata(q->dst[PLAN_Y]) : a ? fdata(a->dst[PLAN_Y]) : NULL;
    *res_first = 0;
    *res = q ? fdata(plan_fuse_add_other(q, a->dst[PLAN_Y], res_first)) : NULL;
}

static int run_bn_train(const struct plan *p, const struct plan_entry *e, int i)
{
    int res_first;
    const struct plan_fuse_step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i];
    const struct tensor *x = n->src[PLAN_X];
    float *out;
    const float *res;
    fused_outputs(&out, &res, &res_first, p, s);
    bn_train_fused_cpu(s->keep_y || !out ? fdata(n->dst[PLAN_Y]) : NULL, out,
                       s->keeps_coef ? e->coef + e->coef_at[i] : NULL,
                       fdata(n->dst[PLAN_SAVE_MEAN]), fdata(n->dst[PLAN_SAVE_INVSTD]),
                       fdata(n->dst[PLAN_RUNNING_MEAN]),
                       fdata(n->dst[PLAN_RUNNING_VAR]), fdata(x), res,
                       fdata(n->src[PLAN_GAMMA]), fdata(n->src[PLAN_BETA]), res_first,
                       x->c, x->n, x->h * x->w, bn_parts(n), n->par.bn.eps,
                       n->par.bn.momentum);
    return DR_OK;
}

static int run_bn_eval(const struct plan *p, const struct plan_entry *e, int i)
{
    int res_first;
    const struct plan_fuse_step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i];
    const struct tensor *x = n->src[PLAN_X];
    float *out;
    const float *res;
    fused_outputs(&out, &res, &res_first, p, s);
    bn_eval_fused_cpu(s->keep_y ? fdata(n->dst[PLAN_Y]) : NULL, out, fdata(x), res,
                      fdata(n->src[PLAN_GAMMA]), fdata(n->src[PLAN_BETA]),
                      fdata(n->src[PLAN_RUNNING_MEAN]), fdata(n->src[PLAN_RUNNING_VAR]),
                      res_first, x->c, x->n, x->h * x->w, n->par.bn.eps);
    return DR_OK;
}

static int run_bn_bwd(const struct plan *p, const struct plan_entry *e, int i)
{
    int rc = DR_OK, parts = 1;
    const struct plan_fuse_step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i], *a = &p->nodes[s->act];
    const struct tensor *x = n->src[PLAN_BWD_X];
    parts = plan_bn_parts(x, n->src[PLAN_BWD_SAVE_MEAN], NULL);
    EXPECT(parts == bn_parts(&p->nodes[s->fwd]), "bn backward: %d parts, the forward %d", parts,
           bn_parts(&p->nodes[s->fwd]));
    bn_backward_fused_cpu(fdata(n->dst[PLAN_DX]), fdata(n->dst[PLAN_DGAMMA]),
                          fdata(n->dst[PLAN_DBETA]), fdata(a->src[PLAN_DY]),
                          e->coef + e->coef_at[s->fwd], fdata(x), fdata(n->src[PLAN_BWD_GAMMA]),
                          fdata(n->src[PLAN_BWD_SAVE_INVSTD]), x->c, x->n, x->h * x->w, parts,
                          PLAN_NODE_ACC(n, PLAN_DX));
cleanup:
    return rc;
}

static int run_step(const struct backend *b, const struct plan *p, const struct plan_entry *e,
                    int i)
{
    switch (e->steps[i].kind) {
    case PLAN_FUSE_SKIP: return DR_OK;
    case PLAN_FUSE_BN_TRAIN: return run_bn_train(p, e, i);
    case PLAN_FUSE_BN_EVAL: return run_bn_eval(p, e, i);
    case PLAN_FUSE_BN_BWD: return run_bn_bwd(p, e, i);
    case PLAN_FUSE_RUN:
    case PLAN_FUSE_ADD_STATS:   /* not taken (add_stats 0): the add as it is */
    case PLAN_FUSE_CONV_FWD:    /* not taken (no conv_fwd_ok, conv_bwd_ok): as they are */
    case PLAN_FUSE_CONV_BWD:
    case PLAN_FUSE_BN_SUMS:
    case PLAN_FUSE_BN_APPLY:
    case PLAN_FUSE_BN_COEF:     /* not taken (no conv_wgrad_ok) */
    case PLAN_FUSE_CONV_BWD_PRO:
    case PLAN_FUSE_ADD_PRO:     /* not taken (no BN_COEF, add_recompute 0) */
    case PLAN_FUSE_KIND_COUNT: break;
    }
    return plan_run_node(b, &p->nodes[i]);
}

int cpu_plan_run(struct cpu_plan_cache **cache, const struct backend *b, const struct plan *p)
{
    int rc = DR_OK;
    struct plan_entry *e = NULL;
    if (!plan_fuse_enabled("DAWNRUN_CPU_FUSE")) return plan_run_each(b, p, NULL, NULL);
    TRY(entry_for(cache, p, &e));
    for (int i = 0; i < p->count; i++) TRY(run_step(b, p, e, i));
cleanup:
    return rc;
}

void cpu_plan_forget(struct cpu_plan_cache *cache, const struct plan *p)
{
    for (int i = 0; cache && i < cache->n; i++)
        if (cache->e[i].p == p) {
            entry_clear(&cache->e[i]);
            cache->e[i] = cache->e[--cache->n];
            return;
        }
}

void cpu_plan_cache_free(struct cpu_plan_cache *cache)
{
    if (!cache) return;
    for (int i = 0; i < cache->n; i++) entry_clear(&cache->e[i]);
    free(cache->e);
    free(cache);
}

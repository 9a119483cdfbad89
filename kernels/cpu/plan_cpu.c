/* Runs a plan (kernels/plan.h) on the CPU engine: every node through the engine's table,
 * except the batch-norm patterns fused here into one pass over memory instead of two or
 * three (bn_fused.h). The patterns, found once per plan and signature (plan_signature):
 *   - forward: BN_FWD_TRAIN or BN_FWD_EVAL, then a ReLU ACT_FWD of its output: the
 *     elementwise pass after the statistics writes the ReLU's output, and the batch
 *     norm's output only when another node reads that value; when an ADD_FWD is the
 *     ReLU output's only reader (a residual add), the pass writes the add's output
 *     instead;
 *   - backward: a ReLU ACT_BWD whose dx only a BN_BWD reads, that batch norm's forward
 *     being in the plan: the batch norm's backward takes the ReLU's dy and recomputes
 *     the mask from x with the coefficients its forward kept; the ReLU's dx is never
 *     written.
 * A pattern is fused only where that is safe: a value no longer written has no other
 * reader, and only a replayable plan (a whole step or evaluation batch, kernels/plan.h)
 * leaves a value unwritten (the readers of one plan's values may be in the next);
 * nothing a moved node reads or writes is touched by the nodes it moves over; nothing
 * the backward recomputes from is written between the forward and the backward.
 * The fused passes compute every element as the separate kernels do, so the results are
 * plan_run_each's bit for bit (tests/test_plan_cpu.c compares them). */
#include "plan_cpu.h"

#include <stdlib.h>
#include <string.h>

#include "../../base/status.h"
#include "../backend_check.h"
#include "bn_fused.h"

/* What the executor does at one node. */
enum step_kind {
    STEP_RUN,        /* the node through the table */
    STEP_SKIP,       /* folded into another node's step */
    STEP_BN_TRAIN,   /* bn_train_fused_cpu, with the ReLU node act (or -1) folded in */
    STEP_BN_EVAL,    /* bn_eval_fused_cpu */
    STEP_BN_BWD      /* bn_backward_fused_cpu with the ReLU backward node act folded in */
};

struct step {
    enum step_kind kind;
    int act;          /* the activation node folded in, -1 none */
    int add;          /* forward: the residual ADD_FWD folded in after act, -1 none */
    int fwd;          /* STEP_BN_BWD, and the ACT_BWD folded into it: the BN_FWD_TRAIN
                         node whose coefficients it reads */
    int keep_y;       /* forward: the batch norm's output is read elsewhere, so written */
    int keeps_coef;   /* STEP_BN_TRAIN: keeps its coefficients for a fused backward */
    size_t coef_at;   /* ... at this float offset of the entry's coefficients */
};

struct plan_entry {
    const struct plan *p;
    uint64_t sig;
    int count;
    struct step *steps;   /* (count) */
    float *coef;          /* every STEP_BN_TRAIN's kept coefficients */
};

struct cpu_plan_cache {
    struct plan_entry *e;
    int n, cap;
};

static int fuse_enabled(void)
{
    const char *v = getenv("DAWNRUN_CPU_FUSE");
    return !(v && !strcmp(v, "0"));
}

/* The same memory: the same handle, or handles of the same data. */
static int same_tensor(const struct tensor *a, const struct tensor *b)
{
    return a && b && (a == b || (a->data && a->data == b->data));
}

static int same_shape(const struct tensor *a, const struct tensor *b)
{
    return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w;
}

/* Whether node n reads (*reads) or writes (*writes) t; SGD nodes update their items. */
static void node_touches(int *reads, int *writes, const struct plan_node *n,
                         const struct tensor *t)
{
    const struct tensor *ts[PLAN_NODE_MAX_TENSORS];
    int written[PLAN_NODE_MAX_TENSORS];
    const int count = plan_node_tensors(ts, written, n);
    *reads = *writes = 0;
    for (int i = 0; i < count; i++)
        if (same_tensor(ts[i], t)) {
            if (written[i]) *writes = 1;
            else *reads = 1;
        }
    if (n->op == PLAN_SGD)
        for (int i = 0; i < n->u.sgd.count; i++) {
            const struct sgd_item *it = &n->u.sgd.items[i];
            if (same_tensor(it->w, t) || same_tensor(it->v, t) || same_tensor(it->dw, t))
                *reads = *writes = 1;
        }
}

/* Nodes of p other than skip that read (want_write = 0) or write (1) t. */
static int count_touching(const struct plan *p, const struct tensor *t, int want_write, int skip)
{
    int count = 0;
    for (int i = 0; i < p->count; i++) {
        int r, w;
        if (i == skip) continue;
        node_touches(&r, &w, &p->nodes[i], t);
        count += want_write ? w : r;
    }
    return count;
}

/* Whether a node strictly between from and to writes t (or, unless write_only, reads it). */
static int touched_between(const struct plan *p, const struct tensor *t, int from, int to,
                           int write_only)
{
    for (int i = from + 1; i < to; i++) {
        int r, w;
        node_touches(&r, &w, &p->nodes[i], t);
        if (w || (!write_only && r)) return 1;
    }
    return 0;
}

/* The first node after `from` that reads or writes t, or -1. */
static int next_touching(const struct plan *p, const struct tensor *t, int from)
{
    for (int i = from + 1; i < p->count; i++) {
        int r, w;
        node_touches(&r, &w, &p->nodes[i], t);
        if (r || w) return i;
    }
    return -1;
}

/* Whether a node other than skip0 and skip1 reads the value node `from` writes into t:
 * the nodes after it up to and including the next one that writes t, wrapping round to
 * the plan's start when none does (a plan run again finds its tensors as it left them). */
static int value_read_elsewhere(const struct plan *p, const struct tensor *t, int from,
                                int skip0, int skip1)
{
    for (int k = 1; k < p->count; k++) {
        const int r = (from + k) % p->count;
        int reads, writes;
        node_touches(&reads, &writes, &p->nodes[r], t);
        if (reads && r != skip0 && r != skip1) return 1;
        if (writes) break;
    }
    return 0;
}

/* Batch norm forward node n's output, input, scale and shift. */
static void bn_fwd_tensors(const struct plan_node *n, const struct tensor **y,
                           const struct tensor **x, const struct tensor **gamma,
                           const struct tensor **beta)
{
    if (n->op == PLAN_BN_FWD_TRAIN) {
        *y = n->u.bn_fwd_train.y;
        *x = n->u.bn_fwd_train.x;
        *gamma = n->u.bn_fwd_train.gamma;
        *beta = n->u.bn_fwd_train.beta;
    } else {
        *y = n->u.bn_fwd_eval.y;
        *x = n->u.bn_fwd_eval.x;
        *gamma = n->u.bn_fwd_eval.gamma;
        *beta = n->u.bn_fwd_eval.beta;
    }
}

/* The ReLU ACT_FWD node that may be folded into batch norm node i: the next node touching
 * the batch norm's output reads it as its input, and its own output, another tensor of
 * the same shape, is untouched in between; -1 when there is none. */
static int forward_act(const struct plan *p, int i)
{
    const struct tensor *y, *x, *gamma, *beta;
    bn_fwd_tensors(&p->nodes[i], &y, &x, &gamma, &beta);
    if (!y || !y->data || !x || !x->data || !same_shape(y, x)) return -1;
    const int j = next_touching(p, y, i);
    if (j < 0) return -1;
    const struct plan_node *a = &p->nodes[j];
    if (a->op != PLAN_ACT_FWD || !same_tensor(a->u.act_fwd.x, y) || a->u.act_fwd.kind != ACT_RELU)
        return -1;
    const struct tensor *out = a->u.act_fwd.y;
    if (!out || !out->data || !same_shape(out, y) || same_tensor(out, y) ||
        same_tensor(out, x) || touched_between(p, out, i, j, 0))
        return -1;
    return j;
}

/* The ADD_FWD node that may be folded in after ReLU node j of batch norm node i: the
 * value j writes is read by that add alone (the next node touching it), whose other
 * operand is neither that output nor the batch norm's and is not written between i and
 * the add, and whose own output nothing touches in between; -1 when there is none. */
static int forward_add(const struct plan *p, int i, int j)
{
    const struct tensor *y, *x, *gamma, *beta;
    const struct tensor *out = p->nodes[j].u.act_fwd.y;
    bn_fwd_tensors(&p->nodes[i], &y, &x, &gamma, &beta);
    const int q = next_touching(p, out, j);
    if (q < 0 || p->nodes[q].op != PLAN_ADD_FWD) return -1;
    const struct plan_node *n = &p->nodes[q];
    const int first = same_tensor(n->u.add_fwd.a, out), second = same_tensor(n->u.add_fwd.b, out);
    if (first == second) return -1;   /* not an operand, or both */
    const struct tensor *res = first ? n->u.add_fwd.b : n->u.add_fwd.a, *sum = n->u.add_fwd.y;
    if (!res || !res->data || !sum || !sum->data || !same_shape(res, out) ||
        !same_shape(sum, out) || same_tensor(res, y) || same_tensor(sum, out) ||
        same_tensor(sum, res) || same_tensor(sum, y) || same_tensor(sum, x) ||
        value_read_elsewhere(p, out, j, q, -1) || touched_between(p, sum, i, q, 0) ||
        touched_between(p, res, i, q, 1))
        return -1;
    return q;
}

/* For ReLU ACT_BWD node k: the BN_BWD node m its dx feeds (that dx's only reader; k alone
 * writes it, overwriting), with *fwd the BN_FWD_TRAIN node that wrote k's input, the same
 * batch norm as m's, x, gamma, beta and the statistics unchanged from it to m, and k's dy
 * unchanged from k to m; -1 when there is none. */
static int backward_bn(const struct plan *p, int k, int *fwd)
{
    const struct plan_node *a = &p->nodes[k];
    const struct tensor *g = a->u.act_bwd.dx, *d = a->u.act_bwd.dy, *y = a->u.act_bwd.x;
    *fwd = -1;
    if (!g || !g->data || a->u.act_bwd.accumulate || a->u.act_bwd.kind != ACT_RELU || !d ||
        !d->data || !y || same_tensor(g, d) || same_tensor(g, y))
        return -1;
    const int m = next_touching(p, g, k);
    if (m < 0) return -1;
    const struct plan_node *b = &p->nodes[m];
    if (b->op != PLAN_BN_BWD || !same_tensor(b->u.bn_bwd.dy, g)) return -1;
    if (count_touching(p, g, 1, k) != 0 || count_touching(p, g, 0, m) != 0) return -1;
    if (!same_shape(d, g) || !same_shape(d, b->u.bn_bwd.x) || touched_between(p, d, k, m, 1))
        return -1;
    if (b->u.bn_bwd.dx && (same_tensor(b->u.bn_bwd.dx, d) || same_tensor(b->u.bn_bwd.dx, g)))
        return -1;
    for (int i = k - 1; i >= 0; i--) {
        const struct plan_node *f = &p->nodes[i];
        if (f->op != PLAN_BN_FWD_TRAIN || !same_tensor(f->u.bn_fwd_train.y, y)) continue;
        if (!same_tensor(f->u.bn_fwd_train.x, b->u.bn_bwd.x) ||
            !same_tensor(f->u.bn_fwd_train.gamma, b->u.bn_bwd.gamma) ||
            !same_tensor(f->u.bn_fwd_train.save_mean, b->u.bn_bwd.save_mean) ||
            !same_tensor(f->u.bn_fwd_train.save_invstd, b->u.bn_bwd.save_invstd))
            return -1;
        if (touched_between(p, f->u.bn_fwd_train.x, i, m, 1) ||
            touched_between(p, f->u.bn_fwd_train.gamma, i, m, 1) ||
            touched_between(p, f->u.bn_fwd_train.beta, i, m, 1) ||
            touched_between(p, f->u.bn_fwd_train.save_mean, i, m, 1) ||
            touched_between(p, f->u.bn_fwd_train.save_invstd, i, m, 1) ||
            count_touching(p, y, 1, i) != 0)
            return -1;
        *fwd = i;
        return m;
    }
    return -1;
}

static void entry_clear(struct plan_entry *e)
{
    free(e->coef);
    free(e->steps);
    memset(e, 0, sizeof(*e));
}

/* The number of batch-norm parts of forward node n (its save_mean's count / c). */
static int bn_parts(const struct plan_node *n)
{
    const int splits = n->u.bn_fwd_train.a.splits;
    return splits > 1 ? splits : 1;
}

/* Finds the fused patterns of p into e. */
static int analyse(struct plan_entry *e, const struct plan *p)
{
    int rc = DR_OK;
    struct step *s = NULL;
    e->p = p;
    e->sig = plan_signature(p);
    e->count = p->count;
    e->steps = s = calloc((size_t)(p->count ? p->count : 1), sizeof(*s));
    CHECK_ALLOC(s, "the CPU plan analysis");
    for (int i = 0; i < p->count; i++) s[i] = (struct step){STEP_RUN, -1, -1, -1, 0, 0, 0};
    /* backward first: which forward batch norms keep their coefficients */
    for (int k = 0; k < p->count; k++) {
        int fwd, m;
        if (!p->replayable) break;   /* its dx may have readers in later plans */
        if (p->nodes[k].op != PLAN_ACT_BWD || s[k].kind != STEP_RUN) continue;
        if ((m = backward_bn(p, k, &fwd)) < 0 || s[m].kind != STEP_RUN) continue;
        s[k].kind = STEP_SKIP;
        s[k].fwd = fwd;
        s[m] = (struct step){STEP_BN_BWD, k, -1, fwd, 0, 0, 0};
        s[fwd].keeps_coef = 1;
    }
    for (int i = 0; i < p->count; i++) {
        const struct plan_node *n = &p->nodes[i];
        if (n->op != PLAN_BN_FWD_TRAIN && n->op != PLAN_BN_FWD_EVAL) continue;
        const int j = forward_act(p, i);
        if (j < 0 && !s[i].keeps_coef) continue;
        s[i].kind = n->op == PLAN_BN_FWD_TRAIN ? STEP_BN_TRAIN : STEP_BN_EVAL;
        s[i].act = j;
        if (j < 0) continue;
        s[j].kind = STEP_SKIP;
        s[i].add = p->replayable ? forward_add(p, i, j) : -1;
        if (s[i].add >= 0) s[s[i].add].kind = STEP_SKIP;
    }
    /* which fused forwards still write their output: a reader of the value it writes that
     * is neither the ReLU folded into it nor a ReLU backward folded into a batch-norm
     * backward that recomputes it */
    size_t coef_floats = 0;
    for (int i = 0; i < p->count; i++) {
        if (s[i].kind != STEP_BN_TRAIN && s[i].kind != STEP_BN_EVAL) continue;
        const struct tensor *y, *x, *gamma, *beta;
        bn_fwd_tensors(&p->nodes[i], &y, &x, &gamma, &beta);
        s[i].keep_y = !p->replayable;
        for (int k = 1; k < p->count && !s[i].keep_y; k++) {
            const int r = (i + k) % p->count;
            int reads, writes;
            node_touches(&reads, &writes, &p->nodes[r], y);
            if (r != s[i].act &&
                !(p->nodes[r].op == PLAN_ACT_BWD && s[r].kind == STEP_SKIP && s[r].fwd == i))
                s[i].keep_y = reads;
            if (writes) break;
        }
        if (s[i].keeps_coef) {
            s[i].coef_at = coef_floats;
            coef_floats += (size_t)BN_COEF_COUNT * bn_parts(&p->nodes[i]) * x->c;
        }
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
        if (pc->n == pc->cap) {
            const int cap = pc->cap ? 2 * pc->cap : 4;
            struct plan_entry *grown = realloc(pc->e, (size_t)cap * sizeof(*grown));
            CHECK_ALLOC(grown, "the CPU plan cache");
            pc->e = grown;
            pc->cap = cap;
        }
        e = &pc->e[pc->n++];
        memset(e, 0, sizeof(*e));
        TRY(analyse(e, p));
    }
    *out = e;
cleanup:
    return rc;
}

/* The operand of add node q that is not t. */
static const struct tensor *add_other(const struct plan_node *q, const struct tensor *t)
{
    return same_tensor(q->u.add_fwd.a, t) ? q->u.add_fwd.b : q->u.add_fwd.a;
}

static float *fdata(const struct tensor *t)
{
    return t ? (float *)t->data : NULL;
}

/* A fused forward's outputs: *out (the ReLU's or the add's), *res and res_first (the
 * add's other operand and whether it comes first), from step s. */
static void fused_outputs(float **out, const float **res, int *res_first,
                          const struct plan *p, const struct step *s)
{
    const struct plan_node *a = s->act >= 0 ? &p->nodes[s->act] : NULL;
    const struct plan_node *q = s->add >= 0 ? &p->nodes[s->add] : NULL;
    *out = q ? fdata(q->u.add_fwd.y) : a ? fdata(a->u.act_fwd.y) : NULL;
    *res = q ? fdata(add_other(q, a->u.act_fwd.y)) : NULL;
    *res_first = q ? same_tensor(q->u.add_fwd.b, a->u.act_fwd.y) : 0;
}

static int run_bn_train(const struct plan *p, const struct plan_entry *e, int i)
{
    int rc = DR_OK, parts = 1, res_first;
    const struct step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i];
    const struct tensor *x = n->u.bn_fwd_train.x;
    float *out;
    const float *res;
    TRY(backend_check_bn_parts(&parts, x, n->u.bn_fwd_train.save_mean,
                               n->u.bn_fwd_train.save_invstd, &n->u.bn_fwd_train.a));
    EXPECT(parts == bn_parts(n), "bn: %d parts for %d splits", parts, n->u.bn_fwd_train.a.splits);
    fused_outputs(&out, &res, &res_first, p, s);
    bn_train_fused_cpu(s->keep_y || !out ? fdata(n->u.bn_fwd_train.y) : NULL, out,
                       s->keeps_coef ? e->coef + s->coef_at : NULL,
                       fdata(n->u.bn_fwd_train.save_mean), fdata(n->u.bn_fwd_train.save_invstd),
                       fdata(n->u.bn_fwd_train.running_mean),
                       fdata(n->u.bn_fwd_train.running_var), fdata(x), res,
                       fdata(n->u.bn_fwd_train.gamma), fdata(n->u.bn_fwd_train.beta), res_first,
                       x->c, x->n, x->h * x->w, parts, n->u.bn_fwd_train.a.eps,
                       n->u.bn_fwd_train.a.momentum);
cleanup:
    return rc;
}

static int run_bn_eval(const struct plan *p, const struct plan_entry *e, int i)
{
    int res_first;
    const struct step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i];
    const struct tensor *x = n->u.bn_fwd_eval.x;
    float *out;
    const float *res;
    fused_outputs(&out, &res, &res_first, p, s);
    bn_eval_fused_cpu(s->keep_y ? fdata(n->u.bn_fwd_eval.y) : NULL, out, fdata(x), res,
                      fdata(n->u.bn_fwd_eval.gamma), fdata(n->u.bn_fwd_eval.beta),
                      fdata(n->u.bn_fwd_eval.running_mean), fdata(n->u.bn_fwd_eval.running_var),
                      res_first, x->c, x->n, x->h * x->w, n->u.bn_fwd_eval.a.eps);
    return DR_OK;
}

static int run_bn_bwd(const struct plan *p, const struct plan_entry *e, int i)
{
    int rc = DR_OK, parts = 1;
    const struct step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i], *a = &p->nodes[s->act];
    const struct tensor *x = n->u.bn_bwd.x;
    TRY(backend_check_bn_parts(&parts, x, n->u.bn_bwd.save_mean, n->u.bn_bwd.save_invstd, NULL));
    EXPECT(parts == bn_parts(&p->nodes[s->fwd]), "bn backward: %d parts, the forward %d", parts,
           bn_parts(&p->nodes[s->fwd]));
    bn_backward_fused_cpu(fdata(n->u.bn_bwd.dx), fdata(n->u.bn_bwd.dgamma),
                          fdata(n->u.bn_bwd.dbeta), fdata(a->u.act_bwd.dy),
                          e->coef + e->steps[s->fwd].coef_at, fdata(x), fdata(n->u.bn_bwd.gamma),
                          fdata(n->u.bn_bwd.save_invstd), x->c, x->n, x->h * x->w, parts,
                          n->u.bn_bwd.accumulate);
cleanup:
    return rc;
}

static int run_step(const struct backend *b, const struct plan *p, const struct plan_entry *e,
                    int i)
{
    switch (e->steps[i].kind) {
    case STEP_SKIP: return DR_OK;
    case STEP_BN_TRAIN: return run_bn_train(p, e, i);
    case STEP_BN_EVAL: return run_bn_eval(p, e, i);
    case STEP_BN_BWD: return run_bn_bwd(p, e, i);
    case STEP_RUN: break;
    }
    return plan_run_node(b, &p->nodes[i]);
}

int cpu_plan_run(struct cpu_plan_cache **cache, const struct backend *b, const struct plan *p)
{
    int rc = DR_OK;
    struct plan_entry *e = NULL;
    if (!fuse_enabled()) return plan_run_each(b, p, NULL, NULL);
    TRY(entry_for(cache, p, &e));
    for (int i = 0; i < p->count; i++) TRY(run_step(b, p, e, i));
cleanup:
    return rc;
}

void cpu_plan_cache_free(struct cpu_plan_cache *cache)
{
    if (!cache) return;
    for (int i = 0; i < cache->n; i++) entry_clear(&cache->e[i]);
    free(cache->e);
    free(cache);
}

/* Runs a plan (kernels/plan.h) on the CUDA engine: every node through the engine's own
 * table, except the patterns fused here, replayed as a graph where graph_cuda.cu can.
 *
 * Fused patterns (docs/gpu.md, "Fused paths"), found over the whole plan once per plan and
 * signature (plan_signature) and kept in c->plans:
 *   - forward: BN_FWD_TRAIN or BN_FWD_EVAL, then ACT_FWD of its output: one elementwise
 *     pass after the statistics writing the activation's output, and the batch norm's
 *     output only when another node reads it; and when an ADD_FWD is the activation's
 *     output's only reader (a residual add), that pass writes the add's output instead;
 *   - backward: ACT_BWD whose dx only a BN_BWD reads, that batch norm's forward being in
 *     the plan: the batch norm's backward takes the activation's dy, recomputes its output
 *     from x with the coefficients the forward kept, and the activation's dx is never
 *     written.
 * A pattern is fused only where that is safe: the value no longer written (the batch
 * norm's output, the activation's dx) has no other reader (a tensor rewritten later in
 * the plan, as each test-time view of an evaluation plan rewrites the forward's tensors,
 * has each value it holds considered apart); nothing a moved node reads or
 * writes is touched by the nodes it moves over; nothing the backward recomputes from (x,
 * gamma, beta) is written between the forward and the backward.
 * DAWNRUN_CUDA_FUSE=0 (read at each run of a plan) runs every node one by one. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

/* What the executor does at one node. */
enum step_kind {
    STEP_RUN,        /* the node through the table */
    STEP_SKIP,       /* folded into another node's step */
    STEP_BN_TRAIN,   /* cuda_bn_train_fused (act: the ACT_FWD node folded in, or -1) */
    STEP_BN_EVAL,    /* cuda_bn_eval_fused */
    STEP_BN_BWD      /* cuda_bn_backward_fused with ACT_BWD node act folded in */
};

struct step {
    enum step_kind kind;
    int act;          /* the activation node folded in, -1 none */
    int add;          /* forward: the residual ADD_FWD folded in after act, -1 none */
    int fwd;          /* STEP_BN_BWD and the ACT_BWD folded into it: the BN_FWD_TRAIN node
                         whose coefficients it reads */
    int keep_y;       /* forward: the batch norm's output is read elsewhere, so written */
    int keeps_coef;   /* STEP_BN_TRAIN: its coefficients are kept for a fused backward */
    size_t coef_at;   /* ... at this float offset of the entry's coefficient buffer */
};

/* The analysis of one plan. */
struct plan_entry {
    const struct plan *p;
    uint64_t sig;
    int count;
    struct step *steps;   /* (count) */
    float *coef;          /* device: the kept coefficients of every STEP_BN_TRAIN */
    size_t coef_floats;
};

struct plan_cache {
    struct plan_entry *e;
    int n, cap;
};

/* Whether fusion is on: DAWNRUN_CUDA_FUSE unset, or anything but "0". */
static int fuse_enabled(void)
{
    const char *v = getenv("DAWNRUN_CUDA_FUSE");
    return !(v && !strcmp(v, "0"));
}

/* The same memory: the same handle, or handles of the same data. */
static int same_tensor(const struct tensor *a, const struct tensor *b)
{
    return a && b && (a == b || (a->data && a->data == b->data));
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

/* Nodes of p other than skip0, skip1 that read (want_write = 0) or write (1) t. */
static int count_touching(const struct plan *p, const struct tensor *t, int want_write,
                          int skip0, int skip1)
{
    int count = 0;
    for (int i = 0; i < p->count; i++) {
        int r, w;
        if (i == skip0 || i == skip1) continue;
        node_touches(&r, &w, &p->nodes[i], t);
        count += want_write ? w : r;
    }
    return count;
}

/* Whether some node strictly between from and to reads or writes t (write_only: writes). */
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

/* Nodes other than skip0, skip1 that read the value node `from` writes into t: the nodes
 * after it up to and including the next one that writes t, wrapping round to the plan's
 * start when none does (a replayed plan's tensors keep their values into the next run).
 * A tensor rewritten later in the plan (an evaluation plan's test-time views each run the
 * forward pass over the same tensors) thus has each of its values considered apart. */
static int value_readers(const struct plan *p, const struct tensor *t, int from, int skip0,
                         int skip1)
{
    int count = 0;
    for (int k = 1; k < p->count; k++) {
        const int r = (from + k) % p->count;
        int reads, writes;
        node_touches(&reads, &writes, &p->nodes[r], t);
        if (reads && r != skip0 && r != skip1) count++;
        if (writes) break;
    }
    return count;
}

static int valid_act(enum act_kind kind)
{
    return (unsigned)kind < ACT_KIND_COUNT;
}

/* The batch norm forward node i's output y, x, gamma, beta. */
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

/* The ACT_FWD node that may be folded into batch norm node i: the next node touching the
 * batch norm's output y reads it as its input, and its own output is untouched in
 * between; -1 when there is none. (Whether y must still be written is decided from the
 * readers of the value i writes: analyse, keep_y.) */
static int forward_act(const struct plan *p, int i)
{
    const struct tensor *y, *x, *gamma, *beta;
    bn_fwd_tensors(&p->nodes[i], &y, &x, &gamma, &beta);
    if (!y || !y->data) return -1;
    const int j = next_touching(p, y, i);
    if (j < 0) return -1;
    const struct plan_node *a = &p->nodes[j];
    if (a->op != PLAN_ACT_FWD || !same_tensor(a->u.act_fwd.x, y) || !valid_act(a->u.act_fwd.kind))
        return -1;
    const struct tensor *out = a->u.act_fwd.y;
    if (!out || !out->data || !cuda_same_shape(out, y) || same_tensor(out, y) ||
        same_tensor(out, x) || touched_between(p, out, i, j, 0))
        return -1;
    return j;
}

/* The ADD_FWD node that may be folded in after activation node j of batch norm node i:
 * the value j writes into the activation's output is read by that add alone (the next
 * node touching it), whose other operand is neither that output nor the batch norm's and
 * is not written between i and the add, and whose own output nothing touches in between;
 * -1 when there is none. */
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
    if (!res || !res->data || !sum || !sum->data || !cuda_same_shape(res, out) ||
        !cuda_same_shape(sum, out) || same_tensor(res, y) || same_tensor(sum, out) ||
        same_tensor(sum, res) || same_tensor(sum, y) || same_tensor(sum, x) ||
        value_readers(p, out, j, q, -1) != 0 || touched_between(p, sum, i, q, 0) ||
        touched_between(p, res, i, q, 1))
        return -1;
    return q;
}

/* For ACT_BWD node k: the BN_BWD node m its dx feeds (the only reader of that dx, which k
 * alone writes, overwriting), with the BN_FWD_TRAIN node *fwd that wrote k's input, the
 * same batch norm as m's (x, gamma, statistics), x, gamma and beta unchanged from the
 * forward to m, and k's dy unchanged from k to m; -1 when there is none. */
static int backward_bn(const struct plan *p, int k, int *fwd)
{
    const struct plan_node *a = &p->nodes[k];
    const struct tensor *g = a->u.act_bwd.dx, *d = a->u.act_bwd.dy, *y = a->u.act_bwd.x;
    *fwd = -1;
    if (!g || !g->data || a->u.act_bwd.accumulate || !valid_act(a->u.act_bwd.kind) || !d ||
        !y || same_tensor(g, d) || same_tensor(g, y))
        return -1;
    const int m = next_touching(p, g, k);
    if (m < 0) return -1;
    const struct plan_node *b = &p->nodes[m];
    if (b->op != PLAN_BN_BWD || !same_tensor(b->u.bn_bwd.dy, g)) return -1;
    if (count_touching(p, g, 1, k, -1) != 0 || count_touching(p, g, 0, m, -1) != 0) return -1;
    if (!cuda_same_shape(d, g) || touched_between(p, d, k, m, 1)) return -1;
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
            count_touching(p, y, 1, i, -1) != 0)
            return -1;
        *fwd = i;
        return m;
    }
    return -1;
}

static void entry_clear(struct cuda_ctx *c, struct plan_entry *e)
{
    if (e->coef) cuda_counted_free(c, e->coef);
    free(e->steps);
    memset(e, 0, sizeof(*e));
}

/* Finds the fused patterns of p into e (steps, kept coefficients). */
static int analyse(struct cuda_ctx *c, struct plan_entry *e, const struct plan *p)
{
    int rc = DR_OK;
    struct step *s = NULL;
    e->p = p;
    e->sig = plan_signature(p);
    e->count = p->count;
    e->steps = s = (struct step *)calloc((size_t)(p->count ? p->count : 1), sizeof(*s));
    CHECK_ALLOC(s, "the CUDA plan analysis");
    for (int i = 0; i < p->count; i++) s[i] = (struct step){STEP_RUN, -1, -1, -1, 0, 0, 0};
    /* backward first: which forward batch norms must keep their coefficients */
    for (int k = 0; k < p->count; k++) {
        int fwd, m;
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
        s[i].add = forward_add(p, i, j);
        if (s[i].add >= 0) s[s[i].add].kind = STEP_SKIP;
    }
    /* which fused forwards must still write their output: a reader of the value it writes
     * (value_readers' span) that is neither the activation folded into it nor an
     * activation backward folded into a batch norm backward that recomputes it (a folded
     * add still reads its operands) */
    for (int i = 0; i < p->count; i++) {
        if (s[i].kind != STEP_BN_TRAIN && s[i].kind != STEP_BN_EVAL) continue;
        const struct tensor *y, *x, *gamma, *beta;
        bn_fwd_tensors(&p->nodes[i], &y, &x, &gamma, &beta);
        for (int k = 1; k < p->count && !s[i].keep_y; k++) {
            const int r = (i + k) % p->count;
            int reads, writes;
            node_touches(&reads, &writes, &p->nodes[r], y);
            if (r != s[i].act &&
                !(p->nodes[r].op == PLAN_ACT_BWD && s[r].kind == STEP_SKIP && s[r].fwd == i))
                s[i].keep_y = reads;
            if (writes) break;
        }
    }
    e->coef_floats = 0;
    for (int i = 0; i < p->count; i++) {
        if (!s[i].keeps_coef) continue;
        const struct plan_node *n = &p->nodes[i];
        const int splits = n->u.bn_fwd_train.a.splits > 1 ? n->u.bn_fwd_train.a.splits : 1;
        s[i].coef_at = e->coef_floats;
        /* 16-byte aligned pieces */
        e->coef_floats += ((size_t)COEF_FWD_COUNT * splits * n->u.bn_fwd_train.x->c + 3) / 4 * 4;
    }
    if (e->coef_floats)
        CHECK_CUDA(cuda_counted_malloc(c, (void **)&e->coef, sizeof(float) * e->coef_floats));
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

/* The operand of add node q that is not t. */
static const struct tensor *add_other(const struct plan_node *q, const struct tensor *t)
{
    return same_tensor(q->u.add_fwd.a, t) ? q->u.add_fwd.b : q->u.add_fwd.a;
}

/* Runs node i of p as its step says. */
static int run_step(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e, int i)
{
    const struct step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i];
    struct cuda_bn_act act = {ACT_RELU, 0.0f};
    switch (s->kind) {
    case STEP_SKIP: return DR_OK;
    case STEP_BN_TRAIN: {
        const struct plan_node *a = s->act >= 0 ? &p->nodes[s->act] : NULL;
        const struct plan_node *q = s->add >= 0 ? &p->nodes[s->add] : NULL;
        if (a) act = (struct cuda_bn_act){a->u.act_fwd.kind, a->u.act_fwd.alpha};
        return cuda_bn_train_fused(c, s->keep_y || !a ? n->u.bn_fwd_train.y : NULL,
                                   q ? q->u.add_fwd.y : a ? a->u.act_fwd.y : NULL,
                                   q ? add_other(q, a->u.act_fwd.y) : NULL, a ? &act : NULL,
                                   s->keeps_coef ? e->coef + s->coef_at : NULL,
                                   n->u.bn_fwd_train.save_mean, n->u.bn_fwd_train.save_invstd,
                                   n->u.bn_fwd_train.running_mean, n->u.bn_fwd_train.running_var,
                                   n->u.bn_fwd_train.x, n->u.bn_fwd_train.gamma,
                                   n->u.bn_fwd_train.beta, &n->u.bn_fwd_train.a);
    }
    case STEP_BN_EVAL: {
        const struct plan_node *a = &p->nodes[s->act];
        const struct plan_node *q = s->add >= 0 ? &p->nodes[s->add] : NULL;
        act = (struct cuda_bn_act){a->u.act_fwd.kind, a->u.act_fwd.alpha};
        return cuda_bn_eval_fused(c, s->keep_y ? n->u.bn_fwd_eval.y : NULL,
                                  q ? q->u.add_fwd.y : a->u.act_fwd.y,
                                  q ? add_other(q, a->u.act_fwd.y) : NULL, &act,
                                  n->u.bn_fwd_eval.x, n->u.bn_fwd_eval.gamma,
                                  n->u.bn_fwd_eval.beta, n->u.bn_fwd_eval.running_mean,
                                  n->u.bn_fwd_eval.running_var, &n->u.bn_fwd_eval.a);
    }
    case STEP_BN_BWD: {
        const struct plan_node *a = &p->nodes[s->act];
        act = (struct cuda_bn_act){a->u.act_bwd.kind, a->u.act_bwd.alpha};
        return cuda_bn_backward_fused(c, n->u.bn_bwd.dx, n->u.bn_bwd.dgamma, n->u.bn_bwd.dbeta,
                                      a->u.act_bwd.dy, &act, e->coef + e->steps[s->fwd].coef_at,
                                      n->u.bn_bwd.x, n->u.bn_bwd.gamma, n->u.bn_bwd.save_mean,
                                      n->u.bn_bwd.save_invstd, n->u.bn_bwd.accumulate);
    }
    case STEP_RUN: break;
    }
    const struct backend b = {c->ops, c};
    return plan_run_node(&b, n);
}

int cuda_plan_execute(struct cuda_ctx *c, const struct plan *p)
{
    int rc = DR_OK;
    struct plan_entry *e = NULL;
    if (!fuse_enabled()) {
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

/* The fusion analysis shared by the engines (plan_fuse.h): finds the batch-norm patterns
 * of a plan and the steps that run them.
 *
 * Design notes. Every question the analysis asks is about tensor handles: which nodes
 * read or write a tensor (plan_node_tensors, with an SGD node's items both read and
 * written), where "the same tensor" is the same handle or handles of the same data (an
 * alias, kernels/plan.h). Three spans are used:
 *   - between two nodes (touched_between): the nodes strictly between them, for a node
 *     moved to another's place;
 *   - the whole plan (count_touching), for the activation's dx, which must have one
 *     writer and one reader;
 *   - the value a node writes into a tensor (value_readers): the nodes after it up to and
 *     including the next one that writes the tensor, wrapping round to the plan's start
 *     when none does; so a tensor rewritten later in the plan (each test-time view of an
 *     evaluation plan reruns the forward pass over the same tensors) has each of its
 *     values considered apart.
 * The backward patterns are found first, since they decide which forward batch norms
 * keep their coefficients (and so are fused even without an activation after them); the
 * adds that compute a batch norm's statistics last, from the adds no forward took.
 * The work is quadratic in the plan's length, done once per plan and signature. */
#include "plan_fuse.h"

#include <stdlib.h>
#include <string.h>

int plan_fuse_same_tensor(const struct tensor *a, const struct tensor *b)
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
        if (plan_fuse_same_tensor(ts[i], t)) {
            if (written[i]) *writes = 1;
            else *reads = 1;
        }
    if (n->op == PLAN_SGD)
        for (int i = 0; i < n->par.sgd.count; i++) {
            const struct sgd_item *it = &n->par.sgd.items[i];
            if (plan_fuse_same_tensor(it->w, t) || plan_fuse_same_tensor(it->v, t) ||
                plan_fuse_same_tensor(it->dw, t))
                *reads = *writes = 1;
        }
    if (n->op == PLAN_MUON)   /* Muon's items, as SGD's */
        for (int i = 0; i < n->par.muon.count; i++) {
            const struct sgd_item *it = &n->par.muon.items[i];
            if (plan_fuse_same_tensor(it->w, t) || plan_fuse_same_tensor(it->v, t) ||
                plan_fuse_same_tensor(it->dw, t))
                *reads = *writes = 1;
        }
}

/* The nodes of p other than skip that read (want_write = 0) or write (1) t. */
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

/* The nodes other than skip that read the value node `from` writes into t (the span of
 * that value: the design notes above). */
static int value_readers(const struct plan *p, const struct tensor *t, int from, int skip)
{
    int count = 0;
    for (int k = 1; k < p->count; k++) {
        const int r = (from + k) % p->count;
        int reads, writes;
        node_touches(&reads, &writes, &p->nodes[r], t);
        if (reads && r != skip) count++;
        if (writes) break;
    }
    return count;
}

/* Batch-norm forward node n's output y, input x, scale gamma and shift beta (each
 * (n, c, h, w) or, gamma and beta, (c)): the same slots in BN_FWD_TRAIN and BN_FWD_EVAL. */
static void bn_fwd_tensors(const struct plan_node *n, const struct tensor **y,
                           const struct tensor **x, const struct tensor **gamma,
                           const struct tensor **beta)
{
    *y = n->dst[PLAN_Y];
    *x = n->src[PLAN_X];
    *gamma = n->src[PLAN_GAMMA];
    *beta = n->src[PLAN_BETA];
}

/* The ACT_FWD node that may be folded into batch-norm node i: the next node touching
 * the batch norm's output reads it as its input, and its own output, another tensor of
 * the same shape, is untouched in between; -1 when there is none. (Whether the batch
 * norm's output must still be written is decided from the readers of its value:
 * keep_outputs.) */
static int forward_act(const struct plan *p, int i)
{
    const struct tensor *y, *x, *gamma, *beta;
    bn_fwd_tensors(&p->nodes[i], &y, &x, &gamma, &beta);
    if (!y || !y->data) return -1;
    const int j = next_touching(p, y, i);
    if (j < 0) return -1;
    const struct plan_node *a = &p->nodes[j];
    if (a->op != PLAN_ACT_FWD || !plan_fuse_same_tensor(a->src[PLAN_X], y)) return -1;
    const struct tensor *out = a->dst[PLAN_Y];
    if (!out || !out->data || !tensor_same_shape(out, y) || plan_fuse_same_tensor(out, y) ||
        plan_fuse_same_tensor(out, x) || touched_between(p, out, i, j, 0))
        return -1;
    return j;
}

/* The ADD_FWD node that may be folded in after activation node j of batch-norm node i:
 * the value j writes is read by that add alone (the next node touching it), whose other
 * operand is neither that output nor the batch norm's and is not written between i and
 * the add, and whose own output nothing touches in between; -1 when there is none. */
static int forward_add(const struct plan *p, int i, int j)
{
    const struct tensor *y, *x, *gamma, *beta;
    const struct tensor *out = p->nodes[j].dst[PLAN_Y];
    bn_fwd_tensors(&p->nodes[i], &y, &x, &gamma, &beta);
    const int q = next_touching(p, out, j);
    if (q < 0 || p->nodes[q].op != PLAN_ADD_FWD) return -1;
    const struct plan_node *n = &p->nodes[q];
    const int first = plan_fuse_same_tensor(n->src[PLAN_ADD_A], out);
    const int second = plan_fuse_same_tensor(n->src[PLAN_ADD_B], out);
    if (first == second) return -1;   /* not an operand, or both */
    const struct tensor *res = first ? n->src[PLAN_ADD_B] : n->src[PLAN_ADD_A];
    const struct tensor *sum = n->dst[PLAN_Y];
    if (!res || !res->data || !sum || !sum->data || !tensor_same_shape(res, out) ||
        !tensor_same_shape(sum, out) || plan_fuse_same_tensor(res, y) ||
        plan_fuse_same_tensor(sum, out) || plan_fuse_same_tensor(sum, res) ||
        plan_fuse_same_tensor(sum, y) || plan_fuse_same_tensor(sum, x) ||
        value_readers(p, out, j, q) != 0 || touched_between(p, sum, i, q, 0) ||
        touched_between(p, res, i, q, 1))
        return -1;
    return q;
}

/* For ACT_BWD node k: the BN_BWD node m its dx feeds (that dx's only reader in the plan;
 * k alone writes it, overwriting), with *fwd the BN_FWD_TRAIN node that wrote k's input,
 * the same batch norm as m's (x, gamma, statistics), x, gamma, beta and the statistics
 * unchanged from it to m, nothing else writing its output, and k's dy unchanged from k to
 * m; -1 when there is none. */
static int backward_bn(const struct plan *p, int k, int *fwd)
{
    const struct plan_node *a = &p->nodes[k];
    const struct tensor *g = a->dst[PLAN_DX], *d = a->src[PLAN_DY], *y = a->src[PLAN_BWD_X];
    *fwd = -1;
    if (!g || !g->data || PLAN_NODE_ACC(a, PLAN_DX) || !d || !y ||
        plan_fuse_same_tensor(g, d) || plan_fuse_same_tensor(g, y))
        return -1;
    const int m = next_touching(p, g, k);
    if (m < 0) return -1;
    const struct plan_node *b = &p->nodes[m];
    if (b->op != PLAN_BN_BWD || !plan_fuse_same_tensor(b->src[PLAN_DY], g)) return -1;
    if (count_touching(p, g, 1, k) != 0 || count_touching(p, g, 0, m) != 0) return -1;
    if (!tensor_same_shape(d, g) || touched_between(p, d, k, m, 1)) return -1;
    if (b->dst[PLAN_DX] &&
        (plan_fuse_same_tensor(b->dst[PLAN_DX], d) || plan_fuse_same_tensor(b->dst[PLAN_DX], g)))
        return -1;
    for (int i = k - 1; i >= 0; i--) {
        const struct plan_node *f = &p->nodes[i];
        if (f->op != PLAN_BN_FWD_TRAIN || !plan_fuse_same_tensor(f->dst[PLAN_Y], y))
            continue;
        if (!plan_fuse_same_tensor(f->src[PLAN_X], b->src[PLAN_BWD_X]) ||
            !plan_fuse_same_tensor(f->src[PLAN_GAMMA], b->src[PLAN_BWD_GAMMA]) ||
            !plan_fuse_same_tensor(f->dst[PLAN_SAVE_MEAN], b->src[PLAN_BWD_SAVE_MEAN]) ||
            !plan_fuse_same_tensor(f->dst[PLAN_SAVE_INVSTD], b->src[PLAN_BWD_SAVE_INVSTD]))
            return -1;
        if (touched_between(p, f->src[PLAN_X], i, m, 1) ||
            touched_between(p, f->src[PLAN_GAMMA], i, m, 1) ||
            touched_between(p, f->src[PLAN_BETA], i, m, 1) ||
            touched_between(p, f->dst[PLAN_SAVE_MEAN], i, m, 1) ||
            touched_between(p, f->dst[PLAN_SAVE_INVSTD], i, m, 1) ||
            count_touching(p, y, 1, i) != 0)
            return -1;
        *fwd = i;
        return m;
    }
    return -1;
}

/* For ADD_FWD node q running alone: the BN_FWD_TRAIN node whose statistics the add may
 * compute: the next node touching the add's output z, reading it as its x (of z's shape)
 * and not yet fused with an add's statistics, so that nothing changes z between the two
 * (the add stays in place, so its operands are read as they would be); -1 when there is
 * none. The batch norm's output may be z itself: its statistics are still those of z as
 * the add wrote it. */
static int stats_bn(const struct plan *p, const struct plan_fuse_step *s, int q)
{
    const struct plan_node *n = &p->nodes[q];
    const struct tensor *z = n->dst[PLAN_Y], *a = n->src[PLAN_ADD_A], *b = n->src[PLAN_ADD_B];
    if (!z || !z->data || !a || !a->data || !b || !b->data || !tensor_same_shape(a, z) ||
        !tensor_same_shape(b, z))
        return -1;
    const int i = next_touching(p, z, q);
    if (i < 0) return -1;
    const struct plan_node *bn = &p->nodes[i];
    if (bn->op != PLAN_BN_FWD_TRAIN || !bn->src[PLAN_X] ||
        !plan_fuse_same_tensor(bn->src[PLAN_X], z) || !tensor_same_shape(bn->src[PLAN_X], z) ||
        (s[i].kind != PLAN_FUSE_RUN && s[i].kind != PLAN_FUSE_BN_TRAIN) || s[i].stats >= 0)
        return -1;
    return i;
}

/* Sets keep_y of every fused forward in s: whether a reader of the value it writes into
 * the batch norm's output is neither the activation folded into it nor an activation
 * backward folded into a batch-norm backward that recomputes that output (a folded add
 * reads the activation's output, not this one). */
static void keep_outputs(struct plan_fuse_step *s, const struct plan *p)
{
    for (int i = 0; i < p->count; i++) {
        if (s[i].kind != PLAN_FUSE_BN_TRAIN && s[i].kind != PLAN_FUSE_BN_EVAL) continue;
        const struct tensor *y, *x, *gamma, *beta;
        bn_fwd_tensors(&p->nodes[i], &y, &x, &gamma, &beta);
        s[i].keep_y = 0;
        for (int k = 1; k < p->count && !s[i].keep_y; k++) {
            const int r = (i + k) % p->count;
            int reads, writes;
            node_touches(&reads, &writes, &p->nodes[r], y);
            if (r != s[i].act && !(p->nodes[r].op == PLAN_ACT_BWD &&
                                   s[r].kind == PLAN_FUSE_SKIP && s[r].fwd == i))
                s[i].keep_y = reads;
            if (writes) break;
        }
    }
}

/* The node before i that last writes t (the writer of the value node i reads), or -1. */
static int writer_before(const struct plan *p, const struct tensor *t, int i)
{
    for (int q = i - 1; q >= 0; q--) {
        int r, w;
        node_touches(&r, &w, &p->nodes[q], t);
        if (w) return q;
    }
    return -1;
}

/* Whether conv node n has a bias term (CONV_FWD b, CONV_BWD db) with data. */
static int conv_has_bias(const struct plan_node *n)
{
    const struct tensor *b = n->op == PLAN_CONV_FWD ? n->src[PLAN_B] : n->dst[PLAN_DB];
    return b && b->data;
}

/* The readers of the value node j writes into t, each sorted by role (what it is to the
 * caller: 0, 1, or -1 for any other reader): 1 when every reader has role 0 or 1 and no
 * role has two readers, with *first and *second the readers of roles 0 and 1 (-1 for
 * none); else 0. */
static int value_reader_roles(const struct plan *p, const struct tensor *t, int j,
                              int (*role)(const struct plan_node *n, const struct tensor *t,
                                          int writes),
                              int *first, int *second)
{
    *first = *second = -1;
    for (int k = 1; k < p->count; k++) {
        const int r = (j + k) % p->count;
        int reads, writes;
        node_touches(&reads, &writes, &p->nodes[r], t);
        if (reads) {
            const int q = role(&p->nodes[r], t, writes);
            int *slot = q == 0 ? first : q == 1 ? second : NULL;
            if (!slot || *slot >= 0) return 0;
            *slot = r;
        }
        if (writes) break;
    }
    return 1;
}

/* conv_readers' roles: 0 a CONV_FWD reading t as its x alone, 1 a CONV_BWD reading t as
 * its x alone. */
static int conv_role(const struct plan_node *n, const struct tensor *t, int writes)
{
    if (writes) return -1;
    if (n->op == PLAN_CONV_FWD && plan_fuse_same_tensor(n->src[PLAN_X], t) &&
        !plan_fuse_same_tensor(n->src[PLAN_W], t))
        return 0;
    if (n->op == PLAN_CONV_BWD && plan_fuse_same_tensor(n->src[PLAN_BWD_X], t) &&
        !plan_fuse_same_tensor(n->src[PLAN_DY], t) && !plan_fuse_same_tensor(n->src[PLAN_BWD_W], t))
        return 1;
    return -1;
}

/* The readers of the value node j writes into t: 1 when they are exactly one CONV_FWD
 * reading t as its x alone (*f) and one CONV_BWD reading t as its x alone (*g), the same
 * layer (weights and attributes), neither with a bias; else 0. */
static int conv_readers(const struct plan *p, const struct tensor *t, int j, int *f, int *g)
{
    if (!value_reader_roles(p, t, j, conv_role, f, g)) return 0;
    if (*f < 0 || *g < 0) return 0;
    const struct plan_node *nf = &p->nodes[*f], *ng = &p->nodes[*g];
    return plan_fuse_same_tensor(nf->src[PLAN_W], ng->src[PLAN_BWD_W]) &&
           nf->par.conv.k == ng->par.conv.k &&
           nf->par.conv.stride == ng->par.conv.stride &&
           nf->par.conv.pad == ng->par.conv.pad && !conv_has_bias(nf) &&
           !conv_has_bias(ng);
}

/* The BN_BWD step that fused batch norm i's backward became (its fwd naming i), or -1. */
static int fused_backward_of(const struct plan_fuse_step *s, const struct plan *p, int i)
{
    for (int q = i + 1; q < p->count; q++)
        if (s[q].kind == PLAN_FUSE_BN_BWD && s[q].fwd == i) return q;
    return -1;
}

/* Whether BN_FWD_TRAIN node i is a fused BN_TRAIN with a ReLU and its backward fused, one
 * part, no add folded, its output not kept, gamma and beta given: what the batch norm
 * inside or around the convolutions starts from. A ReLU only: the convolutions' fused
 * graphs (kernels/cuda/conv_fused_cuda.cu) apply it as cuDNN's RELU_FWD / RELU_BWD
 * pointwise modes, so a batch norm with any other kind keeps its own fused passes. */
static int relu_bn_fused(const struct plan_fuse_step *s, const struct plan *p, int i)
{
    const struct plan_node *bn = &p->nodes[i];
    return bn->op == PLAN_BN_FWD_TRAIN && s[i].kind == PLAN_FUSE_BN_TRAIN && s[i].act >= 0 &&
           s[i].add < 0 && !s[i].keep_y && s[i].keeps_coef &&
           bn->par.bn.splits <= 1 && bn->src[PLAN_GAMMA] &&
           bn->src[PLAN_BETA] && p->nodes[s[i].act].par.act.kind == ACT_RELU;
}

/* The node writing x, the input of batch norm node i, when it is a bias-free CONV_FWD of
 * x's shape that does not yet sum its output for a batch norm (running alone, or with a
 * prologue only); -1 otherwise. */
static int summable_conv_writing(const struct plan_fuse_step *s, const struct plan *p,
                                 const struct tensor *x, int i)
{
    const int w = writer_before(p, x, i);
    if (w < 0) return -1;
    const struct plan_node *nw = &p->nodes[w];
    if (nw->op != PLAN_CONV_FWD || !plan_fuse_same_tensor(nw->dst[PLAN_Y], x) ||
        conv_has_bias(nw) || !tensor_same_shape(nw->dst[PLAN_Y], x) ||
        !(s[w].kind == PLAN_FUSE_RUN || (s[w].kind == PLAN_FUSE_CONV_FWD && s[w].stats < 0)))
        return -1;
    return w;
}

/* Moves batch-norm node i (a fused BN_TRAIN with a ReLU, its backward fused) inside the
 * convolutions around it where the rules of plan_fuse.h allow and the engine takes it. */
static void conv_bn(struct plan_fuse_step *s, const struct plan *p,
                    const struct plan_fuse_caps *caps, int i)
{
    const struct plan_node *bn = &p->nodes[i];
    if (!relu_bn_fused(s, p, i) || s[i].stats >= 0) return;
    const int j = s[i].act;
    const struct plan_node *act = &p->nodes[j];
    const int m = fused_backward_of(s, p, i);
    if (m < 0) return;
    const int k = s[m].act;
    const struct tensor *x = bn->src[PLAN_X], *out = act->dst[PLAN_Y];
    /* the convolution writing x */
    const int w = summable_conv_writing(s, p, x, i);
    if (w < 0) return;
    const struct plan_node *nw = &p->nodes[w];
    /* the convolution reading the activation, forward and backward */
    int f, g;
    if (!conv_readers(p, out, j, &f, &g) || s[f].kind != PLAN_FUSE_RUN ||
        s[g].kind != PLAN_FUSE_RUN || !(i < f && f < g && g < k))
        return;
    const struct plan_node *ng = &p->nodes[g], *nm = &p->nodes[m];
    const struct tensor *d = ng->dst[PLAN_DX];
    if (!d || !d->data || PLAN_NODE_ACC(ng, PLAN_DX) ||
        !plan_fuse_same_tensor(d, p->nodes[k].src[PLAN_DY]) || count_touching(p, d, 1, g) != 0 ||
        count_touching(p, d, 0, k) != 0)
        return;
    /* the batch norm's weight gradients are written at g instead of m */
    if ((nm->dst[PLAN_DGAMMA] && touched_between(p, nm->dst[PLAN_DGAMMA], g, m, 0)) ||
        (nm->dst[PLAN_DBETA] && touched_between(p, nm->dst[PLAN_DBETA], g, m, 0)))
        return;
    const int pro_w = s[w].kind == PLAN_FUSE_CONV_FWD ? s[w].fwd : -1;
    if (!caps->conv_fwd_ok(caps->user, nw, pro_w >= 0 ? &p->nodes[pro_w] : NULL, bn) ||
        !caps->conv_fwd_ok(caps->user, &p->nodes[f], bn, NULL) ||
        !caps->conv_bwd_ok(caps->user, ng, bn))
        return;
    s[w].kind = PLAN_FUSE_CONV_FWD;
    s[w].fwd = pro_w;
    s[w].stats = i;
    s[i] = (struct plan_fuse_step){PLAN_FUSE_BN_SUMS, j, -1, -1, 0, 0, w, -1};
    s[f] = (struct plan_fuse_step){PLAN_FUSE_CONV_FWD, -1, -1, i, 0, 0, -1, -1};
    s[g] = (struct plan_fuse_step){PLAN_FUSE_CONV_BWD, k, -1, i, 0, 0, m, -1};
    s[m] = (struct plan_fuse_step){PLAN_FUSE_BN_APPLY, k, -1, i, 0, 0, g, -1};
}

/* The convolution writing the x of fused training batch norm i (one part, its statistics
 * from no add, not inside the convolutions) also sums x for it, so that the batch norm
 * skips its statistics pass, where the rules of plan_fuse.h allow and the engine takes it
 * (caps->conv_fwd_ok, asked with the convolution's prologue if it has one). Nothing is
 * left unwritten. */
static void conv_stats(struct plan_fuse_step *s, const struct plan *p,
                       const struct plan_fuse_caps *caps, int i)
{
    const struct plan_node *bn = &p->nodes[i];
    if (bn->op != PLAN_BN_FWD_TRAIN ||
        (s[i].kind != PLAN_FUSE_BN_TRAIN && s[i].kind != PLAN_FUSE_RUN) ||
        s[i].stats >= 0 || bn->par.bn.splits > 1)
        return;
    const int w = summable_conv_writing(s, p, bn->src[PLAN_X], i);
    if (w < 0) return;
    const struct plan_node *nw = &p->nodes[w];
    const int pro_w = s[w].kind == PLAN_FUSE_CONV_FWD ? s[w].fwd : -1;
    if (!caps->conv_fwd_ok(caps->user, nw, pro_w >= 0 ? &p->nodes[pro_w] : NULL, bn)) return;
    s[w].kind = PLAN_FUSE_CONV_FWD;
    s[w].fwd = pro_w;
    s[w].stats = i;
    s[i].kind = PLAN_FUSE_BN_TRAIN;   /* act -1 when no activation was folded in */
    s[i].stats = w;
}

/* The most convolutions (forward and backward each) a folded activation may have. */
#define FOLD_MAX_CONVS 4

/* Whether ADD_FWD node n (running alone or taking statistics: step s) may recompute its
 * operand t, the activation of the batch norm over x, as it reads it: t is exactly one of
 * its operands, and its output is neither t nor x. */
static int recomputing_add(const struct plan_node *n, const struct plan_fuse_step *s,
                           const struct tensor *t, const struct tensor *x, int writes)
{
    if (n->op != PLAN_ADD_FWD) return 0;
    const int first = plan_fuse_same_tensor(n->src[PLAN_ADD_A], t);
    const int second = plan_fuse_same_tensor(n->src[PLAN_ADD_B], t);
    return !writes && first != second &&
           (s->kind == PLAN_FUSE_RUN || s->kind == PLAN_FUSE_ADD_STATS) && n->dst[PLAN_Y] &&
           !plan_fuse_same_tensor(n->dst[PLAN_Y], t) && !plan_fuse_same_tensor(n->dst[PLAN_Y], x);
}

/* Of the backward convolutions bwds (nb) reading the activation of fused batch norm i
 * (its backward BN_BWD node m), the one whose data gradient is the last value written
 * into the activation's gradient before the ReLU's backward (node s[m].act) reads it, that
 * read being the value's only one, so that the convolution's backward can run the ReLU's
 * mask and the batch norm's weight gradients after its data gradient (PLAN_FUSE_CONV_BWD,
 * adding what its dx holds when it accumulates) and the batch norm's backward only
 * applies the coefficients (PLAN_FUSE_BN_APPLY); nothing between them touches that
 * gradient, the ReLU backward's output or the batch norm's weight gradients, and the
 * engine takes it (caps->conv_bwd_ok). -1 when there is none. */
static int data_bn_conv(const struct plan_fuse_step *s, const struct plan *p,
                        const struct plan_fuse_caps *caps, int i, int m, const int *bwds, int nb)
{
    const int k = s[m].act;
    const struct plan_node *nk = &p->nodes[k], *nm = &p->nodes[m];
    if (!caps->conv_bwd_ok) return -1;
    for (int q = 0; q < nb; q++) {
        const int r = bwds[q];
        const struct plan_node *nr = &p->nodes[r];
        const struct tensor *d = nr->dst[PLAN_DX], *dz = nk->dst[PLAN_DX];
        /* an accumulating r must not be dx's only writer: a replay would then add to the
         * value r itself wrote, which the fused step no longer writes */
        if (!d || !d->data || !(r < k) || !plan_fuse_same_tensor(d, nk->src[PLAN_DY]) ||
            (PLAN_NODE_ACC(nr, PLAN_DX) && count_touching(p, d, 1, r) == 0) ||
            touched_between(p, d, r, k, 0) || value_readers(p, d, r, k) != 0 ||
            touched_between(p, dz, r, k, 0) ||
            (nm->dst[PLAN_DGAMMA] && touched_between(p, nm->dst[PLAN_DGAMMA], r, m, 0)) ||
            (nm->dst[PLAN_DBETA] && touched_between(p, nm->dst[PLAN_DBETA], r, m, 0)))
            continue;
        return caps->conv_bwd_ok(caps->user, nr, &p->nodes[i]) ? r : -1;
    }
    return -1;
}

/* Folds the activation of fused batch norm i into the convolutions that alone read it
 * (their forward's input and their weight gradient's), and the add that may also read it
 * (an identity shortcut's), where the rules of plan_fuse.h allow and the engine takes it
 * (caps->conv_fwd_ok, conv_wgrad_ok, add_recompute). */
static void bn_into_convs(struct plan_fuse_step *s, const struct plan *p,
                          const struct plan_fuse_caps *caps, int i)
{
    const struct plan_node *bn = &p->nodes[i];
    if (!relu_bn_fused(s, p, i) || s[i].pool >= 0) return;
    const int j = s[i].act;
    const int m = fused_backward_of(s, p, i);
    if (m < 0) return;
    /* every reader of the activation's value: a bias-free convolution's forward (not yet
     * reading through a prologue) or backward, or one add recomputing it, between the
     * activation and the backward */
    const struct tensor *out = p->nodes[j].dst[PLAN_Y];
    int fwds[FOLD_MAX_CONVS], bwds[FOLD_MAX_CONVS], nf = 0, nb = 0, add = -1;
    for (int k = 1; k < p->count; k++) {
        const int r = (j + k) % p->count;
        int reads, writes;
        node_touches(&reads, &writes, &p->nodes[r], out);
        if (reads && caps->add_recompute && add < 0 && j < r && r < m &&
            recomputing_add(&p->nodes[r], &s[r], out, bn->src[PLAN_X], writes)) {
            add = r;
            continue;   /* it does not write out */
        }
        if (reads) {
            const int role = conv_role(&p->nodes[r], out, writes);
            if (role < 0 || conv_has_bias(&p->nodes[r]) || !(j < r && r < m)) return;
            if (role == 0) {
                if (nf == FOLD_MAX_CONVS ||
                    !(s[r].kind == PLAN_FUSE_RUN ||
                      (s[r].kind == PLAN_FUSE_CONV_FWD && s[r].fwd < 0)))
                    return;
                fwds[nf++] = r;
            } else {
                if (nb == FOLD_MAX_CONVS || s[r].kind != PLAN_FUSE_RUN) return;
                bwds[nb++] = r;
            }
        }
        if (writes) break;
    }
    if (nf == 0) return;
    for (int q = 0; q < nf; q++) {
        const int st = s[fwds[q]].kind == PLAN_FUSE_CONV_FWD ? s[fwds[q]].stats : -1;
        if (!caps->conv_fwd_ok(caps->user, &p->nodes[fwds[q]], bn,
                               st >= 0 ? &p->nodes[st] : NULL))
            return;
    }
    /* the backward whose data gradient is the last the activation's gradient takes may
     * also run the ReLU's mask and the batch norm's weight gradients (data_bn) */
    const int dbn = data_bn_conv(s, p, caps, i, m, bwds, nb);
    for (int q = 0; q < nb; q++)
        if (bwds[q] != dbn && !caps->conv_wgrad_ok(caps->user, &p->nodes[bwds[q]], bn)) return;
    s[i].kind = PLAN_FUSE_BN_COEF;
    for (int q = 0; q < nf; q++) {
        struct plan_fuse_step *f = &s[fwds[q]];
        if (f->kind == PLAN_FUSE_RUN) f->stats = -1;
        f->kind = PLAN_FUSE_CONV_FWD;
        f->fwd = i;
    }
    for (int q = 0; q < nb; q++)
        s[bwds[q]] = (struct plan_fuse_step){PLAN_FUSE_CONV_BWD_PRO, -1, -1, i, 0, 0, -1, -1};
    if (add >= 0)   /* its statistics, if it takes them, kept */
        s[add] = (struct plan_fuse_step){PLAN_FUSE_ADD_PRO, -1, -1, i, 0, 0, s[add].stats, -1};
    if (dbn >= 0) {   /* the batch norm's backward only applies the coefficients */
        const int k = s[m].act;
        s[dbn] = (struct plan_fuse_step){PLAN_FUSE_CONV_BWD, k, -1, i, 0, 0, m, -1};
        s[m] = (struct plan_fuse_step){PLAN_FUSE_BN_APPLY, k, -1, i, 0, 0, dbn, -1};
    }
}

/* The CONV_FWD node that may take ADD_FWD node q (step s[q]) in as its epilogue, the
 * operand it writes being y (the add's other operand: the BN_COEF activation that
 * s[q].fwd recomputes for an ADD_PRO, else a tensor), as the rules of plan_fuse.h say
 * (the engine not asked); -1 when there is none. */
static int add_conv(const struct plan_fuse_step *s, const struct plan *p, int q,
                    const struct tensor *y)
{
    const struct plan_node *n = &p->nodes[q];
    const struct tensor *z = n->dst[PLAN_Y];
    const struct tensor *r = plan_fuse_add_other(n, y, NULL);
    const int w = writer_before(p, y, q);
    if (w < 0 || !z || !z->data || plan_fuse_same_tensor(z, y) || plan_fuse_same_tensor(r, y))
        return -1;
    const struct plan_node *nw = &p->nodes[w];
    if (nw->op != PLAN_CONV_FWD || !plan_fuse_same_tensor(nw->dst[PLAN_Y], y) ||
        conv_has_bias(nw) || !tensor_same_shape(y, z) ||
        !(s[w].kind == PLAN_FUSE_RUN ||
          (s[w].kind == PLAN_FUSE_CONV_FWD && s[w].stats < 0 && s[w].add < 0)) ||
        plan_fuse_same_tensor(z, nw->src[PLAN_X]) || plan_fuse_same_tensor(z, nw->src[PLAN_W]))
        return -1;
    /* with a prologue the convolution reads that batch norm's x, not its own x */
    if (s[w].kind == PLAN_FUSE_CONV_FWD && s[w].fwd >= 0 &&
        plan_fuse_same_tensor(z, p->nodes[s[w].fwd].src[PLAN_X]))
        return -1;
    /* y's value read by the add alone; z untouched from the convolution to the add */
    if (touched_between(p, y, w, q, 0) || value_readers(p, y, w, q) != 0 ||
        touched_between(p, z, w, q, 0))
        return -1;
    if (s[q].kind == PLAN_FUSE_ADD_PRO) {   /* the other operand recomputed at w */
        const struct plan_node *bn = &p->nodes[s[q].fwd];
        const struct tensor *bx = bn->src[PLAN_X];
        if (!(s[q].fwd < w) || plan_fuse_same_tensor(z, bx) || touched_between(p, bx, w, q, 1))
            return -1;
    } else if (!r || !r->data || !tensor_same_shape(r, z) || plan_fuse_same_tensor(r, z) ||
               touched_between(p, r, w, q, 1)) {
        return -1;
    }
    return w;
}

/* Folds ADD_FWD node q into the convolution writing one of its operands, where the rules
 * of plan_fuse.h allow and the engine takes it (caps->conv_add_ok). */
static void conv_add(struct plan_fuse_step *s, const struct plan *p,
                     const struct plan_fuse_caps *caps, int q)
{
    const struct plan_node *n = &p->nodes[q];
    if (n->op != PLAN_ADD_FWD ||
        !(s[q].kind == PLAN_FUSE_RUN || s[q].kind == PLAN_FUSE_ADD_STATS ||
          s[q].kind == PLAN_FUSE_ADD_PRO))
        return;
    const int st = s[q].kind == PLAN_FUSE_RUN ? -1 : s[q].stats;
    if (st >= 0 && p->nodes[st].par.bn.splits > 1) return;
    const int res_bn = s[q].kind == PLAN_FUSE_ADD_PRO ? s[q].fwd : -1;
    /* the operands the convolution may have written: not the recomputed activation */
    const struct tensor *cand[2] = {n->src[PLAN_ADD_A], n->src[PLAN_ADD_B]};
    if (res_bn >= 0) {
        const struct tensor *act = p->nodes[s[res_bn].act].dst[PLAN_Y];
        cand[0] = plan_fuse_add_other(n, act, NULL);
        cand[1] = NULL;
    }
    for (int c = 0; c < 2; c++) {
        if (!cand[c]) continue;
        const int w = add_conv(s, p, q, cand[c]);
        if (w < 0) continue;
        const int pro = s[w].kind == PLAN_FUSE_CONV_FWD ? s[w].fwd : -1;
        if (!caps->conv_add_ok(caps->user, &p->nodes[w], pro >= 0 ? &p->nodes[pro] : NULL, n,
                               res_bn >= 0 ? &p->nodes[res_bn] : NULL,
                               st >= 0 ? &p->nodes[st] : NULL))
            continue;
        s[w] = (struct plan_fuse_step){PLAN_FUSE_CONV_FWD, res_bn, q, pro, 0, 0, st, -1};
        s[q] = (struct plan_fuse_step){PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1};
        if (st >= 0) s[st].stats = w;   /* its sums now the convolution's */
        return;
    }
}

/* pool_readers' roles: 0 a POOL_FWD reading t as its x, 1 a POOL_BWD reading t as its x
 * alone. */
static int pool_role(const struct plan_node *n, const struct tensor *t, int writes)
{
    if (writes) return -1;
    if (n->op == PLAN_POOL_FWD && plan_fuse_same_tensor(n->src[PLAN_X], t)) return 0;
    if (n->op == PLAN_POOL_BWD && plan_fuse_same_tensor(n->src[PLAN_BWD_X], t) &&
        !plan_fuse_same_tensor(n->src[PLAN_DY], t) && !plan_fuse_same_tensor(n->src[PLAN_BWD_Y], t))
        return 1;
    return -1;
}

/* The readers of the value activation node j writes into t: 1 when they are one POOL_FWD
 * reading t as its x (*f) and at most one POOL_BWD reading t as its x alone (*b, -1 when
 * none), else 0. */
static int pool_readers(const struct plan *p, const struct tensor *t, int j, int *f, int *b)
{
    return value_reader_roles(p, t, j, pool_role, f, b) && *f >= 0;
}

/* Folds the max pool reading the activation of fused batch norm i (forward, and its
 * backward's gradient) into the batch norm's passes where the rules of plan_fuse.h allow
 * and the engine takes it (caps->pool_fold). */
static void bn_pool(struct plan_fuse_step *s, const struct plan *p, int i)
{
    const struct plan_node *bn = &p->nodes[i];
    if ((s[i].kind != PLAN_FUSE_BN_TRAIN && s[i].kind != PLAN_FUSE_BN_EVAL) || s[i].act < 0 ||
        s[i].add >= 0 || s[i].keep_y || s[i].pool >= 0)
        return;
    const int train = bn->op == PLAN_BN_FWD_TRAIN;
    if (train && bn->par.bn.splits > 1) return;
    const struct tensor *x = bn->src[PLAN_X];   /* either kind's input */
    const int j = s[i].act;
    const struct tensor *out = p->nodes[j].dst[PLAN_Y];
    int f, b;
    if (!pool_readers(p, out, j, &f, &b) || f < j || s[f].kind != PLAN_FUSE_RUN) return;
    const struct plan_node *nf = &p->nodes[f];
    const struct tensor *y = nf->dst[PLAN_Y];
    if (!y || !y->data || !plan_pool_tiles(&nf->par.pool, out->h, out->w) ||
        plan_fuse_same_tensor(y, out) || plan_fuse_same_tensor(y, x) ||
        touched_between(p, y, i, f, 0))
        return;
    const int m = fused_backward_of(s, p, i);
    if (b >= 0) {   /* the pool's backward goes into the batch norm's */
        if (m < 0 || s[b].kind != PLAN_FUSE_RUN) return;
        const int k = s[m].act;
        const struct plan_node *nb = &p->nodes[b], *nm = &p->nodes[m];
        const struct tensor *d = nb->dst[PLAN_DX], *g = nb->src[PLAN_DY];
        if (!(f < b && b < k && k < m) || !d || !d->data || PLAN_NODE_ACC(nb, PLAN_DX) ||
            !plan_fuse_same_tensor(nb->src[PLAN_BWD_Y], y) ||
            memcmp(&nb->par.pool, &nf->par.pool, sizeof(nf->par.pool)) != 0 ||
            !plan_fuse_same_tensor(d, p->nodes[k].src[PLAN_DY]) ||
            count_touching(p, d, 1, b) != 0 || count_touching(p, d, 0, k) != 0 || !g ||
            !g->data || !tensor_same_shape(g, y) || touched_between(p, g, b, m, 1) ||
            plan_fuse_same_tensor(nm->dst[PLAN_DX], g))
            return;
        s[b] = (struct plan_fuse_step){PLAN_FUSE_SKIP, -1, -1, i, 0, 0, -1, -1};
        s[m].pool = b;
    }
    s[f] = (struct plan_fuse_step){PLAN_FUSE_SKIP, -1, -1, i, 0, 0, -1, -1};
    s[i].pool = f;
}

void plan_fuse_analyse(struct plan_fuse_step *steps, const struct plan *p,
                       const struct plan_fuse_caps *caps)
{
    struct plan_fuse_step *s = steps;
    for (int i = 0; i < p->count; i++)
        s[i] = (struct plan_fuse_step){PLAN_FUSE_RUN, -1, -1, -1, 0, 0, -1, -1};
    /* backward first: which forward batch norms keep their coefficients */
    for (int k = 0; k < p->count; k++) {
        int fwd, m;
        if (p->nodes[k].op != PLAN_ACT_BWD || s[k].kind != PLAN_FUSE_RUN) continue;
        if ((m = backward_bn(p, k, &fwd)) < 0 || s[m].kind != PLAN_FUSE_RUN) continue;
        s[k].kind = PLAN_FUSE_SKIP;
        s[k].fwd = fwd;
        s[m] = (struct plan_fuse_step){PLAN_FUSE_BN_BWD, k, -1, fwd, 0, 0, -1, -1};
        s[fwd].keeps_coef = 1;
    }
    for (int i = 0; i < p->count; i++) {
        const struct plan_node *n = &p->nodes[i];
        if (n->op != PLAN_BN_FWD_TRAIN && n->op != PLAN_BN_FWD_EVAL) continue;
        const int j = forward_act(p, i);
        if (j < 0 && !s[i].keeps_coef) continue;
        s[i].kind = n->op == PLAN_BN_FWD_TRAIN ? PLAN_FUSE_BN_TRAIN : PLAN_FUSE_BN_EVAL;
        s[i].act = j;
        if (j < 0) continue;
        s[j].kind = PLAN_FUSE_SKIP;
        s[i].add = forward_add(p, i, j);
        if (s[i].add >= 0) s[s[i].add].kind = PLAN_FUSE_SKIP;
    }
    /* an add left to run alone computes the next batch norm's statistics */
    for (int q = 0; q < p->count && caps->add_stats; q++) {
        int i;
        if (p->nodes[q].op != PLAN_ADD_FWD || s[q].kind != PLAN_FUSE_RUN) continue;
        if ((i = stats_bn(p, s, q)) < 0) continue;
        s[q].kind = PLAN_FUSE_ADD_STATS;
        s[q].stats = i;
        s[i].kind = PLAN_FUSE_BN_TRAIN;   /* act -1 when no activation was folded in */
        s[i].stats = q;
    }
    keep_outputs(s, p);
    /* the batch norm inside the convolutions, from the fused batch norms above */
    for (int i = 0; i < p->count && caps->conv_fwd_ok && caps->conv_bwd_ok; i++)
        conv_bn(s, p, caps, i);
    /* the statistics of the training batch norms left in the convolutions writing their x */
    for (int i = 0; i < p->count && caps->conv_fwd_ok; i++) conv_stats(s, p, caps, i);
    /* the activations only convolutions read, inside them */
    for (int i = 0; i < p->count && caps->conv_fwd_ok && caps->conv_wgrad_ok; i++)
        bn_into_convs(s, p, caps, i);
    /* the adds inside the convolutions writing their operands */
    for (int q = 0; q < p->count && caps->conv_add_ok; q++) conv_add(s, p, caps, q);
    /* the max pool after a fused batch norm's activation, from the steps left */
    for (int i = 0; i < p->count && caps->pool_fold; i++) bn_pool(s, p, i);
}

const struct tensor *plan_fuse_add_other(const struct plan_node *add, const struct tensor *t,
                                         int *t_second)
{
    if (t_second) *t_second = plan_fuse_same_tensor(add->src[PLAN_ADD_B], t);
    return plan_fuse_same_tensor(add->src[PLAN_ADD_A], t) ? add->src[PLAN_ADD_B]
                                                          : add->src[PLAN_ADD_A];
}

const char *plan_fuse_kind_name(enum plan_fuse_kind kind)
{
    static const char *const names[] = {"run",      "skip",      "bn_train", "bn_eval",
                                        "bn_bwd",   "add_stats", "conv_fwd", "conv_bwd",
                                        "bn_sums",  "bn_apply",  "bn_coef",  "conv_bwd_pro",
                                        "add_pro"};
    _Static_assert(sizeof(names) / sizeof(names[0]) == PLAN_FUSE_KIND_COUNT,
                   "a name for every plan_fuse_kind");
    return (unsigned)kind < PLAN_FUSE_KIND_COUNT ? names[kind] : "?";
}

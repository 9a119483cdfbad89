/* The builder's rules for the batch norm inside the convolutions (model_fuse.h), run over a
 * whole plan after each batch norm's own node is decided (model_fuse.c). Each rule reads
 * the graph (which layers read a layer's output, the backward's accumulate flags and
 * gradient handles), builds the nodes it would emit and asks the engine whether it runs
 * each (backend_ops.supports; for a convolution's node the CUDA engine builds and tries
 * cuDNN's fused graph), keeping the change only when the engine runs them all, and
 * leaving the layers as they were otherwise. In order, each over the layers in graph
 * order:
 *   1. sums and apply: a training batch norm of one part with a ReLU and its backward
 *      fused, its output read by nothing else, no add before or after it, no pool, whose x
 *      a bias-free convolution writes (summing for no other batch norm yet) and whose
 *      activation one bias-free convolution alone reads: the first convolution sums x for
 *      it; the batch norm turns the sums into its statistics and its apply's vectors
 *      (FUSE_VEC_SUMS); the second convolution reads the activation through the apply
 *      and ReLU, and its backward computes the ReLU's mask, the batch norm's weight
 *      gradients and its input gradient's coefficients after the data gradient; the
 *      batch norm's backward only applies them. Neither the batch norm's output nor the
 *      activation's, nor their gradients, are written;
 *   2. sums: a training batch norm of one part with a fused node, its statistics from no
 *      add, whose x a bias-free convolution writes that sums for no batch norm yet: the
 *      convolution sums x for it, and it skips its own statistics pass;
 *   3. prologue: a batch norm as in 1 (its statistics from anywhere) whose activation up
 *      to FUSE_MAX_CONVS bias-free convolutions read, none through a prologue yet, and at
 *      most one add (as one operand; run alone or before a batch norm, recomputing
 *      nothing yet): the batch norm writes its statistics, kept coefficients and apply's
 *      vectors only (FUSE_VEC_COEF); each convolution reads the activation through the
 *      apply, forward and weight gradient; the add recomputes it from the batch norm's x.
 *      The convolution that writes the activation's gradient last (the lowest-numbered
 *      reader, when it is a convolution and no other backward touches that gradient
 *      before the activation's) may also take the batch norm's backward as in 1;
 *   4. add: an add run alone or before a batch norm of one part, one of whose operands a
 *      bias-free convolution writes (summing nothing, no add after it yet) that only the
 *      add reads, the other operand (or the recomputed activation's x) not written in
 *      between and, when recomputed, that batch norm before the convolution: the
 *      convolution adds the other operand (recomputing it as the add did) and writes the
 *      sum as the add's output, summing it for the batch norm after the add.
 * The max pools are folded with the batch norms' own nodes: no rule here applies to an
 * activation a pool reads. */
#include "model_fuse.h"

#include "layer_types.h"

/* The most convolutions reading an activation through the batch norm's apply. */
#define FUSE_MAX_CONVS 4
/* The most layers one rule changes: the batch norm, its convolutions, the add and the
 * batch norm taking it. */
#define FUSE_MAX_SAVE (FUSE_MAX_CONVS + 4)

static enum layer_kind kind_of(const struct model *m, int u)
{
    return layer_type_kind(m->g->layers[u].spec.type);
}

/* Whether layer w is a live convolution (a whitening one too) without a bias. */
static int bias_free_conv(const struct model *m, int w)
{
    if (w <= 0 || !m->live[w]) return 0;
    const struct layer *l = &m->g->layers[w];
    const enum layer_kind k = kind_of(m, w);
    return (k == LAYER_KIND_CONV || k == LAYER_KIND_WHITEN) && !model_layer_bias(l, m->p);
}

/* Whether convolution layer w may sum its output for a batch norm: bias-free, summing
 * nothing and taking no add yet. */
static int summable(const struct model_fuse_layer *f, const struct model *m, int w)
{
    return bias_free_conv(m, w) && f[w].sums < 0 && f[w].conv_add < 0;
}

/* Whether batch-norm layer i's node is a training one with a ReLU and its backward fused,
 * one part, no add after it, no pool, its output not kept, no vectors yet: where the
 * batch norm inside the convolutions starts from. A ReLU only: cuDNN's graphs apply it as
 * their RELU_FWD / RELU_BWD pointwise modes. */
static int relu_bn(const struct model_fuse_layer *f, const struct model *m, int i)
{
    const struct model_fuse_layer *fi = &f[i];
    return fi->act >= 0 && fi->bwd && fi->add < 0 && fi->pool < 0 && !fi->keep_y &&
           !fi->vec && m->g->layers[i].spec.splits <= 1 &&
           layer_info(m->g->layers[fi->act].spec.type)->act == ACT_RELU;
}

/* The batch-norm layer taking add layer q before it (model_fuse_layer.add_in), or -1. */
static int add_taker(const struct model_fuse_layer *f, const struct model *m, int q)
{
    for (int i = q + 1; i < m->g->count; i++)
        if (kind_of(m, i) == LAYER_KIND_BN && f[i].add_in == q) return i;
    return -1;
}

/* The layers whose values one rule changes, kept to restore them when the engine does not
 * run a node the rule would emit. */
struct saved {
    int n;
    int layer[FUSE_MAX_SAVE];
    struct model_fuse_layer was[FUSE_MAX_SAVE];
};

static void save(struct saved *s, const struct model_fuse_layer *f, int u)
{
    for (int k = 0; k < s->n; k++)
        if (s->layer[k] == u) return;
    if (s->n == FUSE_MAX_SAVE) return;   /* never: the rules change fewer */
    s->layer[s->n] = u;
    s->was[s->n++] = f[u];
}

static void restore(const struct saved *s, struct model_fuse_layer *f)
{
    for (int k = s->n - 1; k >= 0; k--) f[s->layer[k]] = s->was[k];
}

/* Whether the engine runs the node f gives layer u: a batch norm's forward (train) or
 * backward (bwd), a convolution's forward or backward, an add's forward. */
static int bn_runs(const struct model_fuse_layer *f, const struct model *m,
                   const struct model_fuse_handles *h, int i, int bwd)
{
    struct plan_node n;
    if (bwd) model_fuse_bwd_node(&n, m, h, f, i);
    else model_fuse_fwd_node(&n, m, h, f, i, 1);
    return model_fuse_runs(m, &n);
}

static int conv_runs(const struct model_fuse_layer *f, const struct model *m,
                     const struct model_fuse_handles *h, int w, int bwd)
{
    struct plan_node n;
    if (bwd) model_fuse_conv_bwd_node(&n, m, h, f, w);
    else model_fuse_conv_fwd_node(&n, m, h, f, w);
    return model_fuse_runs(m, &n);
}

static int add_runs(const struct model_fuse_layer *f, const struct model *m,
                    const struct model_fuse_handles *h, int q)
{
    struct plan_node n;
    model_fuse_add_node(&n, m, h, f, q);
    return model_fuse_runs(m, &n);
}

/* Rule 1 for batch-norm layer i. */
static void rule_sums_apply(struct model_fuse_layer *f, const struct model *m,
                            const struct model_fuse_handles *h, int i)
{
    struct saved s = {0};
    int rd[1] = {-1};
    if (!relu_bn(f, m, i) || f[i].add_in >= 0 || f[i].sums >= 0) return;
    const int j = f[i].act, w = m->g->layers[i].inputs[0];
    if (!summable(f, m, w) || model_fuse_reader_list(rd, 1, m, j, -1) != 1) return;
    const int c = rd[0];
    /* its dx, the activation's gradient, written by it alone */
    if (!bias_free_conv(m, c) || m->g->layers[c].inputs[0] != j || f[c].pro >= 0 ||
        m->accum[c * GRAPH_MAX_INPUTS])
        return;
    save(&s, f, w);
    save(&s, f, i);
    save(&s, f, c);
    f[w].sums = i;
    f[i].sums = w;
    f[i].vec = FUSE_VEC_SUMS;
    f[i].dbn = 1;
    f[c].pro = i;
    f[c].dbn = 1;
    if (conv_runs(f, m, h, w, 0) && conv_runs(f, m, h, c, 0) && conv_runs(f, m, h, c, 1) &&
        bn_runs(f, m, h, i, 0) && bn_runs(f, m, h, i, 1))
        return;
    restore(&s, f);
}

/* Rule 2 for batch-norm layer i (training). */
static void rule_sums(struct model_fuse_layer *f, const struct model *m,
                      const struct model_fuse_handles *h, int i)
{
    struct saved s = {0};
    if (f[i].act < 0 || f[i].sums >= 0 || f[i].add_in >= 0 || m->g->layers[i].spec.splits > 1)
        return;
    const int w = m->g->layers[i].inputs[0];
    if (!summable(f, m, w)) return;
    save(&s, f, w);
    save(&s, f, i);
    f[w].sums = i;
    f[i].sums = w;
    if (conv_runs(f, m, h, w, 0) && bn_runs(f, m, h, i, 0)) return;
    restore(&s, f);
}

/* Whether add layer q may recompute its operand j as it reads it: q reads j as exactly one
 * operand, and runs alone or before a batch norm (not after another's activation, not in
 * a convolution), recomputing nothing yet. */
static int recomputing_add(const struct model_fuse_layer *f, const struct model *m, int q,
                           int j)
{
    const struct layer *l = &m->g->layers[q];
    if (kind_of(m, q) != LAYER_KIND_ADD || l->n_inputs != 2 ||
        (l->inputs[0] == j) == (l->inputs[1] == j) || f[q].pro >= 0)
        return 0;
    if (!f[q].in_fwd) return 1;
    const int st = add_taker(f, m, q);
    return st >= 0 && f[st].pro < 0;
}

/* Whether no backward node of the layers strictly between lo and hi touches the gradient
 * handle d (their own gradient, read, or their inputs', written). */
static int grad_untouched(const struct model *m, const struct model_fuse_handles *h,
                          const struct tensor *d, int lo, int hi)
{
    for (int v = lo + 1; v < hi; v++) {
        if (!m->live[v]) continue;
        if (h->dy[v] == d) return 0;
        for (int s = 0; s < m->g->layers[v].n_inputs; s++)
            if (h->dy[m->g->layers[v].inputs[s]] == d) return 0;
    }
    return 1;
}

/* Rule 3 for batch-norm layer i. */
static void rule_prologue(struct model_fuse_layer *f, const struct model *m,
                          const struct model_fuse_handles *h, int i)
{
    struct saved s = {0};
    int rd[FUSE_MAX_CONVS + 1] = {-1}, convs[FUSE_MAX_CONVS], nc = 0, add = -1, st = -1;
    if (!relu_bn(f, m, i)) return;
    const int j = f[i].act;
    const int nr = model_fuse_reader_list(rd, FUSE_MAX_CONVS + 1, m, j, -1);
    if (j == m->g->output || nr <= 0 || nr > FUSE_MAX_CONVS + 1) return;
    for (int k = 0; k < nr; k++) {
        const int r = rd[k];
        if (add < 0 && recomputing_add(f, m, r, j)) {
            add = r;
            continue;
        }
        if (nc == FUSE_MAX_CONVS || !bias_free_conv(m, r) || m->g->layers[r].inputs[0] != j ||
            f[r].pro >= 0 || f[r].conv_add >= 0)
            return;
        convs[nc++] = r;
    }
    if (nc == 0) return;
    save(&s, f, i);
    f[i].vec = FUSE_VEC_COEF;
    for (int k = 0; k < nc; k++) {
        save(&s, f, convs[k]);
        f[convs[k]].pro = i;
    }
    if (add >= 0) {   /* the add's own node, or that of the batch norm taking it */
        st = f[add].in_fwd ? add_taker(f, m, add) : -1;
        save(&s, f, st >= 0 ? st : add);
        f[st >= 0 ? st : add].pro = i;
    }
    for (int k = 0; k < nc; k++)
        if (!conv_runs(f, m, h, convs[k], 0)) goto refused;
    /* the convolution writing the activation's gradient last, read by the activation's
     * backward alone: it may take the batch norm's backward (an accumulating one only
     * when another writes the gradient first) */
    const int low = rd[0];
    if (low != add && grad_untouched(m, h, h->dy[j], j, low) &&
        !(m->accum[low * GRAPH_MAX_INPUTS] && nr == 1)) {
        f[low].dbn = 1;
        f[i].dbn = 1;
        if (!conv_runs(f, m, h, low, 1) || !bn_runs(f, m, h, i, 1)) {
            f[low].dbn = 0;
            f[i].dbn = 0;
        }
    }
    for (int k = 0; k < nc; k++)
        if (!f[convs[k]].dbn && !conv_runs(f, m, h, convs[k], 1)) goto refused;
    if (!bn_runs(f, m, h, i, 0) || (!f[i].dbn && !bn_runs(f, m, h, i, 1))) goto refused;
    if (add >= 0 && !(st >= 0 ? bn_runs(f, m, h, st, 0) : add_runs(f, m, h, add)))
        goto refused;
    return;
refused:
    restore(&s, f);
}

/* The layer writing the value layer u's handle holds: u itself, or the layer an identity
 * layer's handle is (model_plan.c's forward aliases). */
static int writer_of(const struct model *m, const struct model_fuse_handles *h, int u)
{
    while (u > 0 && m->g->layers[u].n_inputs == 1 && h->y[u] == h->y[m->g->layers[u].inputs[0]])
        u = m->g->layers[u].inputs[0];
    return u;
}

/* Whether convolution layer w, writing operand u of add layer q (w == u), may take the add
 * in, the other operand being layer `other` (or, recomputed, the activation of batch norm
 * res_bn >= 0). */
static int add_conv(const struct model_fuse_layer *f, const struct model *m,
                    const struct model_fuse_handles *h, int q, int w, int other, int res_bn)
{
    if (!summable(f, m, w) || model_fuse_readers(m, w, q) != 0) return 0;
    if (res_bn >= 0) {   /* that batch norm before the convolution, its x not written since */
        const int bx = writer_of(m, h, m->g->layers[res_bn].inputs[0]);
        return res_bn < w && !(bx > w && bx < q);
    }
    const int wr = writer_of(m, h, other);
    return !(wr > w && wr < q);
}

/* Rule 4 for add layer q. */
static void rule_conv_add(struct model_fuse_layer *f, const struct model *m,
                          const struct model_fuse_handles *h, int q)
{
    const struct layer *l = &m->g->layers[q];
    int st = -1;
    if (!m->live[q] || kind_of(m, q) != LAYER_KIND_ADD || l->n_inputs != 2 ||
        l->inputs[0] == l->inputs[1])
        return;
    if (f[q].in_fwd && (st = add_taker(f, m, q)) < 0) return;   /* after an activation */
    if (st >= 0 && m->g->layers[st].spec.splits > 1) return;
    const int res_bn = st >= 0 ? f[st].pro : f[q].pro;
    const int act = res_bn >= 0 ? f[res_bn].act : -1;
    for (int k = 0; k < 2; k++) {
        struct saved s = {0};
        const int w = l->inputs[k], other = l->inputs[1 - k];
        if (w == act || !add_conv(f, m, h, q, w, other, res_bn)) continue;
        save(&s, f, q);
        save(&s, f, w);
        f[w].conv_add = q;
        f[w].res_bn = res_bn;
        f[q].pro = -1;
        f[q].in_fwd = 1;
        if (st >= 0) {   /* the batch norm's statistics from the convolution's sums */
            save(&s, f, st);
            f[w].sums = st;
            f[st].sums = w;
            f[st].add_in = -1;
            f[st].pro = -1;
        }
        if (conv_runs(f, m, h, w, 0) && (st < 0 || bn_runs(f, m, h, st, 0))) return;
        restore(&s, f);
    }
}

void model_fuse_convs(struct model_fuse_layer *f, const struct model *m,
                      const struct model_fuse_handles *h, int train, int with_bwd)
{
    const struct graph *g = m->g;
    for (int i = 1; i < g->count && train && with_bwd; i++)
        if (m->live[i] && kind_of(m, i) == LAYER_KIND_BN) rule_sums_apply(f, m, h, i);
    for (int i = 1; i < g->count && train; i++)
        if (m->live[i] && kind_of(m, i) == LAYER_KIND_BN) rule_sums(f, m, h, i);
    for (int i = 1; i < g->count && train && with_bwd; i++)
        if (m->live[i] && kind_of(m, i) == LAYER_KIND_BN) rule_prologue(f, m, h, i);
    for (int q = 1; q < g->count; q++) rule_conv_add(f, m, h, q);
}

int model_fuse_conv_fwd(const struct model_fuse_layer *f, const struct model *m, int w)
{
    const enum layer_kind k = kind_of(m, w);
    return (k == LAYER_KIND_CONV || k == LAYER_KIND_WHITEN) &&
           (f[w].pro >= 0 || f[w].sums >= 0 || f[w].conv_add >= 0);
}

int model_fuse_add_fwd(const struct model_fuse_layer *f, const struct model *m, int q)
{
    return kind_of(m, q) == LAYER_KIND_ADD && f[q].pro >= 0 && !f[q].in_fwd;
}

void model_fuse_conv_fwd_node(struct plan_node *n, const struct model *m,
                              const struct model_fuse_handles *h,
                              const struct model_fuse_layer *f, int w)
{
    const struct layer *l = &m->g->layers[w];
    const struct model_fuse_layer *fw = &f[w];
    const struct tensor *pro_x = NULL, *pro_vec = NULL, *res = NULL, *res_x = NULL;
    const struct tensor *res_vec = NULL;
    struct tensor *out = NULL, *sums = fw->sums >= 0 ? &m->bn_vec[fw->sums] : NULL;
    if (fw->pro >= 0) {
        pro_x = h->y[m->g->layers[fw->pro].inputs[0]];
        pro_vec = &m->bn_vec[fw->pro];
    }
    if (fw->conv_add >= 0) {
        const struct layer *q = &m->g->layers[fw->conv_add];
        out = h->y[fw->conv_add];
        res = h->y[q->inputs[0] == w ? q->inputs[1] : q->inputs[0]];
        if (fw->res_bn >= 0) {
            res_x = h->y[m->g->layers[fw->res_bn].inputs[0]];
            res_vec = &m->bn_vec[fw->res_bn];
        }
    }
    plan_node_init(n, PLAN_CONV_FUSED_FWD);
    n->phase = PLAN_PHASE_FORWARD;
    n->layer = w;
    plan_node_set_tensors(n, PLAN_DSTS(h->y[w], out, sums),
                          PLAN_SRCS(h->y[l->inputs[0]], &m->p[l->param_first], pro_x, pro_vec,
                                    res, res_x, res_vec));
    n->par.conv = model_layer_conv_attr(l);
}

void model_fuse_conv_bwd_node(struct plan_node *n, const struct model *m,
                              const struct model_fuse_handles *h,
                              const struct model_fuse_layer *f, int w)
{
    const struct layer *l = &m->g->layers[w];
    const int b = f[w].pro, u = l->inputs[0], dbn = f[w].dbn;
    const struct layer *lb = &m->g->layers[b];
    struct tensor *gamma = &m->p[lb->param_first], *dgamma = &m->dp[lb->param_first];
    plan_node_init(n, PLAN_CONV_FUSED_BWD);
    n->phase = PLAN_PHASE_BACKWARD;
    n->layer = w;
    plan_node_set_tensors(n,
                          PLAN_DSTS(u == 0 ? NULL : h->dy[u], &m->dp[l->param_first],
                                    dbn ? h->dy[b] : NULL, dbn ? dgamma : NULL,
                                    dbn ? dgamma + 1 : NULL, dbn ? &m->bn_vec[b] : NULL),
                          PLAN_SRCS(h->dy[w], h->y[u], &m->p[l->param_first],
                                    h->y[lb->inputs[0]], &m->bn_vec[b], dbn ? h->y[b] : NULL,
                                    dbn ? &m->bn_mean[b] : NULL, dbn ? &m->bn_invstd[b] : NULL,
                                    dbn ? gamma : NULL, dbn ? gamma + 1 : NULL));
    n->par.conv = model_layer_conv_attr(l);
    n->acc = m->accum[w * GRAPH_MAX_INPUTS] != 0;
}

void model_fuse_add_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *f,
                         int q)
{
    const struct layer *l = &m->g->layers[q];
    const int b = f[q].pro, act = f[b].act;
    const int other = l->inputs[0] == act ? l->inputs[1] : l->inputs[0];
    plan_node_init(n, PLAN_ADD_PRO);
    n->phase = PLAN_PHASE_FORWARD;
    n->layer = q;
    plan_node_set_tensors(n, PLAN_DSTS(h->y[q]),
                          PLAN_SRCS(h->y[act], h->y[other], h->y[m->g->layers[b].inputs[0]],
                                    &m->bn_coef[b]));
}

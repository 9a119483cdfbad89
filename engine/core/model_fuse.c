/* The builder's fusion rules (model_fuse.h). A batch norm i fuses with the layer after it
 * when that layer is an activation reading i alone; the fused node stands at i's place,
 * and nothing runs between the two. With a whole plan:
 *   - the add after the activation is taken too when the activation's output has no
 *     other reader and the add's other operand was computed before i (a residual); the
 *     activation's output is then never written;
 *   - in training, the activation's backward goes into the batch norm's when i's output
 *     has no other reader (so that its gradient is the activation's alone, written once,
 *     not added to): the forward keeps its coefficients for the backward (the model's
 *     bn_coef), which recomputes the batch norm's output from x, so that output is
 *     written only when another layer reads it (keep_y).
 * The backward runs in reverse graph order, so nothing runs between the activation's
 * backward and the batch norm's either; x, gamma, beta and the saved statistics change
 * only in the forward node and the optimiser. */
#include "model_fuse.h"

#include <string.h>

#include "layer_types.h"

/* The next live layer after i, or -1. */
static int next_live(const struct model *m, int i)
{
    for (int j = i + 1; j < m->g->count; j++)
        if (m->live[j]) return j;
    return -1;
}

/* The live layers other than `except` reading layer u's output (the plan's output counts
 * as a reader). */
static int readers(const struct model *m, int u, int except)
{
    const struct graph *g = m->g;
    int count = u == g->output;
    for (int j = u + 1; j < g->count; j++) {
        if (!m->live[j] || j == except) continue;
        for (int s = 0; s < g->layers[j].n_inputs; s++)
            if (g->layers[j].inputs[s] == u) {
                count++;
                break;
            }
    }
    return count;
}

/* Fused node n's batch-norm and activation parameters, from batch-norm layer bn and
 * activation layer act. */
static void bn_act_params(struct plan_node *n, const struct layer *bn, const struct layer *act)
{
    n->par.bn_act.bn = (struct bn_attr){bn->spec.eps, bn->spec.momentum, bn->spec.splits};
    n->par.bn_act.kind = layer_info(act->spec.type)->act;
    n->par.bn_act.alpha = act->spec.alpha;
}

void model_fuse_fwd_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *f,
                         int i, int train)
{
    const struct layer *l = &m->g->layers[i], *a = &m->g->layers[f->act];
    const struct tensor *x = h->y[l->inputs[0]];
    struct tensor *w = &m->p[l->param_first];
    struct tensor *out = NULL;
    const struct tensor *res = NULL;
    int res_first = 0;
    if (f->add >= 0) {
        const struct layer *q = &m->g->layers[f->add];
        res_first = q->inputs[1] == f->act;
        res = h->y[q->inputs[res_first ? 0 : 1]];
        out = h->y[f->add];
    }
    plan_node_init(n, train ? PLAN_BN_ACT_TRAIN : PLAN_BN_ACT_EVAL);
    n->phase = PLAN_PHASE_FORWARD;
    n->layer = i;
    if (train)
        plan_node_set_tensors(n,
                              PLAN_DSTS(h->y[i], &m->bn_mean[i], &m->bn_invstd[i],
                                        &m->bn_rmean[i], &m->bn_rvar[i], h->y[f->act], out,
                                        f->bwd ? &m->bn_coef[i] : NULL),
                              PLAN_SRCS(x, &w[0], &w[1], res));
    else
        plan_node_set_tensors(n, PLAN_DSTS(h->y[i], NULL, NULL, NULL, NULL, h->y[f->act], out,
                                           NULL),
                              PLAN_SRCS(x, &w[0], &w[1], res, &m->bn_rmean[i], &m->bn_rvar[i]));
    bn_act_params(n, l, a);
    n->par.bn_act.keep_y = f->keep_y;
    n->par.bn_act.res_first = res_first;
}

void model_fuse_bwd_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *f,
                         int i)
{
    const struct layer *l = &m->g->layers[i], *a = &m->g->layers[f->act];
    const int u = l->inputs[0];
    plan_node_init(n, PLAN_BN_ACT_BWD);
    n->phase = PLAN_PHASE_BACKWARD;
    n->layer = i;
    plan_node_set_tensors(n,
                          PLAN_DSTS(u == 0 ? NULL : h->dy[u], &m->dp[l->param_first],
                                    &m->dp[l->param_first + 1], h->dy[i]),
                          PLAN_SRCS(h->dy[f->act], h->y[u], &m->p[l->param_first],
                                    &m->bn_mean[i], &m->bn_invstd[i], h->y[i], &m->bn_coef[i]));
    n->acc = m->accum[i * GRAPH_MAX_INPUTS] != 0;
    bn_act_params(n, l, a);
}

/* Whether the engine runs the node (plan_run_node checks it against its rule). */
static int runs(const struct model *m, const struct plan_node *n)
{
    return m->be->ops->supports(m->be->ctx, n);
}

/* The add layer that may follow activation layer j of batch norm i, or -1. */
static int residual_add(const struct model *m, int i, int j)
{
    const int k = next_live(m, j);
    if (k < 0 || readers(m, j, k) != 0) return -1;
    const struct layer *q = &m->g->layers[k];
    if (layer_type_kind(q->spec.type) != LAYER_KIND_ADD ||
        (q->inputs[0] == j) == (q->inputs[1] == j))
        return -1;
    const int r = q->inputs[0] == j ? q->inputs[1] : q->inputs[0];
    return r < i ? k : -1;
}

/* Decides batch-norm layer i's fused nodes into f. */
static void decide_bn(struct model_fuse_layer *f, const struct model *m,
                      const struct model_fuse_handles *h, int i, int train, int whole,
                      int with_bwd)
{
    struct model_fuse_layer *fi = &f[i];
    struct plan_node n;
    const struct graph *g = m->g;
    const int j = next_live(m, i);
    if (j < 0 || i == g->output || layer_type_kind(g->layers[j].spec.type) != LAYER_KIND_ACT ||
        g->layers[j].inputs[0] != i)
        return;
    const int others = readers(m, i, j);
    fi->act = j;
    fi->add = whole ? residual_add(m, i, j) : -1;
    fi->bwd = train && whole && with_bwd && others == 0 && !m->accum[j * GRAPH_MAX_INPUTS];
    if (fi->bwd) {
        model_fuse_bwd_node(&n, m, h, fi, i);
        fi->bwd = (unsigned char)runs(m, &n);
    }
    fi->keep_y = !whole || others > 0 || (train && with_bwd && !fi->bwd);
    model_fuse_fwd_node(&n, m, h, fi, i, train);
    if (!runs(m, &n) && fi->add >= 0) {   /* perhaps without the add */
        fi->add = -1;
        model_fuse_fwd_node(&n, m, h, fi, i, train);
    }
    if (!runs(m, &n)) {
        *fi = (struct model_fuse_layer){-1, -1, 0, 0, 0, 0};
        return;
    }
    f[j].in_fwd = 1;
    f[j].in_bwd = fi->bwd;
    if (fi->add >= 0) f[fi->add].in_fwd = 1;
}

void model_fuse_decide(struct model_fuse_layer *f, const struct model *m,
                       const struct model_fuse_handles *h, int train, int whole, int with_bwd)
{
    const struct graph *g = m->g;
    for (int i = 0; i < g->count; i++) f[i] = (struct model_fuse_layer){-1, -1, 0, 0, 0, 0};
    for (int i = 1; i < g->count; i++)
        if (m->live[i] && !f[i].in_fwd && layer_type_kind(g->layers[i].spec.type) == LAYER_KIND_BN)
            decide_bn(f, m, h, i, train, whole, with_bwd);
}

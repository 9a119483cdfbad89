/* The builder's fusion rules (model_fuse.h). A batch norm i fuses with the layer after it
 * when that layer is an activation reading i alone; the fused node stands at i's place,
 * and nothing runs between the two. With a whole plan:
 *   - the add after the activation is taken too when the activation's output has no
 *     other reader and the add's other operand was computed before i (a residual); the
 *     activation's output is then never written;
 *   - or the max pool after the activation (a global one too), when the pool alone reads
 *     the activation's output and its windows tile the plane (stride the window): the
 *     activation's output is then never written, so in training the pool's backward and
 *     the activation's go into the batch norm's (below), which finds each window's
 *     maximum again from x;
 *   - in training, the activation's backward goes into the batch norm's when i's output
 *     has no other reader (so that its gradient is the activation's alone, written once,
 *     not added to): the forward keeps its coefficients for the backward (the model's
 *     bn_coef), which recomputes the batch norm's output from x, so that output is
 *     written only when another layer reads it (keep_y).
 * In training, also in a part of a step: the add whose output is i's x, run just before
 * i, goes into i's node first (an engine may take the statistics as it adds); its output
 * is still written.
 * The backward runs in reverse graph order, so nothing runs between the pool's, the
 * activation's and the batch norm's backward either; x, gamma, beta and the saved
 * statistics change only in the forward node and the optimiser. Each candidate node is
 * put to the engine, the most fused first; the first it runs is taken. */
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

/* The previous live layer before i, or -1 (0, the input, counts as live). */
static int prev_live(const struct model *m, int i)
{
    for (int j = i - 1; j >= 0; j--)
        if (j == 0 || m->live[j]) return j;
    return -1;
}

int model_fuse_reader_list(int *list, int max, const struct model *m, int u, int except)
{
    const struct graph *g = m->g;
    int layers = 0;
    for (int j = u + 1; j < g->count; j++) {
        if (!m->live[j] || j == except) continue;
        for (int s = 0; s < g->layers[j].n_inputs; s++)
            if (g->layers[j].inputs[s] == u) {
                if (layers < max) list[layers] = j;
                layers++;
                break;
            }
    }
    return layers + (u == g->output);
}

int model_fuse_readers(const struct model *m, int u, int except)
{
    return model_fuse_reader_list(NULL, 0, m, u, except);
}

struct tensor *model_layer_bias(const struct layer *l, struct tensor *set)
{
    return (l->spec.bias && l->param_count > 1) ? &set[l->param_first + 1] : NULL;
}

struct conv_attr model_layer_conv_attr(const struct layer *l)
{
    return (struct conv_attr){l->spec.k, l->spec.stride, l->spec.pad};
}

struct pool_attr model_layer_pool_attr(const struct layer *l, const struct layer_info *info)
{
    if (info->kind == LAYER_KIND_POOL)
        return (struct pool_attr){info->pool, l->spec.k, l->spec.k, l->spec.stride,
                                  l->spec.stride};
    return (struct pool_attr){info->pool, l->in_h, l->in_w, l->in_h, l->in_w};
}

/* Fused node n's batch-norm, activation and pool parameters, from batch-norm layer i as f
 * decided it. */
static void bn_act_params(struct plan_node *n, const struct model *m,
                          const struct model_fuse_layer *f, int i)
{
    const struct layer *bn = &m->g->layers[i], *act = &m->g->layers[f->act];
    n->par.bn_act.bn = (struct bn_attr){bn->spec.eps, bn->spec.momentum, bn->spec.splits};
    n->par.bn_act.kind = layer_info(act->spec.type)->act;
    n->par.bn_act.alpha = act->spec.alpha;
    if (f->pool >= 0) {
        const struct layer *q = &m->g->layers[f->pool];
        n->par.bn_act.pool = model_layer_pool_attr(q, layer_info(q->spec.type));
    }
}

void model_fuse_fwd_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *fs,
                         int i, int train)
{
    const struct model_fuse_layer *f = &fs[i];
    const struct layer *l = &m->g->layers[i];
    const struct tensor *x = h->y[l->inputs[0]];
    struct tensor *w = &m->p[l->param_first];
    struct tensor *out = NULL, *sum = NULL;
    const struct tensor *res = NULL, *add_a = NULL, *add_b = NULL;
    int res_first = 0;
    if (f->add >= 0) {
        const struct layer *q = &m->g->layers[f->add];
        res_first = q->inputs[1] == f->act;
        res = h->y[q->inputs[res_first ? 0 : 1]];
        out = h->y[f->add];
    } else if (f->pool >= 0) {
        out = h->y[f->pool];
    }
    const struct tensor *pro_x = NULL, *pro_coef = NULL;
    if (f->add_in >= 0) {
        const struct layer *q = &m->g->layers[f->add_in];
        sum = h->y[f->add_in];
        add_a = h->y[q->inputs[0]];
        add_b = h->y[q->inputs[1]];
        if (f->pro >= 0) {   /* the first operand the recomputed activation */
            const int act = fs[f->pro].act;
            add_b = h->y[q->inputs[0] == act ? q->inputs[1] : q->inputs[0]];
            add_a = h->y[act];
            pro_x = h->y[m->g->layers[f->pro].inputs[0]];
            pro_coef = &m->bn_coef[f->pro];
        }
    }
    /* kept coefficients: for the fused backward, and for the apply's vectors unless they
     * come from the convolution's sums */
    struct tensor *coef = f->bwd && f->vec != FUSE_VEC_SUMS ? &m->bn_coef[i] : NULL;
    struct tensor *vec = f->vec ? &m->bn_vec[i] : NULL;
    const struct tensor *vec_in = f->sums >= 0 ? &m->bn_vec[i] : NULL;
    plan_node_init(n, train ? PLAN_BN_ACT_TRAIN : PLAN_BN_ACT_EVAL);
    n->phase = PLAN_PHASE_FORWARD;
    n->layer = i;
    if (train)
        plan_node_set_tensors(n,
                              PLAN_DSTS(h->y[i], &m->bn_mean[i], &m->bn_invstd[i],
                                        &m->bn_rmean[i], &m->bn_rvar[i], h->y[f->act], out,
                                        coef, sum, vec),
                              PLAN_SRCS(x, &w[0], &w[1], res, NULL, NULL, add_a, add_b, vec_in,
                                        pro_x, pro_coef));
    else
        plan_node_set_tensors(n, PLAN_DSTS(h->y[i], NULL, NULL, NULL, NULL, h->y[f->act], out,
                                           NULL, NULL),
                              PLAN_SRCS(x, &w[0], &w[1], res, &m->bn_rmean[i], &m->bn_rvar[i],
                                        NULL, NULL));
    bn_act_params(n, m, f, i);
    n->par.bn_act.keep_y = f->keep_y;
    n->par.bn_act.res_first = res_first;
    n->par.bn_act.add_in = f->add_in >= 0;
}

void model_fuse_bwd_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *fs,
                         int i)
{
    const struct model_fuse_layer *f = &fs[i];
    const struct layer *l = &m->g->layers[i];
    const int u = l->inputs[0], top = f->pool >= 0 ? f->pool : f->act;
    const int pool = f->pool >= 0;
    if (f->dbn) {   /* a convolution's backward took the activation's and the weights' */
        plan_node_init(n, PLAN_BN_APPLY_BWD);
        n->phase = PLAN_PHASE_BACKWARD;
        n->layer = i;
        plan_node_set_tensors(n,
                              PLAN_DSTS(u == 0 ? NULL : h->dy[u], &m->dp[l->param_first],
                                        &m->dp[l->param_first + 1]),
                              PLAN_SRCS(h->dy[i], h->y[u], &m->p[l->param_first],
                                        &m->bn_mean[i], &m->bn_invstd[i], &m->bn_vec[i]));
        n->acc = m->accum[i * GRAPH_MAX_INPUTS] != 0;
        return;
    }
    plan_node_init(n, PLAN_BN_ACT_BWD);
    n->phase = PLAN_PHASE_BACKWARD;
    n->layer = i;
    plan_node_set_tensors(n,
                          PLAN_DSTS(u == 0 ? NULL : h->dy[u], &m->dp[l->param_first],
                                    &m->dp[l->param_first + 1], h->dy[i],
                                    pool ? h->dy[f->act] : NULL),
                          PLAN_SRCS(h->dy[top], h->y[u], &m->p[l->param_first],
                                    &m->bn_mean[i], &m->bn_invstd[i], h->y[i], &m->bn_coef[i],
                                    pool ? h->y[f->act] : NULL, pool ? h->y[f->pool] : NULL));
    n->acc = m->accum[i * GRAPH_MAX_INPUTS] != 0;
    bn_act_params(n, m, f, i);
}

int model_fuse_runs(const struct model *m, const struct plan_node *n)
{
    return m->be->ops->supports(m->be->ctx, n);
}

/* The add layer that may follow activation layer j of batch norm i, or -1. */
static int residual_add(const struct model *m, int i, int j)
{
    const int k = next_live(m, j);
    if (k < 0 || model_fuse_readers(m, j, k) != 0) return -1;
    const struct layer *q = &m->g->layers[k];
    if (layer_type_kind(q->spec.type) != LAYER_KIND_ADD ||
        (q->inputs[0] == j) == (q->inputs[1] == j))
        return -1;
    const int r = q->inputs[0] == j ? q->inputs[1] : q->inputs[0];
    return r < i ? k : -1;
}

/* The max-pool layer that may follow activation layer j, or -1: the pool alone reads j,
 * its windows tile the plane and do not overlap (stride the window; a global max pool's
 * one window is the plane). */
static int tiling_pool(const struct model *m, int j)
{
    const int k = next_live(m, j);
    if (k < 0 || model_fuse_readers(m, j, k) != 0) return -1;
    const struct layer *q = &m->g->layers[k];
    const struct layer_info *info = layer_info(q->spec.type);
    if ((info->kind != LAYER_KIND_POOL && info->kind != LAYER_KIND_GLOBAL_POOL) ||
        info->pool != POOL_MAX || q->inputs[0] != j)
        return -1;
    const struct pool_attr a = model_layer_pool_attr(q, info);
    return plan_pool_tiles(&a, q->in_h, q->in_w) ? k : -1;
}

/* The add layer whose output is batch norm i's x and that runs just before it, not in
 * another node yet, or -1. */
static int input_add(const struct model_fuse_layer *f, const struct model *m, int i)
{
    const int k = m->g->layers[i].inputs[0], p = prev_live(m, i);
    const struct layer *q = &m->g->layers[k];
    if (k != p || k <= 0 || f[k].in_fwd || layer_type_kind(q->spec.type) != LAYER_KIND_ADD ||
        q->n_inputs != 2)
        return -1;
    return k;
}

static const struct model_fuse_layer NONE = {-1, -1, -1, -1, 0, 0, 0, 0,
                                              -1, -1, -1, -1, 0, 0};

/* Decides batch-norm layer i's fused nodes into f: the candidates, most fused first (the
 * residual add or pool after, and the add before; then without the add before; then
 * without what comes after; then neither), the first the engine runs. */
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
    const int others = model_fuse_readers(m, i, j);
    const int add = whole ? residual_add(m, i, j) : -1;
    const int pool = whole && add < 0 ? tiling_pool(m, j) : -1;
    const int add_in = train ? input_add(f, m, i) : -1;
    for (int v = 0; v < 4; v++) {
        const int after = v < 2, before = v % 2 == 0;
        if ((after && add < 0 && pool < 0) || (before && add_in < 0)) continue;
        *fi = NONE;
        fi->act = j;
        fi->add = after ? add : -1;
        fi->pool = after ? pool : -1;
        fi->add_in = before ? add_in : -1;
        fi->bwd = train && whole && with_bwd && others == 0 && !m->accum[j * GRAPH_MAX_INPUTS];
        if (fi->bwd) {
            model_fuse_bwd_node(&n, m, h, f, i);
            fi->bwd = (unsigned char)model_fuse_runs(m, &n);
        }
        fi->keep_y = !whole || others > 0 || (train && with_bwd && !fi->bwd);
        /* the activation's output, unwritten with a pool, is the pool's backward's x */
        if (fi->pool >= 0 && (fi->keep_y || (train && !fi->bwd))) continue;
        model_fuse_fwd_node(&n, m, h, f, i, train);
        if (!model_fuse_runs(m, &n)) continue;
        f[j].in_fwd = 1;
        f[j].in_bwd = fi->bwd;
        if (fi->add >= 0) f[fi->add].in_fwd = 1;
        if (fi->pool >= 0) {
            f[fi->pool].in_fwd = 1;
            f[fi->pool].in_bwd = fi->bwd;
        }
        if (fi->add_in >= 0) f[fi->add_in].in_fwd = 1;
        return;
    }
    *fi = NONE;
}

void model_fuse_decide(struct model_fuse_layer *f, const struct model *m,
                       const struct model_fuse_handles *h, int train, int whole, int with_bwd)
{
    const struct graph *g = m->g;
    for (int i = 0; i < g->count; i++) f[i] = NONE;
    for (int i = 1; i < g->count; i++)
        if (m->live[i] && !f[i].in_fwd && layer_type_kind(g->layers[i].spec.type) == LAYER_KIND_BN)
            decide_bn(f, m, h, i, train, whole, with_bwd);
}

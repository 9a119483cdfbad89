/* The model as plans (kernels/plan.h): the node builders that describe every layer's
 * forward and backward call, the loss and the optimiser step; from them the training
 * step's plan, an evaluation batch's plan, and the single-part runs model_forward,
 * model_loss, model_backward and model_sgd. The model is described here once: every
 * way of running it goes through these builders. */
#include "model.h"
#include "model_fuse.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "base/status.h"

/* Appends a node of kind op to p in phase ph for layer `layer` into n; out of memory
 * fails the builder. */
#define APPEND(n, p, op, ph, layer)                                                       \
    do {                                                                                  \
        (n) = plan_append((p), (op), (ph), (layer));                                      \
        CHECK_ALLOC((n), "a plan node");                                                  \
    } while (0)

/* A plan of a step or batch needs the plan's own ops: an engine that does not run them
 * cannot run one (DR_ERR_INTERNAL, naming the op), rather than failing at the first step.
 * Asked of the engine with nodes of no tensors (backend_ops.supports: the op alone). */
static int check_ops(const struct backend *be, int want_batch, int want_sgd)
{
    const enum plan_op ops[3] = {PLAN_BATCH, PLAN_CURSOR_ADVANCE, PLAN_SGD};
    const int wanted[3] = {want_batch, want_batch, want_sgd};
    for (int i = 0; i < 3; i++) {
        struct plan_node n;
        plan_node_init(&n, ops[i]);
        if (wanted[i] && !be->ops->supports(be->ctx, &n))
            return dr_report(DR_ERR_INTERNAL, __FILE__, __LINE__, NULL,
                             "the %s engine does not run %s nodes: it cannot run a step as a "
                             "plan", be->ops->name, plan_op_name(ops[i]));
    }
    return DR_OK;
}

/* The handles the nodes of a plan use for every layer's output and output gradient, after
 * the plan's aliases (kernels/plan.h, "Aliases"): a layer whose result is the bytes of
 * another tensor gets no node, and its readers are handed that tensor's handle.
 *   - forward: a flatten of a 1x1 plane (n, c, 1, 1) is its input's bytes in any layout;
 *     a dropout outside training, or of p = 0, is its input;
 *   - backward: an input of an add (or of a 1x1 flatten, or of a dropout of p = 0) whose
 *     gradient the add writes first (accumulate flag 0) is the add's output gradient
 *     itself, when no later write to that shared buffer on behalf of one gradient comes
 *     before a read of another.
 * The copies they replace are exact (1 x dy), so the results are bit-identical. A
 * training dropout's nodes also take the step's cursor and the run's seed from here. */
struct plan_handles {
    struct tensor **y;          /* [g->count] each layer's output as its readers see it */
    struct tensor **dy;         /* [g->count] its gradient (NULL for the image) */
    unsigned char *fwd_alias;   /* [g->count] 1: the forward node is left out */
    unsigned char *bwd_alias;   /* [g->count * GRAPH_MAX_INPUTS] 1: that input's gradient
                                   is this layer's, its node left out */
    const struct tensor *cursor;   /* the step's cursor; NULL in a single-part run */
    uint64_t seed;                 /* the run's seed (with a cursor) */
};

static void handles_free(struct plan_handles *h)
{
    free(h->y);
    free(h->dy);
    free(h->fwd_alias);
    free(h->bwd_alias);
    memset(h, 0, sizeof(*h));
}

/* Whether layer i of kind `kind` is a flatten of a 1x1 plane. */
static int flat_1x1(const struct layer *l, enum layer_kind kind)
{
    return kind == LAYER_KIND_FLATTEN && l->in_h == 1 && l->in_w == 1 && l->c == l->in_c;
}

/* Whether layer l of kind `kind` is a dropout that is the identity: outside training
 * (train 0), or of p = 0. */
static int dropout_identity(const struct layer *l, enum layer_kind kind, int train)
{
    return kind == LAYER_KIND_DROPOUT && (!train || l->spec.p == 0.0f);
}

/* The latest backward write to layer u's gradient after the backward of layer `at`: the
 * highest live consumer j of u below `at` (the backward runs in reverse graph order), or
 * 0 when there is none. */
static int last_pending_write(const struct model *m, int u, int at)
{
    const struct graph *g = m->g;
    for (int j = at - 1; j > u; j--) {
        if (!m->live[j]) continue;
        for (int s = 0; s < g->layers[j].n_inputs; s++)
            if (g->layers[j].inputs[s] == u) return j;
    }
    return 0;
}

/* Whether layer u's gradient may become buffer b (shared by the layers with h->dy[v] ==
 * b) at the backward of layer `at`: every pending member's read (its own backward, at
 * graph index v < at) comes before any pending write to another member's gradient. */
static int alias_safe(const struct model *m, const struct plan_handles *h, int u, int at,
                      const struct tensor *b)
{
    const int wu = last_pending_write(m, u, at);
    for (int v = at - 1; v > 0; v--) {
        if (v == u || !m->live[v] || h->dy[v] != b) continue;
        if (v <= wu) return 0;                           /* u written before v is read */
        if (u <= last_pending_write(m, v, at)) return 0; /* v written before u is read */
    }
    return 1;
}

/* The handles of every layer of m in train or eval mode, with the aliases described above;
 * src (NULL in a single-part run) gives the cursor and the seed. */
static int handles_make(struct plan_handles *h, struct model *m, int train,
                        const struct model_batch_src *src)
{
    int rc = DR_OK;
    const struct graph *g = m->g;
    const size_t nl = (size_t)g->count;
    memset(h, 0, sizeof(*h));
    h->y = dr_calloc(nl, sizeof(*h->y));
    h->dy = dr_calloc(nl, sizeof(*h->dy));
    h->fwd_alias = dr_calloc(nl, 1);
    h->bwd_alias = dr_calloc(nl * GRAPH_MAX_INPUTS, 1);
    if (!h->y || !h->dy || !h->fwd_alias || !h->bwd_alias)
        FAIL(DR_ERR_NOMEM, "out of memory allocating the plan's tensor handles");
    for (int i = 0; i < g->count; i++) {
        const struct layer *l = &g->layers[i];
        h->y[i] = &m->y[i];
        h->dy[i] = i > 0 ? &m->dy[i] : NULL;
        if (i > 0 && i != g->output &&
            (flat_1x1(l, layer_type_kind(l->spec.type)) ||
             dropout_identity(l, layer_type_kind(l->spec.type), train))) {
            h->y[i] = h->y[l->inputs[0]];
            h->fwd_alias[i] = 1;
        }
    }
    for (int i = g->count - 1; i > 0; i--) {
        const struct layer *l = &g->layers[i];
        const enum layer_kind kind = layer_type_kind(l->spec.type);
        if (!m->live[i] ||
            (kind != LAYER_KIND_ADD && !flat_1x1(l, kind) && !dropout_identity(l, kind, train)))
            continue;
        if (kind == LAYER_KIND_ADD && l->inputs[0] == l->inputs[1]) continue;
        for (int s = 0; s < l->n_inputs; s++) {
            const int u = l->inputs[s];
            const struct layer *lu = &g->layers[u];
            if (u == 0 || m->accum[i * GRAPH_MAX_INPUTS + s] || h->dy[u] != &m->dy[u] ||
                lu->c != l->c || lu->h != l->h || lu->w != l->w ||
                !alias_safe(m, h, u, i, h->dy[i]))
                continue;
            h->dy[u] = h->dy[i];
            h->bwd_alias[i * GRAPH_MAX_INPUTS + s] = 1;
        }
    }
    h->cursor = src ? src->cursor : NULL;
    h->seed = src ? src->seed : 0;
cleanup:
    if (rc != DR_OK) handles_free(h);
    return rc;
}

/* The node of layer i's forward pass, in train (batch statistics) or eval mode. */
static int add_layer_forward(struct plan *p, struct model *m, const struct plan_handles *h,
                             int i, int train)
{
    int rc = DR_OK;
    const struct layer *l = &m->g->layers[i];
    const struct layer_info *info = layer_info(l->spec.type);
    struct tensor *y = &m->y[i];
    const struct tensor *x = h->y[l->inputs[0]];
    struct tensor *w = &m->p[l->param_first];
    struct plan_node *n = NULL;
    const enum plan_phase ph = PLAN_PHASE_FORWARD;
    switch (layer_type_kind(l->spec.type)) {
    case LAYER_KIND_CONV:
    case LAYER_KIND_WHITEN:
        APPEND(n, p, PLAN_CONV_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x, w, model_layer_bias(l, m->p)));
        n->par.conv = model_layer_conv_attr(l);
        break;
    case LAYER_KIND_BN: {
        struct bn_attr a = {l->spec.eps, l->spec.momentum, l->spec.splits};
        if (train) {
            APPEND(n, p, PLAN_BN_FWD_TRAIN, ph, i);
            plan_node_set_tensors(n,
                                  PLAN_DSTS(y, &m->bn_mean[i], &m->bn_invstd[i],
                                            &m->bn_rmean[i], &m->bn_rvar[i]),
                                  PLAN_SRCS(x, &w[0], &w[1]));
            n->par.bn = a;
        } else {
            APPEND(n, p, PLAN_BN_FWD_EVAL, ph, i);
            plan_node_set_tensors(n, PLAN_DSTS(y),
                                  PLAN_SRCS(x, &w[0], &w[1], &m->bn_rmean[i], &m->bn_rvar[i]));
            n->par.bn = a;
        }
        break;
    }
    case LAYER_KIND_ACT:
        APPEND(n, p, PLAN_ACT_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x));
        n->par.act.kind = info->act;
        n->par.act.alpha = l->spec.alpha;
        break;
    case LAYER_KIND_POOL:
    case LAYER_KIND_GLOBAL_POOL:
        APPEND(n, p, PLAN_POOL_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x));
        n->par.pool = model_layer_pool_attr(l, info);
        break;
    case LAYER_KIND_CONCAT: {
        const struct tensor *xs[PLAN_MAX_CONCAT];
        EXPECT(l->n_inputs <= PLAN_MAX_CONCAT, "layer '%s': %d inputs to a concat node",
               l->spec.name, l->n_inputs);
        APPEND(n, p, PLAN_CONCAT_FWD, ph, i);
        for (int s = 0; s < l->n_inputs; s++) xs[s] = h->y[l->inputs[s]];
        plan_node_set_tensors(n, PLAN_DSTS(y), xs, l->n_inputs);
        break;
    }
    case LAYER_KIND_ADD:
        APPEND(n, p, PLAN_ADD_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x, h->y[l->inputs[1]]));
        break;
    case LAYER_KIND_FLATTEN:
        if (h->fwd_alias[i]) break;   /* its readers read x */
        APPEND(n, p, PLAN_FLATTEN_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x));
        break;
    case LAYER_KIND_LINEAR:
        APPEND(n, p, PLAN_LINEAR_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x, w, model_layer_bias(l, m->p)));
        break;
    case LAYER_KIND_SCALE:
        APPEND(n, p, PLAN_SCALE_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x));
        n->par.scale.s = l->spec.scale;
        break;
    case LAYER_KIND_DROPOUT:
        if (h->fwd_alias[i]) break;   /* the identity: its readers read x */
        if (dropout_identity(l, info->kind, train)) {   /* the identity as the output */
            APPEND(n, p, PLAN_SCALE_FWD, ph, i);
            plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x));
            n->par.scale.s = 1.0f;
            break;
        }
        EXPECT(h->cursor, "layer '%s': a training dropout needs the step's cursor (it runs "
               "in the training step's plan only)", l->spec.name);
        APPEND(n, p, PLAN_DROPOUT_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x, h->cursor));
        n->par.dropout = (struct dropout_attr){.seed = h->seed, .p = l->spec.p, .layer = i};
        break;
    case LAYER_KIND_TEMPERATURE:
        APPEND(n, p, PLAN_TEMPERATURE_FWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x, w));
        break;
    case LAYER_KIND_INPUT:
    case LAYER_KIND_SHORTCUT:   /* graph_build resolves it */
        FAIL(DR_ERR_INTERNAL, "layer '%s': no forward for type %d", l->spec.name,
             (int)l->spec.type);
    }
cleanup:
    return rc;
}

/* Gradient tensor for input slot s of layer l, or NULL when the input is the image. */
static struct tensor *input_grad(const struct plan_handles *h, const struct layer *l, int s)
{
    return l->inputs[s] == 0 ? NULL : h->dy[l->inputs[s]];
}

/* The nodes of layer i's backward pass (none where no input gradient is wanted and the
 * layer has no parameters), with the model's accumulate flags. */
static int add_layer_backward(struct plan *p, struct model *m, const struct plan_handles *h,
                              int i)
{
    int rc = DR_OK;
    const struct layer *l = &m->g->layers[i];
    const struct layer_info *info = layer_info(l->spec.type);
    const unsigned char *acc = &m->accum[i * GRAPH_MAX_INPUTS];
    const unsigned char *alias = &h->bwd_alias[i * GRAPH_MAX_INPUTS];
    const struct tensor *dy = h->dy[i];
    const struct tensor *x = h->y[l->inputs[0]];
    struct tensor *dx = input_grad(h, l, 0);
    struct tensor *w = &m->p[l->param_first], *dw = &m->dp[l->param_first];
    struct plan_node *n = NULL;
    const enum plan_phase ph = PLAN_PHASE_BACKWARD;
    switch (layer_type_kind(l->spec.type)) {
    case LAYER_KIND_CONV:
    case LAYER_KIND_WHITEN:
        APPEND(n, p, PLAN_CONV_BWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx, dw, model_layer_bias(l, m->dp)),
                              PLAN_SRCS(dy, x, w));
        n->par.conv = model_layer_conv_attr(l);
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_BN: /* dx may be NULL: the parameter gradients are still needed */
        APPEND(n, p, PLAN_BN_BWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx, &dw[0], &dw[1]),
                              PLAN_SRCS(dy, x, &w[0], &m->bn_mean[i], &m->bn_invstd[i]));
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_ACT:
        if (!dx) break;
        APPEND(n, p, PLAN_ACT_BWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx), PLAN_SRCS(dy, x));
        n->par.act.kind = info->act;
        n->par.act.alpha = l->spec.alpha;
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_POOL:
    case LAYER_KIND_GLOBAL_POOL:
        if (!dx) break;
        APPEND(n, p, PLAN_POOL_BWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx), PLAN_SRCS(dy, x, h->y[i]));
        n->par.pool = model_layer_pool_attr(l, info);
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_CONCAT: {
        struct tensor *dxs[PLAN_MAX_CONCAT];
        EXPECT(l->n_inputs <= PLAN_MAX_CONCAT, "layer '%s': %d inputs to a concat node",
               l->spec.name, l->n_inputs);
        APPEND(n, p, PLAN_CONCAT_BWD, ph, i);
        for (int s = 0; s < l->n_inputs; s++) {
            dxs[s] = input_grad(h, l, s);
            if (acc[s]) n->acc |= 1u << s;
        }
        plan_node_set_tensors(n, dxs, l->n_inputs, PLAN_SRCS(dy));
        break;
    }
    case LAYER_KIND_ADD:
        for (int s = 0; s < 2; s++) {
            struct tensor *d = input_grad(h, l, s);
            if (!d || alias[s]) continue;   /* an alias: d is dy already */
            APPEND(n, p, PLAN_SCALED_COPY, ph, i);
            plan_node_set_tensors(n, PLAN_DSTS(d), PLAN_SRCS(dy));
            n->par.scale.s = 1.0f;
            n->acc = acc[s] != 0;
        }
        break;
    case LAYER_KIND_FLATTEN:
        if (!dx || alias[0]) break;
        APPEND(n, p, PLAN_FLATTEN_BWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx), PLAN_SRCS(dy));
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_LINEAR:
        APPEND(n, p, PLAN_LINEAR_BWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx, dw, model_layer_bias(l, m->dp)),
                              PLAN_SRCS(dy, x, w));
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_SCALE:
        if (!dx) break;
        APPEND(n, p, PLAN_SCALED_COPY, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx), PLAN_SRCS(dy));
        n->par.scale.s = l->spec.scale;
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_DROPOUT:
        if (!dx || alias[0]) break;
        if (dropout_identity(l, info->kind, 1)) {   /* p = 0: dx (=|+=) dy */
            APPEND(n, p, PLAN_SCALED_COPY, ph, i);
            plan_node_set_tensors(n, PLAN_DSTS(dx), PLAN_SRCS(dy));
            n->par.scale.s = 1.0f;
            n->acc = acc[0] != 0;
            break;
        }
        EXPECT(h->cursor, "layer '%s': a training dropout needs the step's cursor (it runs "
               "in the training step's plan only)", l->spec.name);
        APPEND(n, p, PLAN_DROPOUT_BWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx), PLAN_SRCS(dy, h->cursor));
        n->par.dropout = (struct dropout_attr){.seed = h->seed, .p = l->spec.p, .layer = i};
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_TEMPERATURE:   /* dx may be NULL: dt is still needed */
        APPEND(n, p, PLAN_TEMPERATURE_BWD, ph, i);
        plan_node_set_tensors(n, PLAN_DSTS(dx, dw), PLAN_SRCS(dy, x, w));
        n->acc = acc[0] != 0;
        break;
    case LAYER_KIND_INPUT:
    case LAYER_KIND_SHORTCUT:   /* graph_build resolves it */
        FAIL(DR_ERR_INTERNAL, "layer '%s': no backward for type %d", l->spec.name,
             (int)l->spec.type);
    }
cleanup:
    return rc;
}

/* What every node of one plan uses: the handles of each layer's output and gradient
 * (handles_make) and the fused nodes (model_fuse.h), decided once so that a plan's
 * forward and backward agree on them. */
struct plan_layout {
    struct plan_handles h;
    struct model_fuse_handles fh;   /* h's y and dy, as model_fuse.h takes them */
    struct model_fuse_layer *f;     /* [g->count] */
};

static void layout_free(struct plan_layout *L)
{
    free(L->f);
    L->f = NULL;
    handles_free(&L->h);
}

/* The layout of a plan of m (train: batch statistics); src as handles_make's: NULL for a
 * single-part run (model_forward, model_backward), which fuses nothing it would leave
 * unwritten (model_fuse_decide's whole = 0), else a whole plan (a training step with its
 * backward, or an evaluation batch). */
static int layout_make(struct plan_layout *L, struct model *m, int train,
                       const struct model_batch_src *src)
{
    int rc = DR_OK;
    L->f = NULL;
    TRY(handles_make(&L->h, m, train, src));
    L->fh = (struct model_fuse_handles){L->h.y, L->h.dy};
    L->f = dr_calloc((size_t)m->g->count, sizeof(*L->f));
    CHECK_ALLOC(L->f, "the plan's fused nodes");
    model_fuse_decide(L->f, m, &L->fh, train, src != NULL, train && src);
    if (src) model_fuse_convs(L->f, m, &L->fh, train, train);
cleanup:
    if (rc != DR_OK) layout_free(L);
    return rc;
}

/* Every live layer's forward node, in graph order, the fused ones as L says. */
static int add_forward(struct plan *p, struct model *m, const struct plan_layout *L, int train)
{
    int rc = DR_OK;
    struct plan_node *n = NULL;
    for (int i = 1; i < m->g->count; i++) {
        if (!m->live[i] || L->f[i].in_fwd) continue;
        if (L->f[i].act >= 0) {
            APPEND(n, p, PLAN_BN_ACT_TRAIN, PLAN_PHASE_FORWARD, i);
            model_fuse_fwd_node(n, m, &L->fh, L->f, i, train);
        } else if (model_fuse_conv_fwd(L->f, m, i)) {
            APPEND(n, p, PLAN_CONV_FUSED_FWD, PLAN_PHASE_FORWARD, i);
            model_fuse_conv_fwd_node(n, m, &L->fh, L->f, i);
        } else if (model_fuse_add_fwd(L->f, m, i)) {
            APPEND(n, p, PLAN_ADD_PRO, PLAN_PHASE_FORWARD, i);
            model_fuse_add_node(n, m, &L->fh, L->f, i);
        } else {
            TRY(add_layer_forward(p, m, &L->h, i, train));
        }
    }
cleanup:
    return rc;
}

/* Softmax cross-entropy of `logits` against m->labels, added to m->stats. */
static int add_loss(struct plan *p, struct model *m, const struct tensor *logits,
                    float smoothing)
{
    int rc = DR_OK;
    struct plan_node *n = NULL;
    APPEND(n, p, PLAN_XENT_FWD, PLAN_PHASE_LOSS, -1);
    plan_node_set_tensors(n, PLAN_DSTS(&m->stats, &m->probs), PLAN_SRCS(logits, &m->labels));
    n->par.xent.smoothing = smoothing;
cleanup:
    return rc;
}

/* The loss gradient, then every live layer's backward nodes in reverse graph order, the
 * fused ones as L (made for training) says. */
static int add_backward(struct plan *p, struct model *m, const struct plan_layout *L,
                        float smoothing, float scale)
{
    int rc = DR_OK;
    struct plan_node *n = NULL;
    APPEND(n, p, PLAN_XENT_BWD, PLAN_PHASE_LOSS, -1);
    plan_node_set_tensors(n, PLAN_DSTS(L->h.dy[m->g->output]),
                          PLAN_SRCS(&m->probs, &m->labels));
    n->par.xent.smoothing = smoothing;
    n->par.xent.scale = scale;
    for (int i = m->g->count - 1; i > 0; i--) {
        if (!m->live[i] || L->f[i].in_bwd) continue;
        if (L->f[i].bwd) {
            APPEND(n, p, PLAN_BN_ACT_BWD, PLAN_PHASE_BACKWARD, i);
            model_fuse_bwd_node(n, m, &L->fh, L->f, i);
        } else if (L->f[i].pro >= 0 && model_fuse_conv_fwd(L->f, m, i)) {
            APPEND(n, p, PLAN_CONV_FUSED_BWD, PLAN_PHASE_BACKWARD, i);
            model_fuse_conv_bwd_node(n, m, &L->fh, L->f, i);
        } else {
            TRY(add_layer_backward(p, m, &L->h, i));
        }
    }
cleanup:
    return rc;
}

/* The batch node: images of src at the cursor's batch index, augmented by aug (NULL =
 * the test batch). */
static int add_batch(struct plan *p, struct model *m, const struct model_batch_src *src,
                     const struct augment_params *aug)
{
    int rc = DR_OK;
    struct plan_node *n = NULL;
    APPEND(n, p, PLAN_BATCH, PLAN_PHASE_BATCH, -1);
    plan_node_set_tensors(n, PLAN_DSTS(&m->y[0], &m->labels),
                          PLAN_SRCS(src->images, src->labels, src->rows, src->cursor));
    n->par.batch.aug = aug;
    n->par.batch.stride = src->stride;
    n->par.batch.seed = src->seed;
cleanup:
    return rc;
}

static int add_cursor_advance(struct plan *p, struct tensor *cursor)
{
    int rc = DR_OK;
    struct plan_node *n = NULL;
    APPEND(n, p, PLAN_CURSOR_ADVANCE, PLAN_PHASE_BATCH, -1);
    n->dst[PLAN_CURSOR] = cursor;
cleanup:
    return rc;
}

/* The optimiser's items of the trainable parameters whose kind is in `kinds` (bit k:
 * enum param_kind k), with lr_scale[kind] and (float)(wd * wd_scale[kind]) (NULL scales =
 * 1), into items; returns how many. */
static int fill_items(struct sgd_item *items, struct model *m, unsigned kinds, float wd,
                      const double *lr_scale, const double *wd_scale)
{
    const struct graph *g = m->g;
    int n = 0;
    for (int k = 0; k < g->n_params; k++) {
        const struct param_desc *d = &g->params[k];
        if (!d->trainable || !((kinds >> d->kind) & 1u)) continue;
        items[n].w = &m->p[k];
        items[n].v = &m->v[k];
        items[n].dw = &m->dp[k];
        items[n].lr_scale = lr_scale ? lr_scale[d->kind] : 1.0;
        items[n].wd = wd_scale ? (float)((double)wd * wd_scale[d->kind]) : wd;
        items[n].train_epochs = d->train_epochs;
        n++;
    }
    return n;
}

/* The optimiser's items: every trainable parameter, with lr_scale[kind] and
 * (float)(wd * wd_scale[kind]) (NULL scales = 1), into a new array *out of *count. */
static int sgd_items(struct sgd_item **out, int *count, struct model *m, float wd,
                     const double *lr_scale, const double *wd_scale)
{
    int rc = DR_OK;
    const struct graph *g = m->g;
    struct sgd_item *items = dr_calloc((size_t)(g->n_params > 0 ? g->n_params : 1),
                                       sizeof(*items));
    int n = 0;
    CHECK_ALLOC(items, "the optimiser's parameter list");
    for (int k = 0; k < g->n_params; k++) {
        const struct param_desc *d = &g->params[k];
        if (!d->trainable) continue;
        items[n].w = &m->p[k];
        items[n].v = &m->v[k];
        items[n].dw = &m->dp[k];
        items[n].lr_scale = lr_scale ? lr_scale[d->kind] : 1.0;
        items[n].wd = wd_scale ? (float)((double)wd * wd_scale[d->kind]) : wd;
        items[n].train_epochs = d->train_epochs;
        n++;
    }
cleanup:
    *out = items;
    *count = n;
    return rc;
}

static int add_sgd(struct plan *p, const struct sgd_item *items, int count,
                   const struct tensor *lr_table, const struct tensor *cursor, float momentum,
                   int nesterov)
{
    int rc = DR_OK;
    struct plan_node *n = NULL;
    APPEND(n, p, PLAN_SGD, PLAN_PHASE_OPTIMIZER, -1);
    plan_node_set_tensors(n, NULL, 0, PLAN_SRCS(lr_table, cursor));
    n->par.sgd.items = items;
    n->par.sgd.count = count;
    n->par.sgd.momentum = momentum;
    n->par.sgd.nesterov = nesterov;
cleanup:
    return rc;
}

/* The parameter groups' optimiser nodes (model_step_opts.groups), each over its kinds'
 * items, placed in m->sgd_items from *used on. */
static int add_groups(struct plan *p, struct model *m, const struct model_step_opts *o,
                      const struct tensor *cursor, int *used)
{
    int rc = DR_OK;
    for (int k = 0; k < o->n_groups; k++) {
        const struct model_opt_group *gr = &o->groups[k];
        struct sgd_item *items = m->sgd_items + *used;
        const int n = fill_items(items, m, gr->kinds, gr->muon ? 0.0f : o->wd, o->lr_scale,
                                 gr->muon ? NULL : o->wd_scale);
        struct plan_node *node = NULL;
        *used += n;
        if (!gr->muon) {
            TRY(add_sgd(p, items, n, gr->lr_table, cursor, gr->momentum, gr->nesterov));
            continue;
        }
        APPEND(node, p, PLAN_MUON, PLAN_PHASE_OPTIMIZER, -1);
        plan_node_set_tensors(node, NULL, 0, PLAN_SRCS(gr->lr_table, cursor));
        node->par.muon.items = items;
        node->par.muon.count = n;
        node->par.muon.momentum = gr->momentum;
        node->par.muon.nesterov = gr->nesterov;
        node->par.muon.ns = gr->ns;
    }
cleanup:
    return rc;
}

int model_plan_train(struct plan *p, struct model *m, const struct model_batch_src *src,
                     const struct model_step_opts *o)
{
    int rc = DR_OK;
    unsigned grouped = 0;
    int used = 0;
    struct plan_layout L = {0};
    plan_free(p);
    free(m->sgd_items);
    m->sgd_items = NULL;
    m->sgd_count = 0;
    TRY(check_ops(m->be, 1, 1));
    for (int k = 0; k < o->n_groups; k++) {
        EXPECT(!(grouped & o->groups[k].kinds), "parameter groups sharing a kind");
        grouped |= o->groups[k].kinds;
    }
    TRY(sgd_items(&m->sgd_items, &m->sgd_count, m, o->wd, o->lr_scale, o->wd_scale));
    TRY(add_batch(p, m, src, o->aug));
    TRY(layout_make(&L, m, 1, src));
    TRY(add_forward(p, m, &L, 1));
    TRY(add_loss(p, m, model_logits(m), o->smoothing));
    TRY(add_backward(p, m, &L, o->smoothing, o->grad_scale));
    if (o->n_groups > 0)   /* the ungrouped kinds first, then each group's */
        m->sgd_count = used = fill_items(m->sgd_items, m, ~grouped, o->wd, o->lr_scale,
                                         o->wd_scale);
    TRY(add_sgd(p, m->sgd_items, m->sgd_count, o->lr_table, src->cursor, o->momentum,
                o->nesterov));
    TRY(add_groups(p, m, o, src->cursor, &used));
    if (o->n_groups > 0) m->sgd_count = used;
    TRY(add_cursor_advance(p, src->cursor));
    p->replayable = 1;
cleanup:
    layout_free(&L);
    if (rc != DR_OK) plan_free(p);
    return rc;
}

int model_plan_eval(struct plan *p, struct model *m, const struct model_batch_src *src,
                    const struct augment_params *views, const float *weights, int nviews,
                    struct tensor *view_sum)
{
    int rc = DR_OK;
    struct plan_layout L = {0};
    plan_free(p);
    TRY(check_ops(m->be, 1, 0));
    TRY(layout_make(&L, m, 0, src));   /* every view's forward runs over the same tensors */
    if (nviews <= 0) {
        TRY(add_batch(p, m, src, NULL));
        TRY(add_forward(p, m, &L, 0));
        TRY(add_loss(p, m, model_logits(m), 0.0f));
    } else {
        for (int v = 0; v < nviews; v++) {
            struct plan_node *n = NULL;
            TRY(add_batch(p, m, src, &views[v]));
            TRY(add_forward(p, m, &L, 0));
            APPEND(n, p, PLAN_SCALED_COPY, PLAN_PHASE_LOSS, -1);
            plan_node_set_tensors(n, PLAN_DSTS(view_sum), PLAN_SRCS(model_logits(m)));
            n->par.scale.s = weights[v];
            n->acc = v > 0;
        }
        TRY(add_loss(p, m, view_sum, 0.0f));
    }
    TRY(add_cursor_advance(p, src->cursor));
    p->replayable = 1;
cleanup:
    layout_free(&L);
    if (rc != DR_OK) plan_free(p);
    return rc;
}

int model_plan_pass(struct plan *p, struct model *m, int train, float smoothing, float scale)
{
    int rc = DR_OK;
    struct plan_layout L = {0};
    const struct model_batch_src none = {0};   /* no cursor: no training dropout */
    plan_free(p);
    TRY(layout_make(&L, m, train, &none));
    TRY(add_forward(p, m, &L, train));
    TRY(add_loss(p, m, model_logits(m), smoothing));
    if (train) TRY(add_backward(p, m, &L, smoothing, scale));
cleanup:
    layout_free(&L);
    if (rc != DR_OK) plan_free(p);
    return rc;
}

/* ------------------------------------------------------------------ running */

static double plan_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

struct prof_state {
    struct model *m;
    double t0;
};

/* plan_run_each's hook when profiling: waits for the device around each node and adds
 * its time to the profile's bucket (layer type and direction, loss, optimiser, batch). */
static int prof_hook(void *user, const struct plan_node *n, int after)
{
    struct prof_state *s = user;
    struct model *m = s->m;
    int rc = m->be->ops->synchronize(m->be->ctx);
    if (rc != DR_OK) return rc;
    if (!after) {
        s->t0 = plan_now();
        return DR_OK;
    }
    double dt = plan_now() - s->t0;
    struct model_profile *pr = m->prof;
    int type = n->layer >= 0 ? (int)m->g->layers[n->layer].spec.type : -1;
    switch (n->phase) {
    case PLAN_PHASE_FORWARD:
        if (type >= 0) pr->forward_s[type] += dt;
        else pr->loss_s += dt;
        break;
    case PLAN_PHASE_BACKWARD:
        if (type >= 0) pr->backward_s[type] += dt;
        else pr->loss_s += dt;
        break;
    case PLAN_PHASE_LOSS: pr->loss_s += dt; break;
    case PLAN_PHASE_OPTIMIZER: pr->optimizer_s += dt; break;
    case PLAN_PHASE_BATCH:
    case PLAN_PHASE_COUNT: pr->augment_s += dt; break;
    }
    return DR_OK;
}

int model_run_plan(struct model *m, struct plan *p)
{
    if (!m->prof)
        return p->replayable ? plan_compute(m->be, p) : plan_run_each(m->be, p, NULL, NULL);
    struct prof_state s = {m, 0.0};
    return plan_run_each(m->be, p, prof_hook, &s);
}

int model_forward(struct model *m, int train)
{
    int rc = DR_OK;
    struct plan p = {0};
    struct plan_layout L = {0};
    TRY(layout_make(&L, m, train, NULL));
    TRY(add_forward(&p, m, &L, train));
    TRY(model_run_plan(m, &p));
cleanup:
    layout_free(&L);
    plan_free(&p);
    return rc;
}

int model_loss(struct model *m, float smoothing)
{
    int rc = DR_OK;
    struct plan p = {0};
    TRY(add_loss(&p, m, model_logits(m), smoothing));
    TRY(model_run_plan(m, &p));
cleanup:
    plan_free(&p);
    return rc;
}

int model_backward(struct model *m, float smoothing, float scale)
{
    int rc = DR_OK;
    struct plan p = {0};
    struct plan_layout L = {0};
    TRY(layout_make(&L, m, 1, NULL));
    TRY(add_backward(&p, m, &L, smoothing, scale));
    TRY(model_run_plan(m, &p));
cleanup:
    layout_free(&L);
    plan_free(&p);
    return rc;
}

int model_sgd(struct model *m, float lr, float wd, float momentum, int nesterov,
              const double *lr_scale, const double *wd_scale, int epoch)
{
    int rc = DR_OK;
    const struct backend_ops *ops = m->be->ops;
    struct plan p = {0};
    struct sgd_item *items = NULL;
    int count = 0;
    struct tensor table = {NULL, TENSOR_F32, 1, 1, 1, 1};
    struct tensor cursor = {NULL, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1};
    const int32_t at[PLAN_CURSOR_LEN] = {[CURSOR_STEP] = 0, [CURSOR_EPOCH] = epoch};
    TRY(check_ops(m->be, 0, 1));
    TRY(sgd_items(&items, &count, m, wd, lr_scale, wd_scale));
    TRY(ops->tensor_alloc(m->be->ctx, &table));
    TRY(ops->tensor_alloc(m->be->ctx, &cursor));
    TRY(ops->tensor_write(m->be->ctx, &table, &lr));
    TRY(ops->tensor_write(m->be->ctx, &cursor, at));
    TRY(add_sgd(&p, items, count, &table, &cursor, momentum, nesterov));
    TRY(model_run_plan(m, &p));
cleanup:
    plan_free(&p);
    free(items);
    if (table.data) ops->tensor_free(m->be->ctx, &table);
    if (cursor.data) ops->tensor_free(m->be->ctx, &cursor);
    return rc;
}

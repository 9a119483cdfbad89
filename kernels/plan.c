/* The step as data (kernels/plan.h): the op table (one row per op: its shape and its
 * backend call), building a plan, checking a node against its row, listing what each node
 * reads and writes, the signature, and the reference node-by-node execution. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "../base/alloc.h"
#include "../base/grow.h"
#include "../base/status.h"

/* ---------------------------------------------------------------- the op table */

/* Each op's backend call, from the node's slots and parameters. */
static int run_batch(const struct backend *b, const struct plan_node *n)
{
    return b->ops->augment_step(b->ctx, n->dst[PLAN_BATCH_X], n->dst[PLAN_BATCH_LABELS],
                                n->src[PLAN_BATCH_IMAGES], n->src[PLAN_BATCH_IMAGE_LABELS],
                                n->src[PLAN_BATCH_ROWS], n->src[PLAN_BATCH_CURSOR],
                                n->par.batch.stride, n->par.batch.aug, n->par.batch.seed);
}

static int run_conv_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->conv_forward(b->ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_W],
                                n->src[PLAN_B], &n->par.conv);
}

static int run_conv_bwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->conv_backward(b->ctx, n->dst[PLAN_DX], n->dst[PLAN_DW], n->dst[PLAN_DB],
                                 n->src[PLAN_DY], n->src[PLAN_BWD_X], n->src[PLAN_BWD_W],
                                 &n->par.conv, PLAN_NODE_ACC(n, PLAN_DX));
}

static int run_bn_fwd_train(const struct backend *b, const struct plan_node *n)
{
    return b->ops->bn_forward_train(b->ctx, n->dst[PLAN_Y], n->dst[PLAN_SAVE_MEAN],
                                    n->dst[PLAN_SAVE_INVSTD], n->dst[PLAN_RUNNING_MEAN],
                                    n->dst[PLAN_RUNNING_VAR], n->src[PLAN_X],
                                    n->src[PLAN_GAMMA], n->src[PLAN_BETA], &n->par.bn);
}

static int run_bn_fwd_eval(const struct backend *b, const struct plan_node *n)
{
    return b->ops->bn_forward_eval(b->ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_GAMMA],
                                   n->src[PLAN_BETA], n->src[PLAN_RUNNING_MEAN],
                                   n->src[PLAN_RUNNING_VAR], &n->par.bn);
}

static int run_bn_bwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->bn_backward(b->ctx, n->dst[PLAN_DX], n->dst[PLAN_DGAMMA],
                               n->dst[PLAN_DBETA], n->src[PLAN_DY], n->src[PLAN_BWD_X],
                               n->src[PLAN_BWD_GAMMA], n->src[PLAN_BWD_SAVE_MEAN],
                               n->src[PLAN_BWD_SAVE_INVSTD], PLAN_NODE_ACC(n, PLAN_DX));
}

static int run_act_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->act_forward(b->ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->par.act.kind,
                               n->par.act.alpha);
}

static int run_act_bwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->act_backward(b->ctx, n->dst[PLAN_DX], n->src[PLAN_DY], n->src[PLAN_BWD_X],
                                n->par.act.kind, n->par.act.alpha, PLAN_NODE_ACC(n, PLAN_DX));
}

static int run_pool_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->pool_forward(b->ctx, n->dst[PLAN_Y], n->src[PLAN_X], &n->par.pool);
}

static int run_pool_bwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->pool_backward(b->ctx, n->dst[PLAN_DX], n->src[PLAN_DY], n->src[PLAN_BWD_X],
                                 n->src[PLAN_BWD_Y], &n->par.pool, PLAN_NODE_ACC(n, PLAN_DX));
}

static int run_concat_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->concat_forward(b->ctx, n->dst[PLAN_Y], n->src, n->n_src);
}

static int run_concat_bwd(const struct backend *b, const struct plan_node *n)
{
    int accumulate[PLAN_NODE_MAX_DST];
    for (int i = 0; i < PLAN_NODE_MAX_DST; i++) accumulate[i] = PLAN_NODE_ACC(n, i);
    return b->ops->concat_backward(b->ctx, n->dst, n->src[PLAN_DY], n->n_dst, accumulate);
}

static int run_add_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->add_forward(b->ctx, n->dst[PLAN_Y], n->src[PLAN_ADD_A], n->src[PLAN_ADD_B]);
}

static int run_scale_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->scale_forward(b->ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->par.scale.s);
}

static int run_scaled_copy(const struct backend *b, const struct plan_node *n)
{
    return b->ops->scaled_copy(b->ctx, n->dst[PLAN_DX], n->src[PLAN_DY], n->par.scale.s,
                               PLAN_NODE_ACC(n, PLAN_DX));
}

static int run_flatten_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->flatten_forward(b->ctx, n->dst[PLAN_Y], n->src[PLAN_X]);
}

static int run_flatten_bwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->flatten_backward(b->ctx, n->dst[PLAN_DX], n->src[PLAN_DY],
                                    PLAN_NODE_ACC(n, PLAN_DX));
}

static int run_linear_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->linear_forward(b->ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_W],
                                  n->src[PLAN_B]);
}

static int run_linear_bwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->linear_backward(b->ctx, n->dst[PLAN_DX], n->dst[PLAN_DW], n->dst[PLAN_DB],
                                   n->src[PLAN_DY], n->src[PLAN_BWD_X], n->src[PLAN_BWD_W],
                                   PLAN_NODE_ACC(n, PLAN_DX));
}

static int run_xent_fwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->xent_forward(b->ctx, n->dst[PLAN_XENT_STATS], n->dst[PLAN_XENT_PROBS],
                                n->src[PLAN_XENT_LOGITS], n->src[PLAN_XENT_LABELS],
                                n->par.xent.smoothing);
}

static int run_xent_bwd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->xent_backward(b->ctx, n->dst[PLAN_XENT_DLOGITS], n->src[PLAN_XENT_BWD_PROBS],
                                 n->src[PLAN_XENT_LABELS], n->par.xent.smoothing,
                                 n->par.xent.scale);
}

static int run_sgd(const struct backend *b, const struct plan_node *n)
{
    return b->ops->sgd_multi(b->ctx, n->par.sgd.items, n->par.sgd.count,
                             n->src[PLAN_SGD_LR_TABLE], n->src[PLAN_SGD_CURSOR],
                             n->par.sgd.momentum, n->par.sgd.nesterov);
}

static int run_muon(const struct backend *b, const struct plan_node *n)
{
    return b->ops->muon_multi(b->ctx, n->par.muon.items, n->par.muon.count,
                              n->src[PLAN_SGD_LR_TABLE], n->src[PLAN_SGD_CURSOR],
                              n->par.muon.momentum, n->par.muon.nesterov, &n->par.muon.ns);
}

static int run_cursor_advance(const struct backend *b, const struct plan_node *n)
{
    return b->ops->cursor_advance(b->ctx, n->dst[PLAN_CURSOR]);
}

_Static_assert(PLAN_NODE_MAX_DST <= 32 && PLAN_NODE_MAX_SRC <= 32,
               "a slot mask (unsigned) has a bit for every slot");

#define VAR PLAN_VARIADIC
#define ALL ((1u << PLAN_NODE_MAX_DST) - 1u)   /* every slot of a variadic op */

/* The op table: one row per op, in enum plan_op's order. Columns: name, dsts, srcs,
 * dsts and srcs that may be NULL, dsts the node may add to (acc), dsts always updated
 * (read and written), the backend call. */
static const struct plan_op_desc plan_ops[PLAN_OP_COUNT] = {
    [PLAN_BATCH] = {"batch", 2, 4, 0, 0, 0, 0, run_batch},
    [PLAN_CONV_FWD] = {"conv_fwd", 1, 3, 0, 1u << PLAN_B, 0, 0, run_conv_fwd},
    [PLAN_CONV_BWD] = {"conv_bwd", 3, 3, 1u << PLAN_DX | 1u << PLAN_DB, 0, 1u << PLAN_DX, 0,
                       run_conv_bwd},
    [PLAN_BN_FWD_TRAIN] = {"bn_fwd_train", 5, 3, 0, 0, 0,
                           1u << PLAN_RUNNING_MEAN | 1u << PLAN_RUNNING_VAR, run_bn_fwd_train},
    [PLAN_BN_FWD_EVAL] = {"bn_fwd_eval", 1, 5, 0, 0, 0, 0, run_bn_fwd_eval},
    [PLAN_BN_BWD] = {"bn_bwd", 3, 5, 1u << PLAN_DX, 0, 1u << PLAN_DX, 0, run_bn_bwd},
    [PLAN_ACT_FWD] = {"act_fwd", 1, 1, 0, 0, 0, 0, run_act_fwd},
    [PLAN_ACT_BWD] = {"act_bwd", 1, 2, 0, 0, 1u << PLAN_DX, 0, run_act_bwd},
    [PLAN_POOL_FWD] = {"pool_fwd", 1, 1, 0, 0, 0, 0, run_pool_fwd},
    [PLAN_POOL_BWD] = {"pool_bwd", 1, 3, 0, 0, 1u << PLAN_DX, 0, run_pool_bwd},
    [PLAN_CONCAT_FWD] = {"concat_fwd", 1, VAR, 0, 0, 0, 0, run_concat_fwd},
    [PLAN_CONCAT_BWD] = {"concat_bwd", VAR, 1, ALL, 0, ALL, 0, run_concat_bwd},
    [PLAN_ADD_FWD] = {"add_fwd", 1, 2, 0, 0, 0, 0, run_add_fwd},
    [PLAN_SCALE_FWD] = {"scale_fwd", 1, 1, 0, 0, 0, 0, run_scale_fwd},
    [PLAN_SCALED_COPY] = {"scaled_copy", 1, 1, 0, 0, 1u << PLAN_DX, 0, run_scaled_copy},
    [PLAN_FLATTEN_FWD] = {"flatten_fwd", 1, 1, 0, 0, 0, 0, run_flatten_fwd},
    [PLAN_FLATTEN_BWD] = {"flatten_bwd", 1, 1, 0, 0, 1u << PLAN_DX, 0, run_flatten_bwd},
    [PLAN_LINEAR_FWD] = {"linear_fwd", 1, 3, 0, 1u << PLAN_B, 0, 0, run_linear_fwd},
    [PLAN_LINEAR_BWD] = {"linear_bwd", 3, 3, 1u << PLAN_DX | 1u << PLAN_DB, 0, 1u << PLAN_DX,
                         0, run_linear_bwd},
    [PLAN_XENT_FWD] = {"xent_fwd", 2, 2, 0, 0, 0, 1u << PLAN_XENT_STATS, run_xent_fwd},
    [PLAN_XENT_BWD] = {"xent_bwd", 1, 2, 0, 0, 0, 0, run_xent_bwd},
    [PLAN_SGD] = {"sgd", 0, 2, 0, 0, 0, 0, run_sgd},
    [PLAN_CURSOR_ADVANCE] = {"cursor_advance", 1, 0, 0, 0, 0, 1u << PLAN_CURSOR,
                             run_cursor_advance},
    [PLAN_MUON] = {"muon", 0, 2, 0, 0, 0, 0, run_muon},
};

#undef VAR
#undef ALL

const struct plan_op_desc *plan_op_desc(enum plan_op op)
{
    return (unsigned)op < PLAN_OP_COUNT && plan_ops[op].name ? &plan_ops[op] : NULL;
}

const char *plan_op_name(enum plan_op op)
{
    const struct plan_op_desc *d = plan_op_desc(op);
    return d ? d->name : "?";
}

/* ---------------------------------------------------------------- nodes */

void plan_node_init(struct plan_node *n, enum plan_op op)
{
    const struct plan_op_desc *d = plan_op_desc(op);
    memset(n, 0, sizeof(*n));
    n->op = op;
    n->layer = -1;
    n->n_dst = d && d->n_dst != PLAN_VARIADIC ? d->n_dst : 0;
    n->n_src = d && d->n_src != PLAN_VARIADIC ? d->n_src : 0;
}

void plan_node_set_tensors(struct plan_node *n, struct tensor *const *dst, int nd,
                           const struct tensor *const *src, int ns)
{
    memset(n->dst, 0, sizeof(n->dst));
    memset(n->src, 0, sizeof(n->src));
    n->n_dst = nd < PLAN_NODE_MAX_DST ? nd : PLAN_NODE_MAX_DST;
    n->n_src = ns < PLAN_NODE_MAX_SRC ? ns : PLAN_NODE_MAX_SRC;
    for (int i = 0; i < n->n_dst; i++) n->dst[i] = dst[i];
    for (int i = 0; i < n->n_src; i++) n->src[i] = src[i];
}

/* Whether a node's count fits its row's: the row's own, or a variadic 1 ..
 * PLAN_MAX_CONCAT. */
static int count_fits(int count, int row)
{
    return row == PLAN_VARIADIC ? count >= 1 && count <= PLAN_MAX_CONCAT : count == row;
}

int plan_node_check(const struct plan_node *n)
{
    int rc = DR_OK, writes = 0;
    const struct plan_op_desc *d = plan_op_desc(n->op);
    EXPECT(d, "a plan node of unknown kind %d", (int)n->op);
    EXPECT(count_fits(n->n_dst, d->n_dst) && count_fits(n->n_src, d->n_src),
           "plan node %s: %d outputs and %d inputs", d->name, n->n_dst, n->n_src);
    for (int i = 0; i < PLAN_NODE_MAX_DST; i++) {
        const int in = i < n->n_dst;
        EXPECT(in ? n->dst[i] || ((d->opt_dst >> i) & 1u) : !n->dst[i],
               "plan node %s: output %d %s", d->name, i, in ? "missing" : "past the count");
        writes += in && n->dst[i];
    }
    EXPECT(n->n_dst == 0 || writes > 0, "plan node %s: none of its %d outputs given", d->name,
           n->n_dst);
    for (int i = 0; i < PLAN_NODE_MAX_SRC; i++) {
        const int in = i < n->n_src;
        EXPECT(in ? n->src[i] || ((d->opt_src >> i) & 1u) : !n->src[i],
               "plan node %s: input %d %s", d->name, i, in ? "missing" : "past the count");
    }
    EXPECT((n->acc & ~d->acc_dst) == 0 && (n->acc >> n->n_dst) == 0,
           "plan node %s: accumulate flags %#x on outputs that cannot take them", d->name,
           n->acc);
cleanup:
    return rc;
}

struct plan_node *plan_append(struct plan *p, enum plan_op op, enum plan_phase phase, int layer)
{
    if (grow_reserve(&p->nodes, &p->cap, p->count + 1, 64, sizeof(*p->nodes)) != DR_OK)
        return NULL;
    struct plan_node *n = &p->nodes[p->count++];
    plan_node_init(n, op);
    n->phase = phase;
    n->layer = layer;
    return n;
}

/* Tells the backend p last ran on to forget it, and forgets that backend. */
static void plan_forget_backend(struct plan *p)
{
    if (p->ran_on.ops && p->ran_on.ops->plan_forget) p->ran_on.ops->plan_forget(p->ran_on.ctx, p);
    p->ran_on.ops = NULL;
    p->ran_on.ctx = NULL;
}

void plan_free(struct plan *p)
{
    if (!p) return;
    plan_forget_backend(p);
    free(p->nodes);
    memset(p, 0, sizeof(*p));
}

/* The list plan_node_tensors builds. */
struct tensor_list {
    const struct tensor **ts;
    int *written;
    int count;
};

static void list_add(struct tensor_list *l, const struct tensor *t, int written)
{
    if (!t || l->count >= PLAN_NODE_MAX_TENSORS) return;
    l->ts[l->count] = t;
    l->written[l->count] = written;
    l->count++;
}

int plan_node_tensors(const struct tensor **ts, int *written, const struct plan_node *n)
{
    struct tensor_list l = {ts, written, 0};
    const struct plan_op_desc *d = plan_op_desc(n->op);
    if (!d) return 0;
    const unsigned reads_back = n->acc | d->rw_dst;
    for (int i = 0; i < n->n_dst && i < PLAN_NODE_MAX_DST; i++) {
        list_add(&l, n->dst[i], 1);
        if ((reads_back >> i) & 1u) list_add(&l, n->dst[i], 0);
    }
    for (int i = 0; i < n->n_src && i < PLAN_NODE_MAX_SRC; i++) list_add(&l, n->src[i], 0);
    return l.count;
}

/* FNV-1a over bytes, continued from h. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++) {
        h ^= b[i];
        h *= 1099511628211ull;
    }
    return h;
}

static uint64_t hash_tensor(uint64_t h, const struct tensor *t)
{
    if (!t) return hash_bytes(h, "-", 1);
    h = hash_bytes(h, &t->data, sizeof(t->data));
    int dims[5] = {(int)t->kind, t->n, t->c, t->h, t->w};
    return hash_bytes(h, dims, sizeof(dims));
}

/* A slot's handle (its address: aliases are the same handle) and its tensor. */
static uint64_t hash_slot(uint64_t h, const struct tensor *t)
{
    h = hash_bytes(h, &t, sizeof(t));
    return hash_tensor(h, t);
}

uint64_t plan_signature(const struct plan *p)
{
    uint64_t h = 14695981039346656037ull;
    h = hash_bytes(h, &p->count, sizeof(p->count));
    for (int i = 0; i < p->count; i++) {
        const struct plan_node *n = &p->nodes[i];
        const int head[6] = {(int)n->op, (int)n->phase, n->layer, n->n_dst, n->n_src,
                             (int)n->acc};
        h = hash_bytes(h, head, sizeof(head));
        /* the parameters' bytes (zeroed by plan_node_init, so unused bytes are equal) */
        h = hash_bytes(h, &n->par, sizeof(n->par));
        for (int k = 0; k < n->n_dst && k < PLAN_NODE_MAX_DST; k++) h = hash_slot(h, n->dst[k]);
        for (int k = 0; k < n->n_src && k < PLAN_NODE_MAX_SRC; k++) h = hash_slot(h, n->src[k]);
        if (n->op == PLAN_SGD)
            for (int k = 0; k < n->par.sgd.count; k++) {
                const struct sgd_item *it = &n->par.sgd.items[k];
                h = hash_slot(h, it->w);
                h = hash_slot(h, it->v);
                h = hash_slot(h, it->dw);
                h = hash_bytes(h, &it->lr_scale, sizeof(it->lr_scale));
                h = hash_bytes(h, &it->wd, sizeof(it->wd));
                h = hash_bytes(h, &it->train_epochs, sizeof(it->train_epochs));
            }
        if (n->op == PLAN_MUON)   /* Muon's items, as SGD's */
            for (int k = 0; k < n->par.muon.count; k++) {
                const struct sgd_item *it = &n->par.muon.items[k];
                h = hash_slot(h, it->w);
                h = hash_slot(h, it->v);
                h = hash_slot(h, it->dw);
                h = hash_bytes(h, &it->lr_scale, sizeof(it->lr_scale));
                h = hash_bytes(h, &it->train_epochs, sizeof(it->train_epochs));
            }
    }
    return h;
}

int plan_run_node(const struct backend *b, const struct plan_node *n)
{
    int rc = DR_OK;
    TRY(plan_node_check(n));
    rc = plan_op_desc(n->op)->run(b, n);
cleanup:
    return rc;
}

int plan_run_each(const struct backend *b, const struct plan *p, plan_node_hook hook, void *user)
{
    int rc = DR_OK;
    for (int i = 0; i < p->count; i++) {
        const struct plan_node *n = &p->nodes[i];
        if (hook) TRY(hook(user, n, 0));
        TRY(plan_run_node(b, n));
        if (hook) TRY(hook(user, n, 1));
    }
cleanup:
    return rc;
}

int plan_compute(const struct backend *b, struct plan *p)
{
    if (!b->ops->plan_compute) return plan_run_each(b, p, NULL, NULL);
    if (p->ran_on.ops != b->ops || p->ran_on.ctx != b->ctx) {
        plan_forget_backend(p);   /* at most one backend keeps anything about p */
        p->ran_on = *b;
    }
    return b->ops->plan_compute(b->ctx, p);
}

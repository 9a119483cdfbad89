/* The step as data (kernels/plan.h): building a plan, listing what each node reads and
 * writes, its signature, and the reference node-by-node execution through the table. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "../base/alloc.h"
#include "../base/grow.h"
#include "../base/status.h"

static const char *const plan_op_names[PLAN_OP_COUNT] = {
    [PLAN_BATCH] = "batch",
    [PLAN_CONV_FWD] = "conv_fwd",
    [PLAN_CONV_BWD] = "conv_bwd",
    [PLAN_BN_FWD_TRAIN] = "bn_fwd_train",
    [PLAN_BN_FWD_EVAL] = "bn_fwd_eval",
    [PLAN_BN_BWD] = "bn_bwd",
    [PLAN_ACT_FWD] = "act_fwd",
    [PLAN_ACT_BWD] = "act_bwd",
    [PLAN_POOL_FWD] = "pool_fwd",
    [PLAN_POOL_BWD] = "pool_bwd",
    [PLAN_CONCAT_FWD] = "concat_fwd",
    [PLAN_CONCAT_BWD] = "concat_bwd",
    [PLAN_ADD_FWD] = "add_fwd",
    [PLAN_SCALE_FWD] = "scale_fwd",
    [PLAN_SCALED_COPY] = "scaled_copy",
    [PLAN_FLATTEN_FWD] = "flatten_fwd",
    [PLAN_FLATTEN_BWD] = "flatten_bwd",
    [PLAN_LINEAR_FWD] = "linear_fwd",
    [PLAN_LINEAR_BWD] = "linear_bwd",
    [PLAN_XENT_FWD] = "xent_fwd",
    [PLAN_XENT_BWD] = "xent_bwd",
    [PLAN_SGD] = "sgd",
    [PLAN_CURSOR_ADVANCE] = "cursor_advance",
};

const char *plan_op_name(enum plan_op op)
{
    return (unsigned)op < PLAN_OP_COUNT && plan_op_names[op] ? plan_op_names[op] : "?";
}

struct plan_node *plan_append(struct plan *p, enum plan_op op, enum plan_phase phase, int layer)
{
    if (grow_reserve(&p->nodes, &p->cap, p->count + 1, 64, sizeof(*p->nodes)) != DR_OK)
        return NULL;
    struct plan_node *n = &p->nodes[p->count++];
    memset(n, 0, sizeof(*n));
    n->op = op;
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

/* An output that the op adds to (accumulate) is read too. */
static void list_out(struct tensor_list *l, const struct tensor *t, int accumulate)
{
    list_add(l, t, 1);
    if (accumulate) list_add(l, t, 0);
}

int plan_node_tensors(const struct tensor **ts, int *written, const struct plan_node *n)
{
    struct tensor_list l = {ts, written, 0};
    switch (n->op) {
    case PLAN_BATCH:
        list_out(&l, n->u.batch.x, 0);
        list_out(&l, n->u.batch.labels, 0);
        list_add(&l, n->u.batch.images, 0);
        list_add(&l, n->u.batch.image_labels, 0);
        list_add(&l, n->u.batch.rows, 0);
        list_add(&l, n->u.batch.cursor, 0);
        break;
    case PLAN_CONV_FWD:
        list_out(&l, n->u.conv_fwd.y, 0);
        list_add(&l, n->u.conv_fwd.x, 0);
        list_add(&l, n->u.conv_fwd.w, 0);
        list_add(&l, n->u.conv_fwd.b, 0);
        break;
    case PLAN_CONV_BWD:
        list_out(&l, n->u.conv_bwd.dx, n->u.conv_bwd.accumulate);
        list_out(&l, n->u.conv_bwd.dw, 0);
        list_out(&l, n->u.conv_bwd.db, 0);
        list_add(&l, n->u.conv_bwd.dy, 0);
        list_add(&l, n->u.conv_bwd.x, 0);
        list_add(&l, n->u.conv_bwd.w, 0);
        break;
    case PLAN_BN_FWD_TRAIN:
        list_out(&l, n->u.bn_fwd_train.y, 0);
        list_out(&l, n->u.bn_fwd_train.save_mean, 0);
        list_out(&l, n->u.bn_fwd_train.save_invstd, 0);
        list_out(&l, n->u.bn_fwd_train.running_mean, 1);
        list_out(&l, n->u.bn_fwd_train.running_var, 1);
        list_add(&l, n->u.bn_fwd_train.x, 0);
        list_add(&l, n->u.bn_fwd_train.gamma, 0);
        list_add(&l, n->u.bn_fwd_train.beta, 0);
        break;
    case PLAN_BN_FWD_EVAL:
        list_out(&l, n->u.bn_fwd_eval.y, 0);
        list_add(&l, n->u.bn_fwd_eval.x, 0);
        list_add(&l, n->u.bn_fwd_eval.gamma, 0);
        list_add(&l, n->u.bn_fwd_eval.beta, 0);
        list_add(&l, n->u.bn_fwd_eval.running_mean, 0);
        list_add(&l, n->u.bn_fwd_eval.running_var, 0);
        break;
    case PLAN_BN_BWD:
        list_out(&l, n->u.bn_bwd.dx, n->u.bn_bwd.accumulate);
        list_out(&l, n->u.bn_bwd.dgamma, 0);
        list_out(&l, n->u.bn_bwd.dbeta, 0);
        list_add(&l, n->u.bn_bwd.dy, 0);
        list_add(&l, n->u.bn_bwd.x, 0);
        list_add(&l, n->u.bn_bwd.gamma, 0);
        list_add(&l, n->u.bn_bwd.save_mean, 0);
        list_add(&l, n->u.bn_bwd.save_invstd, 0);
        break;
    case PLAN_ACT_FWD:
        list_out(&l, n->u.act_fwd.y, 0);
        list_add(&l, n->u.act_fwd.x, 0);
        break;
    case PLAN_ACT_BWD:
        list_out(&l, n->u.act_bwd.dx, n->u.act_bwd.accumulate);
        list_add(&l, n->u.act_bwd.dy, 0);
        list_add(&l, n->u.act_bwd.x, 0);
        break;
    case PLAN_POOL_FWD:
        list_out(&l, n->u.pool_fwd.y, 0);
        list_add(&l, n->u.pool_fwd.x, 0);
        break;
    case PLAN_POOL_BWD:
        list_out(&l, n->u.pool_bwd.dx, n->u.pool_bwd.accumulate);
        list_add(&l, n->u.pool_bwd.dy, 0);
        list_add(&l, n->u.pool_bwd.x, 0);
        list_add(&l, n->u.pool_bwd.y, 0);
        break;
    case PLAN_CONCAT_FWD:
        list_out(&l, n->u.concat_fwd.y, 0);
        for (int i = 0; i < n->u.concat_fwd.count && i < PLAN_MAX_CONCAT; i++)
            list_add(&l, n->u.concat_fwd.xs[i], 0);
        break;
    case PLAN_CONCAT_BWD:
        for (int i = 0; i < n->u.concat_bwd.count && i < PLAN_MAX_CONCAT; i++)
            list_out(&l, n->u.concat_bwd.dxs[i], n->u.concat_bwd.accumulate[i]);
        list_add(&l, n->u.concat_bwd.dy, 0);
        break;
    case PLAN_ADD_FWD:
        list_out(&l, n->u.add_fwd.y, 0);
        list_add(&l, n->u.add_fwd.a, 0);
        list_add(&l, n->u.add_fwd.b, 0);
        break;
    case PLAN_SCALE_FWD:
        list_out(&l, n->u.scale_fwd.y, 0);
        list_add(&l, n->u.scale_fwd.x, 0);
        break;
    case PLAN_SCALED_COPY:
        list_out(&l, n->u.scaled_copy.dx, n->u.scaled_copy.accumulate);
        list_add(&l, n->u.scaled_copy.dy, 0);
        break;
    case PLAN_FLATTEN_FWD:
        list_out(&l, n->u.flatten_fwd.y, 0);
        list_add(&l, n->u.flatten_fwd.x, 0);
        break;
    case PLAN_FLATTEN_BWD:
        list_out(&l, n->u.flatten_bwd.dx, n->u.flatten_bwd.accumulate);
        list_add(&l, n->u.flatten_bwd.dy, 0);
        break;
    case PLAN_LINEAR_FWD:
        list_out(&l, n->u.linear_fwd.y, 0);
        list_add(&l, n->u.linear_fwd.x, 0);
        list_add(&l, n->u.linear_fwd.w, 0);
        list_add(&l, n->u.linear_fwd.b, 0);
        break;
    case PLAN_LINEAR_BWD:
        list_out(&l, n->u.linear_bwd.dx, n->u.linear_bwd.accumulate);
        list_out(&l, n->u.linear_bwd.dw, 0);
        list_out(&l, n->u.linear_bwd.db, 0);
        list_add(&l, n->u.linear_bwd.dy, 0);
        list_add(&l, n->u.linear_bwd.x, 0);
        list_add(&l, n->u.linear_bwd.w, 0);
        break;
    case PLAN_XENT_FWD:
        list_out(&l, n->u.xent_fwd.stats, 1);
        list_out(&l, n->u.xent_fwd.probs, 0);
        list_add(&l, n->u.xent_fwd.logits, 0);
        list_add(&l, n->u.xent_fwd.labels, 0);
        break;
    case PLAN_XENT_BWD:
        list_out(&l, n->u.xent_bwd.dlogits, 0);
        list_add(&l, n->u.xent_bwd.probs, 0);
        list_add(&l, n->u.xent_bwd.labels, 0);
        break;
    case PLAN_SGD:
        /* the items' tensors are too many for the list: the table and cursor only; a
         * backend that analyses parameters reads the items */
        list_add(&l, n->u.sgd.lr_table, 0);
        list_add(&l, n->u.sgd.cursor, 0);
        break;
    case PLAN_CURSOR_ADVANCE:
        list_out(&l, n->u.cursor_advance.cursor, 1);
        break;
    case PLAN_OP_COUNT:
        break;
    }
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

uint64_t plan_signature(const struct plan *p)
{
    uint64_t h = 14695981039346656037ull;
    const struct tensor *ts[PLAN_NODE_MAX_TENSORS];
    int written[PLAN_NODE_MAX_TENSORS];
    h = hash_bytes(h, &p->count, sizeof(p->count));
    for (int i = 0; i < p->count; i++) {
        const struct plan_node *n = &p->nodes[i];
        /* the node's bytes: op, attributes and handle addresses (the union is zeroed by
         * plan_append, so unused bytes are equal) */
        h = hash_bytes(h, n, sizeof(*n));
        int count = plan_node_tensors(ts, written, n);
        for (int k = 0; k < count; k++) h = hash_tensor(h, ts[k]);
        if (n->op == PLAN_SGD)
            for (int k = 0; k < n->u.sgd.count; k++) {
                const struct sgd_item *it = &n->u.sgd.items[k];
                h = hash_tensor(h, it->w);
                h = hash_tensor(h, it->v);
                h = hash_tensor(h, it->dw);
                h = hash_bytes(h, &it->lr_scale, sizeof(it->lr_scale));
                h = hash_bytes(h, &it->wd, sizeof(it->wd));
                h = hash_bytes(h, &it->train_epochs, sizeof(it->train_epochs));
            }
    }
    return h;
}

int plan_run_node(const struct backend *b, const struct plan_node *n)
{
    const struct backend_ops *o = b->ops;
    void *c = b->ctx;
    switch (n->op) {
    case PLAN_BATCH:
        return o->augment_step(c, n->u.batch.x, n->u.batch.labels, n->u.batch.images,
                               n->u.batch.image_labels, n->u.batch.rows, n->u.batch.cursor,
                               n->u.batch.stride, n->u.batch.aug, n->u.batch.seed);
    case PLAN_CONV_FWD:
        return o->conv_forward(c, n->u.conv_fwd.y, n->u.conv_fwd.x, n->u.conv_fwd.w,
                               n->u.conv_fwd.b, &n->u.conv_fwd.a);
    case PLAN_CONV_BWD:
        return o->conv_backward(c, n->u.conv_bwd.dx, n->u.conv_bwd.dw, n->u.conv_bwd.db,
                                n->u.conv_bwd.dy, n->u.conv_bwd.x, n->u.conv_bwd.w,
                                &n->u.conv_bwd.a, n->u.conv_bwd.accumulate);
    case PLAN_BN_FWD_TRAIN:
        return o->bn_forward_train(
            c, n->u.bn_fwd_train.y, n->u.bn_fwd_train.save_mean, n->u.bn_fwd_train.save_invstd,
            n->u.bn_fwd_train.running_mean, n->u.bn_fwd_train.running_var, n->u.bn_fwd_train.x,
            n->u.bn_fwd_train.gamma, n->u.bn_fwd_train.beta, &n->u.bn_fwd_train.a);
    case PLAN_BN_FWD_EVAL:
        return o->bn_forward_eval(c, n->u.bn_fwd_eval.y, n->u.bn_fwd_eval.x, n->u.bn_fwd_eval.gamma,
                                  n->u.bn_fwd_eval.beta, n->u.bn_fwd_eval.running_mean,
                                  n->u.bn_fwd_eval.running_var, &n->u.bn_fwd_eval.a);
    case PLAN_BN_BWD:
        return o->bn_backward(c, n->u.bn_bwd.dx, n->u.bn_bwd.dgamma, n->u.bn_bwd.dbeta,
                              n->u.bn_bwd.dy, n->u.bn_bwd.x, n->u.bn_bwd.gamma,
                              n->u.bn_bwd.save_mean, n->u.bn_bwd.save_invstd,
                              n->u.bn_bwd.accumulate);
    case PLAN_ACT_FWD:
        return o->act_forward(c, n->u.act_fwd.y, n->u.act_fwd.x, n->u.act_fwd.kind,
                              n->u.act_fwd.alpha);
    case PLAN_ACT_BWD:
        return o->act_backward(c, n->u.act_bwd.dx, n->u.act_bwd.dy, n->u.act_bwd.x,
                               n->u.act_bwd.kind, n->u.act_bwd.alpha, n->u.act_bwd.accumulate);
    case PLAN_POOL_FWD:
        return o->pool_forward(c, n->u.pool_fwd.y, n->u.pool_fwd.x, &n->u.pool_fwd.a);
    case PLAN_POOL_BWD:
        return o->pool_backward(c, n->u.pool_bwd.dx, n->u.pool_bwd.dy, n->u.pool_bwd.x,
                                n->u.pool_bwd.y, &n->u.pool_bwd.a, n->u.pool_bwd.accumulate);
    case PLAN_CONCAT_FWD:
        return o->concat_forward(c, n->u.concat_fwd.y, n->u.concat_fwd.xs, n->u.concat_fwd.count);
    case PLAN_CONCAT_BWD: {
        struct tensor *const *dxs = n->u.concat_bwd.dxs;
        return o->concat_backward(c, dxs, n->u.concat_bwd.dy, n->u.concat_bwd.count,
                                  n->u.concat_bwd.accumulate);
    }
    case PLAN_ADD_FWD:
        return o->add_forward(c, n->u.add_fwd.y, n->u.add_fwd.a, n->u.add_fwd.b);
    case PLAN_SCALE_FWD:
        return o->scale_forward(c, n->u.scale_fwd.y, n->u.scale_fwd.x, n->u.scale_fwd.s);
    case PLAN_SCALED_COPY:
        return o->scaled_copy(c, n->u.scaled_copy.dx, n->u.scaled_copy.dy, n->u.scaled_copy.s,
                              n->u.scaled_copy.accumulate);
    case PLAN_FLATTEN_FWD:
        return o->flatten_forward(c, n->u.flatten_fwd.y, n->u.flatten_fwd.x);
    case PLAN_FLATTEN_BWD:
        return o->flatten_backward(c, n->u.flatten_bwd.dx, n->u.flatten_bwd.dy,
                                   n->u.flatten_bwd.accumulate);
    case PLAN_LINEAR_FWD:
        return o->linear_forward(c, n->u.linear_fwd.y, n->u.linear_fwd.x, n->u.linear_fwd.w,
                                 n->u.linear_fwd.b);
    case PLAN_LINEAR_BWD:
        return o->linear_backward(c, n->u.linear_bwd.dx, n->u.linear_bwd.dw, n->u.linear_bwd.db,
                                  n->u.linear_bwd.dy, n->u.linear_bwd.x, n->u.linear_bwd.w,
                                  n->u.linear_bwd.accumulate);
    case PLAN_XENT_FWD:
        return o->xent_forward(c, n->u.xent_fwd.stats, n->u.xent_fwd.probs, n->u.xent_fwd.logits,
                               n->u.xent_fwd.labels, n->u.xent_fwd.smoothing);
    case PLAN_XENT_BWD:
        return o->xent_backward(c, n->u.xent_bwd.dlogits, n->u.xent_bwd.probs, n->u.xent_bwd.labels,
                                n->u.xent_bwd.smoothing, n->u.xent_bwd.scale);
    case PLAN_SGD:
        return o->sgd_multi(c, n->u.sgd.items, n->u.sgd.count, n->u.sgd.lr_table, n->u.sgd.cursor,
                            n->u.sgd.momentum, n->u.sgd.nesterov);
    case PLAN_CURSOR_ADVANCE:
        return o->cursor_advance(c, n->u.cursor_advance.cursor);
    case PLAN_OP_COUNT:
        break;
    }
    return dr_report(DR_ERR_INTERNAL, __FILE__, __LINE__, NULL, "a plan node of unknown kind %d",
                     (int)n->op);
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

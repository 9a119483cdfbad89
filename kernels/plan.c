/* The step as data (kernels/plan.h): building a plan, checking a node against its op's
 * row (kernels/plan_ops.c holds the table and the shape rules), listing what each node
 * reads and writes, the signature, the reference node-by-node execution, the fused ops'
 * reference decompositions, and a lone node run as a plan of one. */
#include "plan.h"

#include <stdlib.h>
#include <string.h>

#include "../base/alloc.h"
#include "../base/grow.h"
#include "../base/status.h"

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
    const struct plan_op_desc *d = plan_op_desc(n->op);
    n->n_dst = nd < PLAN_NODE_MAX_DST ? nd : PLAN_NODE_MAX_DST;
    n->n_src = ns < PLAN_NODE_MAX_SRC ? ns : PLAN_NODE_MAX_SRC;
    for (int i = 0; i < n->n_dst; i++) n->dst[i] = dst[i];
    for (int i = 0; i < n->n_src; i++) n->src[i] = src[i];
    /* a fixed op keeps its row's counts, the slots not given NULL */
    if (d && d->n_dst != PLAN_VARIADIC && n->n_dst < d->n_dst) n->n_dst = d->n_dst;
    if (d && d->n_src != PLAN_VARIADIC && n->n_src < d->n_src) n->n_src = d->n_src;
}

/* ---------------------------------------------------------------- the fused ops */

/* Appends to parts[*count] a node of kind op in n's phase and layer. */
static struct plan_node *part(struct plan_node *parts, int *count, const struct plan_node *n,
                              enum plan_op op)
{
    struct plan_node *q = &parts[(*count)++];
    plan_node_init(q, op);
    q->phase = n->phase;
    q->layer = n->layer;
    return q;
}

/* The activation, and the residual add or the max pool, after a fused batch norm's
 * forward (either kind). */
static void act_and_after(struct plan_node *parts, int *count, const struct plan_node *n)
{
    struct plan_node *a = part(parts, count, n, PLAN_ACT_FWD);
    plan_node_set_tensors(a, PLAN_DSTS(n->dst[PLAN_BNA_ACT]), PLAN_SRCS(n->dst[PLAN_Y]));
    a->par.act.kind = n->par.bn_act.kind;
    a->par.act.alpha = n->par.bn_act.alpha;
    if (!n->dst[PLAN_BNA_OUT]) return;
    const struct tensor *act = n->dst[PLAN_BNA_ACT], *res = n->src[PLAN_BNA_RES];
    if (n->par.bn_act.pool.kh > 0) {
        struct plan_node *q = part(parts, count, n, PLAN_POOL_FWD);
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_OUT]), PLAN_SRCS(act));
        q->par.pool = n->par.bn_act.pool;
        return;
    }
    struct plan_node *q = part(parts, count, n, PLAN_ADD_FWD);
    if (n->par.bn_act.res_first)
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_OUT]), PLAN_SRCS(res, act));
    else
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_OUT]), PLAN_SRCS(act, res));
}

/* The backward's parts before the batch norm's: the max pool's backward (with a pool),
 * then the activation's, into the batch norm's dy. */
static void bwd_before_bn(struct plan_node *parts, int *count, const struct plan_node *n)
{
    const struct tensor *d = n->src[PLAN_DY];
    if (n->par.bn_act.pool.kh > 0) {
        struct plan_node *q = part(parts, count, n, PLAN_POOL_BWD);
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_DPOOL]),
                              PLAN_SRCS(d, n->src[PLAN_BNA_BWD_ACT],
                                        n->src[PLAN_BNA_BWD_POOL_Y]));
        q->par.pool = n->par.bn_act.pool;
        d = n->dst[PLAN_BNA_DPOOL];
    }
    struct plan_node *q = part(parts, count, n, PLAN_ACT_BWD);
    plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_DACT]),
                          PLAN_SRCS(d, n->src[PLAN_BNA_BWD_Y]));
    q->par.act.kind = n->par.bn_act.kind;
    q->par.act.alpha = n->par.bn_act.alpha;
}

int plan_fused_expand(struct plan_node *parts, const struct plan_node *n)
{
    int count = 0;
    struct plan_node *q = NULL;
    switch (n->op) {
    case PLAN_BN_ACT_TRAIN:
        if (n->par.bn_act.add_in) {
            q = part(parts, &count, n, PLAN_ADD_FWD);
            plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_BNA_SUM]),
                                  PLAN_SRCS(n->src[PLAN_BNA_ADD_A], n->src[PLAN_BNA_ADD_B]));
        }
        q = part(parts, &count, n, PLAN_BN_FWD_TRAIN);
        plan_node_set_tensors(q,
                              PLAN_DSTS(n->dst[PLAN_Y], n->dst[PLAN_SAVE_MEAN],
                                        n->dst[PLAN_SAVE_INVSTD], n->dst[PLAN_RUNNING_MEAN],
                                        n->dst[PLAN_RUNNING_VAR]),
                              PLAN_SRCS(n->src[PLAN_X], n->src[PLAN_GAMMA], n->src[PLAN_BETA]));
        q->par.bn = n->par.bn_act.bn;
        act_and_after(parts, &count, n);
        break;
    case PLAN_BN_ACT_EVAL:
        q = part(parts, &count, n, PLAN_BN_FWD_EVAL);
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_Y]),
                              PLAN_SRCS(n->src[PLAN_X], n->src[PLAN_GAMMA], n->src[PLAN_BETA],
                                        n->src[PLAN_BNA_RMEAN], n->src[PLAN_BNA_RVAR]));
        q->par.bn = n->par.bn_act.bn;
        act_and_after(parts, &count, n);
        break;
    case PLAN_CONV_FUSED_FWD:
        q = part(parts, &count, n, PLAN_CONV_FWD);
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_Y]),
                              PLAN_SRCS(n->src[PLAN_X], n->src[PLAN_W], NULL));
        q->par.conv = n->par.conv;
        if (n->dst[PLAN_CF_OUT]) {   /* the sum's order does not change its bits */
            q = part(parts, &count, n, PLAN_ADD_FWD);
            plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_CF_OUT]),
                                  PLAN_SRCS(n->dst[PLAN_Y], n->src[PLAN_CF_RES]));
        }
        break;
    case PLAN_CONV_FUSED_BWD:
        q = part(parts, &count, n, PLAN_CONV_BWD);
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_DX], n->dst[PLAN_DW], NULL),
                              PLAN_SRCS(n->src[PLAN_DY], n->src[PLAN_BWD_X], n->src[PLAN_BWD_W]));
        q->par.conv = n->par.conv;
        q->acc = n->acc & 1u;   /* dx's accumulate flag */
        if (n->dst[PLAN_CB_DZ]) {
            q = part(parts, &count, n, PLAN_ACT_BWD);
            plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_CB_DZ]),
                                  PLAN_SRCS(n->dst[PLAN_DX], n->src[PLAN_CB_BN_Y]));
            q->par.act.kind = ACT_RELU;
        }
        break;
    case PLAN_BN_APPLY_BWD:
        q = part(parts, &count, n, PLAN_BN_BWD);
        plan_node_set_tensors(q,
                              PLAN_DSTS(n->dst[PLAN_DX], n->dst[PLAN_DGAMMA], n->dst[PLAN_DBETA]),
                              PLAN_SRCS(n->src[PLAN_DY], n->src[PLAN_BWD_X],
                                        n->src[PLAN_BWD_GAMMA], n->src[PLAN_BWD_SAVE_MEAN],
                                        n->src[PLAN_BWD_SAVE_INVSTD]));
        q->acc = n->acc & 1u;
        break;
    case PLAN_ADD_PRO:
        q = part(parts, &count, n, PLAN_ADD_FWD);
        plan_node_set_tensors(q, PLAN_DSTS(n->dst[PLAN_Y]),
                              PLAN_SRCS(n->src[PLAN_ADD_A], n->src[PLAN_ADD_B]));
        break;
    case PLAN_BN_ACT_BWD:
        bwd_before_bn(parts, &count, n);
        q = part(parts, &count, n, PLAN_BN_BWD);
        plan_node_set_tensors(q,
                              PLAN_DSTS(n->dst[PLAN_DX], n->dst[PLAN_DGAMMA], n->dst[PLAN_DBETA]),
                              PLAN_SRCS(n->dst[PLAN_BNA_DACT], n->src[PLAN_BWD_X],
                                        n->src[PLAN_BWD_GAMMA], n->src[PLAN_BWD_SAVE_MEAN],
                                        n->src[PLAN_BWD_SAVE_INVSTD]));
        q->acc = n->acc & 1u;   /* dx's accumulate flag */
        break;
    default: break;   /* a plain op */
    }
    return count;
}

int plan_op_is_fused(enum plan_op op)
{
#define PLAN_FUSED_CASE_(id, name) case PLAN_##id:
    switch (op) {
    PLAN_FUSED_OPS(PLAN_FUSED_CASE_)
        return 1;
    default: return 0;
    }
#undef PLAN_FUSED_CASE_
}

/* ---------------------------------------------------------------- checks */

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
    TRY(d->rule(n));
    if (plan_op_is_fused(n->op)) {   /* every part as a node of its own */
        struct plan_node parts[PLAN_FUSED_MAX_PARTS];
        const int count = plan_fused_expand(parts, n);
        for (int i = 0; i < count; i++) TRY(plan_node_check(&parts[i]));
    }
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
        if (n->op == PLAN_LERP)
            for (int k = 0; k < n->par.lerp.count; k++) {
                h = hash_slot(h, n->par.lerp.items[k].avg);
                h = hash_slot(h, n->par.lerp.items[k].w);
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
    struct plan_node parts[PLAN_FUSED_MAX_PARTS];
    TRY(plan_node_check(n));
    if (!b->ops->supports(b->ctx, n) && plan_op_is_fused(n->op)) {
        const int count = plan_fused_expand(parts, n);   /* its reference decomposition */
        for (int i = 0; i < count; i++) TRY(plan_run_node(b, &parts[i]));
        goto cleanup;
    }
    EXPECT(b->ops->supports(b->ctx, n), "the %s engine does not run %s nodes", b->ops->name,
           plan_op_name(n->op));
    rc = b->ops->run_node(b->ctx, n);
cleanup:
    return rc;
}

int plan_run_one(const struct backend *b, const struct plan_node *n)
{
    struct plan_node one = *n;
    const struct plan p = {&one, 1, 1, 0, {NULL, NULL}};
    return plan_run_each(b, &p, NULL, NULL);
}

int plan_run_op(const struct backend *b, enum plan_op op, struct tensor *const *dst, int nd,
                const struct tensor *const *src, int ns, unsigned acc,
                const union plan_params *par)
{
    struct plan_node n;
    plan_node_init(&n, op);
    plan_node_set_tensors(&n, dst, nd, src, ns);
    n.acc = acc;
    if (par) n.par = *par;
    return plan_run_one(b, &n);
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

int plan_check(const struct plan *p)
{
    int rc = DR_OK;
    for (int i = 0; i < p->count; i++) TRY(plan_node_check(&p->nodes[i]));
cleanup:
    return rc;
}

int plan_compute(const struct backend *b, struct plan *p)
{
    int rc = DR_OK;
    if (!b->ops->plan_compute) return plan_run_each(b, p, NULL, NULL);
    TRY(plan_check(p));   /* an engine's fused paths take the nodes as checked */
    if (p->ran_on.ops != b->ops || p->ran_on.ctx != b->ctx) {
        plan_forget_backend(p);   /* at most one backend keeps anything about p */
        p->ran_on = *b;
    }
    rc = b->ops->plan_compute(b->ctx, p);
cleanup:
    return rc;
}

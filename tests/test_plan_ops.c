/* Tests of the plan's op table (kernels/plan.h plan_op_desc) against the ops: every op has
 * one consistent row (a name of its own, a shape rule, counts within the node's slots,
 * NULL / accumulate / update masks within those counts); plan_node_check refuses a node
 * whose shape leaves its row (a count, a missing slot, a slot past the count, an
 * accumulate flag the op does not take) or breaks its op's rule (a weight that does not
 * fit, a dy of the wrong plane, concat channels, a pool's kind and window, a ghost batch
 * norm's splits, an SGD item's kind, a cursor's length); the CPU engine runs every op
 * (backend_ops.supports), refuses a malformed lone node and a node it does not run before
 * touching an output, and a plan run whole gives the bits of its nodes run as lone nodes
 * (plan_run_op); and every node the builder (engine/core/model_plan.c) emits for the
 * shipped experiments' networks (a training step, an evaluation batch with and without
 * test-time views, the single-part runs' plans) has its row's counts and passes
 * plan_node_check. The shipped networks' plans are built, never run. */
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/status.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "engine/core/model.h"
#include "kernels/backend.h"
#include "kernels/plan.h"

/* ------------------------------------------------------------------ the table itself */

/* Whether mask has no bit at or above count (a fixed op's slots). */
static int within(unsigned mask, int count)
{
    return count == PLAN_VARIADIC || count >= 32 || (mask >> (unsigned)count) == 0;
}

static void test_table(void)
{
    for (int k = 0; k < PLAN_OP_COUNT; k++) {
        const struct plan_op_desc *d = plan_op_desc((enum plan_op)k);
        CHECK(d != NULL);
        if (!d) continue;
        CHECK(d->name != NULL && d->rule != NULL);
        CHECK(strcmp(plan_op_name((enum plan_op)k), d->name) == 0);
        for (int j = 0; j < k; j++) CHECK(strcmp(plan_op_desc((enum plan_op)j)->name, d->name));
        CHECK(d->n_dst == PLAN_VARIADIC || (d->n_dst >= 0 && d->n_dst <= PLAN_NODE_MAX_DST));
        CHECK(d->n_src == PLAN_VARIADIC || (d->n_src >= 0 && d->n_src <= PLAN_NODE_MAX_SRC));
        CHECK(!(d->n_dst == PLAN_VARIADIC && d->n_src == PLAN_VARIADIC));
        CHECK(within(d->opt_dst | d->acc_dst | d->rw_dst, d->n_dst));
        CHECK(within(d->opt_src, d->n_src));
        CHECK((d->acc_dst & d->rw_dst) == 0);   /* a flag or always, not both */
        /* a node made by plan_node_init has the row's fixed counts */
        struct plan_node n;
        plan_node_init(&n, (enum plan_op)k);
        CHECK(n.op == (enum plan_op)k && n.layer == -1 && n.acc == 0);
        CHECK(n.n_dst == (d->n_dst == PLAN_VARIADIC ? 0 : d->n_dst));
        CHECK(n.n_src == (d->n_src == PLAN_VARIADIC ? 0 : d->n_src));
    }
    CHECK(plan_op_desc(PLAN_OP_COUNT) == NULL);
    CHECK(strcmp(plan_op_name(PLAN_OP_COUNT), "?") == 0);
}

/* ------------------------------------------------------------------ plan_node_check */

/* Handles of the shapes a convolution (2, 3, 8, 8) -> (2, 4, 8, 8), k 3, pad 1, and a
 * concat of (2, 3, 8, 8) and (2, 4, 8, 8) take; no data (the rules read shapes). */
static struct tensor X = {NULL, TENSOR_ACT, 2, 3, 8, 8}, Y = {NULL, TENSOR_ACT, 2, 4, 8, 8};
static struct tensor W = {NULL, TENSOR_PARAM, 4, 3, 3, 3};
static struct tensor DX = {NULL, TENSOR_ACT, 2, 3, 8, 8}, DW = {NULL, TENSOR_PARAM, 4, 3, 3, 3};
static struct tensor CAT = {NULL, TENSOR_ACT, 2, 7, 8, 8};

static void test_check(void)
{
    struct plan_node n;
    struct tensor *dst3[3] = {&DX, &DW, NULL};
    const struct tensor *src3[3] = {&Y, &X, &W};

    plan_node_init(&n, PLAN_CONV_BWD);   /* dx given, no bias gradient: allowed */
    plan_node_set_tensors(&n, dst3, 3, src3, 3);
    n.par.conv = (struct conv_attr){3, 1, 1};
    CHECK(plan_node_check(&n) == DR_OK);
    n.acc = 1;   /* dx added to */
    CHECK(plan_node_check(&n) == DR_OK);
    n.acc = 2;   /* dw cannot be added to */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.acc = 0;
    n.dst[PLAN_DW] = NULL;   /* dw is not optional */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.dst[PLAN_DW] = &DW;
    n.src[PLAN_BWD_W] = NULL;   /* nor w */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[PLAN_BWD_W] = &W;
    n.n_src = 2;   /* a count the op does not have (the slot past it set) */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[2] = NULL;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.n_src = 3;
    n.src[2] = &W;
    n.src[3] = &X;   /* a slot past the count */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[3] = NULL;
    CHECK(plan_node_check(&n) == DR_OK);
    n.par.conv.k = 1;   /* the shape rule: a 3x3 weight for a 1x1 convolution */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.par.conv = (struct conv_attr){3, 2, 1};   /* stride 2: dy's plane would be 4x4 */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);

    /* a concat: 1 .. PLAN_MAX_CONCAT inputs, the count the node's, the channels summed */
    const struct tensor *xs[PLAN_MAX_CONCAT];
    struct tensor *y[1] = {&CAT};
    plan_node_init(&n, PLAN_CONCAT_FWD);
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);   /* no inputs */
    xs[0] = &X, xs[1] = &Y;
    plan_node_set_tensors(&n, y, 1, xs, 2);
    CHECK(plan_node_check(&n) == DR_OK);
    n.src[1] = NULL;   /* every input of a concat is read */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[1] = &X;     /* 6 channels for 7 */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    struct tensor one = {NULL, TENSOR_ACT, 2, 1, 8, 8};
    for (int i = 0; i < PLAN_MAX_CONCAT; i++) xs[i] = &one;
    struct tensor wide = {NULL, TENSOR_ACT, 2, PLAN_MAX_CONCAT, 8, 8};
    y[0] = &wide;
    plan_node_set_tensors(&n, y, 1, xs, PLAN_MAX_CONCAT);
    CHECK(plan_node_check(&n) == DR_OK);

    /* a concat's backward: any input gradient may be missing (one at most: its channels
     * are inferred) and any may be added to, within the count */
    struct tensor *dxs[3] = {&X, NULL, &one};
    const struct tensor *dy[1] = {&Y};
    plan_node_init(&n, PLAN_CONCAT_BWD);
    plan_node_set_tensors(&n, dxs, 3, dy, 1);
    n.acc = 5;
    CHECK(plan_node_check(&n) == DR_OK);
    n.acc = 8;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.acc = 0;
    n.dst[0] = NULL;   /* two missing */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.dst[2] = NULL;   /* a node that writes nothing */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);

    /* parameters under the rules: a pool's kind, a ghost batch norm's splits, an SGD
     * item's kind, a cursor's length */
    struct tensor pooled = {NULL, TENSOR_ACT, 2, 3, 4, 4};
    plan_node_init(&n, PLAN_POOL_FWD);
    plan_node_set_tensors(&n, PLAN_DSTS(&pooled), PLAN_SRCS(&X));
    n.par.pool = (struct pool_attr){POOL_MAX, 2, 2, 2, 2};
    CHECK(plan_node_check(&n) == DR_OK);
    n.par.pool.kind = (enum pool_kind)(POOL_AVG + 1);
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.par.pool = (struct pool_attr){POOL_MAX, 3, 3, 3, 3};   /* its output would be 2x2 */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);

    float stats[12];
    struct tensor mean = {stats, TENSOR_F32, 6, 1, 1, 1}, invstd = {stats, TENSOR_F32, 6, 1, 1, 1};
    struct tensor vec = {stats, TENSOR_F32, 3, 1, 1, 1}, par = {stats, TENSOR_PARAM, 3, 1, 1, 1};
    struct tensor bx = X;
    plan_node_init(&n, PLAN_BN_FWD_TRAIN);
    plan_node_set_tensors(&n, PLAN_DSTS(&DX, &mean, &invstd, &vec, &vec),
                          PLAN_SRCS(&bx, &par, &par));
    n.par.bn = (struct bn_attr){1e-5f, 0.1f, 2};   /* 2 parts of 1 image, 2 x 3 saved */
    CHECK(plan_node_check(&n) == DR_OK);
    n.par.bn.splits = 3;   /* 2 images in 3 parts */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.par.bn.splits = 0;   /* 1 part, 6 saved values for 3 channels */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);

    struct tensor cursor = {stats, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1};
    plan_node_init(&n, PLAN_CURSOR_ADVANCE);
    plan_node_set_tensors(&n, PLAN_DSTS(&cursor), NULL, 0);
    CHECK(plan_node_check(&n) == DR_OK);
    cursor.n = PLAN_CURSOR_LEN + 1;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    cursor.n = PLAN_CURSOR_LEN;
    const struct sgd_item items[1] = {{&vec, &par, &par, 1.0, 0.0f, 0}};   /* w is F32 */
    plan_node_init(&n, PLAN_SGD);
    plan_node_set_tensors(&n, NULL, 0, PLAN_SRCS(&vec, &cursor));
    n.par.sgd.items = items;
    n.par.sgd.count = 1;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.par.sgd.count = 0;
    CHECK(plan_node_check(&n) == DR_OK);

    /* not an op */
    memset(&n, 0, sizeof(n));
    n.op = PLAN_OP_COUNT;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
}

/* ------------------------------------------------------------------ lone nodes, engines */

/* A tensor of kind and shape on be with values from a fixed sequence (fp32 kinds). */
static struct tensor filled(struct backend *be, enum tensor_kind kind, int n, int c, int h, int w,
                            unsigned salt)
{
    struct tensor t = {NULL, kind, n, c, h, w};
    CHECK(be->ops->tensor_alloc(be->ctx, &t) == DR_OK);
    float *v = malloc(tensor_count(&t) * sizeof(float));
    for (size_t i = 0; v && i < tensor_count(&t); i++)
        v[i] = (float)((i * 2654435761u + salt) % 1000u) / 500.0f - 1.0f;
    if (v && kind != TENSOR_I32 && kind != TENSOR_U8)
        CHECK(be->ops->tensor_write(be->ctx, &t, v) == DR_OK);
    free(v);
    return t;
}

/* Whether a and b (of one shape, fp32 kinds) hold the same bits on be. */
static int same_bits(struct backend *be, const struct tensor *a, const struct tensor *b)
{
    const size_t bytes = tensor_count(a) * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes);
    int same = x && y && be->ops->tensor_read(be->ctx, x, a) == DR_OK &&
               be->ops->tensor_read(be->ctx, y, b) == DR_OK && memcmp(x, y, bytes) == 0;
    free(x);
    free(y);
    return same;
}

static const struct backend_ops *real_ops;

/* backend_ops.supports of an engine that runs no ACT_FWD node */
static int supports_no_act(void *ctx, const struct plan_node *n)
{
    return n->op != PLAN_ACT_FWD && real_ops->supports(ctx, n);
}

/* The CPU engine: its runner table covers every plain op; a malformed lone node is refused
 * before the engine sees it (DR_ERR_INTERNAL, its output untouched), and so is a node the
 * engine says it does not run; a conv -> batch norm -> ReLU forward run as one plan, the
 * batch norm and the ReLU as one fused node (BN_ACT_TRAIN), gives the bits of the plain
 * nodes run one by one as lone nodes (plan_run_op). */
static void test_engine(void)
{
    struct backend be;
    if (backend_cpu_create(&be, 1) != DR_OK) {
        CHECK(0);
        return;
    }
    for (int k = 0; k < PLAN_OP_COUNT; k++) {   /* the fused ops: tests/test_plan_fused.c */
        struct plan_node n;
        plan_node_init(&n, (enum plan_op)k);
        CHECK(plan_op_is_fused((enum plan_op)k) || be.ops->supports(be.ctx, &n));
    }
    struct tensor x = filled(&be, TENSOR_ACT, 2, 3, 8, 8, 1);
    struct tensor w = filled(&be, TENSOR_PARAM, 4, 3, 3, 3, 2);
    struct tensor b = filled(&be, TENSOR_PARAM, 4, 1, 1, 1, 3);
    struct tensor gamma = filled(&be, TENSOR_PARAM, 4, 1, 1, 1, 4);
    struct tensor beta = filled(&be, TENSOR_PARAM, 4, 1, 1, 1, 5);
    struct tensor y[2], z[2], a[2], stat[2][4];
    for (int r = 0; r < 2; r++) {
        y[r] = filled(&be, TENSOR_ACT, 2, 4, 8, 8, 6);
        z[r] = filled(&be, TENSOR_ACT, 2, 4, 8, 8, 7);
        a[r] = filled(&be, TENSOR_ACT, 2, 4, 8, 8, 8);
        for (int k = 0; k < 4; k++) stat[r][k] = filled(&be, TENSOR_F32, 4, 1, 1, 1, 9);
    }
    const union plan_params conv = {.conv = {3, 1, 1}}, bn = {.bn = {1e-5f, 0.1f, 0}};
    const union plan_params relu = {.act = {ACT_RELU, 0.0f}};

    /* malformed: a 3x3 weight for a 1x1 convolution; the output keeps its values */
    fprintf(stderr, "(two error messages expected below)\n");
    const union plan_params k1 = {.conv = {1, 1, 0}};
    CHECK(plan_run_op(&be, PLAN_CONV_FWD, PLAN_DSTS(&y[0]), PLAN_SRCS(&x, &w, &b), 0, &k1) ==
          DR_ERR_INTERNAL);
    CHECK(same_bits(&be, &y[0], &y[1]));
    /* a node the engine does not run */
    struct backend_ops no_act = *be.ops;
    real_ops = be.ops;
    no_act.supports = supports_no_act;
    const struct backend partial = {&no_act, be.ctx};
    CHECK(plan_run_op(&partial, PLAN_ACT_FWD, PLAN_DSTS(&a[0]), PLAN_SRCS(&z[0]), 0, &relu) ==
          DR_ERR_INTERNAL);
    CHECK(same_bits(&be, &a[0], &a[1]));

    /* the same three nodes as lone nodes (r = 0) and as one plan (r = 1) */
    CHECK(plan_run_op(&be, PLAN_CONV_FWD, PLAN_DSTS(&y[0]), PLAN_SRCS(&x, &w, &b), 0, &conv) ==
          DR_OK);
    CHECK(plan_run_op(&be, PLAN_BN_FWD_TRAIN,
                      PLAN_DSTS(&z[0], &stat[0][0], &stat[0][1], &stat[0][2], &stat[0][3]),
                      PLAN_SRCS(&y[0], &gamma, &beta), 0, &bn) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_ACT_FWD, PLAN_DSTS(&a[0]), PLAN_SRCS(&z[0]), 0, &relu) == DR_OK);
    struct plan p = {0};
    struct plan_node *n = plan_append(&p, PLAN_CONV_FWD, PLAN_PHASE_FORWARD, 0);
    plan_node_set_tensors(n, PLAN_DSTS(&y[1]), PLAN_SRCS(&x, &w, &b));
    n->par = conv;
    n = plan_append(&p, PLAN_BN_ACT_TRAIN, PLAN_PHASE_FORWARD, 1);
    plan_node_set_tensors(n,
                          PLAN_DSTS(&z[1], &stat[1][0], &stat[1][1], &stat[1][2], &stat[1][3],
                                    &a[1], NULL, NULL, NULL),
                          PLAN_SRCS(&y[1], &gamma, &beta, NULL, NULL, NULL, NULL, NULL));
    n->par.bn_act.bn = bn.bn;
    n->par.bn_act.kind = ACT_RELU;
    n->par.bn_act.keep_y = 1;
    CHECK(be.ops->supports(be.ctx, n));
    CHECK(plan_compute(&be, &p) == DR_OK);
    CHECK(same_bits(&be, &y[0], &y[1]) && same_bits(&be, &a[0], &a[1]));
    for (int k = 0; k < 4; k++) CHECK(same_bits(&be, &stat[0][k], &stat[1][k]));
    plan_free(&p);

    struct tensor *all[] = {&x, &w, &b, &gamma, &beta, &y[0], &y[1], &z[0], &z[1], &a[0], &a[1]};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) be.ops->tensor_free(be.ctx, all[i]);
    for (int r = 0; r < 2; r++)
        for (int k = 0; k < 4; k++) be.ops->tensor_free(be.ctx, &stat[r][k]);
    backend_destroy(&be);
}

/* ------------------------------------------------------------------ the builder's nodes */

/* Every node of p matches its row: the counts (a variadic one within 1 ..
 * PLAN_MAX_CONCAT) and plan_node_check; seen[op] counts the nodes. */
static void check_plan(const struct plan *p, const char *what, int *seen)
{
    for (int i = 0; i < p->count; i++) {
        const struct plan_node *n = &p->nodes[i];
        const struct plan_op_desc *d = plan_op_desc(n->op);
        CHECK(d != NULL);
        if (!d) continue;
        const int dst_ok = d->n_dst == PLAN_VARIADIC
                               ? n->n_dst >= 1 && n->n_dst <= PLAN_MAX_CONCAT
                               : n->n_dst == d->n_dst;
        const int src_ok = d->n_src == PLAN_VARIADIC
                               ? n->n_src >= 1 && n->n_src <= PLAN_MAX_CONCAT
                               : n->n_src == d->n_src;
        CHECK(dst_ok && src_ok);
        const int rc = plan_node_check(n);
        CHECK(rc == DR_OK);
        if (!dst_ok || !src_ok || rc != DR_OK)
            printf("%s: node %d (%s): %d dsts, %d srcs\n", what, i, d->name, n->n_dst,
                   n->n_src);
        seen[n->op]++;
    }
}

/* The plans of experiment e's network on backend be at a small batch: a training step,
 * an evaluation batch plain and with two test-time views, and the single-part runs'
 * plans (model_forward and the rest build theirs from the same builders: the training
 * step covers them). */
static void check_experiment(struct backend *be, const struct experiment *e, const char *path,
                             int *seen)
{
    struct graph g;
    struct model m;
    struct plan p = {0};
    char err[512] = "";
    const int batch = 16;   /* built, never run, but checked: every shipped ghost batch
                               norm's splits divide it */
    struct tensor images = {NULL, TENSOR_U8, 4, 3, 32, 32};
    struct tensor labels = {NULL, TENSOR_U8, 4, 1, 1, 1};
    struct tensor rows = {NULL, TENSOR_I32, batch, 1, 1, 1};
    struct tensor cursor = {NULL, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1};
    struct tensor lr_table = {NULL, TENSOR_F32, 1, 1, 1, 1};
    struct tensor *inputs[] = {&images, &labels, &rows, &cursor, &lr_table};
    const struct model_batch_src src = {&images, &labels, &rows, &cursor, batch, 1};
    const struct model_step_opts opts = {&e->augment, 0.2f, 1.0f, 5e-4f, 0.9f, 1,
                                         NULL, NULL, &lr_table, NULL, 0};
    const struct augment_params views[2] = {{.view = 1}, e->augment};
    const float weights[2] = {0.5f, 0.5f};
    if (graph_build(&g, &e->net, 3, 32, 32, err, sizeof(err)) != DR_OK) {
        printf("%s: %s\n", path, err);
        CHECK(0);
        return;
    }
    if (model_create(&m, &g, be, batch) != DR_OK) {
        printf("%s: no model\n", path);
        CHECK(0);
        graph_free(&g);
        return;
    }
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)   /* the rules read */
        CHECK(be->ops->tensor_alloc(be->ctx, inputs[i]) == DR_OK);      /* their data */
    struct tensor view_sum = m.y[g.output];   /* a handle the shape of the logits */
    view_sum.data = NULL;
    CHECK(model_plan_train(&p, &m, &src, &opts) == DR_OK);
    CHECK(p.count > 0);
    check_plan(&p, path, seen);
    CHECK(model_plan_eval(&p, &m, &src, NULL, NULL, 0, &view_sum) == DR_OK);
    check_plan(&p, path, seen);
    CHECK(model_plan_eval(&p, &m, &src, views, weights, 2, &view_sum) == DR_OK);
    check_plan(&p, path, seen);
    plan_free(&p);
    for (size_t i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++)
        be->ops->tensor_free(be->ctx, inputs[i]);
    model_free(&m);
    graph_free(&g);
}

static const char *source_dir(void)
{
    const char *s = getenv("DAWNRUN_SOURCE_DIR");
    return s && s[0] ? s : ".";
}

static void test_shipped(void)
{
    struct backend be;
    int seen[PLAN_OP_COUNT] = {0}, loaded = 0;
    const char *patterns[] = {"configs/*.cfg", "configs/*/*.cfg"};
    if (backend_cpu_create(&be, 1) != DR_OK) {
        CHECK(0);
        return;
    }
    for (int k = 0; k < 2; k++) {
        char pattern[1024];
        glob_t gl;
        snprintf(pattern, sizeof(pattern), "%s/%s", source_dir(), patterns[k]);
        if (glob(pattern, 0, NULL, &gl) != 0) continue;
        for (size_t i = 0; i < gl.gl_pathc; i++) {
            if (strstr(gl.gl_pathv[i], "/configs/nets/")) continue;   /* networks alone */
            struct experiment e;
            if (experiment_load(&e, gl.gl_pathv[i], NULL, 0) != DR_OK) {
                printf("could not load %s\n", gl.gl_pathv[i]);
                CHECK(0);
                continue;
            }
            check_experiment(&be, &e, gl.gl_pathv[i], seen);
            experiment_free(&e);
            loaded++;
        }
        globfree(&gl);
    }
    CHECK(loaded >= 6);
    for (int k = 0; k < PLAN_OP_COUNT; k++)
        printf("%-14s %5d nodes\n", plan_op_name((enum plan_op)k), seen[k]);
    /* the ops every training network has */
    CHECK(seen[PLAN_BATCH] && seen[PLAN_CONV_FWD] && seen[PLAN_CONV_BWD] &&
          seen[PLAN_BN_FWD_TRAIN] && seen[PLAN_BN_FWD_EVAL] && seen[PLAN_BN_BWD] &&
          seen[PLAN_ACT_FWD] && seen[PLAN_ACT_BWD] && seen[PLAN_POOL_FWD] &&
          seen[PLAN_POOL_BWD] && seen[PLAN_XENT_FWD] && seen[PLAN_XENT_BWD] &&
          seen[PLAN_SGD] && seen[PLAN_CURSOR_ADVANCE] && seen[PLAN_SCALED_COPY]);
    backend_destroy(&be);
}

int main(void)
{
    test_table();
    test_check();
    test_engine();
    test_shipped();
    return check_finish("test_plan_ops");
}

/* Tests of the plan's op table (kernels/plan.h plan_op_desc) against the ops: every op has
 * one consistent row (a name of its own, a backend call, counts within the node's slots,
 * NULL / accumulate / update masks within those counts); plan_node_check refuses a node
 * whose shape leaves its row (a count, a missing slot, a slot past the count, an
 * accumulate flag the op does not take); and every node the builder (engine/core/
 * model_plan.c) emits for the shipped experiments' networks (a training step, an
 * evaluation batch with and without test-time views, the single-part runs' plans) has
 * its row's counts and passes plan_node_check. The plans are built, never run. */
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
        CHECK(d->name && d->run);
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

static void test_check(void)
{
    static struct tensor T[8];
    struct plan_node n;
    struct tensor *dst3[3] = {&T[0], &T[1], NULL};
    const struct tensor *src3[3] = {&T[3], &T[4], &T[5]};

    plan_node_init(&n, PLAN_CONV_BWD);   /* dx given, no bias gradient: allowed */
    plan_node_set_tensors(&n, dst3, 3, src3, 3);
    CHECK(plan_node_check(&n) == DR_OK);
    n.acc = 1;   /* dx added to */
    CHECK(plan_node_check(&n) == DR_OK);
    n.acc = 2;   /* dw cannot be added to */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.acc = 0;
    n.dst[PLAN_DW] = NULL;   /* dw is not optional */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.dst[PLAN_DW] = &T[1];
    n.src[PLAN_BWD_W] = NULL;   /* nor w */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[PLAN_BWD_W] = &T[5];
    n.n_src = 2;   /* a count the op does not have (the slot past it set) */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[2] = NULL;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.n_src = 3;
    n.src[3] = &T[6];   /* a slot past the count */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);

    /* a concat: 1 .. PLAN_MAX_CONCAT inputs, the count the node's */
    const struct tensor *xs[PLAN_MAX_CONCAT];
    struct tensor *y[1] = {&T[0]};
    for (int i = 0; i < PLAN_MAX_CONCAT; i++) xs[i] = &T[1 + i % 7];
    plan_node_init(&n, PLAN_CONCAT_FWD);
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);   /* no inputs */
    plan_node_set_tensors(&n, y, 1, xs, PLAN_MAX_CONCAT);
    CHECK(plan_node_check(&n) == DR_OK);
    plan_node_set_tensors(&n, y, 1, xs, 2);
    CHECK(plan_node_check(&n) == DR_OK);
    n.src[1] = NULL;   /* every input of a concat is read */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);

    /* a concat's backward: any input gradient may be missing and any may be added to,
     * within the count */
    struct tensor *dxs[3] = {&T[0], NULL, &T[2]};
    plan_node_init(&n, PLAN_CONCAT_BWD);
    plan_node_set_tensors(&n, dxs, 3, src3, 1);
    n.acc = 5;
    CHECK(plan_node_check(&n) == DR_OK);
    n.acc = 8;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.acc = 0;
    n.dst[0] = n.dst[2] = NULL;   /* a node that writes nothing */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);

    /* not an op */
    memset(&n, 0, sizeof(n));
    n.op = PLAN_OP_COUNT;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
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
    const int batch = 8;   /* built, never run: it need not suit a ghost batch norm */
    struct tensor images = {NULL, TENSOR_U8, 4, 3, 32, 32};
    struct tensor labels = {NULL, TENSOR_U8, 4, 1, 1, 1};
    struct tensor rows = {NULL, TENSOR_I32, batch, 1, 1, 1};
    struct tensor cursor = {NULL, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1};
    struct tensor lr_table = {NULL, TENSOR_F32, 1, 1, 1, 1};
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
    test_shipped();
    return check_finish("test_plan_ops");
}

/* The CPU backend: its table is filled in and it runs a node of every op (supports);
 * tensor_write / tensor_read convert the canonical NCHW form to and from CNHW (also for a
 * batch smaller than allocated) and copy other kinds as they are; a small conv → bn →
 * relu → max pool → flatten → linear → softmax cross-entropy network run forward and
 * backward as nodes, each alone (plan_run_op), gives exactly the bits of the direct kernel
 * calls (same thread count), and so do ghost batch norm and a LERP node; bad shapes,
 * splits, tensor kinds and labels come back as errors, and so do bad arguments of the
 * plan's own ops. */
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/backend.h"
#include "../kernels/plan.h"
#include "../base/status.h"
#include "../kernels/activation.h"
#include "../kernels/augment.h"
#include "../kernels/batchnorm.h"
#include "../kernels/conv2d.h"
#include "../kernels/linear.h"
#include "../kernels/loss.h"
#include "../kernels/optimizer.h"
#include "../kernels/pool.h"
#include "../kernels/tensor_ops.h"
#include "check.h"
#include "support.h"

/* The one source of this test's random inputs: the same values, in the same order, every run. */
static struct support_rng rng = {0xD1B54A32D192ED03ull};

static void test_table(void)
{
    struct backend b = {NULL, NULL};
    CHECK(backend_cpu_create(&b, 0) == DR_OK);
    const struct backend_ops *o = b.ops;
    CHECK(o != NULL);
    if (!o) return;
    CHECK(o->name && strcmp(o->name, "cpu") == 0);
    CHECK(o->destroy && o->device_name && o->tensor_alloc && o->tensor_free && o->tensor_zero);
    CHECK(o->tensor_write && o->tensor_read && o->synchronize && o->supports && o->run_node);
    CHECK(!o->plan_compute && !o->plan_forget);   /* plans run node by node */
    for (int k = 0; k < PLAN_OP_COUNT; k++) {   /* a runner for every plain op */
        struct plan_node n;
        plan_node_init(&n, (enum plan_op)k);
        CHECK(plan_op_is_fused((enum plan_op)k) || o->supports(b.ctx, &n));
    }
    struct plan_node none;
    plan_node_init(&none, PLAN_OP_COUNT);
    CHECK(!o->supports(b.ctx, &none));
    const char *name = o->device_name(b.ctx);
    CHECK(name && strstr(name, "CPU") != NULL);
    printf("device: %s\n", name);
    CHECK(o->synchronize(b.ctx) == DR_OK);
    backend_destroy(&b);
    CHECK(b.ops == NULL && b.ctx == NULL);

    /* the thread count is the one asked for */
    int before = omp_get_max_threads();
    CHECK(backend_cpu_create(&b, 1) == DR_OK);
    CHECK(omp_get_max_threads() == 1);
    CHECK(strstr(b.ops->device_name(b.ctx), "1 thread") != NULL);
    backend_destroy(&b);
    omp_set_num_threads(before);
    CHECK(backend_cpu_create(&b, -1) == DR_ERR_USAGE);
    CHECK(b.ops == NULL);
}

static void test_memory(const struct backend *b)
{
    const struct backend_ops *o = b->ops;
    void *ctx = b->ctx;
    struct tensor t = {NULL, TENSOR_ACT, 3, 4, 2, 5};
    const size_t count = 3 * 4 * 2 * 5, hw = 10;
    float host[120], back[120];
    CHECK(o->tensor_alloc(ctx, &t) == DR_OK && t.data != NULL);
    int zero = 1;
    for (size_t i = 0; i < count; i++) zero &= ((float *)t.data)[i] == 0.0f;
    CHECK(zero);
    for (size_t i = 0; i < count; i++) host[i] = (float)i;
    CHECK(o->tensor_write(ctx, &t, host) == DR_OK);
    /* stored CNHW: element (i, c, p) of the canonical form at ((c * n + i) * hw + p) */
    int ok = 1;
    const float *d = t.data;
    for (int i = 0; i < 3; i++)
        for (int c = 0; c < 4; c++)
            for (size_t p = 0; p < hw; p++)
                ok &= d[((size_t)c * 3 + i) * hw + p] == host[((size_t)i * 4 + c) * hw + p];
    CHECK(ok);
    memset(back, 0, sizeof back);
    CHECK(o->tensor_read(ctx, back, &t) == DR_OK);
    CHECK(memcmp(back, host, sizeof host) == 0);
    /* a smaller batch in the same allocation uses its own n for the layout */
    t.n = 2;
    CHECK(o->tensor_write(ctx, &t, host) == DR_OK);
    ok = 1;
    for (int i = 0; i < 2; i++)
        for (int c = 0; c < 4; c++)
            for (size_t p = 0; p < hw; p++)
                ok &= d[((size_t)c * 2 + i) * hw + p] == host[((size_t)i * 4 + c) * hw + p];
    CHECK(ok);
    memset(back, 0, sizeof back);
    CHECK(o->tensor_read(ctx, back, &t) == DR_OK);
    CHECK(memcmp(back, host, sizeof(float) * 80) == 0);
    CHECK(o->tensor_zero(ctx, &t) == DR_OK);
    zero = 1;
    for (size_t i = 0; i < 80; i++) zero &= d[i] == 0.0f;
    CHECK(zero);
    o->tensor_free(ctx, &t);
    CHECK(t.data == NULL);

    /* other kinds are copied as they are */
    struct tensor p = {NULL, TENSOR_PARAM, 3, 4, 2, 5};
    struct tensor l = {NULL, TENSOR_I32, 7, 1, 1, 1};
    struct tensor u = {NULL, TENSOR_U8, 5, 3, 1, 1};
    const int32_t labels[7] = {3, -1, 7, 0, 9, 2, 2147483647};
    const uint8_t bytes[15] = {0, 1, 2, 3, 250, 251, 252, 253, 254, 255, 9, 8, 7, 6, 5};
    int32_t lback[7];
    uint8_t bback[15];
    CHECK(o->tensor_alloc(ctx, &p) == DR_OK && o->tensor_alloc(ctx, &l) == DR_OK &&
          o->tensor_alloc(ctx, &u) == DR_OK);
    CHECK(o->tensor_write(ctx, &p, host) == DR_OK);
    CHECK(memcmp(p.data, host, sizeof host) == 0);
    CHECK(o->tensor_read(ctx, back, &p) == DR_OK && memcmp(back, host, sizeof host) == 0);
    CHECK(o->tensor_write(ctx, &l, labels) == DR_OK);
    CHECK(o->tensor_read(ctx, lback, &l) == DR_OK && memcmp(lback, labels, sizeof labels) == 0);
    CHECK(o->tensor_write(ctx, &u, bytes) == DR_OK);
    CHECK(o->tensor_read(ctx, bback, &u) == DR_OK && memcmp(bback, bytes, sizeof bytes) == 0);
    o->tensor_free(ctx, &p);
    o->tensor_free(ctx, &l);
    o->tensor_free(ctx, &u);
}

/* A tensor of the given kind and shape, allocated through the backend table. */
static struct tensor make(const struct backend *b, enum tensor_kind kind, int n, int c, int h,
                          int w)
{
    struct tensor t = {NULL, kind, n, c, h, w};
    CHECK(b->ops->tensor_alloc(b->ctx, &t) == DR_OK);
    return t;
}

/* The nodes the tests below run alone (plan_run_op), with the slots in the order of the
 * op's table row. */
static int bn_train(const struct backend *b, struct tensor *y, struct tensor *mean,
                    struct tensor *invstd, struct tensor *rmean, struct tensor *rvar,
                    const struct tensor *x, const struct tensor *gamma, const struct tensor *beta,
                    const struct bn_attr *a)
{
    return plan_run_op(b, PLAN_BN_FWD_TRAIN, PLAN_DSTS(y, mean, invstd, rmean, rvar),
                       PLAN_SRCS(x, gamma, beta), 0, &(union plan_params){.bn = *a});
}

static int bn_bwd(const struct backend *b, struct tensor *dx, struct tensor *dgamma,
                  struct tensor *dbeta, const struct tensor *dy, const struct tensor *x,
                  const struct tensor *gamma, const struct tensor *mean,
                  const struct tensor *invstd)
{
    return plan_run_op(b, PLAN_BN_BWD, PLAN_DSTS(dx, dgamma, dbeta),
                       PLAN_SRCS(dy, x, gamma, mean, invstd), 0, NULL);
}

static int lerp_one(const struct backend *b, struct tensor *avg, struct tensor *w, float t,
                    int copy_back)
{
    const struct lerp_item item = {avg, w};
    const union plan_params par = {.lerp = {&item, 1, t, copy_back}};
    return plan_run_op(b, PLAN_LERP, NULL, 0, NULL, 0, 0, &par);
}

/* A BATCH node: x, labels from images, ilabels and rows at cursor, rows i * stride on. */
static int batch(const struct backend *b, struct tensor *x, struct tensor *labels,
                 const struct tensor *images, const struct tensor *ilabels,
                 const struct tensor *rows, const struct tensor *cursor, int stride,
                 const struct augment_params *aug)
{
    const union plan_params par = {.batch = {aug, stride, 1}};
    return plan_run_op(b, PLAN_BATCH, PLAN_DSTS(x, labels),
                       PLAN_SRCS(images, ilabels, rows, cursor), 0, &par);
}

static float *fdup(const struct tensor *t)
{
    float *p = malloc(sizeof(float) * tensor_count(t));
    memcpy(p, t->data, sizeof(float) * tensor_count(t));
    return p;
}

static int same(const float *a, const struct tensor *t)
{
    return memcmp(a, t->data, sizeof(float) * tensor_count(t)) == 0;
}

/* An SGD node of one item alone: w, v, dw stepped at lr (a table of one value at the
 * first step) with weight decay wd, momentum 0.9, Nesterov. */
static int sgd_one(const struct backend *b, struct tensor *w, struct tensor *v, struct tensor *dw,
                   float lr, float wd)
{
    struct tensor table = make(b, TENSOR_F32, 1, 1, 1, 1);
    struct tensor cursor = make(b, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1);
    const struct sgd_item item = {w, v, dw, 1.0, wd, 0};
    const union plan_params par = {.sgd = {&item, 1, 0.9f, 1}};
    ((float *)table.data)[0] = lr;
    const int rc = plan_run_op(b, PLAN_SGD, NULL, 0, PLAN_SRCS(&table, &cursor), 0, &par);
    b->ops->tensor_free(b->ctx, &table);
    b->ops->tensor_free(b->ctx, &cursor);
    return rc;
}

static void test_network(const struct backend *b)
{
    const struct backend_ops *o = b->ops;
    void *ctx = b->ctx;
    const int n = 5, c = 3, h = 6, co = 4, k = 10;
    struct conv_attr ca = {3, 1, 1};
    struct bn_attr ba = {1e-5f, 0.1f, 0};
    struct pool_attr pa = {POOL_MAX, 2, 2, 2, 2};
    struct tensor x = make(b, TENSOR_ACT, n, c, h, h), w = make(b, TENSOR_PARAM, co, c, 3, 3);
    struct tensor bias = make(b, TENSOR_PARAM, co, 1, 1, 1);
    struct tensor y1 = make(b, TENSOR_ACT, n, co, h, h), y2 = make(b, TENSOR_ACT, n, co, h, h);
    struct tensor y3 = make(b, TENSOR_ACT, n, co, h, h), y4 = make(b, TENSOR_ACT, n, co, 3, 3);
    struct tensor y5 = make(b, TENSOR_ACT, n, co * 9, 1, 1), y6 = make(b, TENSOR_ACT, n, k, 1, 1);
    struct tensor gamma = make(b, TENSOR_PARAM, co, 1, 1, 1),
                  beta = make(b, TENSOR_PARAM, co, 1, 1, 1);
    struct tensor mean = make(b, TENSOR_F32, co, 1, 1, 1),
                  invstd = make(b, TENSOR_F32, co, 1, 1, 1);
    struct tensor rmean = make(b, TENSOR_F32, co, 1, 1, 1), rvar = make(b, TENSOR_F32, co, 1, 1, 1);
    struct tensor lw = make(b, TENSOR_PARAM, k, co * 9, 1, 1),
                  lb = make(b, TENSOR_PARAM, k, 1, 1, 1);
    struct tensor probs = make(b, TENSOR_ACT, n, k, 1, 1), stats = make(b, TENSOR_F32, 2, 1, 1, 1);
    struct tensor labels = make(b, TENSOR_I32, n, 1, 1, 1);
    struct tensor d6 = make(b, TENSOR_ACT, n, k, 1, 1), d5 = make(b, TENSOR_ACT, n, co * 9, 1, 1);
    struct tensor d4 = make(b, TENSOR_ACT, n, co, 3, 3), d3 = make(b, TENSOR_ACT, n, co, h, h);
    struct tensor d2 = make(b, TENSOR_ACT, n, co, h, h), d1 = make(b, TENSOR_ACT, n, co, h, h);
    struct tensor dx = make(b, TENSOR_ACT, n, c, h, h), dw = make(b, TENSOR_PARAM, co, c, 3, 3);
    struct tensor dbias = make(b, TENSOR_PARAM, co, 1, 1, 1);
    struct tensor dgamma = make(b, TENSOR_PARAM, co, 1, 1, 1),
                  dbeta = make(b, TENSOR_PARAM, co, 1, 1, 1);
    struct tensor dlw = make(b, TENSOR_PARAM, k, co * 9, 1, 1),
                  dlb = make(b, TENSOR_PARAM, k, 1, 1, 1);

    support_rand_fill(x.data, &rng, -1, 1, tensor_count(&x));
    support_rand_fill(w.data, &rng, -0.5f, 0.5f, tensor_count(&w));
    support_rand_fill(bias.data, &rng, -0.5f, 0.5f, tensor_count(&bias));
    support_rand_fill(gamma.data, &rng, 0.5f, 1.5f, tensor_count(&gamma));
    support_rand_fill(beta.data, &rng, -0.5f, 0.5f, tensor_count(&beta));
    support_rand_fill(rvar.data, &rng, 1, 1, tensor_count(&rvar));
    support_rand_fill(lw.data, &rng, -0.3f, 0.3f, tensor_count(&lw));
    support_rand_fill(lb.data, &rng, -0.3f, 0.3f, tensor_count(&lb));
    for (int i = 0; i < n; i++) ((int32_t *)labels.data)[i] = (3 * i + 2) % k;
    float *rmean0 = fdup(&rmean), *rvar0 = fdup(&rvar);

    /* node by node, each alone */
    const union plan_params conv = {.conv = ca}, bn = {.bn = ba}, pool = {.pool = pa};
    const union plan_params relu = {.act = {ACT_RELU, 0.0f}};
    CHECK(plan_run_op(b, PLAN_CONV_FWD, PLAN_DSTS(&y1), PLAN_SRCS(&x, &w, &bias), 0, &conv) ==
          DR_OK);
    CHECK(plan_run_op(b, PLAN_BN_FWD_TRAIN, PLAN_DSTS(&y2, &mean, &invstd, &rmean, &rvar),
                      PLAN_SRCS(&y1, &gamma, &beta), 0, &bn) == DR_OK);
    CHECK(plan_run_op(b, PLAN_ACT_FWD, PLAN_DSTS(&y3), PLAN_SRCS(&y2), 0, &relu) == DR_OK);
    CHECK(plan_run_op(b, PLAN_POOL_FWD, PLAN_DSTS(&y4), PLAN_SRCS(&y3), 0, &pool) == DR_OK);
    union plan_params unknown = pool;   /* a kind the kernels do not know is refused */
    unknown.pool.kind = (enum pool_kind)(POOL_AVG + 1);
    CHECK(plan_run_op(b, PLAN_POOL_FWD, PLAN_DSTS(&y4), PLAN_SRCS(&y3), 0, &unknown) ==
          DR_ERR_INTERNAL);
    CHECK(plan_run_op(b, PLAN_POOL_FWD, PLAN_DSTS(&y4), PLAN_SRCS(&y3), 0, &pool) == DR_OK);
    CHECK(plan_run_op(b, PLAN_FLATTEN_FWD, PLAN_DSTS(&y5), PLAN_SRCS(&y4), 0, NULL) == DR_OK);
    CHECK(plan_run_op(b, PLAN_LINEAR_FWD, PLAN_DSTS(&y6), PLAN_SRCS(&y5, &lw, &lb), 0, NULL) ==
          DR_OK);
    CHECK(plan_run_op(b, PLAN_XENT_FWD, PLAN_DSTS(&stats, &probs), PLAN_SRCS(&y6, &labels), 0,
                      &(union plan_params){.xent = {0.2f, 0.0f}}) == DR_OK);
    CHECK(plan_run_op(b, PLAN_XENT_BWD, PLAN_DSTS(&d6), PLAN_SRCS(&probs, &labels), 0,
                      &(union plan_params){.xent = {0.2f, 1.0f / n}}) == DR_OK);
    CHECK(plan_run_op(b, PLAN_LINEAR_BWD, PLAN_DSTS(&d5, &dlw, &dlb), PLAN_SRCS(&d6, &y5, &lw),
                      0, NULL) == DR_OK);
    CHECK(plan_run_op(b, PLAN_FLATTEN_BWD, PLAN_DSTS(&d4), PLAN_SRCS(&d5), 0, NULL) == DR_OK);
    CHECK(plan_run_op(b, PLAN_POOL_BWD, PLAN_DSTS(&d3), PLAN_SRCS(&d4, &y3, &y4), 0, &pool) ==
          DR_OK);
    CHECK(plan_run_op(b, PLAN_ACT_BWD, PLAN_DSTS(&d2), PLAN_SRCS(&d3, &y2), 0, &relu) == DR_OK);
    CHECK(plan_run_op(b, PLAN_BN_BWD, PLAN_DSTS(&d1, &dgamma, &dbeta),
                      PLAN_SRCS(&d2, &y1, &gamma, &mean, &invstd), 0, NULL) == DR_OK);
    CHECK(plan_run_op(b, PLAN_CONV_BWD, PLAN_DSTS(&dx, &dw, &dbias), PLAN_SRCS(&d1, &x, &w), 0,
                      &conv) == DR_OK);
    float st[2];
    CHECK(o->tensor_read(ctx, st, &stats) == DR_OK);
    CHECK(st[0] > 0.0f && isfinite(st[0]) && st[1] >= 0.0f && st[1] <= (float)n);

    /* the same with direct kernel calls on host buffers */
    const size_t s1 = tensor_count(&y1), s4 = tensor_count(&y4), s6 = tensor_count(&y6);
    float *e1 = malloc(4 * s1), *e2 = malloc(4 * s1), *e3 = malloc(4 * s1), *e4 = malloc(4 * s4);
    float *e5 = malloc(4 * s4), *e6 = malloc(4 * s6), *ep = malloc(4 * s6), *g6 = malloc(4 * s6);
    float *g5 = malloc(4 * s4), *g4 = malloc(4 * s4), *g3 = malloc(4 * s1), *g2 = malloc(4 * s1);
    float *g1 = malloc(4 * s1), *gx = malloc(4 * tensor_count(&x)),
          *gw = malloc(4 * tensor_count(&w));
    float *gb = malloc(4 * co), *gg = malloc(4 * co), *gbe = malloc(4 * co), *m = malloc(4 * co);
    float *is = malloc(4 * co), *glw = malloc(4 * tensor_count(&lw)), *glb = malloc(4 * k);
    float est[2] = {0, 0};
    struct conv2d_dims cd = {n, c, h, h, co, 3, 1, 1, 0, 0};
    struct pool_dims pd = {co * n, h, h, 2, 2, 2, 2, 3, 3};
    conv2d_dims_finish(&cd);
    CHECK(conv2d_forward_cpu(e1, x.data, w.data, bias.data, &cd) == 0);
    batchnorm_forward_train_cpu(e2, m, is, rmean0, rvar0, e1, gamma.data, beta.data, co, n, h * h,
                                1, 1e-5f, 0.1f);
    activation_forward_cpu(e3, e2, ACT_RELU, 0.0f, s1);
    pool_forward_cpu(e4, e3, POOL_MAX, &pd);
    flatten_forward_cpu(e5, e4, co, n, 9);
    linear_forward_cpu(e6, e5, lw.data, lb.data, k, co * 9, n);
    xent_forward_cpu(est, ep, e6, labels.data, k, n, 0.2f);
    xent_backward_cpu(g6, ep, labels.data, k, n, 0.2f, 1.0f / n);
    linear_backward_cpu(g5, glw, glb, g6, e5, lw.data, k, co * 9, n, 0);
    flatten_backward_cpu(g4, g5, co, n, 9, 0);
    pool_backward_cpu(g3, g4, e3, e4, POOL_MAX, &pd, 0);
    activation_backward_cpu(g2, g3, e2, ACT_RELU, 0.0f, s1, 0);
    batchnorm_backward_cpu(g1, gg, gbe, g2, e1, gamma.data, m, is, co, n, h * h, 1, 0);
    CHECK(conv2d_backward_cpu(gx, gw, gb, g1, x.data, w.data, &cd, 0) == 0);

    CHECK(same(e1, &y1) && same(e2, &y2) && same(e3, &y3) && same(e4, &y4));
    CHECK(same(e5, &y5) && same(e6, &y6) && same(ep, &probs));
    CHECK(same(m, &mean) && same(is, &invstd) && same(rmean0, &rmean) && same(rvar0, &rvar));
    CHECK(memcmp(est, st, sizeof st) == 0);
    CHECK(same(g6, &d6) && same(g5, &d5) && same(g4, &d4) && same(g3, &d3) && same(g2, &d2));
    CHECK(same(g1, &d1) && same(gx, &dx) && same(gw, &dw) && same(gb, &dbias));
    CHECK(same(gg, &dgamma) && same(gbe, &dbeta) && same(glw, &dlw) && same(glb, &dlb));

    /* eval-mode bn and an SGD node of one item */
    CHECK(plan_run_op(b, PLAN_BN_FWD_EVAL, PLAN_DSTS(&y2),
                      PLAN_SRCS(&y1, &gamma, &beta, &rmean, &rvar), 0, &bn) == DR_OK);
    batchnorm_forward_eval_cpu(e2, e1, gamma.data, beta.data, rmean0, rvar0, co, n, h * h, 1e-5f);
    CHECK(same(e2, &y2));
    struct tensor v = make(b, TENSOR_PARAM, co, c, 3, 3);
    float *w0 = fdup(&w), *v0 = fdup(&v);
    CHECK(sgd_one(b, &w, &v, &dw, 0.1f, 5e-4f) == DR_OK);
    sgd_update_cpu(w0, v0, gw, 0.1f, 5e-4f, 0.9f, 1, tensor_count(&w));
    CHECK(same(w0, &w) && same(v0, &v) && same(gw, &dw));

    /* errors: a wrong output shape, a label outside the classes */
    struct tensor bad = make(b, TENSOR_ACT, n, co + 1, h, h);
    fprintf(stderr, "(two error messages expected below)\n");
    CHECK(plan_run_op(b, PLAN_CONV_FWD, PLAN_DSTS(&bad), PLAN_SRCS(&x, &w, &bias), 0, &conv) ==
          DR_ERR_INTERNAL);
    ((int32_t *)labels.data)[1] = k;
    CHECK(plan_run_op(b, PLAN_XENT_FWD, PLAN_DSTS(&stats, &probs), PLAN_SRCS(&y6, &labels), 0,
                      NULL) == DR_ERR_DATA);

    struct tensor *all[] = {&x, &w, &bias, &y1, &y2, &y3, &y4, &y5, &y6, &gamma, &beta, &mean,
                            &invstd, &rmean, &rvar, &lw, &lb, &probs, &stats, &labels, &d6, &d5,
                            &d4, &d3, &d2, &d1, &dx, &dw, &dbias, &dgamma, &dbeta, &dlw, &dlb, &v,
                            &bad};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) o->tensor_free(ctx, all[i]);
    float *hs[] = {e1, e2, e3, e4, e5, e6, ep, g6, g5, g4, g3, g2, g1, gx, gw, gb, gg, gbe, m, is,
                   glw, glb, rmean0, rvar0, w0, v0};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) free(hs[i]);
}

/* Ghost batch norm as lone nodes (4 parts of 2 images) gives the bits of the direct
 * kernel calls, backward inferring the parts from save_mean; splits that do not divide
 * the batch and saved statistics of the wrong size are refused. */
static void test_ghost_bn(const struct backend *b)
{
    const struct backend_ops *o = b->ops;
    void *ctx = b->ctx;
    const int n = 8, c = 3, h = 5, parts = 4;
    const size_t count = (size_t)n * c * h * h;
    struct bn_attr ga = {1e-5f, 0.1f, parts};
    struct tensor x = make(b, TENSOR_ACT, n, c, h, h), y = make(b, TENSOR_ACT, n, c, h, h);
    struct tensor dy = make(b, TENSOR_ACT, n, c, h, h), dx = make(b, TENSOR_ACT, n, c, h, h);
    struct tensor gamma = make(b, TENSOR_PARAM, c, 1, 1, 1);
    struct tensor beta = make(b, TENSOR_PARAM, c, 1, 1, 1);
    struct tensor dgamma = make(b, TENSOR_PARAM, c, 1, 1, 1);
    struct tensor dbeta = make(b, TENSOR_PARAM, c, 1, 1, 1);
    struct tensor mean = make(b, TENSOR_F32, parts * c, 1, 1, 1);
    struct tensor invstd = make(b, TENSOR_F32, parts * c, 1, 1, 1);
    struct tensor mean1 = make(b, TENSOR_F32, c, 1, 1, 1);
    struct tensor invstd1 = make(b, TENSOR_F32, c, 1, 1, 1);
    struct tensor rmean = make(b, TENSOR_F32, c, 1, 1, 1), rvar = make(b, TENSOR_F32, c, 1, 1, 1);
    support_rand_fill(x.data, &rng, -1, 2, count);
    support_rand_fill(dy.data, &rng, -1, 1, count);
    support_rand_fill(gamma.data, &rng, 0.5f, 1.5f, (size_t)c);
    support_rand_fill(beta.data, &rng, -0.5f, 0.5f, (size_t)c);
    support_rand_fill(rmean.data, &rng, -0.2f, 0.2f, (size_t)c);
    support_rand_fill(rvar.data, &rng, 0.8f, 1.2f, (size_t)c);
    float *rm = fdup(&rmean), *rv = fdup(&rvar), *ey = malloc(sizeof(float) * count);
    float *edx = malloc(sizeof(float) * count), *em = malloc(sizeof(float) * parts * c);
    float *ei = malloc(sizeof(float) * parts * c), *eg = malloc(sizeof(float) * c);
    float *eb = malloc(sizeof(float) * c);

    CHECK(bn_train(b, &y, &mean, &invstd, &rmean, &rvar, &x, &gamma, &beta, &ga) ==
          DR_OK);
    CHECK(bn_bwd(b, &dx, &dgamma, &dbeta, &dy, &x, &gamma, &mean, &invstd) == DR_OK);
    batchnorm_forward_train_cpu(ey, em, ei, rm, rv, x.data, gamma.data, beta.data, c, n, h * h,
                                parts, 1e-5f, 0.1f);
    batchnorm_backward_cpu(edx, eg, eb, dy.data, x.data, gamma.data, em, ei, c, n, h * h, parts,
                           0);
    CHECK(same(ey, &y) && same(em, &mean) && same(ei, &invstd));
    CHECK(same(rm, &rmean) && same(rv, &rvar));
    CHECK(same(edx, &dx) && same(eg, &dgamma) && same(eb, &dbeta));
    /* the parts really are normalised on their own: part 1 of channel 0 has mean beta */
    double s = 0.0;
    const float *y0 = (const float *)y.data + (size_t)(n / parts) * h * h;
    for (int i = 0; i < (n / parts) * h * h; i++) s += y0[i];
    CHECK_NEAR(s / ((n / parts) * h * h), ((float *)beta.data)[0], 1e-5);

    /* splits 1 is plain batch norm, with c saved values */
    struct bn_attr one = {1e-5f, 0.1f, 1};
    CHECK(bn_train(b, &y, &mean1, &invstd1, &rmean, &rvar, &x, &gamma, &beta, &one) ==
          DR_OK);
    CHECK(bn_bwd(b, &dx, &dgamma, &dbeta, &dy, &x, &gamma, &mean1, &invstd1) ==
          DR_OK);

    fprintf(stderr, "(five error messages expected below)\n");
    struct bn_attr three = {1e-5f, 0.1f, 3}, negative = {1e-5f, 0.1f, -2};
    CHECK(bn_train(b, &y, &mean, &invstd, &rmean, &rvar, &x, &gamma, &beta,
                              &three) == DR_ERR_INTERNAL);
    CHECK(bn_train(b, &y, &mean, &invstd, &rmean, &rvar, &x, &gamma, &beta,
                              &negative) == DR_ERR_INTERNAL);
    /* 4 parts but c saved values */
    CHECK(bn_train(b, &y, &mean1, &invstd1, &rmean, &rvar, &x, &gamma, &beta, &ga) ==
          DR_ERR_INTERNAL);
    /* backward: saved statistics of 4 * c values, save_invstd of c */
    CHECK(bn_bwd(b, &dx, &dgamma, &dbeta, &dy, &x, &gamma, &mean, &invstd1) ==
          DR_ERR_INTERNAL);
    /* backward: 4 parts inferred from save_mean, a batch of 6 */
    x.n = y.n = dy.n = dx.n = 6;
    CHECK(bn_bwd(b, &dx, &dgamma, &dbeta, &dy, &x, &gamma, &mean, &invstd) ==
          DR_ERR_INTERNAL);
    x.n = y.n = dy.n = dx.n = n;

    struct tensor *all[] = {&x, &y, &dy, &dx, &gamma, &beta, &dgamma, &dbeta, &mean, &invstd,
                            &mean1, &invstd1, &rmean, &rvar};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) o->tensor_free(ctx, all[i]);
    float *hs[] = {rm, rv, ey, edx, em, ei, eg, eb};
    for (size_t i = 0; i < sizeof hs / sizeof hs[0]; i++) free(hs[i]);
}

/* A LERP node of one item on PARAM and F32 tensors, with and without copy_back, gives the
 * bits of param_lerp_cpu; other kinds, mixed kinds and unlike shapes are refused. */
static void test_param_lerp(const struct backend *b)
{
    const struct backend_ops *o = b->ops;
    void *ctx = b->ctx;
    const float t = 0.2f;
    const enum tensor_kind kinds[2] = {TENSOR_PARAM, TENSOR_F32};
    for (int k = 0; k < 2; k++)
        for (int copy_back = 0; copy_back < 2; copy_back++) {
            struct tensor avg = make(b, kinds[k], 6, 5, 3, 3), w = make(b, kinds[k], 6, 5, 3, 3);
            const size_t count = tensor_count(&avg);
            support_rand_fill(avg.data, &rng, -1, 1, count);
            support_rand_fill(w.data, &rng, -1, 1, count);
            float *ea = fdup(&avg), *ew = fdup(&w), *w0 = fdup(&w);
            CHECK(lerp_one(b, &avg, &w, t, copy_back) == DR_OK);
            param_lerp_cpu(ea, ew, t, copy_back, count);
            CHECK(same(ea, &avg) && same(ew, &w));
            CHECK(copy_back ? same(ea, &w) : same(w0, &w));
            CHECK(memcmp(ea, w0, sizeof(float) * count) != 0);
            o->tensor_free(ctx, &avg);
            o->tensor_free(ctx, &w);
            free(ea);
            free(ew);
            free(w0);
        }
    struct tensor pa = make(b, TENSOR_PARAM, 4, 1, 1, 1), pw = make(b, TENSOR_PARAM, 4, 1, 1, 1);
    struct tensor fa = make(b, TENSOR_F32, 4, 1, 1, 1), aa = make(b, TENSOR_ACT, 4, 1, 1, 1);
    struct tensor aw = make(b, TENSOR_ACT, 4, 1, 1, 1), pl = make(b, TENSOR_PARAM, 5, 1, 1, 1);
    fprintf(stderr, "(three error messages expected below)\n");
    CHECK(lerp_one(b, &aa, &aw, t, 0) == DR_ERR_INTERNAL);
    CHECK(lerp_one(b, &pa, &fa, t, 1) == DR_ERR_INTERNAL);
    CHECK(lerp_one(b, &pa, &pl, t, 0) == DR_ERR_INTERNAL);
    CHECK(lerp_one(b, &pa, &pw, t, 1) == DR_OK);
    struct tensor *all[] = {&pa, &pw, &fa, &aa, &aw, &pl};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) o->tensor_free(ctx, all[i]);
}

/* Concat with an input that needs no gradient (the image): the other slices still land. */
static void test_concat_null(const struct backend *b)
{
    const struct backend_ops *o = b->ops;
    struct tensor a = make(b, TENSOR_ACT, 2, 3, 2, 2), c2 = make(b, TENSOR_ACT, 2, 2, 2, 2);
    struct tensor y = make(b, TENSOR_ACT, 2, 5, 2, 2), dc = make(b, TENSOR_ACT, 2, 2, 2, 2);
    support_rand_fill(a.data, &rng, -1, 1, tensor_count(&a));
    support_rand_fill(c2.data, &rng, -1, 1, tensor_count(&c2));
    CHECK(plan_run_op(b, PLAN_CONCAT_FWD, PLAN_DSTS(&y), PLAN_SRCS(&a, &c2), 0, NULL) == DR_OK);
    CHECK(plan_run_op(b, PLAN_CONCAT_BWD, PLAN_DSTS(NULL, &dc), PLAN_SRCS(&y), 0, NULL) ==
          DR_OK);
    CHECK(memcmp(dc.data, c2.data, sizeof(float) * tensor_count(&c2)) == 0);
    o->tensor_free(b->ctx, &a);
    o->tensor_free(b->ctx, &c2);
    o->tensor_free(b->ctx, &y);
    o->tensor_free(b->ctx, &dc);
}

/* A BATCH node gathers and normalises test rows exactly as the kernel does. */
static void test_augment(const struct backend *b)
{
    const struct backend_ops *o = b->ops;
    const size_t img = 3 * 32 * 32;
    struct tensor images = make(b, TENSOR_U8, 3, 3, 32, 32);
    struct tensor ilabels = make(b, TENSOR_U8, 3, 1, 1, 1);
    struct tensor rows = make(b, TENSOR_I32, 2, 1, 1, 1), lab = make(b, TENSOR_I32, 2, 1, 1, 1);
    struct tensor x = make(b, TENSOR_ACT, 2, 3, 32, 32);
    struct tensor cur = make(b, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1);   /* batch 0, epoch 0 */
    uint8_t *px = images.data;
    for (size_t i = 0; i < 3 * img; i++) px[i] = (uint8_t)(i * 7 + 3);
    ((uint8_t *)ilabels.data)[0] = 4;
    ((uint8_t *)ilabels.data)[1] = 9;
    ((uint8_t *)ilabels.data)[2] = 1;
    ((int32_t *)rows.data)[0] = 2;
    ((int32_t *)rows.data)[1] = 0;
    CHECK(batch(b, &x, &lab, &images, &ilabels, &rows, &cur, 2, NULL) == DR_OK);
    float *want = malloc(sizeof(float) * 2 * img);
    int32_t wl[2];
    augment_batch_cpu(want, wl, images.data, ilabels.data, rows.data, 2, NULL, 1, 0);
    CHECK(memcmp(want, x.data, sizeof(float) * 2 * img) == 0);
    CHECK(((int32_t *)lab.data)[0] == 1 && ((int32_t *)lab.data)[1] == 4);
    ((int32_t *)rows.data)[1] = 3;
    fprintf(stderr, "(one error message expected below)\n");
    CHECK(batch(b, &x, &lab, &images, &ilabels, &rows, &cur, 2, NULL) == DR_ERR_DATA);
    /* the op's ranges (its rule in the op table, checked before any engine runs the node):
     * a pad or a cutout out of range is a bug of the caller */
    ((int32_t *)rows.data)[1] = 0;
    const struct augment_params bad[] = {
        {.pad = 17, .crop = 1}, {.pad = -1}, {.pad = 4, .cutout = 33}, {.cutout = -1}};
    fprintf(stderr, "(four internal-error messages expected below)\n");
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        CHECK(batch(b, &x, &lab, &images, &ilabels, &rows, &cur, 2, &bad[i]) ==
              DR_ERR_INTERNAL);
    const struct augment_params edge[] = {{.pad = 16, .crop = 1}, {.pad = 4, .cutout = 32}};
    for (size_t i = 0; i < sizeof(edge) / sizeof(edge[0]); i++)
        CHECK(batch(b, &x, &lab, &images, &ilabels, &rows, &cur, 2, &edge[i]) == DR_OK);
    free(want);
    o->tensor_free(b->ctx, &images);
    o->tensor_free(b->ctx, &ilabels);
    o->tensor_free(b->ctx, &rows);
    o->tensor_free(b->ctx, &lab);
    o->tensor_free(b->ctx, &x);
    o->tensor_free(b->ctx, &cur);
}

/* The plan's own ops on bad arguments (their rules in the op table, kernels/plan.c): a
 * cursor that is not I32 of PLAN_CURSOR_LEN, sgd items that are not PARAM or train for a
 * negative number of epochs, an empty learning-rate table, a stride below the batch. And
 * a good call: the frozen item is left as it is, the other stepped, the cursor advanced. */
static int sgd(const struct backend *b, const struct sgd_item *items, int count,
               const struct tensor *lr, const struct tensor *cursor, int nesterov)
{
    const union plan_params par = {.sgd = {items, count, 0.9f, nesterov}};
    return plan_run_op(b, PLAN_SGD, NULL, 0, PLAN_SRCS(lr, cursor), 0, &par);
}

static int advance(const struct backend *b, struct tensor *cursor)
{
    return plan_run_op(b, PLAN_CURSOR_ADVANCE, PLAN_DSTS(cursor), NULL, 0, 0, NULL);
}

static void test_plan_op_checks(const struct backend *b)
{
    const struct backend_ops *o = b->ops;
    void *ctx = b->ctx;
    struct tensor cur = make(b, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1);
    struct tensor bad = make(b, TENSOR_F32, PLAN_CURSOR_LEN, 1, 1, 1);
    struct tensor lr = make(b, TENSOR_F32, 4, 1, 1, 1), none = make(b, TENSOR_F32, 0, 1, 1, 1);
    struct tensor w = make(b, TENSOR_PARAM, 3, 1, 1, 1), v = make(b, TENSOR_PARAM, 3, 1, 1, 1);
    struct tensor dw = make(b, TENSOR_PARAM, 3, 1, 1, 1), f = make(b, TENSOR_F32, 3, 1, 1, 1);
    struct tensor w2 = make(b, TENSOR_PARAM, 3, 1, 1, 1), v2 = make(b, TENSOR_PARAM, 3, 1, 1, 1);
    struct tensor dw2 = make(b, TENSOR_PARAM, 3, 1, 1, 1);
    struct tensor x = make(b, TENSOR_ACT, 4, 3, 32, 32), labels = make(b, TENSOR_I32, 4, 1, 1, 1);
    struct tensor images = make(b, TENSOR_U8, 8, 3, 32, 32), il = make(b, TENSOR_U8, 8, 1, 1, 1);
    struct tensor rows = make(b, TENSOR_I32, 8, 1, 1, 1);
    const int32_t at[PLAN_CURSOR_LEN] = {1, 2, 1, 0};
    const float rates[4] = {0.5f, 0.25f, 0.125f, 0.0625f};
    memcpy(cur.data, at, sizeof(at));
    memcpy(lr.data, rates, sizeof(rates));
    for (int i = 0; i < 3; i++) {
        ((float *)w.data)[i] = ((float *)w2.data)[i] = 1.0f;
        ((float *)dw.data)[i] = ((float *)dw2.data)[i] = 1.0f;
    }
    struct sgd_item items[2] = {{&w, &v, &dw, 1.0, 0.0f, 2}, {&w2, &v2, &dw2, 2.0, 0.0f, 3}};
    struct sgd_item wrong = {&f, &v, &dw, 1.0, 0.0f, 0}, negative = {&w, &v, &dw, 1.0, 0.0f, -1};
    struct lerp_item pair = {&w, &f};
    fprintf(stderr, "(eight error messages expected below)\n");
    CHECK(advance(b, &bad) == DR_ERR_INTERNAL);
    CHECK(sgd(b, items, 2, &lr, &bad, 1) == DR_ERR_INTERNAL);
    CHECK(sgd(b, items, 2, &none, &cur, 1) == DR_ERR_INTERNAL);
    CHECK(sgd(b, &wrong, 1, &lr, &cur, 1) == DR_ERR_INTERNAL);
    CHECK(sgd(b, &negative, 1, &lr, &cur, 1) == DR_ERR_INTERNAL);
    CHECK(lerp_one(b, pair.avg, pair.w, 0.5f, 0) == DR_ERR_INTERNAL);
    CHECK(batch(b, &x, &labels, &images, &il, &rows, &cur, 3, NULL) == DR_ERR_INTERNAL);
    CHECK(batch(b, &x, &labels, &images, &il, &rows, &bad, 4, NULL) == DR_ERR_INTERNAL);
    CHECK(batch(b, &x, &labels, &images, &il, &rows, &cur, 4, NULL) == DR_OK);
    /* epoch 2: the first item (2 epochs) is frozen, the second stepped at lr 0.25 x 2 */
    CHECK(sgd(b, items, 2, &lr, &cur, 0) == DR_OK);
    CHECK(((float *)w.data)[2] == 1.0f && ((float *)w2.data)[2] == 0.5f);
    CHECK(advance(b, &cur) == DR_OK);
    const int32_t *now = cur.data;
    CHECK(now[CURSOR_STEP] == 2 && now[CURSOR_EPOCH] == 2 && now[CURSOR_INDEX] == 2);
    struct tensor *all[] = {&cur, &bad, &lr, &none, &w, &v, &dw, &f, &w2, &v2, &dw2, &x,
                            &labels, &images, &il, &rows};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) o->tensor_free(ctx, all[i]);
}

int main(void)
{
    struct backend b = {NULL, NULL};
    test_table();
    CHECK(backend_cpu_create(&b, 0) == DR_OK);
    if (b.ops) {
        test_memory(&b);
        test_network(&b);
        test_ghost_bn(&b);
        test_param_lerp(&b);
        test_concat_null(&b);
        test_augment(&b);
        test_plan_op_checks(&b);
    }
    backend_destroy(&b);
    return check_finish("test_backend_cpu");
}

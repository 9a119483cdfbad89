/* Finite-difference gradient checks for every CPU op's backward pass. For an op y = f(x)
 * the scalar L = sum(y ⊙ r) (r fixed random, summed in double) has dL/dx = backward(dy = r);
 * each input element is nudged by ±eps (the step actually taken in fp32 is used) and the
 * central difference of L is compared with the analytic gradient:
 *   |analytic - numeric| <= atol + rtol * |numeric|.
 * Tolerances. Linear ops (conv, linear, pools, structural ops) use eps = 0.05 (0.01 for
 * pools): their differences are exact but for the fp32 rounding of y (~1e-6 in L;
 * observed errors <= 4e-5), checked with atol = rtol = 2e-4. Smooth nonlinear ops (bn,
 * the activations, softmax) use eps = 1e-2: truncation ~eps² plus rounding (observed <= 4e-4,
 * for a 7-value batch norm), checked with atol 1e-3, rtol 2e-3; ghost batch norm (2 and 4
 * parts) is checked the same way. TEST_VERBOSE=1 prints the
 * worst error of each check. Kinks and ties are avoided: activation inputs keep |x| >= 0.4
 * (relu's kink at 0) and ||x| - 3| >= 0.1 (hardswish's at +-3), and max-pool inputs are
 * 0.1 apart. The accumulate = 1 path is checked against (previous
 * contents + overwrite result) within 1e-5, parameter gradients are pre-filled with junk
 * to check they are overwritten, and max pooling is checked to route ties to the first
 * maximum. Every activation kind (0 .. ACT_KIND_COUNT - 1) is checked: a new kind needs
 * no edit here unless it has a kink of its own to keep the inputs off. Dropout is checked
 * at a fixed seed, step and layer (a fixed mask, so the op is linear in x), and with p = 0
 * (every element kept, scale 1). Temperature is checked for both its gradients, dx and the
 * scalar's dt (linear in each), dt pre-filled with junk to check it is overwritten. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/activation.h"
#include "../kernels/batchnorm.h"
#include "../kernels/conv2d.h"
#include "../kernels/dropout.h"
#include "../kernels/linear.h"
#include "../kernels/loss.h"
#include "../kernels/pool.h"
#include "../kernels/temperature.h"
#include "../kernels/tensor_ops.h"
#include "check.h"
#include "support.h"

#define EPS_LIN 0.05
#define TOL_LIN 2e-4
#define EPS_NL 1e-2
#define ATOL_NL 1e-3
#define RTOL_NL 2e-3

/* ------------------------------------------------------------------ helpers */

/* The one source of this test's random inputs: the same values, in the same order, every run. */
static struct support_rng rng = {0x9E3779B97F4A7C15ull};

/* Values with |v| in [0.1, 1): away from relu's kink. */
static float *rand_away_from_zero(size_t n)
{
    float *p = malloc(sizeof(float) * (n ? n : 1));
    for (size_t i = 0; i < n; i++) {
        float v = support_urand(&rng, 0.1f, 1.0f);
        p[i] = support_urand(&rng, 0.0f, 1.0f) < 0.5f ? -v : v;
    }
    return p;
}

static double dot(const float *y, const float *r, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++) s += (double)y[i] * (double)r[i];
    return s;
}

typedef double (*loss_fn)(void *ctx);

/* Compares grad with central differences of f over every element of param. */
static void fd_check(const char *what, float *param, size_t count, const float *grad, loss_fn f,
                     void *ctx, double eps, double atol, double rtol)
{
    int bad = 0;
    double worst = 0.0;
    for (size_t i = 0; i < count; i++) {
        const float v = param[i];
        const float vp = (float)(v + eps), vm = (float)(v - eps);
        param[i] = vp;
        double lp = f(ctx);
        param[i] = vm;
        double lm = f(ctx);
        param[i] = v;
        double num = (lp - lm) / ((double)vp - (double)vm);
        double err = fabs((double)grad[i] - num);
        if (err > worst) worst = err;
        if (err > atol + rtol * fabs(num)) {
            if (bad < 3)
                fprintf(stderr, "  %s[%zu]: analytic %.6g numeric %.6g\n", what, i,
                        (double)grad[i], num);
            bad++;
        }
    }
    char msg[160];
    snprintf(msg, sizeof msg, "gradient of %s matches finite differences (%d of %zu off)", what,
             bad, count);
    check_record(bad == 0, __FILE__, __LINE__, msg);
    if (getenv("TEST_VERBOSE")) fprintf(stderr, "  %s: worst error %.3g\n", what, worst);
}

/* acc == pre + fresh elementwise within 1e-5 (absolute + relative). */
static void check_accumulated(const char *what, const float *acc, const float *pre,
                              const float *fresh, size_t n)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double want = (double)pre[i] + (double)fresh[i];
        if (fabs((double)acc[i] - want) > 1e-5 * (1.0 + fabs(want))) bad++;
    }
    char msg[160];
    snprintf(msg, sizeof msg, "accumulate=1 adds %s to existing contents (%d of %zu off)", what,
             bad, n);
    check_record(bad == 0, __FILE__, __LINE__, msg);
}

static float *copy_buf(const float *p, size_t n)
{
    float *q = malloc(sizeof(float) * (n ? n : 1));
    memcpy(q, p, sizeof(float) * n);
    return q;
}

/* ------------------------------------------------------------------ conv */

struct conv_case {
    struct conv2d_dims d;
    float *x, *w, *b, *y, *r;
    size_t nx, nw, ny;
    int failed;   /* a forward call returned an error */
};

static double conv_loss(void *p)
{
    struct conv_case *c = p;
    if (conv2d_forward_cpu(c->y, c->x, c->w, c->b, &c->d) != 0) c->failed = 1;
    return dot(c->y, c->r, c->ny);
}

static void test_conv(int n, int ci, int h, int co, int k, int stride, int pad, int bias)
{
    struct conv_case c;
    char name[96];
    c.d = (struct conv2d_dims){n, ci, h, h + 1, co, k, stride, pad, 0, 0};
    conv2d_dims_finish(&c.d);
    c.nx = (size_t)ci * n * h * (h + 1);
    c.nw = (size_t)co * ci * k * k;
    c.ny = (size_t)co * n * c.d.ho * c.d.wo;
    c.x = support_rand_buf(&rng, -1, 1, c.nx);
    c.w = support_rand_buf(&rng, -1, 1, c.nw);
    c.b = bias ? support_rand_buf(&rng, -1, 1, (size_t)co) : NULL;
    c.y = malloc(sizeof(float) * c.ny);
    c.r = support_rand_buf(&rng, -1, 1, c.ny);
    c.failed = 0;
    float *dx = support_rand_buf(&rng, -9, 9, c.nx), *dw = support_rand_buf(&rng, -9, 9, c.nw);
    float *db = support_rand_buf(&rng, -9, 9, (size_t)co);
    CHECK(conv2d_backward_cpu(dx, dw, bias ? db : NULL, c.r, c.x, c.w, &c.d, 0) == 0);

    snprintf(name, sizeof name, "conv k%d s%d p%d%s dx", k, stride, pad, bias ? " bias" : "");
    fd_check(name, c.x, c.nx, dx, conv_loss, &c, EPS_LIN, TOL_LIN, TOL_LIN);
    snprintf(name, sizeof name, "conv k%d s%d p%d%s dw", k, stride, pad, bias ? " bias" : "");
    fd_check(name, c.w, c.nw, dw, conv_loss, &c, EPS_LIN, TOL_LIN, TOL_LIN);
    if (bias) {
        snprintf(name, sizeof name, "conv k%d s%d p%d db", k, stride, pad);
        fd_check(name, c.b, (size_t)co, db, conv_loss, &c, EPS_LIN, TOL_LIN, TOL_LIN);
    }
    CHECK(!c.failed);

    /* accumulate: dx += ..., parameter gradients still overwritten */
    float *pre = support_rand_buf(&rng, -1, 1, c.nx), *acc = copy_buf(pre, c.nx),
          *dw2 = support_rand_buf(&rng, -9, 9, c.nw);
    CHECK(conv2d_backward_cpu(acc, dw2, NULL, c.r, c.x, c.w, &c.d, 1) == 0);
    snprintf(name, sizeof name, "conv k%d s%d p%d dx", k, stride, pad);
    check_accumulated(name, acc, pre, dx, c.nx);
    CHECK(memcmp(dw2, dw, sizeof(float) * c.nw) == 0);
    /* dx not wanted */
    CHECK(conv2d_backward_cpu(NULL, dw2, NULL, c.r, c.x, c.w, &c.d, 0) == 0);
    CHECK(memcmp(dw2, dw, sizeof(float) * c.nw) == 0);

    free(c.x); free(c.w); free(c.b); free(c.y); free(c.r);
    free(dx); free(dw); free(db); free(pre); free(acc); free(dw2);
}

/* ------------------------------------------------------------------ batch norm */

struct bn_case {
    int c, n, hw, splits;
    float *x, *gamma, *beta, *y, *r, *mean, *invstd, *rm, *rv;
};

static double bn_loss(void *p)
{
    struct bn_case *b = p;
    batchnorm_forward_train_cpu(b->y, b->mean, b->invstd, b->rm, b->rv, b->x, b->gamma, b->beta,
                                b->c, b->n, b->hw, b->splits, 1e-5f, 0.0f);
    return dot(b->y, b->r, (size_t)b->c * b->n * b->hw);
}

/* splits > 1: ghost batch norm, each part of n / splits images with its own statistics. */
static void test_bn(int c, int n, int hw, int splits)
{
    struct bn_case b = {c, n, hw, splits, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    const size_t cnt = (size_t)c * n * hw, nsave = (size_t)splits * c;
    char what[64];
    b.x = support_rand_buf(&rng, -1, 2, cnt);
    b.gamma = support_rand_buf(&rng, 0.5f, 1.5f, (size_t)c);
    b.beta = support_rand_buf(&rng, -0.5f, 0.5f, (size_t)c);
    b.y = malloc(sizeof(float) * cnt);
    b.r = support_rand_buf(&rng, -1, 1, cnt);
    b.mean = malloc(sizeof(float) * nsave);
    b.invstd = malloc(sizeof(float) * nsave);
    b.rm = calloc((size_t)c, sizeof(float));
    b.rv = calloc((size_t)c, sizeof(float));
    float *dx = support_rand_buf(&rng, -9, 9, cnt), *dg = support_rand_buf(&rng, -9, 9, (size_t)c);
    float *dbeta = support_rand_buf(&rng, -9, 9, (size_t)c);
    bn_loss(&b);
    batchnorm_backward_cpu(dx, dg, dbeta, b.r, b.x, b.gamma, b.mean, b.invstd, c, n, hw, splits,
                           0);
    snprintf(what, sizeof what, "bn/%d dx", splits);
    fd_check(what, b.x, cnt, dx, bn_loss, &b, EPS_NL, ATOL_NL, RTOL_NL);
    snprintf(what, sizeof what, "bn/%d dgamma", splits);
    fd_check(what, b.gamma, (size_t)c, dg, bn_loss, &b, EPS_NL, ATOL_NL, RTOL_NL);
    snprintf(what, sizeof what, "bn/%d dbeta", splits);
    fd_check(what, b.beta, (size_t)c, dbeta, bn_loss, &b, EPS_NL, ATOL_NL, RTOL_NL);

    bn_loss(&b);
    float *pre = support_rand_buf(&rng, -1, 1, cnt), *acc = copy_buf(pre, cnt);
    float *dg2 = support_rand_buf(&rng, -9, 9, (size_t)c),
          *db2 = support_rand_buf(&rng, -9, 9, (size_t)c);
    batchnorm_backward_cpu(acc, dg2, db2, b.r, b.x, b.gamma, b.mean, b.invstd, c, n, hw, splits,
                           1);
    snprintf(what, sizeof what, "bn/%d dx", splits);
    check_accumulated(what, acc, pre, dx, cnt);
    CHECK(memcmp(dg2, dg, sizeof(float) * (size_t)c) == 0);
    CHECK(memcmp(db2, dbeta, sizeof(float) * (size_t)c) == 0);
    /* dx not wanted: parameter gradients are still produced */
    memset(dg2, 0, sizeof(float) * (size_t)c);
    batchnorm_backward_cpu(NULL, dg2, db2, b.r, b.x, b.gamma, b.mean, b.invstd, c, n, hw, splits,
                           0);
    CHECK(memcmp(dg2, dg, sizeof(float) * (size_t)c) == 0);

    free(b.x); free(b.gamma); free(b.beta); free(b.y); free(b.r); free(b.mean); free(b.invstd);
    free(b.rm); free(b.rv); free(dx); free(dg); free(dbeta); free(pre); free(acc); free(dg2);
    free(db2);
}

/* ------------------------------------------------------------------ activations */

struct act_case {
    enum act_kind kind;
    float alpha;
    size_t n;
    float *x, *y, *r;
};

static double act_loss(void *p)
{
    struct act_case *a = p;
    activation_forward_cpu(a->y, a->x, a->kind, a->alpha, a->n);
    return dot(a->y, a->r, a->n);
}

static void test_act(enum act_kind kind, float alpha, const char *name)
{
    struct act_case a = {kind, alpha, 300, NULL, NULL, NULL};
    a.x = rand_away_from_zero(a.n);
    for (size_t i = 0; i < a.n; i++) {
        float v = a.x[i] * 4.0f;   /* |x| in [0.4, 4]: the saturated parts too */
        if (fabsf(fabsf(v) - 3.0f) < 0.1f) v *= 1.1f;   /* off hardswish's kinks at +-3 */
        a.x[i] = v;
    }
    a.y = malloc(sizeof(float) * a.n);
    a.r = support_rand_buf(&rng, -1, 1, a.n);
    float *dx = support_rand_buf(&rng, -9, 9, a.n);
    activation_backward_cpu(dx, a.r, a.x, kind, alpha, a.n, 0);
    fd_check(name, a.x, a.n, dx, act_loss, &a, EPS_NL, ATOL_NL, RTOL_NL);
    float *pre = support_rand_buf(&rng, -1, 1, a.n), *acc = copy_buf(pre, a.n);
    activation_backward_cpu(acc, a.r, a.x, kind, alpha, a.n, 1);
    check_accumulated(name, acc, pre, dx, a.n);
    free(a.x); free(a.y); free(a.r); free(dx); free(pre); free(acc);
}

/* ------------------------------------------------------------------ pooling */

struct pool_case {
    enum pool_kind kind;
    struct pool_dims d;
    float *x, *y, *r;
};

static double pool_loss(void *p)
{
    struct pool_case *c = p;
    pool_forward_cpu(c->y, c->x, c->kind, &c->d);
    return dot(c->y, c->r, (size_t)c->d.planes * c->d.ho * c->d.wo);
}

static void test_pool(enum pool_kind kind, int planes, int h, int w, int kh, int kw, int sh,
                      int sw)
{
    struct pool_case c;
    char name[96];
    c.kind = kind;
    c.d = (struct pool_dims){planes, h, w, kh, kw, sh, sw, (h - kh) / sh + 1, (w - kw) / sw + 1};
    const size_t nx = (size_t)planes * h * w, ny = (size_t)planes * c.d.ho * c.d.wo;
    /* distinct values 0.1 apart in a shuffled order: no ties, no argmax change under ±eps */
    c.x = malloc(sizeof(float) * nx);
    for (size_t i = 0; i < nx; i++) c.x[i] = 0.1f * (float)i - 0.05f * (float)nx;
    for (size_t i = nx - 1; i > 0; i--) {
        size_t j = (size_t)(support_urand(&rng, 0.0f, 1.0f) * (float)(i + 1));
        if (j > i) j = i;
        float t = c.x[i];
        c.x[i] = c.x[j];
        c.x[j] = t;
    }
    c.y = malloc(sizeof(float) * ny);
    c.r = support_rand_buf(&rng, -1, 1, ny);
    float *dx = support_rand_buf(&rng, -9, 9, nx);
    pool_forward_cpu(c.y, c.x, kind, &c.d);
    pool_backward_cpu(dx, c.r, c.x, c.y, kind, &c.d, 0);
    snprintf(name, sizeof name, "%s pool %dx%d/%dx%d on %dx%d", kind == POOL_MAX ? "max" : "avg",
             kh, kw, sh, sw, h, w);
    fd_check(name, c.x, nx, dx, pool_loss, &c, EPS_LIN / 5, TOL_LIN, TOL_LIN);
    float *pre = support_rand_buf(&rng, -1, 1, nx), *acc = copy_buf(pre, nx);
    pool_backward_cpu(acc, c.r, c.x, c.y, kind, &c.d, 1);
    check_accumulated(name, acc, pre, dx, nx);
    free(c.x); free(c.y); free(c.r); free(dx); free(pre); free(acc);
}

/* Ties: each window's gradient goes to its first maximum in row-major order. */
static void test_maxpool_ties(void)
{
    /* one 4x4 plane, 2x2 windows: window 0 all equal, window 1 max at (0,3) and (1,2),
     * window 2 max at (3,0) and (3,1), window 3 max at (2,3) and (3,3) */
    const float x[16] = {1, 1, 0, 5,
                         1, 1, 5, 2,
                         0, 0, 1, 4,
                         3, 3, 2, 4};
    const float dy[4] = {1, 2, 3, 4};
    float y[4], dx[16];
    struct pool_dims d = {1, 4, 4, 2, 2, 2, 2, 2, 2};
    pool_forward_cpu(y, x, POOL_MAX, &d);
    CHECK(y[0] == 1 && y[1] == 5 && y[2] == 3 && y[3] == 4);
    pool_backward_cpu(dx, dy, x, y, POOL_MAX, &d, 0);
    const float want[16] = {1, 0, 0, 2,
                            0, 0, 0, 0,
                            0, 0, 0, 4,
                            3, 0, 0, 0};
    CHECK(memcmp(dx, want, sizeof want) == 0);
    /* global window with a tie: the first of the maximal values */
    struct pool_dims g = {1, 4, 4, 4, 4, 4, 4, 1, 1};
    const float x2[16] = {0, 1, 7, 2, 7, 0, 0, 0, 1, 1, 1, 1, 7, 0, 0, 0};
    float y2, one = 1.0f, dx2[16];
    pool_forward_cpu(&y2, x2, POOL_MAX, &g);
    pool_backward_cpu(dx2, &one, x2, &y2, POOL_MAX, &g, 0);
    CHECK(y2 == 7.0f);
    for (int i = 0; i < 16; i++) CHECK(dx2[i] == (i == 2 ? 1.0f : 0.0f));
    /* overlapping 2x2 windows at stride 1 on a constant 3x3 plane: each window's
     * top-left element, so (0,0), (0,1), (1,0), (1,1) get 1, 2, 3, 4 */
    struct pool_dims o = {1, 3, 3, 2, 2, 1, 1, 2, 2};
    const float x3[9] = {2, 2, 2, 2, 2, 2, 2, 2, 2};
    float y3[4], dx3[9];
    pool_forward_cpu(y3, x3, POOL_MAX, &o);
    pool_backward_cpu(dx3, dy, x3, y3, POOL_MAX, &o, 0);
    const float want3[9] = {1, 2, 0, 3, 4, 0, 0, 0, 0};
    CHECK(memcmp(dx3, want3, sizeof want3) == 0);
}

/* ------------------------------------------------------------------ structural ops */

struct concat_case {
    int count, cs[3];
    size_t plane;
    float *xs[3], *y, *r;
};

static double concat_loss(void *p)
{
    struct concat_case *c = p;
    int total = 0;
    for (int i = 0; i < c->count; i++) total += c->cs[i];
    concat_forward_cpu(c->y, (const float *const *)c->xs, c->cs, c->count, c->plane);
    return dot(c->y, c->r, (size_t)total * c->plane);
}

static void test_concat(int count)
{
    struct concat_case c = {count, {2, 3, 1}, 2 * 3 * 4, {NULL, NULL, NULL}, NULL, NULL};
    int total = 0, accs[3] = {1, 0, 1};
    float *dxs[3], *pres[3];
    for (int i = 0; i < count; i++) total += c.cs[i];
    for (int i = 0; i < count; i++)
        c.xs[i] = support_rand_buf(&rng, -1, 1, (size_t)c.cs[i] * c.plane);
    c.y = malloc(sizeof(float) * (size_t)total * c.plane);
    c.r = support_rand_buf(&rng, -1, 1, (size_t)total * c.plane);
    int zeros[3] = {0, 0, 0};
    for (int i = 0; i < count; i++)
        dxs[i] = support_rand_buf(&rng, -9, 9, (size_t)c.cs[i] * c.plane);
    concat_backward_cpu(dxs, c.r, c.cs, count, c.plane, zeros);
    for (int i = 0; i < count; i++) {
        char name[64];
        snprintf(name, sizeof name, "concat of %d, input %d", count, i);
        fd_check(name, c.xs[i], (size_t)c.cs[i] * c.plane, dxs[i], concat_loss, &c, EPS_LIN,
                 TOL_LIN, TOL_LIN);
    }
    /* mixed accumulate flags; a NULL gradient is skipped */
    float *accd[3];
    for (int i = 0; i < count; i++) {
        pres[i] = support_rand_buf(&rng, -1, 1, (size_t)c.cs[i] * c.plane);
        accd[i] = copy_buf(pres[i], (size_t)c.cs[i] * c.plane);
    }
    float *keep = accd[count - 1];
    accd[count - 1] = NULL;
    concat_backward_cpu(accd, c.r, c.cs, count, c.plane, accs);
    accd[count - 1] = keep;
    for (int i = 0; i < count - 1; i++) {
        size_t n = (size_t)c.cs[i] * c.plane;
        if (accs[i]) {
            check_accumulated("concat slice", accd[i], pres[i], dxs[i], n);
        } else {
            CHECK(memcmp(accd[i], dxs[i], sizeof(float) * n) == 0);
        }
    }
    CHECK(memcmp(keep, pres[count - 1], sizeof(float) * (size_t)c.cs[count - 1] * c.plane) == 0);
    for (int i = 0; i < count; i++) {
        free(c.xs[i]); free(dxs[i]); free(pres[i]); free(accd[i]);
    }
    free(c.y); free(c.r);
}

struct ew_case {
    int op;   /* 0 add, 1 scale, 2 flatten */
    float s;
    int c, n, hw;
    float *a, *b, *y, *r;
};

static double ew_loss(void *p)
{
    struct ew_case *e = p;
    size_t cnt = (size_t)e->c * e->n * e->hw;
    if (e->op == 0) add_forward_cpu(e->y, e->a, e->b, cnt);
    if (e->op == 1) scale_forward_cpu(e->y, e->a, e->s, cnt);
    if (e->op == 2) flatten_forward_cpu(e->y, e->a, e->c, e->n, e->hw);
    return dot(e->y, e->r, cnt);
}

static void test_elementwise(void)
{
    struct ew_case e = {0, 1.0f, 3, 4, 5, NULL, NULL, NULL, NULL};
    const size_t cnt = 60;
    e.a = support_rand_buf(&rng, -1, 1, cnt);
    e.b = support_rand_buf(&rng, -1, 1, cnt);
    e.y = malloc(sizeof(float) * cnt);
    e.r = support_rand_buf(&rng, -1, 1, cnt);
    float *g = support_rand_buf(&rng, -9, 9, cnt), *pre = support_rand_buf(&rng, -1, 1, cnt),
          *acc = copy_buf(pre, cnt);

    /* add: both inputs get dy (scaled_copy with s = 1) */
    scaled_copy_cpu(g, e.r, 1.0f, cnt, 0);
    fd_check("add input a", e.a, cnt, g, ew_loss, &e, EPS_LIN, TOL_LIN, TOL_LIN);
    fd_check("add input b", e.b, cnt, g, ew_loss, &e, EPS_LIN, TOL_LIN, TOL_LIN);
    scaled_copy_cpu(acc, e.r, 1.0f, cnt, 1);
    check_accumulated("add", acc, pre, g, cnt);

    /* scale */
    e.op = 1;
    e.s = 0.125f;
    scaled_copy_cpu(g, e.r, e.s, cnt, 0);
    fd_check("scale", e.a, cnt, g, ew_loss, &e, EPS_LIN, TOL_LIN, TOL_LIN);
    memcpy(acc, pre, sizeof(float) * cnt);
    scaled_copy_cpu(acc, e.r, e.s, cnt, 1);
    check_accumulated("scale", acc, pre, g, cnt);

    /* flatten */
    e.op = 2;
    flatten_backward_cpu(g, e.r, e.c, e.n, e.hw, 0);
    fd_check("flatten", e.a, cnt, g, ew_loss, &e, EPS_LIN, TOL_LIN, TOL_LIN);
    memcpy(acc, pre, sizeof(float) * cnt);
    flatten_backward_cpu(acc, e.r, e.c, e.n, e.hw, 1);
    check_accumulated("flatten", acc, pre, g, cnt);

    free(e.a); free(e.b); free(e.y); free(e.r); free(g); free(pre); free(acc);
}

/* ------------------------------------------------------------------ dropout */

struct dropout_case {
    struct dropout_attr a;
    uint32_t step;
    int c, n, hw;
    float *x, *y, *r;
};

static double dropout_loss(void *p)
{
    struct dropout_case *d = p;
    dropout_forward_cpu(d->y, d->x, &d->a, d->step, d->c, d->n, d->hw);
    return dot(d->y, d->r, (size_t)d->c * d->n * d->hw);
}

/* The input gradient at a fixed mask (seed, step, layer), overwriting and accumulating;
 * dropped elements get exactly 0 and kept ones exactly dy / (1 - p). */
static void test_dropout(float p, int c, int n, int hw)
{
    struct dropout_case d = {{.seed = 0x5eedu, .p = p, .layer = 3}, 11, c, n, hw, NULL, NULL, NULL};
    const size_t cnt = (size_t)c * n * hw;
    d.x = support_rand_buf(&rng, -1, 1, cnt);
    d.y = malloc(sizeof(float) * cnt);
    d.r = support_rand_buf(&rng, -1, 1, cnt);
    float *g = support_rand_buf(&rng, -9, 9, cnt), *pre = support_rand_buf(&rng, -1, 1, cnt),
          *acc = copy_buf(pre, cnt);
    char name[64];
    snprintf(name, sizeof name, "dropout p %g", (double)p);
    dropout_backward_cpu(g, d.r, &d.a, d.step, c, n, hw, 0);
    fd_check(name, d.x, cnt, g, dropout_loss, &d, EPS_LIN, TOL_LIN, TOL_LIN);
    int exact = 1, kept = 0;
    for (size_t i = 0; i < cnt; i++) {
        kept += g[i] != 0.0f;
        exact &= g[i] == 0.0f || g[i] == d.r[i] * dropout_scale(p);
    }
    CHECK(exact);
    CHECK(p > 0.0f ? kept > 0 && (size_t)kept < cnt : (size_t)kept == cnt);
    dropout_backward_cpu(acc, d.r, &d.a, d.step, c, n, hw, 1);
    check_accumulated(name, acc, pre, g, cnt);
    free(d.x); free(d.y); free(d.r); free(g); free(pre); free(acc);
}

/* ------------------------------------------------------------------ temperature */

struct temperature_case {
    float t;
    size_t count;
    float *x, *y, *r;
};

static double temperature_loss(void *p)
{
    struct temperature_case *e = p;
    temperature_forward_cpu(e->y, e->x, e->t, e->count);
    return dot(e->y, e->r, e->count);
}

/* dx and dt of y = t x against finite differences (in x, and in t), dx's accumulate path,
 * and both gradients computed alone (the other NULL) the same. */
static void test_temperature(float t, size_t count)
{
    struct temperature_case e = {t, count, NULL, NULL, NULL};
    e.x = support_rand_buf(&rng, -2, 2, count);
    e.y = malloc(sizeof(float) * count);
    e.r = support_rand_buf(&rng, -1, 1, count);
    float *g = support_rand_buf(&rng, -9, 9, count), *pre = support_rand_buf(&rng, -1, 1, count),
          *acc = copy_buf(pre, count);
    float dt = 1234.5f, dt_alone = -7.0f;
    char name[64];
    snprintf(name, sizeof name, "temperature t %g dx (%zu)", (double)t, count);
    temperature_backward_cpu(g, &dt, e.r, e.x, e.t, count, 0);
    fd_check(name, e.x, count, g, temperature_loss, &e, EPS_LIN, TOL_LIN, TOL_LIN);
    snprintf(name, sizeof name, "temperature t %g dt (%zu)", (double)t, count);
    fd_check(name, &e.t, 1, &dt, temperature_loss, &e, EPS_LIN, TOL_LIN, TOL_LIN);
    temperature_backward_cpu(acc, NULL, e.r, e.x, e.t, count, 1);
    check_accumulated(name, acc, pre, g, count);
    temperature_backward_cpu(NULL, &dt_alone, e.r, e.x, e.t, count, 0);
    CHECK(dt_alone == dt);
    free(e.x); free(e.y); free(e.r); free(g); free(pre); free(acc);
}

/* ------------------------------------------------------------------ linear */

struct linear_case {
    int out, in, n;
    float *x, *w, *b, *y, *r;
};

static double linear_loss(void *p)
{
    struct linear_case *l = p;
    linear_forward_cpu(l->y, l->x, l->w, l->b, l->out, l->in, l->n);
    return dot(l->y, l->r, (size_t)l->out * l->n);
}

static void test_linear(int out, int in, int n, int bias)
{
    struct linear_case l = {out, in, n, NULL, NULL, NULL, NULL, NULL};
    const size_t nx = (size_t)in * n, nw = (size_t)out * in, ny = (size_t)out * n;
    l.x = support_rand_buf(&rng, -1, 1, nx);
    l.w = support_rand_buf(&rng, -1, 1, nw);
    l.b = bias ? support_rand_buf(&rng, -1, 1, (size_t)out) : NULL;
    l.y = malloc(sizeof(float) * ny);
    l.r = support_rand_buf(&rng, -1, 1, ny);
    float *dx = support_rand_buf(&rng, -9, 9, nx), *dw = support_rand_buf(&rng, -9, 9, nw),
          *db = support_rand_buf(&rng, -9, 9, (size_t)out);
    linear_backward_cpu(dx, dw, bias ? db : NULL, l.r, l.x, l.w, out, in, n, 0);
    fd_check(bias ? "linear+bias dx" : "linear dx", l.x, nx, dx, linear_loss, &l, EPS_LIN,
             TOL_LIN, TOL_LIN);
    fd_check(bias ? "linear+bias dw" : "linear dw", l.w, nw, dw, linear_loss, &l, EPS_LIN,
             TOL_LIN, TOL_LIN);
    if (bias)
        fd_check("linear db", l.b, (size_t)out, db, linear_loss, &l, EPS_LIN, TOL_LIN, TOL_LIN);
    float *pre = support_rand_buf(&rng, -1, 1, nx), *acc = copy_buf(pre, nx),
          *dw2 = support_rand_buf(&rng, -9, 9, nw);
    linear_backward_cpu(acc, dw2, NULL, l.r, l.x, l.w, out, in, n, 1);
    check_accumulated("linear dx", acc, pre, dx, nx);
    CHECK(memcmp(dw2, dw, sizeof(float) * nw) == 0);
    free(l.x); free(l.w); free(l.b); free(l.y); free(l.r); free(dx); free(dw); free(db);
    free(pre); free(acc); free(dw2);
}

/* ------------------------------------------------------------------ loss */

struct xent_case {
    int k, n;
    float smoothing, scale;
    float *logits, *probs;
    int32_t *labels;
};

static double xent_loss(void *p)
{
    struct xent_case *x = p;
    float stats[2] = {0, 0};
    xent_forward_cpu(stats, x->probs, x->logits, x->labels, x->k, x->n, x->smoothing);
    return (double)x->scale * (double)stats[0];
}

static void test_xent(float smoothing, float scale)
{
    struct xent_case x = {7, 6, smoothing, scale, NULL, NULL, NULL};
    const size_t cnt = (size_t)x.k * x.n;
    char name[80];
    x.logits = support_rand_buf(&rng, -2, 2, cnt);
    x.probs = malloc(sizeof(float) * cnt);
    x.labels = malloc(sizeof(int32_t) * (size_t)x.n);
    for (int i = 0; i < x.n; i++) x.labels[i] = (i * 3 + 1) % x.k;
    float *g = support_rand_buf(&rng, -9, 9, cnt);
    xent_loss(&x);
    xent_backward_cpu(g, x.probs, x.labels, x.k, x.n, smoothing, scale);
    snprintf(name, sizeof name, "softmax cross-entropy (smoothing %.1f, scale %.3f)",
             (double)smoothing, (double)scale);
    fd_check(name, x.logits, cnt, g, xent_loss, &x, EPS_NL, ATOL_NL * scale, RTOL_NL);
    free(x.logits); free(x.probs); free(x.labels); free(g);
}

int main(void)
{
    /* conv: k 1 and 3, stride 1 and 2, pad 0 and 1, with and without bias; odd sizes so
     * that the batch splits into uneven chunks */
    test_conv(3, 3, 7, 4, 3, 1, 1, 1);
    test_conv(5, 2, 5, 3, 3, 1, 1, 0);
    test_conv(3, 3, 7, 4, 3, 2, 1, 0);
    test_conv(3, 2, 6, 3, 3, 2, 0, 1);
    test_conv(3, 3, 5, 4, 3, 1, 0, 0);
    test_conv(4, 4, 5, 3, 1, 1, 0, 1);
    test_conv(3, 4, 6, 3, 1, 2, 0, 0);
    test_conv(2, 2, 4, 2, 1, 1, 1, 0);

    test_bn(3, 4, 5, 1);
    test_bn(2, 7, 1, 1);
    /* ghost batch norm: parts of 2 images (12 values) and of 2 images (8 values) */
    test_bn(3, 4, 6, 2);
    test_bn(2, 8, 4, 4);

    /* every activation kind, each at two alphas (celu reads it, the others ignore it) */
    for (int k = 0; k < ACT_KIND_COUNT; k++)
        for (int a = 0; a < 2; a++) {
            const float alpha = a ? 1.0f : 0.3f;
            char name[64];
            snprintf(name, sizeof name, "%s alpha %g", act_kind_name((enum act_kind)k),
                     (double)alpha);
            test_act((enum act_kind)k, alpha, name);
        }

    test_pool(POOL_MAX, 6, 6, 6, 2, 2, 2, 2);
    test_pool(POOL_MAX, 3, 7, 8, 2, 2, 2, 2);
    test_pool(POOL_MAX, 3, 6, 7, 2, 2, 2, 2);
    test_pool(POOL_MAX, 4, 7, 7, 3, 3, 2, 2);
    test_pool(POOL_MAX, 5, 4, 4, 4, 4, 4, 4);
    test_pool(POOL_AVG, 6, 6, 6, 2, 2, 2, 2);
    test_pool(POOL_AVG, 4, 7, 7, 3, 3, 2, 2);
    test_pool(POOL_AVG, 5, 4, 4, 4, 4, 4, 4);
    test_maxpool_ties();

    test_concat(2);
    test_concat(3);
    test_elementwise();
    test_dropout(0.5f, 3, 4, 5);
    test_dropout(0.2f, 2, 3, 17);
    test_dropout(0.0f, 2, 2, 6);
    test_temperature(1.0f, 60);
    test_temperature(0.375f, 17);
    test_temperature(2.5f, 1);

    test_linear(5, 7, 6, 1);
    test_linear(4, 9, 3, 0);

    test_xent(0.0f, 1.0f);
    test_xent(0.2f, 1.0f);
    test_xent(0.0f, 1.0f / 6.0f);
    test_xent(0.2f, 1.0f / 6.0f);

    return check_finish("test_ops_grad");
}

/* Forward outputs of the CPU ops against plain double-precision reference implementations
 * written here, at odd sizes (batches that do not split evenly into the convolution's
 * chunks, odd planes) and at one realistic ResNet-9 shape; the convolution's backward
 * pass at a size with many chunks; ghost batch norm against separate batch norms of its
 * parts; SGD and weight averaging against the rules in kernels/optimizer.h; and
 * determinism (two runs on fresh buffers are bit-identical).
 * Tolerances: outputs that are sums compare with |y - ref| <= 1e-5 * sum|terms| + 1e-6
 * (fp32 accumulation error grows with the terms' magnitude, not with the result);
 * elementwise ops compare within 1e-6 relative; SGD and weight averaging are compared
 * exactly, since each rule is a fixed sequence of fp32 operations. Dropout is compared
 * exactly with its specification (kernels/dropout.h: the Philox words drawn here with
 * rng_draw, element by element in NCHW order), and its masks' statistics are checked.
 * Temperature's y and dx are compared exactly with their fp32 products and sums, its dt
 * with a compensated double sum of the products (within 1e-12 of the sum of |dy x|), and
 * exactly where every partial sum is an integer. */
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
#include "../kernels/optimizer.h"
#include "../kernels/pool.h"
#include "../kernels/temperature.h"
#include "../kernels/tensor_ops.h"
#include "check.h"
#include "support.h"

/* The one source of this test's random inputs: the same values, in the same order, every run. */
static struct support_rng rng = {0x2545F4914F6CDD1Dull};

/* Counts elements with |got - want| > rel * scale[i] + abs_tol and records one check. */
static void compare(const char *what, const float *got, const double *want, const double *scale,
                    size_t n, double rel, double abs_tol)
{
    int bad = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = rel * (scale ? scale[i] : fabs(want[i])) + abs_tol;
        if (!(fabs((double)got[i] - want[i]) <= tol)) {
            if (bad < 3)
                fprintf(stderr, "  %s[%zu]: got %.8g want %.8g\n", what, i, (double)got[i],
                        want[i]);
            bad++;
        }
    }
    char msg[160];
    snprintf(msg, sizeof msg, "%s matches the reference (%d of %zu off)", what, bad, n);
    check_record(bad == 0, __FILE__, __LINE__, msg);
}

/* ------------------------------------------------------------------ conv */

/* y[o][i][oy][ox] = b[o] + sum w[o][c][ky][kx] x[c][i][iy][ix] in CNHW; sabs gets sum|terms|. */
static void conv_ref(double *y, double *sabs, const float *x, const float *w, const float *b,
                     const struct conv2d_dims *d)
{
    for (int o = 0; o < d->co; o++)
        for (int i = 0; i < d->n; i++)
            for (int oy = 0; oy < d->ho; oy++)
                for (int ox = 0; ox < d->wo; ox++) {
                    double s = b ? b[o] : 0.0, a = b ? fabs(b[o]) : 0.0;
                    for (int c = 0; c < d->c; c++)
                        for (int ky = 0; ky < d->k; ky++)
                            for (int kx = 0; kx < d->k; kx++) {
                                int iy = oy * d->stride - d->pad + ky;
                                int ix = ox * d->stride - d->pad + kx;
                                if (iy < 0 || iy >= d->h || ix < 0 || ix >= d->w) continue;
                                double t = (double)w[((o * d->c + c) * d->k + ky) * d->k + kx] *
                                           x[(((size_t)c * d->n + i) * d->h + iy) * d->w + ix];
                                s += t;
                                a += fabs(t);
                            }
                    size_t at = (((size_t)o * d->n + i) * d->ho + oy) * d->wo + ox;
                    y[at] = s;
                    sabs[at] = a;
                }
}

/* Gradients of conv_ref for output gradient g, accumulated in double. */
static void conv_backward_ref(double *dx, double *dxa, double *dw, double *dwa, double *db,
                              double *dba, const float *g, const float *x, const float *w,
                              const struct conv2d_dims *d)
{
    const size_t nx = (size_t)d->c * d->n * d->h * d->w, nw = (size_t)d->co * d->c * d->k * d->k;
    memset(dx, 0, sizeof(double) * nx);
    memset(dxa, 0, sizeof(double) * nx);
    memset(dw, 0, sizeof(double) * nw);
    memset(dwa, 0, sizeof(double) * nw);
    memset(db, 0, sizeof(double) * (size_t)d->co);
    memset(dba, 0, sizeof(double) * (size_t)d->co);
    for (int o = 0; o < d->co; o++)
        for (int i = 0; i < d->n; i++)
            for (int oy = 0; oy < d->ho; oy++)
                for (int ox = 0; ox < d->wo; ox++) {
                    double gv = g[(((size_t)o * d->n + i) * d->ho + oy) * d->wo + ox];
                    db[o] += gv;
                    dba[o] += fabs(gv);
                    for (int c = 0; c < d->c; c++)
                        for (int ky = 0; ky < d->k; ky++)
                            for (int kx = 0; kx < d->k; kx++) {
                                int iy = oy * d->stride - d->pad + ky;
                                int ix = ox * d->stride - d->pad + kx;
                                if (iy < 0 || iy >= d->h || ix < 0 || ix >= d->w) continue;
                                size_t xi = (((size_t)c * d->n + i) * d->h + iy) * d->w + ix;
                                size_t wi = (((size_t)o * d->c + c) * d->k + ky) * d->k + kx;
                                dx[xi] += gv * w[wi];
                                dxa[xi] += fabs(gv * w[wi]);
                                dw[wi] += gv * x[xi];
                                dwa[wi] += fabs(gv * x[xi]);
                            }
                }
}

static void test_conv(int n, int c, int h, int w, int co, int k, int stride, int pad, int bias,
                      int backward)
{
    struct conv2d_dims d = {n, c, h, w, co, k, stride, pad, 0, 0};
    char name[128];
    conv2d_dims_finish(&d);
    const size_t nx = (size_t)c * n * h * w, nw = (size_t)co * c * k * k;
    const size_t ny = (size_t)co * n * d.ho * d.wo;
    float *x = support_rand_buf(&rng, -1, 1, nx), *wt = support_rand_buf(&rng, -0.5f, 0.5f, nw);
    float *b = bias ? support_rand_buf(&rng, -1, 1, (size_t)co) : NULL;
    float *y = malloc(sizeof(float) * ny), *y2 = malloc(sizeof(float) * ny);
    double *ref = malloc(sizeof(double) * ny), *sabs = malloc(sizeof(double) * ny);
    snprintf(name, sizeof name, "conv n%d %d->%d %dx%d k%d s%d p%d%s", n, c, co, h, w, k, stride,
             pad, bias ? " bias" : "");
    CHECK(conv2d_forward_cpu(y, x, wt, b, &d) == 0);
    conv_ref(ref, sabs, x, wt, b, &d);
    compare(name, y, ref, sabs, ny, 1e-5, 1e-6);
    /* determinism: a second run on fresh buffers gives the same bits */
    CHECK(conv2d_forward_cpu(y2, x, wt, b, &d) == 0);
    CHECK(memcmp(y, y2, sizeof(float) * ny) == 0);

    if (backward) {
        float *g = support_rand_buf(&rng, -1, 1, ny), *dx = malloc(sizeof(float) * nx);
        float *dw = malloc(sizeof(float) * nw), *db = malloc(sizeof(float) * (size_t)co);
        float *dx2 = malloc(sizeof(float) * nx), *dw2 = malloc(sizeof(float) * nw);
        float *db2 = malloc(sizeof(float) * (size_t)co);
        double *rdx = malloc(sizeof(double) * nx), *rdxa = malloc(sizeof(double) * nx);
        double *rdw = malloc(sizeof(double) * nw), *rdwa = malloc(sizeof(double) * nw);
        double *rdb = malloc(sizeof(double) * (size_t)co),
               *rdba = malloc(sizeof(double) * (size_t)co);
        CHECK(conv2d_backward_cpu(dx, dw, db, g, x, wt, &d, 0) == 0);
        conv_backward_ref(rdx, rdxa, rdw, rdwa, rdb, rdba, g, x, wt, &d);
        char sub[160];
        snprintf(sub, sizeof sub, "%s dx", name);
        compare(sub, dx, rdx, rdxa, nx, 1e-5, 1e-6);
        snprintf(sub, sizeof sub, "%s dw", name);
        compare(sub, dw, rdw, rdwa, nw, 1e-5, 1e-6);
        snprintf(sub, sizeof sub, "%s db", name);
        compare(sub, db, rdb, rdba, (size_t)co, 1e-5, 1e-6);
        CHECK(conv2d_backward_cpu(dx2, dw2, db2, g, x, wt, &d, 0) == 0);
        CHECK(memcmp(dx, dx2, sizeof(float) * nx) == 0);
        CHECK(memcmp(dw, dw2, sizeof(float) * nw) == 0);
        CHECK(memcmp(db, db2, sizeof(float) * (size_t)co) == 0);
        free(g); free(dx); free(dw); free(db); free(dx2); free(dw2); free(db2);
        free(rdx); free(rdxa); free(rdw); free(rdwa); free(rdb); free(rdba);
    }
    free(x); free(wt); free(b); free(y); free(y2); free(ref); free(sabs);
}

/* ------------------------------------------------------------------ batch norm */

/* splits > 1: ghost batch norm, the reference normalising each part of n / splits images
 * with its own statistics and updating the running statistics with their means. */
static void test_bn(int c, int n, int hw, int splits)
{
    const size_t plane = (size_t)n * hw, cnt = plane / (size_t)splits, total = (size_t)c * plane;
    const size_t nsave = (size_t)splits * c;
    const float eps = 1e-5f, momentum = 0.1f;
    float *x = support_rand_buf(&rng, -2, 3, total), *y = malloc(sizeof(float) * total);
    float *y2 = malloc(sizeof(float) * total);
    float *gamma = support_rand_buf(&rng, 0.5f, 1.5f, (size_t)c),
          *beta = support_rand_buf(&rng, -1, 1, (size_t)c);
    float *mean = malloc(sizeof(float) * nsave), *invstd = malloc(sizeof(float) * nsave);
    float *rm = support_rand_buf(&rng, -0.1f, 0.1f, (size_t)c),
          *rv = support_rand_buf(&rng, 0.9f, 1.1f, (size_t)c);
    float *rm0 = malloc(sizeof(float) * (size_t)c), *rv0 = malloc(sizeof(float) * (size_t)c);
    double *ref = malloc(sizeof(double) * total), *rmean = malloc(sizeof(double) * nsave);
    double *rinv = malloc(sizeof(double) * nsave), *rrm = malloc(sizeof(double) * (size_t)c);
    double *rrv = malloc(sizeof(double) * (size_t)c);
    char what[96];
    /* channels with a large offset test the variance's numerical robustness */
    for (size_t i = 0; i < plane; i++) x[i] = 100.0f + 0.01f * x[i];
    memcpy(rm0, rm, sizeof(float) * (size_t)c);
    memcpy(rv0, rv, sizeof(float) * (size_t)c);

    for (int ch = 0; ch < c; ch++) {
        double mean_sum = 0.0, unbiased_sum = 0.0;
        for (int p = 0; p < splits; p++) {
            const size_t at = (size_t)ch * plane + (size_t)p * cnt;
            const float *xc = x + at;
            double s = 0.0, q = 0.0;
            for (size_t i = 0; i < cnt; i++) s += xc[i];
            double m = s / (double)cnt;
            for (size_t i = 0; i < cnt; i++) q += (xc[i] - m) * (xc[i] - m);
            double var = q / (double)cnt, inv = 1.0 / sqrt(var + eps);
            rmean[(size_t)p * c + ch] = m;
            rinv[(size_t)p * c + ch] = inv;
            mean_sum += m;
            unbiased_sum += q / (double)(cnt - 1);
            for (size_t i = 0; i < cnt; i++)
                ref[at + i] = (xc[i] - m) * inv * gamma[ch] + beta[ch];
        }
        rrm[ch] = (1.0 - momentum) * rm0[ch] + momentum * mean_sum / splits;
        rrv[ch] = (1.0 - momentum) * rv0[ch] + momentum * unbiased_sum / splits;
    }
    batchnorm_forward_train_cpu(y, mean, invstd, rm, rv, x, gamma, beta, c, n, (int)hw, splits,
                                eps, momentum);
    snprintf(what, sizeof what, "bn train output (%d, %d, %d) / %d", c, n, hw, splits);
    compare(what, y, ref, NULL, total, 1e-5, 1e-5);
    compare("bn saved mean", mean, rmean, NULL, nsave, 1e-6, 1e-7);
    compare("bn saved invstd", invstd, rinv, NULL, nsave, 1e-5, 0);
    compare("bn running mean", rm, rrm, NULL, (size_t)c, 1e-6, 1e-7);
    compare("bn running var (unbiased)", rv, rrv, NULL, (size_t)c, 1e-5, 1e-7);

    /* determinism, and momentum 0 leaves the running statistics alone */
    float *rmb = malloc(sizeof(float) * (size_t)c), *rvb = malloc(sizeof(float) * (size_t)c);
    memcpy(rmb, rm, sizeof(float) * (size_t)c);
    memcpy(rvb, rv, sizeof(float) * (size_t)c);
    batchnorm_forward_train_cpu(y2, mean, invstd, rm, rv, x, gamma, beta, c, n, (int)hw, splits,
                                eps, 0.0f);
    CHECK(memcmp(y, y2, sizeof(float) * total) == 0);
    CHECK(memcmp(rm, rmb, sizeof(float) * (size_t)c) == 0 &&
          memcmp(rv, rvb, sizeof(float) * (size_t)c) == 0);

    /* eval mode normalises with the running statistics */
    for (int ch = 0; ch < c; ch++) {
        double inv = 1.0 / sqrt((double)rv[ch] + eps);
        for (size_t i = 0; i < plane; i++) {
            size_t at = (size_t)ch * plane + i;
            ref[at] = ((double)x[at] - rm[ch]) * inv * gamma[ch] + beta[ch];
        }
    }
    batchnorm_forward_eval_cpu(y, x, gamma, beta, rm, rv, c, n, (int)hw, eps);
    /* |x - mean| ~ 100 here, so allow for the fp32 rounding of x * scale */
    double *scale = malloc(sizeof(double) * total);
    for (int ch = 0; ch < c; ch++) {
        double inv = 1.0 / sqrt((double)rv[ch] + eps);
        for (size_t i = 0; i < plane; i++) {
            size_t at = (size_t)ch * plane + i;
            scale[at] = fabs((double)x[at] * inv * gamma[ch]) + fabs(ref[at]);
        }
    }
    compare("bn eval output", y, ref, scale, total, 1e-6, 1e-6);

    free(x); free(y); free(y2); free(gamma); free(beta); free(mean); free(invstd); free(rm);
    free(rv); free(rm0); free(rv0); free(ref); free(rmean); free(rinv); free(rrm); free(rrv);
    free(rmb); free(rvb); free(scale);
}

/* Ghost batch norm with `splits` parts equals `splits` plain batch norms, one per
 * sub-batch of n / splits images: the same outputs, saved statistics and input gradients
 * to the bit; the running statistics equal the mean of the sub-batches' updated running
 * statistics, and dgamma, dbeta the sums of their gradients (up to rounding). */
static void test_bn_ghost_vs_plain(int c, int n, int hw, int splits)
{
    const int nsub = n / splits;
    const size_t plane = (size_t)n * hw, cnt = (size_t)nsub * hw, total = (size_t)c * plane;
    const size_t sub_total = (size_t)c * cnt, nsave = (size_t)splits * c, cb = sizeof(float) * c;
    const float eps = 1e-5f, momentum = 0.2f;
    float *x = support_rand_buf(&rng, -1, 3, total), *dy = support_rand_buf(&rng, -1, 1, total);
    float *gamma = support_rand_buf(&rng, 0.5f, 1.5f, (size_t)c),
          *beta = support_rand_buf(&rng, -1, 1, (size_t)c);
    float *rm0 = support_rand_buf(&rng, -0.5f, 0.5f, (size_t)c),
          *rv0 = support_rand_buf(&rng, 0.5f, 2.0f, (size_t)c);
    float *y = malloc(sizeof(float) * total), *dx = malloc(sizeof(float) * total);
    float *mean = malloc(sizeof(float) * nsave), *invstd = malloc(sizeof(float) * nsave);
    float *rm = malloc(cb), *rv = malloc(cb), *dg = malloc(cb), *db = malloc(cb);
    float *xs = malloc(sizeof(float) * sub_total), *dys = malloc(sizeof(float) * sub_total);
    float *ys = malloc(sizeof(float) * sub_total), *dxs = malloc(sizeof(float) * sub_total);
    float *ms = malloc(cb), *is = malloc(cb), *rms = malloc(cb), *rvs = malloc(cb);
    float *dgs = malloc(cb), *dbs = malloc(cb);
    double *want_rm = calloc((size_t)c, sizeof(double));
    double *want_rv = calloc((size_t)c, sizeof(double));
    double *want_dg = calloc((size_t)c, sizeof(double));
    double *want_db = calloc((size_t)c, sizeof(double));
    int y_same = 1, dx_same = 1, stats_same = 1;
    memcpy(rm, rm0, cb);
    memcpy(rv, rv0, cb);
    batchnorm_forward_train_cpu(y, mean, invstd, rm, rv, x, gamma, beta, c, n, hw, splits, eps,
                                momentum);
    batchnorm_backward_cpu(dx, dg, db, dy, x, gamma, mean, invstd, c, n, hw, splits, 0);
    for (int p = 0; p < splits; p++) {
        /* the sub-batch p as its own (c, n / splits, hw) tensor */
        for (int ch = 0; ch < c; ch++) {
            const size_t from = (size_t)ch * plane + (size_t)p * cnt;
            memcpy(xs + (size_t)ch * cnt, x + from, sizeof(float) * cnt);
            memcpy(dys + (size_t)ch * cnt, dy + from, sizeof(float) * cnt);
        }
        memcpy(rms, rm0, cb);
        memcpy(rvs, rv0, cb);
        batchnorm_forward_train_cpu(ys, ms, is, rms, rvs, xs, gamma, beta, c, nsub, hw, 1, eps,
                                    momentum);
        batchnorm_backward_cpu(dxs, dgs, dbs, dys, xs, gamma, ms, is, c, nsub, hw, 1, 0);
        for (int ch = 0; ch < c; ch++) {
            const size_t from = (size_t)ch * plane + (size_t)p * cnt;
            y_same &= memcmp(ys + (size_t)ch * cnt, y + from, sizeof(float) * cnt) == 0;
            dx_same &= memcmp(dxs + (size_t)ch * cnt, dx + from, sizeof(float) * cnt) == 0;
            want_rm[ch] += (double)rms[ch] / splits;
            want_rv[ch] += (double)rvs[ch] / splits;
            want_dg[ch] += dgs[ch];
            want_db[ch] += dbs[ch];
        }
        stats_same &= memcmp(ms, mean + (size_t)p * c, cb) == 0 &&
                      memcmp(is, invstd + (size_t)p * c, cb) == 0;
    }
    CHECK(y_same);
    CHECK(stats_same);
    CHECK(dx_same);
    compare("ghost bn running mean = mean of the parts' running means", rm, want_rm, NULL,
            (size_t)c, 1e-6, 1e-7);
    compare("ghost bn running var = mean of the parts' running vars", rv, want_rv, NULL,
            (size_t)c, 1e-6, 1e-7);
    compare("ghost bn dgamma = sum of the parts' dgamma", dg, want_dg, NULL, (size_t)c, 1e-5,
            1e-6);
    compare("ghost bn dbeta = sum of the parts' dbeta", db, want_db, NULL, (size_t)c, 1e-5, 1e-6);
    free(x); free(dy); free(gamma); free(beta); free(rm0); free(rv0); free(y); free(dx);
    free(mean); free(invstd); free(rm); free(rv); free(dg); free(db); free(xs); free(dys);
    free(ys); free(dxs); free(ms); free(is); free(rms); free(rvs); free(dgs); free(dbs);
    free(want_rm); free(want_rv); free(want_dg); free(want_db);
}

/* ------------------------------------------------------------------ activations */

static void test_activations(void)
{
    const size_t n = 70001;   /* above the parallel threshold, odd */
    float *x = support_rand_buf(&rng, -6, 6, n), *y = malloc(sizeof(float) * n);
    double *ref = malloc(sizeof(double) * n);
    const float alphas[2] = {0.3f, 1.0f};
    activation_forward_cpu(y, x, ACT_RELU, 0.0f, n);
    for (size_t i = 0; i < n; i++) ref[i] = x[i] > 0 ? x[i] : 0.0;
    compare("relu", y, ref, NULL, n, 0, 0);
    for (int a = 0; a < 2; a++) {
        activation_forward_cpu(y, x, ACT_CELU, alphas[a], n);
        for (size_t i = 0; i < n; i++)
            ref[i] = fmax(0.0, x[i]) + fmin(0.0, alphas[a] * (exp(x[i] / (double)alphas[a]) - 1.0));
        compare(a ? "celu alpha 1" : "celu alpha 0.3", y, ref, NULL, n, 1e-6, 1e-7);
    }
    activation_forward_cpu(y, x, ACT_GELU, 0.0f, n);
    for (size_t i = 0; i < n; i++) ref[i] = 0.5 * x[i] * (1.0 + erf(x[i] / sqrt(2.0)));
    compare("gelu", y, ref, NULL, n, 1e-6, 1e-7);
    /* hardswish as PyTorch writes it: x relu6(x + 3) / 6, and its backward dy (x / 3 + 1/2)
     * from -3 to 3 inclusive, 0 below, dy above */
    activation_forward_cpu(y, x, ACT_HARDSWISH, 0.0f, n);
    for (size_t i = 0; i < n; i++) ref[i] = x[i] * fmin(fmax(x[i] + 3.0, 0.0), 6.0) / 6.0;
    compare("hardswish", y, ref, NULL, n, 1e-6, 1e-7);
    float *dy = support_rand_buf(&rng, -1, 1, n), *dx = malloc(sizeof(float) * n);
    activation_backward_cpu(dx, dy, x, ACT_HARDSWISH, 0.0f, n, 0);
    for (size_t i = 0; i < n; i++)
        ref[i] = x[i] < -3 ? 0.0 : x[i] <= 3 ? dy[i] * (x[i] / 3.0 + 0.5) : dy[i];
    compare("hardswish backward", dx, ref, NULL, n, 1e-6, 1e-7);
    /* the kinks and the flat parts, exactly */
    const float xk[6] = {-4.0f, -3.0f, -1.5f, 0.0f, 3.0f, 4.0f}, dyk[6] = {2, 2, 2, 2, 2, 2};
    float yk[6], dxk[6];
    activation_forward_cpu(yk, xk, ACT_HARDSWISH, 0.0f, 6);
    activation_backward_cpu(dxk, dyk, xk, ACT_HARDSWISH, 0.0f, 6, 0);
    CHECK(yk[0] == 0.0f && yk[1] == 0.0f && yk[2] == -0.375f && yk[3] == 0.0f &&
          yk[4] == 3.0f && yk[5] == 4.0f);
    CHECK(dxk[0] == 0.0f && dxk[1] == -1.0f && dxk[2] == 0.0f && dxk[3] == 1.0f &&
          dxk[4] == 3.0f && dxk[5] == 2.0f);
    free(x); free(y); free(ref); free(dy); free(dx);
}

/* ------------------------------------------------------------------ pooling */

static void test_pool(enum pool_kind kind, int planes, int h, int w, int kh, int kw, int sh,
                      int sw)
{
    struct pool_dims d = {planes, h, w, kh, kw, sh, sw, (h - kh) / sh + 1, (w - kw) / sw + 1};
    const size_t nx = (size_t)planes * h * w, ny = (size_t)planes * d.ho * d.wo;
    float *x = support_rand_buf(&rng, -3, 3, nx), *y = malloc(sizeof(float) * ny);
    double *ref = malloc(sizeof(double) * ny);
    char name[96];
    for (int p = 0; p < planes; p++)
        for (int oy = 0; oy < d.ho; oy++)
            for (int ox = 0; ox < d.wo; ox++) {
                double m = -INFINITY, s = 0.0;
                for (int ky = 0; ky < kh; ky++)
                    for (int kx = 0; kx < kw; kx++) {
                        double v = x[((size_t)p * h + oy * sh + ky) * w + ox * sw + kx];
                        m = v > m ? v : m;
                        s += v;
                    }
                ref[((size_t)p * d.ho + oy) * d.wo + ox] = kind == POOL_MAX ? m : s / (kh * kw);
            }
    pool_forward_cpu(y, x, kind, &d);
    snprintf(name, sizeof name, "%s pool %dx%d/%dx%d on %dx%d", kind == POOL_MAX ? "max" : "avg",
             kh, kw, sh, sw, h, w);
    compare(name, y, ref, NULL, ny, 1e-6, 1e-6);
    free(x); free(y); free(ref);
}

/* ------------------------------------------------------------------ structural ops */

static void test_structural(void)
{
    const int n = 3, hw = 5, cs[3] = {2, 4, 1};
    const size_t plane = (size_t)n * hw;
    float *xs[3];
    for (int i = 0; i < 3; i++) xs[i] = support_rand_buf(&rng, -1, 1, (size_t)cs[i] * plane);
    float *y = malloc(sizeof(float) * 7 * plane);
    concat_forward_cpu(y, (const float *const *)xs, cs, 3, plane);
    CHECK(memcmp(y, xs[0], sizeof(float) * 2 * plane) == 0);
    CHECK(memcmp(y + 2 * plane, xs[1], sizeof(float) * 4 * plane) == 0);
    CHECK(memcmp(y + 6 * plane, xs[2], sizeof(float) * plane) == 0);

    /* flatten: (c, n, hw) -> (c*hw, n) */
    float *f = malloc(sizeof(float) * 4 * plane), *back = malloc(sizeof(float) * 4 * plane);
    flatten_forward_cpu(f, xs[1], 4, n, hw);
    int ok = 1;
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < n; i++)
            for (int p = 0; p < hw; p++)
                ok &= f[((size_t)c * hw + p) * n + i] == xs[1][((size_t)c * n + i) * hw + p];
    CHECK(ok);
    flatten_backward_cpu(back, f, 4, n, hw, 0);
    CHECK(memcmp(back, xs[1], sizeof(float) * 4 * plane) == 0);

    /* add, scale, scaled copy */
    const size_t cnt = 100003;
    float *a = support_rand_buf(&rng, -1, 1, cnt), *b = support_rand_buf(&rng, -1, 1, cnt),
          *o = malloc(sizeof(float) * cnt);
    add_forward_cpu(o, a, b, cnt);
    ok = 1;
    for (size_t i = 0; i < cnt; i++) ok &= o[i] == a[i] + b[i];
    CHECK(ok);
    scale_forward_cpu(o, a, 0.25f, cnt);
    ok = 1;
    for (size_t i = 0; i < cnt; i++) ok &= o[i] == 0.25f * a[i];
    CHECK(ok);
    memcpy(o, b, sizeof(float) * cnt);
    scaled_copy_cpu(o, a, -3.0f, cnt, 1);
    ok = 1;
    for (size_t i = 0; i < cnt; i++) ok &= o[i] == b[i] + -3.0f * a[i];
    CHECK(ok);
    for (int i = 0; i < 3; i++) free(xs[i]);
    free(y); free(f); free(back); free(a); free(b); free(o);
}

/* ------------------------------------------------------------------ temperature */

/* y = t x, dx = t dy and dx + t dy, each rounded once in fp32, over a size that runs on
 * every thread; dt against a compensated (Kahan) double sum; small integers summed
 * exactly; two runs the same bits. */
static void test_temperature(float t, size_t cnt)
{
    float *x = support_rand_buf(&rng, -4, 4, cnt), *dy = support_rand_buf(&rng, -1, 1, cnt);
    float *y = malloc(sizeof(float) * cnt), *dx = support_rand_buf(&rng, -1, 1, cnt);
    float *pre = malloc(sizeof(float) * cnt);
    memcpy(pre, dx, sizeof(float) * cnt);
    temperature_forward_cpu(y, x, t, cnt);
    int ok = 1;
    for (size_t i = 0; i < cnt; i++) ok &= y[i] == t * x[i];
    CHECK(ok);
    float dt = 0.0f, dt2 = 0.0f;
    temperature_backward_cpu(dx, &dt, dy, x, t, cnt, 1);
    ok = 1;
    for (size_t i = 0; i < cnt; i++) ok &= dx[i] == pre[i] + t * dy[i];
    CHECK(ok);
    temperature_backward_cpu(dx, &dt2, dy, x, t, cnt, 0);
    ok = 1;
    for (size_t i = 0; i < cnt; i++) ok &= dx[i] == t * dy[i];
    CHECK(ok);
    CHECK(dt2 == dt);
    double sum = 0.0, comp = 0.0, mag = 0.0;
    for (size_t i = 0; i < cnt; i++) {
        const double term = (double)dy[i] * (double)x[i] - comp, next = sum + term;
        comp = (next - sum) - term;
        sum = next;
        mag += fabs((double)dy[i] * (double)x[i]);
    }
    const float fs = (float)sum;   /* dt is the sum rounded once to fp32: within half an ulp */
    const double half_ulp = 0.5 * ((double)nextafterf(fabsf(fs), INFINITY) - fabs((double)fs));
    CHECK(fabs((double)dt - sum) <= half_ulp + 1e-12 * mag);
    /* integers: every partial sum exact, dt exactly the integer sum */
    long want = 0;
    for (size_t i = 0; i < cnt; i++) {
        x[i] = (float)((long)(i % 7) - 3);
        dy[i] = (float)((long)(i % 5) - 2);
        want += ((long)(i % 7) - 3) * ((long)(i % 5) - 2);
    }
    temperature_backward_cpu(NULL, &dt, dy, x, t, cnt, 0);
    CHECK(dt == (float)want);
    free(x); free(dy); free(y); free(dx); free(pre);
}

/* ------------------------------------------------------------------ linear */

static void test_linear(int out, int in, int n, int bias)
{
    const size_t nx = (size_t)in * n, nw = (size_t)out * in, ny = (size_t)out * n;
    float *x = support_rand_buf(&rng, -1, 1, nx), *w = support_rand_buf(&rng, -1, 1, nw);
    float *b = bias ? support_rand_buf(&rng, -1, 1, (size_t)out) : NULL;
    float *y = malloc(sizeof(float) * ny), *y2 = malloc(sizeof(float) * ny);
    double *ref = malloc(sizeof(double) * ny), *sabs = malloc(sizeof(double) * ny);
    for (int o = 0; o < out; o++)
        for (int i = 0; i < n; i++) {
            double s = b ? b[o] : 0.0, a = b ? fabs(b[o]) : 0.0;
            for (int f = 0; f < in; f++) {
                double t = (double)w[(size_t)o * in + f] * x[(size_t)f * n + i];
                s += t;
                a += fabs(t);
            }
            ref[(size_t)o * n + i] = s;
            sabs[(size_t)o * n + i] = a;
        }
    linear_forward_cpu(y, x, w, b, out, in, n);
    compare(bias ? "linear with bias" : "linear", y, ref, sabs, ny, 1e-5, 1e-6);
    linear_forward_cpu(y2, x, w, b, out, in, n);
    CHECK(memcmp(y, y2, sizeof(float) * ny) == 0);
    free(x); free(w); free(b); free(y); free(y2); free(ref); free(sabs);
}

/* ------------------------------------------------------------------ loss */

static void test_xent(float smoothing)
{
    const int k = 10, n = 37;
    float *logits = support_rand_buf(&rng, -4, 4, (size_t)k * n),
          *probs = malloc(sizeof(float) * k * n);
    int32_t labels[37];
    double ref_loss = 0.0, ref_probs[370];
    int ref_correct = 0;
    for (int i = 0; i < n; i++) labels[i] = (i * 7) % k;
    /* example 0: a tie for the maximum between classes 2 and 5, label 5: not correct
     * (the first maximum counts); example 1: tie between 3 and 8, label 3: correct */
    for (int j = 0; j < k; j++) logits[(size_t)j * n + 0] = logits[(size_t)j * n + 1] = -1.0f;
    logits[2 * n + 0] = logits[5 * n + 0] = 2.0f;
    labels[0] = 5;
    logits[3 * n + 1] = logits[8 * n + 1] = 2.0f;
    labels[1] = 3;
    for (int i = 0; i < n; i++) {
        double m = -INFINITY, s = 0.0;
        int arg = 0;
        for (int j = 0; j < k; j++)
            if (logits[(size_t)j * n + i] > m) {
                m = logits[(size_t)j * n + i];
                arg = j;
            }
        for (int j = 0; j < k; j++) s += exp(logits[(size_t)j * n + i] - m);
        for (int j = 0; j < k; j++) {
            double p = exp(logits[(size_t)j * n + i] - m) / s;
            double t = (1.0 - smoothing) * (j == labels[i]) + smoothing / k;
            ref_probs[(size_t)j * n + i] = p;
            ref_loss -= t * log(p);
        }
        ref_correct += arg == labels[i];
    }
    CHECK(ref_correct >= 1);
    float stats[2] = {1.5f, 2.0f};   /* the op adds to what is there */
    xent_forward_cpu(stats, probs, logits, labels, k, n, smoothing);
    compare("softmax probabilities", probs, ref_probs, NULL, (size_t)k * n, 1e-5, 1e-7);
    CHECK_NEAR(stats[0], 1.5 + ref_loss, 1e-5 * ref_loss);
    CHECK(stats[1] == 2.0f + (float)ref_correct);
    free(logits);
    free(probs);
}

/* Tie handling of the correct count on its own: a tie counts the first class only. */
static void test_xent_ties(void)
{
    /* k = 3, n = 2, class-major: example 0 logits (1, 1, 0), label 1 -> wrong;
     * example 1 logits (0, 2, 2), label 1 -> right */
    const float logits[6] = {1, 0, 1, 2, 0, 2};
    const int32_t labels[2] = {1, 1};
    float probs[6], stats[2] = {0, 0};
    xent_forward_cpu(stats, probs, logits, labels, 3, 2, 0.0f);
    CHECK(stats[1] == 1.0f);
    double want = -log(exp(1.0) / (2 * exp(1.0) + 1)) - log(exp(2.0) / (2 * exp(2.0) + 1));
    CHECK_NEAR(stats[0], want, 1e-5);
    /* backward: scale * (probs - target) */
    float g[6];
    xent_backward_cpu(g, probs, labels, 3, 2, 0.3f, 0.5f);
    for (int j = 0; j < 3; j++)
        for (int i = 0; i < 2; i++) {
            double t = 0.7 * (j == labels[i]) + 0.1;
            CHECK_NEAR(g[j * 2 + i], 0.5 * (probs[j * 2 + i] - t), 1e-7);
        }
}

/* ------------------------------------------------------------------ sgd */

static void test_sgd(int nesterov)
{
    const size_t n = 70001;
    const float lr = 0.4f, wd = 5e-4f * 512, momentum = 0.9f;
    float *w = support_rand_buf(&rng, -1, 1, n), *v = support_rand_buf(&rng, -0.1f, 0.1f, n),
          *dw = support_rand_buf(&rng, -1, 1, n);
    float *ew = malloc(sizeof(float) * n), *ev = malloc(sizeof(float) * n);
    float *edw = malloc(sizeof(float) * n);
    /* volatile: each operation is its own fp32 rounding, in the rule's order */
    for (size_t i = 0; i < n; i++) {
        volatile float step = -lr * (dw[i] + wd * w[i]);
        volatile float vel = momentum * v[i] + step;
        edw[i] = step;
        ev[i] = vel;
        if (nesterov) {
            volatile float m = momentum * vel;
            ew[i] = w[i] + (step + m);
        } else {
            ew[i] = w[i] + vel;
        }
    }
    sgd_update_cpu(w, v, dw, lr, wd, momentum, nesterov, n);
    CHECK(memcmp(w, ew, sizeof(float) * n) == 0);
    CHECK(memcmp(v, ev, sizeof(float) * n) == 0);
    CHECK(memcmp(dw, edw, sizeof(float) * n) == 0);
    free(w); free(v); free(dw); free(ew); free(ev); free(edw);
}

/* ------------------------------------------------------------------ weight averaging */

static void test_lerp(int copy_back)
{
    const size_t n = 70001;
    const float t = 0.0625f * 3.0f + 1e-3f;
    float *avg = support_rand_buf(&rng, -1, 1, n), *w = support_rand_buf(&rng, -1, 1, n);
    float *eavg = malloc(sizeof(float) * n), *ew = malloc(sizeof(float) * n);
    /* volatile: each operation is its own fp32 rounding, in the rule's order */
    for (size_t i = 0; i < n; i++) {
        volatile float s = 1.0f - t;
        volatile float kept = s * avg[i];
        volatile float added = t * w[i];
        eavg[i] = kept + added;
        ew[i] = copy_back ? eavg[i] : w[i];
    }
    param_lerp_cpu(avg, w, t, copy_back, n);
    CHECK(memcmp(avg, eavg, sizeof(float) * n) == 0);
    CHECK(memcmp(w, ew, sizeof(float) * n) == 0);
    /* t = 1 copies w; t = 0 keeps avg */
    param_lerp_cpu(avg, ew, 1.0f, 0, n);
    CHECK(memcmp(avg, ew, sizeof(float) * n) == 0);
    memcpy(eavg, avg, sizeof(float) * n);
    param_lerp_cpu(avg, w, 0.0f, 0, n);
    CHECK(memcmp(avg, eavg, sizeof(float) * n) == 0);
    free(avg); free(w); free(eavg); free(ew);
}

/* ------------------------------------------------------------------ dropout */

/* The number of kept elements of the (c, n, hw) CPU-layout output y (nonzero: inputs are
 * never 0 here) and whether y is the specification exactly: for each element, at its NCHW
 * index i, word i % 4 of rng_draw(seed, RNG_STREAM_DROPOUT, step, i / 4, layer) against p;
 * kept elements x * (1 / (1 - p)) in fp32, dropped ones +0. */
static long dropout_spec(int *exact, const float *y, const float *x,
                         const struct dropout_attr *a, uint32_t step, int c, int n, int hw)
{
    const float s = 1.0f / (1.0f - a->p);
    long kept = 0;
    *exact = 1;
    for (int j = 0; j < n; j++)
        for (int k = 0; k < c; k++)
            for (int e = 0; e < hw; e++) {
                const uint64_t i = ((uint64_t)j * (uint64_t)c + (uint64_t)k) * (uint64_t)hw + e;
                const struct rng4 r = rng_draw(a->seed, RNG_STREAM_DROPOUT, step,
                                               (uint32_t)(i / 4), (uint32_t)a->layer);
                const int keep = (float)(r.v[i % 4] >> 8) / 16777216.0f >= a->p;
                const size_t at = ((size_t)k * n + j) * hw + e;
                const float want = keep ? x[at] * s : 0.0f;
                if (memcmp(&y[at], &want, sizeof want) != 0) *exact = 0;
                kept += y[at] != 0.0f;
            }
    return kept;
}

/* Forward against the specification bit for bit, at a shape whose planes are not a
 * multiple of 4; the fraction dropped within 0.005 of p over 2^20 elements (a standard
 * deviation is sqrt(p (1 - p) / 2^20) <= 4.9e-4, so a correct mask fails with probability
 * below 1e-20); the backward's mask the forward's; another step, layer or seed another
 * mask, agreeing on p^2 + (1 - p)^2 of the elements, within 0.005 likewise; the same
 * (seed, step, layer) the same bits. */
static void test_dropout(float p)
{
    enum { C = 16, N = 64, HW = 1024, COUNT = C * N * HW };   /* 2^20 elements */
    const struct dropout_attr a = {.seed = 0x0123456789abcdefull, .p = p, .layer = 5};
    float *x = malloc(sizeof(float) * COUNT), *y = malloc(sizeof(float) * COUNT);
    float *y2 = malloc(sizeof(float) * COUNT), *dx = malloc(sizeof(float) * COUNT);
    for (size_t i = 0; i < COUNT; i++) x[i] = support_urand(&rng, 0.5f, 2.0f);
    int exact = 0;
    char what[96];

    dropout_forward_cpu(y, x, &a, 42, 7, 3, 13);   /* 273 elements: planes of 13 */
    dropout_spec(&exact, y, x, &a, 42, 7, 3, 13);
    snprintf(what, sizeof what, "dropout p %g: the specification, bit for bit", (double)p);
    check_record(exact, __FILE__, __LINE__, what);

    dropout_forward_cpu(y, x, &a, 42, C, N, HW);
    const long kept = dropout_spec(&exact, y, x, &a, 42, C, N, HW);
    const double dropped = 1.0 - (double)kept / COUNT;
    printf("dropout p %g: %.5f of %d elements dropped\n", (double)p, dropped, (int)COUNT);
    snprintf(what, sizeof what, "dropout p %g: %.5f dropped, exact %d", (double)p, dropped,
             exact);
    check_record(exact && fabs(dropped - p) < 0.005, __FILE__, __LINE__, what);

    int same_mask = 1;   /* the backward of the same step: dx = dy * s where y was kept */
    dropout_backward_cpu(dx, x, &a, 42, C, N, HW, 0);
    for (size_t i = 0; i < COUNT; i++) same_mask &= (dx[i] != 0.0f) == (y[i] != 0.0f);
    CHECK(same_mask);
    CHECK(memcmp(dx, y, sizeof(float) * COUNT) == 0);   /* dy = x: the same values too */

    dropout_forward_cpu(y2, x, &a, 42, C, N, HW);   /* the same key again */
    CHECK(memcmp(y, y2, sizeof(float) * COUNT) == 0);
    const struct dropout_attr other_layer = {.seed = a.seed, .p = p, .layer = 6};
    const struct dropout_attr other_seed = {.seed = a.seed + 1, .p = p, .layer = 5};
    const struct dropout_attr *keys[3] = {&a, &other_layer, &other_seed};
    const uint32_t steps[3] = {43, 42, 42};
    const double expect = (double)p * p + (1.0 - p) * (1.0 - p);
    for (int k = 0; k < 3; k++) {
        long agree = 0;
        dropout_forward_cpu(y2, x, keys[k], steps[k], C, N, HW);
        for (size_t i = 0; i < COUNT; i++) agree += (y[i] != 0.0f) == (y2[i] != 0.0f);
        const double f = (double)agree / COUNT;
        snprintf(what, sizeof what, "dropout p %g: another %s agrees on %.5f (expected %.5f)",
                 (double)p, k == 0 ? "step" : k == 1 ? "layer" : "seed", f, expect);
        check_record(fabs(f - expect) < 0.005, __FILE__, __LINE__, what);
    }
    free(x);
    free(y);
    free(y2);
    free(dx);
}

int main(void)
{
    /* odd sizes: batches that split unevenly into chunks, odd planes, every path */
    test_conv(13, 3, 8, 8, 5, 3, 1, 1, 1, 1);
    test_conv(5, 4, 9, 11, 7, 3, 2, 1, 0, 1);
    test_conv(13, 6, 8, 8, 4, 1, 1, 0, 1, 1);
    test_conv(7, 5, 9, 7, 3, 1, 2, 0, 0, 1);
    test_conv(1, 3, 5, 5, 2, 3, 1, 0, 1, 1);
    test_conv(33, 16, 4, 4, 8, 3, 1, 1, 0, 1);
    /* one realistic ResNet-9 shape (layer 2: 128 -> 256 channels on 16x16), forward only */
    test_conv(3, 128, 16, 16, 256, 3, 1, 1, 0, 0);

    test_bn(5, 7, 9, 1);
    test_bn(3, 130, 16, 1);
    test_bn(5, 8, 9, 4);          /* ghost batch norm: parts of 2 images */
    test_bn(3, 128, 16, 16);      /* Page's ResNet-9 split of a 512 batch, scaled down */
    test_bn_ghost_vs_plain(6, 12, 9, 3);
    test_bn_ghost_vs_plain(4, 64, 16, 16);
    test_activations();

    test_pool(POOL_MAX, 10, 8, 8, 2, 2, 2, 2);
    test_pool(POOL_MAX, 10, 7, 8, 2, 2, 2, 2);
    test_pool(POOL_MAX, 10, 8, 7, 2, 2, 2, 2);
    test_pool(POOL_MAX, 6, 7, 9, 3, 3, 2, 2);
    test_pool(POOL_MAX, 6, 5, 5, 5, 5, 5, 5);
    test_pool(POOL_AVG, 10, 8, 8, 2, 2, 2, 2);
    test_pool(POOL_AVG, 6, 7, 9, 3, 2, 2, 3);
    test_pool(POOL_AVG, 6, 5, 5, 5, 5, 5, 5);

    test_structural();
    test_temperature(0.7f, 100003);
    test_temperature(3.0f, 10);
    test_linear(10, 512, 37, 1);
    test_linear(7, 33, 5, 0);
    test_linear(300, 200, 129, 1);   /* large enough to run on every thread */

    test_xent(0.0f);
    test_xent(0.2f);
    test_xent_ties();
    test_sgd(1);
    test_sgd(0);
    test_lerp(0);
    test_lerp(1);
    test_dropout(0.5f);
    test_dropout(0.1f);
    test_dropout(0.75f);
    return check_finish("test_ops_ref");
}

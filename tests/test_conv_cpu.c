/* The two CPU convolution implementations (kernels/cpu/conv2d_impl.h) against each other,
 * on the layer shapes of ResNet-9 and DAWN_net at a small batch and at odd sizes, with 1
 * and 2 threads: oneDNN's forward, input-gradient and weight-gradient results agree with
 * im2col + sgemm within fp32 accumulation error (|a - b| <= 1e-5 * sum|terms| + 1e-6, the
 * sums of |terms| computed by running the convolution on absolute values); the
 * accumulating input gradient adds exactly what the overwriting one writes; and every
 * oneDNN result is bit-identical when repeated, including after the primitive cache is
 * freed and rebuilt (as in a new process). */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/conv2d.h"
#include "../kernels/cpu/conv2d_impl.h"
#include "check.h"
#include "support.h"

static struct support_rng rng = {0x9E3779B97F4A7C15ull};

static float *fabs_copy(const float *a, size_t n)
{
    float *r = malloc(sizeof(float) * n);
    for (size_t i = 0; i < n; i++) r[i] = fabsf(a[i]);
    return r;
}

/* Counts the entries outside |a - b| <= 1e-5 * s + 1e-6 and reports the first. */
static void agree(const char *what, const float *a, const float *b, const float *s, size_t n)
{
    size_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        double tol = 1e-5 * (double)s[i] + 1e-6;
        if (fabs((double)a[i] - (double)b[i]) > tol) {
            if (!bad)
                fprintf(stderr, "%s: [%zu] im2col %.9g dnnl %.9g (tolerance %.3g)\n", what, i,
                        a[i], b[i], tol);
            bad++;
        }
    }
    CHECK(bad == 0);
}

static int same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, sizeof(float) * n) == 0;
}

static void test_shape(int n, int c, int hw, int co, int k, int stride, int pad, int bias)
{
    struct conv2d_dims d = {n, c, hw, hw, co, k, stride, pad, 0, 0};
    conv2d_dims_finish(&d);
    const size_t nx = (size_t)c * n * hw * hw, nw = (size_t)co * c * k * k;
    const size_t ny = (size_t)co * n * d.ho * d.wo;
    char name[160];
    snprintf(name, sizeof name, "conv n%d %d->%d %dx%d k%d s%d p%d%s, %d threads [%s | %s | %s]",
             n, c, co, hw, hw, k, stride, pad, bias ? " bias" : "", omp_get_max_threads(),
             conv2d_dnnl_impl_info(&d, CONV2D_FWD), conv2d_dnnl_impl_info(&d, CONV2D_BWD_DATA),
             conv2d_dnnl_impl_info(&d, CONV2D_BWD_WEIGHTS));
    float *x = support_rand_buf(&rng, -1, 1, nx), *w = support_rand_buf(&rng, -0.5f, 0.5f, nw);
    float *g = support_rand_buf(&rng, -1, 1, ny);
    float *b = bias ? support_rand_buf(&rng, -1, 1, (size_t)co) : NULL;
    float *ax = fabs_copy(x, nx), *aw = fabs_copy(w, nw), *ag = fabs_copy(g, ny);
    float *ab = bias ? fabs_copy(b, (size_t)co) : NULL;
    float *y1 = malloc(sizeof(float) * ny), *y2 = malloc(sizeof(float) * ny);
    float *y3 = malloc(sizeof(float) * ny), *sy = malloc(sizeof(float) * ny);
    float *dx1 = malloc(sizeof(float) * nx), *dx2 = malloc(sizeof(float) * nx);
    float *dx3 = malloc(sizeof(float) * nx), *sdx = malloc(sizeof(float) * nx);
    float *dw1 = malloc(sizeof(float) * nw), *dw2 = malloc(sizeof(float) * nw);
    float *dw3 = malloc(sizeof(float) * nw), *sdw = malloc(sizeof(float) * nw);
    float *db1 = malloc(sizeof(float) * (size_t)co), *db2 = malloc(sizeof(float) * (size_t)co);
    char sub[200];

    CHECK(conv2d_im2col_forward(y1, x, w, b, &d) == 0);
    CHECK(conv2d_im2col_forward(sy, ax, aw, ab, &d) == 0);
    CHECK(conv2d_dnnl_forward(y2, x, w, b, &d) == 0);
    snprintf(sub, sizeof sub, "%s y", name);
    agree(sub, y1, y2, sy, ny);

    CHECK(conv2d_im2col_backward(dx1, dw1, db1, g, x, w, &d, 0) == 0);
    CHECK(conv2d_im2col_backward(sdx, sdw, NULL, ag, ax, aw, &d, 0) == 0);
    CHECK(conv2d_dnnl_backward(dx2, dw2, db2, g, x, w, &d, 0) == 0);
    snprintf(sub, sizeof sub, "%s dx", name);
    agree(sub, dx1, dx2, sdx, nx);
    snprintf(sub, sizeof sub, "%s dw", name);
    agree(sub, dw1, dw2, sdw, nw);
    CHECK(same(db1, db2, (size_t)co)); /* the same double-precision sum in both */

    /* accumulate: dx3 = x + dx exactly (one fp32 addition per entry) */
    memcpy(dx3, x, sizeof(float) * nx);
    CHECK(conv2d_dnnl_backward(dx3, NULL, NULL, g, x, w, &d, 1) == 0);
    size_t off = 0;
    for (size_t i = 0; i < nx; i++) off += dx3[i] != x[i] + dx2[i];
    CHECK(off == 0);

    /* repeatable, also with freshly made primitives */
    for (int round = 0; round < 2; round++) {
        if (round) conv2d_dnnl_release();
        CHECK(conv2d_dnnl_forward(y3, x, w, b, &d) == 0);
        CHECK(same(y2, y3, ny));
        CHECK(conv2d_dnnl_backward(dx3, dw3, NULL, g, x, w, &d, 0) == 0);
        CHECK(same(dx2, dx3, nx));
        CHECK(same(dw2, dw3, nw));
    }
    free(x); free(w); free(g); free(b); free(ax); free(aw); free(ag); free(ab);
    free(y1); free(y2); free(y3); free(sy); free(dx1); free(dx2); free(dx3); free(sdx);
    free(dw1); free(dw2); free(dw3); free(sdw); free(db1); free(db2);
}

int main(void)
{
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        /* ResNet-9 and DAWN_net layer shapes at batch 6 */
        test_shape(6, 3, 32, 64, 3, 1, 1, 0);
        test_shape(6, 64, 32, 128, 3, 1, 1, 0);
        test_shape(6, 128, 16, 128, 3, 1, 1, 0);
        test_shape(6, 256, 8, 512, 3, 1, 1, 0);
        test_shape(6, 512, 4, 512, 3, 1, 1, 0);
        test_shape(6, 64, 32, 128, 3, 2, 1, 0);
        test_shape(6, 64, 32, 128, 1, 2, 0, 0);
        test_shape(6, 256, 8, 256, 1, 2, 0, 0);
        /* odd sizes, bias, a 5x5 kernel, a single image */
        test_shape(5, 7, 9, 13, 3, 1, 1, 1);
        test_shape(3, 16, 11, 24, 5, 2, 2, 1);
        test_shape(1, 32, 8, 16, 3, 1, 0, 0);
    }
    conv2d_dnnl_release();
    return check_finish("conv_cpu");
}

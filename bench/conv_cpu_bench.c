/* Micro-benchmark of the CPU convolution on the ResNet-9 shapes (batch 128 by default,
 * or argv[1]): prints forward and backward GFLOP/s per layer and for the whole set
 * (the first layer's backward pass computes no input gradient, as in training).
 * Not a test. Build from the repository root, e.g.:
 *   gcc -std=c11 -O3 -march=x86-64-v3 -fopenmp -I. bench/conv_cpu_bench.c \
 *       kernels/cpu/conv2d.c kernels/cpu/im2col.c kernels/cpu/cpu_util.c base/status.c \
 *       -o conv_bench -ldnnl
 * (-DCONV_TARGET_COLS=N on the same line tries another chunk size). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#include "../kernels/conv2d.h"

struct shape {
    const char *name;
    int c, co, hw, k, stride, pad, count;  /* count: how many such layers in ResNet-9 */
};

static const struct shape shapes[] = {
    {"prep 3-64 32", 3, 64, 32, 3, 1, 1, 1},
    {"layer1 64-128 32", 64, 128, 32, 3, 1, 1, 1},
    {"res1 128-128 16", 128, 128, 16, 3, 1, 1, 2},
    {"layer2 128-256 16", 128, 256, 16, 3, 1, 1, 1},
    {"layer3 256-512 8", 256, 512, 8, 3, 1, 1, 1},
    {"res3 512-512 4", 512, 512, 4, 3, 1, 1, 2},
};

static void fill(float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) p[i] = (float)((i * 2654435761u) % 1000) / 1000.0f - 0.5f;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 128;
    int reps = 5;
    double tot_f = 0, tot_fwd = 0, tot_bwd = 0;
    printf("batch %d, %d threads\n", n, omp_get_max_threads());
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const struct shape *sh = &shapes[s];
        struct conv2d_dims d = {n, sh->c, sh->hw, sh->hw, sh->co, sh->k, sh->stride, sh->pad, 0, 0};
        conv2d_dims_finish(&d);
        size_t nx = (size_t)d.c * n * d.h * d.w, ny = (size_t)d.co * n * d.ho * d.wo;
        size_t nw = (size_t)d.co * d.c * d.k * d.k;
        float *x = malloc(nx * 4), *dx = malloc(nx * 4), *y = malloc(ny * 4), *w = malloc(nw * 4),
              *dw = malloc(nw * 4);
        fill(x, nx);
        fill(w, nw);
        fill(y, ny);
        double flops = 2.0 * (double)ny * (double)(d.c * d.k * d.k);
        conv2d_forward_cpu(y, x, w, NULL, &d);
        double t0 = omp_get_wtime();
        for (int r = 0; r < reps; r++) conv2d_forward_cpu(y, x, w, NULL, &d);
        double tf = (omp_get_wtime() - t0) / reps;
        conv2d_backward_cpu(s ? dx : NULL, dw, NULL, y, x, w, &d, 0);
        t0 = omp_get_wtime();
        for (int r = 0; r < reps; r++) conv2d_backward_cpu(s ? dx : NULL, dw, NULL, y, x, w, &d, 0);
        double tb = (omp_get_wtime() - t0) / reps;
        double bflops = flops * (s ? 2 : 1);
        printf("%-20s fwd %7.2f ms %6.1f GFLOP/s   bwd %7.2f ms %6.1f GFLOP/s\n", sh->name,
               tf * 1e3, flops / tf * 1e-9, tb * 1e3, bflops / tb * 1e-9);
        tot_f += (flops + bflops) * sh->count;
        tot_fwd += tf * sh->count;
        tot_bwd += tb * sh->count;
        free(x);
        free(dx);
        free(y);
        free(w);
        free(dw);
    }
    printf("total: fwd %.1f ms, bwd %.1f ms, %.1f GFLOP/s, %.1f images/s (convs only)\n",
           tot_fwd * 1e3, tot_bwd * 1e3, tot_f / (tot_fwd + tot_bwd) * 1e-9,
           n / (tot_fwd + tot_bwd));
    return 0;
}

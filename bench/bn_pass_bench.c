/* Micro-benchmark of the CPU engine's non-convolution passes on the ResNet-9 shapes
 * (batch 128 by default, or argv[1]): per instruction-set variant (kernels/cpu/cpu_isa.h)
 * the batch norm + ReLU (+ residual add) forward and the ReLU + batch-norm backward of
 * every such layer of a training step, as separate kernels (the node-by-node plan) and
 * as the fused passes of kernels/cpu/bn_fused.h, in ms per step. Not a test. Build from
 * the repository root after building dawnrun (build/), e.g.:
 *   gcc -std=c11 -O2 -fopenmp -I. bench/bn_pass_bench.c build/libdawnrun_core.a -lm \
 *       -o bn_pass_bench
 * Threads: OMP_NUM_THREADS. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cpu/cpu_isa.h"

struct shape {
    const char *name;
    int c, hw, add;   /* add: a residual add follows the ReLU */
};

static const struct shape shapes[] = {
    {"prep 64@32x32", 64, 1024, 0},  {"layer1 128@32x32", 128, 1024, 0},
    {"res1a 128@16x16", 128, 256, 0}, {"res1b 128@16x16", 128, 256, 1},
    {"layer2 256@16x16", 256, 256, 0}, {"layer3 512@8x8", 512, 64, 0},
    {"res3a 512@4x4", 512, 16, 0},    {"res3b 512@4x4", 512, 16, 1},
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])

static float *buf(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof(float));
    if (!p) exit(1);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = (float)(seed >> 8) / 16777216.0f * 4.0f - 2.0f;
    }
    return p;
}

/* One step's passes over every shape, separate (fused = 0) or fused; returns seconds. */
static double step(int n, int fused, float **x, float **y, float **a, float **r, float **o,
                   float **g, float **dx, float *st[8])
{
    const double t0 = omp_get_wtime();
    for (int s = 0; s < NSHAPES; s++) {
        const struct shape *sh = &shapes[s];
        const size_t cnt = (size_t)sh->c * n * sh->hw;
        if (!fused) {
            batchnorm_forward_train_cpu(y[s], st[0], st[1], st[2], st[3], x[s], st[4], st[5],
                                        sh->c, n, sh->hw, 1, 1e-5f, 0.1f);
            activation_forward_cpu(a[s], y[s], ACT_RELU, 0.0f, cnt);
            if (sh->add) add_forward_cpu(o[s], r[s], a[s], cnt);
            activation_backward_cpu(a[s], g[s], y[s], ACT_RELU, 0.0f, cnt, 0);
            batchnorm_backward_cpu(dx[s], st[6], st[7], a[s], x[s], st[4], st[0], st[1], sh->c,
                                   n, sh->hw, 1, 0);
        } else {
            bn_train_fused_cpu(NULL, sh->add ? o[s] : a[s], st[2] + 1024, st[0], st[1], st[2],
                               st[3], x[s], sh->add ? r[s] : NULL, st[4], st[5], 1, sh->c, n,
                               sh->hw, 1, 1e-5f, 0.1f);
            bn_backward_fused_cpu(dx[s], st[6], st[7], g[s], st[2] + 1024, x[s], st[4], st[1],
                                  sh->c, n, sh->hw, 1, 0);
        }
    }
    return omp_get_wtime() - t0;
}

int main(int argc, char **argv)
{
    const int n = argc > 1 ? atoi(argv[1]) : 128, reps = 5;
    float *x[NSHAPES], *y[NSHAPES], *a[NSHAPES], *r[NSHAPES], *o[NSHAPES], *g[NSHAPES],
        *dx[NSHAPES], *st[8];
    for (int s = 0; s < NSHAPES; s++) {
        const size_t cnt = (size_t)shapes[s].c * n * shapes[s].hw;
        x[s] = buf(cnt, 1u + s);
        y[s] = buf(cnt, 2u);
        a[s] = buf(cnt, 3u);
        r[s] = buf(cnt, 4u + s);
        o[s] = buf(cnt, 5u);
        g[s] = buf(cnt, 6u + s);
        dx[s] = buf(cnt, 7u);
    }
    for (int i = 0; i < 8; i++) st[i] = buf(1024 + 512 * BN_COEF_COUNT, 9u + i);
    printf("batch %d, %d threads, best of %d, ms per step (8 batch-norm layers of ResNet-9)\n",
           n, omp_get_max_threads(), reps);
    for (int v = 0; v < CPU_ISA_COUNT; v++) {
        if (cpu_isa_use((enum cpu_isa)v) != 0) continue;
        double best[2] = {1e30, 1e30};
        for (int k = 0; k < reps; k++)
            for (int f = 0; f < 2; f++) {
                const double t = step(n, f, x, y, a, r, o, g, dx, st);
                if (t < best[f]) best[f] = t;
            }
        printf("%-8s separate %7.1f ms, fused %7.1f ms (%.2fx)\n", cpu_isa_name((enum cpu_isa)v),
               1e3 * best[0], 1e3 * best[1], best[0] / best[1]);
    }
    return 0;
}

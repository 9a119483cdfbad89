/* Micro-benchmark of the CPU convolution implementations on the shapes of ResNet-9 or
 * DAWN_net: for each layer shape, the fastest of REPS calls (wall time) and the least CPU
 * time per call, forward, backward data and backward weights, of the chosen
 * implementation (im2col + sgemm, oneDNN primitives, or both side by side, taking turns,
 * with the largest difference between their outputs; "fwd A/B Rx" is im2col / oneDNN
 * milliseconds and their ratio), then the per-step totals weighted by how often each
 * shape occurs. The first layer's backward pass computes no input gradient, as in
 * training. Not a test. Build from the repository root, e.g.:
 *   gcc -std=c11 -O3 -march=x86-64-v3 -fopenmp -I. bench/conv_cpu_bench.c \
 *       kernels/cpu/conv2d.c kernels/cpu/conv2d_dnnl.c kernels/cpu/conv2d_choose.c \
 *       kernels/cpu/im2col.c kernels/cpu/cpu_util.c base/status.c -o conv_bench -ldnnl -lm
 * usage: conv_bench [resnet9|dawn] [BATCH] [im2col|dnnl|both|auto] [REPS]
 * (auto: whatever conv2d_forward_cpu picks; DNNL_MAX_CPU_ISA=AVX2 emulates an AVX2 CPU;
 * -DCONV_TARGET_COLS=N on the build line tries another im2col chunk size). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../kernels/conv2d.h"
#include "../kernels/cpu/conv2d_impl.h"

struct shape {
    const char *name;
    int c, co, hw, k, stride, pad, count;  /* count: how many such layers in the network */
};

static const struct shape resnet9[] = {
    {"prep 3-64 32", 3, 64, 32, 3, 1, 1, 1},
    {"layer1 64-128 32", 64, 128, 32, 3, 1, 1, 1},
    {"res1 128-128 16", 128, 128, 16, 3, 1, 1, 2},
    {"layer2 128-256 16", 128, 256, 16, 3, 1, 1, 1},
    {"layer3 256-512 8", 256, 512, 8, 3, 1, 1, 1},
    {"res3 512-512 4", 512, 512, 4, 3, 1, 1, 2},
    {NULL, 0, 0, 0, 0, 0, 0, 0},
};

static const struct shape dawn[] = {
    {"prep 3-64 32", 3, 64, 32, 3, 1, 1, 1},
    {"b1 64-64 32", 64, 64, 32, 3, 1, 1, 4},
    {"b2a 64-128 32/2", 64, 128, 32, 3, 2, 1, 1},
    {"b2 128-128 16", 128, 128, 16, 3, 1, 1, 3},
    {"sc2 64-128 1x1/2", 64, 128, 32, 1, 2, 0, 1},
    {"b3a 128-256 16/2", 128, 256, 16, 3, 2, 1, 1},
    {"b3 256-256 8", 256, 256, 8, 3, 1, 1, 3},
    {"sc3 128-256 1x1/2", 128, 256, 16, 1, 2, 0, 1},
    {"b4a 256-256 8/2", 256, 256, 8, 3, 2, 1, 1},
    {"b4 256-256 4", 256, 256, 4, 3, 1, 1, 3},
    {"sc4 256-256 1x1/2", 256, 256, 8, 1, 2, 0, 1},
    {NULL, 0, 0, 0, 0, 0, 0, 0},
};

enum which { W_IM2COL, W_DNNL, W_AUTO };

static void fill(float *p, size_t n, unsigned salt)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)(((i + salt) * 2654435761u) % 1000) / 1000.0f - 0.5f;
}

static int run_fwd(enum which m, float *y, const float *x, const float *w,
                   const struct conv2d_dims *d)
{
    if (m == W_IM2COL) return conv2d_im2col_forward(y, x, w, NULL, d);
    if (m == W_DNNL) return conv2d_dnnl_forward(y, x, w, NULL, d);
    return conv2d_forward_cpu(y, x, w, NULL, d);
}

static int run_bwd(enum which m, float *dx, float *dw, const float *dy, const float *x,
                   const float *w, const struct conv2d_dims *d)
{
    if (m == W_IM2COL) return conv2d_im2col_backward(dx, dw, NULL, dy, x, w, d, 0);
    if (m == W_DNNL) return conv2d_dnnl_backward(dx, dw, NULL, dy, x, w, d, 0);
    return conv2d_backward_cpu(dx, dw, NULL, dy, x, w, d, 0);
}

/* Largest |a - b| / (1 + |a|) over n values. */
static double max_rel(const float *a, const float *b, size_t n)
{
    double m = 0;
    for (size_t i = 0; i < n; i++) {
        double e = fabs((double)a[i] - b[i]) / (1.0 + fabs((double)a[i]));
        if (e > m) m = e;
    }
    return m;
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Runs direction dir (0 forward, 1 backward data, 2 backward weights) once. */
static int run_dir(enum which m, int dir, float *y, float *dx, float *dw, const float *x,
                   const float *w, const float *g, const struct conv2d_dims *d)
{
    return dir == 0   ? run_fwd(m, y, x, w, d)
           : dir == 1 ? run_bwd(m, dx, NULL, g, x, w, d)
                      : run_bwd(m, NULL, dw, g, x, w, d);
}

/* Times the implementations ms[0..nm) on one shape, taking turns call by call after a
 * warm-up call each: wall[i][dir] is the fastest call's wall time and cpu[i][dir] the
 * least process CPU time of a call (all threads together), both in seconds; the
 * backward-data entries stay 0 for the first layer, which has none. On a loaded machine
 * the fastest call and the CPU time are the figures least disturbed by other work. */
static int time_shape(double wall[][3], double cpu[][3], const enum which *ms, int nm,
                      float *const y[], float *const dx[], float *const dw[], const float *x,
                      const float *w, const float *g, int first, const struct conv2d_dims *d,
                      int reps)
{
    for (int dir = 0; dir < 3; dir++)
        for (int r = -1; r < reps; r++)
            for (int i = 0; i < nm; i++) {
                if (r < 0) wall[i][dir] = cpu[i][dir] = 0;
                if (dir == 1 && first) continue;
                double t0 = omp_get_wtime(), c0 = cpu_seconds();
                if (run_dir(ms[i], dir, y[i], dx[i], dw[i], x, w, g, d)) return 1;
                double t = omp_get_wtime() - t0, c = cpu_seconds() - c0;
                if (r < 0) continue;
                if (r == 0 || t < wall[i][dir]) wall[i][dir] = t;
                if (r == 0 || c < cpu[i][dir]) cpu[i][dir] = c;
            }
    return 0;
}

int main(int argc, char **argv)
{
    const char *net = argc > 1 ? argv[1] : "resnet9";
    int n = argc > 2 ? atoi(argv[2]) : 128;
    const char *impl = argc > 3 ? argv[3] : "both";
    int reps = argc > 4 ? atoi(argv[4]) : 3;
    const struct shape *shapes = strcmp(net, "dawn") == 0 ? dawn : resnet9;
    int both = strcmp(impl, "both") == 0;
    enum which only = strcmp(impl, "im2col") == 0 ? W_IM2COL
                      : strcmp(impl, "dnnl") == 0 ? W_DNNL : W_AUTO;
    /* fastest wall time [impl][fwd, bwd data, bwd weights] */
    double tot[2][3] = {{0, 0, 0}, {0, 0, 0}};
    double totc[2][3] = {{0, 0, 0}, {0, 0, 0}}; /* least CPU time, likewise */
    double tot_flops = 0;
    if (n <= 0 || reps <= 0) {
        fprintf(stderr,
                "usage: conv_bench [resnet9|dawn] [BATCH] [im2col|dnnl|both|auto] [REPS]\n");
        return 2;
    }
    printf("%s, batch %d, %d threads, oneDNN ISA %s, %s, times in ms per call\n", net, n,
           omp_get_max_threads(), conv2d_dnnl_isa_name(), impl);
    for (const struct shape *sh = shapes; sh->name; sh++) {
        const int first = sh == shapes;
        struct conv2d_dims d = {n, sh->c, sh->hw, sh->hw, sh->co, sh->k, sh->stride, sh->pad, 0, 0};
        conv2d_dims_finish(&d);
        size_t nx = (size_t)d.c * n * d.h * d.w, ny = (size_t)d.co * n * d.ho * d.wo;
        size_t nw = (size_t)d.co * d.c * d.k * d.k;
        float *x = malloc(nx * 4), *dx = malloc(nx * 4), *y = malloc(ny * 4), *w = malloc(nw * 4),
              *dw = malloc(nw * 4), *g = malloc(ny * 4);
        float *y2 = malloc(ny * 4), *dx2 = malloc(nx * 4), *dw2 = malloc(nw * 4);
        if (!x || !dx || !y || !w || !dw || !g || !y2 || !dx2 || !dw2) return 1;
        fill(x, nx, 1);
        fill(w, nw, 2);
        fill(g, ny, 3);
        double flops = 2.0 * (double)ny * (double)(d.c * d.k * d.k);
        tot_flops += flops * (first ? 2 : 3) * sh->count;
        const enum which ms[2] = {both ? W_IM2COL : only, W_DNNL};
        float *const ys[2] = {y, y2}, *const dxs[2] = {dx, dx2}, *const dws[2] = {dw, dw2};
        double wall[2][3], cpu[2][3];
        if (time_shape(wall, cpu, ms, both ? 2 : 1, ys, dxs, dws, x, w, g, first, &d, reps))
            return 1;
        if (both) {
            double err = max_rel(y, y2, ny), ew = max_rel(dw, dw2, nw);
            double ex = first ? 0 : max_rel(dx, dx2, nx);
            if (ew > err) err = ew;
            if (ex > err) err = ex;
            printf("%-19s x%d", sh->name, sh->count);
            for (int dir = 0; dir < 3; dir++)
                printf("  %s %6.1f/%6.1f %4.2fx (cpu %4.2fx)",
                       dir == 0 ? "fwd" : dir == 1 ? "bwd-d" : "bwd-w",
                       wall[0][dir] * 1e3, wall[1][dir] * 1e3,
                       wall[1][dir] > 0 ? wall[0][dir] / wall[1][dir] : 0,
                       cpu[1][dir] > 0 ? cpu[0][dir] / cpu[1][dir] : 0);
            printf("  diff %.0e [%s]\n", err, conv2d_dnnl_impl_info(&d, CONV2D_FWD));
        } else {
            printf("%-19s x%d  fwd %7.2f  bwd-data %7.2f  bwd-w %7.2f", sh->name, sh->count,
                   wall[0][0] * 1e3, wall[0][1] * 1e3, wall[0][2] * 1e3);
            if (only == W_AUTO)
                printf("  [%s %s %s]",
                       conv2d_cpu_impl_name(conv2d_cpu_choose(&d, CONV2D_FWD)),
                       conv2d_cpu_impl_name(conv2d_cpu_choose(&d, CONV2D_BWD_DATA)),
                       conv2d_cpu_impl_name(conv2d_cpu_choose(&d, CONV2D_BWD_WEIGHTS)));
            printf("\n");
        }
        for (int i = 0; i < (both ? 2 : 1); i++)
            for (int k = 0; k < 3; k++) {
                tot[i][k] += wall[i][k] * sh->count;
                totc[i][k] += cpu[i][k] * sh->count;
            }
        free(x);
        free(dx);
        free(y);
        free(w);
        free(dw);
        free(g);
        free(y2);
        free(dx2);
        free(dw2);
    }
    for (int i = 0; i < (both ? 2 : 1); i++) {
        double t = tot[i][0] + tot[i][1] + tot[i][2];
        double tc = totc[i][0] + totc[i][1] + totc[i][2];
        printf("total %-6s: fwd %.1f, bwd-data %.1f, bwd-w %.1f ms, %.1f GFLOP/s, %.1f images/s "
               "(convs only), CPU %.1f s per step\n", both ? (i ? "dnnl" : "im2col") : impl,
               tot[i][0] * 1e3, tot[i][1] * 1e3, tot[i][2] * 1e3, tot_flops / t * 1e-9, n / t, tc);
    }
    conv2d_dnnl_release();
    return 0;
}

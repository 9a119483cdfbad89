/* Private helpers shared by the CPU kernels: deterministic double-precision reductions
 * over float arrays (a fixed 8-lane order the compiler can vectorise, so results do not
 * depend on anything but the data and its length) and the single-threaded sgemm call
 * used inside OpenMP regions. */
#ifndef DAWNRUN_KERNELS_CPU_UTIL_H
#define DAWNRUN_KERNELS_CPU_UTIL_H

#include <stddef.h>

#define CPU_LANES 8

/* Sum of x[0..n) in double, in a fixed lane order. */
static inline double cpu_sum(const float *x, size_t n)
{
    double acc[CPU_LANES] = {0};
    size_t i = 0;
    for (; i + CPU_LANES <= n; i += CPU_LANES)
        for (int j = 0; j < CPU_LANES; j++) acc[j] += (double)x[i + j];
    for (int j = 0; i < n; i++, j++) acc[j] += (double)x[i];
    double s = 0.0;
    for (int j = 0; j < CPU_LANES; j++) s += acc[j];
    return s;
}

/* Sum and sum of squares of x[0..n) in double (each product is exact in double). */
static inline void cpu_sum_sumsq(double *sum, double *sumsq, const float *x, size_t n)
{
    double a[CPU_LANES] = {0}, q[CPU_LANES] = {0};
    size_t i = 0;
    for (; i + CPU_LANES <= n; i += CPU_LANES)
        for (int j = 0; j < CPU_LANES; j++) {
            double v = (double)x[i + j];
            a[j] += v;
            q[j] += v * v;
        }
    for (int j = 0; i < n; i++, j++) {
        double v = (double)x[i];
        a[j] += v;
        q[j] += v * v;
    }
    double s = 0.0, sq = 0.0;
    for (int j = 0; j < CPU_LANES; j++) {
        s += a[j];
        sq += q[j];
    }
    *sum = s;
    *sumsq = sq;
}

/* sum(x), sum(dy) and sum(dy * x) in double (products exact), for the batch-norm
 * backward pass; sum(x) is bit-identical to cpu_sum_sumsq's sum. */
static inline void cpu_sum_dot(double *sum_x, double *sum_dy, double *dot, const float *dy,
                               const float *x, size_t n)
{
    double a[CPU_LANES] = {0}, g[CPU_LANES] = {0}, d[CPU_LANES] = {0};
    size_t i = 0;
    for (; i + CPU_LANES <= n; i += CPU_LANES)
        for (int j = 0; j < CPU_LANES; j++) {
            double v = (double)x[i + j], e = (double)dy[i + j];
            a[j] += v;
            g[j] += e;
            d[j] += e * v;
        }
    for (int j = 0; i < n; i++, j++) {
        double v = (double)x[i], e = (double)dy[i];
        a[j] += v;
        g[j] += e;
        d[j] += e * v;
    }
    double sa = 0.0, sg = 0.0, sd = 0.0;
    for (int j = 0; j < CPU_LANES; j++) {
        sa += a[j];
        sg += g[j];
        sd += d[j];
    }
    *sum_x = sa;
    *sum_dy = sg;
    *dot = sd;
}

/* Row-major C (m, n) = alpha * op(A) op(B) + beta * C through oneDNN; ta/tb are 'N' or
 * 'T'. Called inside an OpenMP parallel region it runs on the calling thread only.
 * Returns 0 or DR_ERR_INTERNAL. */
int cpu_sgemm(char ta, char tb, long m, long n, long k, float alpha, const float *a, long lda,
              const float *b, long ldb, float beta, float *c, long ldc);

#endif

/* CPU structural ops on (C, N, H, W) tensors: channel concat (contiguous slices), add,
 * scale, scaled copy and the flatten transpose to features-major (C*H*W, N). Compiled once
 * per instruction set (cpu_isa.h). */
#include "../tensor_ops.h"
#include "cpu_isa.h"

#include <string.h>

/* Below this many elements the elementwise loops stay on one thread. */
#define OPS_PARALLEL_MIN 32768

void CPU_ISA_FN(concat_forward_cpu)(float *y, const float *const *xs, const int *cs, int count,
                                    size_t plane)
{
    size_t off = 0;
    for (int i = 0; i < count; i++) {
        const size_t len = (size_t)cs[i] * plane;
        const long blocks = (long)cs[i];
#pragma omp parallel for schedule(static) if (len >= OPS_PARALLEL_MIN)
        for (long b = 0; b < blocks; b++)
            memcpy(y + off + (size_t)b * plane, xs[i] + (size_t)b * plane, sizeof(float) * plane);
        off += len;
    }
}

void CPU_ISA_FN(concat_backward_cpu)(float *const *dxs, const float *dy, const int *cs, int count,
                         size_t plane, const int *accumulate)
{
    size_t off = 0;
    for (int i = 0; i < count; i++) {
        const size_t len = (size_t)cs[i] * plane;
        if (dxs[i])
            CPU_ISA_FN(scaled_copy_cpu)(dxs[i], dy + off, 1.0f, len,
                                        accumulate ? accumulate[i] : 0);
        off += len;
    }
}

void CPU_ISA_FN(add_forward_cpu)(float *y, const float *a, const float *b, size_t count)
{
    const long cnt = (long)count;
#pragma omp parallel for schedule(static) if (count >= OPS_PARALLEL_MIN)
    for (long i = 0; i < cnt; i++) y[i] = a[i] + b[i];
}

void CPU_ISA_FN(scale_forward_cpu)(float *y, const float *x, float s, size_t count)
{
    const long cnt = (long)count;
#pragma omp parallel for schedule(static) if (count >= OPS_PARALLEL_MIN)
    for (long i = 0; i < cnt; i++) y[i] = s * x[i];
}

void CPU_ISA_FN(scaled_copy_cpu)(float *dx, const float *dy, float s, size_t count,
                                 int accumulate_dx)
{
    const long cnt = (long)count;
    if (accumulate_dx) {
#pragma omp parallel for schedule(static) if (count >= OPS_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) dx[i] += s * dy[i];
    } else if (s == 1.0f) {
        if (dx != dy) memcpy(dx, dy, sizeof(float) * count);
    } else {
#pragma omp parallel for schedule(static) if (count >= OPS_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) dx[i] = s * dy[i];
    }
}

void CPU_ISA_FN(flatten_forward_cpu)(float *y, const float *x, int c, int n, int hw)
{
#pragma omp parallel for schedule(static) if ((long)c * n * hw >= OPS_PARALLEL_MIN)
    for (int ch = 0; ch < c; ch++)
        for (int p = 0; p < hw; p++) {
            float *yr = y + ((size_t)ch * hw + p) * n;
            const float *xc = x + (size_t)ch * n * hw + p;
            for (int i = 0; i < n; i++) yr[i] = xc[(size_t)i * hw];
        }
}

void CPU_ISA_FN(flatten_backward_cpu)(float *dx, const float *dy, int c, int n, int hw,
                                      int accumulate_dx)
{
#pragma omp parallel for schedule(static) if ((long)c * n * hw >= OPS_PARALLEL_MIN)
    for (int ch = 0; ch < c; ch++)
        for (int p = 0; p < hw; p++) {
            const float *gr = dy + ((size_t)ch * hw + p) * n;
            float *dc = dx + (size_t)ch * n * hw + p;
            if (accumulate_dx)
                for (int i = 0; i < n; i++) dc[(size_t)i * hw] += gr[i];
            else
                for (int i = 0; i < n; i++) dc[(size_t)i * hw] = gr[i];
        }
}

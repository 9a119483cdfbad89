/* CPU batch normalisation over (C, N, HW): one channel's n*hw values are contiguous, and
 * so is each ghost batch-norm part of them, so channels are spread over OpenMP threads
 * and each part's statistics are summed in double in a fixed order (bit-identical from
 * run to run). The mean is applied as a float pair hi + lo, so that channels whose mean
 * is large next to their spread keep full precision: y = ((x - hi) - lo) * scale + beta.
 * Also the fused passes of bn_fused.h, which share the statistics and the elementwise
 * expressions with the plain ones. Compiled once per instruction set (cpu_isa.h). */
#include "../batchnorm.h"

#include <math.h>
#include <stddef.h>

#include "cpu_isa.h"
#include "cpu_util.h"
#include "vmath.h"

/* What one elementwise pass over a part writes besides (or instead of) y. */
enum bn_out { BN_OUT_NONE, BN_OUT_RELU, BN_OUT_RELU_ADD, BN_OUT_ADD_RELU };

/* v = ((x - hi) - lo) * scale + shift, into y (when want_y) and, per mode, relu(v),
 * relu(v) + res (BN_OUT_RELU_ADD) or res + relu(v) (BN_OUT_ADD_RELU) into out: the
 * expressions of the batch norm, activation and add kernels. Inlined with constant
 * modes, so each combination is a loop of its own. */
static inline __attribute__((always_inline)) void
bn_apply(float *y, float *out, const float *x, const float *res, size_t cnt, float hi,
         float lo, float scale, float shift, int want_y, enum bn_out mode)
{
    for (size_t i = 0; i < cnt; i++) {
        const float v = ((x[i] - hi) - lo) * scale + shift;
        if (want_y) y[i] = v;
        const float r = v < 0.0f ? 0.0f : v;   /* NaN passes through, as the ReLU kernel */
        if (mode == BN_OUT_RELU) out[i] = r;
        else if (mode == BN_OUT_RELU_ADD) out[i] = r + res[i];
        else if (mode == BN_OUT_ADD_RELU) out[i] = res[i] + r;
    }
}

/* bn_apply with the mode and the y flag turned into constants. */
static void bn_apply_any(float *y, float *out, const float *x, const float *res, size_t cnt,
                         float hi, float lo, float scale, float shift, enum bn_out mode)
{
    switch (mode) {
    case BN_OUT_NONE: bn_apply(y, out, x, res, cnt, hi, lo, scale, shift, 1, BN_OUT_NONE); break;
    case BN_OUT_RELU:
        if (y) bn_apply(y, out, x, res, cnt, hi, lo, scale, shift, 1, BN_OUT_RELU);
        else bn_apply(y, out, x, res, cnt, hi, lo, scale, shift, 0, BN_OUT_RELU);
        break;
    case BN_OUT_RELU_ADD:
        if (y) bn_apply(y, out, x, res, cnt, hi, lo, scale, shift, 1, BN_OUT_RELU_ADD);
        else bn_apply(y, out, x, res, cnt, hi, lo, scale, shift, 0, BN_OUT_RELU_ADD);
        break;
    case BN_OUT_ADD_RELU:
        if (y) bn_apply(y, out, x, res, cnt, hi, lo, scale, shift, 1, BN_OUT_ADD_RELU);
        else bn_apply(y, out, x, res, cnt, hi, lo, scale, shift, 0, BN_OUT_ADD_RELU);
        break;
    }
}

static enum bn_out bn_mode(const float *out, const float *res, int res_first)
{
    if (!out) return BN_OUT_NONE;
    if (!res) return BN_OUT_RELU;
    return res_first ? BN_OUT_ADD_RELU : BN_OUT_RELU_ADD;
}

void CPU_ISA_FN(bn_train_fused_cpu)(float *y, float *out, float *coef, float *save_mean,
                                    float *save_invstd, float *running_mean,
                                    float *running_var, const float *x, const float *res,
                                    const float *gamma, const float *beta, int res_first,
                                    int c, int n, int hw, int splits, float eps, float momentum)
{
    const int parts = splits > 1 ? splits : 1;
    const size_t plane = (size_t)n * (size_t)hw, cnt = plane / (size_t)parts;
    const enum bn_out mode = bn_mode(out, res, res_first);
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ch++) {
        double mean_sum = 0.0, unbiased_sum = 0.0;
        for (int s = 0; s < parts; s++) {
            const size_t at = (size_t)ch * plane + (size_t)s * cnt, k = (size_t)s * c + ch;
            double sum = 0.0, sumsq = 0.0;
            cpu_sum_sumsq(&sum, &sumsq, x + at, cnt);
            double mean, invstd, unbiased;
            batchnorm_part_stats(&mean, &invstd, &unbiased, &save_mean[k], &save_invstd[k], sum,
                                 sumsq, cnt, eps);
            mean_sum += mean;
            unbiased_sum += unbiased;
            float hi, lo;
            batchnorm_split(&hi, &lo, mean);
            const float scale = (float)((double)gamma[ch] * invstd), shift = beta[ch];
            if (coef) {
                float *q = coef + k * BN_COEF_COUNT;
                q[BN_COEF_HI] = hi;
                q[BN_COEF_LO] = lo;
                q[BN_COEF_SCALE] = scale;
                q[BN_COEF_SHIFT] = shift;
            }
            bn_apply_any(y ? y + at : NULL, out ? out + at : NULL, x + at, res ? res + at : NULL,
                         cnt, hi, lo, scale, shift, mode);
        }
        batchnorm_running_update(&running_mean[ch], &running_var[ch], mean_sum, unbiased_sum,
                                 parts, momentum);
    }
}

void CPU_ISA_FN(batchnorm_forward_train_cpu)(float *y, float *save_mean, float *save_invstd,
                                             float *running_mean, float *running_var,
                                             const float *x, const float *gamma,
                                             const float *beta, int c, int n, int hw,
                                             int splits, float eps, float momentum)
{
    CPU_ISA_FN(bn_train_fused_cpu)(y, NULL, NULL, save_mean, save_invstd, running_mean,
                                   running_var, x, NULL, gamma, beta, 0, c, n, hw, splits, eps,
                                   momentum);
}

/* The eval pass is the train pass's expression with lo = 0: x - mean - 0 is x - mean for
 * every x, -0 and NaN included. */
void CPU_ISA_FN(bn_eval_fused_cpu)(float *y, float *out, const float *x, const float *res,
                                   const float *gamma, const float *beta,
                                   const float *running_mean, const float *running_var,
                                   int res_first, int c, int n, int hw, float eps)
{
    const size_t cnt = (size_t)n * (size_t)hw;
    const enum bn_out mode = bn_mode(out, res, res_first);
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ch++) {
        const size_t at = (size_t)ch * cnt;
        const double invstd = 1.0 / sqrt((double)running_var[ch] + (double)eps);
        const float scale = (float)((double)gamma[ch] * invstd), shift = beta[ch];
        bn_apply_any(y ? y + at : NULL, out ? out + at : NULL, x + at, res ? res + at : NULL,
                     cnt, running_mean[ch], 0.0f, scale, shift, mode);
    }
}

void CPU_ISA_FN(batchnorm_forward_eval_cpu)(float *y, const float *x, const float *gamma,
                                            const float *beta, const float *running_mean,
                                            const float *running_var, int c, int n, int hw,
                                            float eps)
{
    CPU_ISA_FN(bn_eval_fused_cpu)(y, NULL, x, NULL, gamma, beta, running_mean, running_var, 0,
                                  c, n, hw, eps);
}

/* The ReLU-masked dy of x[0..n): dy = (v > 0 ? dy_act : 0) with v = ((x - hi) - lo) *
 * scale + shift, coefficients q (the select is a bit mask, vm_select, so that it
 * vectorises). */
static void bn_relu_mask(float *g, const float *dy_act, const float *x, const float *q, size_t n)
{
    const float hi = q[BN_COEF_HI], lo = q[BN_COEF_LO], scale = q[BN_COEF_SCALE],
                shift = q[BN_COEF_SHIFT];
    for (size_t i = 0; i < n; i++) {
        const float v = ((x[i] - hi) - lo) * scale + shift;
        g[i] = vm_select(v > 0.0f, dy_act[i], 0.0f);
    }
}

/* Values masked at a time: a multiple of CPU_LANES, so that each lane sums the elements
 * it sums in cpu_sum_dot, in the same order. */
#define BN_MASK_CHUNK 512

/* cpu_sum_dot's sums (the same lanes, the same order) of the ReLU-masked dy (bn_relu_mask),
 * taken a chunk at a time, never stored whole. */
static void bn_sum_dot_relu(double *sum_x, double *sum_dy, double *dot, const float *dy_act,
                            const float *x, const float *q, size_t n)
{
    float g[BN_MASK_CHUNK];
    double a[CPU_LANES] = {0}, s[CPU_LANES] = {0}, d[CPU_LANES] = {0};
    size_t i = 0;
    while (i + CPU_LANES <= n) {
        size_t len = n - i < BN_MASK_CHUNK ? n - i : BN_MASK_CHUNK;
        len -= len % CPU_LANES;
        bn_relu_mask(g, dy_act + i, x + i, q, len);
        for (size_t k = 0; k < len; k += CPU_LANES)
            for (int j = 0; j < CPU_LANES; j++) {
                const double v = (double)x[i + k + j], e = (double)g[k + j];
                a[j] += v;
                s[j] += e;
                d[j] += e * v;
            }
        i += len;
    }
    bn_relu_mask(g, dy_act + i, x + i, q, n - i);
    for (int j = 0; i < n; i++, j++) {
        const double v = (double)x[i], e = (double)g[j];
        a[j] += v;
        s[j] += e;
        d[j] += e * v;
    }
    double sa = 0.0, sg = 0.0, sd = 0.0;
    for (int j = 0; j < CPU_LANES; j++) {
        sa += a[j];
        sg += s[j];
        sd += d[j];
    }
    *sum_x = sa;
    *sum_dy = sg;
    *dot = sd;
}

/* The backward of one channel's part: dx (=|+=) a*dy + b*((x - hi) - lo) + e, dy read
 * from dy (q NULL) or recomputed from dy_act through the ReLU mask of coefficients q. */
static inline __attribute__((always_inline)) void
bn_backward_apply(float *dx, const float *dy, const float *x, const float *q, size_t cnt,
                  float a, float b, float e, float hi, float lo, int accumulate, int masked)
{
    float m_hi = 0.0f, m_lo = 0.0f, m_scale = 0.0f, m_shift = 0.0f;
    if (masked) {
        m_hi = q[BN_COEF_HI];
        m_lo = q[BN_COEF_LO];
        m_scale = q[BN_COEF_SCALE];
        m_shift = q[BN_COEF_SHIFT];
    }
    for (size_t i = 0; i < cnt; i++) {
        float g = dy[i];
        if (masked) {
            const float v = ((x[i] - m_hi) - m_lo) * m_scale + m_shift;
            g = vm_select(v > 0.0f, g, 0.0f);
        }
        const float r = a * g + b * ((x[i] - hi) - lo) + e;
        if (accumulate) dx[i] += r;
        else dx[i] = r;
    }
}

/* batchnorm_backward_cpu, with dy the ReLU-masked dy_act when coef is not NULL. */
static void bn_backward_any(float *dx, float *dgamma, float *dbeta, const float *dy,
                            const float *coef, const float *x, const float *gamma,
                            const float *save_invstd, int c, int n, int hw, int splits,
                            int accumulate_dx)
{
    const int parts = splits > 1 ? splits : 1;
    const size_t plane = (size_t)n * (size_t)hw, cnt = plane / (size_t)parts;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ch++) {
        double dgamma_sum = 0.0, dbeta_sum = 0.0;
        for (int s = 0; s < parts; s++) {
            const size_t at = (size_t)ch * plane + (size_t)s * cnt;
            const size_t k = (size_t)s * c + ch;
            const float *xc = x + at, *gc = dy + at;
            const float *q = coef ? coef + k * BN_COEF_COUNT : NULL;
            double sum_x = 0.0, sum_dy = 0.0, sum_dyx = 0.0;
            if (q) bn_sum_dot_relu(&sum_x, &sum_dy, &sum_dyx, gc, xc, q, cnt);
            else cpu_sum_dot(&sum_x, &sum_dy, &sum_dyx, gc, xc, cnt);
            /* dx = k * (dy - sum_dy/cnt - xhat * dg/cnt), k = gamma * invstd, written as
             * dx = a*dy + b*(x - mean) + e */
            double dg;
            float a, b, e, hi, lo;
            batchnorm_channel_grad(&dg, &a, &b, &e, &hi, &lo, sum_x, sum_dy, sum_dyx, gamma[ch],
                                   save_invstd[k], cnt);
            dgamma_sum += dg;
            dbeta_sum += sum_dy;
            if (!dx || cnt == 0) continue;
            float *dxc = dx + at;
            if (q && accumulate_dx) bn_backward_apply(dxc, gc, xc, q, cnt, a, b, e, hi, lo, 1, 1);
            else if (q) bn_backward_apply(dxc, gc, xc, q, cnt, a, b, e, hi, lo, 0, 1);
            else if (accumulate_dx) bn_backward_apply(dxc, gc, xc, q, cnt, a, b, e, hi, lo, 1, 0);
            else bn_backward_apply(dxc, gc, xc, q, cnt, a, b, e, hi, lo, 0, 0);
        }
        if (dgamma) dgamma[ch] = (float)dgamma_sum;
        if (dbeta) dbeta[ch] = (float)dbeta_sum;
    }
}

/* Each part's mean is recomputed here in double (the same sum as the forward pass, in
 * the same order), so the backward pass sees exactly the mean the forward pass normalised
 * with; save_mean, its fp32 rounding, is not needed. */
void CPU_ISA_FN(batchnorm_backward_cpu)(float *dx, float *dgamma, float *dbeta, const float *dy,
                                        const float *x, const float *gamma,
                                        const float *save_mean, const float *save_invstd, int c,
                                        int n, int hw, int splits, int accumulate_dx)
{
    (void)save_mean;
    bn_backward_any(dx, dgamma, dbeta, dy, NULL, x, gamma, save_invstd, c, n, hw, splits,
                    accumulate_dx);
}

void CPU_ISA_FN(bn_backward_fused_cpu)(float *dx, float *dgamma, float *dbeta,
                                       const float *dy_act, const float *coef, const float *x,
                                       const float *gamma, const float *save_invstd, int c,
                                       int n, int hw, int splits, int accumulate_dx)
{
    bn_backward_any(dx, dgamma, dbeta, dy_act, coef, x, gamma, save_invstd, c, n, hw, splits,
                    accumulate_dx);
}

/* CPU batch normalisation over (C, N, HW): one channel's n*hw values are contiguous, and
 * so is each ghost batch-norm part of them, so channels are spread over OpenMP threads
 * and each part's statistics are summed in double in a fixed order (bit-identical from
 * run to run). The mean is applied as a float pair hi + lo, so that channels whose mean
 * is large next to their spread keep full precision: y = ((x - hi) - lo) * scale + beta. */
#include "../batchnorm.h"

#include <math.h>
#include <stddef.h>

#include "cpu_util.h"

void batchnorm_forward_train_cpu(float *y, float *save_mean, float *save_invstd,
                                 float *running_mean, float *running_var, const float *x,
                                 const float *gamma, const float *beta, int c, int n, int hw,
                                 int splits, float eps, float momentum)
{
    const int parts = splits > 1 ? splits : 1;
    const size_t plane = (size_t)n * (size_t)hw, cnt = plane / (size_t)parts;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ch++) {
        double mean_sum = 0.0, unbiased_sum = 0.0;
        for (int s = 0; s < parts; s++) {
            const size_t at = (size_t)ch * plane + (size_t)s * cnt, k = (size_t)s * c + ch;
            const float *xc = x + at;
            float *yc = y + at;
            double sum = 0.0, sumsq = 0.0;
            cpu_sum_sumsq(&sum, &sumsq, xc, cnt);
            double mean, invstd, unbiased;
            batchnorm_part_stats(&mean, &invstd, &unbiased, &save_mean[k], &save_invstd[k], sum,
                                 sumsq, cnt, eps);
            mean_sum += mean;
            unbiased_sum += unbiased;
            float hi, lo;
            batchnorm_split(&hi, &lo, mean);
            const float scale = (float)((double)gamma[ch] * invstd), shift = beta[ch];
            for (size_t i = 0; i < cnt; i++) yc[i] = ((xc[i] - hi) - lo) * scale + shift;
        }
        batchnorm_running_update(&running_mean[ch], &running_var[ch], mean_sum, unbiased_sum,
                                 parts, momentum);
    }
}

void batchnorm_forward_eval_cpu(float *y, const float *x, const float *gamma, const float *beta,
                                const float *running_mean, const float *running_var, int c,
                                int n, int hw, float eps)
{
    const size_t cnt = (size_t)n * (size_t)hw;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ch++) {
        const float *xc = x + (size_t)ch * cnt;
        float *yc = y + (size_t)ch * cnt;
        const double invstd = 1.0 / sqrt((double)running_var[ch] + (double)eps);
        const float scale = (float)((double)gamma[ch] * invstd), shift = beta[ch];
        const float mean = running_mean[ch];
        for (size_t i = 0; i < cnt; i++) yc[i] = (xc[i] - mean) * scale + shift;
    }
}

/* Each part's mean is recomputed here in double (the same sum as the forward pass, in
 * the same order), so the backward pass sees exactly the mean the forward pass normalised
 * with; save_mean, its fp32 rounding, is not needed. */
void batchnorm_backward_cpu(float *dx, float *dgamma, float *dbeta, const float *dy,
                            const float *x, const float *gamma, const float *save_mean,
                            const float *save_invstd, int c, int n, int hw, int splits,
                            int accumulate_dx)
{
    const int parts = splits > 1 ? splits : 1;
    const size_t plane = (size_t)n * (size_t)hw, cnt = plane / (size_t)parts;
    (void)save_mean;
#pragma omp parallel for schedule(static)
    for (int ch = 0; ch < c; ch++) {
        double dgamma_sum = 0.0, dbeta_sum = 0.0;
        for (int s = 0; s < parts; s++) {
            const size_t at = (size_t)ch * plane + (size_t)s * cnt;
            const float *xc = x + at, *gc = dy + at;
            double sum_x = 0.0, sum_dy = 0.0, sum_dyx = 0.0;
            cpu_sum_dot(&sum_x, &sum_dy, &sum_dyx, gc, xc, cnt);
            /* dx = k * (dy - sum_dy/cnt - xhat * dg/cnt), k = gamma * invstd, written as
             * dx = a*dy + b*(x - mean) + e */
            double dg;
            float a, b, e, hi, lo;
            batchnorm_channel_grad(&dg, &a, &b, &e, &hi, &lo, sum_x, sum_dy, sum_dyx, gamma[ch],
                                   save_invstd[(size_t)s * c + ch], cnt);
            dgamma_sum += dg;
            dbeta_sum += sum_dy;
            if (!dx || cnt == 0) continue;
            float *dxc = dx + at;
            if (accumulate_dx)
                for (size_t i = 0; i < cnt; i++)
                    dxc[i] += a * gc[i] + b * ((xc[i] - hi) - lo) + e;
            else
                for (size_t i = 0; i < cnt; i++)
                    dxc[i] = a * gc[i] + b * ((xc[i] - hi) - lo) + e;
        }
        if (dgamma) dgamma[ch] = (float)dgamma_sum;
        if (dbeta) dbeta[ch] = (float)dbeta_sum;
    }
}

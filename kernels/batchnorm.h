/* Batch normalisation over (N, H, W) per channel. CPU twin layout (C, N, H, W): each
 * channel's n*hw values are contiguous. Variance for normalising is the biased batch
 * variance; running_var is updated with the unbiased one, as PyTorch does:
 *   running = (1 - momentum) * running + momentum * batch_stat.
 * Ghost batch norm: with `splits` S > 1 the n images form S consecutive parts of n / S
 * images, each normalised with its own statistics (saved as S * c values, part s's
 * channel j at s * c + j); the running statistics are updated once, with batch_stat the
 * mean over the parts of each part's statistic. S = 1 is plain batch norm. */
#ifndef DAWNRUN_KERNELS_BATCHNORM_H
#define DAWNRUN_KERNELS_BATCHNORM_H

#include <math.h>
#include <stddef.h>

#if defined(__CUDACC__)
#define BN_FN static inline __host__ __device__
#else
#define BN_FN static inline
#endif

/* The per-channel arithmetic every engine shares, so that all agree to the bit: from a
 * channel's double sums over cnt values to what the elementwise passes apply. Both engines
 * compile it without FMA contraction (-ffp-contract=off for C, -fmad=false for the CUDA
 * files, cmake/cuda.cmake), which the bit-for-bit agreement needs. The sums themselves
 * are taken in different orders by the two engines, so batch norm as a whole agrees
 * within rounding, not to the bit. */

/* Splits a double into hi = its fp32 rounding and lo = the fp32 rounding of the rest; the
 * mean is applied as ((x - hi) - lo) so that a large mean keeps full precision. */
BN_FN void batchnorm_split(float *hi, float *lo, double v)
{
    *hi = (float)v;
    *lo = (float)(v - (double)*hi);
}

/* Train-mode statistics of one part of one channel (the whole batch when there is one
 * part) from sum x and sum x² over its cnt values: returns the mean, 1/sqrt(var + eps)
 * (biased variance) and the unbiased variance (the biased one when cnt < 2), and saves
 * the first two in fp32. */
BN_FN void batchnorm_part_stats(double *mean, double *invstd, double *unbiased,
                                float *save_mean, float *save_invstd, double sum, double sumsq,
                                size_t cnt, float eps)
{
    *mean = cnt ? sum / (double)cnt : 0.0;
    double var = cnt ? sumsq / (double)cnt - *mean * *mean : 0.0;
    if (var < 0.0) var = 0.0;
    *invstd = 1.0 / sqrt(var + (double)eps);
    *unbiased = cnt > 1 ? var * (double)cnt / (double)(cnt - 1) : var;
    *save_mean = (float)*mean;
    *save_invstd = (float)*invstd;
}

/* Updates one channel's running statistics from mean_sum and unbiased_sum, the sums (in
 * part order) of the `parts` part means and unbiased variances that batchnorm_part_stats
 * returned: batch_stat = sum / parts. Skipped when momentum == 0. */
BN_FN void batchnorm_running_update(float *running_mean, float *running_var, double mean_sum,
                                    double unbiased_sum, int parts, float momentum)
{
    if (momentum == 0.0f) return;
    const double mean = mean_sum / (double)parts, unbiased = unbiased_sum / (double)parts;
    *running_mean = (float)((1.0 - momentum) * *running_mean + momentum * mean);
    *running_var = (float)((1.0 - momentum) * *running_var + momentum * unbiased);
}

/* Backward coefficients of one channel from sum x, sum dy and sum dy*x over cnt values
 * (all zero when cnt is 0): dgamma = sum dy * xhat (dbeta is sum dy itself), and
 * dx = a*dy + b*((x - hi) - lo) + e. */
BN_FN void batchnorm_channel_grad(double *dgamma, float *a, float *b, float *e, float *hi,
                                  float *lo, double sum_x, double sum_dy, double sum_dyx,
                                  float gamma, float invstd, size_t cnt)
{
    const double n = cnt ? (double)cnt : 1.0;
    const double mean = cnt ? sum_x / n : 0.0;
    const double dg = (sum_dyx - mean * sum_dy) * (double)invstd;
    const double k = (double)gamma * (double)invstd;
    *dgamma = dg;
    *a = (float)k;
    *b = (float)(-k * (double)invstd * dg / n);
    *e = (float)(-k * sum_dy / n);
    batchnorm_split(hi, lo, mean);
}

/* Train mode: normalise each of the `splits` parts of the batch (n a multiple of splits,
 * splits >= 1; part s of channel j is [s * (n/splits) * hw, (s+1) * (n/splits) * hw) of
 * the channel's plane) with its own statistics, save its mean and 1/sqrt(var+eps) for
 * the backward pass, update the running statistics once (skipped when momentum == 0). */
void batchnorm_forward_train_cpu(float *y,             /* (c, n, hw) */
                                 float *save_mean,     /* (splits, c) */
                                 float *save_invstd,   /* (splits, c) */
                                 float *running_mean,  /* (c) in/out */
                                 float *running_var,   /* (c) in/out */
                                 const float *x,       /* (c, n, hw) */
                                 const float *gamma,   /* (c) */
                                 const float *beta,    /* (c) */
                                 int c, int n, int hw, int splits, float eps, float momentum);

/* Eval mode: normalise with running statistics. */
void batchnorm_forward_eval_cpu(float *y,                  /* (c, n, hw) */
                                const float *x,            /* (c, n, hw) */
                                const float *gamma,        /* (c) */
                                const float *beta,         /* (c) */
                                const float *running_mean, /* (c) */
                                const float *running_var,  /* (c) */
                                int c, int n, int hw, float eps);

/* Backward of train mode with the forward pass's `splits` parts, each with its own
 * statistics. dgamma, dbeta (summed over the parts) overwritten; dx overwritten or
 * accumulated. */
void batchnorm_backward_cpu(float *dx,                /* (c, n, hw) */
                            float *dgamma,            /* (c) */
                            float *dbeta,             /* (c) */
                            const float *dy,          /* (c, n, hw) */
                            const float *x,           /* (c, n, hw) */
                            const float *gamma,       /* (c) */
                            const float *save_mean,   /* (splits, c) */
                            const float *save_invstd, /* (splits, c) */
                            int c, int n, int hw, int splits, int accumulate_dx);

#endif

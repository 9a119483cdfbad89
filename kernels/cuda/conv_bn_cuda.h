/* conv_bn_cuda.cu: the passes of our own around a batch norm that runs inside the
 * convolutions (kernels/cuda/conv_fused_cuda.h), for its nodes (conv_nodes_cuda.cu). */
#ifndef DAWNRUN_CONV_BN_CUDA_H
#define DAWNRUN_CONV_BN_CUDA_H

#include "cuda_internal.h"

/* Vector v (enum plan_bn_vec, kernels/plan.h) of a batch norm's vectors vec: device
 * floats. */
static inline float *cuda_bn_vec(const struct tensor *vec, int v)
{
    return (float *)vec->data + (size_t)v * (tensor_count(vec) / PLAN_BNV_COUNT);
}

/* The train-mode batch norm over x (n, c, h, w; attributes a, one part) from the sums a
 * convolution took of x (sum, sqsum: (c) device fp32): writes save_mean, save_invstd (c),
 * updates running_mean, running_var (c) as the unfused batch norm does, and writes the
 * apply's scale = gamma * invstd and bias = beta - mean * scale ((c) each, in the
 * context's compute type) for the convolutions that read the batch norm's output through
 * their prologue. x's contents are not read. */
int cuda_bn_sums_finalize(struct cuda_ctx *c, void *scale, void *bias, struct tensor *save_mean,
                          struct tensor *save_invstd, struct tensor *running_mean,
                          struct tensor *running_var, const float *sum, const float *sqsum,
                          const struct tensor *gamma, const struct tensor *beta,
                          const struct tensor *x, const struct bn_attr *a);

/* The apply's scale and bias ((c) each, in the context's compute type) for the
 * convolutions that read a batch norm's activation through their prologue, from the
 * coefficients cuda_bn_train_fused computed (coef: (COEF_FWD_COUNT, c) device fp32):
 * scale = the batch norm's scale, bias = shift - (hi + lo) * scale. */
int cuda_bn_prologue_from_coef(struct cuda_ctx *c, void *scale, void *bias, const float *coef,
                               int channels);

/* The batch norm's input gradient from the coefficients the backward-data convolution
 * computed: dx (n, c, h, w) = eq_dy * dz + eq_x * x + eq_b per channel (each (c) device
 * fp32), overwritten, or added to dx when accumulate. dz and x are (n, c, h, w) as dx. */
int cuda_bn_eq_apply(struct cuda_ctx *c, struct tensor *dx, const struct tensor *dz,
                     const struct tensor *x, const float *eq_dy, const float *eq_x,
                     const float *eq_b, int accumulate);

#endif

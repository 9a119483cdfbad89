/* The CPU engine's fused batch-norm passes, for its plan executor (plan_cpu.c): the
 * batch norm's elementwise pass with a ReLU (and a residual add) folded in, and its
 * backward with the ReLU's backward folded in. Each gives the bits the separate kernels
 * (batchnorm.h, activation.h, tensor_ops.h) give when run one after another: the same
 * statistics in the same order, the same per-element expressions. */
#ifndef DAWNRUN_KERNELS_CPU_BN_FUSED_H
#define DAWNRUN_KERNELS_CPU_BN_FUSED_H

#include <stddef.h>

/* Per part s and channel j, at (s * c + j) * BN_COEF_COUNT: the float mean hi and lo, the
 * scale and the shift the forward pass applied, y = ((x - hi) - lo) * scale + shift. */
enum { BN_COEF_HI, BN_COEF_LO, BN_COEF_SCALE, BN_COEF_SHIFT, BN_COEF_COUNT };

/* batchnorm_forward_train_cpu, writing y only when y is not NULL, and with out not NULL
 * also out = relu(y), or with res not NULL out = res + relu(y) (res_first) or
 * relu(y) + res (the operand order of the add); coef (splits * c * BN_COEF_COUNT, may be
 * NULL) receives the coefficients applied. */
void bn_train_fused_cpu(float *y,              /* (c, n, hw) or NULL */
                        float *out,            /* (c, n, hw) or NULL */
                        float *coef,           /* (splits * c * BN_COEF_COUNT) or NULL */
                        float *save_mean,      /* (splits * c) */
                        float *save_invstd,    /* (splits * c) */
                        float *running_mean,   /* (c) in/out */
                        float *running_var,    /* (c) in/out */
                        const float *x,        /* (c, n, hw) */
                        const float *res,      /* (c, n, hw) or NULL */
                        const float *gamma,    /* (c) */
                        const float *beta,     /* (c) */
                        int res_first, int c, int n, int hw, int splits, float eps,
                        float momentum);

/* batchnorm_forward_eval_cpu with y written only when not NULL, and out = relu(y) or
 * res + relu(y) as bn_train_fused_cpu. */
void bn_eval_fused_cpu(float *y,                  /* (c, n, hw) or NULL */
                       float *out,                /* (c, n, hw) */
                       const float *x,            /* (c, n, hw) */
                       const float *res,          /* (c, n, hw) or NULL */
                       const float *gamma,        /* (c) */
                       const float *beta,         /* (c) */
                       const float *running_mean, /* (c) */
                       const float *running_var,  /* (c) */
                       int res_first, int c, int n, int hw, float eps);

/* batchnorm_backward_cpu with dy = relu'(y) * dy_act, y the forward's output recomputed
 * from x and the coefficients coef that bn_train_fused_cpu kept: the ReLU's backward
 * folded in, its dx never written. */
void bn_backward_fused_cpu(float *dx,                /* (c, n, hw) or NULL */
                           float *dgamma,            /* (c) or NULL */
                           float *dbeta,             /* (c) or NULL */
                           const float *dy_act,      /* (c, n, hw): the ReLU's dy */
                           const float *coef,        /* (splits * c * BN_COEF_COUNT) */
                           const float *x,           /* (c, n, hw) */
                           const float *gamma,       /* (c) */
                           const float *save_invstd, /* (splits * c) */
                           int c, int n, int hw, int splits, int accumulate_dx);

#endif

/* Batch normalisation over (N, H, W) per channel. CPU twin layout (C, N, H, W): each
 * channel's n*hw values are contiguous. Variance for normalising is the biased batch
 * variance; running_var is updated with the unbiased one, as PyTorch does:
 *   running = (1 - momentum) * running + momentum * batch_stat. */
#ifndef DAWNRUN_KERNELS_BATCHNORM_H
#define DAWNRUN_KERNELS_BATCHNORM_H

/* Train mode: normalise with batch statistics, save mean and 1/sqrt(var+eps) for the
 * backward pass, update running statistics (skipped when momentum == 0). */
void batchnorm_forward_train_cpu(float *y,             /* (c, n, hw) */
                                 float *save_mean,     /* (c) */
                                 float *save_invstd,   /* (c) */
                                 float *running_mean,  /* (c) in/out */
                                 float *running_var,   /* (c) in/out */
                                 const float *x,       /* (c, n, hw) */
                                 const float *gamma,   /* (c) */
                                 const float *beta,    /* (c) */
                                 int c, int n, int hw, float eps, float momentum);

/* Eval mode: normalise with running statistics. */
void batchnorm_forward_eval_cpu(float *y,                  /* (c, n, hw) */
                                const float *x,            /* (c, n, hw) */
                                const float *gamma,        /* (c) */
                                const float *beta,         /* (c) */
                                const float *running_mean, /* (c) */
                                const float *running_var,  /* (c) */
                                int c, int n, int hw, float eps);

/* Backward of train mode. dgamma, dbeta overwritten; dx overwritten or accumulated. */
void batchnorm_backward_cpu(float *dx,                /* (c, n, hw) */
                            float *dgamma,            /* (c) */
                            float *dbeta,             /* (c) */
                            const float *dy,          /* (c, n, hw) */
                            const float *x,           /* (c, n, hw) */
                            const float *gamma,       /* (c) */
                            const float *save_mean,   /* (c) */
                            const float *save_invstd, /* (c) */
                            int c, int n, int hw, int accumulate_dx);

#endif

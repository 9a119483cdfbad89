/* Fully connected layer. CPU twin layout: features-major, x is (in, n) and y is (out, n);
 * weights (out, in) as in PyTorch. */
#ifndef DAWNRUN_KERNELS_LINEAR_H
#define DAWNRUN_KERNELS_LINEAR_H

/* y = w x + b. */
void linear_forward_cpu(float *y,        /* (out, n) */
                        const float *x,  /* (in, n) */
                        const float *w,  /* (out, in) */
                        const float *b,  /* (out) or NULL */
                        int out, int in, int n);

/* dw, db overwritten; dx overwritten or accumulated; dx and db may be NULL. */
void linear_backward_cpu(float *dx,       /* (in, n) or NULL */
                         float *dw,       /* (out, in) */
                         float *db,       /* (out) or NULL */
                         const float *dy, /* (out, n) */
                         const float *x,  /* (in, n) */
                         const float *w,  /* (out, in) */
                         int out, int in, int n, int accumulate_dx);

#endif

/* conv2d: k×k convolution with stride and zero padding, optional bias.
 * CPU twin layout: activations are (C, N, H, W) ("CNHW": channel-major, so that a whole
 * batch is one GEMM operand); weights are (Co, C, k, k) as in PyTorch. */
#ifndef DAWNRUN_KERNELS_CONV2D_H
#define DAWNRUN_KERNELS_CONV2D_H

struct conv2d_dims {
    int n, c, h, w;     /* input batch, channels, height, width */
    int co, k;          /* output channels, square kernel size */
    int stride, pad;
    int ho, wo;         /* output size: (h + 2*pad - k) / stride + 1 */
};

/* Fills ho, wo from the other fields. */
void conv2d_dims_finish(struct conv2d_dims *d);

/* y = conv(x, w) + b. Returns 0, or DR_ERR_NOMEM if scratch memory could not be had. */
int conv2d_forward_cpu(float *y,         /* (co, n, ho, wo) */
                       const float *x,   /* (c, n, h, w) */
                       const float *w,   /* (co, c, k, k) */
                       const float *b,   /* (co) or NULL */
                       const struct conv2d_dims *d);

/* Gradients of conv2d_forward_cpu. dw and db are overwritten; dx is overwritten, or added
 * to when accumulate_dx != 0. dx and db may be NULL (not needed). Returns 0 or DR_ERR_NOMEM. */
int conv2d_backward_cpu(float *dx,        /* (c, n, h, w) or NULL */
                        float *dw,        /* (co, c, k, k) */
                        float *db,        /* (co) or NULL */
                        const float *dy,  /* (co, n, ho, wo) */
                        const float *x,   /* (c, n, h, w) */
                        const float *w,   /* (co, c, k, k) */
                        const struct conv2d_dims *d, int accumulate_dx);

#endif

/* Max and average pooling, no padding (floor output size), window kh×kw and stride
 * sh×sw; a global pool is the window equal to the whole plane. CPU twin layout: planes
 * of h*w contiguous values ((C, N, H, W) gives planes = c*n). Max pool sends the gradient
 * to the first maximal element of each window (row-major scan). */
#ifndef DAWNRUN_KERNELS_POOL_H
#define DAWNRUN_KERNELS_POOL_H

enum pool_kind { POOL_MAX, POOL_AVG };

struct pool_dims {
    int planes, h, w;
    int kh, kw, sh, sw;
    int ho, wo;        /* (h - kh) / sh + 1, (w - kw) / sw + 1 */
};

void pool_forward_cpu(float *y,        /* (planes, ho, wo) */
                      const float *x,  /* (planes, h, w) */
                      enum pool_kind kind, const struct pool_dims *d);

/* dx (=|+=) gradient; x and y are the forward input and output. */
void pool_backward_cpu(float *dx,       /* (planes, h, w) */
                       const float *dy, /* (planes, ho, wo) */
                       const float *x,  /* (planes, h, w) */
                       const float *y,  /* (planes, ho, wo) */
                       enum pool_kind kind, const struct pool_dims *d, int accumulate_dx);

#endif

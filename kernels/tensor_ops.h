/* Small structural ops: channel concat, residual add, scalar multiply, flatten and the
 * scaled copy that serves their backward passes. CPU twin layout (C, N, H, W). */
#ifndef DAWNRUN_KERNELS_TENSOR_OPS_H
#define DAWNRUN_KERNELS_TENSOR_OPS_H

#include <stddef.h>

/* y = concat over channels of xs[0..count). plane = n*h*w (same for every input). */
void concat_forward_cpu(float *y,                  /* (sum cs, n, h, w) */
                        const float *const *xs,    /* count × (cs[i], n, h, w) */
                        const int *cs, int count, size_t plane);

/* dxs[i] (=|+=) the matching channel slice of dy; accumulate[i] chooses per input. */
void concat_backward_cpu(float *const *dxs,        /* count × (cs[i], n, h, w) */
                         const float *dy,          /* (sum cs, n, h, w) */
                         const int *cs, int count, size_t plane, const int *accumulate);

/* y = a + b. */
void add_forward_cpu(float *y, const float *a, const float *b, size_t count);

/* y = s * x. */
void scale_forward_cpu(float *y, const float *x, float s, size_t count);

/* dx = s*dy, or dx += s*dy when accumulate_dx. Backward of add (s = 1) and scale. */
void scaled_copy_cpu(float *dx, const float *dy, float s, size_t count, int accumulate_dx);

/* y[f][i] = x[c][i][p] with f = c*hw + p: (C, N, H, W) -> features-major (C*H*W, N). */
void flatten_forward_cpu(float *y,       /* (c*hw, n) */
                         const float *x, /* (c, n, hw) */
                         int c, int n, int hw);

/* Inverse permutation of flatten_forward_cpu, overwriting or accumulating into dx. */
void flatten_backward_cpu(float *dx,       /* (c, n, hw) */
                          const float *dy, /* (c*hw, n) */
                          int c, int n, int hw, int accumulate_dx);

#endif

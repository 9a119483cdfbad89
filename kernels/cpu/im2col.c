/* im2col / col2im for the CPU convolution (see im2col.h). Stride 1 rows are one copy
 * plus zeroed margins; other strides go element by element. */
#include "im2col.h"

#include <stddef.h>
#include <string.h>

/* Valid output-column range [lo, hi) for kernel column kx at stride 1. */
static void stride1_range(int *lo, int *hi, int kx, const struct conv2d_dims *d)
{
    int a = d->pad - kx, b = d->w + d->pad - kx;
    if (a < 0) a = 0;
    if (b > d->wo) b = d->wo;
    if (b < a) b = a;
    *lo = a;
    *hi = b;
}

void im2col_cpu(float *col, const float *x, const struct conv2d_dims *d, int n0, int nb)
{
    const int k = d->k, s = d->stride, p = d->pad, h = d->h, w = d->w, ho = d->ho, wo = d->wo;
    const size_t hw = (size_t)h * w, cols = (size_t)nb * ho * wo;
    for (int ci = 0; ci < d->c; ci++) {
        for (int ky = 0; ky < k; ky++) {
            for (int kx = 0; kx < k; kx++) {
                float *dst = col + ((size_t)(ci * k + ky) * k + kx) * cols;
                int lo, hi;
                stride1_range(&lo, &hi, kx, d);
                for (int i = 0; i < nb; i++) {
                    const float *src = x + ((size_t)ci * d->n + n0 + i) * hw;
                    for (int oy = 0; oy < ho; oy++) {
                        float *out = dst + ((size_t)i * ho + oy) * wo;
                        int iy = oy * s - p + ky;
                        if (iy < 0 || iy >= h) {
                            memset(out, 0, sizeof(float) * (size_t)wo);
                            continue;
                        }
                        const float *row = src + (size_t)iy * w;
                        if (s == 1) {
                            for (int ox = 0; ox < lo; ox++) out[ox] = 0.0f;
                            if (hi > lo)
                                memcpy(out + lo, row + lo - p + kx,
                                       sizeof(float) * (size_t)(hi - lo));
                            for (int ox = hi; ox < wo; ox++) out[ox] = 0.0f;
                        } else {
                            for (int ox = 0; ox < wo; ox++) {
                                int ix = ox * s - p + kx;
                                out[ox] = (ix >= 0 && ix < w) ? row[ix] : 0.0f;
                            }
                        }
                    }
                }
            }
        }
    }
}

void col2im_add_cpu(float *dx, const float *col, const struct conv2d_dims *d, int n0, int nb)
{
    const int k = d->k, s = d->stride, p = d->pad, h = d->h, w = d->w, ho = d->ho, wo = d->wo;
    const size_t hw = (size_t)h * w, cols = (size_t)nb * ho * wo;
    for (int ci = 0; ci < d->c; ci++) {
        for (int ky = 0; ky < k; ky++) {
            for (int kx = 0; kx < k; kx++) {
                const float *src = col + ((size_t)(ci * k + ky) * k + kx) * cols;
                int lo, hi;
                stride1_range(&lo, &hi, kx, d);
                for (int i = 0; i < nb; i++) {
                    float *img = dx + ((size_t)ci * d->n + n0 + i) * hw;
                    for (int oy = 0; oy < ho; oy++) {
                        const float *g = src + ((size_t)i * ho + oy) * wo;
                        int iy = oy * s - p + ky;
                        if (iy < 0 || iy >= h) continue;
                        float *row = img + (size_t)iy * w;
                        if (s == 1) {
                            float *r = row + lo - p + kx;
                            for (int ox = lo; ox < hi; ox++) r[ox - lo] += g[ox];
                        } else {
                            for (int ox = 0; ox < wo; ox++) {
                                int ix = ox * s - p + kx;
                                if (ix >= 0 && ix < w) row[ix] += g[ox];
                            }
                        }
                    }
                }
            }
        }
    }
}

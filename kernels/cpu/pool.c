/* CPU max and average pooling over independent planes (no padding, floor output size),
 * planes spread over OpenMP threads. Max pooling's gradient goes to the first maximal
 * element of each window in row-major order, recomputed from x. Compiled once per
 * instruction set (cpu_isa.h). */
#include "../pool.h"
#include "cpu_isa.h"

#include <stddef.h>
#include <string.h>

/* The common 2×2, stride 2 window on a plane of even width: a straight loop over pairs
 * that the compiler vectorises. Same results as the general path. */
static int pool_is_2x2(const struct pool_dims *d)
{
    return d->kh == 2 && d->kw == 2 && d->sh == 2 && d->sw == 2 && d->w % 2 == 0;
}

static void max2x2_forward_plane(float *yp, const float *xp, const struct pool_dims *d)
{
    for (int oy = 0; oy < d->ho; oy++) {
        const float *r0 = xp + (size_t)2 * oy * d->w, *r1 = r0 + d->w;
        float *out = yp + (size_t)oy * d->wo;
        for (int ox = 0; ox < d->wo; ox++) {
            float m = r0[2 * ox];
            m = r0[2 * ox + 1] > m ? r0[2 * ox + 1] : m;
            m = r1[2 * ox] > m ? r1[2 * ox] : m;
            m = r1[2 * ox + 1] > m ? r1[2 * ox + 1] : m;
            out[ox] = m;
        }
    }
}

/* Writes (or adds) every element of the windows: the gradient at each window's first
 * maximum, 0 elsewhere. Rows of x below the last window are left to the caller. */
static void max2x2_backward_plane(float *dp, const float *gp, const float *xp,
                                  const struct pool_dims *d, int accumulate)
{
    for (int oy = 0; oy < d->ho; oy++) {
        const float *r0 = xp + (size_t)2 * oy * d->w, *r1 = r0 + d->w;
        float *d0 = dp + (size_t)2 * oy * d->w, *d1 = d0 + d->w;
        const float *g = gp + (size_t)oy * d->wo;
        for (int ox = 0; ox < d->wo; ox++) {
            const float a = r0[2 * ox], b = r0[2 * ox + 1], c = r1[2 * ox], e = r1[2 * ox + 1];
            /* first maximum in row-major order: a, b, c, e */
            int at = 0;
            float m = a;
            if (b > m) { m = b; at = 1; }
            if (c > m) { m = c; at = 2; }
            if (e > m) { at = 3; }
            const float gv = g[ox];
            const float ga = at == 0 ? gv : 0.0f, gb = at == 1 ? gv : 0.0f;
            const float gc = at == 2 ? gv : 0.0f, ge = at == 3 ? gv : 0.0f;
            if (accumulate) {
                d0[2 * ox] += ga;
                d0[2 * ox + 1] += gb;
                d1[2 * ox] += gc;
                d1[2 * ox + 1] += ge;
            } else {
                d0[2 * ox] = ga;
                d0[2 * ox + 1] = gb;
                d1[2 * ox] = gc;
                d1[2 * ox + 1] = ge;
            }
        }
    }
}

/* Index (within the plane) of the first maximum of the window at (oy, ox). */
static inline int pool_argmax(const float *xp, const struct pool_dims *d, int oy, int ox)
{
    const int y0 = oy * d->sh, x0 = ox * d->sw;
    int best = y0 * d->w + x0;
    float m = xp[best];
    for (int ky = 0; ky < d->kh; ky++) {
        const float *row = xp + (size_t)(y0 + ky) * d->w + x0;
        for (int kx = 0; kx < d->kw; kx++)
            if (row[kx] > m) {
                m = row[kx];
                best = (y0 + ky) * d->w + x0 + kx;
            }
    }
    return best;
}

void CPU_ISA_FN(pool_forward_cpu)(float *y, const float *x, enum pool_kind kind,
                                  const struct pool_dims *d)
{
    const size_t hw = (size_t)d->h * d->w, howo = (size_t)d->ho * d->wo;
    const float inv = 1.0f / (float)(d->kh * d->kw);
#pragma omp parallel for schedule(static)
    for (int p = 0; p < d->planes; p++) {
        const float *xp = x + (size_t)p * hw;
        float *yp = y + (size_t)p * howo;
        if (kind == POOL_MAX && pool_is_2x2(d)) {
            max2x2_forward_plane(yp, xp, d);
            continue;
        }
        for (int oy = 0; oy < d->ho; oy++)
            for (int ox = 0; ox < d->wo; ox++) {
                const float *win = xp + (size_t)oy * d->sh * d->w + (size_t)ox * d->sw;
                if (kind == POOL_MAX) {
                    float m = win[0];
                    for (int ky = 0; ky < d->kh; ky++)
                        for (int kx = 0; kx < d->kw; kx++) {
                            const float v = win[(size_t)ky * d->w + kx];
                            m = v > m ? v : m;
                        }
                    yp[(size_t)oy * d->wo + ox] = m;
                } else {
                    float s = 0.0f;
                    for (int ky = 0; ky < d->kh; ky++)
                        for (int kx = 0; kx < d->kw; kx++) s += win[(size_t)ky * d->w + kx];
                    yp[(size_t)oy * d->wo + ox] = s * inv;
                }
            }
    }
}

void CPU_ISA_FN(pool_backward_cpu)(float *dx, const float *dy, const float *x, const float *y,
                       enum pool_kind kind, const struct pool_dims *d, int accumulate_dx)
{
    const size_t hw = (size_t)d->h * d->w, howo = (size_t)d->ho * d->wo;
    const float inv = 1.0f / (float)(d->kh * d->kw);
    (void)y;   /* the maximum's position is recomputed from x, which also resolves ties */
#pragma omp parallel for schedule(static)
    for (int p = 0; p < d->planes; p++) {
        const float *xp = x + (size_t)p * hw;
        const float *gp = dy + (size_t)p * howo;
        float *dp = dx + (size_t)p * hw;
        if (kind == POOL_MAX && pool_is_2x2(d)) {
            max2x2_backward_plane(dp, gp, xp, d, accumulate_dx);
            /* an odd last row belongs to no window */
            if (!accumulate_dx && d->h % 2)
                memset(dp + (size_t)(d->h - 1) * d->w, 0, sizeof(float) * d->w);
            continue;
        }
        if (!accumulate_dx) memset(dp, 0, sizeof(float) * hw);
        for (int oy = 0; oy < d->ho; oy++)
            for (int ox = 0; ox < d->wo; ox++) {
                const float g = gp[(size_t)oy * d->wo + ox];
                if (kind == POOL_MAX) {
                    dp[pool_argmax(xp, d, oy, ox)] += g;
                } else {
                    float *win = dp + (size_t)oy * d->sh * d->w + (size_t)ox * d->sw;
                    const float gi = g * inv;
                    for (int ky = 0; ky < d->kh; ky++)
                        for (int kx = 0; kx < d->kw; kx++) win[(size_t)ky * d->w + kx] += gi;
                }
            }
    }
}

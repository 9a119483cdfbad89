/* Max and average pooling on NHWC activations (no padding, floor output size): the CUDA
 * twin of kernels/cpu/pool.c. The forward pass computes each output from its window. The
 * backward pass gathers, for each input element, over the windows that cover it in (oy, ox)
 * order, so overlapping windows need no atomics and sums come out in the CPU twin's order;
 * max pooling first records each window's first maximum (row-major scan) in a scratch
 * index buffer. A max pool whose windows do not overlap (stride equal to the window: every
 * input element in at most one window) takes one pass instead: each window finds its first
 * maximum and writes its own dx elements, the last window of a row or column also the
 * elements past it that no window covers. */
#include "cuda_internal.h"

struct pool_geom {
    int n, c, h, w;      /* input */
    int kh, kw, sh, sw;
    int ho, wo;          /* output */
};

/* Block (CH_X, CH_Y), grid cuda_grid_rows: a thread takes pixels (rows) in turn, finds its
 * window once per pixel (32-bit arithmetic: the host checks that pixels fit), then walks
 * its channels. */

/* Element (img, yy, xx, ch) of an NHWC input. */
__device__ __forceinline__ size_t pool_in_index(const pool_geom &g, int img, int yy, int xx,
                                                int ch)
{
    return (((size_t)img * g.h + yy) * g.w + xx) * g.c + ch;
}

/* Output pixel r -> (image, oy, ox). */
__device__ __forceinline__ void pool_out_pixel(long r, const pool_geom &g, int *img, int *oy,
                                               int *ox)
{
    const unsigned u = (unsigned)r, wo = (unsigned)g.wo, ho = (unsigned)g.ho;
    *ox = (int)(u % wo);
    *oy = (int)((u / wo) % ho);
    *img = (int)(u / (wo * ho));
}

template <typename T>
__global__ void pool_forward_kernel(T *y, const T *x, pool_geom g, int is_max)
{
    const long rows = (long)g.n * g.ho * g.wo;
    const float inv = 1.0f / (float)(g.kh * g.kw);
    FOR_ROWS(r, rows)
    {
        int img, oy, ox;
        pool_out_pixel(r, g, &img, &oy, &ox);
        const int y0 = oy * g.sh, x0 = ox * g.sw;
        FOR_CHANNELS(ch, g.c)
        {
            float acc = is_max ? cuda_to_f<T>(x[pool_in_index(g, img, y0, x0, ch)]) : 0.0f;
            for (int ky = 0; ky < g.kh; ky++)
                for (int kx = 0; kx < g.kw; kx++) {
                    const float v = cuda_to_f<T>(x[pool_in_index(g, img, y0 + ky, x0 + kx, ch)]);
                    if (is_max)
                        acc = v > acc ? v : acc;
                    else
                        acc = __fadd_rn(acc, v);
                }
            y[(size_t)r * g.c + ch] = cuda_from_f<T>(is_max ? acc : __fmul_rn(acc, inv));
        }
    }
}

/* The window at (y0, x0) of image img, channel ch: the offset (*by, *bx) in the window of
 * its first maximum in a row-major scan (a NaN never wins). */
template <typename T>
__device__ __forceinline__ void pool_window_first_max(int *by, int *bx, const T *x,
                                                      const pool_geom &g, int img, int y0,
                                                      int x0, int ch)
{
    float m = cuda_to_f<T>(x[pool_in_index(g, img, y0, x0, ch)]);
    *by = 0;
    *bx = 0;
    for (int ky = 0; ky < g.kh; ky++)
        for (int kx = 0; kx < g.kw; kx++) {
            const float v = cuda_to_f<T>(x[pool_in_index(g, img, y0 + ky, x0 + kx, ch)]);
            if (v > m) {
                m = v;
                *by = ky;
                *bx = kx;
            }
        }
}

/* arg[output] = position (yy * w + xx in the plane) of the window's first maximum. */
template <typename T>
__global__ void pool_argmax_kernel(int *arg, const T *x, pool_geom g)
{
    const long rows = (long)g.n * g.ho * g.wo;
    FOR_ROWS(r, rows)
    {
        int img, oy, ox;
        pool_out_pixel(r, g, &img, &oy, &ox);
        const int y0 = oy * g.sh, x0 = ox * g.sw;
        FOR_CHANNELS(ch, g.c)
        {
            int by, bx;
            pool_window_first_max(&by, &bx, x, g, img, y0, x0, ch);
            arg[(size_t)r * g.c + ch] = (y0 + by) * g.w + x0 + bx;
        }
    }
}

/* One input pixel per row: dx (=|+=) the sum over the windows covering it, in (oy, ox)
 * order, of dy (max: only windows whose first maximum is this element; avg: dy / area). */
template <typename T>
__global__ void pool_backward_kernel(T *dx, const T *dy, const int *arg, pool_geom g, int is_max,
                                     int accumulate)
{
    const long rows = (long)g.n * g.h * g.w;
    const float inv = 1.0f / (float)(g.kh * g.kw);
    FOR_ROWS(r, rows)
    {
        const unsigned u = (unsigned)r, w = (unsigned)g.w, h = (unsigned)g.h;
        const int xx = (int)(u % w), yy = (int)((u / w) % h), img = (int)(u / (w * h));
        const int oy0 = yy >= g.kh ? (yy - g.kh) / g.sh + 1 : 0;
        const int ox0 = xx >= g.kw ? (xx - g.kw) / g.sw + 1 : 0;
        const int oy1 = min(yy / g.sh, g.ho - 1), ox1 = min(xx / g.sw, g.wo - 1);
        const int here = yy * g.w + xx;
        FOR_CHANNELS(ch, g.c)
        {
            const size_t i = (size_t)r * g.c + ch;
            float acc = accumulate ? cuda_to_f<T>(dx[i]) : 0.0f;
            for (int oy = oy0; oy <= oy1; oy++)
                for (int ox = ox0; ox <= ox1; ox++) {
                    const size_t o = (((size_t)img * g.ho + oy) * g.wo + ox) * g.c + ch;
                    if (is_max) {
                        if (arg[o] == here) acc = __fadd_rn(acc, cuda_to_f<T>(dy[o]));
                    } else {
                        acc = __fadd_rn(acc, __fmul_rn(cuda_to_f<T>(dy[o]), inv));
                    }
                }
            dx[i] = cuda_from_f<T>(acc);
        }
    }
}

/* Max pool, windows not overlapping: one output pixel per row; for each channel, the
 * window's first maximum (pool_window_first_max) takes dy and every other element
 * of the window 0, added to dx when accumulating, rounded as pool_backward_kernel rounds.
 * The elements below the last row of windows and right of the last column, which no window
 * covers, are written by the window next to them: 0, or left as they are when
 * accumulating. */
template <typename T>
__global__ void pool_max_backward_disjoint_kernel(T *dx, const T *dy, const T *x,
                                                  pool_geom g, int accumulate)
{
    const long rows = (long)g.n * g.ho * g.wo;
    FOR_ROWS(r, rows)
    {
        int img, oy, ox;
        pool_out_pixel(r, g, &img, &oy, &ox);
        const int y0 = oy * g.sh, x0 = ox * g.sw;
        const int ky_end = oy == g.ho - 1 ? g.h - y0 : g.kh;
        const int kx_end = ox == g.wo - 1 ? g.w - x0 : g.kw;
        FOR_CHANNELS(ch, g.c)
        {
            int by, bx;
            pool_window_first_max(&by, &bx, x, g, img, y0, x0, ch);
            const float d = cuda_to_f<T>(dy[(size_t)r * g.c + ch]);
            for (int ky = 0; ky < ky_end; ky++)
                for (int kx = 0; kx < kx_end; kx++) {
                    const int inside = ky < g.kh && kx < g.kw;
                    if (accumulate && !inside) continue;
                    const size_t i = pool_in_index(g, img, y0 + ky, x0 + kx, ch);
                    float acc = accumulate ? cuda_to_f<T>(dx[i]) : 0.0f;
                    if (ky == by && kx == bx) acc = __fadd_rn(acc, d);
                    dx[i] = cuda_from_f<T>(acc);
                }
        }
    }
}

/* Fills g from x, the attributes and y (the output, or dy: its plane as the POOL node's
 * rule checked it). */
static int pool_geometry(pool_geom *g, const struct tensor *y, const struct tensor *x,
                         const struct pool_attr *a)
{
    int rc = DR_OK;
    *g = pool_geom{x->n, x->c, x->h, x->w, a->kh, a->kw, a->sh, a->sw, y->h, y->w};
    EXPECT((long)x->n * x->h * x->w < (1L << 31), "pool: %d images of %dx%d pixels", x->n, x->h,
           x->w);
cleanup:
    return rc;
}

int cuda_pool_forward(void *ctx, struct tensor *y, const struct tensor *x,
                      const struct pool_attr *a)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    pool_geom g;
    long rows = 0;
    TRY(pool_geometry(&g, y, x, a));
    rows = (long)y->n * y->h * y->w;
    if (rows == 0 || y->c == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T,
                  pool_forward_kernel<T><<<cuda_grid_rows(c, rows), dim3(CH_X, CH_Y), 0,
                                           c->stream>>>((T *)y->data, (const T *)x->data, g,
                                                        a->kind == POOL_MAX));
    /* reads x once (windows that overlap read some elements again: not counted), writes y */
    CHECK_LAUNCH(c, tensor_count(x) * cuda_dt_size(c->dt), tensor_count(y) * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

int cuda_pool_backward(void *ctx, struct tensor *dx, const struct tensor *dy,
                       const struct tensor *x, const struct tensor *y, const struct pool_attr *a,
                       int accumulate)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    pool_geom g;
    size_t nout = 0, nin = 0;
    void *arg = NULL;
    (void)y;   /* the maximum's position is recomputed from x, which also resolves ties */
    if (!dx || !dx->data) return DR_OK;
    TRY(pool_geometry(&g, dy, x, a));
    nout = tensor_count(dy);
    nin = tensor_count(x);
    if (nin == 0) goto cleanup;
    TRY(cuda_enter(c));
    if (a->kind == POOL_MAX && nout > 0 && g.kh == g.sh && g.kw == g.sw) {
        CUDA_DISPATCH(c->dt, T,
                      pool_max_backward_disjoint_kernel<T>
                      <<<cuda_grid_rows(c, (long)dy->n * g.ho * g.wo), dim3(CH_X, CH_Y), 0,
                         c->stream>>>((T *)dx->data, (const T *)dy->data, (const T *)x->data,
                                      g, accumulate));
        /* reads x, dy and dx when accumulating; writes dx */
        CHECK_LAUNCH(c, (nin + nout + (accumulate ? nin : 0)) * cuda_dt_size(c->dt),
                     nin * cuda_dt_size(c->dt));
        goto cleanup;
    }
    if (a->kind == POOL_MAX && nout > 0) {
        TRY(cuda_scratch(c, SLOT_INDEX, sizeof(int) * nout, &arg));
        CUDA_DISPATCH(c->dt, T,
                      pool_argmax_kernel<T><<<cuda_grid_rows(c, (long)dy->n * g.ho * g.wo),
                                              dim3(CH_X, CH_Y), 0, c->stream>>>(
                          (int *)arg, (const T *)x->data, g));
        /* reads x once, writes one int position per output element */
        CHECK_LAUNCH(c, nin * cuda_dt_size(c->dt), nout * sizeof(int));
    }
    CUDA_DISPATCH(c->dt, T,
                  pool_backward_kernel<T><<<cuda_grid_rows(c, (long)x->n * g.h * g.w),
                                            dim3(CH_X, CH_Y), 0, c->stream>>>(
                      (T *)dx->data, (const T *)dy->data, (const int *)arg, g,
                      a->kind == POOL_MAX, accumulate));
    /* reads dy, the positions (max pools) and dx when accumulating; writes dx */
    CHECK_LAUNCH(c, nout * cuda_dt_size(c->dt) + (a->kind == POOL_MAX ? nout * sizeof(int) : 0) +
                        (accumulate ? nin * cuda_dt_size(c->dt) : 0),
                 nin * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

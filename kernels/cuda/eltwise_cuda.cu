/* Elementwise and data-movement ops on NHWC activations: the activations of
 * kernels/activation.h and their gradients, add, scale, scaled copy, channel concat and
 * flatten. The CUDA twins of
 * kernels/cpu/activation.c and kernels/cpu/tensor_ops.c; every value is computed in fp32
 * and rounded once to the activation type, products and sums with explicit rounding so
 * that none is fused into a multiply-add the CPU twin does not make. */
#include <math.h>

#include "act_cuda.h"
#include "cuda_internal.h"

#define GRID_STRIDE(i, count)                                                              \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (count);            \
         i += (size_t)gridDim.x * blockDim.x)

/* The elementwise kernels walk count / V packs of V elements (cuda_pack), V = 16 bytes
 * worth when elementwise_width allows, else 1. */
#define GRID_STRIDE_PACKS(i, count, V) GRID_STRIDE(i, (count) / (size_t)(V))

/* The widest V (16 bytes of T, or 1) that count and every pointer allow. */
template <typename T>
static int elementwise_width(size_t count, const void *p0, const void *p1, const void *p2)
{
    const int v = cuda_vec_width<T>();
    return count % (size_t)v == 0 && cuda_aligned16(p0) && cuda_aligned16(p1) &&
                   cuda_aligned16(p2)
               ? v
               : 1;
}

template <typename T, int V, enum act_kind K>
__global__ void act_forward_kernel(T *__restrict__ y, const T *__restrict__ x, float alpha,
                                   size_t count)
{
    typedef cuda_pack<T, V> P;
    const float inv = act_inv_alpha<K>(alpha);
    GRID_STRIDE_PACKS(i, count, V)
    {
        const P xv = ((const P *)x)[i];
        P yv;
        for (int k = 0; k < V; k++)
            yv.v[k] = cuda_from_f<T>(act_fn<K>::value(cuda_to_f<T>(xv.v[k]), alpha, inv));
        ((P *)y)[i] = yv;
    }
}

template <typename T, int V, enum act_kind K>
__global__ void act_backward_kernel(T *__restrict__ dx, const T *__restrict__ dy,
                                    const T *__restrict__ x, float alpha, size_t count,
                                    int accumulate)
{
    typedef cuda_pack<T, V> P;
    const float inv = act_inv_alpha<K>(alpha);
    GRID_STRIDE_PACKS(i, count, V)
    {
        const P xv = ((const P *)x)[i], dv = ((const P *)dy)[i];
        P out;
        if (accumulate) out = ((const P *)dx)[i];
        for (int k = 0; k < V; k++) {
            const float g =
                act_fn<K>::grad(cuda_to_f<T>(xv.v[k]), cuda_to_f<T>(dv.v[k]), alpha, inv);
            out.v[k] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(out.v[k]), g) : g);
        }
        ((P *)dx)[i] = out;
    }
}

template <enum act_kind K>
static int act_forward_launch(struct cuda_ctx *c, struct tensor *y, const struct tensor *x,
                              float alpha, size_t count)
{
    int rc = DR_OK;
    CUDA_DISPATCH(c->dt, T, {
        const int v = elementwise_width<T>(count, y->data, x->data, NULL);
        const unsigned grid = cuda_grid_cover(c, count / (size_t)v);
        if (v > 1) {
            act_forward_kernel<T, cuda_vec_width<T>(), K>
                <<<grid, CUDA_THREADS, 0, c->stream>>>((T *)y->data, (const T *)x->data, alpha,
                                                       count);
            /* reads x, writes y: count elements each */
            CHECK_LAUNCH(c, count * cuda_dt_size(c->dt), count * cuda_dt_size(c->dt));
        } else {
            act_forward_kernel<T, 1, K><<<grid, CUDA_THREADS, 0, c->stream>>>(
                (T *)y->data, (const T *)x->data, alpha, count);
            CHECK_LAUNCH(c, count * cuda_dt_size(c->dt), count * cuda_dt_size(c->dt));
        }
    });
cleanup:
    return rc;
}

template <enum act_kind K>
static int act_backward_launch(struct cuda_ctx *c, struct tensor *dx, const struct tensor *dy,
                               const struct tensor *x, float alpha, size_t count, int accumulate)
{
    int rc = DR_OK;
    CUDA_DISPATCH(c->dt, T, {
        const int v = elementwise_width<T>(count, dx->data, dy->data, x->data);
        const unsigned grid = cuda_grid_cover(c, count / (size_t)v);
        if (v > 1) {
            act_backward_kernel<T, cuda_vec_width<T>(), K>
                <<<grid, CUDA_THREADS, 0, c->stream>>>((T *)dx->data, (const T *)dy->data,
                                                       (const T *)x->data, alpha, count,
                                                       accumulate);
            /* reads x, dy (and dx when accumulating), writes dx: count elements each */
            CHECK_LAUNCH(c, (size_t)(2 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                         count * cuda_dt_size(c->dt));
        } else {
            act_backward_kernel<T, 1, K><<<grid, CUDA_THREADS, 0, c->stream>>>(
                (T *)dx->data, (const T *)dy->data, (const T *)x->data, alpha, count,
                accumulate);
            CHECK_LAUNCH(c, (size_t)(2 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                         count * cuda_dt_size(c->dt));
        }
    });
cleanup:
    return rc;
}

int cuda_act_forward(void *ctx, struct tensor *y, const struct tensor *x, enum act_kind kind,
                     float alpha)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(x);
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    ACT_DISPATCH(kind, K, act_forward_launch<K>(c, y, x, alpha, count));
    FAIL(DR_ERR_INTERNAL, "activation: no CUDA kernel for kind %d", (int)kind);
cleanup:
    return rc;
}

int cuda_act_backward(void *ctx, struct tensor *dx, const struct tensor *dy,
                      const struct tensor *x, enum act_kind kind, float alpha, int accumulate)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(x);
    if (!dx || !dx->data) return DR_OK;
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    ACT_DISPATCH(kind, K, act_backward_launch<K>(c, dx, dy, x, alpha, count, accumulate));
    FAIL(DR_ERR_INTERNAL, "activation backward: no CUDA kernel for kind %d", (int)kind);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ add, scale, copy */

template <typename T, int V>
__global__ void add_kernel(T *__restrict__ y, const T *__restrict__ a, const T *__restrict__ b,
                           size_t count)
{
    typedef cuda_pack<T, V> P;
    GRID_STRIDE_PACKS(i, count, V)
    {
        const P av = ((const P *)a)[i], bv = ((const P *)b)[i];
        P yv;
        for (int k = 0; k < V; k++)
            yv.v[k] = cuda_from_f<T>(__fadd_rn(cuda_to_f<T>(av.v[k]), cuda_to_f<T>(bv.v[k])));
        ((P *)y)[i] = yv;
    }
}

/* dx = s*dy, or dx += s*dy (scale_forward is the overwriting case). */
template <typename T, int V>
__global__ void scaled_copy_kernel(T *__restrict__ dx, const T *__restrict__ dy, float s,
                                   size_t count, int accumulate)
{
    typedef cuda_pack<T, V> P;
    GRID_STRIDE_PACKS(i, count, V)
    {
        const P dv = ((const P *)dy)[i];
        P out;
        if (accumulate) out = ((const P *)dx)[i];
        for (int k = 0; k < V; k++) {
            const float g = __fmul_rn(s, cuda_to_f<T>(dv.v[k]));
            out.v[k] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(out.v[k]), g) : g);
        }
        ((P *)dx)[i] = out;
    }
}

int cuda_add_forward(void *ctx, struct tensor *y, const struct tensor *a, const struct tensor *b)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(y);
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T, {
        const int v = elementwise_width<T>(count, y->data, a->data, b->data);
        const unsigned grid = cuda_grid_cover(c, count / (size_t)v);
        if (v > 1) {
            add_kernel<T, cuda_vec_width<T>()><<<grid, CUDA_THREADS, 0, c->stream>>>(
                (T *)y->data, (const T *)a->data, (const T *)b->data, count);
            /* reads a and b, writes y: count elements each */
            CHECK_LAUNCH(c, 2 * count * cuda_dt_size(c->dt), count * cuda_dt_size(c->dt));
        } else {
            add_kernel<T, 1><<<grid, CUDA_THREADS, 0, c->stream>>>(
                (T *)y->data, (const T *)a->data, (const T *)b->data, count);
            CHECK_LAUNCH(c, 2 * count * cuda_dt_size(c->dt), count * cuda_dt_size(c->dt));
        }
    });
cleanup:
    return rc;
}

/* dx (=|+=) s * dy over count elements. */
static int scaled_copy(struct cuda_ctx *c, void *dx, const void *dy, float s, size_t count,
                       int accumulate)
{
    int rc = DR_OK;
    if (count == 0) return DR_OK;
    TRY(cuda_enter(c));
    if (!accumulate && s == 1.0f) {
        if (dx != dy)
            CHECK_CUDA(cuda_counted_copy(c, dx, dy, count * cuda_dt_size(c->dt),
                                         cudaMemcpyDeviceToDevice));
        goto cleanup;
    }
    CUDA_DISPATCH(c->dt, T, {
        const int v = elementwise_width<T>(count, dx, dy, NULL);
        const unsigned grid = cuda_grid_cover(c, count / (size_t)v);
        if (v > 1) {
            scaled_copy_kernel<T, cuda_vec_width<T>()>
                <<<grid, CUDA_THREADS, 0, c->stream>>>((T *)dx, (const T *)dy, s, count,
                                                       accumulate);
            /* reads dy (and dx when accumulating), writes dx: count elements each */
            CHECK_LAUNCH(c, (size_t)(1 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                         count * cuda_dt_size(c->dt));
        } else {
            scaled_copy_kernel<T, 1><<<grid, CUDA_THREADS, 0, c->stream>>>(
                (T *)dx, (const T *)dy, s, count, accumulate);
            CHECK_LAUNCH(c, (size_t)(1 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                         count * cuda_dt_size(c->dt));
        }
    });
cleanup:
    return rc;
}

int cuda_scale_forward(void *ctx, struct tensor *y, const struct tensor *x, float s)
{
    return scaled_copy((struct cuda_ctx *)ctx, y->data, x->data, s, tensor_count(x), 0);
}

int cuda_scaled_copy(void *ctx, struct tensor *dx, const struct tensor *dy, float s,
                     int accumulate)
{
    if (!dx || !dx->data) return DR_OK;
    return scaled_copy((struct cuda_ctx *)ctx, dx->data, dy->data, s, tensor_count(dy),
                       accumulate);
}

/* ------------------------------------------------------------------ concat */

/* Channels [off, off + cx) of y (rows, cy) <-> x (rows, cx). to_y: y slice = x;
 * else x (=|+=) y slice. */
template <typename T>
__global__ void concat_kernel(T *y, T *x, long rows, int cy, int cx, int off, int to_y,
                              int accumulate)
{
    const size_t count = (size_t)rows * (size_t)cx;
    GRID_STRIDE(i, count)
    {
        const size_t r = i / (size_t)cx;
        const int k = (int)(i % (size_t)cx);
        T *slot = y + r * (size_t)cy + off + k;
        if (to_y)
            *slot = x[i];
        else
            x[i] = accumulate ? cuda_from_f<T>(__fadd_rn(cuda_to_f<T>(x[i]), cuda_to_f<T>(*slot)))
                              : *slot;
    }
}

static int concat_slice(struct cuda_ctx *c, void *y, void *x, long rows, int cy, int cx, int off,
                        int to_y, int accumulate)
{
    int rc = DR_OK;
    const size_t count = (size_t)rows * (size_t)cx;
    if (count == 0) return DR_OK;
    CUDA_DISPATCH(c->dt, T,
                  concat_kernel<T><<<cuda_grid_cover(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)y, (T *)x, rows, cy, cx, off, to_y, accumulate));
    /* copies the (rows, cx) slice one way (reading the target too when accumulating):
     * count elements read, count written */
    CHECK_LAUNCH(c, (size_t)(1 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                 count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

int cuda_concat_forward(void *ctx, struct tensor *y, const struct tensor *const *xs, int count)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const long rows = (long)y->n * y->h * y->w;
    int off = 0;
    TRY(cuda_enter(c));
    for (int i = 0; i < count; i++) {
        TRY(concat_slice(c, y->data, xs[i]->data, rows, y->c, xs[i]->c, off, 1, 0));
        off += xs[i]->c;
    }
cleanup:
    return rc;
}

/* A NULL entry of dxs (an input that needs no gradient) is skipped; its channel count is
 * inferred from dy when it is the only such entry (as in the CPU twin). */
int cuda_concat_backward(void *ctx, struct tensor *const *dxs, const struct tensor *dy, int count,
                         const int *accumulate)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const long rows = (long)dy->n * dy->h * dy->w;
    int missing_c = dy->c, off = 0;   /* a NULL entry's channels: dy's beyond the others' */
    for (int i = 0; i < count; i++) missing_c -= dxs[i] ? dxs[i]->c : 0;
    TRY(cuda_enter(c));
    for (int i = 0; i < count; i++) {
        if (!dxs[i]) {
            off += missing_c;
            continue;
        }
        TRY(concat_slice(c, dy->data, dxs[i]->data, rows, dy->c, dxs[i]->c, off, 0,
                         accumulate ? accumulate[i] : 0));
        off += dxs[i]->c;
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ flatten */

/* NHWC x (n, hw, c) <-> y (n, c*hw) with feature f = ch*hw + p (the canonical order).
 * Indexed by the element of x: forward writes y, backward writes x (=|+=). */
template <typename T>
__global__ void flatten_kernel(T *y, T *x, int n, int c, int hw, int forward, int accumulate)
{
    const size_t per = (size_t)hw * (size_t)c, count = (size_t)n * per;
    GRID_STRIDE(i, count)
    {
        const size_t img = i / per, rem = i % per;
        const size_t p = rem / (size_t)c, ch = rem % (size_t)c;
        T *f = y + img * per + ch * (size_t)hw + p;
        if (forward)
            *f = x[i];
        else
            x[i] = accumulate ? cuda_from_f<T>(__fadd_rn(cuda_to_f<T>(x[i]), cuda_to_f<T>(*f)))
                              : *f;
    }
}

static int flatten(struct cuda_ctx *c, void *y, void *x, int n, int ch, int hw, int forward,
                   int accumulate)
{
    int rc = DR_OK;
    const size_t count = (size_t)n * (size_t)ch * (size_t)hw;
    if (count == 0) return DR_OK;
    TRY(cuda_enter(c));
    if (hw == 1 && !accumulate) {   /* (n, c, 1, 1): the same bytes */
        if (x != y)
            CHECK_CUDA(cuda_counted_copy(c, forward ? y : x, forward ? x : y,
                                         count * cuda_dt_size(c->dt), cudaMemcpyDeviceToDevice));
        goto cleanup;
    }
    CUDA_DISPATCH(c->dt, T,
                  flatten_kernel<T><<<cuda_grid_cover(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)y, (T *)x, n, ch, hw, forward, accumulate));
    /* reads the source (and the target when accumulating), writes the target: count
     * elements each */
    CHECK_LAUNCH(c, (size_t)(1 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                 count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

int cuda_flatten_forward(void *ctx, struct tensor *y, const struct tensor *x)
{
    return flatten((struct cuda_ctx *)ctx, y->data, x->data, x->n, x->c, x->h * x->w, 1, 0);
}

int cuda_flatten_backward(void *ctx, struct tensor *dx, const struct tensor *dy, int accumulate)
{
    if (!dx || !dx->data) return DR_OK;
    return flatten((struct cuda_ctx *)ctx, dy->data, dx->data, dx->n, dx->c, dx->h * dx->w, 0,
                   accumulate);
}

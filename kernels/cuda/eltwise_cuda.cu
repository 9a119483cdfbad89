/* Elementwise and data-movement ops on NHWC activations: relu / celu / gelu / silu and
 * their gradients, add, scale, scaled copy, channel concat and flatten. The CUDA twins of
 * kernels/cpu/activation.c and kernels/cpu/tensor_ops.c; every value is computed in fp32
 * and rounded once to the activation type, products and sums with explicit rounding so
 * that none is fused into a multiply-add the CPU twin does not make. */
#include <math.h>

#include "cuda_internal.h"

#define ACT_SQRT1_2 0.70710678118654752440      /* 1 / sqrt(2) */
#define ACT_INV_SQRT_2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */

#define GRID_STRIDE(i, count)                                                              \
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < (count);            \
         i += (size_t)gridDim.x * blockDim.x)

/* ------------------------------------------------------------------ activations */

/* One activation's value and gradient at v in fp32, one specialisation per kind; inv is
 * 1 / alpha (celu reads them). The kernels below take the kind as a template argument and
 * the launchers choose it in a switch, so that the compiler names a kind left out. */
template <enum act_kind K> struct act_fn;

template <> struct act_fn<ACT_RELU> {
    static __device__ float value(float v, float, float)
    {
        return v < 0.0f ? 0.0f : v;   /* NaN passes through, as on the CPU */
    }
    static __device__ float grad(float v, float d, float, float)
    {
        return v > 0.0f ? d : 0.0f;
    }
};

template <> struct act_fn<ACT_CELU> {
    static __device__ float value(float v, float alpha, float inv)
    {
        return v > 0.0f ? v : __fmul_rn(alpha, __fsub_rn(expf(__fmul_rn(v, inv)), 1.0f));
    }
    static __device__ float grad(float v, float d, float, float inv)
    {
        return v > 0.0f ? d : __fmul_rn(d, expf(__fmul_rn(v, inv)));
    }
};

template <> struct act_fn<ACT_GELU> {
    /* x Phi(x), Phi from erfc as on the CPU (accurate in the negative tail) */
    static __device__ float value(float v, float, float)
    {
        return isinf(v) ? (v > 0.0f ? v : -0.0f)
                        : __fmul_rn(__fmul_rn(0.5f, v), erfcf(__fmul_rn(-v, (float)ACT_SQRT1_2)));
    }
    static __device__ float grad(float v, float d, float, float)
    {
        const float cdf = __fmul_rn(0.5f, erfcf(__fmul_rn(-v, (float)ACT_SQRT1_2)));
        const float pdf = isinf(v) ? 0.0f   /* the limit: slope 0 at -inf, 1 at +inf */
                                   : __fmul_rn(__fmul_rn(v, (float)ACT_INV_SQRT_2PI),
                                               expf(__fmul_rn(__fmul_rn(-0.5f, v), v)));
        return __fmul_rn(d, __fadd_rn(cdf, pdf));
    }
};

template <> struct act_fn<ACT_SILU> {
    /* x sigmoid(x): x / (1 + e) for x >= 0 and x e / (1 + e) for x < 0, e = exp(-|x|), so
     * that exp never overflows; the limits -0 at -inf and +inf at +inf */
    static __device__ float value(float v, float, float)
    {
        if (isinf(v)) return v > 0.0f ? v : -0.0f;
        const float e = expf(-fabsf(v));
        return __fdiv_rn(v < 0.0f ? __fmul_rn(v, e) : v, __fadd_rn(1.0f, e));
    }
    /* dy sigmoid(x) (1 + x (1 - sigmoid(x))); the limits: slope 1 at +inf, 0 at -inf */
    static __device__ float grad(float v, float d, float, float)
    {
        if (isinf(v)) return __fmul_rn(d, v > 0.0f ? 1.0f : 0.0f);
        const float e = expf(-fabsf(v)), den = __fadd_rn(1.0f, e);
        const float s = __fdiv_rn(v < 0.0f ? e : 1.0f, den);       /* sigmoid(x) */
        const float t = __fdiv_rn(v < 0.0f ? 1.0f : e, den);       /* 1 - sigmoid(x) */
        return __fmul_rn(d, __fmul_rn(s, __fadd_rn(1.0f, __fmul_rn(v, t))));
    }
};

template <typename T, enum act_kind K>
__global__ void act_forward_kernel(T *y, const T *x, float alpha, size_t count)
{
    const float inv = K == ACT_CELU ? 1.0f / alpha : 0.0f;
    GRID_STRIDE(i, count)
    y[i] = cuda_from_f<T>(act_fn<K>::value(cuda_to_f<T>(x[i]), alpha, inv));
}

template <typename T, enum act_kind K>
__global__ void act_backward_kernel(T *dx, const T *dy, const T *x, float alpha, size_t count,
                                    int accumulate)
{
    const float inv = K == ACT_CELU ? 1.0f / alpha : 0.0f;
    GRID_STRIDE(i, count)
    {
        const float g = act_fn<K>::grad(cuda_to_f<T>(x[i]), cuda_to_f<T>(dy[i]), alpha, inv);
        dx[i] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(dx[i]), g) : g);
    }
}

template <enum act_kind K>
static int act_forward_launch(struct cuda_ctx *c, struct tensor *y, const struct tensor *x,
                              float alpha, size_t count)
{
    int rc = DR_OK;
    CUDA_DISPATCH(c->dt, T,
                  act_forward_kernel<T, K><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)y->data, (const T *)x->data, alpha, count));
    /* reads x, writes y: count elements each */
    CHECK_LAUNCH(c, count * cuda_dt_size(c->dt), count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

template <enum act_kind K>
static int act_backward_launch(struct cuda_ctx *c, struct tensor *dx, const struct tensor *dy,
                               const struct tensor *x, float alpha, size_t count, int accumulate)
{
    int rc = DR_OK;
    CUDA_DISPATCH(c->dt, T,
                  act_backward_kernel<T, K><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)dx->data, (const T *)dy->data, (const T *)x->data, alpha, count,
                      accumulate));
    /* reads x, dy (and dx when accumulating), writes dx: count elements each */
    CHECK_LAUNCH(c, (size_t)(2 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                 count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

int cuda_act_forward(void *ctx, struct tensor *y, const struct tensor *x, enum act_kind kind,
                     float alpha)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(x);
    EXPECT(tensor_count(y) == count, "activation: %zu outputs for %zu inputs", tensor_count(y),
           count);
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    switch (kind) {
    case ACT_RELU: return act_forward_launch<ACT_RELU>(c, y, x, alpha, count);
    case ACT_CELU: return act_forward_launch<ACT_CELU>(c, y, x, alpha, count);
    case ACT_GELU: return act_forward_launch<ACT_GELU>(c, y, x, alpha, count);
    case ACT_SILU: return act_forward_launch<ACT_SILU>(c, y, x, alpha, count);
    case ACT_KIND_COUNT: break;
    }
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
    EXPECT(tensor_count(dx) == count && tensor_count(dy) == count,
           "activation backward: sizes differ");
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    switch (kind) {
    case ACT_RELU: return act_backward_launch<ACT_RELU>(c, dx, dy, x, alpha, count, accumulate);
    case ACT_CELU: return act_backward_launch<ACT_CELU>(c, dx, dy, x, alpha, count, accumulate);
    case ACT_GELU: return act_backward_launch<ACT_GELU>(c, dx, dy, x, alpha, count, accumulate);
    case ACT_SILU: return act_backward_launch<ACT_SILU>(c, dx, dy, x, alpha, count, accumulate);
    case ACT_KIND_COUNT: break;
    }
    FAIL(DR_ERR_INTERNAL, "activation backward: no CUDA kernel for kind %d", (int)kind);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ add, scale, copy */

template <typename T>
__global__ void add_kernel(T *y, const T *a, const T *b, size_t count)
{
    GRID_STRIDE(i, count)
    y[i] = cuda_from_f<T>(__fadd_rn(cuda_to_f<T>(a[i]), cuda_to_f<T>(b[i])));
}

/* dx = s*dy, or dx += s*dy (scale_forward is the overwriting case). */
template <typename T>
__global__ void scaled_copy_kernel(T *dx, const T *dy, float s, size_t count, int accumulate)
{
    GRID_STRIDE(i, count)
    {
        const float g = __fmul_rn(s, cuda_to_f<T>(dy[i]));
        dx[i] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(dx[i]), g) : g);
    }
}

int cuda_add_forward(void *ctx, struct tensor *y, const struct tensor *a, const struct tensor *b)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(y);
    EXPECT(cuda_same_shape(y, a) && cuda_same_shape(y, b), "add: shapes differ");
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T,
                  add_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)y->data, (const T *)a->data, (const T *)b->data, count));
    /* reads a and b, writes y: count elements each */
    CHECK_LAUNCH(c, 2 * count * cuda_dt_size(c->dt), count * cuda_dt_size(c->dt));
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
    CUDA_DISPATCH(c->dt, T,
                  scaled_copy_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)dx, (const T *)dy, s, count, accumulate));
    /* reads dy (and dx when accumulating), writes dx: count elements each */
    CHECK_LAUNCH(c, (size_t)(1 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                 count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

int cuda_scale_forward(void *ctx, struct tensor *y, const struct tensor *x, float s)
{
    int rc = DR_OK;
    EXPECT(tensor_count(y) == tensor_count(x), "scale: sizes differ");
    rc = scaled_copy((struct cuda_ctx *)ctx, y->data, x->data, s, tensor_count(x), 0);
cleanup:
    return rc;
}

int cuda_scaled_copy(void *ctx, struct tensor *dx, const struct tensor *dy, float s,
                     int accumulate)
{
    int rc = DR_OK;
    if (!dx || !dx->data) return DR_OK;
    EXPECT(tensor_count(dx) == tensor_count(dy), "scaled copy: %zu from %zu elements",
           tensor_count(dx), tensor_count(dy));
    rc = scaled_copy((struct cuda_ctx *)ctx, dx->data, dy->data, s, tensor_count(dy), accumulate);
cleanup:
    return rc;
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
                  concat_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
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
    int total = 0, off = 0;
    EXPECT(count >= 1, "concat of %d inputs", count);
    for (int i = 0; i < count; i++) {
        EXPECT(xs[i]->n == y->n && xs[i]->h == y->h && xs[i]->w == y->w,
               "concat: input %d is (%d, %d, %d, %d), output (%d, %d, %d, %d)", i, xs[i]->n,
               xs[i]->c, xs[i]->h, xs[i]->w, y->n, y->c, y->h, y->w);
        total += xs[i]->c;
    }
    EXPECT(total == y->c, "concat: inputs have %d channels, output %d", total, y->c);
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
    int missing = -1, missing_c = 0, off = 0;
    TRY(backend_check_concat_grads(&missing, &missing_c, dxs, dy, count));
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
                  flatten_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
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
    int rc = DR_OK;
    EXPECT(y->n == x->n && y->c == x->c * x->h * x->w && y->h == 1 && y->w == 1,
           "flatten: output (%d, %d, %d, %d) for input (%d, %d, %d, %d)", y->n, y->c, y->h, y->w,
           x->n, x->c, x->h, x->w);
    rc = flatten((struct cuda_ctx *)ctx, y->data, x->data, x->n, x->c, x->h * x->w, 1, 0);
cleanup:
    return rc;
}

int cuda_flatten_backward(void *ctx, struct tensor *dx, const struct tensor *dy, int accumulate)
{
    int rc = DR_OK;
    if (!dx || !dx->data) return DR_OK;
    EXPECT(dy->n == dx->n && dy->c == dx->c * dx->h * dx->w && dy->h == 1 && dy->w == 1,
           "flatten backward: dy (%d, %d, %d, %d) for dx (%d, %d, %d, %d)", dy->n, dy->c, dy->h,
           dy->w, dx->n, dx->c, dx->h, dx->w);
    rc = flatten((struct cuda_ctx *)ctx, dy->data, dx->data, dx->n, dx->c, dx->h * dx->w, 0,
                 accumulate);
cleanup:
    return rc;
}

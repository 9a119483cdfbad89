/* The activations' device functions (kernels/activation.h), shared by the elementwise
 * kernels (eltwise_cuda.cu) and the fused batch-norm kernels (bn_cuda.cu, fused_bn_cuda.cu,
 * bn_pool_cuda.cu), so that a fused pass computes each value exactly as the unfused op
 * does: fp32, with explicit rounding so that nothing is contracted into a multiply-add
 * the CPU twin does not make; and ACT_DISPATCH, the one switch from a kind to them. */
#ifndef DAWNRUN_ACT_CUDA_H
#define DAWNRUN_ACT_CUDA_H

#include <math.h>

#include "../activation.h"
#include "cuda_internal.h"

#define ACT_SQRT1_2 0.70710678118654752440      /* 1 / sqrt(2) */
#define ACT_INV_SQRT_2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */

/* One activation's value and gradient at v in fp32, one specialisation per kind; inv is
 * 1 / alpha (celu reads them). The kernels take the kind as a template argument and their
 * launchers choose it with ACT_DISPATCH, whose cases come from ACT_KINDS, so that a kind
 * without its specialisation fails to compile (act_fn<K> is incomplete). */
template <enum act_kind K> struct act_fn;

/* ACT_DISPATCH(kind, K, expr...): for each kind of ACT_KINDS, a case that returns expr
 * with K a compile-time enum act_kind equal to kind (e.g. F<T, K>(args)); a value that is
 * not a kind returns nothing, so that the caller's next line reports it. The switch is
 * generated from the list and has no default. */
#define ACT_DISPATCH(kind, K, ...)                                                         \
    switch (kind) {                                                                        \
        ACT_KINDS(ACT_DISPATCH_ROW_, (K, __VA_ARGS__))                                     \
    case ACT_KIND_COUNT: break;                                                            \
    }
#define ACT_DISPATCH_ROW_(ID, NAME, READS_ALPHA, KE) ACT_DISPATCH_CASE_(ACT_##ID, ACT_OPEN_ KE)
#define ACT_OPEN_(...) __VA_ARGS__
#define ACT_DISPATCH_CASE_(...) ACT_DISPATCH_CASE2_(__VA_ARGS__)
#define ACT_DISPATCH_CASE2_(VALUE, K, ...)                                                 \
    case VALUE: {                                                                          \
        constexpr enum act_kind K = VALUE;                                                 \
        return __VA_ARGS__;                                                                \
    }

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

template <> struct act_fn<ACT_HARDSWISH> {
    /* x for x >= 3 (NaN passes through), else xc (xc + 3) / 6, xc = max(x, -3): -0 for
     * x <= -3, -inf included; the CPU twin's operations in its order */
    static __device__ float value(float v, float, float)
    {
        if (!(v < 3.0f)) return v;
        const float c = v < -3.0f ? -3.0f : v;
        return __fdiv_rn(__fmul_rn(c, __fadd_rn(c, 3.0f)), 6.0f);
    }
    /* 0 below -3, dy above 3, dy ((2x + 3) / 6) from -3 to 3 inclusive (NaN x included) */
    static __device__ float grad(float v, float d, float, float)
    {
        if (v < -3.0f) return 0.0f;
        if (v > 3.0f) return d;
        return __fmul_rn(d, __fdiv_rn(__fadd_rn(__fmul_rn(2.0f, v), 3.0f), 6.0f));
    }
};

/* Not a kind: the identity, for fused kernels whose batch norm has no activation after it. */
#define ACT_NONE ACT_KIND_COUNT
template <> struct act_fn<ACT_NONE> {
    static __device__ float value(float v, float, float)
    {
        return v;
    }
    static __device__ float grad(float, float d, float, float)
    {
        return d;
    }
};

/* 1 / alpha for a kind that reads it (ACT_ALPHA_KINDS), else 0. */
template <enum act_kind K> __host__ __device__ inline float act_inv_alpha(float alpha)
{
    return (ACT_ALPHA_KINDS >> (unsigned)K) & 1u ? 1.0f / alpha : 0.0f;
}

#endif

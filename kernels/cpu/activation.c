/* CPU activations: relu, celu, gelu (erf form) and their derivatives, elementwise over
 * static OpenMP blocks. exp, expm1 and erfc come from vmath.h, branch-free, so every loop
 * here vectorises; each element's bits depend on nothing but its inputs. */
#include "../activation.h"

#include <math.h>

#include "vmath.h"
#include "../../base/status.h"

/* Below this many elements the loops stay on one thread. */
#define ACT_PARALLEL_MIN 32768

#define ACT_SQRT1_2_HI 0x1.6a09e6p-1f    /* 1 / sqrt(2) = HI + LO */
#define ACT_SQRT1_2_LO 0x1.9fcef4p-27f
#define ACT_INV_SQRT_2PI 0x1.988454p-2f  /* 1 / sqrt(2 pi) */
#define ACT_CELU_ARG_MAX 0x1p21f         /* |x / alpha| beyond which its remainder is dropped */
#define ACT_GELU_CLAMP 15.0f             /* erfc(15 / sqrt 2) and exp(-15^2 / 2) are 0 in fp32 */

/* x / alpha as q + *lo, q = x * inv rounded and *lo its remainder; NaN x gives NaN q.
 * Past |q| = ACT_CELU_ARG_MAX the remainder is dropped (*lo = 0): it grows with the ulp
 * of q (and is inf or NaN for an infinite q), while exp and expm1 need it small next to 1
 * and have long saturated there (they clamp q to [-120, 89]), so that x / alpha = -1e30
 * gives the limit as -inf does. */
static inline float act_celu_arg(float *lo, float x, float alpha, float inv)
{
    const float q = x * inv;
    const float r = fmaf(-q, alpha, x) * inv;
    *lo = vm_select(fabsf(q) <= ACT_CELU_ARG_MAX, r, 0.0f);
    return q;
}

/* gelu at x from one erfc(|x| / sqrt 2) and one exp(-x^2 / 2): returns x Phi(x) and stores
 * Phi(x) = erfc(-x / sqrt 2) / 2 and x phi(x) = x exp(-x^2 / 2) / sqrt(2 pi). For x < 0 the
 * result is (x / 2) erfc(|x| / sqrt 2) with x / 2 applied before the final power-of-two
 * scaling, and x phi(x) likewise, so both keep their relative accuracy down the negative
 * tail, subnormal results included. Past |x| = 15 the products take the clamped |x|: the
 * factors they scale are 0 there, so x = -inf gives gelu -0 and slope 0, x = +inf gives
 * inf and slope 1 (the limits), and NaN stays NaN. */
static inline float act_gelu_parts(float *cdf, float *xpdf, float x)
{
    const float xa = vm_at_most(fabsf(x), ACT_GELU_CLAMP);
    const float a = xa * ACT_SQRT1_2_HI;
    const float a_lo = fmaf(xa, ACT_SQRT1_2_HI, -a) + xa * ACT_SQRT1_2_LO;
    const float sq = xa * xa;
    const float e_hi = -0.5f * sq;
    const float e_lo = -0.5f * fmaf(xa, xa, -sq);
    const float half = vm_erfc_mul(a, a_lo, e_hi, e_lo, 0.5f);
    const float xc = copysignf(xa, x);
    const float y_neg = vm_erfc_mul(a, a_lo, e_hi, e_lo, 0.5f * xc);
    const int neg = x < 0.0f;
    *cdf = vm_select(neg, half, 1.0f - half);
    *xpdf = vm_exp_mul(e_hi, e_lo, xc * ACT_INV_SQRT_2PI);
    return vm_select(neg, y_neg, fmaf(-xc, half, x));   /* x (1 - half), rounded once */
}

/* celu(x) = x > 0 ? x : alpha expm1(x / alpha), inv = 1 / alpha. */
static inline float act_celu(float x, float alpha, float inv)
{
    float lo;
    const float q = act_celu_arg(&lo, x, alpha, inv);
    return vm_select(x > 0.0f, x, alpha * vm_expm1_hl(q, lo));
}

/* dy * celu'(x), inv = 1 / alpha. */
static inline float act_celu_grad(float x, float dy, float alpha, float inv)
{
    float lo;
    const float q = act_celu_arg(&lo, x, alpha, inv);
    return vm_select(x > 0.0f, dy, dy * vm_exp_mul(q, lo, 1.0f));
}

/* gelu(x) = x Phi(x). */
static inline float act_gelu(float x)
{
    float cdf, xpdf;
    return act_gelu_parts(&cdf, &xpdf, x);
}

/* dy * gelu'(x) = dy (Phi(x) + x phi(x)). */
static inline float act_gelu_grad(float x, float dy)
{
    float cdf, xpdf;
    act_gelu_parts(&cdf, &xpdf, x);
    return dy * (cdf + xpdf);
}

int activation_forward_cpu(float *y, const float *x, enum act_kind kind, float alpha,
                           size_t count)
{
    const long cnt = (long)count;
    switch (kind) {
    case ACT_RELU:
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];   /* NaN passes through */
        return DR_OK;
    case ACT_CELU: {
        const float inv = 1.0f / alpha;
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) y[i] = act_celu(x[i], alpha, inv);
        return DR_OK;
    }
    case ACT_GELU:
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) y[i] = act_gelu(x[i]);
        return DR_OK;
    case ACT_KIND_COUNT:
        break;
    }
    return DR_ERR_INTERNAL;
}

int activation_backward_cpu(float *dx, const float *dy, const float *x, enum act_kind kind,
                            float alpha, size_t count, int accumulate_dx)
{
    const long cnt = (long)count;
    switch (kind) {
    case ACT_RELU:
        if (accumulate_dx) {
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) dx[i] += x[i] > 0.0f ? dy[i] : 0.0f;
        } else {
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
        }
        return DR_OK;
    case ACT_CELU: {
        const float inv = 1.0f / alpha;
        if (accumulate_dx) {
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) dx[i] += act_celu_grad(x[i], dy[i], alpha, inv);
        } else {
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) dx[i] = act_celu_grad(x[i], dy[i], alpha, inv);
        }
        return DR_OK;
    }
    case ACT_GELU:
        if (accumulate_dx) {
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) dx[i] += act_gelu_grad(x[i], dy[i]);
        } else {
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) dx[i] = act_gelu_grad(x[i], dy[i]);
        }
        return DR_OK;
    case ACT_KIND_COUNT:
        break;
    }
    return DR_ERR_INTERNAL;
}

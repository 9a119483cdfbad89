/* CPU activations: relu, celu, gelu (erf form), silu, hardswish and their derivatives,
 * elementwise over static OpenMP blocks. Each kind of kernels/activation.h (ACT_KINDS) is
 * two functions here, act_<name>(x, alpha, inv) and act_<name>_grad(x, dy, alpha, inv)
 * (inv = 1 / alpha for a kind that reads alpha, else 0), applied by the loops that the
 * list generates in activation_forward_cpu and activation_backward_cpu. exp, expm1 and
 * erfc come from vmath.h, branch-free, so every loop here vectorises; each element's bits
 * depend on nothing but its inputs. Compiled once per instruction set (cpu_isa.h). */
#include "../activation.h"
#include "cpu_isa.h"

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
#define ACT_SILU_CLAMP 110.0f            /* 110 exp(-110) is below half the least subnormal */

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

/* r, or x itself when x is NaN: a NaN input comes out with its own bits in every
 * instruction-set variant (cpu_isa.h), whereas the NaN the arithmetic would make of it
 * depends on whether fmaf is an instruction or a library call. */
static inline float act_keep_nan(float x, float r)
{
    return vm_select(x != x, x, r);
}

/* relu(x) = max(x, 0); NaN passes through. */
static inline float act_relu(float x, float alpha, float inv)
{
    (void)alpha;
    (void)inv;
    return x < 0.0f ? 0.0f : x;
}

/* dy * relu'(x): dy for x > 0, else 0 (0 at x = 0). */
static inline float act_relu_grad(float x, float dy, float alpha, float inv)
{
    (void)alpha;
    (void)inv;
    return x > 0.0f ? dy : 0.0f;
}

/* celu(x) = x > 0 ? x : alpha expm1(x / alpha), inv = 1 / alpha. */
static inline float act_celu(float x, float alpha, float inv)
{
    float lo;
    const float q = act_celu_arg(&lo, x, alpha, inv);
    return act_keep_nan(x, vm_select(x > 0.0f, x, alpha * vm_expm1_hl(q, lo)));
}

/* dy * celu'(x), inv = 1 / alpha. */
static inline float act_celu_grad(float x, float dy, float alpha, float inv)
{
    float lo;
    const float q = act_celu_arg(&lo, x, alpha, inv);
    return act_keep_nan(x, vm_select(x > 0.0f, dy, dy * vm_exp_mul(q, lo, 1.0f)));
}

/* gelu(x) = x Phi(x). */
static inline float act_gelu(float x, float alpha, float inv)
{
    (void)alpha;
    (void)inv;
    float cdf, xpdf;
    return act_keep_nan(x, act_gelu_parts(&cdf, &xpdf, x));
}

/* dy * gelu'(x) = dy (Phi(x) + x phi(x)). */
static inline float act_gelu_grad(float x, float dy, float alpha, float inv)
{
    (void)alpha;
    (void)inv;
    float cdf, xpdf;
    act_gelu_parts(&cdf, &xpdf, x);
    return act_keep_nan(x, dy * (cdf + xpdf));
}

/* silu's parts at x from one exp(-|x|): stores e = exp(-|x|) as (1 + *u) *s1 *s2
 * (vm_exp_parts), d = 1 + e and xe = xc e rounded once (xc = x with |x| clamped to
 * ACT_SILU_CLAMP: past it xe is 0 in fp32 anyway, and inf * 0 never happens), and returns
 * d. Then x sigmoid(x) = x / d for x >= 0 and xe / d for x < 0, where exp(-x) would
 * overflow; x e keeps its accuracy down the negative tail, subnormal results included. */
static inline float act_silu_parts(float *u, float *s1, float *s2, float *xe, float *xc, float x)
{
    const float xa = fabsf(x);
    *xc = copysignf(vm_at_most(xa, ACT_SILU_CLAMP), x);
    vm_exp_parts(u, s1, s2, -xa, 0.0f);
    *xe = fmaf(*xc, *u, *xc) * *s1 * *s2;
    return 1.0f + (1.0f + *u) * *s1 * *s2;
}

/* silu(x) = x sigmoid(x). x = -inf gives -0 (xe with the clamped x), +inf gives inf,
 * NaN stays NaN. */
static inline float act_silu(float x, float alpha, float inv)
{
    (void)alpha;
    (void)inv;
    float u, s1, s2, xe, xc;
    const float d = act_silu_parts(&u, &s1, &s2, &xe, &xc, x);
    return act_keep_nan(x, vm_select(x < 0.0f, xe, x) / d);
}

/* dy * silu'(x), silu' = sigmoid(x) (1 + x (1 - sigmoid(x))): for x >= 0 (1 + xe / d) / d,
 * for x < 0 e (d + x) / d^2 with e applied last (vm_exp_parts' scaling, so that a
 * subnormal slope rounds once). It crosses zero near x = -1.28, where d + x cancels; the
 * limits are slope 1 at +inf and 0 at -inf. */
static inline float act_silu_grad(float x, float dy, float alpha, float inv)
{
    (void)alpha;
    (void)inv;
    float u, s1, s2, xe, xc;
    const float d = act_silu_parts(&u, &s1, &s2, &xe, &xc, x);
    const float pos = (1.0f + xe / d) / d;
    const float m = (d + xc) / (d * d);
    const float neg = fmaf(m, u, m) * s1 * s2;
    return act_keep_nan(x, dy * vm_select(x < 0.0f, neg, pos));
}

/* hardswish(x) = x relu6(x + 3) / 6: x itself for x >= 3, else xc (xc + 3) / 6 with xc = x
 * clamped to -3 from below, so that x <= -3 (-inf included) gives -3 * 0 / 6 = -0, never
 * inf * 0. Three roundings at most (x + 3 is exact near -3); NaN stays NaN. */
static inline float act_hardswish(float x, float alpha, float inv)
{
    (void)alpha;
    (void)inv;
    const float xc = vm_at_least(x, -3.0f);
    const float mid = xc * (xc + 3.0f) / 6.0f;
    return act_keep_nan(x, vm_select(x >= 3.0f, x, mid));
}

/* dy * hardswish'(x): 0 for x < -3, dy for x > 3, dy ((2x + 3) / 6) from -3 to 3 inclusive
 * (PyTorch's values at the kinks: -dy / 2 at -3, 3 dy / 2 at 3). 2x + 3 is exact where the
 * slope crosses zero (x near -1.5). NaN x gives NaN. */
static inline float act_hardswish_grad(float x, float dy, float alpha, float inv)
{
    (void)alpha;
    (void)inv;
    const float mid = dy * ((2.0f * x + 3.0f) / 6.0f);
    return act_keep_nan(x, vm_select(x < -3.0f, 0.0f, vm_select(x <= 3.0f, mid, dy)));
}

/* One loop over count elements, on static OpenMP blocks above ACT_PARALLEL_MIN. */
#define ACT_PARALLEL_FOR                                                                   \
    _Pragma("omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)")            \
    for (long i = 0; i < cnt; i++)

/* The forward's case for one row of ACT_KINDS. */
#define ACT_FORWARD_ROW_(ID, NAME, READS_ALPHA, P)                                         \
    case ACT_##ID:                                                                         \
        ACT_PARALLEL_FOR y[i] = act_##NAME(x[i], alpha, inv);                              \
        return DR_OK;

/* The backward's case for one row of ACT_KINDS: overwrite or accumulate. */
#define ACT_BACKWARD_ROW_(ID, NAME, READS_ALPHA, P)                                        \
    case ACT_##ID:                                                                         \
        if (accumulate_dx) {                                                               \
            ACT_PARALLEL_FOR dx[i] += act_##NAME##_grad(x[i], dy[i], alpha, inv);          \
        } else {                                                                           \
            ACT_PARALLEL_FOR dx[i] = act_##NAME##_grad(x[i], dy[i], alpha, inv);           \
        }                                                                                  \
        return DR_OK;

int CPU_ISA_FN(activation_forward_cpu)(float *y, const float *x, enum act_kind kind, float alpha,
                                       size_t count)
{
    const long cnt = (long)count;
    const float inv = act_reads_alpha(kind) ? 1.0f / alpha : 0.0f;
    switch (kind) {
    ACT_KINDS(ACT_FORWARD_ROW_, ~)
    case ACT_KIND_COUNT:
        break;
    }
    return DR_ERR_INTERNAL;
}

int CPU_ISA_FN(activation_backward_cpu)(float *dx, const float *dy, const float *x,
                                        enum act_kind kind, float alpha, size_t count,
                                        int accumulate_dx)
{
    const long cnt = (long)count;
    const float inv = act_reads_alpha(kind) ? 1.0f / alpha : 0.0f;
    switch (kind) {
    ACT_KINDS(ACT_BACKWARD_ROW_, ~)
    case ACT_KIND_COUNT:
        break;
    }
    return DR_ERR_INTERNAL;
}

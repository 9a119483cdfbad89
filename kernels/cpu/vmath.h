/* Branch-free single-precision exp, expm1, erf and erfc for the elementwise CPU kernels.
 * Every function is a straight line of IEEE operations (fmaf, bit moves, selects), so a
 * loop calling them vectorises in the AVX2 and AVX-512 variants of the kernels
 * (cpu_isa.h) without -ffast-math and gives the same bits in its vector body and its
 * scalar remainder; in the generic variant fmaf is a library call that rounds the same
 * way. NaN in gives NaN out (its sign and payload may depend on the variant; the
 * activation kernels return a NaN input itself).
 *
 * exp: x = n ln2 + r with n = rint(x / ln2) and ln2 split in two parts (Cody-Waite, the
 * first product exact through fmaf), exp(r) - 1 = r + r^2 P(r) on |r| <= ln2/2, and the
 * result scaled by 2^n built from the exponent bits in two steps so that results in the
 * subnormal range round once. erfc(a), a >= 0: exp(-a^2) (a^2 carried as a rounded part
 * plus its exact remainder) times R(t), t = 2 / (2 + a), a polynomial fitted to
 * erfc(a) exp(a^2) over a in [0, 10.7] (erfc underflows past 10.06). erf: a P(a^2) below
 * 0.5, 1 - erfc above. Coefficients: minimax fits of relative error, rounded to float
 * (those of R and of erf's series one at a time, the later ones refitted to absorb the
 * rounding of the earlier). Errors measured over all 2^32 inputs against double precision:
 * exp 1.01 ulp, expm1 1.46, erf 1.64, erfc 2.45; tests/test_activation_math.c asserts them. */
#ifndef DAWNRUN_KERNELS_CPU_VMATH_H
#define DAWNRUN_KERNELS_CPU_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define VM_LOG2E 0x1.715476p+0f  /* 1 / ln 2 */
#define VM_LN2_HI 0x1.62e43p-1f  /* ln 2 rounded to float */
#define VM_LN2_LO -0x1.05c610p-29f /* ln 2 - VM_LN2_HI */
#define VM_ROUND 0x1.8p+23f      /* adding it rounds |v| < 2^22 to an integer */

/* The bits of f, and the float with bits u. */
static inline uint32_t vm_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float vm_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* c ? a : b through bit masks. Both operands are always computed, and the compiler sees no
 * branch: from a ?: on floats gcc may move one side's arithmetic into a branch of its own,
 * which -ftrapping-math then keeps it from vectorising. */
static inline float vm_select(int c, float a, float b)
{
    const uint32_t m = 0u - (uint32_t)(c != 0);
    return vm_from_bits((vm_bits(a) & m) | (vm_bits(b) & ~m));
}

/* max(x, lo) and min(x, hi) that keep NaN (the comparisons are false for it). */
static inline float vm_at_least(float x, float lo)
{
    return vm_select(x < lo, lo, x);
}

static inline float vm_at_most(float x, float hi)
{
    return vm_select(x > hi, hi, x);
}

/* 2^n for an integer-valued n in [-126, 127]: n + VM_ROUND holds n in its low mantissa
 * bits, and shifting those into the exponent field drops everything else. */
static inline float vm_pow2i(float n)
{
    return vm_from_bits((vm_bits(n + VM_ROUND) << 23) + (127u << 23));
}

/* Splits hi + lo = n ln2 + r: returns n (integer-valued) and stores r, |r| <= 0.347.
 * Needs |hi| <= 2^21 and |lo| tiny next to 1. */
static inline float vm_exp_reduce(float *r, float hi, float lo)
{
    const float n = fmaf(hi, VM_LOG2E, VM_ROUND) - VM_ROUND;
    const float r_hi = fmaf(-n, VM_LN2_HI, hi);   /* exact */
    *r = r_hi + fmaf(-n, VM_LN2_LO, lo);
    return n;
}

/* exp(r) - 1 for |r| <= 0.35: r + r^2 P(r), relative error of exp(r) about 3e-9. */
static inline float vm_expm1_poly(float r)
{
    float p = 0x1.6a2432p-10f;
    p = fmaf(p, r, 0x1.1239e4p-7f);
    p = fmaf(p, r, 0x1.5558f2p-5f);
    p = fmaf(p, r, 0x1.555492p-3f);
    p = fmaf(p, r, 0x1.fffffcp-2f);
    return fmaf(r * r, p, r);
}

/* exp(hi + lo) = (1 + *u) *s1 *s2 for |lo| at most a few ulp of hi: *u = exp(r) - 1 and
 * two powers of two whose product is 2^n (each alone stays normal, so that a subnormal
 * result is rounded once, by the last product). hi is clamped to [-120, 89]: exp(-120)
 * times anything below 2^23 rounds to 0, and exp(89) overflows. */
static inline void vm_exp_parts(float *u, float *s1, float *s2, float hi, float lo)
{
    hi = vm_at_most(vm_at_least(hi, -120.0f), 89.0f);
    float r;
    const float n = vm_exp_reduce(&r, hi, lo);          /* n in [-173, 128] */
    const float n1 = fmaf(n, 0.5f, VM_ROUND) - VM_ROUND; /* both halves in [-87, 64] */
    *u = vm_expm1_poly(r);
    *s1 = vm_pow2i(n1);
    *s2 = vm_pow2i(n - n1);
}

/* m exp(hi + lo) for finite m, |m| < 2^23 where the result may underflow: m (1 + u) rounds
 * once, the scalings are exact but for subnormal or overflowing results. exp(x) is 0 below
 * -103.98 and +inf above 88.73. */
static inline float vm_exp_mul(float hi, float lo, float m)
{
    float u, s1, s2;
    vm_exp_parts(&u, &s1, &s2, hi, lo);
    return fmaf(m, u, m) * s1 * s2;
}

/* exp(x). */
static inline float vm_expf(float x)
{
    return vm_exp_mul(x, 0.0f, 1.0f);
}

/* exp(hi + lo) - 1 without cancellation near 0: (2^n - 1) + 2^n (exp(r) - 1). */
static inline float vm_expm1_hl(float hi, float lo)
{
    hi = vm_at_most(vm_at_least(hi, -87.0f), 89.0f);   /* 2^n stays normal; -1 below */
    float r;
    const float n = vm_exp_reduce(&r, hi, lo);   /* n in [-126, 128] */
    const float n1 = vm_at_most(n, 127.0f);
    const float s = vm_pow2i(n1);
    return fmaf(s, vm_expm1_poly(r), s - 1.0f) * vm_pow2i(n - n1);
}

/* exp(x) - 1. */
static inline float vm_expm1f(float x)
{
    return vm_expm1_hl(x, 0.0f);
}

/* k erfc(a) for a = a_hi + a_lo >= 0 (or NaN), given -a^2 as e_hi + e_lo: k R(t) exp(-a^2)
 * with t = 2 / (2 + a); k (|k| < 2^22) is applied before the last scaling, so that a
 * subnormal result is rounded once. t is rounded twice (2 + a, then the division) and R
 * magnifies the error of t up to 2.3 times, so the exact remainders of both roundings (plus
 * a_lo) give t's lost part and R'(t) corrects for it. Callers clamp a to at most 10.7;
 * beyond 10.06 erfc(a) is below the smallest subnormal. */
static inline float vm_erfc_mul(float a_hi, float a_lo, float e_hi, float e_lo, float k)
{
    const float d = 2.0f + a_hi;
    const float d_b = d - a_hi;
    const float d_lo = ((a_hi - (d - d_b)) + (2.0f - d_b)) + a_lo;   /* 2 + a - d */
    const float t = 2.0f / d;
    /* 2 / (d + d_lo) - t = (2 - t d - t d_lo) / (d + d_lo), about f t / 2 */
    const float f = fmaf(-t, d_lo, fmaf(-t, d, 2.0f));
    float g = 0x1.bade64p-1f;   /* R'(t) t / 2 within 4e-3 of R */
    g = fmaf(g, t, 0x1.bc70bap-4f);
    g = fmaf(g, t, 0x1.43faf4p-3f);
    g = fmaf(g, t, 0x1.6bd38ep-14f);
    float p = 0x1.aa6d72p-6f;   /* R(t) = erfc(a) exp(a^2), relative error 2.2e-9 */
    p = fmaf(p, t, -0x1.0b8f14p-3f);
    p = fmaf(p, t, 0x1.ba39f6p-3f);
    p = fmaf(p, t, -0x1.a32a8cp-6f);
    p = fmaf(p, t, -0x1.2cd43cp-2f);
    p = fmaf(p, t, 0x1.cc0084p-3f);
    p = fmaf(p, t, -0x1.250308p-5f);
    p = fmaf(p, t, 0x1.b92e30p-3f);
    p = fmaf(p, t, 0x1.e8a04ap-3f);
    p = fmaf(p, t, 0x1.21fac6p-2f);
    p = fmaf(p, t, 0x1.20c806p-2f);
    /* R = t p + c with c = c0 + R'(t) (true t - t); k R exp(-a^2) = k (t p + c)(1 + u) s1 s2
     * = (kt p + [kt_lo p + k (t p u + c (1 + u))]) s1 s2 with k t = kt + kt_lo exactly: the
     * leading product is exact inside the last fmaf, the bracket is a small tail. */
    const float c = fmaf(g, f, 0x1.658b36p-19f);
    float u, s1, s2;
    vm_exp_parts(&u, &s1, &s2, e_hi, e_lo);
    const float kt = k * t;
    const float kt_lo = fmaf(k, t, -kt);
    const float tail = fmaf(kt_lo, p, k * fmaf(t * p, u, fmaf(c, u, c)));
    return fmaf(kt, p, tail) * s1 * s2;
}

/* Clamps |z| to 10.7 and returns it, with -|z|^2 split into *e_hi + *e_lo exactly. */
static inline float vm_erf_arg(float *e_hi, float *e_lo, float z)
{
    const float a = vm_at_most(fabsf(z), 10.7f);
    const float sq = a * a;
    *e_hi = -sq;
    *e_lo = -fmaf(a, a, -sq);
    return a;
}

/* erfc(z). */
static inline float vm_erfcf(float z)
{
    float e_hi, e_lo;
    const float a = vm_erf_arg(&e_hi, &e_lo, z);
    const float c = vm_erfc_mul(a, 0.0f, e_hi, e_lo, 1.0f);
    return vm_select(z < 0.0f, 2.0f - c, c);
}

/* erf(a) for 0 <= a <= 0.5: a (2/sqrt(pi) + a^2 Q(a^2)), the leading product and the sum
 * rounded once by fmaf (2/sqrt(pi) carried in two parts). */
static inline float vm_erf_small(float a)
{
    const float u = a * a;
    float q = 0x1.35f60ep-8f;
    q = fmaf(q, u, -0x1.b67f3ep-6f);
    q = fmaf(q, u, 0x1.ce2642p-4f);
    q = fmaf(q, u, -0x1.812738p-2f);
    const float w = fmaf(u, q, -0x1.f7ac92p-25f);
    return fmaf(a, 0x1.20dd76p+0f, a * w);
}

/* erf(z): the odd series below |z| = 0.5, 1 - erfc(|z|) above; saturates to +-1. */
static inline float vm_erff(float z)
{
    float e_hi, e_lo;
    const float a = vm_erf_arg(&e_hi, &e_lo, z);
    const float large = 1.0f - vm_erfc_mul(a, 0.0f, e_hi, e_lo, 1.0f);
    return copysignf(vm_select(a < 0.5f, vm_erf_small(a), large), z);
}

#endif

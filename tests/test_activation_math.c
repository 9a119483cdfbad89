/* The CPU engine's branch-free fp32 math (kernels/cpu/vmath.h: exp, expm1, erf, erfc)
 * against double precision, and every activation kernel (each enum act_kind, from its row
 * in `refs`) against its double reference. Errors are in units in the last place (ulp) of
 * the exact result rounded to fp32 (2^-149 for subnormal results); an exact result past
 * the largest float must come out +-inf. Inputs: every 1/1024 in [-100, 100], every 1021st
 * fp32 bit pattern (all magnitudes, subnormal inputs and results included) and the special
 * values +-0, +-inf, NaN. The bounds sit just above the maxima of exhaustive runs over all
 * 2^32 inputs (exp 1.01, expm1 1.46, erf 1.64, erfc 2.45 ulp) and over every fp32 x in
 * [-112, 112] with dy = 1 (celu alpha 0.3: 1.89 forward, 1.00 backward; gelu 2.82 forward,
 * 2.71 backward in the unit below; silu 2.67 forward, 3.78 backward in that unit;
 * hardswish 1.91 forward, 1.00 backward). Also, for every kind: NaN passes through,
 * infinities and the largest floats give the limits, the accumulate flag adds exactly
 * what the plain call writes, and the bits depend neither on the thread count nor on an
 * element's position in the array. A new kind
 * needs one row in `refs` (the length check fails to compile without it) and nothing
 * else here. */
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../kernels/activation.h"
#include "../kernels/cpu/vmath.h"
#include "check.h"

#define BOUND_EXP 1.1
#define BOUND_EXPM1 1.5
#define BOUND_ERF 1.7
#define BOUND_ERFC 2.5
#define BOUND_CELU 2.0         /* expm1 (or exp) then one product */
#define BOUND_GELU 3.0         /* x Phi(x) with Phi from erfc */
#define BOUND_GELU_GRAD 3.5    /* in ulp of |dy| (|Phi| + |x phi|), see ref_gelu_grad */
#define BOUND_SILU 3.0         /* x / (1 + e) or x e / (1 + e), e = exp(-|x|) */
#define BOUND_SILU_GRAD 4.0    /* in ulp of |dy| (s + |x s (1 - s)|), see ref_silu_grad */
#define BOUND_HARDSWISH 2.0    /* x (x + 3) / 6: three roundings, the sum exact near -3 */
#define BOUND_HARDSWISH_GRAD 1.5   /* dy ((2x + 3) / 6), in ulp of the result */

#define SWEEP_STEP (1.0 / 1024.0)
#define SWEEP_N 204801         /* -100 .. 100 */
#define BITS_STRIDE 1021u

/* fp32 ulp at the magnitude of an exact value r. */
static double ulp32(double r)
{
    r = fabs(r);
    if (r < 0x1p-126) return 0x1p-149;
    int e;
    frexp(r, &e);
    return ldexp(1.0, e - 24);
}

/* |got - want| in ulp of want; 0 when both are NaN or want overflows fp32 and got is the
 * infinity of its sign; 1e30 for any other NaN or infinity mismatch. */
static double ulp_err(float got, double want)
{
    if (isnan(want) || isnan(got)) return isnan(want) && isnan(got) ? 0.0 : 1e30;
    if (fabs(want) >= 0x1.ffffffp127) return isinf(got) && (got > 0) == (want > 0) ? 0.0 : 1e30;
    if (isinf(got)) return 1e30;
    return fabs((double)got - want) / ulp32(want);
}

struct worst {
    double err;
    float x;
};

static void worst_add(struct worst *w, float x, double err)
{
    if (err > w->err || isnan(err)) {
        w->err = isnan(err) ? 1e30 : err;
        w->x = x;
    }
}

/* ------------------------------------------------------------------ vmath functions */

typedef float (*fn32)(float);
typedef double (*fn64)(double);

/* Sweeps f against g over the grid, the bit patterns and the special values. */
static void test_function(const char *name, fn32 f, fn64 g, double bound)
{
    struct worst w = {0.0, 0.0f};
    for (long k = 0; k < SWEEP_N; k++) {
        const float x = (float)(-100.0 + (double)k * SWEEP_STEP);
        worst_add(&w, x, ulp_err(f(x), g(x)));
    }
    for (uint32_t b = 0; b < 0x7f800000u; b += BITS_STRIDE)
        for (int s = 0; s < 2; s++) {
            const uint32_t bits = b | (s ? 0x80000000u : 0u);
            float x;
            memcpy(&x, &bits, sizeof x);
            worst_add(&w, x, ulp_err(f(x), g(x)));
        }
    const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, FLT_MIN, -FLT_MIN,
                             0x1p-149f, -0x1p-149f, FLT_MAX, -FLT_MAX};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        worst_add(&w, special[i], ulp_err(f(special[i]), g(special[i])));
    printf("%-6s max error %.3f ulp at %a (bound %.2f)\n", name, w.err, (double)w.x, bound);
    CHECK(w.err <= bound);
}

static float f_exp(float x) { return vm_expf(x); }
static float f_expm1(float x) { return vm_expm1f(x); }
static float f_erf(float x) { return vm_erff(x); }
static float f_erfc(float x) { return vm_erfcf(x); }

/* Values whose bits are fixed: exact results, signs of zero, saturation, overflow and the
 * edges of the subnormal range. */
static void test_exact_values(void)
{
    CHECK(vm_expf(0.0f) == 1.0f && vm_expf(-0.0f) == 1.0f);
    CHECK(vm_expf(INFINITY) == INFINITY && vm_expf(-INFINITY) == 0.0f && isnan(vm_expf(NAN)));
    CHECK(vm_expf(88.72283f) <= FLT_MAX && vm_expf(88.72284f) == INFINITY);  /* ln FLT_MAX */
    CHECK(vm_expf(-88.0f) > 0.0f && vm_expf(-88.0f) < FLT_MIN);               /* subnormal */
    CHECK(vm_expf(-103.97207f) == 0x1p-149f);   /* just above 2^-150: rounds up */
    CHECK(vm_expf(-103.98f) == 0.0f && vm_expf(-1e30f) == 0.0f);
    CHECK(vm_expm1f(0.0f) == 0.0f && vm_expm1f(-INFINITY) == -1.0f);
    CHECK(vm_expm1f(-100.0f) == -1.0f && vm_expm1f(INFINITY) == INFINITY);
    CHECK(vm_expm1f(1e-30f) == 1e-30f && vm_expm1f(-1e-30f) == -1e-30f);
    CHECK(isnan(vm_expm1f(NAN)));
    CHECK(vm_erff(0.0f) == 0.0f && signbit(vm_erff(-0.0f)));
    CHECK(vm_erff(4.0f) == 1.0f && vm_erff(-4.0f) == -1.0f);
    CHECK(vm_erff(INFINITY) == 1.0f && vm_erff(-INFINITY) == -1.0f && isnan(vm_erff(NAN)));
    CHECK(vm_erfcf(0.0f) == 1.0f && vm_erfcf(-0.0f) == 1.0f);
    CHECK(vm_erfcf(INFINITY) == 0.0f && vm_erfcf(-INFINITY) == 2.0f && isnan(vm_erfcf(NAN)));
    CHECK(vm_erfcf(10.0f) > 0.0f && vm_erfcf(10.0f) < FLT_MIN);   /* subnormal tail */
    CHECK(vm_erfcf(10.1f) == 0.0f && vm_erfcf(-10.0f) == 2.0f);
}

/* ------------------------------------------------------------------ kernels */

/* One activation's references in double precision and the bounds its kernels meet. */
struct act_ref {
    double (*value)(double x, double alpha);
    /* act'(x), and in *scale the sum of the magnitudes of its terms: where the terms
     * cancel (a derivative crossing zero) the gradient's error is counted in ulp of that
     * sum times |dy| instead of ulp of the result */
    double (*grad)(double *scale, double x, double alpha);
    float alphas[3];           /* the alphas to test (the first for the special values) */
    int n_alphas;
    double bound, bound_grad;  /* ulp */
    /* y and act' with dy = 1 at x = +inf, -inf, -FLT_MAX, FLT_MAX (the first alpha) */
    float y_at[4], slope_at[4];
    int selects_dy;            /* 1: dx is dy where x > 0 and 0 elsewhere (relu), NaN x
                                  included; 0: dx is a product with dy and NaN for a NaN
                                  x or dy */
};

static double ref_relu(double x, double alpha)
{
    (void)alpha;
    return x < 0 ? 0.0 : x;
}

static double ref_relu_grad(double *scale, double x, double alpha)
{
    (void)alpha;
    *scale = x > 0 ? 1.0 : 0.0;
    return *scale;
}

static double ref_celu(double x, double alpha)
{
    return x > 0 ? x : alpha * expm1(x / alpha);
}

static double ref_celu_grad(double *scale, double x, double alpha)
{
    *scale = x > 0 ? 1.0 : exp(x / alpha);
    return *scale;
}

/* Phi(x) and phi(x) in double. */
static double ref_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double ref_pdf(double x) { return exp(-0.5 * x * x) / 2.5066282746310002; }

static double ref_gelu(double x, double alpha)
{
    (void)alpha;
    return x * ref_cdf(x);
}

/* Phi + x phi: the two terms cancel near x = -0.75, where the derivative crosses zero. */
static double ref_gelu_grad(double *scale, double x, double alpha)
{
    (void)alpha;
    const double cdf = ref_cdf(x), xpdf = x * ref_pdf(x);
    *scale = fabs(cdf) + fabs(xpdf);
    return cdf + xpdf;
}

/* sigmoid(x) and 1 - sigmoid(x) in double, without exp overflowing. */
static void ref_sigmoid(double *s, double *one_minus, double x)
{
    const double e = exp(-fabs(x));
    *s = x < 0 ? e / (1 + e) : 1 / (1 + e);
    *one_minus = x < 0 ? 1 / (1 + e) : e / (1 + e);
}

static double ref_silu(double x, double alpha)
{
    (void)alpha;
    double s, t;
    ref_sigmoid(&s, &t, x);
    return x < 0 ? x * exp(x) / (1 + exp(x)) : x * s;
}

/* s + x s (1 - s): the terms cancel near x = -1.28, where the derivative crosses zero. */
static double ref_silu_grad(double *scale, double x, double alpha)
{
    (void)alpha;
    double s, t;
    ref_sigmoid(&s, &t, x);
    *scale = fabs(s) + fabs(x * s * t);
    return s + x * s * t;
}

/* x relu6(x + 3) / 6: 0 for x <= -3, x for x >= 3. */
static double ref_hardswish(double x, double alpha)
{
    (void)alpha;
    return x <= -3 ? 0.0 : x >= 3 ? x : x * (x + 3) / 6;
}

/* 0 for x < -3, 1 for x > 3, (2x + 3) / 6 between and at the kinks (-1/2 at -3, 3/2 at
 * 3). One term: the kernel's 2x + 3 is exact where it crosses zero (x near -1.5), so the
 * error is counted in ulp of the result. */
static double ref_hardswish_grad(double *scale, double x, double alpha)
{
    (void)alpha;
    const double g = x < -3 ? 0.0 : x > 3 ? 1.0 : (2 * x + 3) / 6;
    *scale = fabs(g);
    return g;
}

/* One row per kind, indexed by it: a kind added to kernels/activation.h fails the length
 * check below until it has its row. */
static const struct act_ref refs[] = {
    [ACT_RELU] = {ref_relu, ref_relu_grad, {0.0f}, 1, 0.0, 0.0,
                  {INFINITY, 0.0f, 0.0f, FLT_MAX}, {1.0f, 0.0f, 0.0f, 1.0f}, 1},
    [ACT_CELU] = {ref_celu, ref_celu_grad, {0.3f, 1.0f, 2.5f}, 3, BOUND_CELU, BOUND_CELU,
                  {INFINITY, -0.3f, -0.3f, FLT_MAX}, {1.0f, 0.0f, 0.0f, 1.0f}},
    [ACT_GELU] = {ref_gelu, ref_gelu_grad, {0.0f}, 1, BOUND_GELU, BOUND_GELU_GRAD,
                  {INFINITY, 0.0f, 0.0f, FLT_MAX}, {1.0f, 0.0f, 0.0f, 1.0f}},
    [ACT_SILU] = {ref_silu, ref_silu_grad, {0.0f}, 1, BOUND_SILU, BOUND_SILU_GRAD,
                  {INFINITY, 0.0f, 0.0f, FLT_MAX}, {1.0f, 0.0f, 0.0f, 1.0f}},
    [ACT_HARDSWISH] = {ref_hardswish, ref_hardswish_grad, {0.0f}, 1, BOUND_HARDSWISH,
                       BOUND_HARDSWISH_GRAD, {INFINITY, 0.0f, 0.0f, FLT_MAX},
                       {1.0f, 0.0f, 0.0f, 1.0f}},
};
_Static_assert(sizeof refs / sizeof refs[0] == ACT_KIND_COUNT,
               "tests/test_activation_math.c: every enum act_kind needs its row in refs");

/* Reproducible values in [lo, hi): a 64-bit LCG's top 24 bits. */
static void fill_uniform(float *p, size_t n, float lo, float hi, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = lo + (hi - lo) * (float)(s >> 40) * 0x1p-24f;
    }
}

/* The kernels' inputs x and upstream gradients dy: the grid -100 .. 100 in steps of 1/1024
 * (above the kernels' parallel threshold) with dy uniform in [-2, 2), then every
 * BITS_STRIDE-th fp32 bit pattern of either sign (all finite magnitudes) and the special
 * values with dy = 1. Returns the count. */
static size_t kernel_inputs(float **x_out, float **dy_out, uint64_t seed)
{
    const size_t n_bits = 2 * ((0x7f800000u + BITS_STRIDE - 1) / BITS_STRIDE);
    static const float special[] = {0.0f, -0.0f, FLT_MIN, -FLT_MIN, 0x1p-149f, -0x1p-149f,
                                    FLT_MAX, -FLT_MAX};
    const size_t n_special = sizeof special / sizeof special[0];
    const size_t cap = SWEEP_N + n_bits + n_special;
    float *x = malloc(sizeof(float) * cap), *dy = malloc(sizeof(float) * cap);
    size_t n = 0;
    for (long k = 0; k < SWEEP_N; k++) x[n++] = (float)(-100.0 + (double)k * SWEEP_STEP);
    fill_uniform(dy, n, -2.0f, 2.0f, seed);
    for (uint32_t b = 0; b < 0x7f800000u; b += BITS_STRIDE)
        for (uint32_t sign = 0; sign < 2; sign++) {
            const uint32_t bits = b | (sign << 31);
            memcpy(&x[n++], &bits, sizeof bits);
        }
    for (size_t i = 0; i < n_special; i++) x[n++] = special[i];
    for (size_t i = SWEEP_N; i < n; i++) dy[i] = 1.0f;
    *x_out = x;
    *dy_out = dy;
    return n;
}

/* The forward in ulp of the exact value, the backward dy act'(x) in ulp of |dy| times the
 * sum of the magnitudes of act''s terms (ulp of the result for a one-term derivative). */
static void test_kernel(enum act_kind kind, float alpha)
{
    const struct act_ref *r = &refs[kind];
    float *x = NULL, *dy = NULL;
    const size_t n = kernel_inputs(&x, &dy, 17 + (uint64_t)kind);
    float *y = malloc(sizeof(float) * n), *dx = malloc(sizeof(float) * n);
    CHECK(activation_forward_cpu(y, x, kind, alpha, n) == 0);
    CHECK(activation_backward_cpu(dx, dy, x, kind, alpha, n, 0) == 0);
    struct worst wf = {0.0, 0.0f}, wb = {0.0, 0.0f};
    for (size_t i = 0; i < n; i++) {
        double scale;
        const double g = r->grad(&scale, x[i], (double)alpha);
        const double want = dy[i] * g, total = fabs((double)dy[i]) * scale;
        worst_add(&wf, x[i], ulp_err(y[i], r->value(x[i], (double)alpha)));
        worst_add(&wb, x[i], total > 0 ? fabs(dx[i] - want) / ulp32(total) : ulp_err(dx[i], want));
    }
    printf("%s alpha %g: forward %.3f ulp at %a (bound %.2f), backward %.3f ulp at %a "
           "(bound %.2f)\n", act_kind_name(kind), (double)alpha, wf.err, (double)wf.x, r->bound,
           wb.err, (double)wb.x, r->bound_grad);
    CHECK(wf.err <= r->bound);
    CHECK(wb.err <= r->bound_grad);
    free(x); free(y); free(dy); free(dx);
}

/* NaN in x or dy comes out NaN; infinities and the largest floats give the row's limits;
 * the accumulate flag keeps NaN and adds the rest. */
static void test_special_inputs(enum act_kind kind)
{
    const struct act_ref *r = &refs[kind];
    const float alpha = r->alphas[0];
    const float x[8] = {NAN, -NAN, 1.0f, -1.0f, INFINITY, -INFINITY, -FLT_MAX, FLT_MAX};
    float dy[8] = {1, 1, NAN, NAN, 1, 1, 1, 1}, y[8], dx[8];
    activation_forward_cpu(y, x, kind, alpha, 8);
    activation_backward_cpu(dx, dy, x, kind, alpha, 8, 0);
    int ok = isnan(y[0]) && isnan(y[1]);
    if (r->selects_dy)   /* NaN x is not > 0: dx 0; x = 1 passes dy, x = -1 gives 0 */
        ok &= dx[0] == 0.0f && dx[1] == 0.0f && isnan(dx[2]) && dx[3] == 0.0f;
    else
        ok &= isnan(dx[0]) && isnan(dx[1]) && isnan(dx[2]) && isnan(dx[3]);
    for (int i = 0; i < 4; i++) ok &= y[4 + i] == r->y_at[i] && dx[4 + i] == r->slope_at[i];
    float acc[8] = {5, 5, 5, 5, 5, 5, 5, 5};
    activation_backward_cpu(acc, dy, x, kind, alpha, 8, 1);
    ok &= (r->selects_dy ? acc[0] == 5.0f : isnan(acc[0])) && isnan(acc[2]);
    ok &= acc[7] == 5.0f + r->slope_at[3];
    if (!ok)
        fprintf(stderr, "  %s: y(+-inf, -+FLT_MAX) = %a %a %a %a, dx = %a %a %a %a\n",
                act_kind_name(kind), (double)y[4], (double)y[5], (double)y[6], (double)y[7],
                (double)dx[4], (double)dx[5], (double)dx[6], (double)dx[7]);
    CHECK(ok);
}

/* accumulate adds exactly what the plain call writes; 1 and 3 threads give the same bits;
 * so does every start offset (elements reached by the vector loop or its remainder). */
static void test_bits(enum act_kind kind, float alpha)
{
    const char *name = act_kind_name(kind);
    const size_t n = 100003;
    float *x = malloc(sizeof(float) * n), *dy = malloc(sizeof(float) * n);
    float *y1 = malloc(sizeof(float) * n), *y3 = malloc(sizeof(float) * n);
    float *g1 = malloc(sizeof(float) * n), *g3 = malloc(sizeof(float) * n);
    float *pre = malloc(sizeof(float) * n), *acc = malloc(sizeof(float) * n);
    fill_uniform(x, n, -8.0f, 8.0f, 5);
    fill_uniform(dy, n, -1.0f, 1.0f, 7);
    fill_uniform(pre, n, -1.0f, 1.0f, 11);
    const int before = omp_get_max_threads();
    omp_set_num_threads(1);
    activation_forward_cpu(y1, x, kind, alpha, n);
    activation_backward_cpu(g1, dy, x, kind, alpha, n, 0);
    omp_set_num_threads(3);
    activation_forward_cpu(y3, x, kind, alpha, n);
    activation_backward_cpu(g3, dy, x, kind, alpha, n, 0);
    memcpy(acc, pre, sizeof(float) * n);
    activation_backward_cpu(acc, dy, x, kind, alpha, n, 1);
    omp_set_num_threads(before);
    int same_threads = !memcmp(y1, y3, sizeof(float) * n) && !memcmp(g1, g3, sizeof(float) * n);
    int exact_acc = 1;
    for (size_t i = 0; i < n; i++) exact_acc &= acc[i] == pre[i] + g1[i];
    int same_offsets = 1;
    for (size_t off = 1; off < 16; off++) {
        activation_forward_cpu(y3, x + off, kind, alpha, 64);
        activation_backward_cpu(g3, dy + off, x + off, kind, alpha, 64, 0);
        same_offsets &= !memcmp(y3, y1 + off, sizeof(float) * 64);
        same_offsets &= !memcmp(g3, g1 + off, sizeof(float) * 64);
    }
    if (!(same_threads && exact_acc && same_offsets))
        fprintf(stderr, "  %s: threads %d accumulate %d offsets %d\n", name, same_threads,
                exact_acc, same_offsets);
    CHECK(same_threads);
    CHECK(exact_acc);
    CHECK(same_offsets);
    free(x); free(dy); free(y1); free(y3); free(g1); free(g3); free(pre); free(acc);
}

/* A value that is not a kind is refused, and nothing is written. */
static void test_unknown_kind(void)
{
    float x[4] = {1, 2, 3, 4}, y[4] = {7, 7, 7, 7}, dx[4] = {7, 7, 7, 7};
    CHECK(activation_forward_cpu(y, x, ACT_KIND_COUNT, 1.0f, 4) != 0);
    CHECK(activation_backward_cpu(dx, x, x, ACT_KIND_COUNT, 1.0f, 4, 0) != 0);
    CHECK(y[0] == 7 && y[3] == 7 && dx[0] == 7 && dx[3] == 7);
    CHECK(strcmp(act_kind_name(ACT_KIND_COUNT), "?") == 0);
}

int main(void)
{
    test_function("exp", f_exp, exp, BOUND_EXP);
    test_function("expm1", f_expm1, expm1, BOUND_EXPM1);
    test_function("erf", f_erf, erf, BOUND_ERF);
    test_function("erfc", f_erfc, erfc, BOUND_ERFC);
    test_exact_values();
    for (int k = 0; k < ACT_KIND_COUNT; k++) {
        const struct act_ref *r = &refs[k];
        CHECK(r->value != NULL && r->grad != NULL && r->n_alphas >= 1);   /* a row in between */
        if (!r->value || !r->grad) continue;
        for (int a = 0; a < r->n_alphas; a++) test_kernel((enum act_kind)k, r->alphas[a]);
        test_special_inputs((enum act_kind)k);
        test_bits((enum act_kind)k, r->alphas[0]);
    }
    test_unknown_kind();
    return check_finish("activation_math");
}

/* The CPU engine's branch-free fp32 math (kernels/cpu/vmath.h: exp, expm1, erf, erfc)
 * against double precision, and the celu and gelu kernels built on it against double
 * references. Errors are in units in the last place (ulp) of the exact result rounded to
 * fp32 (2^-149 for subnormal results); an exact result past the largest float must come
 * out +-inf. Inputs: every 1/1024 in [-100, 100], every 1021st fp32 bit pattern (all
 * magnitudes, subnormal inputs and results included) and the special values +-0, +-inf,
 * NaN. The bounds sit just above the maxima of exhaustive runs over all 2^32 inputs (exp
 * 1.01, expm1 1.46, erf 1.64, erfc 2.45 ulp) and over every fp32 x in [-112, 112] with
 * dy = 1 (celu alpha 0.3: 1.89 forward, 1.00 backward; gelu 2.82 forward, 2.71 backward
 * in the unit below). Also: NaN passes through every kernel, celu gives its limit far
 * down the negative side, the accumulate flag adds exactly what the plain call writes,
 * and the bits depend neither on the thread count nor on an element's position in the
 * array. */
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
#define BOUND_GELU_GRAD 3.5    /* in ulp of |dy| (|Phi| + |x phi|), see test_gelu */

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

/* The grid -100 .. 100 in steps of 1/1024 (above the kernels' parallel threshold). */
static float *grid(void)
{
    float *x = malloc(sizeof(float) * SWEEP_N);
    for (long k = 0; k < SWEEP_N; k++) x[k] = (float)(-100.0 + (double)k * SWEEP_STEP);
    return x;
}

/* Reproducible values in [lo, hi): a 64-bit LCG's top 24 bits. */
static void fill_uniform(float *p, size_t n, float lo, float hi, uint64_t seed)
{
    uint64_t s = seed;
    for (size_t i = 0; i < n; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        p[i] = lo + (hi - lo) * (float)(s >> 40) * 0x1p-24f;
    }
}

static void test_celu(float alpha)
{
    const size_t n = SWEEP_N;
    float *x = grid(), *y = malloc(sizeof(float) * n), *dy = malloc(sizeof(float) * n);
    float *dx = malloc(sizeof(float) * n);
    fill_uniform(dy, n, -2.0f, 2.0f, 17);
    activation_forward_cpu(y, x, ACT_CELU, alpha, n);
    activation_backward_cpu(dx, dy, x, ACT_CELU, alpha, n, 0);
    struct worst wf = {0.0, 0.0f}, wb = {0.0, 0.0f};
    for (size_t i = 0; i < n; i++) {
        const double v = x[i], q = v / (double)alpha;
        worst_add(&wf, x[i], ulp_err(y[i], v > 0 ? v : (double)alpha * expm1(q)));
        worst_add(&wb, x[i], ulp_err(dx[i], v > 0 ? (double)dy[i] : (double)dy[i] * exp(q)));
    }
    printf("celu alpha %g: forward %.3f ulp at %a, backward %.3f ulp at %a (bound %.2f)\n",
           (double)alpha, wf.err, (double)wf.x, wb.err, (double)wb.x, BOUND_CELU);
    CHECK(wf.err <= BOUND_CELU);
    CHECK(wb.err <= BOUND_CELU);
    free(x); free(y); free(dy); free(dx);
}

/* Phi(x) and phi(x) in double. */
static double ref_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }
static double ref_pdf(double x) { return exp(-0.5 * x * x) / 2.5066282746310002; }

/* gelu forward in ulp; the backward dy (Phi + x phi) in ulp of dy (|Phi| + |x phi|), since
 * the two terms cancel near x = -0.75 where the derivative crosses zero. */
static void test_gelu(void)
{
    const size_t n = SWEEP_N;
    float *x = grid(), *y = malloc(sizeof(float) * n), *dy = malloc(sizeof(float) * n);
    float *dx = malloc(sizeof(float) * n);
    fill_uniform(dy, n, -2.0f, 2.0f, 23);
    activation_forward_cpu(y, x, ACT_GELU, 0.0f, n);
    activation_backward_cpu(dx, dy, x, ACT_GELU, 0.0f, n, 0);
    struct worst wf = {0.0, 0.0f}, wb = {0.0, 0.0f};
    for (size_t i = 0; i < n; i++) {
        const double v = x[i], cdf = ref_cdf(v), xpdf = v * ref_pdf(v);
        worst_add(&wf, x[i], ulp_err(y[i], v * cdf));
        const double want = dy[i] * (cdf + xpdf);
        const double scale = fabs((double)dy[i]) * (fabs(cdf) + fabs(xpdf));
        worst_add(&wb, x[i], scale > 0 ? fabs(dx[i] - want) / ulp32(scale) : ulp_err(dx[i], want));
    }
    printf("gelu: forward %.3f ulp at %a (bound %.2f), backward %.3f ulp at %a (bound %.2f)\n",
           wf.err, (double)wf.x, BOUND_GELU, wb.err, (double)wb.x, BOUND_GELU_GRAD);
    CHECK(wf.err <= BOUND_GELU);
    CHECK(wb.err <= BOUND_GELU_GRAD);
    free(x); free(y); free(dy); free(dx);
}

/* NaN in x or dy comes out NaN; infinities and huge values give the functions' limits. */
static void test_special_inputs(void)
{
    const float x[8] = {NAN, -NAN, 1.0f, -1.0f, INFINITY, -INFINITY, -FLT_MAX, FLT_MAX};
    float dy[8] = {1, 1, NAN, NAN, 1, 1, 1, 1}, y[8], dx[8];
    activation_forward_cpu(y, x, ACT_CELU, 0.3f, 8);
    CHECK(isnan(y[0]) && isnan(y[1]));
    CHECK(y[4] == INFINITY && y[5] == -0.3f && y[6] == -0.3f && y[7] == FLT_MAX);
    activation_backward_cpu(dx, dy, x, ACT_CELU, 0.3f, 8, 0);
    CHECK(isnan(dx[0]) && isnan(dx[1]) && isnan(dx[2]) && isnan(dx[3]));
    CHECK(dx[4] == 1.0f && dx[5] == 0.0f && dx[6] == 0.0f && dx[7] == 1.0f);
    activation_forward_cpu(y, x, ACT_GELU, 0.0f, 8);   /* the limits at +-inf */
    CHECK(isnan(y[0]) && isnan(y[1]));
    CHECK(y[4] == INFINITY && y[5] == 0.0f && y[6] == 0.0f && y[7] == FLT_MAX);
    activation_backward_cpu(dx, dy, x, ACT_GELU, 0.0f, 8, 0);
    CHECK(isnan(dx[0]) && isnan(dx[1]) && isnan(dx[2]) && isnan(dx[3]));
    CHECK(dx[4] == 1.0f && dx[5] == 0.0f && dx[6] == 0.0f && dx[7] == 1.0f);
    float acc[8] = {0}, pre[8] = {5, 5, 5, 5, 5, 5, 5, 5};
    memcpy(acc, pre, sizeof acc);
    activation_backward_cpu(acc, dy, x, ACT_CELU, 0.3f, 8, 1);
    CHECK(isnan(acc[0]) && isnan(acc[2]) && acc[7] == 6.0f);
}

/* celu far down the negative side gives its limit -alpha with slope 0, as at -inf: the
 * remainder of x / alpha, which grows with x, must not reach exp and expm1. */
static void test_celu_far_negative(float alpha)
{
    const float x[6] = {-1e30f, -0x1.336052p+45f, -1e10f, -3e6f * alpha, -FLT_MAX, -1e7f};
    float y[6], dx[6], dy[6] = {1, 1, 1, 1, 1, 1};
    activation_forward_cpu(y, x, ACT_CELU, alpha, 6);
    activation_backward_cpu(dx, dy, x, ACT_CELU, alpha, 6, 0);
    int ok = 1;
    for (int i = 0; i < 6; i++) ok &= y[i] == -alpha && dx[i] == 0.0f;
    if (!ok)
        fprintf(stderr, "  celu alpha %g at -1e30: %g, slope %g\n", (double)alpha, (double)y[0],
                (double)dx[0]);
    CHECK(ok);
}

/* accumulate adds exactly what the plain call writes; 1 and 3 threads give the same bits;
 * so does every start offset (elements reached by the vector loop or its remainder). */
static void test_bits(enum act_kind kind, float alpha, const char *name)
{
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

int main(void)
{
    test_function("exp", f_exp, exp, BOUND_EXP);
    test_function("expm1", f_expm1, expm1, BOUND_EXPM1);
    test_function("erf", f_erf, erf, BOUND_ERF);
    test_function("erfc", f_erfc, erfc, BOUND_ERFC);
    test_exact_values();
    test_celu(0.3f);
    test_celu(1.0f);
    test_celu(2.5f);
    test_gelu();
    test_special_inputs();
    test_celu_far_negative(0.3f);
    test_celu_far_negative(2.5f);
    test_bits(ACT_CELU, 0.3f, "celu");
    test_bits(ACT_GELU, 0.0f, "gelu");
    return check_finish("activation_math");
}

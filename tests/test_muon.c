/* Muon's CPU twin (kernels/muon.h, kernels/cpu/muon.c) against plain references:
 *   - the Newton-Schulz orthogonalisation of small random matrices against the same map
 *     computed from an SVD (one-sided Jacobi, in double, below): for u = U S V^T the
 *     iteration gives U p(S / (||u|| + eps)) V^T, p the quintic iterated `steps` times;
 *   - the singular values of the result (Jacobi again) land in the published band: with
 *     the coefficients (3.4445, -4.7750, 2.0315) every singular value of at least 1 % of
 *     ||u|| ends in [0.68, 1.14] after 5 iterations; the band is measured and printed;
 *   - a full step (momentum, Nesterov, renormalisation, update) and several steps in a row
 *     against a straightforward implementation written from the contract;
 *   - the multi-tensor step through the CPU engine's table: lr from the table times
 *     lr_scale, an item past its train_epochs left alone. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/muon.h"
#include "kernels/plan.h"

/* A reproducible uniform draw in [-1, 1) (xorshift64*). */
static double draw(uint64_t *s)
{
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return (double)((*s * 2685821657736338717ull) >> 11) / 4503599627370496.0 - 1.0;
}

static void fill(float *x, size_t n, uint64_t *s, double scale)
{
    for (size_t i = 0; i < n; i++) x[i] = (float)(scale * draw(s));
}

/* One-sided Jacobi SVD of a (m, n), m >= n, row-major, in double: on return a's columns
 * are U's columns times the singular values, s[j] their norms, v (n, n) row-major the
 * right singular vectors (a = U diag(s) V^T). */
static void jacobi_svd(double *a, double *v, double *s, int m, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) v[i * n + j] = i == j;
    for (int sweep = 0; sweep < 60; sweep++) {
        double off = 0.0;
        for (int p = 0; p < n - 1; p++)
            for (int q = p + 1; q < n; q++) {
                double al = 0, be = 0, ga = 0;
                for (int i = 0; i < m; i++) {
                    al += a[i * n + p] * a[i * n + p];
                    be += a[i * n + q] * a[i * n + q];
                    ga += a[i * n + p] * a[i * n + q];
                }
                if (ga == 0.0) continue;
                const double r = fabs(ga) / sqrt(al * be);
                if (r > off) off = r;
                const double zeta = (be - al) / (2.0 * ga);
                const double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1.0 + zeta * zeta));
                const double c = 1.0 / sqrt(1.0 + t * t), sn = c * t;
                for (int i = 0; i < m; i++) {
                    const double x = a[i * n + p], y = a[i * n + q];
                    a[i * n + p] = c * x - sn * y;
                    a[i * n + q] = sn * x + c * y;
                }
                for (int i = 0; i < n; i++) {
                    const double x = v[i * n + p], y = v[i * n + q];
                    v[i * n + p] = c * x - sn * y;
                    v[i * n + q] = sn * x + c * y;
                }
            }
        if (off < 1e-15) break;
    }
    for (int j = 0; j < n; j++) {
        double q = 0;
        for (int i = 0; i < m; i++) q += a[i * n + j] * a[i * n + j];
        s[j] = sqrt(q);
    }
}

/* Singular values (any order) of x (rows, cols) in double. */
static void singular_values(double *s, const float *x, int rows, int cols)
{
    const int tr = rows < cols, m = tr ? cols : rows, n = tr ? rows : cols;
    double *a = malloc(sizeof(double) * (size_t)m * n), *v = malloc(sizeof(double) * n * n);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            a[tr ? j * n + i : i * n + j] = x[i * cols + j];
    jacobi_svd(a, v, s, m, n);
    free(a);
    free(v);
}

/* The published quintic iterated steps times on x. */
static double quintic(double x, const struct muon_ns *ns)
{
    for (int k = 0; k < ns->steps; k++) {
        const double x2 = x * x;
        x = ns->a * x + ns->b * x2 * x + ns->c * x2 * x2 * x;
    }
    return x;
}

/* The reference orthogonalisation through the SVD of u (rows, cols): U p(S / (||u|| + eps))
 * V^T in double; in[i] gets each singular value divided by ||u|| + eps. */
static void svd_reference(double *out, double *in, const float *u, int rows, int cols,
                          const struct muon_ns *ns)
{
    const int tr = rows < cols, m = tr ? cols : rows, n = tr ? rows : cols;
    double *a = malloc(sizeof(double) * (size_t)m * n), *v = malloc(sizeof(double) * n * n);
    double *s = malloc(sizeof(double) * n), norm = 0;
    for (int i = 0; i < rows * cols; i++) norm += (double)u[i] * u[i];
    norm = sqrt(norm) + ns->eps;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            a[tr ? j * n + i : i * n + j] = u[i * cols + j];
    jacobi_svd(a, v, s, m, n);
    /* a's column j is U_j s_j: out = sum_j U_j (p(s_j / norm) / s_j) V_j^T */
    for (int i = 0; i < rows * cols; i++) out[i] = 0.0;
    for (int j = 0; j < n; j++) {
        in[j] = s[j] / norm;
        const double f = s[j] > 0 ? quintic(in[j], ns) / s[j] : 0.0;
        for (int r = 0; r < m; r++)
            for (int c = 0; c < n; c++) {
                const double e = a[r * n + j] * f * v[c * n + j];   /* (m, n) entry */
                if (tr) out[c * cols + r] += e;
                else out[r * cols + c] += e;
            }
    }
    free(a);
    free(v);
    free(s);
}

static void sort_doubles(double *x, int n)
{
    for (int j = 1; j < n; j++)
        for (int i = j; i > 0 && x[i] < x[i - 1]; i--) {
            const double t = x[i];
            x[i] = x[i - 1];
            x[i - 1] = t;
        }
}

static const int shapes[][2] = {{8, 8}, {6, 20}, {20, 6}, {16, 48}, {33, 7}, {64, 216}};
#define N_SHAPES ((int)(sizeof(shapes) / sizeof(shapes[0])))

static void test_orthogonalize(void)
{
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    double band_lo = 1e9, band_hi = 0, worst = 0;
    for (int steps = 3; steps <= 5; steps += 2)
        for (int k = 0; k < N_SHAPES; k++) {
            const int rows = shapes[k][0], cols = shapes[k][1], n = rows < cols ? rows : cols;
            const size_t count = (size_t)rows * cols;
            struct muon_ns ns = muon_ns_default();
            ns.steps = steps;
            float *u = malloc(count * sizeof(float)), *out = malloc(count * sizeof(float));
            float *scratch = malloc(muon_scratch_floats(rows, cols) * sizeof(float));
            double *ref = malloc(count * sizeof(double)), *in = malloc(n * sizeof(double));
            double *sv = malloc(n * sizeof(double));
            fill(u, count, &seed, 0.01);
            CHECK(muon_orthogonalize_cpu(out, u, scratch, &ns, rows, cols) == DR_OK);
            svd_reference(ref, in, u, rows, cols, &ns);
            double err = 0, big = 0;
            for (size_t i = 0; i < count; i++) {
                err = fmax(err, fabs(out[i] - ref[i]));
                big = fmax(big, fabs(ref[i]));
            }
            worst = fmax(worst, err / big);
            if (!(err <= 2e-5 * big))
                printf("  %dx%d, %d steps: max error %.3g of max %.3g\n", rows, cols, steps,
                       err, big);
            CHECK(err <= 2e-5 * big);
            /* the result's singular values are the p(in_j) (as sets: p is not monotone,
               so both lists are sorted); those of a matrix whose singular values are all
               at least 1 % of ||u|| lie in the band, and none exceeds p's maximum, 1.2024 */
            singular_values(sv, out, rows, cols);
            double *pv = malloc(n * sizeof(double)), in_min = 1e9, dev = 0;
            for (int j = 0; j < n; j++) {
                pv[j] = quintic(in[j], &ns);
                in_min = fmin(in_min, in[j]);
            }
            sort_doubles(pv, n);
            sort_doubles(sv, n);
            for (int j = 0; j < n; j++) dev = fmax(dev, fabs(sv[j] - pv[j]));
            CHECK(dev <= 1e-4);
            CHECK(sv[n - 1] <= 1.2024);
            if (steps == 5 && in_min >= 0.01) {
                band_lo = fmin(band_lo, sv[0]);
                band_hi = fmax(band_hi, sv[n - 1]);
                CHECK(sv[0] >= 0.68 && sv[n - 1] <= 1.14);
            }
            free(pv);
            free(u);
            free(out);
            free(scratch);
            free(ref);
            free(in);
            free(sv);
        }
    printf("  Newton-Schulz against the SVD: largest error %.3g of the largest entry\n", worst);
    printf("  5 steps, singular values of inputs >= 1 %% of the norm: [%.4f, %.4f]\n", band_lo,
           band_hi);
    CHECK(band_lo >= 0.68 && band_hi <= 1.14 && band_lo < band_hi);
}

/* Muon's step as written in the contract, plainly: naive products, double sums. */
static void reference_step(float *w, float *v, const float *g, float lr, float momentum,
                           int nesterov, const struct muon_ns *ns, int rows, int cols)
{
    const int tr = rows > cols, p = tr ? cols : rows, q = tr ? rows : cols;
    const size_t count = (size_t)rows * cols;
    float *u = malloc(count * sizeof(float)), *x = malloc(count * sizeof(float));
    float *y = malloc(count * sizeof(float)), *a = malloc((size_t)p * p * sizeof(float));
    float *b = malloc((size_t)p * p * sizeof(float));
    double un = 0, wn = 0;
    for (size_t i = 0; i < count; i++) {
        v[i] = momentum * v[i] + g[i];
        u[i] = nesterov ? g[i] + momentum * v[i] : v[i];
        un += (double)u[i] * u[i];
        wn += (double)w[i] * w[i];
    }
    if (ns->normalize && wn > 0) {
        const float s = (float)(sqrt((double)rows) / sqrt(wn));
        for (size_t i = 0; i < count; i++) w[i] *= s;
    }
    const float den = (float)(sqrt(un) + ns->eps);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) x[tr ? j * q + i : i * q + j] = u[i * cols + j] / den;
    for (int s = 0; s < ns->steps; s++) {
        for (int i = 0; i < p; i++)
            for (int j = 0; j < p; j++) {
                double acc = 0;
                for (int l = 0; l < q; l++) acc += (double)x[i * q + l] * x[j * q + l];
                a[i * p + j] = (float)acc;
            }
        for (int i = 0; i < p; i++)
            for (int j = 0; j < p; j++) {
                double acc = 0;
                for (int l = 0; l < p; l++) acc += (double)a[i * p + l] * a[l * p + j];
                b[i * p + j] = (float)(ns->b * (double)a[i * p + j] + ns->c * acc);
            }
        for (int i = 0; i < p; i++)
            for (int j = 0; j < q; j++) {
                double acc = 0;
                for (int l = 0; l < p; l++) acc += (double)b[i * p + l] * x[l * q + j];
                y[i * q + j] = (float)(ns->a * (double)x[i * q + j] + acc);
            }
        memcpy(x, y, count * sizeof(float));
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) w[i * cols + j] -= lr * x[tr ? j * q + i : i * q + j];
    free(u);
    free(x);
    free(y);
    free(a);
    free(b);
}

static void test_step(void)
{
    uint64_t seed = 12345;
    const int cases[][4] = {/* rows, cols, nesterov, normalize */
                            {16, 48, 1, 1}, {48, 16, 1, 1}, {12, 12, 0, 1}, {24, 9, 1, 0},
                            {64, 216, 1, 1}};
    double worst = 0;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const int rows = cases[c][0], cols = cases[c][1];
        const size_t count = (size_t)rows * cols;
        struct muon_ns ns = muon_ns_default();
        ns.steps = 3 + (int)c % 3;
        ns.normalize = cases[c][3];
        float *w = malloc(count * sizeof(float)), *v = calloc(count, sizeof(float));
        float *dw = malloc(count * sizeof(float)), *rw = malloc(count * sizeof(float));
        float *rv = calloc(count, sizeof(float)), *g = malloc(count * sizeof(float));
        float *scratch = malloc(muon_scratch_floats(rows, cols) * sizeof(float));
        fill(w, count, &seed, 0.3);
        memcpy(rw, w, count * sizeof(float));
        for (int step = 0; step < 3; step++) {
            const float lr = 0.24f * (1.0f - (float)step / 8.0f);
            fill(g, count, &seed, 5.0);
            memcpy(dw, g, count * sizeof(float));
            CHECK(muon_step_cpu(w, v, dw, scratch, lr, 0.6f, cases[c][2], &ns, rows, cols) ==
                  DR_OK);
            reference_step(rw, rv, g, lr, 0.6f, cases[c][2], &ns, rows, cols);
            CHECK(memcmp(v, rv, count * sizeof(float)) == 0);   /* elementwise: exact */
            double err = 0, big = 0, wn = 0;
            for (size_t i = 0; i < count; i++) {
                err = fmax(err, fabs((double)w[i] - rw[i]));
                big = fmax(big, fabs((double)rw[i]));
                wn += (double)w[i] * w[i];
            }
            worst = fmax(worst, err / big);
            CHECK(err <= 1e-5 * big);
            /* with renormalisation the weight stays near norm sqrt(rows): the step of
               norm about lr * sqrt(min(rows, cols)) is small against it */
            if (ns.normalize) CHECK(fabs(sqrt(wn) - sqrt((double)rows)) < lr * sqrt(rows) + 1);
        }
        free(w);
        free(v);
        free(dw);
        free(rw);
        free(rv);
        free(g);
        free(scratch);
    }
    printf("  full steps against the plain reference: largest error %.3g of the largest "
           "weight\n", worst);
}

static void test_multi(void)
{
    struct backend be = {0};
    uint64_t seed = 777;
    CHECK(backend_cpu_create(&be, 0) == DR_OK);
    if (!be.ops) return;
    void *ctx = be.ctx;
    struct tensor w[2] = {{NULL, TENSOR_PARAM, 8, 3, 3, 3}, {NULL, TENSOR_PARAM, 4, 6, 1, 1}};
    struct tensor v[2] = {w[0], w[1]}, dw[2] = {w[0], w[1]};
    struct tensor table = {NULL, TENSOR_F32, 3, 1, 1, 1};
    struct tensor cursor = {NULL, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1};
    const float lrs[3] = {0.5f, 0.25f, 0.125f};
    const int32_t at[PLAN_CURSOR_LEN] = {[CURSOR_STEP] = 1, [CURSOR_EPOCH] = 2};
    struct sgd_item items[2];
    float *before[2], *grad[2];
    for (int k = 0; k < 2; k++) {
        const size_t n = tensor_count(&w[k]);
        CHECK(be.ops->tensor_alloc(ctx, &w[k]) == DR_OK);
        CHECK(be.ops->tensor_alloc(ctx, &v[k]) == DR_OK);
        CHECK(be.ops->tensor_alloc(ctx, &dw[k]) == DR_OK);
        before[k] = malloc(n * sizeof(float));
        grad[k] = malloc(n * sizeof(float));
        fill(before[k], n, &seed, 0.5);
        fill(grad[k], n, &seed, 1.0);
        CHECK(be.ops->tensor_write(ctx, &w[k], before[k]) == DR_OK);
        CHECK(be.ops->tensor_write(ctx, &dw[k], grad[k]) == DR_OK);
        items[k] = (struct sgd_item){&w[k], &v[k], &dw[k], k == 0 ? 2.0 : 1.0, 0.0f,
                                     k == 0 ? 0 : 2};
    }
    CHECK(be.ops->tensor_alloc(ctx, &table) == DR_OK);
    CHECK(be.ops->tensor_alloc(ctx, &cursor) == DR_OK);
    CHECK(be.ops->tensor_write(ctx, &table, lrs) == DR_OK);
    CHECK(be.ops->tensor_write(ctx, &cursor, at) == DR_OK);
    struct muon_ns ns = muon_ns_default();
    const union plan_params par = {.muon = {items, 2, 0.6f, 1, ns}};
    CHECK(plan_run_op(&be, PLAN_MUON, NULL, 0, PLAN_SRCS(&table, &cursor), 0, &par) == DR_OK);
    /* item 0: lr 0.25 * 2; item 1 trains for 2 epochs and the cursor is in epoch 2 */
    float got[216], rv[216] = {0};
    CHECK(be.ops->tensor_read(ctx, got, &w[0]) == DR_OK);
    reference_step(before[0], rv, grad[0], 0.5f, 0.6f, 1, &ns, 8, 27);
    double err = 0;
    for (int i = 0; i < 216; i++) err = fmax(err, fabs((double)got[i] - before[0][i]));
    CHECK(err < 1e-5);
    CHECK(be.ops->tensor_read(ctx, got, &w[1]) == DR_OK);
    CHECK(memcmp(got, before[1], 24 * sizeof(float)) == 0);
    /* a cursor outside the table is refused */
    const int32_t past[PLAN_CURSOR_LEN] = {[CURSOR_STEP] = 3};
    CHECK(be.ops->tensor_write(ctx, &cursor, past) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_MUON, NULL, 0, PLAN_SRCS(&table, &cursor), 0, &par) != DR_OK);
    for (int k = 0; k < 2; k++) {
        be.ops->tensor_free(ctx, &w[k]);
        be.ops->tensor_free(ctx, &v[k]);
        be.ops->tensor_free(ctx, &dw[k]);
        free(before[k]);
        free(grad[k]);
    }
    be.ops->tensor_free(ctx, &table);
    be.ops->tensor_free(ctx, &cursor);
    backend_destroy(&be);
}

int main(void)
{
    test_orthogonalize();
    test_step();
    test_multi();
    return check_finish("test_muon");
}

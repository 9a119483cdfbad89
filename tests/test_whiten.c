/* The patch-whitening maths (engine/core/whiten.h) and the dirac start of a conv
 * (engine/core/init.h): the Jacobi eigen-solver on known and random matrices, the patch
 * covariance against a direct computation and against numpy (tests/vectors/gen_whiten.py),
 * the whitening property of the filters, and, when DAWNRUN_DATA is set, the filters of
 * real training images. */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/core/data.h"
#include "engine/core/init.h"
#include "base/status.h"
#include "engine/core/whiten.h"
#include "kernels/augment.h"
#include "vectors/whiten_vectors.h"

#define S AUGMENT_IMAGE
#define PLANE (S * S)
#define IMG_BYTES (AUGMENT_CHANNELS * PLANE)
#define DMAX (3 * 7 * 7)
#define PI 3.14159265358979323846
#define SQRT1_2 0.70710678118654752440

static const float MEAN[3] = {AUGMENT_MEAN_R, AUGMENT_MEAN_G, AUGMENT_MEAN_B};
static const float STDV[3] = {AUGMENT_STD_R, AUGMENT_STD_G, AUGMENT_STD_B};

/* The synthetic images of gen_whiten.py: ramps plus LCG noise. */
static void synthetic_images(uint8_t *img /* (count, 3, 32, 32) */, int count)
{
    uint32_t s = 12345u;
    for (int i = 0; i < count; i++)
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < S; y++)
                for (int x = 0; x < S; x++) {
                    s = s * 1664525u + 1013904223u;
                    img[(size_t)i * IMG_BYTES + c * PLANE + y * S + x] =
                        (uint8_t)((c * 40 + y * 5 + x * 3 + i * 17 + (int)(s >> 28)) & 255);
                }
}

/* Uniform in [-1, 1) from an LCG. */
static double lcg_unit(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return (double)(*s >> 8) / 8388608.0 - 1.0;
}

/* Checks the eigen-decomposition of a: ordering, orthonormal rows, the sign rule and
 * a = Vᵀ diag(λ) V, all to tol relative to the largest |a| entry. */
static void check_decomposition(const double *values, const double *vecs, const double *a, int d,
                                double tol)
{
    double amax = 0.0;
    for (int e = 0; e < d * d; e++) amax = fmax(amax, fabs(a[e]));
    if (amax == 0.0) amax = 1.0;
    int ordered = 1, signs = 1;
    double ortho = 0.0, recon = 0.0;
    for (int i = 0; i < d; i++) {
        if (i > 0 && values[i] > values[i - 1]) ordered = 0;
        const double *v = vecs + (size_t)i * d;
        int best = 0;
        for (int e = 1; e < d; e++)
            if (fabs(v[e]) > fabs(v[best])) best = e;
        if (!(v[best] > 0.0)) signs = 0;
        for (int j = 0; j < d; j++) {
            double dot = 0.0, r = 0.0;
            for (int e = 0; e < d; e++) {
                dot += v[e] * vecs[(size_t)j * d + e];
                r += vecs[(size_t)e * d + i] * values[e] * vecs[(size_t)e * d + j];
            }
            ortho = fmax(ortho, fabs(dot - (i == j ? 1.0 : 0.0)));
            recon = fmax(recon, fabs(r - a[(size_t)i * d + j]) / amax);
        }
    }
    CHECK(ordered);
    CHECK(signs);
    CHECK(ortho < 1e-12);
    CHECK(recon < tol);
    if (ortho >= 1e-12 || recon >= tol)
        printf("  d = %d: orthonormality error %.3g, reconstruction error %.3g\n", d, ortho, recon);
}

/* A random symmetric positive definite d×d matrix B Bᵀ / d + shift I. */
static void random_spd(double *a /* (d, d) */, int d, uint32_t seed, double shift)
{
    double *b = malloc(sizeof(double) * (size_t)d * d);
    if (!b) return;
    for (int e = 0; e < d * d; e++) b[e] = lcg_unit(&seed);
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double s = 0.0;
            for (int e = 0; e < d; e++) s += b[(size_t)i * d + e] * b[(size_t)j * d + e];
            a[(size_t)i * d + j] = s / d + (i == j ? shift : 0.0);
        }
    free(b);
}

static void test_eigen_known(void)
{
    double values[DMAX], vecs[DMAX * DMAX];

    /* Diagonal: the eigenvalues sorted, unit vectors as eigenvectors. */
    const double diag[16] = {3, 0, 0, 0, 0, -1, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0};
    CHECK(whiten_eigen(values, vecs, diag, 4) == DR_OK);
    const double want_v[4] = {5, 3, 0, -1};
    const int want_e[4] = {2, 0, 3, 1};
    for (int i = 0; i < 4; i++) {
        CHECK(values[i] == want_v[i]);
        for (int e = 0; e < 4; e++) CHECK(vecs[i * 4 + e] == (e == want_e[i] ? 1.0 : 0.0));
    }

    /* [[2, 1], [1, 2]]: eigenvalues 3 and 1, (1, 1)/√2 and the tie (1, -1)/√2, which the
     * sign rule makes positive in its first component. */
    const double two[4] = {2, 1, 1, 2};
    CHECK(whiten_eigen(values, vecs, two, 2) == DR_OK);
    CHECK_NEAR(values[0], 3.0, 1e-15);
    CHECK_NEAR(values[1], 1.0, 1e-15);
    CHECK_NEAR(vecs[0], SQRT1_2, 1e-15);
    CHECK_NEAR(vecs[1], SQRT1_2, 1e-15);
    CHECK_NEAR(vecs[2], SQRT1_2, 1e-15);
    CHECK_NEAR(vecs[3], -SQRT1_2, 1e-15);

    /* A rotated diag(4, 1) by 30°: eigenvectors (cos, sin) and (-sin, cos), signed. */
    const double c = cos(PI / 6), s = sin(PI / 6);
    const double rot[4] = {4 * c * c + s * s, 3 * c * s, 3 * c * s, 4 * s * s + c * c};
    CHECK(whiten_eigen(values, vecs, rot, 2) == DR_OK);
    CHECK_NEAR(values[0], 4.0, 1e-14);
    CHECK_NEAR(values[1], 1.0, 1e-14);
    CHECK_NEAR(vecs[0], c, 1e-14);
    CHECK_NEAR(vecs[1], s, 1e-14);
    CHECK_NEAR(vecs[2], -s, 1e-14);  /* (-sin, cos): cos is the larger component */
    CHECK_NEAR(vecs[3], c, 1e-14);

    /* 1×1 and the zero matrix. */
    const double one = -2.5;
    CHECK(whiten_eigen(values, vecs, &one, 1) == DR_OK);
    CHECK(values[0] == -2.5 && vecs[0] == 1.0);
    static const double zero[9];
    CHECK(whiten_eigen(values, vecs, zero, 3) == DR_OK);
    CHECK(values[0] == 0.0 && values[2] == 0.0);
    check_decomposition(values, vecs, zero, 3, 1e-15);

    /* Non-finite input and a bad size are reported, not looped on. */
    double bad[4] = {1, NAN, NAN, 1};
    printf("expect two whiten_eigen errors:\n");
    CHECK(whiten_eigen(values, vecs, bad, 2) == DR_ERR_INTERNAL);
    CHECK(whiten_eigen(values, vecs, bad, 0) == DR_ERR_INTERNAL);
}

static void test_eigen_random(void)
{
    static double a[DMAX * DMAX], values[DMAX], vecs[DMAX * DMAX];
    const int sizes[4] = {12, 27, 75, 147};
    for (int t = 0; t < 4; t++) {
        const int d = sizes[t];
        random_spd(a, d, 1000u + (uint32_t)d, 1e-3);
        CHECK(whiten_eigen(values, vecs, a, d) == DR_OK);
        check_decomposition(values, vecs, a, d, 1e-10);
        CHECK(values[d - 1] > 0.0);
        double trace = 0.0, sum = 0.0;
        for (int i = 0; i < d; i++) {
            trace += a[(size_t)i * d + i];
            sum += values[i];
        }
        CHECK_NEAR(sum, trace, 1e-11 * trace);
    }

    /* Repeated eigenvalues: I + u uᵀ has 2 once and 1 d - 1 times. */
    const int d = 27;
    double u[27], norm = 0.0;
    uint32_t seed = 77u;
    for (int i = 0; i < d; i++) {
        u[i] = lcg_unit(&seed);
        norm += u[i] * u[i];
    }
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) a[i * d + j] = u[i] * u[j] / norm + (i == j ? 1.0 : 0.0);
    CHECK(whiten_eigen(values, vecs, a, d) == DR_OK);
    CHECK_NEAR(values[0], 2.0, 1e-13);
    for (int i = 1; i < d; i++) CHECK_NEAR(values[i], 1.0, 1e-13);
    check_decomposition(values, vecs, a, d, 1e-12);

    /* An indefinite symmetric matrix: negative eigenvalues sort last. */
    random_spd(a, d, 5u, -0.5);
    CHECK(whiten_eigen(values, vecs, a, d) == DR_OK);
    CHECK(values[d - 1] < 0.0 && values[0] > 0.0);
    check_decomposition(values, vecs, a, d, 1e-10);
}

/* The covariance computed the obvious way: every patch, every pair, straight sums. */
static void naive_covariance(double *cov /* (d, d) */, const uint8_t *images, int count, int k)
{
    const int d = 3 * k * k, side = S - k + 1;
    double p[DMAX];
    memset(cov, 0, sizeof(double) * (size_t)d * d);
    for (int i = 0; i < count; i++)
        for (int y = 0; y < side; y++)
            for (int x = 0; x < side; x++) {
                int e = 0;
                for (int c = 0; c < 3; c++)
                    for (int dy = 0; dy < k; dy++)
                        for (int dx = 0; dx < k; dx++) {
                            const uint8_t v = images[(size_t)i * IMG_BYTES + c * PLANE +
                                                     (y + dy) * S + x + dx];
                            p[e++] = (double)(((float)v - MEAN[c]) / STDV[c]);
                        }
                for (int r = 0; r < d; r++)
                    for (int q = 0; q < d; q++) cov[r * d + q] += p[r] * p[q];
            }
    for (int e = 0; e < d * d; e++) cov[e] /= (double)count * side * side;
}

static void test_covariance(void)
{
    enum { COUNT = 70 };  /* more images than covariance blocks */
    uint8_t *images = malloc((size_t)COUNT * IMG_BYTES);
    static double cov[DMAX * DMAX], ref[DMAX * DMAX], again[DMAX * DMAX];
    static double values[DMAX], vecs[DMAX * DMAX];
    CHECK(images != NULL);
    if (!images) return;
    synthetic_images(images, COUNT);

    /* Against the direct computation, including k = 1 and the largest k = 7. */
    const int ks[5] = {1, 2, 3, 5, 7};
    const int counts[5] = {COUNT, 3, COUNT, 2, 1};
    for (int t = 0; t < 5; t++) {
        const int k = ks[t], d = 3 * k * k;
        CHECK(whiten_covariance(cov, images, counts[t], k) == DR_OK);
        naive_covariance(ref, images, counts[t], k);
        double err = 0.0;
        int symmetric = 1;
        for (int r = 0; r < d; r++)
            for (int q = 0; q < d; q++) {
                err = fmax(err, fabs(cov[r * d + q] - ref[r * d + q]));
                symmetric &= cov[r * d + q] == cov[q * d + r];
            }
        CHECK(err < 1e-12);
        CHECK(symmetric);
        if (err >= 1e-12) printf("  k = %d: covariance differs by %.3g\n", k, err);
    }

    /* The same bits whatever the number of threads. */
    const int threads = omp_get_max_threads();
    CHECK(whiten_covariance(cov, images, COUNT, 3) == DR_OK);
    omp_set_num_threads(1);
    CHECK(whiten_covariance(again, images, COUNT, 3) == DR_OK);
    CHECK(memcmp(cov, again, sizeof(double) * 27 * 27) == 0);
    omp_set_num_threads(3);
    CHECK(whiten_covariance(again, images, COUNT, 3) == DR_OK);
    CHECK(memcmp(cov, again, sizeof(double) * 27 * 27) == 0);
    omp_set_num_threads(threads);

    /* Against numpy (gen_whiten.py): covariance entries, eigenvalues, k = 2 eigenvectors. */
    CHECK(whiten_covariance(cov, images, VEC_WHITEN_COUNT, 2) == DR_OK);
    CHECK_NEAR(cov[0], VEC_WHITEN_COV_K2[0], 1e-13);
    CHECK_NEAR(cov[1], VEC_WHITEN_COV_K2[1], 1e-13);
    CHECK_NEAR(cov[5 * 12 + 11], VEC_WHITEN_COV_K2[2], 1e-13);
    CHECK_NEAR(cov[11 * 12 + 11], VEC_WHITEN_COV_K2[3], 1e-13);
    CHECK(whiten_eigen(values, vecs, cov, 12) == DR_OK);
    double ev = 0.0, vv = 0.0;
    for (int i = 0; i < 12; i++) {
        ev = fmax(ev, fabs(values[i] - VEC_WHITEN_VALUES_K2[i]));
        for (int e = 0; e < 12; e++)
            vv = fmax(vv, fabs(vecs[i * 12 + e] - VEC_WHITEN_VECS_K2[i * 12 + e]));
    }
    CHECK(ev < 1e-12);
    CHECK(vv < 1e-9);
    CHECK(whiten_covariance(cov, images, VEC_WHITEN_COUNT, 3) == DR_OK);
    CHECK(whiten_eigen(values, vecs, cov, 27) == DR_OK);
    ev = 0.0;
    for (int i = 0; i < 27; i++) ev = fmax(ev, fabs(values[i] - VEC_WHITEN_VALUES_K3[i]));
    CHECK(ev < 1e-12);
    printf("numpy reference: eigenvalue difference %.3g (k = 3), eigenvector difference %.3g "
           "(k = 2)\n", ev, vv);

    printf("expect two whiten_covariance errors:\n");
    CHECK(whiten_covariance(cov, images, 0, 3) == DR_ERR_INTERNAL);
    CHECK(whiten_covariance(cov, images, 1, 33) == DR_ERR_INTERNAL);
    free(images);
}

/* W C Wᵀ for the d filters w (fp32, d×d) and the covariance c must be
 * diag(λ / (λ + eps)); returns the largest deviation. */
static double whitening_error(const float *w, const double *c, const double *values, int d,
                              float eps)
{
    double worst = 0.0;
    for (int i = 0; i < d; i++)
        for (int j = 0; j < d; j++) {
            double s = 0.0;
            for (int r = 0; r < d; r++) {
                double cw = 0.0;
                for (int q = 0; q < d; q++) cw += c[(size_t)r * d + q] * w[(size_t)j * d + q];
                s += w[(size_t)i * d + r] * cw;
            }
            const double want = i == j ? values[i] / (values[i] + (double)eps) : 0.0;
            worst = fmax(worst, fabs(s - want));
        }
    return worst;
}

/* Filters of `count` images for (k, eps): finite, exact negations, eigenvector rows, and
 * the whitening property. */
static void check_filters(const uint8_t *images, int count, int k, float eps, const char *what)
{
    const int d = 3 * k * k;
    static float w[DMAX * DMAX], wn[2 * DMAX * DMAX];
    static double cov[DMAX * DMAX], values[DMAX], vecs[DMAX * DMAX];
    CHECK(whiten_filters(w, images, count, k, eps, 0) == DR_OK);
    CHECK(whiten_filters(wn, images, count, k, eps, 1) == DR_OK);
    CHECK(whiten_covariance(cov, images, count, k) == DR_OK);
    CHECK(whiten_eigen(values, vecs, cov, d) == DR_OK);
    int finite = 1, negated = 1, rows = 1;
    for (int e = 0; e < d * d; e++) {
        finite &= isfinite(w[e]);
        negated &= wn[e] == w[e] && wn[d * d + e] == -w[e];
        const double want = vecs[e] / sqrt(values[e / d] + (double)eps);
        rows &= fabs(w[e] - want) <= 1e-6 * fabs(want) + 1e-30;
    }
    CHECK(finite);
    CHECK(negated);
    CHECK(rows);
    const double err = whitening_error(w, cov, values, d, eps);
    CHECK(err < 1e-5);
    printf("%s k = %d, eps %g: lambda %.4g .. %.4g, W C W^T error %.3g\n", what, k, (double)eps,
           values[0], values[d - 1], err);
}

static void test_filters(void)
{
    enum { COUNT = 20 };
    uint8_t *images = malloc((size_t)COUNT * IMG_BYTES);
    CHECK(images != NULL);
    if (!images) return;
    synthetic_images(images, COUNT);
    check_filters(images, COUNT, 2, 5e-4f, "synthetic");
    check_filters(images, COUNT, 3, 1e-2f, "synthetic");
    check_filters(images, COUNT, 3, 0.0f, "synthetic");
    /* A flat image gives a rank-one covariance: eps = 0 must fail, not divide by zero. */
    memset(images, 128, IMG_BYTES);
    static float w[27 * 27];
    printf("expect one whiten_filters error:\n");
    CHECK(whiten_filters(w, images, 1, 3, 0.0f, 0) == DR_ERR_INTERNAL);
    CHECK(whiten_filters(w, images, 1, 3, 1e-2f, 0) == DR_OK);
    free(images);
}

/* Direct 3×3 convolution, stride 1, zero padding 1, of one image (ci, h, w). */
static void naive_conv3(float *y /* (co, h, w) */, const float *x /* (ci, h, w) */,
                        const float *w /* (co, ci, 3, 3) */, int co, int ci, int h, int wd)
{
    for (int o = 0; o < co; o++)
        for (int r = 0; r < h; r++)
            for (int c = 0; c < wd; c++) {
                float s = 0.0f;
                for (int i = 0; i < ci; i++)
                    for (int dy = 0; dy < 3; dy++)
                        for (int dx = 0; dx < 3; dx++) {
                            const int rr = r + dy - 1, cc = c + dx - 1;
                            if (rr < 0 || rr >= h || cc < 0 || cc >= wd) continue;
                            s += w[((o * ci + i) * 3 + dy) * 3 + dx] * x[(i * h + rr) * wd + cc];
                        }
                y[(o * h + r) * wd + c] = s;
            }
}

static void test_dirac(void)
{
    enum { CO = 8, CI = 5, K = 3, H = 6, W = 7 };
    static float w[CO * CI * K * K];
    for (int e = 0; e < CO * CI * K * K; e++) w[e] = 7.0f;
    init_dirac(w, CO, CI, K);
    int ok = 1, rest = 1;
    for (int o = 0; o < CO; o++)
        for (int i = 0; i < CI; i++)
            for (int e = 0; e < K * K; e++) {
                const float v = w[(o * CI + i) * K * K + e];
                if (o < CI)
                    ok &= v == (i == o && e == (K / 2) * K + K / 2 ? 1.0f : 0.0f);
                else
                    rest &= v == 7.0f;
            }
    CHECK(ok);
    CHECK(rest);

    /* Fewer filters than input channels: all of them are the identity. */
    float few[2 * 4 * 1];
    for (int e = 0; e < 8; e++) few[e] = 3.0f;
    init_dirac(few, 2, 4, 1);
    const float want_few[8] = {1, 0, 0, 0, 0, 1, 0, 0};
    CHECK(memcmp(few, want_few, sizeof few) == 0);

    /* A dirac conv reproduces its input's channels; the other filters are untouched. */
    uint32_t seed = 99u;
    for (int e = 0; e < CO * CI * K * K; e++) w[e] = (float)lcg_unit(&seed);
    init_dirac(w, CO, CI, K);
    static float x[CI * H * W], y[CO * H * W];
    for (int e = 0; e < CI * H * W; e++) x[e] = (float)lcg_unit(&seed);
    naive_conv3(y, x, w, CO, CI, H, W);
    CHECK(memcmp(y, x, sizeof x) == 0);
    int differs = 0;
    for (int e = 0; e < H * W; e++) differs += y[CI * H * W + e] != x[e];
    CHECK(differs > 0);
}

/* The filters of the first 500 real training images. */
static void test_real(const char *dir)
{
    struct dataset train = {0};
    CHECK(cifar10_load(&train, NULL, dir, 500, 0) == DR_OK);
    if (train.count != 500) return;
    check_filters(train.images, train.count, 2, 5e-4f, "CIFAR-10 (500)");
    check_filters(train.images, train.count, 3, 1e-2f, "CIFAR-10 (500)");
    dataset_free(&train);
}

int main(void)
{
    test_eigen_known();
    test_eigen_random();
    test_covariance();
    test_filters();
    test_dirac();
    const char *dir = check_data_dir();
    if (dir)
        test_real(dir);
    else
        printf("DAWNRUN_DATA not set: real-data filter checks skipped\n");
    return check_finish("test_whiten");
}

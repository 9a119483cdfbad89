/* Patch-whitening maths (engine/core/whiten.h): a cyclic Jacobi eigen-solver, the uncentred
 * k×k patch covariance of the training images, and the whitening filters built from them.
 * Everything is double precision and computed in a fixed order, so the result does not
 * depend on the number of threads. */
#include "whiten.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/augment.h"
#include "base/status.h"

#define WHITEN_MAX_SWEEPS 100
#define WHITEN_TOL 1e-14        /* off-diagonal norm / Frobenius norm at convergence */
#define WHITEN_BLOCKS 64        /* image blocks summed separately, then in block order */
#define WHITEN_SIDE AUGMENT_IMAGE
#define WHITEN_PLANE (WHITEN_SIDE * WHITEN_SIDE)

/* Sum of squares of the strictly off-diagonal elements of the d×d matrix a. */
static double off_diagonal_sq(const double *a /* (d, d) */, int d)
{
    double s = 0.0;
    for (int p = 0; p < d; p++)
        for (int q = 0; q < d; q++)
            if (p != q) s += a[(size_t)p * d + q] * a[(size_t)p * d + q];
    return s;
}

/* One Jacobi rotation that zeroes a[p][q] (p < q) of the symmetric a (full storage) and
 * applies the same rotation to rows p and q of u (the eigenvectors as rows). */
static void jacobi_rotate(double *a /* (d, d) */, double *u /* (d, d) */, int d, int p, int q)
{
    const double apq = a[(size_t)p * d + q];
    const double app = a[(size_t)p * d + p], aqq = a[(size_t)q * d + q];
    const double theta = (aqq - app) / (2.0 * apq);
    /* t = tan of the rotation angle: the smaller root of t² + 2 θ t - 1 = 0. */
    double t;
    if (fabs(theta) > 1e150)
        t = 0.5 / theta;
    else
        t = (theta >= 0.0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
    const double c = 1.0 / sqrt(t * t + 1.0), s = t * c;
    for (int r = 0; r < d; r++) {
        if (r == p || r == q) continue;
        const double arp = a[(size_t)r * d + p], arq = a[(size_t)r * d + q];
        const double np = c * arp - s * arq, nq = s * arp + c * arq;
        a[(size_t)r * d + p] = a[(size_t)p * d + r] = np;
        a[(size_t)r * d + q] = a[(size_t)q * d + r] = nq;
    }
    a[(size_t)p * d + p] = app - t * apq;
    a[(size_t)q * d + q] = aqq + t * apq;
    a[(size_t)p * d + q] = a[(size_t)q * d + p] = 0.0;
    double *up = u + (size_t)p * d, *uq = u + (size_t)q * d;
    for (int r = 0; r < d; r++) {
        const double vp = up[r], vq = uq[r];
        up[r] = c * vp - s * vq;
        uq[r] = s * vp + c * vq;
    }
}

/* Makes row v (length d) positive in its largest-magnitude component (the first such). */
static void fix_sign(double *v /* (d) */, int d)
{
    int best = 0;
    for (int i = 1; i < d; i++)
        if (fabs(v[i]) > fabs(v[best])) best = i;
    if (v[best] < 0.0)
        for (int i = 0; i < d; i++) v[i] = -v[i];
}

int whiten_eigen(double *values /* (d) */, double *vecs /* (d, d) */,
                 const double *a /* (d, d) */, int d)
{
    int rc = DR_OK;
    double *w = NULL, *u = NULL;
    int *order = NULL;
    if (d <= 0) FAIL(DR_ERR_INTERNAL, "whiten_eigen: matrix size %d", d);
    const size_t dd = (size_t)d * d;
    for (size_t e = 0; e < dd; e++)
        if (!isfinite(a[e]))
            FAIL(DR_ERR_INTERNAL, "whiten_eigen: element %zu of the matrix is not finite", e);
    w = malloc(sizeof(double) * dd);
    u = malloc(sizeof(double) * dd);
    order = malloc(sizeof(int) * (size_t)d);
    CHECK_ALLOC(w, "the Jacobi work matrix");
    CHECK_ALLOC(u, "the Jacobi eigenvectors");
    CHECK_ALLOC(order, "the eigenvalue order");
    /* Work on the symmetric part, so that both triangles agree from the start. */
    double norm_sq = 0.0;
    for (int p = 0; p < d; p++)
        for (int q = 0; q < d; q++) {
            const double v = 0.5 * (a[(size_t)p * d + q] + a[(size_t)q * d + p]);
            w[(size_t)p * d + q] = v;
            norm_sq += v * v;
            u[(size_t)p * d + q] = p == q ? 1.0 : 0.0;
        }
    const double limit_sq = WHITEN_TOL * WHITEN_TOL * norm_sq;
    int converged = 0;
    for (int sweep = 0; sweep <= WHITEN_MAX_SWEEPS; sweep++) {
        if (off_diagonal_sq(w, d) <= limit_sq) {
            converged = 1;
            break;
        }
        if (sweep == WHITEN_MAX_SWEEPS) break;
        for (int p = 0; p < d - 1; p++)
            for (int q = p + 1; q < d; q++)
                if (w[(size_t)p * d + q] != 0.0) jacobi_rotate(w, u, d, p, q);
    }
    if (!converged)
        FAIL(DR_ERR_INTERNAL, "whiten_eigen: no convergence after %d Jacobi sweeps (d = %d)",
             WHITEN_MAX_SWEEPS, d);
    /* Stable insertion sort of the indices by decreasing eigenvalue. */
    for (int i = 0; i < d; i++) {
        int j = i;
        const double v = w[(size_t)i * d + i];
        while (j > 0 && w[(size_t)order[j - 1] * d + order[j - 1]] < v) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    for (int i = 0; i < d; i++) {
        values[i] = w[(size_t)order[i] * d + order[i]];
        memcpy(vecs + (size_t)i * d, u + (size_t)order[i] * d, sizeof(double) * (size_t)d);
        fix_sign(vecs + (size_t)i * d, d);
    }
cleanup:
    free(w);
    free(u);
    free(order);
    return rc;
}

/* Adds the outer products of four patches (rows of p, stride dp, zero beyond d) to the
 * upper triangle of acc (d rows of stride dp); columns are processed from i rounded down
 * to a multiple of 4, so a few entries below the diagonal are touched and never read. */
static void accumulate4(double *acc /* (d, dp) */, const double *p /* (4, dp) */, int d, int dp)
{
    const double *p0 = p, *p1 = p + dp, *p2 = p + 2 * dp, *p3 = p + 3 * dp;
    for (int i = 0; i < d; i++) {
        const double a0 = p0[i], a1 = p1[i], a2 = p2[i], a3 = p3[i];
        double *row = acc + (size_t)i * dp;
        for (int j = i & ~3; j < dp; j++)
            row[j] += (a0 * p0[j] + a1 * p1[j]) + (a2 * p2[j] + a3 * p3[j]);
    }
}

/* Adds the patch sums sum p pᵀ of one image (its normalised planes x) to the upper
 * triangle of acc. rows is scratch for one row of patches, (npad, dp), zero-padded. */
static void image_patch_sums(double *acc /* (d, dp) */, double *rows /* (npad, dp) */,
                             const double *x /* (3, 32, 32) */, int k, int dp)
{
    const int d = AUGMENT_CHANNELS * k * k, side = WHITEN_SIDE - k + 1;
    const int npad = (side + 3) & ~3;
    for (int y = 0; y < side; y++) {
        for (int px = 0; px < side; px++) {
            double *p = rows + (size_t)px * dp;
            for (int c = 0; c < AUGMENT_CHANNELS; c++)
                for (int dy = 0; dy < k; dy++)
                    for (int dx = 0; dx < k; dx++)
                        *p++ = x[c * WHITEN_PLANE + (y + dy) * WHITEN_SIDE + px + dx];
        }
        for (int n = 0; n < npad; n += 4) accumulate4(acc, rows + (size_t)n * dp, d, dp);
    }
}

int whiten_covariance(double *cov /* (d, d) */, const uint8_t *images /* (count, 3, 32, 32) */,
                      int count, int k)
{
    int rc = DR_OK;
    double *blocks = NULL, *scratch = NULL;
    if (count <= 0 || k <= 0 || k > WHITEN_SIDE)
        FAIL(DR_ERR_INTERNAL, "whiten_covariance: bad arguments (count %d, k %d)", count, k);
    static const float mean[AUGMENT_CHANNELS] = {AUGMENT_MEAN_R, AUGMENT_MEAN_G, AUGMENT_MEAN_B};
    static const float stdv[AUGMENT_CHANNELS] = {AUGMENT_STD_R, AUGMENT_STD_G, AUGMENT_STD_B};
    double lut[AUGMENT_CHANNELS][256];
    for (int c = 0; c < AUGMENT_CHANNELS; c++)
        for (int v = 0; v < 256; v++) lut[c][v] = (double)(((float)v - mean[c]) / stdv[c]);

    const int d = AUGMENT_CHANNELS * k * k, dp = (d + 3) & ~3;
    const int side = WHITEN_SIDE - k + 1, npad = (side + 3) & ~3;
    const size_t accsz = (size_t)d * dp;
    const int nblocks = count < WHITEN_BLOCKS ? count : WHITEN_BLOCKS;
    const int nthr = omp_get_max_threads();
    /* Per thread: the image's accumulator, its normalised planes, one row of patches. */
    const size_t per_thread = accsz + (size_t)AUGMENT_CHANNELS * WHITEN_PLANE + (size_t)npad * dp;
    blocks = calloc((size_t)nblocks * accsz, sizeof(double));
    scratch = malloc(sizeof(double) * per_thread * (size_t)nthr);
    CHECK_ALLOC(blocks, "the patch covariance blocks");
    CHECK_ALLOC(scratch, "the patch covariance scratch");

#pragma omp parallel num_threads(nthr)
    {
        double *acc = scratch + per_thread * (size_t)omp_get_thread_num();
        double *x = acc + accsz, *rows = x + AUGMENT_CHANNELS * WHITEN_PLANE;
        memset(rows, 0, sizeof(double) * (size_t)npad * dp);
#pragma omp for schedule(dynamic, 1)
        for (int b = 0; b < nblocks; b++) {
            const int i0 = (int)((long long)b * count / nblocks);
            const int i1 = (int)((long long)(b + 1) * count / nblocks);
            double *blk = blocks + (size_t)b * accsz;
            for (int i = i0; i < i1; i++) {
                const uint8_t *img = images + (size_t)i * AUGMENT_CHANNELS * WHITEN_PLANE;
                for (int c = 0; c < AUGMENT_CHANNELS; c++)
                    for (int e = 0; e < WHITEN_PLANE; e++)
                        x[c * WHITEN_PLANE + e] = lut[c][img[c * WHITEN_PLANE + e]];
                memset(acc, 0, sizeof(double) * accsz);
                image_patch_sums(acc, rows, x, k, dp);
                for (int r = 0; r < d; r++)
                    for (int j = r; j < d; j++) blk[(size_t)r * dp + j] += acc[(size_t)r * dp + j];
            }
        }
    }

    const double n_patches = (double)count * side * side;
    for (int r = 0; r < d; r++)
        for (int j = r; j < d; j++) {
            double s = 0.0;
            for (int b = 0; b < nblocks; b++) s += blocks[(size_t)b * accsz + (size_t)r * dp + j];
            cov[(size_t)r * d + j] = cov[(size_t)j * d + r] = s / n_patches;
        }
cleanup:
    free(blocks);
    free(scratch);
    return rc;
}

int whiten_filters(float *w /* (out, 3, k, k) */, const uint8_t *images /* (count, 3, 32, 32) */,
                   int count, int k, float eps, int negate)
{
    int rc = DR_OK;
    double *cov = NULL, *values = NULL, *vecs = NULL;
    if (count <= 0 || k <= 0 || k > WHITEN_SIDE)
        FAIL(DR_ERR_INTERNAL, "whiten_filters: bad arguments (count %d, k %d)", count, k);
    const int d = AUGMENT_CHANNELS * k * k;
    cov = malloc(sizeof(double) * (size_t)d * d);
    values = malloc(sizeof(double) * (size_t)d);
    vecs = malloc(sizeof(double) * (size_t)d * d);
    CHECK_ALLOC(cov, "the patch covariance");
    CHECK_ALLOC(values, "the whitening eigenvalues");
    CHECK_ALLOC(vecs, "the whitening eigenvectors");
    TRY(whiten_covariance(cov, images, count, k));
    TRY(whiten_eigen(values, vecs, cov, d));
    for (int i = 0; i < d; i++) {
        const double denom = values[i] + (double)eps;
        if (!(denom > 0.0))
            FAIL(DR_ERR_INTERNAL,
                 "whiten_filters: eigenvalue %d (%g) + eps (%g) is not positive", i, values[i],
                 (double)eps);
        const double root = sqrt(denom);
        for (int e = 0; e < d; e++) {
            const float v = (float)(vecs[(size_t)i * d + e] / root);
            w[(size_t)i * d + e] = v;
            if (negate) w[(size_t)(d + i) * d + e] = -v;
        }
    }
cleanup:
    free(cov);
    free(values);
    free(vecs);
    return rc;
}

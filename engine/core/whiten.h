/* The fixed first layer of the speed-training recipes, computed on the host before
 * training: patch-whitening filters from the training images (Page's 3×3 PCA whitening,
 * airbench's 2×2 version).
 * Engine-neutral and deterministic: the same images give the same filters everywhere. */
#ifndef DAWNRUN_WHITEN_H
#define DAWNRUN_WHITEN_H

#include <stddef.h>
#include <stdint.h>

/* Eigen-decomposition of the symmetric d×d matrix a (row-major, only read) by cyclic
 * Jacobi rotations in double precision: eigenvalues in decreasing order, eigenvector i
 * in row i of vecs (unit length; its sign is made positive in its largest-magnitude
 * component, the first such one on a tie, so that the result is unique). Returns DR_OK,
 * DR_ERR_NOMEM, or DR_ERR_INTERNAL if it does not converge. */
int whiten_eigen(double *values,      /* (d) */
                 double *vecs,        /* (d, d) */
                 const double *a,     /* (d, d) */
                 int d);

/* Uncentred covariance of all k×k patches (stride 1, no padding: (32 - k + 1)² per image)
 * of the first `count` images, normalised per channel as training batches are
 * (kernels/augment.h: (v - mean) / std): cov = sum p pᵀ / npatches, a patch flattened in
 * (channel, row, column) order, d = 3 k k. */
int whiten_covariance(double *cov,            /* (d, d) */
                      const uint8_t *images,  /* (count, 3, 32, 32) CIFAR plane order */
                      int count, int k);

/* The whitening filters: w[i] = v_i / sqrt(lambda_i + eps) for the eigenpairs of the
 * patch covariance in decreasing eigenvalue order, i < 3 k k; with negate, followed by
 * their negations (w[3kk + i] = -w[i]). out = 3 k k (2× with negate) filters of shape
 * (3, k, k). Returns DR_OK, DR_ERR_NOMEM or DR_ERR_INTERNAL. */
int whiten_filters(float *w,                /* (out, 3, k, k) */
                   const uint8_t *images,   /* (count, 3, 32, 32) */
                   int count, int k, float eps, int negate);

#endif

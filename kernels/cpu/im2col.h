/* Column-matrix transforms for the CPU convolution: im2col unfolds a chunk of images of
 * a (C, N, H, W) tensor into a (C*k*k, nb*ho*wo) matrix, and col2im folds such a matrix
 * back, adding into the images. Single-threaded; callers split the batch. */
#ifndef DAWNRUN_KERNELS_CPU_IM2COL_H
#define DAWNRUN_KERNELS_CPU_IM2COL_H

#include "../conv2d.h"

/* col[(ci*k + ky)*k + kx][(i*ho + oy)*wo + ox] = x[ci][n0 + i][oy*s - p + ky][ox*s - p + kx]
 * (zero outside the image), for images n0 .. n0 + nb - 1. */
void im2col_cpu(float *col,       /* (c*k*k, nb*ho*wo) */
                const float *x,   /* (c, n, h, w) */
                const struct conv2d_dims *d, int n0, int nb);

/* The adjoint of im2col_cpu: adds every column entry into the input position it was
 * read from, in a fixed order. dx images n0 .. n0 + nb - 1 must be initialised. */
void col2im_add_cpu(float *dx,         /* (c, n, h, w) */
                    const float *col,  /* (c*k*k, nb*ho*wo) */
                    const struct conv2d_dims *d, int n0, int nb);

#endif

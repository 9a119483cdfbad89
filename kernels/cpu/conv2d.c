/* The im2col + sgemm CPU convolution (CNHW; see conv2d_impl.h) as batched GEMMs. The
 * batch is split into chunks of images; inside one OpenMP region each thread takes whole
 * chunks (chunk t, t + T, ...), unfolds its chunk with im2col into a private column
 * buffer and calls a single-threaded sgemm whose output is the chunk's strided
 * sub-matrix of y. Backward: dw is accumulated per thread and the partial sums are added
 * in thread order; dx goes through col2im. With a fixed thread count every result is
 * bit-identical from run to run. */
#include "../conv2d.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/status.h"
#include "cpu_util.h"
#include "conv2d_impl.h"
#include "im2col.h"

/* Columns (images × output pixels) per chunk the split aims for: enough for an
 * efficient GEMM, small enough that the column buffer stays in cache. Measured on the
 * ResNet-9 shapes at batch 128 on 2 cores (bench/conv_cpu_bench.c): 512 ≈ 768 > 256,
 * 1024 > 2048 > 4096. A whole image is the least a chunk holds. */
#ifndef CONV_TARGET_COLS
#define CONV_TARGET_COLS 512
#endif

struct conv_split {
    int nb;      /* images per chunk (the last one may have fewer) */
    int chunks;
};

void conv2d_dims_finish(struct conv2d_dims *d)
{
    d->ho = (d->h + 2 * d->pad - d->k) / d->stride + 1;
    d->wo = (d->w + 2 * d->pad - d->k) / d->stride + 1;
}

/* Chooses the chunking for n images over nthr threads: about CONV_TARGET_COLS columns
 * per chunk, and a number of chunks that is a multiple of nthr where n allows. */
static struct conv_split conv_split_make(const struct conv2d_dims *d, int nthr)
{
    struct conv_split s;
    long howo = (long)d->ho * d->wo;
    long nb = CONV_TARGET_COLS / (howo > 0 ? howo : 1);
    if (nb < 1) nb = 1;
    if (nb > d->n) nb = d->n;
    long chunks = (d->n + nb - 1) / nb;
    if (chunks % nthr != 0) {
        chunks = (chunks + nthr - 1) / nthr * nthr;
        if (chunks > d->n) chunks = d->n;
        nb = (d->n + chunks - 1) / chunks;
        chunks = (d->n + nb - 1) / nb;
    }
    s.nb = (int)nb;
    s.chunks = (int)chunks;
    return s;
}

/* A 1×1, stride 1, unpadded convolution reads x as its column matrix directly. */
static int conv_is_pointwise(const struct conv2d_dims *d)
{
    return d->k == 1 && d->stride == 1 && d->pad == 0;
}

int conv2d_im2col_forward(float *y, const float *x, const float *w, const float *b,
                          const struct conv2d_dims *d)
{
    if (d->n <= 0) return DR_OK;
    const int nthr = omp_get_max_threads();
    const struct conv_split sp = conv_split_make(d, nthr);
    const int direct = conv_is_pointwise(d);
    const long howo = (long)d->ho * d->wo, hw = (long)d->h * d->w;
    const long kdim = (long)d->c * d->k * d->k;
    const size_t colsz = (size_t)kdim * (size_t)sp.nb * (size_t)howo;
    float *cols = NULL;
    int bad = 0;
    if (!direct) {
        cols = malloc(sizeof(float) * colsz * (size_t)nthr);
        if (!cols) return DR_ERR_NOMEM;
    }
#pragma omp parallel num_threads(nthr)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *col = cols ? cols + colsz * (size_t)t : NULL;
        for (int ch = t; ch < sp.chunks; ch += nt) {
            const int n0 = ch * sp.nb;
            const int m = d->n - n0 < sp.nb ? d->n - n0 : sp.nb;
            const long ncol = (long)m * howo;
            const float *bmat = x + (size_t)n0 * (size_t)hw;
            long ldb = (long)d->n * hw;
            if (!direct) {
                im2col_cpu(col, x, d, n0, m);
                bmat = col;
                ldb = ncol;
            }
            float *out = y + (size_t)n0 * (size_t)howo;
            const long ldc = (long)d->n * howo;
            if (cpu_sgemm('N', 'N', d->co, ncol, kdim, 1.0f, w, kdim, bmat, ldb, 0.0f, out, ldc)) {
#pragma omp critical(conv_fail)
                bad = 1;
            }
            if (b)
                for (int o = 0; o < d->co; o++) {
                    float *r = out + (size_t)o * (size_t)ldc;
                    const float bo = b[o];
                    for (long j = 0; j < ncol; j++) r[j] += bo;
                }
        }
    }
    free(cols);
    return bad ? DR_ERR_INTERNAL : DR_OK;
}

int conv2d_im2col_backward(float *dx, float *dw, float *db, const float *dy, const float *x,
                           const float *w, const struct conv2d_dims *d, int accumulate_dx)
{
    const long howo = (long)d->ho * d->wo, hw = (long)d->h * d->w;
    const long kdim = (long)d->c * d->k * d->k;
    const size_t wsz = (size_t)d->co * (size_t)kdim;
    if (d->n <= 0) {
        if (dw) memset(dw, 0, sizeof(float) * wsz);
        if (db) memset(db, 0, sizeof(float) * (size_t)d->co);
        return DR_OK;
    }
    const int nthr = omp_get_max_threads();
    const struct conv_split sp = conv_split_make(d, nthr);
    const int direct = conv_is_pointwise(d);
    const size_t colsz = (size_t)kdim * (size_t)sp.nb * (size_t)howo;
    const long ldy = (long)d->n * howo;
    float *cols = NULL, *accs = NULL;
    int *used = NULL;
    int rc = DR_OK, bad = 0;

    if (!direct) {
        cols = malloc(sizeof(float) * colsz * (size_t)nthr);
        CHECK_ALLOC(cols, "convolution column buffers");
    }
    if (dw && nthr > 1) {
        accs = malloc(sizeof(float) * wsz * (size_t)(nthr - 1));
        CHECK_ALLOC(accs, "convolution weight-gradient buffers");
    }
    used = calloc((size_t)nthr, sizeof(int));
    CHECK_ALLOC(used, "convolution flags");

#pragma omp parallel num_threads(nthr)
    {
        const int t = omp_get_thread_num(), nt = omp_get_num_threads();
        float *col = cols ? cols + colsz * (size_t)t : NULL;
        float *acc = t == 0 ? dw : (accs ? accs + wsz * (size_t)(t - 1) : NULL);
        int first = 1, fail = 0;
        for (int ch = t; ch < sp.chunks; ch += nt) {
            const int n0 = ch * sp.nb;
            const int m = d->n - n0 < sp.nb ? d->n - n0 : sp.nb;
            const long ncol = (long)m * howo;
            const float *g = dy + (size_t)n0 * (size_t)howo;
            if (dw) {
                const float *bmat = x + (size_t)n0 * (size_t)hw;
                long ldb = (long)d->n * hw;
                if (!direct) {
                    im2col_cpu(col, x, d, n0, m);
                    bmat = col;
                    ldb = ncol;
                }
                fail |= cpu_sgemm('N', 'T', d->co, kdim, ncol, 1.0f, g, ldy, bmat, ldb,
                                  first ? 0.0f : 1.0f, acc, kdim);
                first = 0;
            }
            if (dx && direct) {
                fail |= cpu_sgemm('T', 'N', kdim, ncol, d->co, 1.0f, w, kdim, g, ldy,
                                  accumulate_dx ? 1.0f : 0.0f, dx + (size_t)n0 * (size_t)hw,
                                  (long)d->n * hw);
            } else if (dx) {
                fail |= cpu_sgemm('T', 'N', kdim, ncol, d->co, 1.0f, w, kdim, g, ldy, 0.0f, col,
                                  ncol);
                if (!accumulate_dx)
                    for (int ci = 0; ci < d->c; ci++)
                        memset(dx + ((size_t)ci * d->n + n0) * (size_t)hw, 0,
                               sizeof(float) * (size_t)m * (size_t)hw);
                col2im_add_cpu(dx, col, d, n0, m);
            }
        }
        used[t] = !first;
        if (fail) {
#pragma omp critical(conv_fail)
            bad = 1;
        }
#pragma omp barrier
        if (dw) {
            /* dw = sum of the per-thread partials, added in thread order */
            const size_t per = (wsz + (size_t)nt - 1) / (size_t)nt;
            const size_t e0 = per * (size_t)t < wsz ? per * (size_t)t : wsz;
            const size_t e1 = e0 + per < wsz ? e0 + per : wsz;
            if (!used[0]) memset(dw + e0, 0, sizeof(float) * (e1 - e0));
            for (int u = 1; u < nt; u++) {
                if (!used[u]) continue;
                const float *p = accs + wsz * (size_t)(u - 1);
                for (size_t e = e0; e < e1; e++) dw[e] += p[e];
            }
        }
        if (db) {
#pragma omp for schedule(static)
            for (int o = 0; o < d->co; o++)
                db[o] = (float)cpu_sum(dy + (size_t)o * (size_t)ldy, (size_t)ldy);
        }
    }
    if (bad) rc = DR_ERR_INTERNAL;
cleanup:
    free(cols);
    free(accs);
    free(used);
    return rc;
}

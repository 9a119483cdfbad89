/* Batch normalisation on NHWC activations, statistics and parameters in fp32, sums in
 * double: the CUDA twin of kernels/cpu/batchnorm.c, with the same formulas in the same
 * order (biased variance to normalise, unbiased for running_var, PyTorch momentum; the
 * mean applied as the float pair hi + lo; the backward pass recomputing the mean from x).
 * Each pass is: per-channel partial sums (reduce_cuda.cu), a one-thread-per-channel
 * kernel that turns sums into coefficients, and an elementwise kernel. Elementwise
 * arithmetic uses explicit round-to-nearest intrinsics so that no multiply-add is fused
 * where the CPU twin rounds twice.
 * Ghost batch norm: the S parts of the batch are S consecutive ranges of rows (n / S
 * images each; "splits" below, "parts" being the reduction's row blocks). The sums are
 * taken split by split, the coefficient kernel walks a channel's splits in order
 * (coefficients (S, count, c)), and the elementwise kernels take the split from
 * blockIdx.y. */
#include <math.h>

#include "cuda_internal.h"
extern "C" {
#include "../batchnorm.h"
}

/* Coefficients of the elementwise forward: y = ((x - hi) - lo) * scale + shift. */
enum { COEF_SCALE, COEF_HI, COEF_LO, COEF_SHIFT, COEF_FWD_COUNT };
/* Coefficients of the elementwise backward: dx = a*dy + b*((x - hi) - lo) + e. */
enum { BCOEF_A, BCOEF_B, BCOEF_E, BCOEF_HI, BCOEF_LO, COEF_BWD_COUNT };

__global__ void bn_train_finalize_kernel(float *coef,          /* (splits, COEF_FWD_COUNT, c) */
                                         float *save_mean,     /* (splits, c) */
                                         float *save_invstd,   /* (splits, c) */
                                         float *running_mean,  /* (c) in/out */
                                         float *running_var,   /* (c) in/out */
                                         const double *sums,   /* (splits, 2, c): x, x² */
                                         const float *gamma, const float *beta, int c,
                                         int splits, long cnt, float eps, float momentum)
{
    const int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c) return;
    double mean_sum = 0.0, unbiased_sum = 0.0;
    for (int s = 0; s < splits; s++) {
        const double *ps = sums + (size_t)s * 2 * c;
        float *pc = coef + (size_t)s * COEF_FWD_COUNT * c;
        double mean, invstd, unbiased;
        batchnorm_part_stats(&mean, &invstd, &unbiased, &save_mean[s * c + ch],
                             &save_invstd[s * c + ch], ps[ch], ps[c + ch], (size_t)cnt, eps);
        mean_sum += mean;
        unbiased_sum += unbiased;
        float hi, lo;
        batchnorm_split(&hi, &lo, mean);
        pc[COEF_SCALE * c + ch] = (float)((double)gamma[ch] * invstd);
        pc[COEF_HI * c + ch] = hi;
        pc[COEF_LO * c + ch] = lo;
        pc[COEF_SHIFT * c + ch] = beta[ch];
    }
    batchnorm_running_update(&running_mean[ch], &running_var[ch], mean_sum, unbiased_sum,
                             splits, momentum);
}

__global__ void bn_eval_coef_kernel(float *coef,  /* (COEF_FWD_COUNT, c) */
                                    const float *gamma, const float *beta,
                                    const float *running_mean, const float *running_var, int c,
                                    float eps)
{
    const int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c) return;
    const double invstd = 1.0 / sqrt((double)running_var[ch] + (double)eps);
    coef[COEF_SCALE * c + ch] = (float)((double)gamma[ch] * invstd);
    coef[COEF_HI * c + ch] = running_mean[ch];
    coef[COEF_LO * c + ch] = 0.0f;
    coef[COEF_SHIFT * c + ch] = beta[ch];
}

/* Block (CH_X, CH_Y), grid (cuda_grid_rows(rows), splits): blockIdx.y is the ghost
 * batch-norm part, of `rows` rows each. */
template <typename T>
__global__ void bn_apply_kernel(T *y,              /* (splits, rows, c) */
                                const T *x,        /* (splits, rows, c) */
                                const float *coef, /* (splits, COEF_FWD_COUNT, c) */
                                long rows, int c)
{
    const size_t base = (size_t)blockIdx.y * rows * c;
    coef += (size_t)blockIdx.y * COEF_FWD_COUNT * c;
    FOR_CHANNELS(ch, c)
    {
        const float scale = coef[COEF_SCALE * c + ch], hi = coef[COEF_HI * c + ch];
        const float lo = coef[COEF_LO * c + ch], shift = coef[COEF_SHIFT * c + ch];
        FOR_ROWS(r, rows)
        {
            const size_t i = base + (size_t)r * c + ch;
            const float t = __fsub_rn(__fsub_rn(cuda_to_f<T>(x[i]), hi), lo);
            y[i] = cuda_from_f<T>(__fadd_rn(__fmul_rn(t, scale), shift));
        }
    }
}

__global__ void bn_backward_finalize_kernel(float *coef,   /* (splits, COEF_BWD_COUNT, c) */
                                            float *dgamma, /* (c) or NULL */
                                            float *dbeta,  /* (c) or NULL */
                                            const double *sums, /* (splits, 3, c): x, dy, dy*x */
                                            const float *gamma,
                                            const float *save_invstd, /* (splits, c) */
                                            int c, int splits, long cnt)
{
    const int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c) return;
    double dgamma_sum = 0.0, dbeta_sum = 0.0;
    for (int s = 0; s < splits; s++) {
        const double *ps = sums + (size_t)s * 3 * c;
        float *pc = coef + (size_t)s * COEF_BWD_COUNT * c;
        const double sum_dy = ps[c + ch];
        double dg;
        float a, b, e, hi, lo;
        batchnorm_channel_grad(&dg, &a, &b, &e, &hi, &lo, ps[ch], sum_dy, ps[2 * c + ch],
                               gamma[ch], save_invstd[s * c + ch], (size_t)cnt);
        dgamma_sum += dg;
        dbeta_sum += sum_dy;
        pc[BCOEF_A * c + ch] = a;
        pc[BCOEF_B * c + ch] = b;
        pc[BCOEF_E * c + ch] = e;
        pc[BCOEF_HI * c + ch] = hi;
        pc[BCOEF_LO * c + ch] = lo;
    }
    if (dgamma) dgamma[ch] = (float)dgamma_sum;
    if (dbeta) dbeta[ch] = (float)dbeta_sum;
}

/* Block (CH_X, CH_Y), grid (cuda_grid_rows(rows), splits), as bn_apply_kernel. */
template <typename T>
__global__ void bn_backward_apply_kernel(T *dx,             /* (splits, rows, c) */
                                         const T *dy,       /* (splits, rows, c) */
                                         const T *x,        /* (splits, rows, c) */
                                         const float *coef, /* (splits, COEF_BWD_COUNT, c) */
                                         long rows, int c, int accumulate)
{
    const size_t base = (size_t)blockIdx.y * rows * c;
    coef += (size_t)blockIdx.y * COEF_BWD_COUNT * c;
    FOR_CHANNELS(ch, c)
    {
        const float a = coef[BCOEF_A * c + ch], b = coef[BCOEF_B * c + ch];
        const float e = coef[BCOEF_E * c + ch], hi = coef[BCOEF_HI * c + ch];
        const float lo = coef[BCOEF_LO * c + ch];
        FOR_ROWS(r, rows)
        {
            const size_t i = base + (size_t)r * c + ch;
            const float xm = __fsub_rn(__fsub_rn(cuda_to_f<T>(x[i]), hi), lo);
            const float g = __fadd_rn(
                __fadd_rn(__fmul_rn(a, cuda_to_f<T>(dy[i])), __fmul_rn(b, xm)), e);
            dx[i] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(dx[i]), g) : g);
        }
    }
}

/* fp32 vector data of an optional tensor. */
static float *vec(const struct tensor *t)
{
    return t ? (float *)t->data : NULL;
}

static int bn_vec_ok(const struct tensor *t, int c)
{
    return t && t->data && tensor_count(t) == (size_t)c;
}

/* Lays out the reduction scratch: partial (nq, parts, c) doubles, sums (nq, c) doubles,
 * then ncoef × c floats. */
static int bn_scratch(struct cuda_ctx *ctx, int nq, int parts, int c, int ncoef, double **partial,
                      double **sums, float **coef)
{
    int rc = DR_OK;
    void *buf = NULL;
    const size_t np = (size_t)nq * parts * c, ns = (size_t)nq * c;
    TRY(cuda_scratch(ctx, SLOT_REDUCE, sizeof(double) * (np + ns) + sizeof(float) * ncoef * c,
                     &buf));
    *partial = (double *)buf;
    *sums = *partial + np;
    *coef = (float *)(*sums + ns);
cleanup:
    return rc;
}

/* The per-channel sums of `mode` over each of the splits of a (splits * rows, c) tensor a
 * (and b), into sums (splits, mode, c); partial holds splits * mode * parts * c doubles. */
static int bn_split_sums(struct cuda_ctx *ctx, double *sums, double *partial, const void *a,
                         const void *b, long rows, int c, int splits, int parts,
                         enum cuda_reduce_mode mode)
{
    int rc = DR_OK;
    TRY(cuda_reduce_partial(ctx, partial, a, b, rows, c, parts, splits, mode));
    /* split s's quantity q is quantity s * mode + q of the whole */
    TRY(cuda_reduce_finish(ctx, sums, partial, c, parts, splits * (int)mode));
cleanup:
    return rc;
}

int cuda_bn_forward_train(void *ctx, struct tensor *y, struct tensor *save_mean,
                          struct tensor *save_invstd, struct tensor *running_mean,
                          struct tensor *running_var, const struct tensor *x,
                          const struct tensor *gamma, const struct tensor *beta,
                          const struct bn_attr *a)
{
    int rc = DR_OK, splits = 1, parts = 1;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const int ch = x->c;
    const long rows = (long)x->n * x->h * x->w;
    long split_rows = rows;
    double *partial = NULL, *sums = NULL;
    float *coef = NULL;
    EXPECT(cuda_same_shape(y, x), "bn: output (%d, %d, %d, %d) unlike input", y->n, y->c, y->h,
           y->w);
    TRY(backend_check_bn_parts(&splits, x, save_mean, save_invstd, a));
    EXPECT(bn_vec_ok(running_mean, ch) && bn_vec_ok(running_var, ch) && bn_vec_ok(gamma, ch) &&
               bn_vec_ok(beta, ch),
           "bn: a statistics or parameter vector is not of %d channels", ch);
    if (ch == 0) goto cleanup;
    split_rows = rows / splits;
    parts = cuda_reduce_parts(split_rows);
    TRY(cuda_enter(c));
    TRY(bn_scratch(c, 2 * splits, parts, ch, COEF_FWD_COUNT * splits, &partial, &sums, &coef));
    TRY(bn_split_sums(c, sums, partial, x->data, NULL, split_rows, ch, splits, parts,
                      REDUCE_SUMSQ));
    bn_train_finalize_kernel<<<(ch + CUDA_THREADS - 1) / CUDA_THREADS, CUDA_THREADS, 0,
                               c->stream>>>(coef, vec(save_mean), vec(save_invstd),
                                            vec(running_mean), vec(running_var), sums,
                                            vec(gamma), vec(beta), ch, splits, split_rows,
                                            a->eps, a->momentum);
    /* reads sums (splits, 2, ch) doubles and gamma, beta, running mean and variance (ch
     * floats each); writes coef (splits, COEF_FWD_COUNT, ch), save_mean and save_invstd
     * (splits, ch) and the running statistics (ch each), floats */
    CHECK_LAUNCH(c, sizeof(double) * 2 * splits * ch + sizeof(float) * 4 * ch,
                 sizeof(float) * ((size_t)(COEF_FWD_COUNT + 2) * splits * ch + 2 * ch));
    if (split_rows == 0) goto cleanup;
    CUDA_DISPATCH(c->dt, T,
                  bn_apply_kernel<T><<<dim3(cuda_grid_rows(c, split_rows), (unsigned)splits),
                                       dim3(CH_X, CH_Y), 0, c->stream>>>(
                      (T *)y->data, (const T *)x->data, coef, split_rows, ch));
    /* reads x and coef (splits, COEF_FWD_COUNT, ch) floats; writes y */
    CHECK_LAUNCH(c, (size_t)split_rows * splits * ch * cuda_dt_size(c->dt) +
                        sizeof(float) * COEF_FWD_COUNT * splits * ch,
                 (size_t)split_rows * splits * ch * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

int cuda_bn_forward_eval(void *ctx, struct tensor *y, const struct tensor *x,
                         const struct tensor *gamma, const struct tensor *beta,
                         const struct tensor *running_mean, const struct tensor *running_var,
                         const struct bn_attr *a)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const int ch = x->c;
    const long rows = (long)x->n * x->h * x->w;
    const size_t count = tensor_count(x);
    void *buf = NULL;
    EXPECT(cuda_same_shape(y, x), "bn: output (%d, %d, %d, %d) unlike input", y->n, y->c, y->h,
           y->w);
    EXPECT(bn_vec_ok(running_mean, ch) && bn_vec_ok(running_var, ch) && bn_vec_ok(gamma, ch) &&
               bn_vec_ok(beta, ch),
           "bn: a statistics or parameter vector is not of %d channels", ch);
    if (ch == 0 || count == 0) goto cleanup;
    TRY(cuda_enter(c));
    TRY(cuda_scratch(c, SLOT_REDUCE, sizeof(float) * COEF_FWD_COUNT * ch, &buf));
    bn_eval_coef_kernel<<<(ch + CUDA_THREADS - 1) / CUDA_THREADS, CUDA_THREADS, 0, c->stream>>>(
        (float *)buf, vec(gamma), vec(beta), vec(running_mean), vec(running_var), ch, a->eps);
    /* reads gamma, beta, running mean and variance (ch floats each); writes coef
     * (COEF_FWD_COUNT, ch) floats */
    CHECK_LAUNCH(c, sizeof(float) * 4 * ch, sizeof(float) * COEF_FWD_COUNT * ch);
    CUDA_DISPATCH(c->dt, T,
                  bn_apply_kernel<T><<<cuda_grid_rows(c, rows), dim3(CH_X, CH_Y), 0,
                                       c->stream>>>((T *)y->data, (const T *)x->data,
                                                    (const float *)buf, rows, ch));
    /* reads x and coef (COEF_FWD_COUNT, ch) floats; writes y */
    CHECK_LAUNCH(c, count * cuda_dt_size(c->dt) + sizeof(float) * COEF_FWD_COUNT * ch,
                 count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

int cuda_bn_backward(void *ctx, struct tensor *dx, struct tensor *dgamma, struct tensor *dbeta,
                     const struct tensor *dy, const struct tensor *x, const struct tensor *gamma,
                     const struct tensor *save_mean, const struct tensor *save_invstd,
                     int accumulate)
{
    int rc = DR_OK, splits = 1, parts = 1;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const int ch = x->c;
    const long rows = (long)x->n * x->h * x->w;
    long split_rows = rows;
    const int want_dx = dx && dx->data;
    double *partial = NULL, *sums = NULL;
    float *coef = NULL;
    EXPECT(cuda_same_shape(dy, x) && (!want_dx || cuda_same_shape(dx, x)),
           "bn backward: dy or dx unlike x (%d, %d, %d, %d)", x->n, x->c, x->h, x->w);
    TRY(backend_check_bn_parts(&splits, x, save_mean, save_invstd, NULL));
    EXPECT(bn_vec_ok(gamma, ch) && (!vec(dgamma) || bn_vec_ok(dgamma, ch)) &&
               (!vec(dbeta) || bn_vec_ok(dbeta, ch)),
           "bn backward: a statistics or parameter vector is not of %d channels", ch);
    if (ch == 0) goto cleanup;
    split_rows = rows / splits;
    parts = cuda_reduce_parts(split_rows);
    TRY(cuda_enter(c));
    TRY(bn_scratch(c, 3 * splits, parts, ch, COEF_BWD_COUNT * splits, &partial, &sums, &coef));
    TRY(bn_split_sums(c, sums, partial, x->data, dy->data, split_rows, ch, splits, parts,
                      REDUCE_BN_BWD));
    bn_backward_finalize_kernel<<<(ch + CUDA_THREADS - 1) / CUDA_THREADS, CUDA_THREADS, 0,
                                  c->stream>>>(coef, vec(dgamma), vec(dbeta), sums, vec(gamma),
                                               vec(save_invstd), ch, splits, split_rows);
    /* reads sums (splits, 3, ch) doubles, gamma (ch) and save_invstd (splits, ch) floats;
     * writes coef (splits, COEF_BWD_COUNT, ch) and dgamma, dbeta (ch each, when wanted) */
    CHECK_LAUNCH(c, sizeof(double) * 3 * splits * ch + sizeof(float) * ((size_t)ch + splits * ch),
                 sizeof(float) * ((size_t)COEF_BWD_COUNT * splits * ch +
                                  (vec(dgamma) ? ch : 0) + (vec(dbeta) ? ch : 0)));
    if (!want_dx || split_rows == 0) goto cleanup;
    CUDA_DISPATCH(c->dt, T,
                  bn_backward_apply_kernel<T>
                  <<<dim3(cuda_grid_rows(c, split_rows), (unsigned)splits), dim3(CH_X, CH_Y), 0,
                     c->stream>>>((T *)dx->data, (const T *)dy->data, (const T *)x->data, coef,
                                  split_rows, ch, accumulate));
    /* reads dy, x (and dx when accumulating) and coef (splits, COEF_BWD_COUNT, ch) floats;
     * writes dx */
    CHECK_LAUNCH(c, (size_t)(2 + (accumulate != 0)) * split_rows * splits * ch *
                            cuda_dt_size(c->dt) +
                        sizeof(float) * COEF_BWD_COUNT * splits * ch,
                 (size_t)split_rows * splits * ch * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

/* The two passes of our own that a batch norm inside the convolutions still makes
 * (conv_nodes_cuda.cu: a BN_ACT_TRAIN node with vectors, a BN_APPLY_BWD node; the
 * convolutions themselves are conv_fused_cuda.cu's): in the forward, one thread per
 * channel turning the sums the convolution writing x took into the batch norm's
 * statistics, its running statistics and the scale and bias its apply has inside the next
 * convolution; in the backward, the elementwise pass dx = eq_dy * dz + eq_x * x + eq_b
 * with the coefficients the backward-data convolution computed; and, for a batch norm of
 * our own whose activation only convolutions read, its apply's scale and bias for their
 * prologue. The statistics use the formulas every engine shares (kernels/batchnorm.h) on
 * the convolution's fp32 sums, so they agree with the unfused batch norm within the sums'
 * rounding, not to the bit. */
#include "bn_kernels_cuda.h"
#include "conv_bn_cuda.h"
extern "C" {
#include "../batchnorm.h"
}

/* One thread per channel: statistics from sum and sqsum over cnt values, the running
 * update, and the apply's scale = gamma * invstd, bias = beta - mean * scale. */
template <typename T>
__global__ void bn_sums_finalize_kernel(T *__restrict__ scale,          /* (c) */
                                        T *__restrict__ bias,           /* (c) */
                                        float *__restrict__ save_mean,  /* (c) */
                                        float *__restrict__ save_invstd,/* (c) */
                                        float *running_mean,            /* (c) in/out */
                                        float *running_var,             /* (c) in/out */
                                        const float *__restrict__ sum,  /* (c) */
                                        const float *__restrict__ sqsum,/* (c) */
                                        const float *__restrict__ gamma,/* (c) */
                                        const float *__restrict__ beta, /* (c) */
                                        int c, long cnt, float eps, float momentum)
{
    const int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c) return;
    double mean, invstd, unbiased;
    batchnorm_part_stats(&mean, &invstd, &unbiased, &save_mean[ch], &save_invstd[ch],
                         (double)sum[ch], (double)sqsum[ch], (size_t)cnt, eps);
    batchnorm_running_update(&running_mean[ch], &running_var[ch], mean, unbiased, 1, momentum);
    const double s = (double)gamma[ch] * invstd;
    scale[ch] = cuda_from_f<T>((float)s);
    bias[ch] = cuda_from_f<T>((float)((double)beta[ch] - mean * s));
}

int cuda_bn_sums_finalize(struct cuda_ctx *c, void *scale, void *bias, struct tensor *save_mean,
                          struct tensor *save_invstd, struct tensor *running_mean,
                          struct tensor *running_var, const float *sum, const float *sqsum,
                          const struct tensor *gamma, const struct tensor *beta,
                          const struct tensor *x, const struct bn_attr *a)
{
    int rc = DR_OK;
    const int ch = x->c;
    const long cnt = (long)x->n * x->h * x->w;
    EXPECT(ch > 0 && (a->splits <= 1) && tensor_count(gamma) == (size_t)ch &&
               tensor_count(beta) == (size_t)ch && tensor_count(save_mean) == (size_t)ch &&
               tensor_count(save_invstd) == (size_t)ch,
           "bn from sums: %d channels, %d parts, vectors of %zu, %zu, %zu, %zu", ch, a->splits,
           tensor_count(gamma), tensor_count(beta), tensor_count(save_mean),
           tensor_count(save_invstd));
    CUDA_DISPATCH(c->dt, T, {
        bn_sums_finalize_kernel<T><<<(unsigned)((ch + 127) / 128), 128, 0, c->stream>>>(
            (T *)scale, (T *)bias, (float *)save_mean->data, (float *)save_invstd->data,
            (float *)running_mean->data, (float *)running_var->data, sum, sqsum,
            (const float *)gamma->data, (const float *)beta->data, ch, cnt, a->eps,
            a->momentum);
        /* reads sum, sqsum, gamma, beta and the running statistics; writes the saved and
         * running statistics (fp32) and scale, bias (T), c each */
        CHECK_LAUNCH(c, sizeof(float) * 6 * (size_t)ch,
                     sizeof(float) * 4 * (size_t)ch + 2 * sizeof(T) * (size_t)ch);
    });
cleanup:
    return rc;
}

/* One thread per channel: the prologue's scale and bias from the fused batch norm's
 * coefficients (bn_kernels_cuda.h, COEF_*). */
template <typename T>
__global__ void bn_prologue_kernel(T *__restrict__ scale,          /* (c) */
                                   T *__restrict__ bias,           /* (c) */
                                   const float *__restrict__ coef, /* (COEF_FWD_COUNT, c) */
                                   int c)
{
    const int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c) return;
    const double s = coef[COEF_SCALE * c + ch];
    const double mean = (double)coef[COEF_HI * c + ch] + (double)coef[COEF_LO * c + ch];
    scale[ch] = cuda_from_f<T>((float)s);
    bias[ch] = cuda_from_f<T>((float)((double)coef[COEF_SHIFT * c + ch] - mean * s));
}

int cuda_bn_prologue_from_coef(struct cuda_ctx *c, void *scale, void *bias, const float *coef,
                               int channels)
{
    int rc = DR_OK;
    EXPECT(channels > 0 && scale && bias && coef, "bn prologue: %d channels", channels);
    CUDA_DISPATCH(c->dt, T, {
        bn_prologue_kernel<T><<<(unsigned)((channels + 127) / 128), 128, 0, c->stream>>>(
            (T *)scale, (T *)bias, coef, channels);
        /* reads scale, hi, lo and shift ((c) floats each); writes scale, bias (T), c each */
        CHECK_LAUNCH(c, sizeof(float) * 4 * (size_t)channels, 2 * sizeof(T) * (size_t)channels);
    });
cleanup:
    return rc;
}

/* dx = eq_dy * dz + eq_x * x + eq_b per channel, V channels a thread; added to dx when
 * accumulate. */
template <typename T, int V>
__global__ void bn_eq_apply_kernel(T *__restrict__ dx,             /* (rows, c) */
                                   const T *__restrict__ dz,       /* (rows, c) */
                                   const T *__restrict__ x,        /* (rows, c) */
                                   const float *__restrict__ eq_dy, /* (c) */
                                   const float *__restrict__ eq_x,  /* (c) */
                                   const float *__restrict__ eq_b,  /* (c) */
                                   long rows, int c, int accumulate)
{
    typedef cuda_pack<T, V> P;
    const int vecs = c / V;
    FOR_CHANNELS(cv, vecs)
    {
        float a[V], b[V], e[V];
        for (int k = 0; k < V; k++) {
            a[k] = eq_dy[cv * V + k];
            b[k] = eq_x[cv * V + k];
            e[k] = eq_b[cv * V + k];
        }
        FOR_ROWS(r, rows)
        {
            const size_t i = (size_t)r * vecs + cv;
            const P zv = ((const P *)dz)[i], xv = ((const P *)x)[i];
            P out;
            if (accumulate) out = ((const P *)dx)[i];
            for (int k = 0; k < V; k++) {
                const float g = __fadd_rn(__fadd_rn(__fmul_rn(a[k], cuda_to_f<T>(zv.v[k])),
                                                    __fmul_rn(b[k], cuda_to_f<T>(xv.v[k]))),
                                          e[k]);
                out.v[k] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(out.v[k]), g) : g);
            }
            ((P *)dx)[i] = out;
        }
    }
}

template <typename T, int V>
static int bn_eq_apply_launch(struct cuda_ctx *c, T *dx, const T *dz, const T *x,
                              const float *eq_dy, const float *eq_x, const float *eq_b,
                              long rows, int ch, int accumulate)
{
    int rc = DR_OK;
    const size_t count = (size_t)rows * ch;
    const dim3 block = cuda_block_rows(ch / V);
    bn_eq_apply_kernel<T, V><<<cuda_grid_rows_cover(c, rows, block), block, 0, c->stream>>>(
        dx, dz, x, eq_dy, eq_x, eq_b, rows, ch, accumulate);
    /* reads dz, x (and dx when accumulating) and the three (ch) float vectors; writes dx */
    CHECK_LAUNCH(c, (size_t)(2 + (accumulate != 0)) * count * sizeof(T) + sizeof(float) * 3 * ch,
                 count * sizeof(T));
cleanup:
    return rc;
}

int cuda_bn_eq_apply(struct cuda_ctx *c, struct tensor *dx, const struct tensor *dz,
                     const struct tensor *x, const float *eq_dy, const float *eq_x,
                     const float *eq_b, int accumulate)
{
    int rc = DR_OK;
    const long rows = (long)x->n * x->h * x->w;
    EXPECT(tensor_same_shape(dx, x) && tensor_same_shape(dz, x),
           "bn apply: dx (%d, %d, %d, %d), dz (%d, %d, %d, %d) unlike x (%d, %d, %d, %d)", dx->n,
           dx->c, dx->h, dx->w, dz->n, dz->c, dz->h, dz->w, x->n, x->c, x->h, x->w);
    if (rows == 0) goto cleanup;
    CUDA_DISPATCH(c->dt, T, {
        T *tdx = (T *)dx->data;
        const T *tdz = (const T *)dz->data, *tx = (const T *)x->data;
        if (bn_width<T>(x->c, tdx, tdz, tx) > 1)
            return bn_eq_apply_launch<T, cuda_vec_width<T>()>(c, tdx, tdz, tx, eq_dy, eq_x, eq_b,
                                                             rows, x->c, accumulate);
        return bn_eq_apply_launch<T, 1>(c, tdx, tdz, tx, eq_dy, eq_x, eq_b, rows, x->c,
                                        accumulate);
    });
cleanup:
    return rc;
}

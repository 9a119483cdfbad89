/* Per-channel reductions over NHWC activations and the small per-channel kernels built
 * on them: bias addition, bias gradients, and the fp32 conversion of half weight
 * gradients. Sums run in double in a fixed order (threads over row strides, then a fixed
 * tree of 8 row lanes, then the parts in order), so results do not vary between runs. */
#include "cuda_internal.h"

#define RED_X 32      /* channels per block: one warp reads 32 neighbouring channels */
#define RED_Y 8       /* row lanes per block */
#define RED_MAX_PARTS 1024

int cuda_reduce_parts(long rows)
{
    long parts = (rows + 255) / 256;
    if (parts < 1) parts = 1;
    if (parts > RED_MAX_PARTS) parts = RED_MAX_PARTS;
    return (int)parts;
}

/* Block (RED_X, RED_Y), grid (ceil(channels / RED_X), parts, groups). Thread (x, y) of
 * block (bx, by, bz) sums channel bx*RED_X + x of group bz over rows
 * by*RED_Y + y + k*parts*RED_Y. */
template <typename T, int MODE>
__global__ void reduce_partial_kernel(double *partial,     /* (groups, MODE, parts, channels) */
                                      const T *a,          /* (groups, rows, channels) */
                                      const T *b,          /* (groups, rows, channels) or NULL */
                                      long rows, int channels, int parts)
{
    __shared__ double sh[3][RED_Y][RED_X];
    const int ch = blockIdx.x * RED_X + threadIdx.x;
    const size_t group_rows = (size_t)blockIdx.z * (size_t)rows * (size_t)channels;
    a += group_rows;
    if (MODE == REDUCE_BN_BWD) b += group_rows;
    partial += (size_t)blockIdx.z * MODE * parts * channels;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0;
    if (ch < channels) {
        for (long r = (long)blockIdx.y * RED_Y + threadIdx.y; r < rows;
             r += (long)parts * RED_Y) {
            const double va = (double)cuda_to_f<T>(a[r * channels + ch]);
            s0 += va;
            if (MODE == REDUCE_SUMSQ) s1 += va * va;
            if (MODE == REDUCE_BN_BWD) {
                const double vb = (double)cuda_to_f<T>(b[r * channels + ch]);
                s1 += vb;
                s2 += vb * va;
            }
        }
    }
    sh[0][threadIdx.y][threadIdx.x] = s0;
    sh[1][threadIdx.y][threadIdx.x] = s1;
    sh[2][threadIdx.y][threadIdx.x] = s2;
    __syncthreads();
    if (threadIdx.y != 0 || ch >= channels) return;
    for (int q = 0; q < MODE; q++) {
        double t = 0.0;
        for (int j = 0; j < RED_Y; j++) t += sh[q][j][threadIdx.x];
        partial[((size_t)q * parts + blockIdx.y) * channels + ch] = t;
    }
}

/* One thread per (q, channel): the parts summed in order. */
template <typename O>
__global__ void reduce_finish_kernel(O *out,                 /* (nq, channels) */
                                     const double *partial,  /* (nq, parts, channels) */
                                     int channels, int parts, int nq)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= nq * channels) return;
    const int q = i / channels, ch = i % channels;
    double t = 0.0;
    for (int p = 0; p < parts; p++) t += partial[((size_t)q * parts + p) * channels + ch];
    out[i] = (O)t;
}

int cuda_reduce_partial(struct cuda_ctx *c, double *partial, const void *a, const void *b,
                        long rows, int channels, int parts, int groups,
                        enum cuda_reduce_mode mode)
{
    int rc = DR_OK;
    const dim3 block(RED_X, RED_Y), grid((unsigned)((channels + RED_X - 1) / RED_X),
                                         (unsigned)parts, (unsigned)groups);
    size_t rd = 0, wr = 0;
    EXPECT(channels > 0 && parts >= 1 && parts <= RED_MAX_PARTS && rows >= 0 && groups >= 1 &&
               groups <= 65535,
           "reduce: %d channels, %d parts, %ld rows, %d groups", channels, parts, rows, groups);
    /* reads a (and b for REDUCE_BN_BWD), (groups, rows, channels) each; writes partial,
     * groups × mode × parts × channels doubles (the mode is its number of quantities) */
    rd = (size_t)(mode == REDUCE_BN_BWD ? 2 : 1) * groups * rows * channels * cuda_dt_size(c->dt);
    wr = sizeof(double) * groups * (size_t)mode * parts * channels;
    CUDA_DISPATCH(c->dt, T, {
        const T *ta = (const T *)a, *tb = (const T *)b;
        if (mode == REDUCE_SUM) {
            reduce_partial_kernel<T, REDUCE_SUM>
                <<<grid, block, 0, c->stream>>>(partial, ta, tb, rows, channels, parts);
            CHECK_LAUNCH(c, rd, wr);
        } else if (mode == REDUCE_SUMSQ) {
            reduce_partial_kernel<T, REDUCE_SUMSQ>
                <<<grid, block, 0, c->stream>>>(partial, ta, tb, rows, channels, parts);
            CHECK_LAUNCH(c, rd, wr);
        } else {
            reduce_partial_kernel<T, REDUCE_BN_BWD>
                <<<grid, block, 0, c->stream>>>(partial, ta, tb, rows, channels, parts);
            CHECK_LAUNCH(c, rd, wr);
        }
    });
cleanup:
    return rc;
}

int cuda_reduce_finish(struct cuda_ctx *c, double *out, const double *partial, int channels,
                       int parts, int nq)
{
    int rc = DR_OK;
    const int total = nq * channels;
    EXPECT(total > 0, "reduce finish: %d x %d sums", nq, channels);
    reduce_finish_kernel<double><<<(total + CUDA_THREADS - 1) / CUDA_THREADS, CUDA_THREADS, 0,
                                   c->stream>>>(out, partial, channels, parts, nq);
    /* reads partial (nq, parts, channels), writes out (nq, channels), doubles */
    CHECK_LAUNCH(c, sizeof(double) * total * parts, sizeof(double) * total);
cleanup:
    return rc;
}

int cuda_channel_sum(struct cuda_ctx *c, float *out, const void *a, long rows, int channels)
{
    int rc = DR_OK;
    const int parts = cuda_reduce_parts(rows);
    void *buf = NULL;
    if (channels <= 0) return DR_OK;
    TRY(cuda_scratch(c, SLOT_REDUCE, sizeof(double) * (size_t)parts * channels, &buf));
    TRY(cuda_reduce_partial(c, (double *)buf, a, NULL, rows, channels, parts, 1, REDUCE_SUM));
    reduce_finish_kernel<float><<<(channels + CUDA_THREADS - 1) / CUDA_THREADS, CUDA_THREADS, 0,
                                  c->stream>>>(out, (const double *)buf, channels, parts, 1);
    /* reads partial (parts, channels) doubles, writes out (channels) floats */
    CHECK_LAUNCH(c, sizeof(double) * parts * channels, sizeof(float) * channels);
cleanup:
    return rc;
}

/* Block (CH_X, CH_Y), grid cuda_grid_rows. */
template <typename T>
__global__ void add_bias_kernel(T *y /* (rows, channels) */, const float *b, long rows,
                                int channels)
{
    FOR_CHANNELS(ch, channels)
    {
        const float bias = b[ch];
        FOR_ROWS(r, rows)
        {
            const size_t i = (size_t)r * channels + ch;
            y[i] = cuda_from_f<T>(__fadd_rn(cuda_to_f<T>(y[i]), bias));
        }
    }
}

int cuda_add_bias(struct cuda_ctx *c, void *y, const float *b, long rows, int channels)
{
    int rc = DR_OK;
    if (rows <= 0 || channels <= 0) return DR_OK;
    CUDA_DISPATCH(c->dt, T,
                  add_bias_kernel<T><<<cuda_grid_rows(c, rows), dim3(CH_X, CH_Y), 0,
                                       c->stream>>>((T *)y, b, rows, channels));
    /* reads y (rows, channels) and b (channels floats), writes y */
    CHECK_LAUNCH(c, (size_t)rows * channels * cuda_dt_size(c->dt) + sizeof(float) * channels,
                 (size_t)rows * channels * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

template <typename T>
__global__ void to_fp32_kernel(float *out, const T *in, size_t count)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        out[i] = cuda_to_f<T>(in[i]);
}

int cuda_to_fp32(struct cuda_ctx *c, float *out, const void *in, size_t count)
{
    int rc = DR_OK;
    if (count == 0) return DR_OK;
    CUDA_DISPATCH(c->dt, T,
                  to_fp32_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
                      out, (const T *)in, count));
    /* reads count elements of the compute type, writes count floats */
    CHECK_LAUNCH(c, count * cuda_dt_size(c->dt), count * sizeof(float));
cleanup:
    return rc;
}

/* Per-channel reductions over NHWC activations and the small per-channel kernels built
 * on them: bias addition, bias gradients, and the fp32 conversion of half weight
 * gradients. Sums run in double in a fixed order (threads over row strides, then a fixed
 * tree of 8 row lanes, then the parts by the fixed tree of cuda_tree_sum), so results do
 * not vary between runs. */
#include "bn_kernels_cuda.h"
#include "cuda_internal.h"


int cuda_reduce_parts(long rows)
{
    long parts = (rows + 255) / 256;
    if (parts < 1) parts = 1;
    if (parts > RED_MAX_PARTS) parts = RED_MAX_PARTS;
    return (int)parts;
}

/* Block (RED_X, FIN_Y), grid (ceil(channels / RED_X), nq): quantity blockIdx.y's parts
 * summed by the fixed tree of cuda_tree_sum. */
template <typename O>
__global__ void reduce_finish_kernel(O *__restrict__ out,                /* (nq, channels) */
                                     const double *__restrict__ partial, /* (nq, parts,
                                                                            channels) */
                                     int channels, int parts)
{
    __shared__ double sh[FIN_Y][RED_X];
    const int ch = blockIdx.x * RED_X + threadIdx.x, q = blockIdx.y;
    const double t = cuda_tree_sum(sh, partial + (size_t)q * parts * channels, parts, channels,
                                   ch);
    if (threadIdx.y == 0 && ch < channels) out[(size_t)q * channels + ch] = (O)t;
}

/* The grid of reduce_finish_kernel. */
static dim3 finish_grid(int channels, int nq)
{
    return dim3((unsigned)((channels + RED_X - 1) / RED_X), (unsigned)nq);
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
        const T *ta = (const T *)a;
        const load_b<T> lb = {(const T *)b};
        if (mode == REDUCE_SUM) {
            reduce_partial_kernel<T, REDUCE_SUM, load_b<T>>
                <<<grid, block, 0, c->stream>>>(partial, ta, lb, rows, channels, parts);
            CHECK_LAUNCH(c, rd, wr);
        } else if (mode == REDUCE_SUMSQ) {
            reduce_partial_kernel<T, REDUCE_SUMSQ, load_b<T>>
                <<<grid, block, 0, c->stream>>>(partial, ta, lb, rows, channels, parts);
            CHECK_LAUNCH(c, rd, wr);
        } else {
            reduce_partial_kernel<T, REDUCE_BN_BWD, load_b<T>>
                <<<grid, block, 0, c->stream>>>(partial, ta, lb, rows, channels, parts);
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
    EXPECT(total > 0 && nq <= 65535, "reduce finish: %d x %d sums", nq, channels);
    reduce_finish_kernel<double>
        <<<finish_grid(channels, nq), dim3(RED_X, FIN_Y), 0, c->stream>>>(out, partial,
                                                                          channels, parts);
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
    reduce_finish_kernel<float><<<finish_grid(channels, 1), dim3(RED_X, FIN_Y), 0, c->stream>>>(
        out, (const double *)buf, channels, parts);
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

/* The temperature layer on the CUDA engine: the twin of kernels/cpu/temperature.c
 * (kernels/temperature.h). y and dx elementwise in fp32 with explicit rounding (__fmul_rn,
 * __fadd_rn: nothing fused into a multiply-add), rounded once to the activation type, so
 * that an fp32 result equals the CPU's; t read from its fp32 master in device memory when
 * the kernel runs (a captured step replays with the trained value). dt = sum of dy * x in
 * double: each thread sums a fixed stride of elements, each block its threads by a fixed
 * tree into one partial per block, one block the partials likewise; the number of blocks
 * is a function of the element count alone, so the sum is the same on every run and
 * every device. Also the TEMPERATURE_FWD and TEMPERATURE_BWD nodes' runners. */
#include "cuda_internal.h"

#define TEMP_THREADS 256      /* threads per block (a power of 2: the tree sums) */
#define TEMP_MAX_PARTS 256    /* most blocks of the backward, partial sums of dt */
#define TEMP_PER_PART 4096    /* elements per block below TEMP_MAX_PARTS blocks */

/* The backward's blocks for count elements: one per TEMP_PER_PART, 1 .. TEMP_MAX_PARTS. */
static int temperature_parts(size_t count)
{
    const size_t parts = (count + TEMP_PER_PART - 1) / TEMP_PER_PART;
    return parts < 1 ? 1 : parts > TEMP_MAX_PARTS ? TEMP_MAX_PARTS : (int)parts;
}

/* sh[0] = the sum of sh[0 .. TEMP_THREADS) by a fixed tree (every thread of the block
 * calls it, after writing its own sh[threadIdx.x]). */
__device__ void temperature_tree_sum(double *sh)
{
    __syncthreads();
    for (int w = TEMP_THREADS / 2; w > 0; w /= 2) {
        if ((int)threadIdx.x < w) sh[threadIdx.x] = sh[threadIdx.x] + sh[threadIdx.x + w];
        __syncthreads();
    }
}

/* y = t * x over count elements, any layout. */
template <typename T>
__global__ void temperature_fwd_kernel(T *__restrict__ y,        /* (count) */
                                       const T *__restrict__ x,  /* (count) */
                                       const float *t,           /* (1) fp32 */
                                       size_t count)
{
    const float tv = *t;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        y[i] = cuda_from_f<T>(__fmul_rn(tv, cuda_to_f<T>(x[i])));
}

/* Block TEMP_THREADS, grid parts: dx (=|+=) t * dy (dx NULL: not computed), and block b's
 * partial sum of dy * x in double over its threads' elements b * TEMP_THREADS + threadIdx.x
 * + k * parts * TEMP_THREADS into partial[b] (partial NULL: not computed). The product of
 * two fp32 values is exact in double, so a contracted multiply-add rounds the same. */
template <typename T>
__global__ void temperature_bwd_kernel(T *__restrict__ dx,          /* (count) or NULL */
                                       double *__restrict__ partial, /* (parts) or NULL */
                                       const T *__restrict__ dy,    /* (count) */
                                       const T *__restrict__ x,     /* (count) */
                                       const float *t,              /* (1) fp32 */
                                       size_t count, int accumulate)
{
    __shared__ double sh[TEMP_THREADS];
    const float tv = *t;
    double s = 0.0;
    for (size_t i = (size_t)blockIdx.x * TEMP_THREADS + threadIdx.x; i < count;
         i += (size_t)gridDim.x * TEMP_THREADS) {
        const float g = cuda_to_f<T>(dy[i]);
        if (partial) s += (double)g * (double)cuda_to_f<T>(x[i]);
        if (dx) {
            const float v = __fmul_rn(tv, g);
            dx[i] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(dx[i]), v) : v);
        }
    }
    if (!partial) return;   /* the same for every thread of the block */
    sh[threadIdx.x] = s;
    temperature_tree_sum(sh);
    if (threadIdx.x == 0) partial[blockIdx.x] = sh[0];
}

/* One block of TEMP_THREADS: dt = the sum of partial[0 .. parts), each thread's stride of
 * them in order, then the fixed tree, rounded once to fp32. */
__global__ void temperature_finish_kernel(float *dt, const double *partial, int parts)
{
    __shared__ double sh[TEMP_THREADS];
    double s = 0.0;
    for (int b = (int)threadIdx.x; b < parts; b += TEMP_THREADS) s += partial[b];
    sh[threadIdx.x] = s;
    temperature_tree_sum(sh);
    if (threadIdx.x == 0) *dt = (float)sh[0];
}

/* y = t * x, both of x's count. */
static int temperature_forward(struct cuda_ctx *c, struct tensor *y, const struct tensor *x,
                               const struct tensor *t)
{
    int rc = DR_OK;
    const size_t count = tensor_count(x);
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T,
                  temperature_fwd_kernel<T>
                  <<<cuda_grid_cover(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)y->data, (const T *)x->data, (const float *)t->data, count));
    /* reads t and x, writes y: count elements */
    CHECK_LAUNCH(c, sizeof(float) + count * cuda_dt_size(c->dt), count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

/* dx (=|+=) t * dy and dt = sum of dy * x (kernels/temperature.h); a NULL dx or dt, or
 * one without data, is not computed. */
static int temperature_backward(struct cuda_ctx *c, struct tensor *dx, struct tensor *dt,
                                const struct tensor *dy, const struct tensor *x,
                                const struct tensor *t, int accumulate)
{
    int rc = DR_OK;
    const size_t count = tensor_count(dy), es = cuda_dt_size(c->dt);
    const int parts = temperature_parts(count);
    void *dxd = dx && dx->data ? dx->data : NULL;
    float *dtd = dt && dt->data ? (float *)dt->data : NULL;
    void *buf = NULL;
    TRY(cuda_enter(c));
    if (count == 0) {   /* an empty batch: the gradient of t is zero */
        if (dtd) CHECK_CUDA(cuda_counted_memset(c, dtd, sizeof(float)));
        goto cleanup;
    }
    if (!dxd && !dtd) goto cleanup;
    if (dtd) TRY(cuda_scratch(c, SLOT_REDUCE, sizeof(double) * (size_t)parts, &buf));
    CUDA_DISPATCH(c->dt, T,
                  temperature_bwd_kernel<T><<<parts, TEMP_THREADS, 0, c->stream>>>(
                      (T *)dxd, (double *)buf, (const T *)dy->data, (const T *)x->data,
                      (const float *)t->data, count, accumulate));
    /* reads t and dy (x for dt, dx when accumulating), writes dx (count elements) and the
     * partial sums (parts doubles) */
    CHECK_LAUNCH(c, sizeof(float) + count * es * (size_t)(1 + (dtd != NULL) +
                                                          (dxd && accumulate)),
                 (dxd ? count * es : 0) + (dtd ? sizeof(double) * (size_t)parts : 0));
    if (!dtd) goto cleanup;
    temperature_finish_kernel<<<1, TEMP_THREADS, 0, c->stream>>>(dtd, (const double *)buf,
                                                                  parts);
    /* reads the partial sums, writes dt */
    CHECK_LAUNCH(c, sizeof(double) * (size_t)parts, sizeof(float));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the nodes' runners */

int cuda_run_temperature_fwd(void *ctx, const struct plan_node *n)
{
    struct tensor *y = n->dst[PLAN_Y];
    if (!y->data) return DR_OK;   /* not computed */
    return temperature_forward((struct cuda_ctx *)ctx, y, n->src[PLAN_X], n->src[PLAN_W]);
}

int cuda_run_temperature_bwd(void *ctx, const struct plan_node *n)
{
    return temperature_backward((struct cuda_ctx *)ctx, n->dst[PLAN_DX], n->dst[PLAN_DW],
                                n->src[PLAN_DY], n->src[PLAN_BWD_X], n->src[PLAN_BWD_W],
                                PLAN_NODE_ACC(n, PLAN_DX));
}

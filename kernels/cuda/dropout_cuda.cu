/* Dropout on NHWC activations: the CUDA twin of kernels/cpu/dropout.c. One thread per
 * element (grid-stride) finds the element's canonical NCHW index and draws its mask bit
 * with the shared dropout_keep() (kernels/dropout.h: the same Philox counters as the CPU
 * engine), so the mask is the CPU's bit for bit; the value is computed in fp32 with
 * explicit rounding (__fmul_rn, __fadd_rn: nothing fused into a multiply-add) and rounded
 * once to the activation type, so an fp32 result equals the CPU's. The step is read from
 * the cursor in device memory when the kernel runs, so that a captured step replays with
 * each step's own mask. Also the DROPOUT_FWD and DROPOUT_BWD nodes' runners. */
#include "cuda_internal.h"

/* out (=|+=) in * s where kept, over the count elements of an (n, h, w, c) tensor, at the
 * step cursor[CURSOR_STEP] (kernels/dropout.h). */
template <typename T>
__global__ void dropout_kernel(T *__restrict__ out,        /* (n, h, w, c) */
                               const T *__restrict__ in,   /* (n, h, w, c) */
                               const int32_t *cursor,      /* (PLAN_CURSOR_LEN) */
                               struct dropout_attr a, float s, int c, int h, int w,
                               size_t count, int accumulate)
{
    const uint32_t step = (uint32_t)cursor[CURSOR_STEP];
    for (size_t q = (size_t)blockIdx.x * blockDim.x + threadIdx.x; q < count;
         q += (size_t)gridDim.x * blockDim.x) {
        const size_t pix = q / (size_t)c;   /* (image, row, column) */
        const int k = (int)(q % (size_t)c);
        const int xx = (int)(pix % (size_t)w), yy = (int)(pix / (size_t)w % (size_t)h);
        const size_t j = pix / ((size_t)w * (size_t)h);
        const uint64_t i = (((uint64_t)j * (uint64_t)c + (uint64_t)k) * (uint64_t)h +
                            (uint64_t)yy) * (uint64_t)w + (uint64_t)xx;
        const int keep = dropout_keep(&a, step, i);
        const float v = __fmul_rn(cuda_to_f<T>(in[q]), s);
        if (accumulate) {
            if (keep) out[q] = cuda_from_f<T>(__fadd_rn(cuda_to_f<T>(out[q]), v));
        } else {
            out[q] = cuda_from_f<T>(keep ? v : 0.0f);
        }
    }
}

/* out (=|+=) in masked and scaled, both tensors of `shape`'s shape. */
static int dropout_launch(struct cuda_ctx *c, void *out, const void *in,
                          const struct tensor *shape, const struct tensor *cursor,
                          const struct dropout_attr *a, int accumulate)
{
    int rc = DR_OK;
    const size_t count = tensor_count(shape);
    const float s = dropout_scale(a->p);
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T,
                  dropout_kernel<T><<<cuda_grid_cover(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)out, (const T *)in, (const int32_t *)cursor->data, *a, s, shape->c,
                      shape->h, shape->w, count, accumulate));
    /* reads the cursor and in (and out when accumulating), writes out: count elements */
    CHECK_LAUNCH(c, PLAN_CURSOR_LEN * sizeof(int32_t) +
                        (size_t)(1 + (accumulate != 0)) * count * cuda_dt_size(c->dt),
                 count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the nodes' runners */

int cuda_run_dropout_fwd(void *ctx, const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    if (!n->dst[PLAN_Y]->data) return DR_OK;   /* not computed */
    return dropout_launch((struct cuda_ctx *)ctx, n->dst[PLAN_Y]->data, x->data, x,
                          n->src[PLAN_DROPOUT_CURSOR], &n->par.dropout, 0);
}

int cuda_run_dropout_bwd(void *ctx, const struct plan_node *n)
{
    const struct tensor *dx = n->dst[PLAN_DX];
    if (!dx || !dx->data) return DR_OK;   /* not computed */
    return dropout_launch((struct cuda_ctx *)ctx, dx->data, n->src[PLAN_DY]->data, dx,
                          n->src[PLAN_DROPOUT_CURSOR], &n->par.dropout,
                          PLAN_NODE_ACC(n, PLAN_DX));
}

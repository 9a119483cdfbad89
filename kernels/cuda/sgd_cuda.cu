/* SGD with momentum on fp32 parameters, in exactly the per-element order of
 * kernels/optimizer.h (each product and sum rounded separately, as the CPU twin does),
 * rewriting the parameter's compute copy in half precisions so that the next forward
 * pass sees the updated weights. */
#include "cuda_internal.h"

template <typename T>
__global__ void sgd_kernel(float *w, float *v, float *dw, T *copy /* NULL in fp32 */, float lr,
                           float wd, float momentum, int nesterov, size_t count)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const float wi = w[i];
        const float step = __fmul_rn(-lr, __fadd_rn(dw[i], __fmul_rn(wd, wi)));
        const float vel = __fadd_rn(__fmul_rn(momentum, v[i]), step);
        const float nw = nesterov ? __fadd_rn(wi, __fadd_rn(step, __fmul_rn(momentum, vel)))
                                  : __fadd_rn(wi, vel);
        dw[i] = step;
        v[i] = vel;
        w[i] = nw;
        if (copy) copy[i] = cuda_from_f<T>(nw);
    }
}

int cuda_sgd_update(void *ctx, struct tensor *w, struct tensor *v, struct tensor *dw, float lr,
                    float wd, float momentum, int nesterov)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(w);
    EXPECT(tensor_count(v) == count && tensor_count(dw) == count,
           "sgd: w, v and dw sizes differ (%zu, %zu, %zu)", count, tensor_count(v),
           tensor_count(dw));
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T, {
        T *copy = c->dt == CUDA_F32 ? (T *)NULL : (T *)cuda_param_copy(c, w);
        sgd_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
            (float *)w->data, (float *)v->data, (float *)dw->data, copy, lr, wd, momentum,
            nesterov, count);
    });
    CHECK_LAUNCH();
cleanup:
    return rc;
}

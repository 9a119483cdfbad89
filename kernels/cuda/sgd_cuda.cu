/* SGD with momentum and weight averaging on fp32 parameters, in exactly the per-element
 * order of kernels/optimizer.h (each product and sum rounded separately, as the CPU twin
 * does), rewriting the compute copy of every parameter they change in half precisions so
 * that the next forward pass sees the new weights. */
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
    /* reads w, v and dw (count floats each); writes them, and the compute copy of w in
     * half precisions */
    CHECK_LAUNCH(c, 3 * count * sizeof(float),
                 3 * count * sizeof(float) + (c->dt == CUDA_F32 ? 0 : count * cuda_dt_size(c->dt)));
cleanup:
    return rc;
}

/* avg = s * avg + t * w (s = 1 - t), then w = avg when copy_back; the compute copies (NULL
 * in fp32 and for F32 tensors) follow. */
template <typename T>
__global__ void lerp_kernel(float *avg, float *w, T *avg_copy, T *w_copy, float s, float t,
                            int copy_back, size_t count)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const float a = __fadd_rn(__fmul_rn(s, avg[i]), __fmul_rn(t, w[i]));
        avg[i] = a;
        if (avg_copy) avg_copy[i] = cuda_from_f<T>(a);
        if (!copy_back) continue;
        w[i] = a;
        if (w_copy) w_copy[i] = cuda_from_f<T>(a);
    }
}

int cuda_param_lerp(void *ctx, struct tensor *avg, struct tensor *w, float t, int copy_back)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const float s = 1.0f - t;   /* rounded as the CPU twin rounds it */
    const int copies = c->dt != CUDA_F32 && avg->kind == TENSOR_PARAM;
    size_t count = 0;
    TRY(backend_check_lerp(avg, w));
    count = tensor_count(avg);
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T, {
        T *avg_copy = copies ? (T *)cuda_param_copy(c, avg) : (T *)NULL;
        T *w_copy = copies && copy_back ? (T *)cuda_param_copy(c, w) : (T *)NULL;
        lerp_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
            (float *)avg->data, (float *)w->data, avg_copy, w_copy, s, t, copy_back, count);
    });
    /* reads avg and w (count floats each); writes avg (and w when copying back), each with
     * its compute copy when it has one */
    CHECK_LAUNCH(c, 2 * count * sizeof(float),
                 (size_t)(1 + (copy_back != 0)) *
                     (count * sizeof(float) + (copies ? count * cuda_dt_size(c->dt) : 0)));
cleanup:
    return rc;
}

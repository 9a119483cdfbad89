/* Batch norm fused with the activation after it (cuda_internal.h, "fused batch norm"):
 * the forward's elementwise pass applying the activation, and the backward's sums and
 * elementwise pass with the activation's backward folded in, for every activation kind.
 * The kernels are bn_kernels_cuda.h's, whose arithmetic is explicit rounding intrinsics,
 * so they give the bits of the unfused ops (bn_cuda.cu, reduce_cuda.cu, eltwise_cuda.cu);
 * this file is compiled as eltwise_cuda.cu is, since the activations' library functions
 * (expf, erfcf) hold fused multiply-adds of their own. */
#include "bn_kernels_cuda.h"
#include "cuda_internal.h"

template <typename T, enum act_kind K>
static int reduce_partial_act(struct cuda_ctx *c, double *partial, const T *a, const T *d,
                              const float *fcoef, long rows, int channels, int parts,
                              int groups, float alpha)
{
    int rc = DR_OK;
    const dim3 block(RED_X, RED_Y), grid((unsigned)((channels + RED_X - 1) / RED_X),
                                         (unsigned)parts, (unsigned)groups);
    const act_grad_b<T, K> src = {d, fcoef, alpha, 0.0f, 0.0f, 0.0f, 0.0f};
    reduce_partial_kernel<T, REDUCE_BN_BWD, act_grad_b<T, K>>
        <<<grid, block, 0, c->stream>>>(partial, a, src, rows, channels, parts);
    /* reads a and d, (groups, rows, channels) each, and fcoef (groups, COEF_FWD_COUNT,
     * channels) floats; writes partial, groups × 3 × parts × channels doubles */
    CHECK_LAUNCH(c, (size_t)2 * groups * rows * channels * sizeof(T) +
                        sizeof(float) * COEF_FWD_COUNT * groups * channels,
                 sizeof(double) * groups * 3 * (size_t)parts * channels);
cleanup:
    return rc;
}

int cuda_reduce_partial_act(struct cuda_ctx *c, double *partial, const void *a, const void *d,
                            const float *fcoef, long rows, int channels, int parts, int groups,
                            enum act_kind kind, float alpha)
{
    int rc = DR_OK;
    EXPECT(channels > 0 && parts >= 1 && parts <= RED_MAX_PARTS && rows >= 0 && groups >= 1 &&
               groups <= 65535,
           "reduce: %d channels, %d parts, %ld rows, %d groups", channels, parts, rows, groups);
    CUDA_DISPATCH(c->dt, T, {
        const T *ta = (const T *)a, *td = (const T *)d;
        ACT_DISPATCH(kind, K, reduce_partial_act<T, K>(c, partial, ta, td, fcoef, rows,
                                                       channels, parts, groups, alpha));
    });
    FAIL(DR_ERR_INTERNAL, "reduce: no fused kernel for activation kind %d", (int)kind);
cleanup:
    return rc;
}

int cuda_bn_apply_act(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                      const struct tensor *res, const struct cuda_bn_act *act,
                      const struct tensor *x, const float *coef, long split_rows, int ch,
                      int splits)
{
    int rc = DR_OK;
    const float alpha = act->alpha;
    CUDA_DISPATCH(c->dt, T, {
        T *ty = y ? (T *)y->data : NULL, *to = (T *)out->data;
        const T *tx = (const T *)x->data, *tr = res ? (const T *)res->data : NULL;
        ACT_DISPATCH(act->kind, K, bn_apply_width<T, K>(c, ty, to, tx, tr, coef, split_rows, ch,
                                                        splits, alpha));
    });
    FAIL(DR_ERR_INTERNAL, "bn: no fused kernel for activation kind %d", (int)act->kind);
cleanup:
    return rc;
}

int cuda_bn_backward_apply_act(struct cuda_ctx *c, struct tensor *dx, const struct tensor *dy,
                             const struct tensor *x, const float *coef,
                             const struct cuda_bn_act *act, const float *fcoef, long split_rows,
                             int ch, int splits, int accumulate)
{
    int rc = DR_OK;
    const float alpha = act->alpha;
    CUDA_DISPATCH(c->dt, T, {
        T *tdx = (T *)dx->data;
        const T *tdy = (const T *)dy->data, *tx = (const T *)x->data;
        ACT_DISPATCH(act->kind, K, bn_backward_apply_width<T, K>(c, tdx, tdy, tx, coef, fcoef,
                                                                 split_rows, ch, splits,
                                                                 accumulate, alpha));
    });
    FAIL(DR_ERR_INTERNAL, "bn backward: no fused kernel for activation kind %d",
         (int)act->kind);
cleanup:
    return rc;
}


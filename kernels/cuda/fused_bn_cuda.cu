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
        switch (kind) {
        case ACT_RELU:
            return reduce_partial_act<T, ACT_RELU>(c, partial, ta, td, fcoef, rows, channels,
                                                   parts, groups, alpha);
        case ACT_CELU:
            return reduce_partial_act<T, ACT_CELU>(c, partial, ta, td, fcoef, rows, channels,
                                                   parts, groups, alpha);
        case ACT_GELU:
            return reduce_partial_act<T, ACT_GELU>(c, partial, ta, td, fcoef, rows, channels,
                                                   parts, groups, alpha);
        case ACT_SILU:
            return reduce_partial_act<T, ACT_SILU>(c, partial, ta, td, fcoef, rows, channels,
                                                   parts, groups, alpha);
        case ACT_KIND_COUNT: break;
        }
    });
    FAIL(DR_ERR_INTERNAL, "reduce: no fused kernel for activation kind %d", (int)kind);
cleanup:
    return rc;
}

/* Launches bn_apply_kernel<T, V, K> on splits parts of split_rows rows. */
template <typename T, int V, enum act_kind K>
static int bn_apply_launch(struct cuda_ctx *c, T *y, T *out, const T *x, const T *res,
                           const float *coef, long split_rows, int ch, int splits, float alpha)
{
    int rc = DR_OK;
    const size_t count = (size_t)split_rows * splits * ch;
    const dim3 block = cuda_block_rows(ch / V);
    bn_apply_kernel<T, V, K>
        <<<dim3(cuda_grid_rows_cover(c, split_rows, block), (unsigned)splits), block, 0,
           c->stream>>>(y, out, x, res, coef, split_rows, ch, alpha);
    /* reads x (and res when adding it) and coef (splits, COEF_FWD_COUNT, ch) floats; writes
     * y when it is kept and the activation's (or the add's) output when there is one */
    CHECK_LAUNCH(c, count * sizeof(T) * (1 + (res != NULL)) +
                        sizeof(float) * COEF_FWD_COUNT * splits * ch,
                 count * sizeof(T) * ((y != NULL) + (K != ACT_NONE)));
cleanup:
    return rc;
}

template <typename T, enum act_kind K>
static int bn_apply_width(struct cuda_ctx *c, T *y, T *out, const T *x, const T *res,
                          const float *coef, long split_rows, int ch, int splits, float alpha)
{
    if (bn_width<T>(ch, y, out, x) > 1 && cuda_aligned16(res))
        return bn_apply_launch<T, cuda_vec_width<T>(), K>(c, y, out, x, res, coef, split_rows,
                                                         ch, splits, alpha);
    return bn_apply_launch<T, 1, K>(c, y, out, x, res, coef, split_rows, ch, splits, alpha);
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
        switch (act->kind) {
        case ACT_RELU:
            return bn_apply_width<T, ACT_RELU>(c, ty, to, tx, tr, coef, split_rows, ch, splits,
                                               alpha);
        case ACT_CELU:
            return bn_apply_width<T, ACT_CELU>(c, ty, to, tx, tr, coef, split_rows, ch, splits,
                                               alpha);
        case ACT_GELU:
            return bn_apply_width<T, ACT_GELU>(c, ty, to, tx, tr, coef, split_rows, ch, splits,
                                               alpha);
        case ACT_SILU:
            return bn_apply_width<T, ACT_SILU>(c, ty, to, tx, tr, coef, split_rows, ch, splits,
                                               alpha);
        case ACT_KIND_COUNT: break;
        }
    });
    FAIL(DR_ERR_INTERNAL, "bn: no fused kernel for activation kind %d", (int)act->kind);
cleanup:
    return rc;
}

/* Launches bn_backward_apply_kernel<T, V, K>. */
template <typename T, int V, enum act_kind K>
static int bn_backward_apply_launch(struct cuda_ctx *c, T *dx, const T *dy, const T *x,
                                    const float *coef, const float *fcoef, long split_rows,
                                    int ch, int splits, int accumulate, float alpha)
{
    int rc = DR_OK;
    const size_t count = (size_t)split_rows * splits * ch;
    const dim3 block = cuda_block_rows(ch / V);
    bn_backward_apply_kernel<T, V, K>
        <<<dim3(cuda_grid_rows_cover(c, split_rows, block), (unsigned)splits), block, 0,
           c->stream>>>(dx, dy, x, coef, fcoef, split_rows, ch, accumulate, alpha);
    /* reads dy, x (and dx when accumulating), coef (splits, COEF_BWD_COUNT, ch) floats and,
     * with an activation folded in, fcoef (splits, COEF_FWD_COUNT, ch) floats; writes dx */
    CHECK_LAUNCH(c, (size_t)(2 + (accumulate != 0)) * count * sizeof(T) +
                        sizeof(float) * (COEF_BWD_COUNT + (K != ACT_NONE ? COEF_FWD_COUNT : 0)) *
                            splits * ch,
                 count * sizeof(T));
cleanup:
    return rc;
}

template <typename T, enum act_kind K>
static int bn_backward_apply_width(struct cuda_ctx *c, T *dx, const T *dy, const T *x,
                                   const float *coef, const float *fcoef, long split_rows,
                                   int ch, int splits, int accumulate, float alpha)
{
    if (bn_width<T>(ch, dx, dy, x) > 1)
        return bn_backward_apply_launch<T, cuda_vec_width<T>(), K>(
            c, dx, dy, x, coef, fcoef, split_rows, ch, splits, accumulate, alpha);
    return bn_backward_apply_launch<T, 1, K>(c, dx, dy, x, coef, fcoef, split_rows, ch, splits,
                                             accumulate, alpha);
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
        switch (act->kind) {
        case ACT_RELU:
            return bn_backward_apply_width<T, ACT_RELU>(c, tdx, tdy, tx, coef, fcoef,
                                                        split_rows, ch, splits, accumulate,
                                                        alpha);
        case ACT_CELU:
            return bn_backward_apply_width<T, ACT_CELU>(c, tdx, tdy, tx, coef, fcoef,
                                                        split_rows, ch, splits, accumulate,
                                                        alpha);
        case ACT_GELU:
            return bn_backward_apply_width<T, ACT_GELU>(c, tdx, tdy, tx, coef, fcoef,
                                                        split_rows, ch, splits, accumulate,
                                                        alpha);
        case ACT_SILU:
            return bn_backward_apply_width<T, ACT_SILU>(c, tdx, tdy, tx, coef, fcoef,
                                                        split_rows, ch, splits, accumulate,
                                                        alpha);
        case ACT_KIND_COUNT: break;
        }
    });
    FAIL(DR_ERR_INTERNAL, "bn backward: no fused kernel for activation kind %d",
         (int)act->kind);
cleanup:
    return rc;
}


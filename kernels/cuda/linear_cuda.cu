/* Fully connected layers through cuBLAS: the CUDA twin of kernels/cpu/linear.c. An
 * activation (n, f, 1, 1) is the row-major (n, f) matrix, which cuBLAS (column-major)
 * sees as (f, n); the weight (out, in) row-major is (in, out) column-major. So
 *   y  (out, n)  = W^T-view · x          gemm(T, N, out, n, in)
 *   dx (in, n)   = W-view · dy           gemm(N, N, in, n, out), beta 1 to accumulate
 *   dw (in, out) = x · dy^T              gemm(N, T, in, out, n), written in fp32
 * all with fp32 accumulation (CUBLAS_COMPUTE_32F: tensor cores for half inputs, plain
 * fp32 for fp32 inputs). Biases use the shared per-channel kernels. Also the LINEAR_FWD
 * and LINEAR_BWD nodes' runners, which hand these the node's slots. */
#include "cuda_internal.h"

static cudaDataType_t cublas_dtype(enum cuda_dtype dt)
{
    return dt == CUDA_F32 ? CUDA_R_32F : dt == CUDA_F16 ? CUDA_R_16F : CUDA_R_16BF;
}

static int cuda_linear_forward(void *ctx, struct tensor *y, const struct tensor *x,
                        const struct tensor *w, const struct tensor *b)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const cudaDataType_t dt = cublas_dtype(c->dt);
    const float one = 1.0f, zero = 0.0f;
    const int out = y->c, in = x->c, n = x->n;
    if (n == 0 || out == 0) goto cleanup;
    TRY(cuda_enter(c));
    CHECK_CUBLAS(c, cublasGemmEx(c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, out, n, in, &one,
                              cuda_param_copy(c, w), dt, in, x->data, dt, in, &zero, y->data, dt,
                              out, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (b && b->data) TRY(cuda_add_bias(c, y->data, (const float *)b->data, n, out));
cleanup:
    return rc;
}

static int cuda_linear_backward(void *ctx, struct tensor *dx, struct tensor *dw, struct tensor *db,
                         const struct tensor *dy, const struct tensor *x, const struct tensor *w,
                         int accumulate)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const cudaDataType_t dt = cublas_dtype(c->dt);
    const float one = 1.0f, zero = 0.0f;
    const int out = dy->c, in = x->c, n = x->n;
    const int want_dx = dx && dx->data, want_dw = dw && dw->data;
    TRY(cuda_enter(c));
    if (n == 0) {   /* an empty batch: gradients of the parameters are zero */
        if (want_dw)
            CHECK_CUDA(cuda_counted_memset(c, dw->data, sizeof(float) * tensor_count(dw)));
        if (db && db->data)
            CHECK_CUDA(cuda_counted_memset(c, db->data, sizeof(float) * tensor_count(db)));
        goto cleanup;
    }
    if (want_dx && in > 0)
        CHECK_CUBLAS(c, cublasGemmEx(c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, in, n, out, &one,
                                  cuda_param_copy(c, w), dt, in, dy->data, dt, out,
                                  accumulate ? &one : &zero, dx->data, dt, in, CUBLAS_COMPUTE_32F,
                                  CUBLAS_GEMM_DEFAULT));
    if (want_dw && in > 0 && out > 0)
        CHECK_CUBLAS(c, cublasGemmEx(c->cublas, CUBLAS_OP_N, CUBLAS_OP_T, in, out, n, &one, x->data,
                                  dt, in, dy->data, dt, out, &zero, dw->data, CUDA_R_32F, in,
                                  CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    if (db && db->data) TRY(cuda_channel_sum(c, (float *)db->data, dy->data, n, out));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the nodes' runners */

int cuda_run_linear_fwd(void *ctx, const struct plan_node *n)
{
    return cuda_linear_forward(ctx, n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_W],
                                  n->src[PLAN_B]);
}

int cuda_run_linear_bwd(void *ctx, const struct plan_node *n)
{
    return cuda_linear_backward(ctx, n->dst[PLAN_DX], n->dst[PLAN_DW], n->dst[PLAN_DB],
                                   n->src[PLAN_DY], n->src[PLAN_BWD_X], n->src[PLAN_BWD_W],
                                   PLAN_NODE_ACC(n, PLAN_DX));
}

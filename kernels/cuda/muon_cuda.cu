/* The CUDA twin of Muon (kernels/muon.h): the momentum, the norms and the update in fp32
 * in our own kernels (the momentum in the CPU twin's per-element order, so the momentum
 * buffers agree bit for bit), and the Newton-Schulz iteration in bf16 with fp32
 * accumulation through cuBLAS's strided batched GEMMs, as the published recipe computes
 * it: the items of one matrix shape (p, q) are one batch, so a network's filters of a
 * width take three GEMMs per iteration together.
 *
 * Per call, on the context's stream (nothing waits, copies from the host or allocates
 * once the scratch buffer has its size, so a captured step replays it):
 *   per item   muon_momentum_kernel: buf, u (into dw), partial sums of u^2 and w^2 per
 *              block (a fixed grid and a fixed tree: the sums' order is fixed);
 *              muon_pack_kernel: the norms from the partials, X = bf16(u / (||u|| + eps))
 *              (transposed when rows > cols) into its shape's batch, and the weight's
 *              renormalisation factor;
 *   per shape  `steps` times: A = X X^T; B = A (copy); B = c A A + b B; Y = X (copy);
 *              Y = B X + a Y; then X and Y change roles;
 *   per item   muon_update_kernel: w = w * scale - lr * X, and w's compute copy.
 * An item whose train_epochs ran out at the cursor's epoch is left alone (its batch slot
 * holds zeros). Row-major (p, q) matrices are column-major (q, p) ones to cuBLAS. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define MUON_PARTS 64   /* blocks of the momentum pass: its partial sums per item */

/* Whether an item that trains for train_epochs epochs (0 = always) is done at cursor. */
__device__ __forceinline__ int muon_done(const int32_t *cursor, int train_epochs)
{
    return train_epochs > 0 && cursor[CURSOR_EPOCH] >= train_epochs;
}

/* buf = m buf + g; u = g + m buf (Nesterov) or buf, into dw; per block the sums of u^2
 * and w^2 in double (grid-stride, then a fixed tree) into partials[2 b], [2 b + 1]. */
__global__ void muon_momentum_kernel(float *w, float *v, float *dw, size_t count, float momentum,
                                     int nesterov, const int32_t *cursor, int train_epochs,
                                     double *partials /* (gridDim.x, 2) */)
{
    __shared__ double su[CUDA_THREADS], sw[CUDA_THREADS];
    if (muon_done(cursor, train_epochs)) return;
    double au = 0.0, aw = 0.0;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const float g = dw[i];
        const float buf = __fadd_rn(__fmul_rn(momentum, v[i]), g);
        const float u = nesterov ? __fadd_rn(g, __fmul_rn(momentum, buf)) : buf;
        const double wi = (double)w[i];
        v[i] = buf;
        dw[i] = u;
        au += (double)u * (double)u;
        aw += wi * wi;
    }
    su[threadIdx.x] = au;
    sw[threadIdx.x] = aw;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            su[threadIdx.x] += su[threadIdx.x + s];
            sw[threadIdx.x] += sw[threadIdx.x + s];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        partials[2 * blockIdx.x] = su[0];
        partials[2 * blockIdx.x + 1] = sw[0];
    }
}

/* X (p, q) = bf16(u / (||u|| + eps)), transposed when rows > cols; *scale = sqrt(rows) /
 * ||w|| with normalize (1 when not, or when ||w|| = 0). A done item: X = 0. */
__global__ void muon_pack_kernel(__nv_bfloat16 *x, const float *u /* (rows, cols) */, int rows,
                                 int cols, const double *partials, int parts, float eps,
                                 int normalize, float *scale, const int32_t *cursor,
                                 int train_epochs)
{
    const int done = muon_done(cursor, train_epochs);
    const size_t count = (size_t)rows * (size_t)cols;
    const int tr = rows > cols;
    float den = 1.0f;
    if (!done) {
        double su = 0.0, sw = 0.0;
        for (int k = 0; k < parts; k++) {
            su += partials[2 * k];
            sw += partials[2 * k + 1];
        }
        den = (float)(sqrt(su) + (double)eps);
        if (blockIdx.x == 0 && threadIdx.x == 0)
            *scale = normalize && sw > 0.0 ? (float)(sqrt((double)rows) / sqrt(sw)) : 1.0f;
    }
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / (size_t)cols, col = i % (size_t)cols;
        const float e = done ? 0.0f : __fdiv_rn(u[i], den);
        x[tr ? col * (size_t)rows + r : i] = __float2bfloat16_rn(e);
    }
}

/* w = w * scale - lr * X (transposed back), lr = lr_table[step] * lr_scale as the CPU
 * twin rounds it; the compute copy (NULL in fp32) follows. */
template <typename T>
__global__ void muon_update_kernel(float *w, T *copy, const __nv_bfloat16 *x, int rows, int cols,
                                   const float *scale, const float *lr_table, int steps,
                                   double lr_scale, const int32_t *cursor, int train_epochs,
                                   int *flags)
{
    const int32_t step = cursor[CURSOR_STEP];
    if (step < 0 || step >= steps) {   /* no table value: nothing is stepped */
        if (blockIdx.x == 0 && threadIdx.x == 0) flags[FLAG_BAD_STEP] = 1;
        return;
    }
    if (muon_done(cursor, train_epochs)) return;
    const float lr = (float)((double)lr_table[step] * lr_scale), s = *scale;
    const size_t count = (size_t)rows * (size_t)cols;
    const int tr = rows > cols;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const size_t r = i / (size_t)cols, col = i % (size_t)cols;
        const float o = __bfloat162float(x[tr ? col * (size_t)rows + r : i]);
        const float nw = __fsub_rn(__fmul_rn(w[i], s), __fmul_rn(lr, o));
        w[i] = nw;
        if (copy) copy[i] = cuda_from_f<T>(nw);
    }
}

/* One item as the call lays it out: its matrix, its shape's batch and its slot there. */
struct muon_slot {
    const struct sgd_item *it;
    int rows, cols, p, q;
    int shape;   /* index into the shapes */
    int index;   /* slot within the shape's batch */
};

/* One matrix shape (p, q), p <= q: its batch's four bf16 buffers in the scratch. */
struct muon_shape {
    int p, q, batch;
    __nv_bfloat16 *x, *y, *a, *b;
};

/* Rounds bytes up to the scratch alignment. */
static size_t muon_align(size_t bytes)
{
    return (bytes + CUDA_ALIGN - 1) / CUDA_ALIGN * CUDA_ALIGN;
}

/* The Newton-Schulz iteration of one shape's batch (steps >= 1 iterations, X in sh->x),
 * leaving the result in sh->x. */
static int muon_iterate(struct cuda_ctx *c, struct muon_shape *sh, const struct muon_ns *ns)
{
    int rc = DR_OK;
    const float one = 1.0f, zero = 0.0f, a = ns->a, b = ns->b, cc = ns->c;
    const int p = sh->p, q = sh->q;
    const long long sx = (long long)p * q, sa = (long long)p * p;
    for (int s = 0; s < ns->steps; s++) {
        /* A = X X^T: column-major (p, p) = Xc^T Xc, Xc = X as (q, p) */
        CHECK_CUBLAS(c, cublasGemmStridedBatchedEx(
                            c->cublas, CUBLAS_OP_T, CUBLAS_OP_N, p, p, q, &one, sh->x,
                            CUDA_R_16BF, q, sx, sh->x, CUDA_R_16BF, q, sx, &zero, sh->a,
                            CUDA_R_16BF, p, sa, sh->batch, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
        /* B = c A A + b A (A is symmetric: its layouts agree) */
        CHECK_CUDA(cuda_counted_copy(c, sh->b, sh->a, (size_t)sa * sh->batch * 2,
                                     cudaMemcpyDeviceToDevice));
        CHECK_CUBLAS(c, cublasGemmStridedBatchedEx(
                            c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, p, p, p, &cc, sh->a,
                            CUDA_R_16BF, p, sa, sh->a, CUDA_R_16BF, p, sa, &b, sh->b,
                            CUDA_R_16BF, p, sa, sh->batch, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
        /* Y = B X + a X: column-major (q, p) Yc = Xc B */
        CHECK_CUDA(cuda_counted_copy(c, sh->y, sh->x, (size_t)sx * sh->batch * 2,
                                     cudaMemcpyDeviceToDevice));
        CHECK_CUBLAS(c, cublasGemmStridedBatchedEx(
                            c->cublas, CUBLAS_OP_N, CUBLAS_OP_N, q, p, p, &one, sh->x,
                            CUDA_R_16BF, q, sx, sh->b, CUDA_R_16BF, p, sa, &a, sh->y,
                            CUDA_R_16BF, q, sx, sh->batch, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
        __nv_bfloat16 *t = sh->x;
        sh->x = sh->y;
        sh->y = t;
    }
cleanup:
    return rc;
}

int cuda_muon_multi(void *ctx, const struct sgd_item *items, int count,
                    const struct tensor *lr_table, const struct tensor *cursor, float momentum,
                    int nesterov, const struct muon_ns *ns)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    struct muon_slot *slots = NULL;
    struct muon_shape *shapes = NULL;
    int n = 0, n_shapes = 0;
    size_t bytes = 0;
    char *base = NULL;
    slots = (struct muon_slot *)calloc((size_t)(count > 0 ? count : 1), sizeof(*slots));
    shapes = (struct muon_shape *)calloc((size_t)(count > 0 ? count : 1), sizeof(*shapes));
    CHECK_ALLOC(slots, "Muon's item list");
    CHECK_ALLOC(shapes, "Muon's shape list");
    for (int k = 0; k < count; k++) {
        const struct tensor *w = items[k].w;
        const size_t size = tensor_count(w);
        if (size == 0) continue;
        struct muon_slot *sl = &slots[n++];
        sl->it = &items[k];
        sl->rows = w->n;
        sl->cols = (int)(size / (size_t)w->n);
        sl->p = sl->rows < sl->cols ? sl->rows : sl->cols;
        sl->q = sl->rows < sl->cols ? sl->cols : sl->rows;
        for (sl->shape = 0; sl->shape < n_shapes; sl->shape++)
            if (shapes[sl->shape].p == sl->p && shapes[sl->shape].q == sl->q) break;
        if (sl->shape == n_shapes) {
            shapes[n_shapes].p = sl->p;
            shapes[n_shapes].q = sl->q;
            n_shapes++;
        }
        sl->index = shapes[sl->shape].batch++;
    }
    if (n == 0) goto cleanup;
    /* scratch: partial sums, the items' scales, then per shape X, Y, A, B */
    bytes = muon_align(MUON_PARTS * 2 * sizeof(double)) + muon_align((size_t)n * sizeof(float));
    for (int s = 0; s < n_shapes; s++) {
        const size_t b = (size_t)shapes[s].batch, p = (size_t)shapes[s].p, q = (size_t)shapes[s].q;
        bytes += 2 * muon_align(b * p * q * 2) + 2 * muon_align(b * p * p * 2);
    }
    TRY(cuda_enter(c));
    TRY(cuda_scratch(c, SLOT_MUON, bytes, (void **)&base));
    {
        double *partials = (double *)base;
        float *scales = (float *)(base + muon_align(MUON_PARTS * 2 * sizeof(double)));
        char *at = (char *)scales + muon_align((size_t)n * sizeof(float));
        for (int s = 0; s < n_shapes; s++) {
            struct muon_shape *sh = &shapes[s];
            const size_t b = (size_t)sh->batch, p = (size_t)sh->p, q = (size_t)sh->q;
            sh->x = (__nv_bfloat16 *)at;
            at += muon_align(b * p * q * 2);
            sh->y = (__nv_bfloat16 *)at;
            at += muon_align(b * p * q * 2);
            sh->a = (__nv_bfloat16 *)at;
            at += muon_align(b * p * p * 2);
            sh->b = (__nv_bfloat16 *)at;
            at += muon_align(b * p * p * 2);
        }
        const int32_t *cur = (const int32_t *)cursor->data;
        for (int k = 0; k < n; k++) {
            const struct muon_slot *sl = &slots[k];
            const struct muon_shape *sh = &shapes[sl->shape];
            const size_t size = (size_t)sl->rows * (size_t)sl->cols;
            const unsigned grid = cuda_grid(c, size);
            const unsigned parts = grid < MUON_PARTS ? grid : MUON_PARTS;
            muon_momentum_kernel<<<parts, CUDA_THREADS, 0, c->stream>>>(
                (float *)sl->it->w->data, (float *)sl->it->v->data, (float *)sl->it->dw->data,
                size, momentum, nesterov, cur, sl->it->train_epochs, partials);
            /* reads w, v and dw; writes v and dw (u), and the partial sums */
            CHECK_LAUNCH(c, 3 * size * sizeof(float),
                         2 * size * sizeof(float) + parts * 2 * sizeof(double));
            muon_pack_kernel<<<cuda_grid(c, size), CUDA_THREADS, 0, c->stream>>>(
                sh->x + (size_t)sl->index * sh->p * sh->q, (const float *)sl->it->dw->data,
                sl->rows, sl->cols, partials, (int)parts, ns->eps, ns->normalize, &scales[k],
                cur, sl->it->train_epochs);
            /* reads u and the partial sums; writes X in bf16 and the scale */
            CHECK_LAUNCH(c, size * sizeof(float) + parts * 2 * sizeof(double),
                         size * 2 + sizeof(float));
        }
        for (int s = 0; s < n_shapes; s++) TRY(muon_iterate(c, &shapes[s], ns));
        for (int k = 0; k < n; k++) {
            const struct muon_slot *sl = &slots[k];
            const struct muon_shape *sh = &shapes[sl->shape];
            const size_t size = (size_t)sl->rows * (size_t)sl->cols;
            CUDA_DISPATCH(c->dt, T, {
                T *copy = c->dt == CUDA_F32 ? (T *)NULL : (T *)cuda_param_copy(c, sl->it->w);
                muon_update_kernel<T><<<cuda_grid(c, size), CUDA_THREADS, 0, c->stream>>>(
                    (float *)sl->it->w->data, copy, sh->x + (size_t)sl->index * sh->p * sh->q,
                    sl->rows, sl->cols, &scales[k], (const float *)lr_table->data,
                    (int)tensor_count(lr_table), sl->it->lr_scale, cur, sl->it->train_epochs,
                    c->flags_dev);
            });
            /* reads w and X (bf16); writes w and its compute copy in half precisions */
            CHECK_LAUNCH(c, size * sizeof(float) + size * 2 + sizeof(float),
                         size * sizeof(float) +
                             (c->dt == CUDA_F32 ? 0 : size * cuda_dt_size(c->dt)));
        }
    }
cleanup:
    free(slots);
    free(shapes);
    return rc;
}

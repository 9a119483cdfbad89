/* Convolutions through cuDNN on NHWC activations and KRSC (cuDNN's NHWC) filters: the
 * CUDA twin of kernels/cpu/conv2d.c. The algorithm for each (shape, direction) is chosen
 * once, by cuDNN's heuristics or, with DAWNRUN_CUDNN_FIND=1, by timing every candidate
 * (cudnnFind*), and cached; one workspace, grown to the largest need, serves them all.
 * Half precisions compute in fp32 (cuDNN's "pseudo-half" configuration) and use tensor
 * cores; fp32 asks for plain FMA math (no TF32), so that it matches the CPU engine.
 * The weight gradient of a half-precision run comes out of cuDNN in the activation type
 * and is widened into the fp32 gradient tensor; the bias terms are our own kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define CONV_WORKSPACE_CAP ((size_t)2 << 30)   /* ignore algorithms wanting more */
#define CONV_MAX_ALGOS 16

enum conv_dir { DIR_FWD, DIR_BWD_DATA, DIR_BWD_FILTER };

static const char *const dir_names[] = {"forward", "backward data", "backward filter"};

/* One candidate from cuDNN, whatever the direction. */
struct conv_candidate {
    int algo;
    cudnnStatus_t status;
    cudnnMathType_t math;
};

static cudnnDataType_t cudnn_dtype(enum cuda_dtype dt)
{
    return dt == CUDA_F32 ? CUDNN_DATA_FLOAT : dt == CUDA_F16 ? CUDNN_DATA_HALF
                                                              : CUDNN_DATA_BFLOAT16;
}

/* Sets the context's descriptors: x (n, ci, h, w), w (co, ci, k, k), y (n, co, ho, wo). */
static int conv_describe(struct cuda_ctx *c, const struct tensor *x, int co,
                         const struct conv_attr *a, int ho, int wo)
{
    int rc = DR_OK;
    const cudnnDataType_t dt = cudnn_dtype(c->dt);
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(c->td_x, CUDNN_TENSOR_NHWC, dt, x->n, x->c, x->h, x->w));
    CHECK_CUDNN(cudnnSetTensor4dDescriptor(c->td_y, CUDNN_TENSOR_NHWC, dt, x->n, co, ho, wo));
    CHECK_CUDNN(cudnnSetFilter4dDescriptor(c->fd_w, dt, CUDNN_TENSOR_NHWC, co, x->c, a->k, a->k));
    CHECK_CUDNN(cudnnSetConvolution2dDescriptor(c->cd, a->pad, a->pad, a->stride, a->stride, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
cleanup:
    return rc;
}

/* cuDNN's ranked candidates for direction dir on the current descriptors. */
static int conv_candidates(struct cuda_ctx *c, int dir, struct conv_candidate *out, int *count)
{
    int rc = DR_OK;
    int n = 0;
    cudnnConvolutionFwdAlgoPerf_t pf[CONV_MAX_ALGOS];
    cudnnConvolutionBwdDataAlgoPerf_t pd[CONV_MAX_ALGOS];
    cudnnConvolutionBwdFilterAlgoPerf_t pw[CONV_MAX_ALGOS];
    *count = 0;
    if (dir == DIR_FWD) {
        if (c->find_algos)
            CHECK_CUDNN(cudnnFindConvolutionForwardAlgorithm(c->cudnn, c->td_x, c->fd_w, c->cd,
                                                             c->td_y, CONV_MAX_ALGOS, &n, pf));
        else
            CHECK_CUDNN(cudnnGetConvolutionForwardAlgorithm_v7(c->cudnn, c->td_x, c->fd_w, c->cd,
                                                               c->td_y, CONV_MAX_ALGOS, &n, pf));
        for (int i = 0; i < n; i++) out[i] = {(int)pf[i].algo, pf[i].status, pf[i].mathType};
    } else if (dir == DIR_BWD_DATA) {
        if (c->find_algos)
            CHECK_CUDNN(cudnnFindConvolutionBackwardDataAlgorithm(
                c->cudnn, c->fd_w, c->td_y, c->cd, c->td_x, CONV_MAX_ALGOS, &n, pd));
        else
            CHECK_CUDNN(cudnnGetConvolutionBackwardDataAlgorithm_v7(
                c->cudnn, c->fd_w, c->td_y, c->cd, c->td_x, CONV_MAX_ALGOS, &n, pd));
        for (int i = 0; i < n; i++) out[i] = {(int)pd[i].algo, pd[i].status, pd[i].mathType};
    } else {
        if (c->find_algos)
            CHECK_CUDNN(cudnnFindConvolutionBackwardFilterAlgorithm(
                c->cudnn, c->td_x, c->td_y, c->cd, c->fd_w, CONV_MAX_ALGOS, &n, pw));
        else
            CHECK_CUDNN(cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                c->cudnn, c->td_x, c->td_y, c->cd, c->fd_w, CONV_MAX_ALGOS, &n, pw));
        for (int i = 0; i < n; i++) out[i] = {(int)pw[i].algo, pw[i].status, pw[i].mathType};
    }
    *count = n;
cleanup:
    return rc;
}

/* Workspace bytes of algo in direction dir under the descriptor's current math type;
 * a status other than success means the combination is not supported. */
static cudnnStatus_t conv_workspace(struct cuda_ctx *c, int dir, int algo, size_t *bytes)
{
    *bytes = 0;
    if (dir == DIR_FWD)
        return cudnnGetConvolutionForwardWorkspaceSize(c->cudnn, c->td_x, c->fd_w, c->cd, c->td_y,
                                                       (cudnnConvolutionFwdAlgo_t)algo, bytes);
    if (dir == DIR_BWD_DATA)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            c->cudnn, c->fd_w, c->td_y, c->cd, c->td_x, (cudnnConvolutionBwdDataAlgo_t)algo,
            bytes);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        c->cudnn, c->td_x, c->td_y, c->cd, c->fd_w, (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
}

/* The cached algorithm for the current descriptors (key) in direction dir, choosing it
 * on first use; leaves its math type set on the convolution descriptor. */
static int conv_algo(struct cuda_ctx *c, const int key[10], int dir, struct cuda_conv_algo *out)
{
    int rc = DR_OK;
    struct conv_candidate cand[CONV_MAX_ALGOS];
    int n = 0, chosen = -1;
    size_t ws = 0;
    cudnnMathType_t math = CUDNN_DEFAULT_MATH;
    for (int i = 0; i < c->n_algos; i++)
        if (!memcmp(c->algos[i].key, key, sizeof(c->algos[i].key))) {
            *out = c->algos[i];
            CHECK_CUDNN(cudnnSetConvolutionMathType(c->cd, (cudnnMathType_t)out->math));
            goto cleanup;
        }
    /* fp32: plain FMA math, so that no TF32 rounding creeps in; half: tensor cores */
    CHECK_CUDNN(cudnnSetConvolutionMathType(
        c->cd, c->dt == CUDA_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
    TRY(conv_candidates(c, dir, cand, &n));
    /* pass 0 keeps fp32 on FMA math; pass 1 (fp32 only) accepts what cuDNN offers */
    for (int pass = 0; pass < 2 && chosen < 0; pass++) {
        if (pass == 1 && c->dt != CUDA_F32) break;
        for (int i = 0; i < n && chosen < 0; i++) {
            if (cand[i].status != CUDNN_STATUS_SUCCESS) continue;
            math = (c->dt == CUDA_F32 && pass == 0) ? CUDNN_FMA_MATH : cand[i].math;
            CHECK_CUDNN(cudnnSetConvolutionMathType(c->cd, math));
            if (conv_workspace(c, dir, cand[i].algo, &ws) != CUDNN_STATUS_SUCCESS) continue;
            if (ws > CONV_WORKSPACE_CAP) continue;
            chosen = i;
        }
        if (chosen >= 0 && pass == 1)
            fprintf(stderr, "dawnrun: cuDNN has no FMA-only %s algorithm for conv (%d, %d, %d, %d) "
                            "k %d stride %d: using math type %d (may round through TF32)\n",
                    dir_names[dir], key[0], key[1], key[2], key[3], key[5], key[6], (int)math);
    }
    if (chosen < 0)
        FAIL(DR_ERR_DEVICE,
             "cuDNN offers no usable %s algorithm for conv input (%d, %d, %d, %d), %d outputs, "
             "k %d, stride %d, pad %d (%d candidates)",
             dir_names[dir], key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7], n);
    if (c->n_algos == c->cap_algos) {
        int cap = c->cap_algos ? 2 * c->cap_algos : 32;
        struct cuda_conv_algo *grown =
            (struct cuda_conv_algo *)realloc(c->algos, sizeof(*grown) * (size_t)cap);
        CHECK_ALLOC(grown, "the convolution algorithm cache");
        c->algos = grown;
        c->cap_algos = cap;
    }
    memcpy(out->key, key, sizeof(out->key));
    out->algo = cand[chosen].algo;
    out->math = (int)math;
    out->workspace = ws;
    c->algos[c->n_algos++] = *out;
cleanup:
    return rc;
}

void cuda_conv_release(struct cuda_ctx *c)
{
    free(c->algos);
    c->algos = NULL;
    c->n_algos = c->cap_algos = 0;
}

/* Checks shapes as the CPU twin does; sets *ho, *wo. */
static int conv_check(const struct tensor *y, const struct tensor *x, const struct tensor *w,
                      const struct tensor *b, const struct conv_attr *a, int *ho, int *wo)
{
    int rc = DR_OK;
    EXPECT(w->c == x->c && w->h == a->k && w->w == a->k && a->stride >= 1 && a->pad >= 0,
           "conv: weight (%d, %d, %d, %d) does not fit input channels %d, k %d, stride %d, "
           "pad %d", w->n, w->c, w->h, w->w, x->c, a->k, a->stride, a->pad);
    *ho = (x->h + 2 * a->pad - a->k) / a->stride + 1;
    *wo = (x->w + 2 * a->pad - a->k) / a->stride + 1;
    EXPECT(*ho >= 1 && *wo >= 1, "conv: %dx%d input too small for k %d pad %d", x->h, x->w, a->k,
           a->pad);
    EXPECT(y->n == x->n && y->c == w->n && y->h == *ho && y->w == *wo,
           "conv: output (%d, %d, %d, %d), expected (%d, %d, %d, %d)", y->n, y->c, y->h, y->w,
           x->n, w->n, *ho, *wo);
    EXPECT(!b || !b->data || tensor_count(b) == (size_t)w->n, "conv: bias of %zu for %d outputs",
           b ? tensor_count(b) : (size_t)0, w->n);
cleanup:
    return rc;
}

static void conv_key(int key[10], const struct tensor *x, int co, const struct conv_attr *a,
                     int dir, enum cuda_dtype dt)
{
    const int k[10] = {x->n, x->c, x->h, x->w, co, a->k, a->stride, a->pad, dir, (int)dt};
    memcpy(key, k, sizeof(k));
}

int cuda_conv_forward(void *ctx, struct tensor *y, const struct tensor *x, const struct tensor *w,
                      const struct tensor *b, const struct conv_attr *a)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    int ho = 0, wo = 0, key[10];
    struct cuda_conv_algo algo;
    void *ws = NULL;
    const float one = 1.0f, zero = 0.0f;
    TRY(conv_check(y, x, w, b, a, &ho, &wo));
    if (x->n == 0) goto cleanup;
    TRY(cuda_enter(c));
    TRY(conv_describe(c, x, w->n, a, ho, wo));
    conv_key(key, x, w->n, a, DIR_FWD, c->dt);
    TRY(conv_algo(c, key, DIR_FWD, &algo));
    TRY(cuda_scratch(c, SLOT_CUDNN, algo.workspace, &ws));
    CHECK_CUDNN(cudnnConvolutionForward(c->cudnn, &one, c->td_x, x->data, c->fd_w,
                                        cuda_param_copy(c, w), c->cd,
                                        (cudnnConvolutionFwdAlgo_t)algo.algo, ws, algo.workspace,
                                        &zero, c->td_y, y->data));
    if (b && b->data)
        TRY(cuda_add_bias(c, y->data, (const float *)b->data, (long)y->n * ho * wo, y->c));
cleanup:
    return rc;
}

int cuda_conv_backward(void *ctx, struct tensor *dx, struct tensor *dw, struct tensor *db,
                       const struct tensor *dy, const struct tensor *x, const struct tensor *w,
                       const struct conv_attr *a, int accumulate)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    int ho = 0, wo = 0, key[10];
    struct cuda_conv_algo algo;
    void *ws = NULL, *target = NULL;
    const float one = 1.0f, zero = 0.0f;
    const int want_dx = dx && dx->data, want_dw = dw && dw->data;
    TRY(conv_check(dy, x, w, db, a, &ho, &wo));
    EXPECT(!want_dx || cuda_same_shape(dx, x), "conv backward: dx (%d, %d, %d, %d) unlike x",
           dx->n, dx->c, dx->h, dx->w);
    EXPECT(!want_dw || tensor_count(dw) == tensor_count(w), "conv backward: dw unlike w");
    TRY(cuda_enter(c));
    if (x->n == 0) {   /* an empty batch: gradients of the parameters are zero */
        if (want_dw)
            CHECK_CUDA(cudaMemsetAsync(dw->data, 0, sizeof(float) * tensor_count(dw), c->stream));
        if (db && db->data)
            CHECK_CUDA(cudaMemsetAsync(db->data, 0, sizeof(float) * tensor_count(db), c->stream));
        goto cleanup;
    }
    TRY(conv_describe(c, x, w->n, a, ho, wo));
    if (want_dx) {
        conv_key(key, x, w->n, a, DIR_BWD_DATA, c->dt);
        TRY(conv_algo(c, key, DIR_BWD_DATA, &algo));
        TRY(cuda_scratch(c, SLOT_CUDNN, algo.workspace, &ws));
        CHECK_CUDNN(cudnnConvolutionBackwardData(
            c->cudnn, &one, c->fd_w, cuda_param_copy(c, w), c->td_y, dy->data, c->cd,
            (cudnnConvolutionBwdDataAlgo_t)algo.algo, ws, algo.workspace,
            accumulate ? &one : &zero, c->td_x, dx->data));
    }
    if (want_dw) {
        conv_key(key, x, w->n, a, DIR_BWD_FILTER, c->dt);
        TRY(conv_algo(c, key, DIR_BWD_FILTER, &algo));
        TRY(cuda_scratch(c, SLOT_CUDNN, algo.workspace, &ws));
        if (c->dt == CUDA_F32)
            target = dw->data;
        else
            TRY(cuda_scratch(c, SLOT_DW, tensor_count(dw) * cuda_dt_size(c->dt), &target));
        CHECK_CUDNN(cudnnConvolutionBackwardFilter(
            c->cudnn, &one, c->td_x, x->data, c->td_y, dy->data, c->cd,
            (cudnnConvolutionBwdFilterAlgo_t)algo.algo, ws, algo.workspace, &zero, c->fd_w,
            target));
        if (target != dw->data) TRY(cuda_to_fp32(c, (float *)dw->data, target, tensor_count(dw)));
    }
    if (db && db->data)
        TRY(cuda_channel_sum(c, (float *)db->data, dy->data, (long)dy->n * ho * wo, dy->c));
cleanup:
    return rc;
}

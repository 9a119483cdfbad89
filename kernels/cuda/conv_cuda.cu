/* Convolutions through cuDNN on NHWC activations and KRSC (cuDNN's NHWC) filters: the
 * CUDA twin of kernels/cpu/conv2d.c. The algorithm for each (shape, direction) is chosen
 * on first use by running every candidate cuDNN's heuristics list once and timing it
 * (what torch.backends.cudnn.benchmark does); the ones that ran are cached fastest first.
 * A context that asks for determinism (cuda_ctx.deterministic) takes only the candidates
 * cuDNN reports deterministic (their determinism field: some backward algorithms add
 * with atomics), unless none of them works for a shape (said once; the others are taken).
 * A candidate that fails when executed (cuDNN lists configurations its kernels then
 * refuse) is skipped, at the trial or later, for the next one (the runtime error a
 * refused execution may leave is cleared, cuda_clear_library_error); a shape for which none
 * works ends the run with one message naming direction, shape, data type and layout.
 * Each shape's cuDNN descriptors are made and set once, with its algorithm cache entry,
 * so that a convolution of a shape seen before makes only the execution call (and a
 * math-type call when a refused algorithm moved it to another). One workspace, grown to
 * the largest need, serves them all. Half precisions compute in
 * fp32 (cuDNN's "pseudo-half" configuration) and use tensor cores; fp32 asks for plain FMA
 * math (no TF32), so that it matches the CPU engine. The weight gradient of a
 * half-precision run comes out of cuDNN in the activation type and is widened into the
 * fp32 gradient tensor; the bias terms are our own kernels. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cuda_internal.h"
#include "../../base/grow.h"

#define CONV_WORKSPACE_CAP ((size_t)2 << 30)   /* ignore algorithms wanting more */
#define CONV_MAX_ALGOS CUDA_CONV_MAX_ALGOS

enum conv_dir { DIR_FWD, DIR_BWD_DATA, DIR_BWD_FILTER };

static const char *const dir_names[] = {"forward", "backward data", "backward filter"};

/* One candidate from cuDNN, whatever the direction. */
struct conv_candidate {
    int algo;
    cudnnStatus_t status;
    cudnnMathType_t math;
    int nondet;   /* cuDNN says CUDNN_NON_DETERMINISTIC: results may vary run to run */
};

/* Which candidates conv_list takes. */
enum conv_pick { PICK_ANY, PICK_DETERMINISTIC, PICK_NONDETERMINISTIC };

/* The operands of one convolution call: forward reads x, w; backward data w, dy;
 * backward filter x, dy. out (y, dx or dw) gets alpha * result + beta * out. */
struct conv_io {
    const void *x, *w, *dy;
    void *out;
    size_t out_bytes;
    const float *beta;
};

static cudnnDataType_t cudnn_dtype(enum cuda_dtype dt)
{
    return dt == CUDA_F32 ? CUDNN_DATA_FLOAT : dt == CUDA_F16 ? CUDNN_DATA_HALF
                                                              : CUDNN_DATA_BFLOAT16;
}

static const char *cudnn_dtype_name(enum cuda_dtype dt)
{
    return dt == CUDA_F32 ? "float (fp32)" : dt == CUDA_F16 ? "half (fp16)" : "bfloat16 (bf16)";
}

/* Destroys entry e's descriptors (those made). */
static void conv_entry_free(struct cuda_conv_algo *e)
{
    if (e->td_x) cudnnDestroyTensorDescriptor(e->td_x);
    if (e->td_y) cudnnDestroyTensorDescriptor(e->td_y);
    if (e->fd_w) cudnnDestroyFilterDescriptor(e->fd_w);
    if (e->cd) cudnnDestroyConvolutionDescriptor(e->cd);
    e->td_x = e->td_y = NULL;
    e->fd_w = NULL;
    e->cd = NULL;
}

/* Makes and sets entry e's descriptors: x (n, ci, h, w), w (co, ci, k, k), y (n, co, ho,
 * wo). */
static int conv_describe(struct cuda_ctx *c, struct cuda_conv_algo *e, const struct tensor *x,
                         int co, const struct conv_attr *a, int ho, int wo)
{
    int rc = DR_OK;
    const cudnnDataType_t dt = cudnn_dtype(c->dt);
    CHECK_CUDNN(c, cudnnCreateTensorDescriptor(&e->td_x));
    CHECK_CUDNN(c, cudnnCreateTensorDescriptor(&e->td_y));
    CHECK_CUDNN(c, cudnnCreateFilterDescriptor(&e->fd_w));
    CHECK_CUDNN(c, cudnnCreateConvolutionDescriptor(&e->cd));
    e->cd_math = -1;
    CHECK_CUDNN(c, cudnnSetTensor4dDescriptor(e->td_x, CUDNN_TENSOR_NHWC, dt, x->n, x->c, x->h, x->w));
    CHECK_CUDNN(c, cudnnSetTensor4dDescriptor(e->td_y, CUDNN_TENSOR_NHWC, dt, x->n, co, ho, wo));
    CHECK_CUDNN(c, cudnnSetFilter4dDescriptor(e->fd_w, dt, CUDNN_TENSOR_NHWC, co, x->c, a->k, a->k));
    CHECK_CUDNN(c, cudnnSetConvolution2dDescriptor(e->cd, a->pad, a->pad, a->stride, a->stride, 1, 1,
                                                CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
cleanup:
    return rc;
}

/* Sets the math type of e's convolution descriptor, unless it holds it already. */
static int conv_set_math(struct cuda_ctx *c, struct cuda_conv_algo *e, cudnnMathType_t math)
{
    int rc = DR_OK;
    if (e->cd_math == (int)math) return DR_OK;
    e->cd_math = -1;
    CHECK_CUDNN(c, cudnnSetConvolutionMathType(e->cd, math));
    e->cd_math = (int)math;
cleanup:
    return rc;
}

/* cuDNN's ranked candidates (heuristics) for direction dir on e's descriptors. */
static int conv_candidates(struct cuda_ctx *c, const struct cuda_conv_algo *e, int dir,
                           struct conv_candidate *out, int *count)
{
    int rc = DR_OK;
    int n = 0;
    cudnnConvolutionFwdAlgoPerf_t pf[CONV_MAX_ALGOS];
    cudnnConvolutionBwdDataAlgoPerf_t pd[CONV_MAX_ALGOS];
    cudnnConvolutionBwdFilterAlgoPerf_t pw[CONV_MAX_ALGOS];
    *count = 0;
    if (dir == DIR_FWD) {
        CHECK_CUDNN(c, cudnnGetConvolutionForwardAlgorithm_v7(c->cudnn, e->td_x, e->fd_w, e->cd,
                                                           e->td_y, CONV_MAX_ALGOS, &n, pf));
        for (int i = 0; i < n; i++)
            out[i] = {(int)pf[i].algo, pf[i].status, pf[i].mathType,
                      pf[i].determinism == CUDNN_NON_DETERMINISTIC};
    } else if (dir == DIR_BWD_DATA) {
        CHECK_CUDNN(c, cudnnGetConvolutionBackwardDataAlgorithm_v7(
            c->cudnn, e->fd_w, e->td_y, e->cd, e->td_x, CONV_MAX_ALGOS, &n, pd));
        for (int i = 0; i < n; i++)
            out[i] = {(int)pd[i].algo, pd[i].status, pd[i].mathType,
                      pd[i].determinism == CUDNN_NON_DETERMINISTIC};
    } else {
        CHECK_CUDNN(c, cudnnGetConvolutionBackwardFilterAlgorithm_v7(
            c->cudnn, e->td_x, e->td_y, e->cd, e->fd_w, CONV_MAX_ALGOS, &n, pw));
        for (int i = 0; i < n; i++)
            out[i] = {(int)pw[i].algo, pw[i].status, pw[i].mathType,
                      pw[i].determinism == CUDNN_NON_DETERMINISTIC};
    }
    *count = n;
cleanup:
    return rc;
}

/* Workspace bytes of algo in direction dir under the descriptor's current math type;
 * a status other than success means the combination is not supported. */
static cudnnStatus_t conv_workspace(struct cuda_ctx *c, const struct cuda_conv_algo *e, int dir,
                                    int algo, size_t *bytes)
{
    *bytes = 0;
    c->counts.cudnn_calls++;   /* the one query below, as CHECK_CUDNN counts */
    if (dir == DIR_FWD)
        return cudnnGetConvolutionForwardWorkspaceSize(c->cudnn, e->td_x, e->fd_w, e->cd, e->td_y,
                                                       (cudnnConvolutionFwdAlgo_t)algo, bytes);
    if (dir == DIR_BWD_DATA)
        return cudnnGetConvolutionBackwardDataWorkspaceSize(
            c->cudnn, e->fd_w, e->td_y, e->cd, e->td_x, (cudnnConvolutionBwdDataAlgo_t)algo,
            bytes);
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        c->cudnn, e->td_x, e->td_y, e->cd, e->fd_w, (cudnnConvolutionBwdFilterAlgo_t)algo, bytes);
}

/* Queues candidate i of entry e on its descriptors, writing into out with the given beta;
 * returns cuDNN's status (not checked here: a refusal means "try the next"). */
static int conv_call(struct cuda_ctx *c, int dir, struct cuda_conv_algo *e, int i,
                     const struct conv_io *io, void *out, const float *beta,
                     cudnnStatus_t *status)
{
    int rc = DR_OK;
    void *ws = NULL;
    const float one = 1.0f;
    *status = CUDNN_STATUS_SUCCESS;
    TRY(conv_set_math(c, e, (cudnnMathType_t)e->math[i]));
    TRY(cuda_scratch(c, SLOT_CUDNN, e->workspace[i], &ws));
    c->counts.cudnn_calls++;   /* the one execution below, as CHECK_CUDNN counts */
    if (dir == DIR_FWD)
        *status = cudnnConvolutionForward(c->cudnn, &one, e->td_x, io->x, e->fd_w, io->w, e->cd,
                                          (cudnnConvolutionFwdAlgo_t)e->algo[i], ws,
                                          e->workspace[i], beta, e->td_y, out);
    else if (dir == DIR_BWD_DATA)
        *status = cudnnConvolutionBackwardData(c->cudnn, &one, e->fd_w, io->w, e->td_y, io->dy,
                                               e->cd, (cudnnConvolutionBwdDataAlgo_t)e->algo[i],
                                               ws, e->workspace[i], beta, e->td_x, out);
    else
        *status = cudnnConvolutionBackwardFilter(
            c->cudnn, &one, e->td_x, io->x, e->td_y, io->dy, e->cd,
            (cudnnConvolutionBwdFilterAlgo_t)e->algo[i], ws, e->workspace[i], beta, e->fd_w, out);
cleanup:
    return rc;
}

/* "x (512, 3, 32, 32) -> 64 outputs, k 3, stride 1, pad 1, data type half (fp16), layout
 * NHWC (filters KRSC)" for the key of a cache entry. */
static void conv_shape_text(char *buf, size_t len, const int key[10])
{
    snprintf(buf, len,
             "input (n %d, c %d, h %d, w %d) -> %d outputs, k %d, stride %d, pad %d, data type "
             "%s, layout NHWC (filters KRSC)",
             key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7],
             cudnn_dtype_name((enum cuda_dtype)key[9]));
}

static double conv_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Fills e with those of the n candidates cand that pick takes and cuDNN supports for
 * direction dir within the workspace cap, in cuDNN's order: in fp32 with FMA math, or,
 * when none has it, with the math cuDNN offers (said on stderr, naming shape). */
static int conv_list(struct cuda_ctx *c, int dir, struct cuda_conv_algo *e,
                     const struct conv_candidate *cand, int n, enum conv_pick pick,
                     const char *shape)
{
    int rc = DR_OK;
    int tf32 = 0;
    e->n = 0;
    /* pass 0 keeps fp32 on FMA math; pass 1 (fp32 only) accepts what cuDNN offers */
    for (int pass = 0; pass < 2 && e->n == 0; pass++) {
        if (pass == 1 && c->dt != CUDA_F32) break;
        for (int i = 0; i < n; i++) {
            size_t ws = 0;
            const cudnnMathType_t math =
                (c->dt == CUDA_F32 && pass == 0) ? CUDNN_FMA_MATH : cand[i].math;
            if (cand[i].status != CUDNN_STATUS_SUCCESS) continue;
            if ((pick == PICK_DETERMINISTIC && cand[i].nondet) ||
                (pick == PICK_NONDETERMINISTIC && !cand[i].nondet))
                continue;
            TRY(conv_set_math(c, e, math));
            if (conv_workspace(c, e, dir, cand[i].algo, &ws) != CUDNN_STATUS_SUCCESS) continue;
            if (ws > CONV_WORKSPACE_CAP) continue;
            e->algo[e->n] = cand[i].algo;
            e->math[e->n] = (int)math;
            e->workspace[e->n] = ws;
            e->n++;
        }
        tf32 = pass == 1 && e->n > 0;
    }
    if (tf32)
        dr_eprintf("dawnrun: cuDNN has no FMA-only %s algorithm for %s: using what it offers "
                   "(may round through TF32)\n", dir_names[dir], shape);
cleanup:
    return rc;
}

/* Runs each of e's candidates once on the operands (into io's output when beta is 0, else
 * into a trial buffer) and times it; one that fails is left out with a note on stderr;
 * those that ran are sorted fastest first. */
static int conv_trials(struct cuda_ctx *c, int dir, const struct conv_io *io,
                       struct cuda_conv_algo *e, const char *shape)
{
    int rc = DR_OK;
    double secs[CONV_MAX_ALGOS];
    void *out = io->out;
    const float zero = 0.0f;
    if (*io->beta != 0.0f) TRY(cuda_scratch(c, SLOT_TRIAL, io->out_bytes, &out));
    for (int i = 0; i < e->n;) {
        cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
        double t0 = 0.0;
        CHECK_CUDA(cuda_counted_sync(c));
        t0 = conv_now();
        TRY(conv_call(c, dir, e, i, io, out, &zero, &st));
        CHECK_CUDA(cuda_counted_sync(c));
        secs[i] = conv_now() - t0;
        if (st == CUDNN_STATUS_SUCCESS) {
            i++;
            continue;
        }
        cuda_clear_library_error();
        dr_eprintf("dawnrun: cuDNN %s algorithm %d failed on %s: %s; trying the next\n",
                   dir_names[dir], e->algo[i], shape, cudnnGetErrorString(st));
        e->n--;
        memmove(e->algo + i, e->algo + i + 1, sizeof(e->algo[0]) * (size_t)(e->n - i));
        memmove(e->math + i, e->math + i + 1, sizeof(e->math[0]) * (size_t)(e->n - i));
        memmove(e->workspace + i, e->workspace + i + 1,
                sizeof(e->workspace[0]) * (size_t)(e->n - i));
    }
    /* fastest first (insertion sort of at most CONV_MAX_ALGOS) */
    for (int i = 1; i < e->n; i++)
        for (int j = i; j > 0 && secs[j] < secs[j - 1]; j--) {
            double ts = secs[j];
            int ta = e->algo[j], tm = e->math[j];
            size_t tw = e->workspace[j];
            secs[j] = secs[j - 1], e->algo[j] = e->algo[j - 1], e->math[j] = e->math[j - 1];
            e->workspace[j] = e->workspace[j - 1];
            secs[j - 1] = ts, e->algo[j - 1] = ta, e->math[j - 1] = tm, e->workspace[j - 1] = tw;
        }
cleanup:
    return rc;
}

/* Fills e (key already set) with the usable candidates for direction dir, fastest first:
 * those cuDNN's heuristics list (conv_list) and that run (conv_trials); when the context
 * asks for determinism, only those cuDNN says are deterministic, unless none of them runs
 * (said on stderr once for the shape; the others are taken then). e->n is 0 when none
 * ran. */
static int conv_choose(struct cuda_ctx *c, int dir, const struct conv_io *io,
                       struct cuda_conv_algo *e)
{
    int rc = DR_OK;
    struct conv_candidate cand[CONV_MAX_ALGOS];
    char shape[256];
    int n = 0;
    e->n = 0;
    conv_shape_text(shape, sizeof(shape), e->key);
    /* fp32: plain FMA math, so that no TF32 rounding creeps in; half: tensor cores */
    TRY(conv_set_math(c, e, c->dt == CUDA_F32 ? CUDNN_FMA_MATH : CUDNN_TENSOR_OP_MATH));
    TRY(conv_candidates(c, e, dir, cand, &n));
    TRY(conv_list(c, dir, e, cand, n, c->deterministic ? PICK_DETERMINISTIC : PICK_ANY, shape));
    TRY(conv_trials(c, dir, io, e, shape));
    if (e->n == 0 && c->deterministic) {
        TRY(conv_list(c, dir, e, cand, n, PICK_NONDETERMINISTIC, shape));
        TRY(conv_trials(c, dir, io, e, shape));
        if (e->n > 0)
            dr_eprintf("dawnrun: cuDNN has no deterministic %s algorithm that works for %s: "
                       "using a non-deterministic one (its results may vary in their last "
                       "bits from run to run)\n", dir_names[dir], shape);
    }
cleanup:
    return rc;
}

/* Runs the convolution of x (n, ci, h, w) with co outputs of attributes a to a (ho, wo)
 * plane (key) in direction dir on io, with the cached descriptors and algorithms, made
 * and chosen on first use (conv_describe, conv_choose); a cached algorithm that fails is
 * dropped for the next. Fails with DR_ERR_DEVICE, naming direction, shape, data type and
 * layout, when no algorithm works. */
static int conv_run(struct cuda_ctx *c, const int key[10], int dir, const struct conv_io *io,
                    const struct tensor *x, int co, const struct conv_attr *a, int ho, int wo)
{
    int rc = DR_OK;
    struct cuda_conv_algo *e = NULL;
    char shape[256];
    for (int i = 0; i < c->n_algos && !e; i++)
        if (!memcmp(c->algos[i].key, key, sizeof(c->algos[i].key))) e = &c->algos[i];
    if (!e) {
        if (grow_reserve(&c->algos, &c->cap_algos, c->n_algos + 1, 32, sizeof(*c->algos)) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the convolution algorithm cache");
        e = &c->algos[c->n_algos];
        memset(e, 0, sizeof(*e));
        memcpy(e->key, key, sizeof(e->key));
        rc = conv_describe(c, e, x, co, a, ho, wo);
        if (rc == DR_OK) {   /* first use: the search is counted and timed */
            const uint64_t t0 = cuda_now_ns();
            rc = conv_choose(c, dir, io, e);
            c->counts.algo_searches++;
            c->counts.algo_search_ns += cuda_now_ns() - t0;
        }
        if (rc != DR_OK) {   /* not cached: the next call tries again */
            conv_entry_free(e);
            goto cleanup;
        }
        c->n_algos++;   /* cached even when empty: the shape fails at once next time */
    }
    while (e->n > 0) {
        cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
        TRY(conv_call(c, dir, e, 0, io, io->out, io->beta, &st));
        if (st == CUDNN_STATUS_SUCCESS) goto cleanup;
        cuda_clear_library_error();
        conv_shape_text(shape, sizeof(shape), key);
        dr_eprintf("dawnrun: cuDNN %s algorithm %d failed on %s: %s; trying the next\n",
                   dir_names[dir], e->algo[0], shape, cudnnGetErrorString(st));
        e->n--;
        memmove(e->algo, e->algo + 1, sizeof(e->algo[0]) * (size_t)e->n);
        memmove(e->math, e->math + 1, sizeof(e->math[0]) * (size_t)e->n);
        memmove(e->workspace, e->workspace + 1, sizeof(e->workspace[0]) * (size_t)e->n);
    }
    conv_shape_text(shape, sizeof(shape), key);
    FAIL(DR_ERR_DEVICE, "cuDNN: no %s convolution algorithm works for %s", dir_names[dir],
         shape);
cleanup:
    return rc;
}

void cuda_conv_release(struct cuda_ctx *c)
{
    for (int i = 0; i < c->n_algos; i++) conv_entry_free(&c->algos[i]);
    free(c->algos);
    c->algos = NULL;
    c->n_algos = c->cap_algos = 0;
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
    const float zero = 0.0f;
    struct conv_io io;
    ho = y->h;   /* the output plane, as the CONV_FWD node's rule checked it */
    wo = y->w;
    if (x->n == 0) goto cleanup;
    TRY(cuda_enter(c));
    conv_key(key, x, w->n, a, DIR_FWD, c->dt);
    io = {x->data, cuda_param_copy(c, w), NULL, y->data, tensor_count(y) * cuda_dt_size(c->dt),
          &zero};
    TRY(conv_run(c, key, DIR_FWD, &io, x, w->n, a, ho, wo));
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
    void *target = NULL;
    const float one = 1.0f, zero = 0.0f;
    struct conv_io io;
    const int want_dx = dx && dx->data, want_dw = dw && dw->data;
    ho = dy->h;   /* the output plane, as the CONV_BWD node's rule checked it */
    wo = dy->w;
    TRY(cuda_enter(c));
    if (x->n == 0) {   /* an empty batch: gradients of the parameters are zero */
        if (want_dw)
            CHECK_CUDA(cuda_counted_memset(c, dw->data, sizeof(float) * tensor_count(dw)));
        if (db && db->data)
            CHECK_CUDA(cuda_counted_memset(c, db->data, sizeof(float) * tensor_count(db)));
        goto cleanup;
    }
    if (want_dx) {
        conv_key(key, x, w->n, a, DIR_BWD_DATA, c->dt);
        io = {NULL, cuda_param_copy(c, w), dy->data, dx->data,
              tensor_count(dx) * cuda_dt_size(c->dt), accumulate ? &one : &zero};
        TRY(conv_run(c, key, DIR_BWD_DATA, &io, x, w->n, a, ho, wo));
    }
    if (want_dw) {
        conv_key(key, x, w->n, a, DIR_BWD_FILTER, c->dt);
        if (c->dt == CUDA_F32)
            target = dw->data;
        else
            TRY(cuda_scratch(c, SLOT_DW, tensor_count(dw) * cuda_dt_size(c->dt), &target));
        io = {x->data, NULL, dy->data, target, tensor_count(dw) * cuda_dt_size(c->dt), &zero};
        TRY(conv_run(c, key, DIR_BWD_FILTER, &io, x, w->n, a, ho, wo));
        if (target != dw->data) TRY(cuda_to_fp32(c, (float *)dw->data, target, tensor_count(dw)));
    }
    if (db && db->data)
        TRY(cuda_channel_sum(c, (float *)db->data, dy->data, (long)dy->n * ho * wo, dy->c));
cleanup:
    return rc;
}

/* Host emulation (see run.sh): cuDNN convolutions and cublasGemmEx as naive reference
 * loops with double accumulation. Both check what the real libraries would reject or what
 * would silently compute the wrong thing: descriptors that do not describe one NHWC
 * convolution, mixed data types, a workspace smaller than the size reported, leading
 * dimensions too small for the operand. Output is read only when beta is not zero, as in
 * the libraries.
 *
 * The algorithm queries offer one unsupported candidate, then three usable ones (0, 2, 3,
 * all the same reference loop), so that the engine's selection loop is exercised, each
 * with the determinism cuDNN's API reference gives its number in its direction
 * (emu_algo_nondet: backward-data 0, backward-filter 0 and 3 are non-deterministic).
 * Executing a non-deterministic one moves each output's sum, before its rounding, by one
 * fp32 ulp up or down with probability 1/2 (emu_atomic_noise, emu.h), a model of atomics
 * adding in another order each run: its low bits vary from run to run, so a caller
 * comparing runs bit for bit must not use it.
 *
 * DAWNRUN_EMU_CUDNN_REFUSE makes chosen executions fail as real cuDNN kernels sometimes do
 * for configurations its heuristics listed: rules separated by ';', each a ','-separated
 * list of conditions dir=fwd|bwd_data|bwd_filter, algo=N, c=N (input channels), k=N
 * (filter size), type=float|half|bfloat16; an execution matching every condition of one
 * rule returns CUDNN_STATUS_NOT_SUPPORTED. For example "algo=0,c=3,type=half" refuses
 * algorithm 0 for 3-channel half inputs, and "dir=bwd_filter,c=3,k=2" every
 * backward-filter algorithm of the 2x2 whitening shape. A refused execution (that, and an
 * algorithm the heuristics do not offer) also leaves cudaErrorInvalidConfiguration as the
 * runtime's last error, as a kernel launch the library attempted and the GPU refused
 * would: cuDNN's documentation does not say that a failed call leaves the runtime's error
 * state clean, so the caller must clear it before its own next launch check
 * (emu_set_last_error, emu.h).
 *
 * The handles remember their stream: an execution is checked when it is called and then
 * enqueued there (emu_enqueue), so that on a capturing stream it is recorded with its
 * alpha, beta and descriptors copied, as the real libraries' calls are captured when they
 * neither allocate nor synchronise.
 *
 * cuBLAS's workspace, as its documentation (cublasSetWorkspace, CUDA graphs support) says:
 * a handle without a workspace of its user's takes one from cuBLAS's own pool, which
 * under stream capture can put memory allocation nodes into the graph; cublasSetWorkspace
 * gives it one (256-byte aligned, else CUBLAS_STATUS_INVALID_VALUE), and cublasSetStream
 * takes it back to the pool. Where real cuBLAS would silently allocate inside the graph,
 * the emulation is strict: a GEMM enqueued on a capturing stream by a handle without a
 * workspace of its own is refused with CUBLAS_STATUS_NOT_SUPPORTED and a line on stderr.
 * An execution scribbles over the start of the handle's workspace.
 *
 * With DAWNRUN_EMU_COUNT_ONLY (emu_count_only, emu.h) an execution is checked and enqueued
 * or recorded as always, returns success, and computes nothing (its output and workspace
 * are left as they are). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "emu.h"
#include "include/cublas_v2.h"
#include "include/cudnn.h"

#define EMU_WORKSPACE 4096

/* Element i of an array of cuDNN / cuBLAS type code t (0 fp32, 2 fp16, else bf16). */
static double emu_get(int t, const void *p, size_t i)
{
    if (t == 0) return ((const float *)p)[i];
    if (t == 2) return __half2float(((const __half *)p)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)p)[i]);
}

static void emu_put(int t, void *p, size_t i, double v)
{
    if (t == 0)
        ((float *)p)[i] = (float)v;
    else if (t == 2)
        ((__half *)p)[i] = __float2half_rn((float)v);
    else
        ((__nv_bfloat16 *)p)[i] = __float2bfloat16_rn((float)v);
}

/* ------------------------------------------------------------------ cuDNN */

struct emu_tensor_desc {
    int fmt, dt, n, c, h, w;
};
struct emu_filter_desc {
    int fmt, dt, k, c, r, s;
};
struct emu_conv_desc {
    int ph, pw, u, v, dh, dw, mode, compute, math;
};
struct emu_cudnn {
    cudaStream_t stream;
};

const char *cudnnGetErrorString(cudnnStatus_t s)
{
    return s == CUDNN_STATUS_SUCCESS         ? "CUDNN_STATUS_SUCCESS"
           : s == CUDNN_STATUS_NOT_SUPPORTED ? "CUDNN_STATUS_NOT_SUPPORTED"
           : s == CUDNN_STATUS_BAD_PARAM     ? "CUDNN_STATUS_BAD_PARAM"
           : s == CUDNN_STATUS_EXECUTION_FAILED ? "CUDNN_STATUS_EXECUTION_FAILED"
           : s == CUDNN_STATUS_BAD_PARAM_NULL_POINTER ? "CUDNN_STATUS_BAD_PARAM_NULL_POINTER"
           : s == CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER
               ? "CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER"
           : s == CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED ? "CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED"
           : s == CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH
               ? "CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH"
                                             : "emulated cuDNN error";
}

size_t cudnnGetVersion(void)
{
    return 91900;
}

cudnnStatus_t cudnnCreate(cudnnHandle_t *h)
{
    *h = new emu_cudnn{NULL};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnDestroy(cudnnHandle_t h)
{
    delete h;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s)
{
    h->stream = s;
    return CUDNN_STATUS_SUCCESS;
}

cudaStream_t emu_cudnn_stream(const struct emu_cudnn *h)
{
    return h->stream;
}

#define EMU_DESC(type, create, destroy)                                                    \
    cudnnStatus_t create(type *d)                                                          \
    {                                                                                      \
        *d = (type)calloc(1, 64);                                                          \
        return CUDNN_STATUS_SUCCESS;                                                       \
    }                                                                                      \
    cudnnStatus_t destroy(type d)                                                          \
    {                                                                                      \
        free(d);                                                                           \
        return CUDNN_STATUS_SUCCESS;                                                       \
    }
EMU_DESC(cudnnTD, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor)
EMU_DESC(cudnnFD, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor)
EMU_DESC(cudnnCD, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor)

cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTD d, cudnnTensorFormat_t f, cudnnDataType_t t,
                                         int n, int c, int h, int w)
{
    if (n <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
    *d = {f, t, n, c, h, w};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFD d, cudnnDataType_t t, cudnnTensorFormat_t f,
                                         int k, int c, int h, int w)
{
    if (k <= 0 || c <= 0 || h <= 0 || w <= 0) return CUDNN_STATUS_BAD_PARAM;
    *d = {f, t, k, c, h, w};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnCD d, int ph, int pw, int u, int v, int dh,
                                              int dw, cudnnConvolutionMode_t m,
                                              cudnnDataType_t compute)
{
    if (ph < 0 || pw < 0 || u <= 0 || v <= 0 || dh <= 0 || dw <= 0) return CUDNN_STATUS_BAD_PARAM;
    *d = {ph, pw, u, v, dh, dw, m, compute, CUDNN_DEFAULT_MATH};
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnSetConvolutionMathType(cudnnCD d, cudnnMathType_t m)
{
    d->math = m;
    return CUDNN_STATUS_SUCCESS;
}

/* 0 when x, w, c, y describe one NHWC cross-correlation of one data type. */
static cudnnStatus_t emu_consistent(const emu_tensor_desc *x, const emu_filter_desc *w,
                                    const emu_conv_desc *c, const emu_tensor_desc *y)
{
    const int ho = (x->h + 2 * c->ph - w->r) / c->u + 1, wo = (x->w + 2 * c->pw - w->s) / c->v + 1;
    const char *why = NULL;
    if (x->fmt != CUDNN_TENSOR_NHWC || y->fmt != CUDNN_TENSOR_NHWC || w->fmt != CUDNN_TENSOR_NHWC)
        why = "not NHWC";
    else if (x->dt != y->dt || x->dt != w->dt)
        why = "data types differ";
    else if (c->mode != CUDNN_CROSS_CORRELATION || c->dh != 1 || c->dw != 1 ||
             c->compute != CUDNN_DATA_FLOAT)
        why = "convolution descriptor";
    else if (x->c != w->c || y->c != w->k || y->n != x->n || y->h != ho || y->w != wo)
        why = "shapes";
    if (!why) return CUDNN_STATUS_SUCCESS;
    fprintf(stderr, "emu cuDNN: %s: x (%d, %d, %d, %d) w (%d, %d, %d, %d) y (%d, %d, %d, %d)\n",
            why, x->n, x->c, x->h, x->w, w->k, w->c, w->r, w->s, y->n, y->c, y->h, y->w);
    return CUDNN_STATUS_BAD_PARAM;
}

/* Whether algorithm number algo of direction dir (0 fwd, 1 bwd_data, 2 bwd_filter) is
 * non-deterministic, as cuDNN's API reference says of the algorithm enums: every forward
 * algorithm is deterministic; of the backward-data ones ALGO_0 (a sum of matrix products
 * done with atomic adds) is not, ALGO_1, FFT (2), FFT_TILING (3) and the Winograd ones
 * are; of the backward-filter ones ALGO_0 and ALGO_3 (ALGO_0 with precomputed indices)
 * are not, ALGO_1, FFT (2), FFT_TILING and WINOGRAD_NONFUSED are. */
static int emu_algo_nondet(int dir, int algo)
{
    return (dir == 1 && algo == 0) || (dir == 2 && (algo == 0 || algo == 3));
}

/* Candidate 1 (unsupported), then candidates 0, 2, 3, with the descriptor's math type
 * and each one's documented determinism (emu_algo_nondet) for direction dir. */
template <typename P>
static cudnnStatus_t emu_candidates(cudnnCD c, int dir, int requested, int *returned, P *perf)
{
    static const int algos[4] = {1, 0, 2, 3};
    if (requested < 4) return CUDNN_STATUS_BAD_PARAM;
    memset(perf, 0, 4 * sizeof(*perf));
    for (int i = 0; i < 4; i++) {
        perf[i].algo = (decltype(perf[i].algo))algos[i];
        perf[i].status = algos[i] == 1 ? CUDNN_STATUS_NOT_SUPPORTED : CUDNN_STATUS_SUCCESS;
        perf[i].determinism =
            emu_algo_nondet(dir, algos[i]) ? CUDNN_NON_DETERMINISTIC : CUDNN_DETERMINISTIC;
        perf[i].mathType = (cudnnMathType_t)c->math;
    }
    *returned = 4;
    return CUDNN_STATUS_SUCCESS;
}

/* 1 when the execution (dir 0 fwd, 1 bwd_data, 2 bwd_filter) of algo on input x and
 * filter w matches a rule of DAWNRUN_EMU_CUDNN_REFUSE (see the top of this file). */
static int emu_refused(int dir, int algo, cudnnTD x, cudnnFD w)
{
    static const char *const dirs[3] = {"fwd", "bwd_data", "bwd_filter"};
    const char *types[3] = {"float", "half", "bfloat16"};
    const int tcode = x->dt == CUDNN_DATA_FLOAT ? 0 : x->dt == CUDNN_DATA_HALF ? 1 : 2;
    const char *env = getenv("DAWNRUN_EMU_CUDNN_REFUSE");
    char rules[1024];
    char *save_rule = NULL;
    if (!env || !*env) return 0;
    snprintf(rules, sizeof(rules), "%s", env);
    for (char *rule = strtok_r(rules, ";", &save_rule); rule;
         rule = strtok_r(NULL, ";", &save_rule)) {
        int match = 1;
        char *save_cond = NULL;
        for (char *cond = strtok_r(rule, ",", &save_cond); cond;
             cond = strtok_r(NULL, ",", &save_cond)) {
            char *eq = strchr(cond, '=');
            if (!eq) {
                fprintf(stderr, "emu cuDNN: DAWNRUN_EMU_CUDNN_REFUSE: '%s' is not key=value\n", cond);
                abort();
            }
            *eq = 0;
            const char *k = cond, *v = eq + 1;
            if (!strcmp(k, "dir")) match &= !strcmp(v, dirs[dir]);
            else if (!strcmp(k, "algo")) match &= atoi(v) == algo;
            else if (!strcmp(k, "c")) match &= atoi(v) == x->c;
            else if (!strcmp(k, "k")) match &= atoi(v) == w->r;
            else if (!strcmp(k, "type")) match &= !strcmp(v, types[tcode]);
            else {
                fprintf(stderr, "emu cuDNN: DAWNRUN_EMU_CUDNN_REFUSE: unknown key '%s'\n", k);
                abort();
            }
        }
        if (match) return 1;
    }
    return 0;
}

cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t, cudnnTD x, cudnnFD w,
                                                     cudnnCD c, cudnnTD y, int requested,
                                                     int *returned,
                                                     cudnnConvolutionFwdAlgoPerf_t *perf)
{
    cudnnStatus_t s = emu_consistent(x, w, c, y);
    return s ? s : emu_candidates(c, 0, requested, returned, perf);
}

cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t h, cudnnTD x, cudnnFD w,
                                                   cudnnCD c, cudnnTD y, int requested,
                                                   int *returned,
                                                   cudnnConvolutionFwdAlgoPerf_t *perf)
{
    return cudnnGetConvolutionForwardAlgorithm_v7(h, x, w, c, y, requested, returned, perf);
}

cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t, cudnnFD w, cudnnTD dy,
                                                          cudnnCD c, cudnnTD dx, int requested,
                                                          int *returned,
                                                          cudnnConvolutionBwdDataAlgoPerf_t *p)
{
    cudnnStatus_t s = emu_consistent(dx, w, c, dy);
    return s ? s : emu_candidates(c, 1, requested, returned, p);
}

cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(cudnnHandle_t h, cudnnFD w, cudnnTD dy,
                                                        cudnnCD c, cudnnTD dx, int requested,
                                                        int *returned,
                                                        cudnnConvolutionBwdDataAlgoPerf_t *p)
{
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, w, dy, c, dx, requested, returned, p);
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t, cudnnTD x, cudnnTD dy, cudnnCD c, cudnnFD dw, int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *p)
{
    cudnnStatus_t s = emu_consistent(x, dw, c, dy);
    return s ? s : emu_candidates(c, 2, requested, returned, p);
}

cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(cudnnHandle_t h, cudnnTD x, cudnnTD dy,
                                                          cudnnCD c, cudnnFD dw, int requested,
                                                          int *returned,
                                                          cudnnConvolutionBwdFilterAlgoPerf_t *p)
{
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, x, dy, c, dw, requested, returned, p);
}

/* Workspace sizes differ per direction (none for the forward pass), so that sharing and
 * growing one workspace are exercised. */
static size_t emu_ws(int dir)
{
    return (size_t)EMU_WORKSPACE * (size_t)dir;
}

cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t, cudnnTD x, cudnnFD w,
                                                      cudnnCD c, cudnnTD y,
                                                      cudnnConvolutionFwdAlgo_t a, size_t *s)
{
    *s = emu_ws(0);
    return a != 1 && a <= 3 ? emu_consistent(x, w, c, y) : CUDNN_STATUS_NOT_SUPPORTED;
}

cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t, cudnnFD w, cudnnTD dy,
                                                           cudnnCD c, cudnnTD dx,
                                                           cudnnConvolutionBwdDataAlgo_t a,
                                                           size_t *s)
{
    *s = emu_ws(1);
    return a != 1 && a <= 3 ? emu_consistent(dx, w, c, dy) : CUDNN_STATUS_NOT_SUPPORTED;
}

cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t, cudnnTD x,
                                                             cudnnTD dy, cudnnCD c, cudnnFD dw,
                                                             cudnnConvolutionBwdFilterAlgo_t a,
                                                             size_t *s)
{
    *s = emu_ws(2);
    return a != 1 && a <= 3 ? emu_consistent(x, dw, c, dy) : CUDNN_STATUS_NOT_SUPPORTED;
}

/* An operand of n elements of type t as floats (exact for every type): each element read
 * once here, through the checked loads, so that the sums below run on plain arrays. */
static std::vector<float> emu_floats(int t, const void *p, size_t n)
{
    std::vector<float> v(p ? n : 0);
    for (size_t i = 0; i < v.size(); i++) v[i] = (float)emu_get(t, p, i);
    return v;
}

/* The sums of one convolution in double, into acc (zeroed, the output's size): dir 0 y's
 * from x and w, 1 dx's from dy (y) and w, 2 dw's from x and dy. x and y (n, h, w, c), w
 * (k, r, s, c), as the descriptors say. Each output's terms are added in the same order
 * whatever the loop arrangement, n, output row and column, k, r, s, then c, so the sums
 * are those of the plain six-deep loop; the innermost loop runs over c, contiguous in
 * every operand. The arrays are this file's own, sized above: no sanitizer checks them. */
__attribute__((no_sanitize("address", "undefined")))
static void emu_conv_sums(int dir, const emu_tensor_desc *xd, const emu_filter_desc *wd,
                          const emu_conv_desc *cd, const emu_tensor_desc *yd,
                          const float *x,   /* (n, h, w, c) */
                          const float *w,   /* (k, r, s, c) */
                          const float *y,   /* (n, ho, wo, k) */
                          double *acc)
{
    const int C = xd->c;
    for (int n = 0; n < xd->n; n++)
        for (int oh = 0; oh < yd->h; oh++)
            for (int ow = 0; ow < yd->w; ow++)
                for (int k = 0; k < wd->k; k++) {
                    const size_t yi = (((size_t)n * yd->h + oh) * yd->w + ow) * yd->c + k;
                    const double yv = dir == 0 ? 0.0 : (double)y[yi];
                    double s = 0.0;
                    for (int r = 0; r < wd->r; r++)
                        for (int q = 0; q < wd->s; q++) {
                            const int ih = oh * cd->u - cd->ph + r, iw = ow * cd->v - cd->pw + q;
                            if (ih < 0 || ih >= xd->h || iw < 0 || iw >= xd->w) continue;
                            const size_t xi = (((size_t)n * xd->h + ih) * xd->w + iw) * C;
                            const size_t wi = (((size_t)k * wd->r + r) * wd->s + q) * C;
                            const float *xr = x + xi, *wr = w + wi;
                            if (dir == 0)
                                for (int c = 0; c < C; c++) s += (double)xr[c] * wr[c];
                            else if (dir == 1)
                                for (int c = 0; c < C; c++) acc[xi + c] += yv * wr[c];
                            else
                                for (int c = 0; c < C; c++) acc[wi + c] += (double)xr[c] * yv;
                        }
                    if (dir == 0) acc[yi] = s;
                }
}

/* dir 0: y = alpha conv(x, w) + beta y; 1: dx = alpha conv^T(dy, w) + beta dx;
 * 2: dw = alpha corr(x, dy) + beta dw; the descriptors already checked. nondet: each
 * output's sum moved as a non-deterministic algorithm's would be (emu_atomic_noise). */
static void emu_conv_run(int dir, const emu_tensor_desc *xd, const emu_filter_desc *wd,
                         const emu_conv_desc *cd, const emu_tensor_desc *yd, const void *x,
                         const void *w, const void *y, void *out, float a, float b, void *ws,
                         int nondet)
{
    memset(ws, 0x5a, emu_ws(dir));
    const int dt = xd->dt;
    const size_t nx = (size_t)xd->n * xd->h * xd->w * xd->c;
    const size_t nw = (size_t)wd->k * wd->r * wd->s * wd->c;
    const size_t ny = (size_t)yd->n * yd->h * yd->w * yd->c;
    const size_t nout = dir == 0 ? ny : dir == 1 ? nx : nw;
    const std::vector<float> xf = emu_floats(dt, dir == 1 ? NULL : x, nx);
    const std::vector<float> wf = emu_floats(dt, dir == 2 ? NULL : w, nw);
    const std::vector<float> yf = emu_floats(dt, dir == 0 ? NULL : y, ny);
    std::vector<double> acc(nout, 0.0);
    emu_conv_sums(dir, xd, wd, cd, yd, xf.data(), wf.data(), yf.data(), acc.data());
    for (size_t i = 0; i < nout; i++) {
        const double v = a * acc[i] + (b != 0.0f ? b * emu_get(dt, out, i) : 0.0);
        emu_put(dt, out, i, nondet ? emu_atomic_noise(v) : v);
    }
}

/* Checks one convolution, then runs it on h's stream or records it there, with alpha,
 * beta and copies of the descriptors. */
static cudnnStatus_t emu_conv(cudnnHandle_t h, int dir, int algo, cudnnTD xd, cudnnFD wd,
                              cudnnCD cd, cudnnTD yd, const void *x, const void *w,
                              const void *y, void *out, const void *alpha, const void *beta,
                              void *ws, size_t ws_bytes)
{
    cudnnStatus_t s = emu_consistent(xd, wd, cd, yd);
    if (s) return s;
    if (!ws || ws_bytes < emu_ws(dir)) {
        fprintf(stderr, "emu cuDNN: workspace of %zu bytes, %zu needed\n", ws_bytes, emu_ws(dir));
        return CUDNN_STATUS_BAD_PARAM;
    }
    const emu_tensor_desc xc = *xd, yc = *yd;
    const emu_filter_desc wc = *wd;
    const emu_conv_desc cc = *cd;
    const float a = *(const float *)alpha, b = *(const float *)beta;
    const int nondet = emu_algo_nondet(dir, algo);
    const cudaError_t e = emu_count_only()
                              ? emu_enqueue(h->stream, EMU_NODE_LIBRARY, []() {})
                              : emu_enqueue(h->stream, EMU_NODE_LIBRARY, [=]() {
                                    emu_conv_run(dir, &xc, &wc, &cc, &yc, x, w, y, out, a, b, ws,
                                                 nondet);
                                });
    return e ? CUDNN_STATUS_EXECUTION_FAILED : CUDNN_STATUS_SUCCESS;
}

/* A refused execution: NOT_SUPPORTED, with the runtime error a failed launch inside
 * cuDNN would leave (see the top of this file). */
static cudnnStatus_t emu_conv_refused(void)
{
    emu_set_last_error(cudaErrorInvalidConfiguration);
    return CUDNN_STATUS_NOT_SUPPORTED;
}

cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, cudnnTD xd,
                                      const void *x, cudnnFD wd, const void *w, cudnnCD cd,
                                      cudnnConvolutionFwdAlgo_t algo, void *ws, size_t ws_bytes,
                                      const void *beta, cudnnTD yd, void *y)
{
    if (algo == 1 || algo > 3 || emu_refused(0, algo, xd, wd)) return emu_conv_refused();
    return emu_conv(h, 0, algo, xd, wd, cd, yd, x, w, NULL, y, alpha, beta, ws, ws_bytes);
}

cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, cudnnFD wd,
                                           const void *w, cudnnTD dyd, const void *dy, cudnnCD cd,
                                           cudnnConvolutionBwdDataAlgo_t algo, void *ws,
                                           size_t ws_bytes, const void *beta, cudnnTD dxd,
                                           void *dx)
{
    if (algo == 1 || algo > 3 || emu_refused(1, algo, dxd, wd)) return emu_conv_refused();
    return emu_conv(h, 1, algo, dxd, wd, cd, dyd, NULL, w, dy, dx, alpha, beta, ws, ws_bytes);
}

cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, cudnnTD xd,
                                             const void *x, cudnnTD dyd, const void *dy,
                                             cudnnCD cd, cudnnConvolutionBwdFilterAlgo_t algo,
                                             void *ws, size_t ws_bytes, const void *beta,
                                             cudnnFD dwd, void *dw)
{
    if (algo == 1 || algo > 3 || emu_refused(2, algo, xd, dwd)) return emu_conv_refused();
    return emu_conv(h, 2, algo, xd, dwd, cd, dyd, x, NULL, dy, dw, alpha, beta, ws, ws_bytes);
}

/* ------------------------------------------------------------------ cuBLAS */

struct emu_cublas {
    cudaStream_t stream;
    void *ws;       /* cublasSetWorkspace's since the last cublasSetStream, or NULL */
    size_t ws_bytes;
    int ws_set;     /* 0: cuBLAS's own pool */
};

const char *cublasGetStatusString(cublasStatus_t s)
{
    return s == CUBLAS_STATUS_SUCCESS            ? "CUBLAS_STATUS_SUCCESS"
           : s == CUBLAS_STATUS_EXECUTION_FAILED ? "CUBLAS_STATUS_EXECUTION_FAILED"
           : s == CUBLAS_STATUS_NOT_SUPPORTED    ? "CUBLAS_STATUS_NOT_SUPPORTED"
           : s == CUBLAS_STATUS_INVALID_VALUE    ? "CUBLAS_STATUS_INVALID_VALUE"
                                                 : "emulated cuBLAS error";
}

cublasStatus_t cublasCreate(cublasHandle_t *h)
{
    *h = new emu_cublas{NULL, NULL, 0, 0};
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasDestroy(cublasHandle_t h)
{
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

/* Resets the workspace to cuBLAS's own pool, as the real cublasSetStream does. */
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s)
{
    h->stream = s;
    h->ws = NULL;
    h->ws_bytes = 0;
    h->ws_set = 0;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetWorkspace(cublasHandle_t h, void *workspace, size_t bytes)
{
    if ((uintptr_t)workspace % 256) {
        fprintf(stderr, "emu cuBLAS: workspace %p not 256-byte aligned\n", workspace);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    h->ws = workspace;
    h->ws_bytes = bytes;
    h->ws_set = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t)
{
    return CUBLAS_STATUS_SUCCESS;
}

static int emu_blas_type(cudaDataType_t t)
{
    return t == CUDA_R_32F ? 0 : t == CUDA_R_16F ? 2 : 9;
}

/* C (m, n) = alpha op(A) op(B) + beta C, column-major, op(A) (m, k), op(B) (k, n); the
 * arguments already checked. */
static void emu_gemm_run(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k,
                         float a, const void *A, int ta_t, int lda, const void *B, int tb_t,
                         int ldb, float b, void *C, int tc_t, int ldc)
{
    for (int i = 0; i < m; i++)
        for (int j = 0; j < n; j++) {
            double s = 0.0;
            for (int l = 0; l < k; l++) {
                const size_t ai = ta == CUBLAS_OP_N ? (size_t)i + (size_t)l * lda
                                                    : (size_t)l + (size_t)i * lda;
                const size_t bi = tb == CUBLAS_OP_N ? (size_t)l + (size_t)j * ldb
                                                    : (size_t)j + (size_t)l * ldb;
                s += emu_get(ta_t, A, ai) * emu_get(tb_t, B, bi);
            }
            const size_t ci = (size_t)i + (size_t)j * ldc;
            emu_put(tc_t, C, ci, a * s + (b != 0.0f ? b * emu_get(tc_t, C, ci) : 0.0));
        }
}

/* Checks the product, then runs it on h's stream or records it there with alpha and beta
 * (host scalars, read at the call as cuBLAS's host pointer mode does). */
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
                            int n, int k, const void *alpha, const void *A, cudaDataType_t at,
                            int lda, const void *B, cudaDataType_t bt, int ldb, const void *beta,
                            void *C, cudaDataType_t ct, int ldc, cublasComputeType_t compute,
                            cublasGemmAlgo_t)
{
    if (compute != CUBLAS_COMPUTE_32F || m < 0 || n < 0 || k < 0 || at != bt ||
        lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m ||
        lda < 1 || ldb < 1 || ldc < 1) {
        fprintf(stderr, "emu cuBLAS: invalid gemm m %d n %d k %d lda %d ldb %d ldc %d\n", m, n, k,
                lda, ldb, ldc);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (!h->ws_set && cudaStreamIsCapturing(h->stream, &cap) == cudaSuccess &&
        cap != cudaStreamCaptureStatusNone) {
        fprintf(stderr, "emu cuBLAS: a GEMM on a capturing stream from a handle without a "
                        "workspace of its own (cublasSetWorkspace): real cuBLAS would allocate "
                        "its workspace inside the graph\n");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    const float a = *(const float *)alpha, b = *(const float *)beta;
    const int ta_t = emu_blas_type(at), tb_t = emu_blas_type(bt), tc_t = emu_blas_type(ct);
    void *const ws = h->ws;
    const size_t scribble = h->ws_bytes < 4096 ? h->ws_bytes : 4096;
    const cudaError_t e =
        emu_count_only()
            ? emu_enqueue(h->stream, EMU_NODE_LIBRARY, []() {})
            : emu_enqueue(h->stream, EMU_NODE_LIBRARY, [=]() {
                  emu_gemm_run(ta, tb, m, n, k, a, A, ta_t, lda, B, tb_t, ldb, b, C, tc_t, ldc);
                  if (ws) memset(ws, 0x5a, scribble);
              });
    return e ? CUBLAS_STATUS_EXECUTION_FAILED : CUBLAS_STATUS_SUCCESS;
}

/* batch products of cublasGemmEx's kind, product i on A + i stride_a, B + i stride_b and
 * C + i stride_c (elements); checked as cublasGemmEx checks one, and batch >= 0. */
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void *alpha, const void *A, cudaDataType_t at,
                                          int lda, long long stride_a, const void *B,
                                          cudaDataType_t bt, int ldb, long long stride_b,
                                          const void *beta, void *C, cudaDataType_t ct, int ldc,
                                          long long stride_c, int batch,
                                          cublasComputeType_t compute, cublasGemmAlgo_t)
{
    if (compute != CUBLAS_COMPUTE_32F || m < 0 || n < 0 || k < 0 || batch < 0 || at != bt ||
        lda < (ta == CUBLAS_OP_N ? m : k) || ldb < (tb == CUBLAS_OP_N ? k : n) || ldc < m ||
        lda < 1 || ldb < 1 || ldc < 1 || stride_a < 0 || stride_b < 0 || stride_c < 0) {
        fprintf(stderr, "emu cuBLAS: invalid strided batched gemm m %d n %d k %d lda %d ldb %d "
                        "ldc %d batch %d\n", m, n, k, lda, ldb, ldc, batch);
        return CUBLAS_STATUS_INVALID_VALUE;
    }
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (!h->ws_set && cudaStreamIsCapturing(h->stream, &cap) == cudaSuccess &&
        cap != cudaStreamCaptureStatusNone) {
        fprintf(stderr, "emu cuBLAS: a GEMM on a capturing stream from a handle without a "
                        "workspace of its own (cublasSetWorkspace)\n");
        return CUBLAS_STATUS_NOT_SUPPORTED;
    }
    const float a = *(const float *)alpha, b = *(const float *)beta;
    const int ta_t = emu_blas_type(at), tb_t = emu_blas_type(bt), tc_t = emu_blas_type(ct);
    const size_t sa = at == CUDA_R_32F ? 4 : 2, sb = bt == CUDA_R_32F ? 4 : 2;
    const size_t sc = ct == CUDA_R_32F ? 4 : 2;
    void *const ws = h->ws;
    const size_t scribble = h->ws_bytes < 4096 ? h->ws_bytes : 4096;
    const cudaError_t e =
        emu_count_only()
            ? emu_enqueue(h->stream, EMU_NODE_LIBRARY, []() {})
            : emu_enqueue(h->stream, EMU_NODE_LIBRARY, [=]() {
                  for (int i = 0; i < batch; i++)
                      emu_gemm_run(ta, tb, m, n, k, a,
                                   (const char *)A + (size_t)i * (size_t)stride_a * sa, ta_t, lda,
                                   (const char *)B + (size_t)i * (size_t)stride_b * sb, tb_t, ldb,
                                   b, (char *)C + (size_t)i * (size_t)stride_c * sc, tc_t, ldc);
                  if (ws) memset(ws, 0x5a, scribble);
              });
    return e ? CUBLAS_STATUS_EXECUTION_FAILED : CUBLAS_STATUS_SUCCESS;
}

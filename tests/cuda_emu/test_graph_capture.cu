/* Stream capture and graph replay under the host emulation (run with
 * `tests/cuda_emu/run.sh --test BUILD_DIR tests/cuda_emu/test_graph_capture.cu`): a
 * captured sequence of kernels, a memset and a device-to-device copy replayed three times
 * equals running it three times; kernel arguments and library scalars are frozen at
 * capture; cuBLAS (with a workspace of its own) and cuDNN executions are captured; each
 * call real CUDA forbids during capture returns its error and invalidates the capture.
 * Exits 0 when every check holds, 1 otherwise (each failed check is printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "cudnn.h"

#define N 100

static int failures;

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "test_graph_capture.cu:%d: expected %s\n", __LINE__, #cond);   \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)
#define EXPECT_RC(call, rc) EXPECT((call) == (rc))
#define OK(call) EXPECT_RC(call, cudaSuccess)

/* y (n) = y a + x */
__global__ void scale_add_kernel(float *y, const float *x, float a, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = y[i] * a + x[i];
}

/* y (n) += b */
__global__ void shift_kernel(float *y, float b, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += b;
}

static float *dev_fill(float first, float step)
{
    float *p = NULL;
    OK(cudaMalloc((void **)&p, N * sizeof(float)));
    for (int i = 0; i < N; i++) p[i] = first + step * (float)i;   /* device memory is host's */
    return p;
}

static int same(const float *a, const float *b, int n)
{
    return memcmp(a, b, (size_t)n * sizeof(float)) == 0;
}

/* One step: tmp = 0; tmp = tmp + y; y = y a + tmp; y += b; z = y. Order matters. */
static void step(cudaStream_t s, float *y, float *tmp, float *z, float a, float b)
{
    OK(cudaMemsetAsync(tmp, 0, N * sizeof(float), s));
    scale_add_kernel<<<(N + 31) / 32, 32, 0, s>>>(tmp, y, 1.0f, N);
    scale_add_kernel<<<(N + 31) / 32, 32, 0, s>>>(y, tmp, a, N);
    shift_kernel<<<(N + 31) / 32, 32, 0, s>>>(y, b, N);
    OK(cudaMemcpyAsync(z, y, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
    OK(cudaGetLastError());
}

static void test_replay_equals_direct(cudaStream_t s)
{
    float *y0 = dev_fill(0.5f, 0.25f), *t0 = dev_fill(0, 0), *z0 = dev_fill(0, 0);
    float *y1 = dev_fill(0.5f, 0.25f), *t1 = dev_fill(0, 0), *z1 = dev_fill(0, 0);
    for (int r = 0; r < 3; r++) step(s, y0, t0, z0, 0.5f, 1.0f);
    OK(cudaStreamSynchronize(s));

    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    unsigned long long id = 0;
    float y_before[N];
    memcpy(y_before, y1, sizeof(y_before));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    OK(cudaStreamIsCapturing(s, &st));
    EXPECT(st == cudaStreamCaptureStatusActive);
    OK(cudaStreamGetCaptureInfo(s, &st, &id));
    EXPECT(st == cudaStreamCaptureStatusActive && id != 0);
    step(s, y1, t1, z1, 0.5f, 1.0f);
    OK(cudaStreamEndCapture(s, &g));
    EXPECT(g != NULL);
    OK(cudaStreamIsCapturing(s, &st));
    EXPECT(st == cudaStreamCaptureStatusNone);
    EXPECT(same(y1, y_before, N));   /* captured, not run */
    OK(cudaGraphInstantiate(&ge, g, 0));
    for (int r = 0; r < 3; r++) OK(cudaGraphLaunch(ge, s));
    OK(cudaStreamSynchronize(s));
    EXPECT(same(y0, y1, N));
    EXPECT(same(t0, t1, N));
    EXPECT(same(z0, z1, N));

    /* cudaGraphExecUpdate: same topology, new arguments (y0's buffers) */
    cudaGraph_t g2 = NULL;
    cudaGraphExecUpdateResultInfo info;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    step(s, y0, t0, z0, 0.5f, 1.0f);
    OK(cudaStreamEndCapture(s, &g2));
    OK(cudaGraphExecUpdate(ge, g2, &info));
    EXPECT(info.result == cudaGraphExecUpdateSuccess);
    OK(cudaGraphLaunch(ge, s));   /* y0 steps once more; y1 stays */
    step(s, y1, t1, z1, 0.5f, 1.0f);
    EXPECT(same(y0, y1, N));
    OK(cudaGraphDestroy(g2));
    /* a different topology is refused */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    shift_kernel<<<1, 32, 0, s>>>(y0, 1.0f, N);
    OK(cudaStreamEndCapture(s, &g2));
    EXPECT_RC(cudaGraphExecUpdate(ge, g2, &info), cudaErrorGraphExecUpdateFailure);
    EXPECT(info.result == cudaGraphExecUpdateErrorTopologyChanged);
    EXPECT_RC(cudaGetLastError(), cudaErrorGraphExecUpdateFailure);
    OK(cudaGraphDestroy(g2));

    OK(cudaGraphExecDestroy(ge));
    OK(cudaGraphDestroy(g));
    float *all[6] = {y0, t0, z0, y1, t1, z1};
    for (float *p : all) OK(cudaFree(p));
}

static void test_arguments_by_value(cudaStream_t s)
{
    float *y = dev_fill(1.0f, 1.0f), *other = dev_fill(7.0f, 0.0f), *ref = dev_fill(1.0f, 1.0f);
    float *other_before = dev_fill(7.0f, 0.0f);
    float b = 2.0f;
    float *target = y;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    shift_kernel<<<(N + 31) / 32, 32, 0, s>>>(target, b, N);
    OK(cudaStreamEndCapture(s, &g));
    b = 100.0f;        /* the replay uses the captured 2 */
    target = other;    /* and the captured pointer y */
    OK(cudaGraphInstantiate(&ge, g, 0));
    OK(cudaGraphLaunch(ge, s));
    OK(cudaGraphLaunch(ge, s));
    shift_kernel<<<(N + 31) / 32, 32, 0, s>>>(ref, 2.0f, N);
    shift_kernel<<<(N + 31) / 32, 32, 0, s>>>(ref, 2.0f, N);
    EXPECT(same(y, ref, N));
    EXPECT(same(target, other_before, N));
    OK(cudaGraphExecDestroy(ge));
    OK(cudaGraphDestroy(g));
    float *all[4] = {y, other, ref, other_before};
    for (float *p : all) OK(cudaFree(p));
}

/* A capture on s invalidated by forbidden(): the call returns rc, further work on s is
 * refused, and cudaStreamEndCapture fails with no graph. */
template <typename F>
static void expect_invalidates(cudaStream_t s, cudaStreamCaptureMode mode, cudaError_t rc,
                               F forbidden, int line)
{
    float *y = dev_fill(0, 0);
    cudaGraph_t g = (cudaGraph_t)&g;
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    const int before = failures;
    OK(cudaStreamBeginCapture(s, mode));
    shift_kernel<<<1, 32, 0, s>>>(y, 1.0f, N);
    EXPECT_RC(forbidden(), rc);
    OK(cudaStreamIsCapturing(s, &st));
    EXPECT(st == cudaStreamCaptureStatusInvalidated);
    EXPECT_RC(cudaMemsetAsync(y, 0, sizeof(float), s), cudaErrorStreamCaptureInvalidated);
    EXPECT_RC(cudaStreamEndCapture(s, &g), cudaErrorStreamCaptureInvalidated);
    EXPECT(g == NULL);
    OK(cudaStreamIsCapturing(s, &st));
    EXPECT(st == cudaStreamCaptureStatusNone);
    (void)cudaGetLastError();
    OK(cudaFree(y));
    if (failures != before) fprintf(stderr, "  (the forbidden call of line %d)\n", line);
}

static void test_forbidden(cudaStream_t s, cudaStream_t blocking)
{
    void *p = NULL;
    float *d = dev_fill(0, 0);
    float pageable[N];
    float *pinned = NULL;
    cudaEvent_t ev = NULL;
    OK(cudaHostAlloc((void **)&pinned, N * sizeof(float), cudaHostAllocMapped));
    OK(cudaEventCreate(&ev));
    const cudaStreamCaptureMode global = cudaStreamCaptureModeGlobal;
    const cudaError_t unsupported = cudaErrorStreamCaptureUnsupported;

    expect_invalidates(s, global, unsupported, [&] { return cudaMalloc(&p, 64); }, __LINE__);
    expect_invalidates(s, cudaStreamCaptureModeThreadLocal, unsupported,
                       [&] { return cudaMalloc(&p, 64); }, __LINE__);
    void *host = NULL;
    expect_invalidates(s, global, unsupported,
                       [&] { return cudaHostAlloc(&host, 64, cudaHostAllocMapped); }, __LINE__);
    expect_invalidates(s, global, unsupported, [&] { return cudaFreeHost(pinned); }, __LINE__);
    float *doomed = dev_fill(0, 0);
    expect_invalidates(s, global, unsupported, [&] { return cudaFree(doomed); }, __LINE__);
    OK(cudaFree(doomed));   /* the refused free did not free it */
    expect_invalidates(s, global, unsupported, [&] { return cudaStreamSynchronize(s); },
                       __LINE__);
    expect_invalidates(s, global, unsupported, [&] { return cudaStreamQuery(s); }, __LINE__);
    expect_invalidates(s, cudaStreamCaptureModeRelaxed, unsupported,
                       [&] { return cudaDeviceSynchronize(); }, __LINE__);
    expect_invalidates(s, global, cudaErrorCapturedEvent, [&] {
        OK(cudaEventRecord(ev, s));
        return cudaEventSynchronize(ev);
    }, __LINE__);
    expect_invalidates(s, global, cudaErrorCapturedEvent, [&] {
        OK(cudaEventRecord(ev, s));
        return cudaEventQuery(ev);
    }, __LINE__);
    expect_invalidates(s, global, unsupported, [&] {
        return cudaMemcpy(d, pageable, sizeof(pageable), cudaMemcpyHostToDevice);
    }, __LINE__);
    expect_invalidates(s, global, unsupported, [&] {
        return cudaMemcpyAsync(d, pageable, sizeof(pageable), cudaMemcpyHostToDevice, s);
    }, __LINE__);
    expect_invalidates(s, global, unsupported, [&] {
        return cudaMemcpyAsync(pageable, d, sizeof(pageable), cudaMemcpyDeviceToHost, s);
    }, __LINE__);
    /* the legacy stream while a blocking stream captures */
    expect_invalidates(blocking, global, cudaErrorStreamCaptureImplicit, [&] {
        shift_kernel<<<1, 32>>>(d, 1.0f, N);
        return cudaGetLastError();
    }, __LINE__);
    expect_invalidates(blocking, global, cudaErrorStreamCaptureImplicit,
                       [&] { return cudaMemsetAsync(d, 0, 4, 0); }, __LINE__);
    expect_invalidates(blocking, global, cudaErrorStreamCaptureImplicit,
                       [&] { return cudaStreamSynchronize(0); }, __LINE__);

    /* what stays allowed: relaxed mode's allocations, pinned host copies, an event's record */
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    OK(cudaMalloc(&p, 64));
    OK(cudaFree(p));
    OK(cudaHostAlloc(&host, 64, cudaHostAllocMapped));
    OK(cudaFreeHost(host));
    for (int i = 0; i < N; i++) pinned[i] = (float)i;
    OK(cudaMemcpyAsync(d, pinned, N * sizeof(float), cudaMemcpyHostToDevice, s));
    shift_kernel<<<(N + 31) / 32, 32, 0, s>>>(d, 1.0f, N);
    OK(cudaMemcpyAsync(pinned, d, N * sizeof(float), cudaMemcpyDeviceToHost, s));
    OK(cudaEventRecord(ev, s));
    OK(cudaGetLastError());
    OK(cudaStreamEndCapture(s, &g));
    OK(cudaGraphInstantiate(&ge, g, 0));
    OK(cudaGraphLaunch(ge, s));
    OK(cudaGraphLaunch(ge, s));   /* each replay copies pinned in, adds 1, copies out */
    int exact = 1;
    for (int i = 0; i < N; i++) exact &= pinned[i] == (float)i + 2.0f;
    EXPECT(exact);
    OK(cudaEventRecord(ev, s));   /* recorded outside capture again: usable */
    OK(cudaEventSynchronize(ev));
    OK(cudaGraphExecDestroy(ge));
    OK(cudaGraphDestroy(g));

    /* capture's own misuse */
    EXPECT_RC(cudaStreamBeginCapture(0, global), unsupported);
    EXPECT_RC(cudaStreamBeginCapture(cudaStreamLegacy, global), unsupported);
    OK(cudaStreamBeginCapture(s, global));
    EXPECT_RC(cudaStreamBeginCapture(s, global), cudaErrorIllegalState);
    EXPECT_RC(cudaStreamIsCapturing(0, &st), cudaSuccess);   /* s is non-blocking */
    OK(cudaStreamEndCapture(s, &g));
    OK(cudaGraphDestroy(g));
    EXPECT_RC(cudaStreamEndCapture(s, &g), cudaErrorIllegalState);
    OK(cudaStreamBeginCapture(blocking, global));
    EXPECT_RC(cudaStreamIsCapturing(0, &st), cudaErrorStreamCaptureImplicit);
    OK(cudaStreamEndCapture(blocking, &g));   /* a query does not invalidate */
    OK(cudaGraphDestroy(g));
    (void)cudaGetLastError();
    /* outside any capture the same calls succeed */
    OK(cudaMalloc(&p, 64));
    OK(cudaFree(p));
    OK(cudaStreamSynchronize(s));
    OK(cudaStreamQuery(s));
    OK(cudaDeviceSynchronize());
    OK(cudaMemcpy(d, pageable, sizeof(pageable), cudaMemcpyHostToDevice));
    OK(cudaMemcpyAsync(d, pageable, sizeof(pageable), cudaMemcpyHostToDevice, s));
    OK(cudaEventDestroy(ev));
    OK(cudaFreeHost(pinned));
    OK(cudaFree(d));
}

/* C (4, 3) = alpha A (4, 2) B (2, 3) + C, column-major; captured once, replayed twice.
 * Without a workspace of its own (none set, or cublasSetStream since), the handle's GEMM
 * is refused during capture: real cuBLAS would allocate its workspace inside the graph. */
static void test_cublas(cudaStream_t s)
{
    cublasHandle_t h = NULL;
    float *a = dev_fill(1.0f, 0.5f), *b = dev_fill(-1.0f, 0.25f);
    float *c0 = dev_fill(0.0f, 1.0f), *c1 = dev_fill(0.0f, 1.0f);
    float alpha = 0.5f, beta = 1.0f;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    void *ws = NULL;
    const size_t ws_bytes = (size_t)1 << 16;
    OK(cudaMalloc(&ws, ws_bytes));
    EXPECT(cublasCreate(&h) == CUBLAS_STATUS_SUCCESS);
    EXPECT(cublasSetWorkspace(h, (char *)ws + 8, 4096) == CUBLAS_STATUS_INVALID_VALUE);
    EXPECT(cublasSetWorkspace(h, ws, ws_bytes) == CUBLAS_STATUS_SUCCESS);
    EXPECT(cublasSetStream(h, s) == CUBLAS_STATUS_SUCCESS);   /* back to cuBLAS's pool */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 3, 2, &alpha, a, CUDA_R_32F, 4, b,
                        CUDA_R_32F, 2, &beta, c1, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_NOT_SUPPORTED);
    OK(cudaStreamEndCapture(s, &g));
    OK(cudaGraphDestroy(g));
    g = NULL;
    EXPECT(cublasSetWorkspace(h, ws, ws_bytes) == CUBLAS_STATUS_SUCCESS);
    for (int r = 0; r < 2; r++)
        EXPECT(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 3, 2, &alpha, a, CUDA_R_32F, 4, b,
                            CUDA_R_32F, 2, &beta, c0, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    float c_before[12];
    memcpy(c_before, c1, sizeof(c_before));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, 4, 3, 2, &alpha, a, CUDA_R_32F, 4, b,
                        CUDA_R_32F, 2, &beta, c1, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    OK(cudaStreamEndCapture(s, &g));
    EXPECT(same(c1, c_before, 12));   /* captured, not run */
    alpha = 9.0f;                     /* host scalars are read at the call */
    OK(cudaGraphInstantiate(&ge, g, 0));
    OK(cudaGraphLaunch(ge, s));
    OK(cudaGraphLaunch(ge, s));
    EXPECT(same(c0, c1, 12));
    EXPECT(!same(c1, c_before, 12));
    OK(cudaGraphExecDestroy(ge));
    OK(cudaGraphDestroy(g));
    EXPECT(cublasDestroy(h) == CUBLAS_STATUS_SUCCESS);
    float *all[4] = {a, b, c0, c1};
    for (float *p : all) OK(cudaFree(p));
    OK(cudaFree(ws));
}

/* One NHWC forward convolution, x (1, 3, 3, 2), w (2, 2, 2, 2), y (1, 2, 2, 2): captured,
 * its descriptors destroyed, then replayed; equals the direct call. */
static void test_cudnn(cudaStream_t s)
{
    cudnnHandle_t h = NULL;
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnFilterDescriptor_t wd = NULL;
    cudnnConvolutionDescriptor_t cd = NULL;
    float *x = dev_fill(0.5f, 0.125f), *w = dev_fill(-0.25f, 0.0625f);
    float *y0 = dev_fill(0, 0), *y1 = dev_fill(0, 0), *ws = dev_fill(0, 0);
    const float alpha = 1.0f, beta = 0.0f;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    EXPECT(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnSetStream(h, s) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnCreateTensorDescriptor(&xd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnCreateTensorDescriptor(&yd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnCreateFilterDescriptor(&wd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnCreateConvolutionDescriptor(&cd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnSetTensor4dDescriptor(xd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 3, 3) == 0);
    EXPECT(cudnnSetTensor4dDescriptor(yd, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 1, 2, 2, 2) == 0);
    EXPECT(cudnnSetFilter4dDescriptor(wd, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 2, 2, 2, 2) == 0);
    EXPECT(cudnnSetConvolution2dDescriptor(cd, 0, 0, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                           CUDNN_DATA_FLOAT) == 0);
    EXPECT(cudnnConvolutionForward(h, &alpha, xd, x, wd, w, cd, 0, ws, N * sizeof(float), &beta,
                                   yd, y0) == CUDNN_STATUS_SUCCESS);
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cudnnConvolutionForward(h, &alpha, xd, x, wd, w, cd, 0, ws, N * sizeof(float), &beta,
                                   yd, y1) == CUDNN_STATUS_SUCCESS);
    OK(cudaStreamEndCapture(s, &g));
    EXPECT(!same(y0, y1, 8));   /* captured, not run: y1 still zero */
    EXPECT(cudnnDestroyTensorDescriptor(xd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnDestroyTensorDescriptor(yd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnDestroyFilterDescriptor(wd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnDestroyConvolutionDescriptor(cd) == CUDNN_STATUS_SUCCESS);
    OK(cudaGraphInstantiate(&ge, g, 0));
    OK(cudaGraphLaunch(ge, s));
    EXPECT(same(y0, y1, 8));
    OK(cudaGraphExecDestroy(ge));
    OK(cudaGraphDestroy(g));
    EXPECT(cudnnDestroy(h) == CUDNN_STATUS_SUCCESS);
    float *all[5] = {x, w, y0, y1, ws};
    for (float *p : all) OK(cudaFree(p));
}

int main(void)
{
    cudaStream_t s = NULL, blocking = NULL;
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    OK(cudaStreamCreate(&blocking));
    test_replay_equals_direct(s);
    test_arguments_by_value(s);
    test_forbidden(s, blocking);
    test_cublas(s);
    test_cudnn(s);
    OK(cudaStreamDestroy(s));
    OK(cudaStreamDestroy(blocking));
    if (failures) {
        fprintf(stderr, "test_graph_capture: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_graph_capture: every check holds\n");
    return 0;
}

/* The emulation's count-only mode (run with
 * `tests/cuda_emu/run.sh --test BUILD_DIR tests/cuda_emu/test_count_only.cu`; the program
 * turns the mode on itself, before its first CUDA call): kernel bodies, cuDNN convolutions
 * and cuBLAS products are accepted, return success and compute nothing, directly and
 * replayed from a captured graph, while memsets, copies, events and the capture rules
 * behave as always. Exits 0 when every check holds, 1 otherwise (each failed check is
 * printed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cublas_v2.h"
#include "cuda_runtime.h"
#include "cudnn.h"

#define N 64

static int failures;

#define EXPECT(cond)                                                                       \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "test_count_only.cu:%d: expected %s\n", __LINE__, #cond);      \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)
#define OK(call) EXPECT((call) == cudaSuccess)

/* y (n) = v */
__global__ void fill_kernel(float *y, float v, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = v;
}

/* 1 when every byte of p (n bytes) is b. */
static int all_bytes(const void *p, int b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (((const unsigned char *)p)[i] != (unsigned char)b) return 0;
    return 1;
}

#define WS 8192   /* bytes: more than any emulated convolution's workspace */

static float *dev_alloc_bytes(size_t n)
{
    float *p = NULL;
    OK(cudaMalloc((void **)&p, n));
    return p;
}

static float *dev_alloc(void)
{
    return dev_alloc_bytes(N * sizeof(float));
}

/* Kernels do not run; memsets and copies do, on the legacy stream and on s. */
static void test_direct(cudaStream_t s)
{
    float *y = dev_alloc(), *z = dev_alloc();
    float host[N];
    fill_kernel<<<2, 32>>>(y, 1.0f, N);
    OK(cudaGetLastError());
    EXPECT(all_bytes(y, 0xff, sizeof(host)));   /* still the fresh allocation's fill */
    fill_kernel<<<2, 32, 0, s>>>(y, 1.0f, N);
    OK(cudaGetLastError());
    EXPECT(all_bytes(y, 0xff, sizeof(host)));
    OK(cudaMemsetAsync(y, 0, N * sizeof(float), s));
    EXPECT(all_bytes(y, 0, sizeof(host)));
    for (int i = 0; i < N; i++) host[i] = (float)i;
    OK(cudaMemcpy(z, host, sizeof(host), cudaMemcpyHostToDevice));
    EXPECT(memcmp(z, host, sizeof(host)) == 0);
    OK(cudaMemcpyAsync(y, z, sizeof(host), cudaMemcpyDeviceToDevice, s));
    EXPECT(memcmp(y, host, sizeof(host)) == 0);
    OK(cudaStreamSynchronize(s));
    OK(cudaFree(y));
    OK(cudaFree(z));
}

/* A captured launch is recorded and replays as nothing; the memset and the copy captured
 * around it replay; what capture forbids is still refused. */
static void test_captured(cudaStream_t s)
{
    float *y = dev_alloc(), *z = dev_alloc(), *extra = NULL;
    cudaGraph_t g = NULL;
    cudaGraphExec_t ge = NULL;
    cudaEvent_t ev = NULL;
    OK(cudaEventCreate(&ev));
    OK(cudaMemsetAsync(z, 0x11, N * sizeof(float), s));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    OK(cudaMemsetAsync(y, 0x22, N * sizeof(float), s));
    fill_kernel<<<2, 32, 0, s>>>(y, 1.0f, N);
    OK(cudaGetLastError());
    OK(cudaMemcpyAsync(z, y, N * sizeof(float), cudaMemcpyDeviceToDevice, s));
    OK(cudaEventRecord(ev, s));
    EXPECT(all_bytes(y, 0xff, N * sizeof(float)));   /* recorded, not run */
    EXPECT(all_bytes(z, 0x11, N * sizeof(float)));
    OK(cudaStreamEndCapture(s, &g));
    EXPECT(g != NULL);
    OK(cudaGraphInstantiate(&ge, g, 0));
    OK(cudaGraphLaunch(ge, s));
    EXPECT(all_bytes(y, 0x22, N * sizeof(float)));   /* the memset ran, the kernel did not */
    EXPECT(all_bytes(z, 0x22, N * sizeof(float)));   /* and the copy after it ran */
    OK(cudaGraphExecDestroy(ge));
    OK(cudaGraphDestroy(g));

    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    fill_kernel<<<2, 32, 0, s>>>(y, 1.0f, N);
    EXPECT(cudaMalloc((void **)&extra, 16) == cudaErrorStreamCaptureUnsupported);
    EXPECT(cudaStreamEndCapture(s, &g) == cudaErrorStreamCaptureInvalidated);
    EXPECT(g == NULL);
    (void)cudaGetLastError();
    OK(cudaEventDestroy(ev));
    OK(cudaFree(y));
    OK(cudaFree(z));
}

/* cuBLAS and cuDNN executions return success, are captured, and write nothing. */
static void test_libraries(cudaStream_t s)
{
    float *a = dev_alloc(), *b = dev_alloc(), *c = dev_alloc(), *ws = dev_alloc_bytes(WS);
    const float alpha = 1.0f, beta = 0.0f;
    cublasHandle_t bh = NULL;
    EXPECT(cublasCreate(&bh) == CUBLAS_STATUS_SUCCESS);
    EXPECT(cublasSetStream(bh, s) == CUBLAS_STATUS_SUCCESS);
    OK(cudaMemsetAsync(a, 0, N * sizeof(float), s));
    OK(cudaMemsetAsync(b, 0, N * sizeof(float), s));
    EXPECT(cublasGemmEx(bh, CUBLAS_OP_N, CUBLAS_OP_N, 4, 3, 2, &alpha, a, CUDA_R_32F, 4, b,
                        CUDA_R_32F, 2, &beta, c, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS);
    EXPECT(all_bytes(c, 0xff, N * sizeof(float)));   /* a real product would write zeros */
    EXPECT(cublasGemmEx(bh, CUBLAS_OP_N, CUBLAS_OP_N, 4, 3, 2, &alpha, a, CUDA_R_32F, 1, b,
                        CUDA_R_32F, 2, &beta, c, CUDA_R_32F, 4, CUBLAS_COMPUTE_32F,
                        CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_INVALID_VALUE);   /* still checked */
    EXPECT(cublasDestroy(bh) == CUBLAS_STATUS_SUCCESS);

    cudnnHandle_t h = NULL;
    cudnnTensorDescriptor_t xd = NULL, yd = NULL;
    cudnnFilterDescriptor_t wd = NULL;
    cudnnConvolutionDescriptor_t cd = NULL;
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
    EXPECT(cudnnConvolutionForward(h, &alpha, xd, a, wd, b, cd, 0, ws, WS, &beta,
                                   yd, c) == CUDNN_STATUS_SUCCESS);
    EXPECT(all_bytes(c, 0xff, N * sizeof(float)));
    EXPECT(cudnnConvolutionForward(h, &alpha, xd, a, wd, b, cd, 1, ws, WS, &beta,
                                   yd, c) == CUDNN_STATUS_NOT_SUPPORTED);   /* still checked */
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    EXPECT(cudnnConvolutionBackwardData(h, &alpha, wd, b, yd, a, cd, 0, ws, WS,
                                        &beta, xd, c) == CUDNN_STATUS_SUCCESS);
    OK(cudaStreamEndCapture(s, &g));
    OK(cudaGraphInstantiate(&ge, g, 0));
    OK(cudaGraphLaunch(ge, s));
    EXPECT(all_bytes(c, 0xff, N * sizeof(float)));
    EXPECT(all_bytes(ws, 0xff, WS));   /* the workspace is not touched either */
    OK(cudaGraphExecDestroy(ge));
    OK(cudaGraphDestroy(g));
    EXPECT(cudnnDestroyTensorDescriptor(xd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnDestroyTensorDescriptor(yd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnDestroyFilterDescriptor(wd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnDestroyConvolutionDescriptor(cd) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnDestroy(h) == CUDNN_STATUS_SUCCESS);
    float *all[4] = {a, b, c, ws};
    for (float *p : all) OK(cudaFree(p));
}

int main(void)
{
    cudaStream_t s = NULL;
    setenv("DAWNRUN_EMU_COUNT_ONLY", "1", 1);   /* read at the emulation's first launch */
    OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    test_direct(s);
    test_captured(s);
    test_libraries(s);
    OK(cudaStreamDestroy(s));
    if (failures) {
        fprintf(stderr, "test_count_only: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_count_only: every check holds\n");
    return 0;
}

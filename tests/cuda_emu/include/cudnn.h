/* Host emulation: the subset of cuDNN's legacy convolution API that the engine calls,
 * with cuDNN's names and argument orders; emu_libs.cpp implements it with naive loops. */
#pragma once
#include <stddef.h>

#include "cuda_runtime.h"

typedef enum {
    CUDNN_STATUS_SUCCESS = 0,
    CUDNN_STATUS_BAD_PARAM = 3,
    CUDNN_STATUS_EXECUTION_FAILED = 8,
    CUDNN_STATUS_NOT_SUPPORTED = 9
} cudnnStatus_t;
typedef struct emu_cudnn *cudnnHandle_t;
typedef struct emu_tensor_desc *cudnnTensorDescriptor_t;
typedef struct emu_filter_desc *cudnnFilterDescriptor_t;
typedef struct emu_conv_desc *cudnnConvolutionDescriptor_t;
typedef enum { CUDNN_TENSOR_NCHW = 0, CUDNN_TENSOR_NHWC = 1 } cudnnTensorFormat_t;
typedef enum { CUDNN_DATA_FLOAT = 0, CUDNN_DATA_HALF = 2, CUDNN_DATA_BFLOAT16 = 9 } cudnnDataType_t;
typedef enum { CUDNN_CONVOLUTION = 0, CUDNN_CROSS_CORRELATION = 1 } cudnnConvolutionMode_t;
typedef enum {
    CUDNN_DEFAULT_MATH = 0,
    CUDNN_TENSOR_OP_MATH = 1,
    CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION = 2,
    CUDNN_FMA_MATH = 3
} cudnnMathType_t;
typedef int cudnnConvolutionFwdAlgo_t;
typedef int cudnnConvolutionBwdDataAlgo_t;
typedef int cudnnConvolutionBwdFilterAlgo_t;
typedef int cudnnDeterminism_t;

#define EMU_PERF(name, algo_t)                                                             \
    typedef struct {                                                                       \
        algo_t algo;                                                                       \
        cudnnStatus_t status;                                                              \
        float time;                                                                        \
        size_t memory;                                                                     \
        cudnnDeterminism_t determinism;                                                    \
        cudnnMathType_t mathType;                                                          \
        int reserved[3];                                                                   \
    } name;
EMU_PERF(cudnnConvolutionFwdAlgoPerf_t, cudnnConvolutionFwdAlgo_t)
EMU_PERF(cudnnConvolutionBwdDataAlgoPerf_t, cudnnConvolutionBwdDataAlgo_t)
EMU_PERF(cudnnConvolutionBwdFilterAlgoPerf_t, cudnnConvolutionBwdFilterAlgo_t)
#undef EMU_PERF

typedef cudnnTensorDescriptor_t cudnnTD;
typedef cudnnFilterDescriptor_t cudnnFD;
typedef cudnnConvolutionDescriptor_t cudnnCD;

const char *cudnnGetErrorString(cudnnStatus_t s);
size_t cudnnGetVersion(void);
cudnnStatus_t cudnnCreate(cudnnHandle_t *h);
cudnnStatus_t cudnnDestroy(cudnnHandle_t h);
cudnnStatus_t cudnnSetStream(cudnnHandle_t h, cudaStream_t s);
cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTD *d);
cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTD d);
cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFD *d);
cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFD d);
cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnCD *d);
cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnCD d);
cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTD d, cudnnTensorFormat_t f, cudnnDataType_t t,
                                         int n, int c, int h, int w);
cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFD d, cudnnDataType_t t, cudnnTensorFormat_t f,
                                         int k, int c, int h, int w);
cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnCD d, int pad_h, int pad_w, int u, int v,
                                              int dil_h, int dil_w, cudnnConvolutionMode_t m,
                                              cudnnDataType_t compute);
cudnnStatus_t cudnnSetConvolutionMathType(cudnnCD d, cudnnMathType_t m);
cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(cudnnHandle_t h, cudnnTD x, cudnnFD w,
                                                     cudnnCD c, cudnnTD y, int requested,
                                                     int *returned,
                                                     cudnnConvolutionFwdAlgoPerf_t *perf);
cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(cudnnHandle_t h, cudnnTD x, cudnnFD w,
                                                   cudnnCD c, cudnnTD y, int requested,
                                                   int *returned,
                                                   cudnnConvolutionFwdAlgoPerf_t *perf);
cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(cudnnHandle_t h, cudnnFD w,
                                                          cudnnTD dy, cudnnCD c, cudnnTD dx,
                                                          int requested, int *returned,
                                                          cudnnConvolutionBwdDataAlgoPerf_t *p);
cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(cudnnHandle_t h, cudnnFD w, cudnnTD dy,
                                                        cudnnCD c, cudnnTD dx, int requested,
                                                        int *returned,
                                                        cudnnConvolutionBwdDataAlgoPerf_t *p);
cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t h, cudnnTD x, cudnnTD dy, cudnnCD c, cudnnFD dw, int requested, int *returned,
    cudnnConvolutionBwdFilterAlgoPerf_t *p);
cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(cudnnHandle_t h, cudnnTD x, cudnnTD dy,
                                                          cudnnCD c, cudnnFD dw, int requested,
                                                          int *returned,
                                                          cudnnConvolutionBwdFilterAlgoPerf_t *p);
cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(cudnnHandle_t h, cudnnTD x, cudnnFD w,
                                                      cudnnCD c, cudnnTD y,
                                                      cudnnConvolutionFwdAlgo_t a, size_t *s);
cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(cudnnHandle_t h, cudnnFD w,
                                                           cudnnTD dy, cudnnCD c, cudnnTD dx,
                                                           cudnnConvolutionBwdDataAlgo_t a,
                                                           size_t *s);
cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(cudnnHandle_t h, cudnnTD x,
                                                             cudnnTD dy, cudnnCD c, cudnnFD dw,
                                                             cudnnConvolutionBwdFilterAlgo_t a,
                                                             size_t *s);
cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t h, const void *alpha, cudnnTD xd,
                                      const void *x, cudnnFD wd, const void *w, cudnnCD cd,
                                      cudnnConvolutionFwdAlgo_t a, void *ws, size_t ws_bytes,
                                      const void *beta, cudnnTD yd, void *y);
cudnnStatus_t cudnnConvolutionBackwardData(cudnnHandle_t h, const void *alpha, cudnnFD wd,
                                           const void *w, cudnnTD dyd, const void *dy, cudnnCD cd,
                                           cudnnConvolutionBwdDataAlgo_t a, void *ws,
                                           size_t ws_bytes, const void *beta, cudnnTD dxd,
                                           void *dx);
cudnnStatus_t cudnnConvolutionBackwardFilter(cudnnHandle_t h, const void *alpha, cudnnTD xd,
                                             const void *x, cudnnTD dyd, const void *dy,
                                             cudnnCD cd, cudnnConvolutionBwdFilterAlgo_t a,
                                             void *ws, size_t ws_bytes, const void *beta,
                                             cudnnFD dwd, void *dw);

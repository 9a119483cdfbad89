/* Host emulation: the subset of cuDNN's API that the engine calls, with cuDNN 9's names,
 * numeric values and argument orders: the legacy convolution API (emu_libs.cpp implements
 * it with naive loops) and the backend graph API for the three runtime-fusion patterns
 * the engine builds (emu_graph.cpp). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "cuda_runtime.h"

typedef enum {
    CUDNN_STATUS_SUCCESS = 0,
    CUDNN_STATUS_BAD_PARAM = 2000,
    CUDNN_STATUS_BAD_PARAM_NULL_POINTER = 2002,
    CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER = 2003,
    CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED = 2004,
    CUDNN_STATUS_NOT_SUPPORTED = 3000,
    CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH = 3007,
    CUDNN_STATUS_EXECUTION_FAILED = 5000
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
typedef enum { CUDNN_NON_DETERMINISTIC = 0, CUDNN_DETERMINISTIC = 1 } cudnnDeterminism_t;

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

/* ------------------------------------------------ the backend graph API (emu_graph.cpp) */

typedef void *cudnnBackendDescriptor_t;

typedef enum {
    CUDNN_POINTWISE_ADD = 0,
    CUDNN_POINTWISE_MUL = 1,
    CUDNN_POINTWISE_SUB = 9,
    CUDNN_POINTWISE_RELU_FWD = 100,
    CUDNN_POINTWISE_RELU_BWD = 200
} cudnnPointwiseMode_t;

typedef enum { CUDNN_GENSTATS_SUM_SQSUM = 0 } cudnnGenStatsMode_t;

typedef enum {
    CUDNN_NUMERICAL_NOTE_TENSOR_CORE = 0,
    CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS = 1,
    CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION = 2,
    CUDNN_NUMERICAL_NOTE_FFT = 3,
    CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC = 4,
    CUDNN_NUMERICAL_NOTE_WINOGRAD = 5,
    CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_4x4 = 6,
    CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_6x6 = 7,
    CUDNN_NUMERICAL_NOTE_WINOGRAD_TILE_13x13 = 8,
    CUDNN_NUMERICAL_NOTE_STRICT_NAN_PROP = 9,
    CUDNN_NUMERICAL_NOTE_TYPE_COUNT = 10
} cudnnBackendNumericalNote_t;

typedef enum {
    CUDNN_HEUR_MODE_INSTANT = 0,
    CUDNN_HEUR_MODE_B = 1,
    CUDNN_HEUR_MODE_FALLBACK = 2,
    CUDNN_HEUR_MODE_A = 3
} cudnnBackendHeurMode_t;

typedef enum {
    CUDNN_ATTR_POINTWISE_MODE = 0,
    CUDNN_ATTR_POINTWISE_MATH_PREC = 1,
    CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP = 3,
    CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP = 4,

    CUDNN_ATTR_CONVOLUTION_COMP_TYPE = 100,
    CUDNN_ATTR_CONVOLUTION_CONV_MODE = 101,
    CUDNN_ATTR_CONVOLUTION_DILATIONS = 102,
    CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES = 103,
    CUDNN_ATTR_CONVOLUTION_POST_PADDINGS = 104,
    CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS = 105,
    CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS = 106,

    CUDNN_ATTR_ENGINEHEUR_MODE = 200,
    CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH = 201,
    CUDNN_ATTR_ENGINEHEUR_RESULTS = 202,

    CUDNN_ATTR_ENGINECFG_ENGINE = 300,
    CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE = 303,

    CUDNN_ATTR_EXECUTION_PLAN_HANDLE = 400,
    CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG = 401,
    CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE = 402,

    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA = 700,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA = 701,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC = 702,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W = 703,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X = 704,
    CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y = 705,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA = 706,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA = 707,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC = 708,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W = 709,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX = 710,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY = 711,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA = 712,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA = 713,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC = 714,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW = 715,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X = 716,
    CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY = 717,

    CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR = 750,
    CUDNN_ATTR_OPERATION_POINTWISE_XDESC = 751,
    CUDNN_ATTR_OPERATION_POINTWISE_BDESC = 752,
    CUDNN_ATTR_OPERATION_POINTWISE_YDESC = 753,
    CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1 = 754,
    CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2 = 755,
    CUDNN_ATTR_OPERATION_POINTWISE_DXDESC = 756,
    CUDNN_ATTR_OPERATION_POINTWISE_DYDESC = 757,

    CUDNN_ATTR_OPERATION_GENSTATS_MODE = 770,
    CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC = 771,
    CUDNN_ATTR_OPERATION_GENSTATS_XDESC = 772,
    CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC = 773,
    CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC = 774,

    CUDNN_ATTR_OPERATIONGRAPH_HANDLE = 800,
    CUDNN_ATTR_OPERATIONGRAPH_OPS = 801,
    CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT = 802,

    CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT = 900,
    CUDNN_ATTR_TENSOR_DATA_TYPE = 901,
    CUDNN_ATTR_TENSOR_DIMENSIONS = 902,
    CUDNN_ATTR_TENSOR_STRIDES = 903,
    CUDNN_ATTR_TENSOR_UNIQUE_ID = 906,
    CUDNN_ATTR_TENSOR_IS_VIRTUAL = 907,

    CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS = 1000,
    CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS = 1001,
    CUDNN_ATTR_VARIANT_PACK_WORKSPACE = 1003,

    CUDNN_ATTR_ENGINE_OPERATION_GRAPH = 1300,
    CUDNN_ATTR_ENGINE_GLOBAL_INDEX = 1301,
    CUDNN_ATTR_ENGINE_NUMERICAL_NOTE = 1303,

    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC = 1620,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC = 1621,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC = 1622,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC = 1623,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC = 1624,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC = 1625,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC = 1626,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC = 1627,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC = 1628,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC = 1629,
    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS = 1630
} cudnnBackendAttributeName_t;

typedef enum {
    CUDNN_TYPE_HANDLE = 0,
    CUDNN_TYPE_DATA_TYPE = 1,
    CUDNN_TYPE_BOOLEAN = 2,
    CUDNN_TYPE_INT64 = 3,
    CUDNN_TYPE_FLOAT = 4,
    CUDNN_TYPE_DOUBLE = 5,
    CUDNN_TYPE_VOID_PTR = 6,
    CUDNN_TYPE_CONVOLUTION_MODE = 7,
    CUDNN_TYPE_HEUR_MODE = 8,
    CUDNN_TYPE_NUMERICAL_NOTE = 11,
    CUDNN_TYPE_POINTWISE_MODE = 14,
    CUDNN_TYPE_BACKEND_DESCRIPTOR = 15,
    CUDNN_TYPE_GENSTATS_MODE = 16,
    CUDNN_TYPE_INT32 = 23
} cudnnBackendAttributeType_t;

typedef enum {
    CUDNN_BACKEND_POINTWISE_DESCRIPTOR = 0,
    CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR = 1,
    CUDNN_BACKEND_ENGINE_DESCRIPTOR = 2,
    CUDNN_BACKEND_ENGINECFG_DESCRIPTOR = 3,
    CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR = 4,
    CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR = 5,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR = 10,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR = 11,
    CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR = 12,
    CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR = 13,
    CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR = 14,
    CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR = 15,
    CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR = 16,
    CUDNN_BACKEND_TENSOR_DESCRIPTOR = 17,
    CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR = 23
} cudnnBackendDescriptorType_t;

/* The backend API as cuDNN documents it: a descriptor of a type is created, its
 * attributes set (each with its attribute type and element count), finalized (which
 * validates it; a finalized descriptor refuses further sets), read back (gets), and
 * destroyed; an execution plan runs on a handle's stream with a variant pack of device
 * pointers by tensor unique id. */
cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *desc);
cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t desc);
cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t desc);
cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *elements);
cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t *count, void *elements);
cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variant_pack);

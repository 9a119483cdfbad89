/* The CUDA-side members of the CHECK macro family: every CUDA runtime, cuDNN and cuBLAS
 * call goes through one of these, which report file:line with the library's own message
 * and jump to the function's cleanup label with rc set. */
#ifndef DAWNRUN_CHECK_CUDA_H
#define DAWNRUN_CHECK_CUDA_H

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

extern "C" {
#include "../../base/status.h"
}

#define CHECK_CUDA(call)                                                                   \
    do {                                                                                   \
        cudaError_t e_ = (call);                                                           \
        if (e_ != cudaSuccess) {                                                           \
            rc = dr_report(DR_ERR_DEVICE, __FILE__, __LINE__, "CUDA", "%s: %s", #call,     \
                           cudaGetErrorString(e_));                                        \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

#define CHECK_CUDNN(call)                                                                  \
    do {                                                                                   \
        cudnnStatus_t s_ = (call);                                                         \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                  \
            rc = dr_report(DR_ERR_DEVICE, __FILE__, __LINE__, "cuDNN", "%s: %s", #call,    \
                           cudnnGetErrorString(s_));                                       \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

#define CHECK_CUBLAS(call)                                                                 \
    do {                                                                                   \
        cublasStatus_t s_ = (call);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            rc = dr_report(DR_ERR_DEVICE, __FILE__, __LINE__, "cuBLAS", "%s: %s", #call,   \
                           cublasGetStatusString(s_));                                     \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

/* After a kernel launch: catches launch-configuration errors. */
#define CHECK_LAUNCH() CHECK_CUDA(cudaGetLastError())

#endif

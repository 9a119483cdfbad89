/* The CUDA-side members of the CHECK macro family: every CUDA runtime, cuDNN and cuBLAS
 * call goes through one of these, which report file:line with the library's own message
 * and jump to the function's cleanup label with rc set. The cuDNN, cuBLAS and launch
 * members also count the call in the context `c` they are given (its `counts`, a struct
 * backend_counters of kernels/counters.h), so that no call goes uncounted. */
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

#define CHECK_CUDNN(c, call)                                                               \
    do {                                                                                   \
        (c)->counts.cudnn_calls++;                                                         \
        cudnnStatus_t s_ = (call);                                                         \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                  \
            rc = dr_report(DR_ERR_DEVICE, __FILE__, __LINE__, "cuDNN", "%s: %s", #call,    \
                           cudnnGetErrorString(s_));                                       \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

#define CHECK_CUBLAS(c, call)                                                              \
    do {                                                                                   \
        (c)->counts.cublas_calls++;                                                        \
        cublasStatus_t s_ = (call);                                                        \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                                 \
            rc = dr_report(DR_ERR_DEVICE, __FILE__, __LINE__, "cuBLAS", "%s: %s", #call,   \
                           cublasGetStatusString(s_));                                     \
            goto cleanup;                                                                  \
        }                                                                                  \
    } while (0)

/* After each launch of one of the engine's kernels: counts it, with the bytes it reads
 * and writes (estimated from its arguments, the rule stated at the launch), and catches
 * launch-configuration errors. tests/check_launch_counted.py checks that every launch is
 * followed by one. */
#define CHECK_LAUNCH(c, bytes_read, bytes_written)                                         \
    do {                                                                                   \
        (c)->counts.kernel_launches++;                                                     \
        (c)->counts.kernel_bytes_read += (uint64_t)(bytes_read);                           \
        (c)->counts.kernel_bytes_written += (uint64_t)(bytes_written);                     \
        CHECK_CUDA(cudaGetLastError());                                                    \
    } while (0)

#endif

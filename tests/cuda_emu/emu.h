/* Host emulation of the CUDA engine (see run.sh): force-included into every CUDA source
 * compiled for the host. Kernel qualifiers become nothing, __shared__ variables become
 * statics (the scheduler runs one block at a time), the thread coordinates are globals set
 * by the scheduler, and the rounding intrinsics are plain fp32 operations (the sources are
 * compiled with -ffp-contract=off, so each one rounds once, as on the GPU). */
#ifndef DAWNRUN_CUDA_EMU_H
#define DAWNRUN_CUDA_EMU_H

#define __global__
#define __device__
#define __host__
#define __shared__ static
#include <algorithm>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <driver_types.h>
#include <functional>
#undef __launch_bounds__
#define __launch_bounds__(...)

extern dim3 threadIdx, blockIdx, blockDim, gridDim;

/* Suspends the calling emulated thread until every thread of its block has arrived. */
void __syncthreads(void);

static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fsub_rn(float a, float b) { return a - b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline int min(int a, int b) { return a < b ? a : b; }

/* Runs body once per thread of the grid, block by block, on stream; what
 * rewrite_launches.py puts in place of kernel<<<grid, block, shared, stream>>>(args). When
 * stream is capturing, a copy of body is recorded instead (replayed by cudaGraphLaunch);
 * a launch that capture refuses sets the error cudaGetLastError returns. Aborts on a launch
 * configuration the GPU would refuse. In count-only mode (emu_count_only) the launch is
 * checked, enqueued and recorded as always, but body never runs. */
void emu_launch(dim3 grid, dim3 block, cudaStream_t stream, const std::function<void()> &body);

/* The kinds of work a captured graph holds (cudaGraphExecUpdate compares them). */
enum emu_node { EMU_NODE_KERNEL, EMU_NODE_MEMSET, EMU_NODE_MEMCPY, EMU_NODE_LIBRARY,
                EMU_NODE_EVENT, EMU_NODE_GRAPH };

/* Enqueues op of the given kind on stream: runs it now on a stream that is not capturing,
 * records a copy of it on one that is (the cuDNN / cuBLAS stand-ins record their
 * executions this way, with their scalars and descriptors copied into op). Returns
 * cudaErrorStreamCaptureInvalidated on a stream whose capture was invalidated, and
 * cudaErrorStreamCaptureImplicit (invalidating that capture) for the legacy stream while
 * a blocking stream is capturing; op is then neither run nor recorded. */
cudaError_t emu_enqueue(cudaStream_t stream, enum emu_node kind, const std::function<void()> &op);

/* Sets the error the next cudaGetLastError returns (and clears), as a kernel launch that
 * failed inside cuDNN or cuBLAS leaves it in the runtime: the library stand-ins call it
 * when they refuse an execution (emu_libs.cpp, emu_graph.cpp). */
void emu_set_last_error(cudaError_t e);

/* v moved by one fp32 ulp (of v as a float), up or down, with probability 1/2, from a
 * generator seeded differently in every process: what the library stand-ins apply to each
 * output sum of a cuDNN algorithm or engine documented as non-deterministic (its atomics
 * add in another order each run), so that such a result's low bits vary from run to run. */
double emu_atomic_noise(double v);

/* 1 when DAWNRUN_EMU_COUNT_ONLY is set to anything but "" or "0": kernel bodies and the
 * cuDNN / cuBLAS executions are not computed (they are checked, enqueued and captured as
 * always, and return success), while memory, copies, memsets, events, streams and graphs
 * behave as always. For counting the engine's structure (`dawnrun bench` counters) at
 * real batch sizes; every computed value is then meaningless, so no correctness test may
 * use it. The first call with the mode on says so on stderr, once. */
int emu_count_only(void);

/* The stream a cuDNN handle works on (cudnnSetStream; NULL, the legacy stream, at first):
 * where the backend graph executions (emu_graph.cpp) enqueue, as the legacy ones do. */
struct emu_cudnn;
cudaStream_t emu_cudnn_stream(const struct emu_cudnn *h);

/* The execution-plan finalizes of the backend graph API so far, refused ones included
 * (emu_graph.cpp: where real cuDNN compiles, and DAWNRUN_EMU_CUDNN_FINALIZE_MS waits). */
long emu_cudnn_plan_finalizes(void);

#endif

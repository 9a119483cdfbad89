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

/* Runs body once per thread of the grid, block by block; what rewrite_launches.py puts in
 * place of kernel<<<grid, block, shared, stream>>>(args). Aborts on a launch configuration
 * the GPU would refuse. */
void emu_launch(dim3 grid, dim3 block, const std::function<void()> &body);

#endif

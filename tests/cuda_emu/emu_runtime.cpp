/* Host emulation (see run.sh): the block scheduler and the CUDA runtime functions the
 * engine calls. Each emulated thread is a coroutine (ucontext) so that __syncthreads can
 * suspend it; a block's threads run round-robin until all have finished, one block after
 * another. Device memory is host memory; fresh allocations are filled with 0xff bytes (NaN
 * in every float type) so that reading memory nobody wrote shows up as a mismatch. Streams
 * are immediate: every call completes before it returns. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <vector>

#include "emu.h"
#include "include/cuda_runtime.h"

dim3 threadIdx, blockIdx, blockDim, gridDim;

#define EMU_STACK (128 * 1024)

static ucontext_t emu_sched;
static std::vector<ucontext_t> emu_threads;
static std::vector<int> emu_done;
static char *emu_stacks;
static size_t emu_stack_count;
static int emu_current;
static const std::function<void()> *emu_body;

static void emu_trampoline(int t)
{
    (*emu_body)();
    emu_done[t] = 1;
}

void __syncthreads(void)
{
    swapcontext(&emu_threads[emu_current], &emu_sched);
}

void emu_launch(dim3 g, dim3 b, const std::function<void()> &body)
{
    const unsigned n = b.x * b.y * b.z;
    if (!g.x || !g.y || !g.z || !n || n > 1024 || b.z > 64 || g.y > 65535 || g.z > 65535) {
        fprintf(stderr, "emu: invalid launch: grid (%u, %u, %u), block (%u, %u, %u)\n", g.x, g.y,
                g.z, b.x, b.y, b.z);
        abort();
    }
    gridDim = g;
    blockDim = b;
    emu_body = &body;
    if (emu_stack_count < n) {
        free(emu_stacks);
        emu_stacks = (char *)malloc((size_t)n * EMU_STACK);
        emu_stack_count = n;
    }
    emu_threads.resize(n);
    emu_done.resize(n);
    for (unsigned bz = 0; bz < g.z; bz++)
        for (unsigned by = 0; by < g.y; by++)
            for (unsigned bx = 0; bx < g.x; bx++) {
                blockIdx = dim3(bx, by, bz);
                for (unsigned t = 0; t < n; t++) {
                    getcontext(&emu_threads[t]);
                    emu_threads[t].uc_stack.ss_sp = emu_stacks + (size_t)t * EMU_STACK;
                    emu_threads[t].uc_stack.ss_size = EMU_STACK;
                    emu_threads[t].uc_link = &emu_sched;
                    makecontext(&emu_threads[t], (void (*)())emu_trampoline, 1, (int)t);
                    emu_done[t] = 0;
                }
                for (unsigned left = n; left > 0;)
                    for (unsigned t = 0; t < n; t++) {
                        if (emu_done[t]) continue;
                        emu_current = (int)t;
                        threadIdx = dim3(t % b.x, (t / b.x) % b.y, t / (b.x * b.y));
                        swapcontext(&emu_sched, &emu_threads[t]);
                        if (emu_done[t]) left--;
                    }
            }
}

extern "C" {

const char *cudaGetErrorString(cudaError_t e)
{
    return e == cudaSuccess ? "no error" : "emulated CUDA error";
}

cudaError_t cudaGetDeviceCount(int *n)
{
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
    return d == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}

cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}

cudaError_t cudaMalloc(void **p, size_t n)
{
    *p = malloc(n);
    if (!*p) return cudaErrorMemoryAllocation;
    memset(*p, 0xff, n);
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t)
{
    memset(p, v, n);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, cudaMemcpyKind, cudaStream_t)
{
    memmove(d, s, n);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t)
{
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int)
{
    *s = (cudaStream_t)malloc(16);
    return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    free(s);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int)
{
    *p = malloc(n);
    return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaFreeHost(void *p)
{
    free(p);
    return cudaSuccess;
}

cudaError_t cudaHostGetDevicePointer(void **d, void *h, unsigned int)
{
    *d = h;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(cudaDeviceProp *p, int)
{
    memset(p, 0, sizeof(*p));
    snprintf(p->name, sizeof(p->name), "host emulation");
    p->major = 9;
    p->multiProcessorCount = 2;   /* small grids: the grid-stride loops do turn */
    p->totalGlobalMem = (size_t)16 << 30;
    return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *v)
{
    *v = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    *free_bytes = *total = (size_t)16 << 30;
    return cudaSuccess;
}

}

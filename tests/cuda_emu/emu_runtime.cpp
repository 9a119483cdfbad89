/* Host emulation (see run.sh): the block scheduler and the CUDA runtime functions the
 * engine calls. Each emulated thread is a coroutine (ucontext) so that __syncthreads can
 * suspend it; a block's threads run round-robin until all have finished, one block after
 * another. Device memory is host memory; fresh allocations are filled with 0xff bytes (NaN
 * in every float type) so that reading memory nobody wrote shows up as a mismatch, and
 * freed addresses are handed out again (section "device memory"). Streams
 * are immediate: every call completes before it returns, except on a capturing stream
 * (stream capture, below), where kernel launches, memsets, async copies, event records,
 * graph launches and the cuDNN / cuBLAS stand-ins' executions are recorded, arguments by
 * value, into a graph that cudaGraphLaunch replays in order. With DAWNRUN_EMU_COUNT_ONLY
 * (emu_count_only, emu.h) a kernel launch is checked and enqueued or recorded, but its body
 * never runs. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include <list>
#include <map>
#include <memory>
#include <vector>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#else
#define ASAN_POISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#define ASAN_UNPOISON_MEMORY_REGION(p, n) ((void)(p), (void)(n))
#endif

#include "emu.h"
#include "include/cuda_runtime.h"

dim3 threadIdx, blockIdx, blockDim, gridDim;

/* Each emulated thread's stack. The kernels use under 4 KiB (measured with AddressSanitizer
 * on), and AddressSanitizer clears the shadow of the whole stack at every switch into a
 * thread, so a small stack keeps launches fast; its lowest EMU_STACK_GUARD bytes hold a
 * pattern checked after every launch, so that a thread that ran past its stack stops the
 * run rather than corrupting its neighbour's. */
#define EMU_STACK (32 * 1024)
#define EMU_STACK_GUARD 1024
#define EMU_STACK_FILL 0xa5

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

static void emu_run_grid(dim3 g, dim3 b, const std::function<void()> &body)
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
        if (!emu_stacks) {
            fprintf(stderr, "emu: no memory for %u threads' stacks\n", n);
            abort();
        }
        for (unsigned t = 0; t < n; t++)
            memset(emu_stacks + (size_t)t * EMU_STACK, EMU_STACK_FILL, EMU_STACK_GUARD);
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
    for (unsigned t = 0; t < n; t++) {
        const unsigned char *guard = (const unsigned char *)emu_stacks + (size_t)t * EMU_STACK;
        for (size_t i = 0; i < EMU_STACK_GUARD; i++)
            if (guard[i] != EMU_STACK_FILL) {
                fprintf(stderr, "emu: thread %u of a launch ran past its %d-byte stack\n", t,
                        EMU_STACK);
                abort();
            }
    }
}

/* ------------------------------------------------------------------ stream capture
 *
 * The rules below are those of the CUDA Programming Guide (section "CUDA Graphs", "Stream
 * Capture": "Prohibited and Unhandled Operations" and "Invalidation") and of the runtime
 * API reference (cudaStreamBeginCapture, cudaStreamEndCapture, cudaStreamIsCapturing,
 * cudaThreadExchangeStreamCaptureMode, and the error codes of driver_types.h):
 *  1. The legacy stream cannot be captured (cudaErrorStreamCaptureUnsupported), nor a
 *     stream already capturing (cudaErrorIllegalState).
 *  2. Synchronising or querying a capturing stream (cudaStreamSynchronize, cudaStreamQuery)
 *     is invalid: cudaErrorStreamCaptureUnsupported. So is cudaDeviceSynchronize while any
 *     stream captures ("a broader handle which encompasses an active capture").
 *  3. Synchronising or querying an event last recorded in a capturing stream is invalid:
 *     cudaErrorCapturedEvent.
 *  4. Potentially unsafe calls (cudaMalloc, cudaFree, the pinned host allocations
 *     cudaHostAlloc and cudaFreeHost, and the synchronous cudaMemcpy) are refused with
 *     cudaErrorStreamCaptureUnsupported while a capture begun in the global or
 *     thread-local mode is ongoing; the relaxed mode allows them. The emulation has one host
 *     thread, so global and thread-local behave alike.
 *  5. An async copy between the device and pageable host memory (not from cudaHostAlloc) on
 *     a capturing stream is refused: cudaErrorStreamCaptureUnsupported.
 *  6. The legacy stream is unusable while a blocking stream (created without
 *     cudaStreamNonBlocking) captures: work on it, or synchronising it, returns
 *     cudaErrorStreamCaptureImplicit; cudaStreamIsCapturing and cudaStreamGetCaptureInfo on
 *     it return that error without invalidating anything.
 *  7. Invalidation: an invalid operation invalidates the capture(s) it concerns; further
 *     work on an invalidated stream returns cudaErrorStreamCaptureInvalidated and is dropped,
 *     and cudaStreamEndCapture returns cudaErrorStreamCaptureInvalidated and a NULL graph.
 * A refused kernel launch sets the error cudaGetLastError returns, as a real launch error;
 * so does a cuDNN execution the library stand-ins refuse (emu_set_last_error, emu.h). */

struct emu_op {
    emu_node kind;
    std::function<void()> run;
};
typedef std::vector<emu_op> emu_ops;

struct CUgraph_st {
    emu_ops ops;
};
struct CUgraphExec_st {
    std::shared_ptr<emu_ops> ops;
};
struct emu_capture_seq {
    CUgraph_st *graph;
    cudaStreamCaptureMode mode;
    unsigned long long id;
    int invalidated;
};
struct CUstream_st {
    unsigned flags;
    emu_capture_seq *cap;   /* NULL when not capturing */
};
struct CUevent_st {
    unsigned long long captured_id;   /* the capture it was last recorded in, 0 if none */
};

static std::vector<CUstream_st *> emu_streams;   /* every created stream */
static CUstream_st emu_per_thread_stream = {0, NULL};
static unsigned long long emu_capture_ids;
static cudaError_t emu_last_error = cudaSuccess;
static std::map<const char *, size_t> emu_pinned;   /* cudaHostAlloc'ed ranges */

static int emu_is_legacy(cudaStream_t s)
{
    return s == NULL || s == cudaStreamLegacy;
}

static CUstream_st *emu_stream(cudaStream_t s)
{
    return s == cudaStreamPerThread ? &emu_per_thread_stream : s;
}

static std::vector<CUstream_st *> emu_all_streams(void)
{
    std::vector<CUstream_st *> all = emu_streams;
    all.push_back(&emu_per_thread_stream);
    return all;
}

/* A blocking stream that is capturing (the legacy stream is then unusable), or NULL. */
static CUstream_st *emu_blocking_capture(void)
{
    for (CUstream_st *s : emu_all_streams())
        if (s->cap && !(s->flags & cudaStreamNonBlocking)) return s;
    return NULL;
}

/* Invalidates every ongoing capture; with strict_only, those not begun in relaxed mode.
 * Returns whether there was one. */
static int emu_invalidate_captures(int strict_only)
{
    int any = 0;
    for (CUstream_st *s : emu_all_streams())
        if (s->cap && (!strict_only || s->cap->mode != cudaStreamCaptureModeRelaxed)) {
            s->cap->invalidated = 1;
            any = 1;
        }
    return any;
}

/* 1 when p .. p + n lies in memory from cudaHostAlloc. */
static int emu_is_pinned(const void *p, size_t n)
{
    auto it = emu_pinned.upper_bound((const char *)p);
    if (it == emu_pinned.begin()) return 0;
    --it;
    return (const char *)p + n <= it->first + it->second;
}

static cudaError_t emu_fail(cudaError_t e)
{
    emu_last_error = e;
    return e;
}

double emu_atomic_noise(double v)
{
    static uint64_t state;
    if (!state) state = ((uint64_t)time(NULL) << 20) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15ull;
    state ^= state >> 12;   /* xorshift64* */
    state ^= state << 25;
    state ^= state >> 27;
    const uint64_t r = state * 0x2545f4914f6cdd1dull;
    if (!(r & 1)) return v;
    const float f = (float)v;
    if (!isfinite(f)) return v;
    const float ulp = nextafterf(fabsf(f), INFINITY) - fabsf(f);
    return (r & 2) ? v + ulp : v - ulp;
}

void emu_set_last_error(cudaError_t e)
{
    emu_last_error = e;
}

cudaError_t emu_enqueue(cudaStream_t stream, emu_node kind, const std::function<void()> &op)
{
    if (emu_is_legacy(stream)) {
        if (CUstream_st *b = emu_blocking_capture()) {
            b->cap->invalidated = 1;
            return cudaErrorStreamCaptureImplicit;
        }
        op();
        return cudaSuccess;
    }
    CUstream_st *s = emu_stream(stream);
    if (!s->cap) {
        op();
        return cudaSuccess;
    }
    if (s->cap->invalidated) return cudaErrorStreamCaptureInvalidated;
    s->cap->graph->ops.push_back({kind, op});
    return cudaSuccess;
}

int emu_count_only(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv("DAWNRUN_EMU_COUNT_ONLY");
        mode = v && *v && strcmp(v, "0") != 0;
        if (mode)
            fprintf(stderr, "emu: DAWNRUN_EMU_COUNT_ONLY is set: kernels, convolutions and matrix "
                            "products are not computed, every result is meaningless (counts "
                            "only)\n");
    }
    return mode;
}

void emu_launch(dim3 g, dim3 b, cudaStream_t stream, const std::function<void()> &body)
{
    const unsigned n = b.x * b.y * b.z;
    if (!g.x || !g.y || !g.z || !n || n > 1024 || b.z > 64 || g.y > 65535 || g.z > 65535) {
        fprintf(stderr, "emu: invalid launch: grid (%u, %u, %u), block (%u, %u, %u)\n", g.x, g.y,
                g.z, b.x, b.y, b.z);
        abort();
    }
    if (emu_count_only()) {   /* enqueued and recorded as always; the body never runs */
        const cudaError_t e = emu_enqueue(stream, EMU_NODE_KERNEL, []() {});
        if (e) emu_fail(e);
        return;
    }
    const std::function<void()> copy = body;   /* holds the arguments by value */
    const cudaError_t e =
        emu_enqueue(stream, EMU_NODE_KERNEL, [g, b, copy]() { emu_run_grid(g, b, copy); });
    if (e) emu_fail(e);
}

extern "C" {

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorStreamCaptureUnsupported: return "operation not permitted when stream is capturing";
    case cudaErrorStreamCaptureInvalidated: return "operation failed due to a previous error during capture";
    case cudaErrorStreamCaptureImplicit: return "operation would make the legacy stream depend on a capturing blocking stream";
    case cudaErrorCapturedEvent: return "operation not permitted on an event last recorded in a capturing stream";
    case cudaErrorIllegalState: return "operation not permitted in the stream's capture state";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    default: return "emulated CUDA error";
    }
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
    const cudaError_t e = emu_last_error;
    emu_last_error = cudaSuccess;
    return e;
}

/* ------------------------------------------------------------------ device memory
 *
 * cudaMalloc hands out again the addresses cudaFree took back, as the real allocator does
 * (a plan, a tensor or a buffer made after another was freed may sit where it sat): a
 * freed block goes to the front of a free list, and an allocation of the same size takes
 * the most recently freed such block. Any allocation, new or reused, is filled with 0xff
 * bytes (NaN in every float type). Freed memory stays unreadable until it is reused: it is
 * filled with 0xff and, under AddressSanitizer, poisoned (a read is reported, as a read of
 * freed memory was when cudaFree released it). The free list keeps at most EMU_FREE_CAP
 * bytes, releasing the least recently freed blocks beyond that.
 * DAWNRUN_EMU_NO_REUSE=1 (any value but "" or "0") turns reuse off: cudaFree releases the
 * memory and every allocation is new. cudaFree of an address cudaMalloc did not return
 * (or returned and took back already) is cudaErrorInvalidValue. */

#define EMU_FREE_CAP ((size_t)512 << 20)

static std::map<void *, size_t> emu_allocs;                /* live: address -> bytes */
static std::list<std::pair<void *, size_t>> emu_freed;     /* most recently freed first */
static size_t emu_freed_bytes;

static int emu_no_reuse(void)
{
    static int mode = -1;
    if (mode < 0) {
        const char *v = getenv("DAWNRUN_EMU_NO_REUSE");
        mode = v && *v && strcmp(v, "0") != 0;
    }
    return mode;
}

cudaError_t cudaMalloc(void **p, size_t n)
{
    if (emu_invalidate_captures(1)) return emu_fail(cudaErrorStreamCaptureUnsupported);
    *p = NULL;
    for (auto it = emu_freed.begin(); it != emu_freed.end(); ++it)
        if (it->second == n) {
            *p = it->first;
            emu_freed_bytes -= n;
            emu_freed.erase(it);
            ASAN_UNPOISON_MEMORY_REGION(*p, n);
            break;
        }
    if (!*p) *p = malloc(n ? n : 1);
    if (!*p) return emu_fail(cudaErrorMemoryAllocation);
    memset(*p, 0xff, n);
    emu_allocs[*p] = n;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (emu_invalidate_captures(1)) return emu_fail(cudaErrorStreamCaptureUnsupported);
    if (!p) return cudaSuccess;
    auto live = emu_allocs.find(p);
    if (live == emu_allocs.end()) return emu_fail(cudaErrorInvalidValue);
    const size_t n = live->second;
    emu_allocs.erase(live);
    if (emu_no_reuse()) {
        free(p);
        return cudaSuccess;
    }
    memset(p, 0xff, n);
    ASAN_POISON_MEMORY_REGION(p, n);
    emu_freed.emplace_front(p, n);
    emu_freed_bytes += n;
    while (emu_freed_bytes > EMU_FREE_CAP) {   /* the least recently freed go */
        const std::pair<void *, size_t> old = emu_freed.back();
        emu_freed.pop_back();
        emu_freed_bytes -= old.second;
        ASAN_UNPOISON_MEMORY_REGION(old.first, old.second);
        free(old.first);
    }
    return cudaSuccess;
}

cudaError_t cudaMemsetAsync(void *p, int v, size_t n, cudaStream_t s)
{
    return emu_enqueue(s, EMU_NODE_MEMSET, [p, v, n]() { memset(p, v, n); });
}

cudaError_t cudaMemcpyAsync(void *d, const void *src, size_t n, cudaMemcpyKind kind,
                            cudaStream_t s)
{
    /* rule 5: host memory on either side must be pinned for a captured copy */
    const int host_src = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyHostToHost;
    const int host_dst = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyHostToHost;
    CUstream_st *cs = emu_is_legacy(s) ? NULL : emu_stream(s);
    if (cs && cs->cap && !cs->cap->invalidated &&
        ((host_src && !emu_is_pinned(src, n)) || (host_dst && !emu_is_pinned(d, n)))) {
        cs->cap->invalidated = 1;
        return emu_fail(cudaErrorStreamCaptureUnsupported);
    }
    return emu_enqueue(s, EMU_NODE_MEMCPY, [d, src, n]() { memmove(d, src, n); });
}

cudaError_t cudaMemcpy(void *d, const void *src, size_t n, cudaMemcpyKind)
{
    if (emu_blocking_capture()) {
        emu_invalidate_captures(0);
        return emu_fail(cudaErrorStreamCaptureImplicit);
    }
    if (emu_invalidate_captures(1)) return emu_fail(cudaErrorStreamCaptureUnsupported);
    memmove(d, src, n);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    if (emu_is_legacy(stream)) {
        if (CUstream_st *b = emu_blocking_capture()) {
            b->cap->invalidated = 1;
            return emu_fail(cudaErrorStreamCaptureImplicit);
        }
        return cudaSuccess;
    }
    CUstream_st *s = emu_stream(stream);
    if (s->cap) {
        s->cap->invalidated = 1;
        return emu_fail(cudaErrorStreamCaptureUnsupported);
    }
    return cudaSuccess;
}

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    return cudaStreamSynchronize(stream);   /* same rules; work is always complete */
}

cudaError_t cudaDeviceSynchronize(void)
{
    if (emu_invalidate_captures(0)) return emu_fail(cudaErrorStreamCaptureUnsupported);
    return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    *s = new CUstream_st{flags, NULL};
    emu_streams.push_back(*s);
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s)
{
    return cudaStreamCreateWithFlags(s, cudaStreamDefault);
}

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (emu_is_legacy(s) || s == cudaStreamPerThread) return cudaErrorInvalidResourceHandle;
    for (size_t i = 0; i < emu_streams.size(); i++)
        if (emu_streams[i] == s) emu_streams.erase(emu_streams.begin() + (long)i);
    if (s->cap) {
        delete s->cap->graph;
        delete s->cap;
    }
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, cudaStreamCaptureMode mode)
{
    if (mode != cudaStreamCaptureModeGlobal && mode != cudaStreamCaptureModeThreadLocal &&
        mode != cudaStreamCaptureModeRelaxed)
        return emu_fail(cudaErrorInvalidValue);
    if (emu_is_legacy(stream)) return emu_fail(cudaErrorStreamCaptureUnsupported);
    CUstream_st *s = emu_stream(stream);
    if (s->cap) return emu_fail(cudaErrorIllegalState);
    s->cap = new emu_capture_seq{new CUgraph_st, mode, ++emu_capture_ids, 0};
    return cudaSuccess;
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *graph)
{
    if (!graph) return emu_fail(cudaErrorInvalidValue);
    *graph = NULL;
    if (emu_is_legacy(stream)) return emu_fail(cudaErrorIllegalState);
    CUstream_st *s = emu_stream(stream);
    if (!s->cap) return emu_fail(cudaErrorIllegalState);
    emu_capture_seq *cap = s->cap;
    s->cap = NULL;
    const int invalidated = cap->invalidated;
    if (invalidated)
        delete cap->graph;
    else
        *graph = cap->graph;
    delete cap;
    return invalidated ? emu_fail(cudaErrorStreamCaptureInvalidated) : cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, cudaStreamCaptureStatus *status,
                                     unsigned long long *id, cudaGraph_t *graph,
                                     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                     size_t *ndeps)
{
    if (!status) return emu_fail(cudaErrorInvalidValue);
    if (emu_is_legacy(stream)) {
        if (emu_blocking_capture()) return emu_fail(cudaErrorStreamCaptureImplicit);
        *status = cudaStreamCaptureStatusNone;
        return cudaSuccess;
    }
    const emu_capture_seq *cap = emu_stream(stream)->cap;
    *status = !cap               ? cudaStreamCaptureStatusNone
              : cap->invalidated ? cudaStreamCaptureStatusInvalidated
                                 : cudaStreamCaptureStatusActive;
    if (cap && id) *id = cap->id;
    if (graph) *graph = cap ? cap->graph : NULL;
    /* the emulated graph is a chain without node handles: no dependency set to report */
    if (deps) *deps = NULL;
    if (edges) *edges = NULL;
    if (ndeps) *ndeps = 0;
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus *status)
{
    return cudaStreamGetCaptureInfo(stream, status, NULL, NULL, NULL, NULL, NULL);
}

cudaError_t cudaGraphInstantiate(cudaGraphExec_t *exec, cudaGraph_t graph, unsigned long long)
{
    if (!exec || !graph) return emu_fail(cudaErrorInvalidValue);
    *exec = new CUgraphExec_st{std::make_shared<emu_ops>(graph->ops)};
    return cudaSuccess;
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t exec, cudaStream_t stream)
{
    if (!exec) return emu_fail(cudaErrorInvalidValue);
    const std::shared_ptr<emu_ops> ops = exec->ops;
    const cudaError_t e = emu_enqueue(stream, EMU_NODE_GRAPH, [ops]() {
        for (const emu_op &op : *ops) op.run();
    });
    return e ? emu_fail(e) : cudaSuccess;
}

cudaError_t cudaGraphExecUpdate(cudaGraphExec_t exec, cudaGraph_t graph,
                                cudaGraphExecUpdateResultInfo *info)
{
    if (!exec || !graph) return emu_fail(cudaErrorInvalidValue);
    int same = exec->ops->size() == graph->ops.size();
    for (size_t i = 0; same && i < graph->ops.size(); i++)
        same = (*exec->ops)[i].kind == graph->ops[i].kind;
    if (info) {
        memset(info, 0, sizeof(*info));
        info->result = same ? cudaGraphExecUpdateSuccess : cudaGraphExecUpdateErrorTopologyChanged;
    }
    if (!same) return emu_fail(cudaErrorGraphExecUpdateFailure);
    exec->ops = std::make_shared<emu_ops>(graph->ops);   /* a running copy keeps its ops */
    return cudaSuccess;
}

cudaError_t cudaGraphExecDestroy(cudaGraphExec_t exec)
{
    delete exec;
    return cudaSuccess;
}

cudaError_t cudaGraphDestroy(cudaGraph_t graph)
{
    delete graph;
    return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int)
{
    *e = new CUevent_st{0};
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    return cudaEventCreateWithFlags(e, cudaEventDefault);
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream)
{
    const CUstream_st *s = emu_is_legacy(stream) ? NULL : emu_stream(stream);
    const cudaError_t err = emu_enqueue(stream, EMU_NODE_EVENT, []() {});
    if (err) return emu_fail(err);
    e->captured_id = s && s->cap ? s->cap->id : 0;
    return cudaSuccess;
}

/* Rule 3: an event last recorded in a capture; invalidates that capture if still ongoing. */
static cudaError_t emu_event_check(cudaEvent_t e)
{
    if (!e->captured_id) return cudaSuccess;
    for (CUstream_st *s : emu_all_streams())
        if (s->cap && s->cap->id == e->captured_id) s->cap->invalidated = 1;
    return emu_fail(cudaErrorCapturedEvent);
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    return emu_event_check(e);
}

cudaError_t cudaEventQuery(cudaEvent_t e)
{
    return emu_event_check(e);
}

cudaError_t cudaHostAlloc(void **p, size_t n, unsigned int)
{
    if (emu_invalidate_captures(1)) return emu_fail(cudaErrorStreamCaptureUnsupported);
    *p = malloc(n);
    if (!*p) return cudaErrorMemoryAllocation;
    emu_pinned[(const char *)*p] = n;
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    if (emu_invalidate_captures(1)) return emu_fail(cudaErrorStreamCaptureUnsupported);
    emu_pinned.erase((const char *)p);
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

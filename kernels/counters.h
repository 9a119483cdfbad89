/* What an engine counts of its own work (the CUDA engine; the CPU engine counts nothing):
 * calls into the device and its libraries, and the bytes its own kernels move. The counts
 * are structural: they follow from the graph, the batch and the code, not from timing,
 * so two runs of the same configuration count the same.
 *
 * CUDA graphs (docs/gpu.md, "CUDA graphs"): kernel_launches .. frees count the calls the
 * host makes to run at once. A run captured into a graph runs nothing, so what it counted
 * is taken back out of them and kept with the graph; each launch of the graph then adds
 * it to the graph_* fields below. The work the device did is therefore the sum of a field
 * and its graph_ twin (kernel_launches + graph_kernels, ...), and a replayed step counts
 * 1 graph launch and no kernel launch, copy, synchronisation or allocation of its own.
 *
 * The last fields count what first use costs: the fused cuDNN graphs built or refused and
 * the convolution shapes whose algorithms were searched, each once per context, and the
 * time spent on them (nanoseconds of CLOCK_MONOTONIC). These times are the only fields
 * that are not structural; they have no graph_ twins (nothing is built or searched inside
 * a capture). Every field is a uint64_t: code walks the struct as an array of them. */
#ifndef DAWNRUN_COUNTERS_H
#define DAWNRUN_COUNTERS_H

#include <stdint.h>

struct backend_counters {
    uint64_t kernel_launches;        /* the engine's own kernels launched by the host */
    uint64_t graph_launches;         /* captured graphs launched (cudaGraphLaunch) */
    uint64_t cudnn_calls;            /* every cuDNN call (descriptors, queries, executions) */
    uint64_t cublas_calls;           /* every cuBLAS call */
    uint64_t kernel_bytes_read;      /* by the engine's own kernels, from their arguments */
    uint64_t kernel_bytes_written;
    uint64_t h2d_copies, h2d_bytes;  /* host to device */
    uint64_t d2h_copies, d2h_bytes;  /* device to host */
    uint64_t d2d_copies, d2d_bytes;  /* device to device */
    uint64_t memsets, memset_bytes;
    uint64_t syncs;                  /* waits for the stream or the device */
    uint64_t allocs, frees;          /* device and pinned host allocations, and their frees */
    /* graphs: captures made, and the work graph launches ran (per launch, what its captured
     * run counted in the fields above; library calls include the descriptor settings that
     * run made once at capture, of which a replay repeats the executions) */
    uint64_t graph_captures;
    uint64_t graph_kernels;
    uint64_t graph_kernel_bytes_read, graph_kernel_bytes_written;
    uint64_t graph_cudnn_calls, graph_cublas_calls;
    uint64_t graph_memsets, graph_memset_bytes;
    uint64_t graph_d2d_copies, graph_d2d_bytes;
    /* first use (conv_fused_cuda.cu, conv_cuda.cu) */
    uint64_t fused_graphs_built;     /* fused convolution graphs built and kept */
    uint64_t fused_graphs_refused;   /* refused: no engine configuration worked, or the
                                        build budget was spent (they run unfused) */
    uint64_t fused_graphs_unsupported; /* not asked for: the support table refuses them
                                          (kernels/cuda/fused_support.h; run unfused) */
    uint64_t fused_build_ns;         /* building both: descriptors, heuristics, plan
                                        finalizes (where cuDNN compiles), trial runs */
    uint64_t algo_searches;          /* convolution shapes and directions whose algorithm
                                        was chosen */
    uint64_t algo_search_ns;         /* choosing them: heuristics and timed trials */
};

/* out = a - b, field by field (the counts between two reads). */
static inline void backend_counters_diff(struct backend_counters *out,
                                         const struct backend_counters *a,
                                         const struct backend_counters *b)
{
    const uint64_t *pa = (const uint64_t *)a, *pb = (const uint64_t *)b;
    uint64_t *po = (uint64_t *)out;
    for (unsigned i = 0; i < sizeof(*out) / sizeof(uint64_t); i++) po[i] = pa[i] - pb[i];
}

#endif

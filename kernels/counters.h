/* What an engine counts of its own work (the CUDA engine; the CPU engine counts nothing):
 * calls into the device and its libraries, and the bytes its own kernels move. The counts
 * are structural: they follow from the graph, the batch and the code, not from timing,
 * so two runs of the same configuration count the same. */
#ifndef DAWNRUN_COUNTERS_H
#define DAWNRUN_COUNTERS_H

#include <stdint.h>

struct backend_counters {
    uint64_t kernel_launches;        /* launches of the engine's own kernels */
    uint64_t graph_launches;         /* captured graphs launched */
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

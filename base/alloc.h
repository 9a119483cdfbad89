/* The host allocator of the set-up paths (model tables, tensors of the CPU engine, plan
 * buffers, every growable array: base/grow.h), with a fault-injection hook for tests:
 * dr_alloc_fail_at(n) makes the n-th allocation from then on return NULL, so that every
 * out-of-memory path can be driven and shown to end in DR_ERR_NOMEM. The hook costs one
 * relaxed atomic load per allocation; the per-step kernels do not allocate through it. */
#ifndef DAWNRUN_ALLOC_H
#define DAWNRUN_ALLOC_H

#include <stddef.h>

/* malloc, calloc and aligned_alloc, except that an armed fault makes one of them fail
 * (return NULL, nothing allocated). Free with free(). */
void *dr_malloc(size_t size);
void *dr_calloc(size_t count, size_t size);
void *dr_aligned_alloc(size_t alignment, size_t size);
/* realloc, except that an armed fault makes it fail (return NULL, ptr untouched). */
void *dr_realloc(void *ptr, size_t size);

/* Test hook: the n-th call of the functions above from now on fails (n >= 1); n <= 0
 * disarms it. Only one fault is armed at a time and it fires once. Not for production
 * code. */
void dr_alloc_fail_at(long n);

/* How many faults dr_alloc_fail_at has injected so far in this process. */
long dr_alloc_faults(void);

#endif

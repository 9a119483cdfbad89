/* Host allocation with a one-shot fault-injection counter (see alloc.h). */
#include "alloc.h"

#include <stdatomic.h>
#include <stdlib.h>

/* Allocations left before the armed fault; 0 = none armed. */
static atomic_long countdown;
static atomic_long injected;

/* 1 when this allocation is the one that must fail. */
static int fault_now(void)
{
    long left = atomic_load_explicit(&countdown, memory_order_relaxed);
    while (left > 0) {
        if (atomic_compare_exchange_weak(&countdown, &left, left - 1)) {
            if (left != 1) return 0;
            atomic_fetch_add(&injected, 1);
            return 1;
        }
    }
    return 0;
}

void *dr_malloc(size_t size)
{
    return fault_now() ? NULL : malloc(size);
}

void *dr_calloc(size_t count, size_t size)
{
    return fault_now() ? NULL : calloc(count, size);
}

void *dr_aligned_alloc(size_t alignment, size_t size)
{
    return fault_now() ? NULL : aligned_alloc(alignment, size);
}

void *dr_realloc(void *ptr, size_t size)
{
    return fault_now() ? NULL : realloc(ptr, size);
}

void dr_alloc_fail_at(long n)
{
    atomic_store(&countdown, n > 0 ? n : 0);
}

long dr_alloc_faults(void)
{
    return atomic_load(&injected);
}

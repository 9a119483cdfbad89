/* The one growable array of the code base: an array of items behind a pointer, with its
 * capacity (elements allocated) kept beside its count, grown by doubling so that appends
 * cost O(1) amortised. Every table that is filled an element at a time (caches, lists
 * read from the results store, config diagnostics) grows through grow_reserve instead of
 * its own realloc arithmetic; allocation goes through base/alloc.h, so its fault hook can
 * fail any growth. */
#ifndef DAWNRUN_GROW_H
#define DAWNRUN_GROW_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Makes the array hold at least `need` elements of item_size bytes. `items` is the address
 * of the array's pointer (a T **, e.g. &list->items; NULL array when empty), passed as
 * void * so that any element type fits without a cast; *cap is its capacity. When need <=
 * *cap nothing happens. Otherwise the capacity becomes `first` (at least 1) for an empty
 * array, doubled (saturating at INT_MAX) until it holds need, the elements kept and the
 * new slots left uninitialised; *items and *cap are updated together. Returns DR_OK, or
 * DR_ERR_NOMEM when the allocation fails or need elements would not fit an int capacity
 * or a size_t byte count: then *items and *cap are untouched (the old array, contents and
 * all, is still the caller's to use or free). item_size must be > 0 (DR_ERR_INTERNAL
 * otherwise). Prints nothing: the caller reports what it was growing. */
int grow_reserve(void *items, int *cap, int need, int first, size_t item_size);

#ifdef __cplusplus
}
#endif

#endif

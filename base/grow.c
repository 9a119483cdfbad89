/* Growth of an array by doubling (see grow.h). */
#include "grow.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "alloc.h"
#include "status.h"

int grow_reserve(void *items, int *cap, int need, int first, size_t item_size)
{
    if (item_size == 0) return DR_ERR_INTERNAL;
    if (need <= *cap) return DR_OK;
    int ncap = *cap > 0 ? *cap : (first > 0 ? first : 1);
    while (ncap < need) ncap = ncap > INT_MAX / 2 ? INT_MAX : 2 * ncap;
    if ((size_t)ncap > SIZE_MAX / item_size) return DR_ERR_NOMEM;
    /* the pointer is read and written as bytes: *items is a T *, whatever T is */
    void *old, *grown;
    memcpy(&old, items, sizeof old);
    grown = dr_realloc(old, (size_t)ncap * item_size);
    if (!grown) return DR_ERR_NOMEM;
    memcpy(items, &grown, sizeof grown);
    *cap = ncap;
    return DR_OK;
}

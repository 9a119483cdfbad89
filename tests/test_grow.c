/* The growable array of base/grow.h: the capacity starts at `first` and doubles until it
 * holds what is asked, the elements are kept across a growth, a request the capacity
 * already holds allocates nothing, a capacity whose byte count would overflow is refused,
 * and a failed growth (the allocator's fault hook, base/alloc.h) leaves the array and its
 * capacity exactly as they were. */
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "base/alloc.h"
#include "base/grow.h"
#include "base/status.h"

struct pair {
    int64_t a;
    int b;
};

static void test_growth(void)
{
    struct pair *items = NULL;
    int cap = 0, n = 0;
    CHECK(grow_reserve(&items, &cap, 0, 4, sizeof *items) == DR_OK);
    CHECK(items == NULL && cap == 0);   /* nothing asked, nothing allocated */
    CHECK(grow_reserve(&items, &cap, 1, 4, sizeof *items) == DR_OK);
    CHECK(items != NULL && cap == 4);   /* an empty array starts at `first` */
    for (; n < 4; n++) items[n] = (struct pair){n, -n};
    struct pair *before = items;
    CHECK(grow_reserve(&items, &cap, 4, 4, sizeof *items) == DR_OK);
    CHECK(items == before && cap == 4);   /* held already: unchanged */
    CHECK(grow_reserve(&items, &cap, 5, 4, sizeof *items) == DR_OK);
    CHECK(cap == 8);                      /* doubled */
    CHECK(grow_reserve(&items, &cap, 50, 4, sizeof *items) == DR_OK);
    CHECK(cap == 64);                     /* doubled until it holds 50 */
    int kept = 1;
    for (int i = 0; i < n; i++) kept &= items[i].a == i && items[i].b == -i;
    CHECK(kept);                          /* the elements moved with the array */
    free(items);

    /* one element at a time, as the callers append */
    int *v = NULL, vcap = 0, count = 0, grown = 0;
    for (int i = 0; i < 1000; i++) {
        int old = vcap;
        if (grow_reserve(&v, &vcap, count + 1, 8, sizeof *v) != DR_OK) break;
        grown += vcap != old;
        v[count++] = i;
    }
    CHECK(count == 1000 && vcap == 1024 && grown == 8);   /* 8, 16, ..., 1024 */
    int in_order = 1;
    for (int i = 0; i < count; i++) in_order &= v[i] == i;
    CHECK(in_order);
    free(v);

    /* first <= 0 counts as 1 */
    char *c = NULL;
    int ccap = 0;
    CHECK(grow_reserve(&c, &ccap, 1, 0, 1) == DR_OK && ccap == 1);
    CHECK(grow_reserve(&c, &ccap, 3, 0, 1) == DR_OK && ccap == 4);
    free(c);
}

static void test_overflow(void)
{
    int *v = NULL, cap = 0;
    CHECK(grow_reserve(&v, &cap, 4, 4, sizeof *v) == DR_OK && cap == 4);
    v[0] = 7;
    int *before = v;
    /* INT_MAX elements of SIZE_MAX / 4 bytes: no size_t holds the byte count */
    CHECK(grow_reserve(&v, &cap, INT_MAX, 4, SIZE_MAX / 4) == DR_ERR_NOMEM);
    CHECK(v == before && cap == 4 && v[0] == 7);
    CHECK(grow_reserve(&v, &cap, 5, 4, 0) == DR_ERR_INTERNAL);   /* no item size */
    CHECK(v == before && cap == 4);
    free(v);

    /* past INT_MAX / 2 the capacity saturates at INT_MAX instead of wrapping: the request
     * reaches the allocator (failed here by the fault hook, nothing allocated) */
    const int big = INT_MAX / 2 + 1;
    char *c = NULL;
    int ccap = big;   /* a capacity that was never allocated: only the arithmetic runs */
    long faults = dr_alloc_faults();
    dr_alloc_fail_at(1);
    CHECK(grow_reserve(&c, &ccap, big + 1, 4, 1) == DR_ERR_NOMEM);
    dr_alloc_fail_at(0);
    CHECK(dr_alloc_faults() == faults + 1);
    CHECK(c == NULL && ccap == big);
}

static void test_failure_keeps_array(void)
{
    double *v = NULL;
    int cap = 0, n = 0;
    while (n < 16) {
        CHECK(grow_reserve(&v, &cap, n + 1, 16, sizeof *v) == DR_OK);
        v[n] = n * 0.5;
        n++;
    }
    CHECK(cap == 16);
    double *before = v;
    long faults = dr_alloc_faults();
    dr_alloc_fail_at(1);   /* the next allocation fails */
    int rc = grow_reserve(&v, &cap, n + 1, 16, sizeof *v);
    dr_alloc_fail_at(0);
    CHECK(dr_alloc_faults() == faults + 1);
    CHECK(rc == DR_ERR_NOMEM);
    CHECK(v == before && cap == 16);
    int intact = 1;
    for (int i = 0; i < n; i++) intact &= v[i] == i * 0.5;
    CHECK(intact);
    /* and it grows on the next try */
    CHECK(grow_reserve(&v, &cap, n + 1, 16, sizeof *v) == DR_OK && cap == 32);
    intact = 1;
    for (int i = 0; i < n; i++) intact &= v[i] == i * 0.5;
    CHECK(intact);
    free(v);

    /* the first allocation failing leaves an empty array empty */
    int *w = NULL, wcap = 0;
    dr_alloc_fail_at(1);
    CHECK(grow_reserve(&w, &wcap, 1, 8, sizeof *w) == DR_ERR_NOMEM);
    dr_alloc_fail_at(0);
    CHECK(w == NULL && wcap == 0);
}

int main(void)
{
    test_growth();
    test_overflow();
    test_failure_keeps_array();
    return check_finish("grow");
}

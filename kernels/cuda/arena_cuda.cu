/* The parameter arena: parameters, their gradients and optimiser state, and small fp32 /
 * int32 tensors, carved out of a few large device slabs (one cudaMalloc for dozens of
 * tensors, as llm.c points its parameters into one allocation) instead of one allocation
 * each. A slab keeps its live blocks sorted by offset; a new block takes the first gap
 * that fits (first fit, blocks at CUDA_ALIGN boundaries), a freed one leaves a gap, and a
 * slab left empty is freed. A tensor larger than a slab gets a slab of its own size.
 *
 * Reuse is safe without waiting: every op of the engine is queued on the context's one
 * stream, so a block's next user (its zero-fill first) runs after its last user. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "../../base/grow.h"

#define ARENA_SLAB ((size_t)64 << 20)    /* bytes of a slab */
#define ARENA_SMALL ((size_t)1 << 20)    /* F32 and I32 tensors up to this size go here */

struct arena_block {
    size_t off, bytes;   /* bytes rounded up to CUDA_ALIGN */
};

struct arena_slab {
    char *base;
    size_t bytes;
    struct arena_block *live;   /* sorted by off */
    int n_live, cap_live;
};

struct arena {
    struct arena_slab *slabs;
    int n_slabs, cap_slabs;
};

int cuda_arena_holds(enum tensor_kind kind, size_t bytes)
{
    return kind == TENSOR_PARAM ||
           ((kind == TENSOR_F32 || kind == TENSOR_I32) && bytes <= ARENA_SMALL);
}

/* Inserts block b at index i of slab s's live list. */
static int slab_insert(struct arena_slab *s, int i, struct arena_block b)
{
    int rc = DR_OK;
    if (grow_reserve(&s->live, &s->cap_live, s->n_live + 1, 64, sizeof(*s->live)) != DR_OK)
        FAIL(DR_ERR_NOMEM, "out of memory allocating the parameter arena's block list");
    memmove(s->live + i + 1, s->live + i, sizeof(*s->live) * (size_t)(s->n_live - i));
    s->live[i] = b;
    s->n_live++;
cleanup:
    return rc;
}

/* The first gap of slab s that holds bytes: its offset and the index a block there takes;
 * 0 when none. */
static int slab_fit(const struct arena_slab *s, size_t bytes, size_t *off, int *index)
{
    size_t end = 0;
    for (int i = 0; i <= s->n_live; i++) {
        const size_t next = i < s->n_live ? s->live[i].off : s->bytes;
        if (next - end >= bytes) {
            *off = end;
            *index = i;
            return 1;
        }
        if (i < s->n_live) end = s->live[i].off + s->live[i].bytes;
    }
    return 0;
}

int cuda_arena_alloc(struct cuda_ctx *c, void **ptr, size_t bytes)
{
    int rc = DR_OK;
    struct arena *a = (struct arena *)c->arena;
    struct arena_slab *s = NULL;
    size_t off = 0, free_b = 0, total_b = 0;
    int index = 0;
    cudaError_t e = cudaSuccess;
    *ptr = NULL;
    bytes = (bytes + CUDA_ALIGN - 1) / CUDA_ALIGN * CUDA_ALIGN;
    if (bytes == 0) bytes = CUDA_ALIGN;
    if (!a) {
        a = (struct arena *)calloc(1, sizeof(*a));
        CHECK_ALLOC(a, "the parameter arena");
        c->arena = a;
    }
    for (int i = 0; i < a->n_slabs && !s; i++)
        if (slab_fit(&a->slabs[i], bytes, &off, &index)) s = &a->slabs[i];
    if (!s) {   /* a new slab */
        struct arena_slab fresh;
        memset(&fresh, 0, sizeof(fresh));
        fresh.bytes = bytes > ARENA_SLAB ? bytes : ARENA_SLAB;
        if (grow_reserve(&a->slabs, &a->cap_slabs, a->n_slabs + 1, 8, sizeof(*a->slabs)) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the parameter arena's slab list");
        e = cuda_counted_malloc(c, (void **)&fresh.base, fresh.bytes);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            cudaMemGetInfo(&free_b, &total_b);
            FAIL(DR_ERR_NOMEM,
                 "out of GPU memory allocating a parameter slab of %zu bytes for a tensor of "
                 "%zu bytes (%zu of %zu MiB free): %s",
                 fresh.bytes, bytes, free_b >> 20, total_b >> 20, cudaGetErrorString(e));
        }
        a->slabs[a->n_slabs++] = fresh;
        s = &a->slabs[a->n_slabs - 1];
        off = 0;
        index = 0;
    }
    TRY(slab_insert(s, index, arena_block{off, bytes}));
    *ptr = s->base + off;
cleanup:
    return rc;
}

int cuda_arena_free(struct cuda_ctx *c, void *ptr)
{
    struct arena *a = (struct arena *)c->arena;
    for (int i = 0; a && i < a->n_slabs; i++) {
        struct arena_slab *s = &a->slabs[i];
        if ((char *)ptr < s->base || (char *)ptr >= s->base + s->bytes) continue;
        const size_t off = (size_t)((char *)ptr - s->base);
        int lo = 0, hi = s->n_live - 1;
        while (lo < hi) {   /* the block at off */
            const int mid = (lo + hi) / 2;
            if (s->live[mid].off < off) lo = mid + 1;
            else hi = mid;
        }
        if (s->n_live == 0 || s->live[lo].off != off) return 0;   /* not a block's start */
        memmove(s->live + lo, s->live + lo + 1, sizeof(*s->live) * (size_t)(s->n_live - lo - 1));
        s->n_live--;
        if (s->n_live == 0) {   /* empty: the slab goes (cudaFree waits for its users) */
            cuda_counted_free(c, s->base);
            free(s->live);
            a->slabs[i] = a->slabs[--a->n_slabs];
        }
        return 1;
    }
    return 0;
}

void cuda_arena_release(struct cuda_ctx *c)
{
    struct arena *a = (struct arena *)c->arena;
    if (!a) return;
    for (int i = 0; i < a->n_slabs; i++) {
        cuda_counted_free(c, a->slabs[i].base);
        free(a->slabs[i].live);
    }
    free(a->slabs);
    free(a);
    c->arena = NULL;
}

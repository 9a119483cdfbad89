/* SGD with momentum and weight averaging on fp32 parameters, in exactly the per-element
 * order of kernels/optimizer.h (each product and sum rounded separately, as the CPU twin
 * does), rewriting the compute copy of every parameter they change in half precisions so
 * that the next forward pass sees the new weights.
 *
 * The SGD and LERP nodes (sgd_multi, lerp_multi) step every item in one launch: the
 * items' pointers, sizes and scalars are a table in device memory, cut into chunks of
 * MULTI_CHUNK elements, and each block takes chunks of one tensor at a time. sgd_multi
 * reads the step and the epoch from the cursor and the learning rate from the table, on
 * the device. The tables are uploaded once per items array and kept (struct tables). */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"

#define MULTI_CHUNK (8 * CUDA_THREADS)   /* elements of one block's piece of a tensor */
#define MULTI_TABLES 8                   /* item tables kept, the least recently used
                                            replaced */

/* One SGD step of element i (kernels/optimizer.h); returns the new weight. */
__device__ __forceinline__ float sgd_element(float *w, float *v, float *dw, float lr, float wd,
                                             float momentum, int nesterov, size_t i)
{
    const float wi = w[i];
    const float step = __fmul_rn(-lr, __fadd_rn(dw[i], __fmul_rn(wd, wi)));
    const float vel = __fadd_rn(__fmul_rn(momentum, v[i]), step);
    const float nw = nesterov ? __fadd_rn(wi, __fadd_rn(step, __fmul_rn(momentum, vel)))
                              : __fadd_rn(wi, vel);
    dw[i] = step;
    v[i] = vel;
    w[i] = nw;
    return nw;
}

/* avg = s * avg + t * w (s = 1 - t), then w = avg when copy_back; the compute copies (NULL
 * in fp32 and for F32 tensors) follow. */
template <typename T>
__device__ __forceinline__ void lerp_element(float *avg, float *w, T *avg_copy, T *w_copy,
                                             float s, float t, int copy_back, size_t i)
{
    const float a = __fadd_rn(__fmul_rn(s, avg[i]), __fmul_rn(t, w[i]));
    avg[i] = a;
    if (avg_copy) avg_copy[i] = cuda_from_f<T>(a);
    if (!copy_back) return;
    w[i] = a;
    if (w_copy) w_copy[i] = cuda_from_f<T>(a);
}

/* ------------------------------------------------------------------ item tables */

/* A device table entry of sgd_multi. */
struct sgd_entry {
    float *w, *v, *dw;
    void *copy;              /* w's compute copy, NULL in fp32 */
    size_t count;
    size_t first_chunk;      /* the entry's chunks are first_chunk .. next's first_chunk - 1 */
    double lr_scale;
    float wd;
    int train_epochs;
};

/* A device table entry of lerp_multi. */
struct lerp_entry {
    float *avg, *w;
    void *avg_copy, *w_copy; /* compute copies, NULL in fp32 and for F32 tensors */
    size_t count;
    size_t first_chunk;
};

enum table_kind { TABLE_SGD, TABLE_LERP };

/* One uploaded table: the host form it was built from (compared whole to find it again)
 * and its device copy. */
struct table {
    int kind;
    size_t bytes;
    void *host, *dev;
    unsigned long long used;   /* the call clock when last used (least recently used out) */
};

struct tables {
    struct table t[MULTI_TABLES];
    unsigned long long clock;
    void *build;               /* the host table being built, grown as needed */
    size_t build_cap;
};

void cuda_tables_release(struct cuda_ctx *c)
{
    struct tables *ts = (struct tables *)c->tables;
    if (!ts) return;
    for (int i = 0; i < MULTI_TABLES; i++) {
        free(ts->t[i].host);
        if (ts->t[i].dev) cuda_counted_free(c, ts->t[i].dev);
    }
    free(ts->build);
    free(ts);
    c->tables = NULL;
}

/* A host buffer of bytes to build a table in (the context's, reused). */
static int table_buffer(struct cuda_ctx *c, size_t bytes, void **out)
{
    int rc = DR_OK;
    struct tables *ts = (struct tables *)c->tables;
    if (!ts) {
        ts = (struct tables *)calloc(1, sizeof(*ts));
        CHECK_ALLOC(ts, "the multi-tensor item tables");
        c->tables = ts;
    }
    if (ts->build_cap < bytes) {
        void *grown = realloc(ts->build, bytes);
        CHECK_ALLOC(grown, "a multi-tensor item table");
        ts->build = grown;
        ts->build_cap = bytes;
    }
    *out = ts->build;
cleanup:
    return rc;
}

/* *dev = the device copy of the table just built (table_buffer, bytes > 0): the kept one
 * when an equal table was uploaded before, else a new upload, which replaces the least
 * recently used one. An upload is refused while the stream is being captured. */
static int table_device(struct cuda_ctx *c, int kind, size_t bytes, void **dev)
{
    int rc = DR_OK;
    struct tables *ts = (struct tables *)c->tables;
    struct table *slot = &ts->t[0];
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaError_t e = cudaSuccess;
    ts->clock++;
    for (int i = 0; i < MULTI_TABLES; i++) {
        struct table *t = &ts->t[i];
        if (t->dev && t->kind == kind && t->bytes == bytes && !memcmp(t->host, ts->build, bytes)) {
            t->used = ts->clock;
            *dev = t->dev;
            return DR_OK;
        }
    }
    for (int i = 0; i < MULTI_TABLES && slot->dev; i++)   /* an empty one, else the oldest */
        if (!ts->t[i].dev || ts->t[i].used < slot->used) slot = &ts->t[i];
    CHECK_CUDA(cudaStreamIsCapturing(c->stream, &capturing));
    EXPECT(capturing == cudaStreamCaptureStatusNone,
           "%s: a new items array while the step is being captured (run it once first)",
           kind == TABLE_SGD ? "sgd_multi" : "lerp_multi");
    free(slot->host);
    slot->host = NULL;
    if (slot->dev) CHECK_CUDA(cuda_counted_free(c, slot->dev));
    slot->dev = NULL;
    slot->host = malloc(bytes);
    CHECK_ALLOC(slot->host, "a multi-tensor item table");
    memcpy(slot->host, ts->build, bytes);
    e = cuda_counted_malloc(c, &slot->dev, bytes);
    if (e != cudaSuccess) {
        slot->dev = NULL;
        (void)cudaGetLastError();
        FAIL(DR_ERR_NOMEM, "out of GPU memory allocating a multi-tensor item table (%zu bytes): %s",
             bytes, cudaGetErrorString(e));
    }
    /* from the kept host copy, which outlives the copy */
    CHECK_CUDA(cuda_counted_copy(c, slot->dev, slot->host, bytes, cudaMemcpyHostToDevice));
    slot->kind = kind;
    slot->bytes = bytes;
    slot->used = ts->clock;
    *dev = slot->dev;
cleanup:
    if (rc != DR_OK && slot->host && !slot->dev) {
        free(slot->host);
        slot->host = NULL;
    }
    return rc;
}

/* The entry holding chunk (first_chunk ascending, the first 0; count > 0 entries). */
template <typename E>
__device__ __forceinline__ const E *table_find(const E *table, int count, size_t chunk)
{
    int lo = 0, hi = count - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        if (table[mid].first_chunk <= chunk) lo = mid;
        else hi = mid - 1;
    }
    return &table[lo];
}

/* ------------------------------------------------------------------ sgd_multi */

template <typename T>
__global__ void sgd_multi_kernel(const struct sgd_entry *table, int count, size_t chunks,
                                 const float *lr_table /* (steps) */, int steps,
                                 const int32_t *cursor /* (PLAN_CURSOR_LEN) */, float momentum,
                                 int nesterov, int *flags)
{
    const int32_t step = cursor[CURSOR_STEP], epoch = cursor[CURSOR_EPOCH];
    if (step < 0 || step >= steps) {   /* no table value: nothing is stepped */
        if (blockIdx.x == 0 && threadIdx.x == 0) flags[FLAG_BAD_STEP] = 1;
        return;
    }
    const float lr0 = lr_table[step];
    for (size_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        const struct sgd_entry *it = table_find(table, count, chunk);
        if (it->train_epochs > 0 && epoch >= it->train_epochs) continue;
        const float lr = (float)((double)lr0 * it->lr_scale);   /* as the CPU twin */
        const size_t begin = (chunk - it->first_chunk) * MULTI_CHUNK;
        const size_t end = begin + MULTI_CHUNK < it->count ? begin + MULTI_CHUNK : it->count;
        T *copy = (T *)it->copy;
        for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x) {
            const float nw = sgd_element(it->w, it->v, it->dw, lr, it->wd, momentum, nesterov, i);
            if (copy) copy[i] = cuda_from_f<T>(nw);
        }
    }
}

int cuda_sgd_multi(void *ctx, const struct sgd_item *items, int count,
                   const struct tensor *lr_table, const struct tensor *cursor, float momentum,
                   int nesterov)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    struct sgd_entry *table = NULL;
    void *dev = NULL;
    size_t chunks = 0, elements = 0;
    int n = 0;
    TRY(table_buffer(c, sizeof(*table) * (size_t)(count > 0 ? count : 1), (void **)&table));
    for (int k = 0; k < count; k++) {
        const struct sgd_item *it = &items[k];
        const size_t size = tensor_count(it->w);
        if (size == 0) continue;
        struct sgd_entry *e = &table[n++];
        memset(e, 0, sizeof(*e));   /* the padding too: tables are compared whole */
        e->w = (float *)it->w->data;
        e->v = (float *)it->v->data;
        e->dw = (float *)it->dw->data;
        e->copy = c->dt == CUDA_F32 ? NULL : cuda_param_copy(c, it->w);
        e->count = size;
        e->first_chunk = chunks;
        e->lr_scale = it->lr_scale;
        e->wd = it->wd;
        e->train_epochs = it->train_epochs;
        chunks += (size + MULTI_CHUNK - 1) / MULTI_CHUNK;
        elements += size;
    }
    if (n == 0) goto cleanup;
    TRY(cuda_enter(c));
    TRY(table_device(c, TABLE_SGD, sizeof(*table) * (size_t)n, &dev));
    CUDA_DISPATCH(c->dt, T,
                  sgd_multi_kernel<T><<<cuda_grid(c, chunks * CUDA_THREADS), CUDA_THREADS, 0,
                                        c->stream>>>(
                      (const struct sgd_entry *)dev, n, chunks, (const float *)lr_table->data,
                      (int)tensor_count(lr_table), (const int32_t *)cursor->data, momentum,
                      nesterov, c->flags_dev));
    /* as sgd_update on every item (a frozen item counted as stepped): reads w, v and dw;
     * writes them and the compute copy of w in half precisions; plus the table */
    CHECK_LAUNCH(c, 3 * elements * sizeof(float) + sizeof(*table) * (size_t)n,
                 3 * elements * sizeof(float) +
                     (c->dt == CUDA_F32 ? 0 : elements * cuda_dt_size(c->dt)));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ lerp_multi */

template <typename T>
__global__ void lerp_multi_kernel(const struct lerp_entry *table, int count, size_t chunks,
                                  float s, float t, int copy_back)
{
    for (size_t chunk = blockIdx.x; chunk < chunks; chunk += gridDim.x) {
        const struct lerp_entry *it = table_find(table, count, chunk);
        const size_t begin = (chunk - it->first_chunk) * MULTI_CHUNK;
        const size_t end = begin + MULTI_CHUNK < it->count ? begin + MULTI_CHUNK : it->count;
        for (size_t i = begin + threadIdx.x; i < end; i += blockDim.x)
            lerp_element(it->avg, it->w, (T *)it->avg_copy, (T *)it->w_copy, s, t, copy_back, i);
    }
}

int cuda_lerp_multi(void *ctx, const struct lerp_item *items, int count, float t, int copy_back)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const float s = 1.0f - t;   /* rounded as the CPU twin rounds it */
    struct lerp_entry *table = NULL;
    void *dev = NULL;
    size_t chunks = 0, elements = 0, copied = 0;
    int n = 0;
    TRY(table_buffer(c, sizeof(*table) * (size_t)(count > 0 ? count : 1), (void **)&table));
    for (int k = 0; k < count; k++) {
        const struct lerp_item *it = &items[k];
        const size_t size = tensor_count(it->avg);
        const int copies = c->dt != CUDA_F32 && it->avg->kind == TENSOR_PARAM;
        if (size == 0) continue;
        struct lerp_entry *e = &table[n++];
        memset(e, 0, sizeof(*e));
        e->avg = (float *)it->avg->data;
        e->w = (float *)it->w->data;
        e->avg_copy = copies ? cuda_param_copy(c, it->avg) : NULL;
        e->w_copy = copies ? cuda_param_copy(c, it->w) : NULL;
        e->count = size;
        e->first_chunk = chunks;
        chunks += (size + MULTI_CHUNK - 1) / MULTI_CHUNK;
        elements += size;
        copied += copies ? size : 0;
    }
    if (n == 0) goto cleanup;
    TRY(cuda_enter(c));
    TRY(table_device(c, TABLE_LERP, sizeof(*table) * (size_t)n, &dev));
    CUDA_DISPATCH(c->dt, T,
                  lerp_multi_kernel<T><<<cuda_grid(c, chunks * CUDA_THREADS), CUDA_THREADS, 0,
                                         c->stream>>>((const struct lerp_entry *)dev, n, chunks,
                                                      s, t, copy_back));
    /* as param_lerp on every item: reads avg and w; writes avg (and w when copying back),
     * each with its compute copy when it has one; plus the table */
    CHECK_LAUNCH(c, 2 * elements * sizeof(float) + sizeof(*table) * (size_t)n,
                 (size_t)(1 + (copy_back != 0)) *
                     (elements * sizeof(float) + copied * cuda_dt_size(c->dt)));
cleanup:
    return rc;
}

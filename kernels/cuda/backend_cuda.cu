/* CUDA engine: device discovery, creation, memory (allocation and the conversions between
 * the canonical host form and the device storage of cuda_internal.h), synchronisation,
 * and the backend table (its nodes through nodes_cuda.cu's runner table, its plans
 * through plan_cuda.cu; the services the op files share are in context_cuda.cu, so no
 * op file calls back into this one). Any
 * failure to find or initialise a device (no driver, no GPU, cuDNN not initialisable)
 * is reported as DR_ERR_NODEVICE. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern "C" {
#include "../precision.h"
}
#include "conv_fused_cuda.h"
#include "cuda_internal.h"
#include "../../base/env.h"

static const char *dtype_name(enum cuda_dtype dt)
{
    return precision_name(dt == CUDA_F16    ? PRECISION_FP16
                          : dt == CUDA_BF16 ? PRECISION_BF16
                                            : PRECISION_FP32);
}

/* Reports and clears the device-side error flags. Call only after the stream is idle. */
static int cuda_take_flags(struct cuda_ctx *c)
{
    int rc = DR_OK;
    if (c->flags[FLAG_BAD_ROW]) {
        c->flags[FLAG_BAD_ROW] = 0;
        FAIL(DR_ERR_DATA, "augment: a batch row is outside the dataset");
    }
    if (c->flags[FLAG_BAD_LABEL]) {
        c->flags[FLAG_BAD_LABEL] = 0;
        FAIL(DR_ERR_DATA, "loss: a label is outside 0..classes-1");
    }
    if (c->flags[FLAG_BAD_STEP]) {
        c->flags[FLAG_BAD_STEP] = 0;
        FAIL(DR_ERR_INTERNAL, "sgd_multi: the step cursor is outside the learning-rate table");
    }
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ lifetime */

static void cuda_destroy(void *ctx)
{
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    if (!c) return;
    cudaSetDevice(c->device);
    if (c->stream) cuda_counted_sync(c);
    for (int s = 0; s < SLOT_COUNT; s++)
        if (c->scratch[s].ptr) cuda_counted_free(c, c->scratch[s].ptr);
    cuda_graph_release(c);
    cuda_conv_release(c);
    cuda_conv_fused_release(c);
    cuda_tables_release(c);
    cuda_arena_release(c);
    if (c->cudnn) cudnnDestroy(c->cudnn);
    if (c->cublas) cublasDestroy(c->cublas);
    if (c->cublas_ws) cuda_counted_free(c, c->cublas_ws);
    if (c->flags) cuda_counted_free_host(c, c->flags);
    if (c->stream) cudaStreamDestroy(c->stream);
    free(c);
}

static const char *cuda_device_name(void *ctx)
{
    return ((struct cuda_ctx *)ctx)->name;
}

/* "NVIDIA H200 (sm_90, 132 SMs, 140 GiB), driver CUDA 13.0, runtime 13.0, cuDNN 9.19.0, fp16" */
static int cuda_describe(struct cuda_ctx *c)
{
    int rc = DR_OK;
    cudaDeviceProp p;
    int drv = 0, rt = 0;
    size_t v = cudnnGetVersion();
    CHECK_CUDA(cudaGetDeviceProperties(&p, c->device));
    CHECK_CUDA(cudaDriverGetVersion(&drv));
    CHECK_CUDA(cudaRuntimeGetVersion(&rt));
    c->sm_count = p.multiProcessorCount;
    snprintf(c->name, sizeof(c->name),
             "%.200s (sm_%d%d, %d SMs, %.0f GiB), driver CUDA %d.%d, runtime %d.%d, "
             "cuDNN %zu.%zu.%zu, %s",
             p.name, p.major, p.minor, p.multiProcessorCount,
             (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), drv / 1000, (drv % 1000) / 10,
             rt / 1000, (rt % 1000) / 10, v / 10000, (v % 10000) / 100, v % 100,
             dtype_name(c->dt));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ memory */

/* Bytes of the device storage of t (for ACT at the tensor's current n). */
static size_t cuda_bytes(const struct cuda_ctx *c, const struct tensor *t)
{
    size_t count = tensor_count(t);
    switch (t->kind) {
    case TENSOR_ACT: return count * cuda_dt_size(c->dt);
    case TENSOR_PARAM:
        if (c->dt == CUDA_F32) return count * sizeof(float);
        return cuda_param_copy_offset(count) + count * cuda_dt_size(c->dt);
    case TENSOR_U8: return count;
    case TENSOR_F32:
    case TENSOR_I32: return count * 4;
    }
    return count * 4;
}

static const char *kind_name(enum tensor_kind k)
{
    switch (k) {
    case TENSOR_ACT: return "activation";
    case TENSOR_PARAM: return "parameter";
    case TENSOR_F32: return "fp32 vector";
    case TENSOR_I32: return "int32 vector";
    case TENSOR_U8: return "uint8 (dataset)";
    }
    return "tensor";
}

static int cuda_tensor_alloc(void *ctx, struct tensor *t)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    size_t bytes = 0, free_b = 0, total_b = 0;
    cudaError_t e = cudaSuccess;
    t->data = NULL;
    EXPECT(t->n >= 0 && t->c >= 0 && t->h >= 0 && t->w >= 0,
           "negative tensor shape (%d, %d, %d, %d)", t->n, t->c, t->h, t->w);
    TRY(cuda_enter(c));
    bytes = cuda_bytes(c, t);
    if (bytes == 0) bytes = CUDA_ALIGN;
    if (cuda_arena_holds(t->kind, bytes)) {   /* parameters and small vectors: a slab's block */
        TRY(cuda_arena_alloc(c, &t->data, bytes));
        CHECK_CUDA(cuda_counted_memset(c, t->data, bytes));
        goto cleanup;
    }
    e = cuda_counted_malloc(c, &t->data, bytes);
    if (e != cudaSuccess) {
        t->data = NULL;
        (void)cudaGetLastError();
        cudaMemGetInfo(&free_b, &total_b);
        FAIL(DR_ERR_NOMEM,
             "out of GPU memory allocating a %s%s%s tensor (%d, %d, %d, %d), %zu bytes "
             "(%zu of %zu MiB free): %s",
             t->kind == TENSOR_ACT ? dtype_name(c->dt) : "", t->kind == TENSOR_ACT ? " " : "",
             kind_name(t->kind), t->n, t->c, t->h, t->w, bytes, free_b >> 20, total_b >> 20,
             cudaGetErrorString(e));
    }
    CHECK_CUDA(cuda_counted_memset(c, t->data, bytes));
cleanup:
    return rc;
}

static void cuda_tensor_free(void *ctx, struct tensor *t)
{
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    if (!t || !t->data) return;
    cudaSetDevice(c->device);
    if (!cuda_arena_free(c, t->data))   /* a slab's block goes back in stream order */
        cuda_counted_free(c, t->data);  /* waits for work that may still use it */
    t->data = NULL;
}

static int cuda_tensor_zero(void *ctx, struct tensor *t)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    if (!t->data) return DR_OK;
    TRY(cuda_enter(c));
    CHECK_CUDA(cuda_counted_memset(c, t->data, cuda_bytes(c, t)));
cleanup:
    return rc;
}

/* Host NCHW fp32 -> host NHWC of element type T. */
template <typename T>
static void host_to_nhwc(T *dst, const float *src, int n, int ch, int hw)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < ch; k++)
            for (int p = 0; p < hw; p++)
                dst[((size_t)i * hw + p) * ch + k] =
                    cuda_from_f<T>(src[((size_t)i * ch + k) * hw + p]);
}

/* Host NHWC of element type T -> host NCHW fp32. */
template <typename T>
static void host_from_nhwc(float *dst, const T *src, int n, int ch, int hw)
{
    for (int i = 0; i < n; i++)
        for (int k = 0; k < ch; k++)
            for (int p = 0; p < hw; p++)
                dst[((size_t)i * ch + k) * hw + p] =
                    cuda_to_f<T>(src[((size_t)i * hw + p) * ch + k]);
}

static int cuda_tensor_write(void *ctx, struct tensor *t, const void *host)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(t);
    const int hw = t->h * t->w;
    void *tmp = NULL;
    TRY(cuda_enter(c));
    if (count == 0) goto cleanup;
    if (t->kind == TENSOR_U8 || t->kind == TENSOR_F32 || t->kind == TENSOR_I32) {
        /* pageable source: staged before the call returns, so the caller may reuse it */
        CHECK_CUDA(cuda_counted_copy(c, t->data, host, cuda_bytes(c, t),
                                     cudaMemcpyHostToDevice));
        goto cleanup;
    }
    tmp = malloc(cuda_bytes(c, t));
    CHECK_ALLOC(tmp, "a host staging buffer for tensor_write");
    if (t->kind == TENSOR_ACT) {
        CUDA_DISPATCH(c->dt, T, host_to_nhwc<T>((T *)tmp, (const float *)host, t->n, t->c, hw));
    } else {
        host_to_nhwc<float>((float *)tmp, (const float *)host, t->n, t->c, hw);
        if (c->dt != CUDA_F32) {
            void *copy = (char *)tmp + cuda_param_copy_offset(count);
            CUDA_DISPATCH(c->dt, T, {
                for (size_t i = 0; i < count; i++)
                    ((T *)copy)[i] = cuda_from_f<T>(((const float *)tmp)[i]);
            });
        }
    }
    CHECK_CUDA(cuda_counted_copy(c, t->data, tmp, cuda_bytes(c, t), cudaMemcpyHostToDevice));
    CHECK_CUDA(cuda_counted_sync(c));
cleanup:
    free(tmp);
    return rc;
}

static int cuda_tensor_read(void *ctx, void *host, const struct tensor *t)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(t);
    const int hw = t->h * t->w;
    void *tmp = NULL;
    TRY(cuda_enter(c));
    if (count == 0) goto cleanup;
    if (t->kind == TENSOR_U8 || t->kind == TENSOR_F32 || t->kind == TENSOR_I32) {
        CHECK_CUDA(cuda_counted_copy(c, host, t->data, cuda_bytes(c, t),
                                     cudaMemcpyDeviceToHost));
        CHECK_CUDA(cuda_counted_sync(c));
        TRY(cuda_take_flags(c));
        goto cleanup;
    }
    /* the fp32 master only for PARAM: its compute copy is derived from it */
    tmp = malloc(t->kind == TENSOR_ACT ? cuda_bytes(c, t) : count * sizeof(float));
    CHECK_ALLOC(tmp, "a host staging buffer for tensor_read");
    CHECK_CUDA(cuda_counted_copy(c, tmp, t->data,
                                 t->kind == TENSOR_ACT ? cuda_bytes(c, t) : count * sizeof(float),
                                 cudaMemcpyDeviceToHost));
    CHECK_CUDA(cuda_counted_sync(c));
    TRY(cuda_take_flags(c));
    if (t->kind == TENSOR_ACT) {
        CUDA_DISPATCH(c->dt, T, host_from_nhwc<T>((float *)host, (const T *)tmp, t->n, t->c, hw));
    } else {
        host_from_nhwc<float>((float *)host, (const float *)tmp, t->n, t->c, hw);
    }
cleanup:
    free(tmp);
    return rc;
}

static int cuda_synchronize(void *ctx)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    TRY(cuda_enter(c));
    CHECK_CUDA(cuda_counted_sync(c));
    TRY(cuda_take_flags(c));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ counters */

static int cuda_counters(void *ctx, struct backend_counters *out)
{
    *out = ((const struct cuda_ctx *)ctx)->counts;
    return DR_OK;
}

static void cuda_counters_reset(void *ctx)
{
    memset(&((struct cuda_ctx *)ctx)->counts, 0, sizeof(struct backend_counters));
}

/* backend_ops.set_deterministic: before any convolution has been chosen (conv_cuda.cu's
 * algorithms, conv_fused_cuda.cu's graphs), which a change would leave as they are. */
static int cuda_set_deterministic(void *ctx, int on)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    on = on != 0;
    if (on == c->deterministic) return DR_OK;
    EXPECT(c->n_algos == 0 && !c->fused_convs,
           "set_deterministic(%d) after the CUDA engine chose convolution algorithms: call it "
           "first", on);
    c->deterministic = on;
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the table */

static const struct backend_ops cuda_ops_table = {
    /* .name = */ "cuda",
    /* .destroy = */ cuda_destroy,
    /* .device_name = */ cuda_device_name,
    /* .tensor_alloc = */ cuda_tensor_alloc,
    /* .tensor_free = */ cuda_tensor_free,
    /* .tensor_zero = */ cuda_tensor_zero,
    /* .tensor_write = */ cuda_tensor_write,
    /* .tensor_read = */ cuda_tensor_read,
    /* .synchronize = */ cuda_synchronize,
    /* .supports = */ cuda_supports,
    /* .run_node = */ cuda_run_node,
    /* .plan_compute = */ cuda_plan_compute,
    /* .plan_forget = */ cuda_plan_forget,
    /* .counters = */ cuda_counters,
    /* .counters_reset = */ cuda_counters_reset,
    /* .set_deterministic = */ cuda_set_deterministic,
};

/* ------------------------------------------------------------------ creation */

extern "C" int backend_cuda_probe(int device, char *why, size_t whylen)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, whylen, "%s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return DR_ERR_NODEVICE;
    }
    if (device < 0 || device >= count) {
        snprintf(why, whylen, "no CUDA device %d (%d present)", device, count);
        return DR_ERR_NODEVICE;
    }
    e = cudaSetDevice(device);
    if (e != cudaSuccess) {
        snprintf(why, whylen, "CUDA device %d: %s", device, cudaGetErrorString(e));
        (void)cudaGetLastError();
        return DR_ERR_NODEVICE;
    }
    cudnnHandle_t h = NULL;
    cudnnStatus_t s = cudnnCreate(&h);
    if (s != CUDNN_STATUS_SUCCESS) {
        snprintf(why, whylen, "cuDNN cannot initialise: %s", cudnnGetErrorString(s));
        return DR_ERR_NODEVICE;
    }
    cudnnDestroy(h);
    return DR_OK;
}

extern "C" int backend_cuda_create(struct backend *b, int device, int precision)
{
    int rc = DR_OK;
    char why[256];
    struct cuda_ctx *c = NULL;
    b->ops = NULL;
    b->ctx = NULL;
    if (backend_cuda_probe(device, why, sizeof(why)) != DR_OK) {
        dr_eprintf("dawnrun: no CUDA device: %s\n", why);
        return DR_ERR_NODEVICE;
    }
    if (precision != PRECISION_FP32 && precision != PRECISION_FP16 &&
        precision != PRECISION_BF16)
        FAIL(DR_ERR_INTERNAL, "unknown precision %d", precision);
    c = (struct cuda_ctx *)calloc(1, sizeof(*c));
    CHECK_ALLOC(c, "the CUDA backend");
    c->device = device;
    c->ops = &cuda_ops_table;
    c->precision = precision;
    c->dt = precision == PRECISION_FP16 ? CUDA_F16
            : precision == PRECISION_BF16 ? CUDA_BF16 : CUDA_F32;
    {
        const char *det = getenv("DAWNRUN_CUDA_DETERMINISTIC");
        c->deterministic = det && *det && strcmp(det, "0") != 0;
    }
    c->fuse_conv = env_switch_on("DAWNRUN_CUDA_FUSE_CONV");
    CHECK_CUDA(cudaSetDevice(device));
    TRY(cuda_describe(c));
    CHECK_CUDA(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking));
    CHECK_CUDA(cuda_counted_host_alloc(c, (void **)&c->flags, sizeof(int) * FLAG_COUNT));
    memset(c->flags, 0, sizeof(int) * FLAG_COUNT);
    CHECK_CUDA(cudaHostGetDevicePointer((void **)&c->flags_dev, c->flags, 0));
    CHECK_CUDNN(c, cudnnCreate(&c->cudnn));
    CHECK_CUDNN(c, cudnnSetStream(c->cudnn, c->stream));
    CHECK_CUBLAS(c, cublasCreate(&c->cublas));
    CHECK_CUBLAS(c, cublasSetStream(c->cublas, c->stream));
    /* after the stream, which resets it: a captured GEMM then allocates nothing */
    if (cuda_counted_malloc(c, &c->cublas_ws, CUDA_CUBLAS_WORKSPACE) != cudaSuccess) {
        c->cublas_ws = NULL;
        (void)cudaGetLastError();
        FAIL(DR_ERR_NOMEM, "out of GPU memory allocating cuBLAS's workspace (%zu bytes)",
             CUDA_CUBLAS_WORKSPACE);
    }
    CHECK_CUBLAS(c, cublasSetWorkspace(c->cublas, c->cublas_ws, CUDA_CUBLAS_WORKSPACE));
    CHECK_CUBLAS(c, cublasSetMathMode(c->cublas, CUBLAS_DEFAULT_MATH));
    b->ops = &cuda_ops_table;
    b->ctx = c;
    c = NULL;
cleanup:
    if (c) cuda_destroy(c);
    return rc;
}

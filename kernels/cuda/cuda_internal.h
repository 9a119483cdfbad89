/* Private to the CUDA engine: its context, the storage rules for each tensor kind, the
 * element types and the helpers every op family shares (scratch buffers, launch sizes,
 * shape checks, device-side error flags).
 *
 * Storage (what tensor_write / tensor_read convert to and from the canonical host form):
 *   TENSOR_ACT    NHWC in the compute type (fp32, fp16 or bf16), using the tensor's n;
 *                 an (n, f, 1, 1) activation is therefore the row-major (n, f) matrix.
 *   TENSOR_PARAM  fp32 master in (n, h, w, c) order (conv weights KRSC, as cuDNN's NHWC
 *                 filters; linear weights and vectors are unchanged), followed in half
 *                 precisions by a compute copy of the same layout at cuda_param_copy().
 *                 The copy is rewritten by tensor_write, tensor_zero and the SGD and
 *                 LERP nodes (sgd_multi, lerp_multi). PARAM tensors, and small F32 and
 *                 I32 ones, live in the parameter arena (arena_cuda.cu).
 *   TENSOR_F32 / I32 / U8   the canonical form, unchanged.
 * Every op is queued on the context's stream; none waits for the device. */
#ifndef DAWNRUN_CUDA_INTERNAL_H
#define DAWNRUN_CUDA_INTERNAL_H

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

extern "C" {
#include "../backend.h"
#include "../plan.h"
#include "../../base/status.h"
}
#include "check_cuda.h"

enum cuda_dtype { CUDA_F32, CUDA_F16, CUDA_BF16 };

/* Scratch buffers, one per purpose so that one op can hold several at once. */
enum cuda_slot {
    SLOT_CUDNN,    /* cuDNN workspace, shared by every convolution */
    SLOT_DW,       /* half-precision weight gradient before its fp32 conversion */
    SLOT_REDUCE,   /* per-channel partial sums and coefficients (batch norm, biases) */
    SLOT_INDEX,    /* max-pool argmax positions */
    SLOT_TRIAL,    /* a convolution's output while its algorithms are tried (accumulating) */
    SLOT_FUSED_WS, /* the fused convolutions' cuDNN workspace (conv_fused_cuda.cu): apart from
                      SLOT_CUDNN so that it is final once their graphs are built, and the
                      variant packs that hold its address stay valid */
    SLOT_FUSED_DW, /* a fused convolution's half-precision weight gradient, likewise */
    SLOT_MUON,     /* Muon's norms and its bf16 Newton-Schulz matrices (muon_cuda.cu) */
    SLOT_COUNT
};

/* Device-side error flags (pinned host memory the kernels write into), read at the
 * next synchronisation point. */
enum cuda_flag {
    FLAG_BAD_ROW,    /* augment: a batch row outside the dataset */
    FLAG_BAD_LABEL,  /* loss: a label outside 0..k-1 */
    FLAG_BAD_STEP,   /* sgd_multi: the cursor's step outside the learning-rate table */
    FLAG_COUNT
};

struct cuda_scratch {
    void *ptr;
    size_t bytes;
};

#define CUDA_CONV_MAX_ALGOS 16

/* One cached convolution: its cuDNN descriptors, set once when the shape is first seen,
 * and its algorithm choice: the candidates that ran, fastest first; the first is used,
 * and one that fails later is dropped for the next. */
struct cuda_conv_algo {
    int key[10];                           /* n, c, h, w, co, k, stride, pad, direction, dtype */
    cudnnTensorDescriptor_t td_x, td_y;    /* x (n, c, h, w), y (n, co, ho, wo), NHWC */
    cudnnFilterDescriptor_t fd_w;          /* w (co, c, k, k), KRSC */
    cudnnConvolutionDescriptor_t cd;
    int cd_math;                           /* the math type cd holds now, -1 = unknown */
    int n;                                 /* candidates left */
    int algo[CUDA_CONV_MAX_ALGOS];         /* cudnnConvolution{Fwd,BwdData,BwdFilter}Algo_t */
    int math[CUDA_CONV_MAX_ALGOS];         /* cudnnMathType_t */
    size_t workspace[CUDA_CONV_MAX_ALGOS];
};

/* cuBLAS's workspace, owned by the engine (cuBLAS's documentation, cublasSetWorkspace:
 * the size it recommends for Hopper, more than the 4 MiB for earlier GPUs). Without one
 * set, cuBLAS takes workspace from its own pool, which during stream capture can add
 * memory allocation nodes to the graph. */
#define CUDA_CUBLAS_WORKSPACE ((size_t)32 << 20)

struct cuda_ctx {
    int device;
    const struct backend_ops *ops;  /* the engine's own table (backend_cuda.cu), held as data
                                       so that plan_cuda.cu can run nodes through it without
                                       the two files depending on each other */
    int precision;                  /* enum precision */
    enum cuda_dtype dt;             /* activation dtype */
    int deterministic;              /* 1: only cuDNN algorithms and fused engines documented
                                       deterministic (backend_ops.set_deterministic,
                                       DAWNRUN_CUDA_DETERMINISTIC=1 at creation); 0: the
                                       fastest, whatever their determinism */
    int fuse_conv;                  /* 1: the batch norm may go inside cuDNN's fused
                                       convolution graphs in the half precisions
                                       (DAWNRUN_CUDA_FUSE_CONV not 0 at creation:
                                       conv_nodes_cuda.cu) */
    int sm_count;
    cudaStream_t stream;
    cudnnHandle_t cudnn;
    cublasHandle_t cublas;
    void *cublas_ws;                /* CUDA_CUBLAS_WORKSPACE bytes, set on cublas after its
                                       stream (cublasSetStream resets the workspace) */
    struct cuda_scratch scratch[SLOT_COUNT];
    int *flags;                     /* [FLAG_COUNT], pinned and mapped: the host view */
    int *flags_dev;                 /* the same memory as kernels address it */
    struct cuda_conv_algo *algos;   /* cache, grown by doubling */
    int n_algos, cap_algos;
    char name[512];
    struct backend_counters counts; /* since creation or the last counters_reset */
    void *graphs;                   /* graph_cuda.cu: the graphs captured so far */
    void *tables;                   /* sgd_cuda.cu: the device item tables of sgd_multi and
                                       lerp_multi, by items array */
    void *arena;                    /* arena_cuda.cu: the slabs of the small tensors */
    void *fused_convs;              /* conv_fused_cuda.cu: its built cuDNN graphs and
                                       variant packs */
};

/* ------------------------------------------------------------------ element types */

template <typename T> __host__ __device__ __forceinline__ float cuda_to_f(T v);
template <> __host__ __device__ __forceinline__ float cuda_to_f<float>(float v)
{
    return v;
}
template <> __host__ __device__ __forceinline__ float cuda_to_f<__half>(__half v)
{
    return __half2float(v);
}
template <> __host__ __device__ __forceinline__ float cuda_to_f<__nv_bfloat16>(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}

template <typename T> __host__ __device__ __forceinline__ T cuda_from_f(float v);
template <> __host__ __device__ __forceinline__ float cuda_from_f<float>(float v)
{
    return v;
}
template <> __host__ __device__ __forceinline__ __half cuda_from_f<__half>(float v)
{
    return __float2half_rn(v);
}
template <> __host__ __device__ __forceinline__ __nv_bfloat16 cuda_from_f<__nv_bfloat16>(float v)
{
    return __float2bfloat16_rn(v);
}

/* Runs the body (the remaining arguments) with T bound to the element type of dtype `dt`. */
#define CUDA_DISPATCH(dt, T, ...)                                                          \
    do {                                                                                   \
        switch (dt) {                                                                      \
        case CUDA_F32: {                                                                   \
            typedef float T;                                                               \
            __VA_ARGS__;                                                                   \
        } break;                                                                           \
        case CUDA_F16: {                                                                   \
            typedef __half T;                                                              \
            __VA_ARGS__;                                                                   \
        } break;                                                                           \
        case CUDA_BF16: {                                                                  \
            typedef __nv_bfloat16 T;                                                       \
            __VA_ARGS__;                                                                   \
        } break;                                                                           \
        }                                                                                  \
    } while (0)

/* Bytes of one activation element. */
static inline size_t cuda_dt_size(enum cuda_dtype dt)
{
    return dt == CUDA_F32 ? 4 : 2;
}

/* ------------------------------------------------------------------ counted runtime calls */
/* Every copy, memset, synchronisation, allocation and free of the engine goes through one
 * of these (inside CHECK_CUDA where its error matters), so that it is counted in c->counts;
 * tests/check_launch_counted.py checks that no such runtime call is made directly. Copies,
 * memsets and graph launches are queued on the context's stream. */

static inline cudaError_t cuda_counted_copy(struct cuda_ctx *c, void *dst, const void *src,
                                            size_t bytes, cudaMemcpyKind kind)
{
    if (kind == cudaMemcpyHostToDevice) {
        c->counts.h2d_copies++;
        c->counts.h2d_bytes += bytes;
    } else if (kind == cudaMemcpyDeviceToHost) {
        c->counts.d2h_copies++;
        c->counts.d2h_bytes += bytes;
    } else {
        c->counts.d2d_copies++;
        c->counts.d2d_bytes += bytes;
    }
    return cudaMemcpyAsync(dst, src, bytes, kind, c->stream);
}

static inline cudaError_t cuda_counted_memset(struct cuda_ctx *c, void *dst, size_t bytes)
{
    c->counts.memsets++;
    c->counts.memset_bytes += bytes;
    return cudaMemsetAsync(dst, 0, bytes, c->stream);
}

static inline cudaError_t cuda_counted_sync(struct cuda_ctx *c)
{
    c->counts.syncs++;
    return cudaStreamSynchronize(c->stream);
}

static inline cudaError_t cuda_counted_malloc(struct cuda_ctx *c, void **ptr, size_t bytes)
{
    c->counts.allocs++;
    return cudaMalloc(ptr, bytes);
}

static inline cudaError_t cuda_counted_free(struct cuda_ctx *c, void *ptr)
{
    c->counts.frees++;
    return cudaFree(ptr);
}

/* Pinned host memory mapped into the device's address space. */
static inline cudaError_t cuda_counted_host_alloc(struct cuda_ctx *c, void **ptr, size_t bytes)
{
    c->counts.allocs++;
    return cudaHostAlloc(ptr, bytes, cudaHostAllocMapped);
}

static inline cudaError_t cuda_counted_free_host(struct cuda_ctx *c, void *ptr)
{
    c->counts.frees++;
    return cudaFreeHost(ptr);
}

/* After a cuDNN or cuBLAS call that failed and is not an error of the run (a refused
 * convolution algorithm, a fused graph's plan or trial that cuDNN refuses, a failed
 * capture): clears the runtime's last error, which a kernel launch the library attempted
 * may have left, so that the next CHECK_LAUNCH does not blame the engine's own kernel for
 * it. Errors of the device itself (sticky ones) are not cleared by this and still show. */
static inline void cuda_clear_library_error(void)
{
    (void)cudaGetLastError();
}

/* Launches a graph instantiated from a captured run that counted `captured` (the counts
 * that run took, graph_cuda.cu): counts the launch and adds the captured run's work to the
 * graph_* fields (kernels/counters.h). */
static inline cudaError_t cuda_counted_graph_launch(struct cuda_ctx *c, cudaGraphExec_t exec,
                                                    const struct backend_counters *captured)
{
    struct backend_counters *n = &c->counts;
    n->graph_launches++;
    n->graph_kernels += captured->kernel_launches;
    n->graph_kernel_bytes_read += captured->kernel_bytes_read;
    n->graph_kernel_bytes_written += captured->kernel_bytes_written;
    n->graph_cudnn_calls += captured->cudnn_calls;
    n->graph_cublas_calls += captured->cublas_calls;
    n->graph_memsets += captured->memsets;
    n->graph_memset_bytes += captured->memset_bytes;
    n->graph_d2d_copies += captured->d2d_copies;
    n->graph_d2d_bytes += captured->d2d_bytes;
    return cudaGraphLaunch(exec, c->stream);
}

/* ------------------------------------------------------------------ shared helpers */

#define CUDA_ALIGN 256 /* bytes: device allocations and parameter compute copies */
#define CUDA_THREADS 256

/* Grid size for a grid-stride loop over count elements (count > 0). */
static inline unsigned cuda_grid(const struct cuda_ctx *c, size_t count)
{
    size_t blocks = (count + CUDA_THREADS - 1) / CUDA_THREADS;
    size_t cap = (size_t)(c->sm_count > 0 ? c->sm_count : 80) * 16;
    return (unsigned)(blocks < cap ? blocks : cap);
}

/* CLOCK_MONOTONIC in nanoseconds: what the first-use counters (fused_build_ns,
 * algo_search_ns) are measured with. */
static inline uint64_t cuda_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Kernels over the (rows, channels) of an NHWC tensor use blocks of (CH_X, CH_Y): x walks
 * the channels (a warp reads 32 neighbouring channels of one row), y and the grid walk the
 * rows, so no thread divides an element index to find its channel. */
#define CH_X 32
#define CH_Y 8

/* Grid size for such a kernel over rows rows (rows > 0). */
static inline unsigned cuda_grid_rows(const struct cuda_ctx *c, long rows)
{
    long blocks = (rows + CH_Y - 1) / CH_Y;
    long cap = (long)(c->sm_count > 0 ? c->sm_count : 80) * 16;
    return (unsigned)(blocks < cap ? blocks : cap);
}

/* Loops a thread of such a kernel over its (row r, channel ch) pairs, channel outermost
 * so that per-channel values can be loaded once. */
#define FOR_CHANNELS(ch, channels) for (int ch = threadIdx.x; ch < (channels); ch += blockDim.x)
#define FOR_ROWS(r, rows)                                                                  \
    for (long r = (long)blockIdx.x * blockDim.y + threadIdx.y; r < (rows);                 \
         r += (long)gridDim.x * blockDim.y)

/* The compute-precision copy of a PARAM tensor: the fp32 master itself in fp32, else
 * the copy stored after it. */
void *cuda_param_copy(const struct cuda_ctx *c, const struct tensor *t);

/* Byte offset of a PARAM tensor's compute copy from its data pointer. */
size_t cuda_param_copy_offset(size_t count);

/* Makes ctx's device current for the calling thread. */
int cuda_enter(struct cuda_ctx *c);

/* Scratch buffer `slot` of at least `bytes`; grows it (after waiting for the stream,
 * which may still use the old one) when needed. */
int cuda_scratch(struct cuda_ctx *c, enum cuda_slot slot, size_t bytes, void **out);

/* ------------------------------------------------------------------ vectors and grids */
/* Elementwise kernels move 16 bytes per load and store (4 fp32 or 8 half values) when the
 * element count (or, per row, the channel count) and the pointers allow it, else one
 * element: cuda_pack<T, V> is V elements read or written as one aligned access. */

#define CUDA_VEC_BYTES 16

template <typename T, int V> struct alignas(sizeof(T) * V) cuda_pack {
    T v[V];
};

/* Elements of type T in one 16-byte access. */
template <typename T> constexpr int cuda_vec_width()
{
    return CUDA_VEC_BYTES / (int)sizeof(T);
}

/* Whether p may be read or written 16 bytes at a time (NULL counts as aligned). */
static inline int cuda_aligned16(const void *p)
{
    return ((uintptr_t)p % CUDA_VEC_BYTES) == 0;
}

/* Grid for a grid-stride loop over count work items of elementwise work: a block per
 * CUDA_THREADS items up to CUDA_COVER_BLOCKS blocks per SM (four full waves of resident
 * threads on current GPUs: the whole GPU is busy, and each thread loops over the rest). */
#define CUDA_COVER_BLOCKS 32
static inline unsigned cuda_grid_cover(const struct cuda_ctx *c, size_t count)
{
    size_t blocks = (count + CUDA_THREADS - 1) / CUDA_THREADS;
    const size_t cap = (size_t)(c->sm_count > 0 ? c->sm_count : 80) * CUDA_COVER_BLOCKS;
    if (blocks < 1) blocks = 1;
    return (unsigned)(blocks < cap ? blocks : cap);
}

/* Block shape (x, y) of a per-row kernel walking `vecs` channel vectors per row: x covers
 * the row's vectors (up to CH_X), y the rows, CUDA_THREADS threads in all. */
static inline dim3 cuda_block_rows(int vecs)
{
    const int x = vecs < CH_X ? (vecs > 0 ? vecs : 1) : CH_X;
    return dim3((unsigned)x, (unsigned)(CUDA_THREADS / x));
}

/* Grid x for such a kernel over rows rows: a block per block.y rows, up to
 * CUDA_COVER_BLOCKS blocks per SM (FOR_ROWS loops over the rest). */
static inline unsigned cuda_grid_rows_cover(const struct cuda_ctx *c, long rows, dim3 block)
{
    long blocks = (rows + (long)block.y - 1) / (long)block.y;
    const long cap = (long)(c->sm_count > 0 ? c->sm_count : 80) * CUDA_COVER_BLOCKS;
    if (blocks < 1) blocks = 1;
    return (unsigned)(blocks < cap ? blocks : cap);
}

/* ------------------------------------------------------------------ deterministic sums */

#define RED_X 32      /* channels per block: one warp reads 32 neighbouring channels */
#define FIN_Y 32      /* the tree's lanes over the parts (a power of two) */

/* The sum over p < parts of partial[p * channels + ch], by a (RED_X, FIN_Y) block whose
 * thread (x, y) owns channel ch: lane y sums parts y, y + FIN_Y, ... in order, then the
 * lanes are added pairwise in a fixed tree (y + half into y), so the result is the same
 * bits on every run. Every thread of the block must call it; every one gets the result.
 * sh: the block's shared (FIN_Y, RED_X) buffer. */
static __device__ __forceinline__ double cuda_tree_sum(double (*sh)[RED_X],
                                                       const double *partial, int parts,
                                                       int channels, int ch)
{
    double t = 0.0;
    if (ch < channels)
        for (int p = threadIdx.y; p < parts; p += FIN_Y) t += partial[(size_t)p * channels + ch];
    sh[threadIdx.y][threadIdx.x] = t;
    __syncthreads();
    for (int half = FIN_Y / 2; half > 0; half /= 2) {
        if ((int)threadIdx.y < half)
            sh[threadIdx.y][threadIdx.x] += sh[threadIdx.y + half][threadIdx.x];
        __syncthreads();
    }
    t = sh[0][threadIdx.x];
    __syncthreads();   /* the buffer is free for the next call */
    return t;
}

/* ------------------------------------------------------------------ shared kernels */

/* Per-channel reductions over the rows of an NHWC tensor (rows = n*h*w), in double.
 * Writes `nq` quantities, each (parts, channels), to `partial`; then
 * cuda_reduce_finish sums the parts. Quantities by mode:
 *   REDUCE_SUM      sum a
 *   REDUCE_SUMSQ    sum a, sum a*a
 *   REDUCE_BN_BWD   sum a (x), sum b (dy), sum a*b */
enum cuda_reduce_mode { REDUCE_SUM = 1, REDUCE_SUMSQ = 2, REDUCE_BN_BWD = 3 };

/* Number of row parts used for `rows` rows. */
int cuda_reduce_parts(long rows);

/* Launches the partial reduction of a (and b for REDUCE_BN_BWD), both (groups, rows,
 * channels) of the context's dtype, each group reduced on its own in one launch;
 * partial holds groups × mode × parts × channels doubles (group g's quantity q is
 * quantity g * mode + q for cuda_reduce_finish). */
int cuda_reduce_partial(struct cuda_ctx *c, double *partial, const void *a, const void *b,
                        long rows, int channels, int parts, int groups,
                        enum cuda_reduce_mode mode);

/* out[q * channels + ch] = sum over parts of partial[q][part][ch] (a fixed tree,
 * cuda_tree_sum). */
int cuda_reduce_finish(struct cuda_ctx *c, double *out, const double *partial, int channels,
                       int parts, int nq);

/* REDUCE_BN_BWD of a batch norm's backward fused with the activation after it: as
 * cuda_reduce_partial with b = act'(y) * d computed on the fly, y the batch norm's
 * output recomputed from a (its input x) with the forward's coefficients fcoef (groups,
 * COEF_FWD_COUNT, channels) and rounded to the dtype as the forward stored it, and the
 * product rounded as the activation's backward stores it; d (groups, rows, channels) is
 * the gradient of the activation's output. */
int cuda_reduce_partial_act(struct cuda_ctx *c, double *partial, const void *a, const void *d,
                            const float *fcoef, long rows, int channels, int parts, int groups,
                            enum act_kind kind, float alpha);

/* Sum over rows of a (rows, channels) activation into an fp32 vector (bias gradients). */
int cuda_channel_sum(struct cuda_ctx *c, float *out, const void *a, long rows, int channels);

/* y[r, ch] += b[ch] on a (rows, channels) activation, b fp32. */
int cuda_add_bias(struct cuda_ctx *c, void *y, const float *b, long rows, int channels);

/* out (fp32) = in (compute dtype), count elements; used for half weight gradients. */
int cuda_to_fp32(struct cuda_ctx *c, float *out, const void *in, size_t count);

/* ------------------------------------------------------------------ op families */
/* Each returns a dr_status; ctx is a cuda_ctx; the arguments are a node's slots and
 * parameters (kernels/plan.h), as nodes_cuda.cu's runners hand them over (its rule
 * checked them), or as the fused paths of plan_cuda.cu take them from checked nodes. */

int cuda_conv_forward(void *ctx, struct tensor *y, const struct tensor *x, const struct tensor *w,
                      const struct tensor *b, const struct conv_attr *a);
int cuda_conv_backward(void *ctx, struct tensor *dx, struct tensor *dw, struct tensor *db,
                       const struct tensor *dy, const struct tensor *x, const struct tensor *w,
                       const struct conv_attr *a, int accumulate);
void cuda_conv_release(struct cuda_ctx *c);

int cuda_bn_forward_train(void *ctx, struct tensor *y, struct tensor *save_mean,
                          struct tensor *save_invstd, struct tensor *running_mean,
                          struct tensor *running_var, const struct tensor *x,
                          const struct tensor *gamma, const struct tensor *beta,
                          const struct bn_attr *a);
int cuda_bn_forward_eval(void *ctx, struct tensor *y, const struct tensor *x,
                         const struct tensor *gamma, const struct tensor *beta,
                         const struct tensor *running_mean, const struct tensor *running_var,
                         const struct bn_attr *a);
int cuda_bn_backward(void *ctx, struct tensor *dx, struct tensor *dgamma, struct tensor *dbeta,
                     const struct tensor *dy, const struct tensor *x, const struct tensor *gamma,
                     const struct tensor *save_mean, const struct tensor *save_invstd,
                     int accumulate);

int cuda_act_forward(void *ctx, struct tensor *y, const struct tensor *x, enum act_kind kind,
                     float alpha);
int cuda_act_backward(void *ctx, struct tensor *dx, const struct tensor *dy,
                      const struct tensor *x, enum act_kind kind, float alpha, int accumulate);
int cuda_concat_forward(void *ctx, struct tensor *y, const struct tensor *const *xs, int count);
int cuda_concat_backward(void *ctx, struct tensor *const *dxs, const struct tensor *dy, int count,
                         const int *accumulate);
int cuda_add_forward(void *ctx, struct tensor *y, const struct tensor *a, const struct tensor *b);
int cuda_scale_forward(void *ctx, struct tensor *y, const struct tensor *x, float s);
int cuda_scaled_copy(void *ctx, struct tensor *dx, const struct tensor *dy, float s,
                     int accumulate);
int cuda_flatten_forward(void *ctx, struct tensor *y, const struct tensor *x);
int cuda_flatten_backward(void *ctx, struct tensor *dx, const struct tensor *dy, int accumulate);

int cuda_pool_forward(void *ctx, struct tensor *y, const struct tensor *x,
                      const struct pool_attr *a);
int cuda_pool_backward(void *ctx, struct tensor *dx, const struct tensor *dy,
                       const struct tensor *x, const struct tensor *y, const struct pool_attr *a,
                       int accumulate);

int cuda_xent_forward(void *ctx, struct tensor *stats, struct tensor *probs,
                      const struct tensor *logits, const struct tensor *labels, float smoothing);
int cuda_xent_backward(void *ctx, struct tensor *dlogits, const struct tensor *probs,
                       const struct tensor *labels, float smoothing, float scale);

/* ------------------------------------------------------------------ nodes */
/* The runners, one per op of PLAN_OPS (kernels/plan.h): cuda_run_<name> hands a node
 * that plan_node_check passed to the op's CUDA functions. Most are in nodes_cuda.cu; an
 * op's may sit beside its kernels instead (linear's in linear_cuda.cu). */
#define CUDA_RUN_DECL_(id, name) int cuda_run_##name(void *ctx, const struct plan_node *n);
PLAN_OPS(CUDA_RUN_DECL_)

/* The fused ops' runners (fused_nodes_cuda.cu), as PLAN_OPS's. */
PLAN_FUSED_OPS(CUDA_RUN_DECL_)
#undef CUDA_RUN_DECL_

/* fused_nodes_cuda.cu: whether the engine runs fused node n (kernels/plan.h,
 * PLAN_FUSED_OPS) fused: not with DAWNRUN_CUDA_FUSE=0 (read at each question, so that a
 * plan built with fusion runs node by node as its decompositions). The batch norm's own
 * nodes: a pool only of one part, its windows tiling the plane, the batch norm's output
 * not kept. The nodes with a batch norm inside the convolutions as
 * cuda_conv_nodes_supported says. 1 or 0. */
int cuda_fused_supported(struct cuda_ctx *c, const struct plan_node *n);

/* conv_nodes_cuda.cu: whether the engine runs fused node n fused where the batch norm goes
 * inside cuDNN's convolution graphs (CONV_FUSED_FWD, CONV_FUSED_BWD, BN_APPLY_BWD,
 * ADD_PRO, and a BN_ACT_TRAIN with vectors or a recomputed operand): in the half
 * precisions with c->fuse_conv; for a convolution node, when cuDNN runs its graphs
 * (conv_fused_cuda.h: built and tried at the first question for their shapes, within the
 * build budget; a refusal is remembered). 1 or 0. */
int cuda_conv_nodes_supported(struct cuda_ctx *c, const struct plan_node *n);

/* nodes_cuda.cu: backend_ops.supports (every plain op of kernels/plan.h, in every
 * precision; the fused ops, PLAN_FUSED_OPS, as cuda_fused_supported says) and
 * backend_ops.run_node (the op's runner, through the table generated from PLAN_OPS and
 * PLAN_FUSED_OPS). */
int cuda_supports(void *ctx, const struct plan_node *n);
int cuda_run_node(void *ctx, const struct plan_node *n);

/* ------------------------------------------------------------------ the plan's own ops */
/* Each reads the cursor (and sgd_multi the learning-rate table) in device memory, so that
 * a captured step replays them unchanged. sgd_multi and lerp_multi are one launch each:
 * their items go to the device as a table, uploaded on the first call with a given items
 * array (its tensors' addresses and sizes, its scalars) and reused while it is unchanged;
 * that first call must not be made while the stream is being captured. A steady-state
 * call copies, allocates and waits for nothing. */

int cuda_augment_step(void *ctx, struct tensor *x, struct tensor *labels,
                      const struct tensor *images, const struct tensor *image_labels,
                      const struct tensor *rows, const struct tensor *cursor, int stride,
                      const struct augment_params *aug, uint64_t seed);
int cuda_sgd_multi(void *ctx, const struct sgd_item *items, int count,
                   const struct tensor *lr_table, const struct tensor *cursor, float momentum,
                   int nesterov);
int cuda_lerp_multi(void *ctx, const struct lerp_item *items, int count, float t, int copy_back);
int cuda_cursor_advance(void *ctx, struct tensor *cursor);

/* The MUON node (muon_cuda.cu). */
int cuda_muon_multi(void *ctx, const struct sgd_item *items, int count,
                    const struct tensor *lr_table, const struct tensor *cursor, float momentum,
                    int nesterov, const struct muon_ns *ns);

/* Releases the item tables sgd_cuda.cu keeps in c->tables. */
void cuda_tables_release(struct cuda_ctx *c);

/* ------------------------------------------------------------------ the parameter arena */
/* arena_cuda.cu: parameters, their gradients and optimiser state, and small fp32 / int32
 * tensors (batch-norm statistics, the cursor), are carved out of a few large device slabs
 * instead of one allocation each; each block starts at a CUDA_ALIGN boundary. */

/* Whether a tensor of this kind and storage size is placed in the arena. */
int cuda_arena_holds(enum tensor_kind kind, size_t bytes);

/* *ptr = a block of bytes from a slab, a new slab allocated when none has room. DR_OK, or
 * DR_ERR_NOMEM (reported) when the device has no memory for a new slab. */
int cuda_arena_alloc(struct cuda_ctx *c, void **ptr, size_t bytes);

/* Returns ptr's block to its slab, freeing the slab when it is left empty; 0 when ptr is
 * not in the arena (nothing done). Blocks are reused in stream order: the next user's
 * work is queued on the same stream after the last user's. */
int cuda_arena_free(struct cuda_ctx *c, void *ptr);

/* Frees every slab (the context's end). */
void cuda_arena_release(struct cuda_ctx *c);

/* ------------------------------------------------------------------ fused batch norm */
/* bn_cuda.cu, for the plan executor (plan_cuda.cu): a batch norm with the activation that
 * follows it in one elementwise pass (forward), or with the activation's backward folded
 * into its own (backward). Arguments as the nodes' slots (kernels/plan.h), and: */

/* The forward's per-channel coefficients, (splits, COEF_FWD_COUNT, c) floats:
 * y = ((x - hi) - lo) * scale + shift. */
enum { COEF_SCALE, COEF_HI, COEF_LO, COEF_SHIFT, COEF_FWD_COUNT };

/* The activation fused with a batch norm. */
struct cuda_bn_act {
    enum act_kind kind;
    float alpha;
};

/* The max pool folded into a fused batch norm after its activation (kernels/plan.h,
 * par.bn_act.pool): windows
 * of kh x kw pixels, stride the window, tiling the plane. */
struct cuda_bn_pool {
    int kh, kw;
};

/* The sums of a train-mode batch norm's x taken by the node that wrote it: either the
 * statistics' partial sums (cuda_add_fused, for this x and the batch norm's
 * attributes) or the per-channel sum and sum of squares in fp32 (c floats each, device:
 * a convolution's statistics epilogue, conv_fused_cuda.h; one part only). */
struct cuda_bn_sums {
    const double *partial;
    const float *sum, *sqsum;
};

/* Train-mode batch norm; y (the batch norm's output) may be NULL when nothing else reads
 * it, out is act(y) (NULL with act NULL: no activation), or res + act(y) when res (the
 * other operand of a residual add, x's shape) is not NULL; coef_keep, when not NULL, is a
 * device buffer of (splits, COEF_FWD_COUNT, c) floats that keeps the coefficients for
 * cuda_bn_backward_fused (else they live in scratch); stats, when not NULL, gives sums of x
 * taken by the node that wrote it (struct cuda_bn_sums), and the batch norm's own
 * statistics pass is skipped; pool, when not NULL (with act, y and res NULL, one
 * part), makes out the max pool of act(y) (n, c, h / kh, w / kw), act(y) never stored.
 * With y and act NULL and coef_keep given: the statistics and coefficients only. */
int cuda_bn_train_fused(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                        const struct tensor *res, const struct cuda_bn_act *act,
                        const struct cuda_bn_pool *pool,
                        float *coef_keep, const struct cuda_bn_sums *stats,
                        struct tensor *save_mean, struct tensor *save_invstd,
                        struct tensor *running_mean, struct tensor *running_var,
                        const struct tensor *x, const struct tensor *gamma,
                        const struct tensor *beta, const struct bn_attr *a);

/* The doubles of the statistics' partial sums of a train-mode batch norm over x
 * (n, c, h, w) with attributes a: (splits, 2, parts, c). */
size_t cuda_bn_partial_count(const struct tensor *x, const struct bn_attr *a);

/* The residual add z = a + b (the bits of cuda_add_forward) of the fused paths. With
 * a_coef not NULL (device, (COEF_FWD_COUNT, c) floats, one part: what cuda_bn_train_fused
 * kept in coef_keep), a is that batch norm's x and the first operand its ReLU'd output
 * recomputed with the bits its fused forward stores. With partial not NULL
 * (cuda_bn_partial_count(z, attr) doubles, device), also the statistics' partial sums of
 * z for cuda_bn_train_fused's stats, the train-mode batch norm over z with attributes
 * attr and saved statistics save_mean, save_invstd (as that batch norm's node rule
 * checked them; all three unused, may be NULL, when partial is NULL). z, a, b
 * (n, c, h, w). */
int cuda_add_fused(struct cuda_ctx *c, struct tensor *z, double *partial,
                   const struct tensor *a, const float *a_coef, const struct tensor *b,
                   const struct tensor *save_mean, const struct tensor *save_invstd,
                   const struct bn_attr *attr);

/* z = a + b (cuda_add_fused's bits; with a_coef, the first operand recomputed from a as
 * there), then the train-mode batch norm over z as cuda_bn_train_fused (z its x), its
 * statistics' partial sums taken by the add (in scratch) instead of a pass of their own.
 * z, a, b (n, c, h, w). */
int cuda_bn_train_add_fused(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                            const struct tensor *res, const struct cuda_bn_act *act,
                            const struct cuda_bn_pool *pool, float *coef_keep,
                            struct tensor *save_mean, struct tensor *save_invstd,
                            struct tensor *running_mean, struct tensor *running_var,
                            struct tensor *z, const struct tensor *a, const float *a_coef,
                            const struct tensor *b, const struct tensor *gamma,
                            const struct tensor *beta, const struct bn_attr *attr);

/* Eval-mode batch norm, y, out, res and pool as for cuda_bn_train_fused. */
int cuda_bn_eval_fused(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                       const struct tensor *res, const struct cuda_bn_act *act,
                       const struct cuda_bn_pool *pool,
                       const struct tensor *x,
                       const struct tensor *gamma, const struct tensor *beta,
                       const struct tensor *running_mean, const struct tensor *running_var,
                       const struct bn_attr *a);

/* The batch norm's backward with the activation's backward before it: its dy is
 * act'(y) * d, y recomputed from x with fcoef (what cuda_bn_train_fused kept), so that
 * neither y nor the activation's dx is read or written. dx may be NULL; accumulate as
 * bn_backward's. With pool (and act, one part), d is the dy of the max pool of act(y)
 * (n, c, h / kh, w / kw), and the activation's dy is the pool's dx, found from x. */
int cuda_bn_backward_fused(struct cuda_ctx *c, struct tensor *dx, struct tensor *dgamma,
                           struct tensor *dbeta, const struct tensor *d,
                           const struct cuda_bn_act *act, const struct cuda_bn_pool *pool,
                           const float *fcoef,
                           const struct tensor *x, const struct tensor *gamma,
                           const struct tensor *save_mean, const struct tensor *save_invstd,
                           int accumulate);

/* fused_bn_cuda.cu: the elementwise passes of cuda_bn_train_fused / cuda_bn_eval_fused
 * (out = act(y) or res + act(y), y written when not NULL) and of cuda_bn_backward_fused
 * (dy = act'(y) * d)
 * with an activation, on splits parts of split_rows rows; coef and fcoef as there. */
int cuda_bn_apply_act(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                      const struct tensor *res, const struct cuda_bn_act *act,
                      const struct tensor *x, const float *coef, long split_rows, int ch,
                      int splits);
int cuda_bn_backward_apply_act(struct cuda_ctx *c, struct tensor *dx, const struct tensor *d,
                               const struct tensor *x, const float *coef,
                               const struct cuda_bn_act *act, const float *fcoef,
                               long split_rows, int ch, int splits, int accumulate);

/* bn_pool_cuda.cu: the passes of the above with a max pool folded in: the forward's
 * elementwise pass writing the pool's output out (n, c, h / kh, w / kw) from x (n, c, h, w)
 * with coef (COEF_FWD_COUNT, c); the backward's sums into partial (3, parts, c) doubles and
 * its elementwise pass, from the pool's dy gy (out's shape), x and the forward's fcoef,
 * with coef (COEF_BWD_COUNT, c); one part. */
int cuda_bn_apply_pool(struct cuda_ctx *c, struct tensor *out, const struct cuda_bn_act *act,
                       const struct cuda_bn_pool *pool, const struct tensor *x,
                       const float *coef);
int cuda_reduce_partial_act_pool(struct cuda_ctx *c, double *partial, const struct tensor *x,
                                 const struct tensor *gy, const float *fcoef, int parts,
                                 const struct cuda_bn_act *act, const struct cuda_bn_pool *pool);
int cuda_bn_backward_apply_pool(struct cuda_ctx *c, struct tensor *dx, const struct tensor *gy,
                                const struct tensor *x, const float *coef,
                                const struct cuda_bn_act *act, const float *fcoef,
                                const struct cuda_bn_pool *pool, int accumulate);

/* ------------------------------------------------------------------ plans and graphs */

/* plan_cuda.cu. Runs plan p eagerly on the stream, node by node (plan_run_each: each
 * through its runner, a fused node the engine does not take as its decomposition). */
int cuda_plan_execute(struct cuda_ctx *c, const struct plan *p);

/* backend_ops.plan_compute: cuda_graph_run(c, p, cuda_plan_execute). */
int cuda_plan_compute(void *ctx, const struct plan *p);

/* backend_ops.plan_forget: drops the graphs captured of plan p, which is being freed
 * (cuda_graph_forget), so that a later plan at p's address starts afresh. */
void cuda_plan_forget(void *ctx, const struct plan *p);

/* graph_cuda.cu. Runs p through `run`, and when p->replayable and graphs are on
 * (DAWNRUN_CUDA_GRAPH is not 0 when the context first runs a plan) captures such a run
 * into a CUDA graph once and replays it afterwards, for as long as plan_signature(p) and
 * the scratch buffers are unchanged: the first run of a signature is eager (the warm-up),
 * the second is captured and launched, later ones are one cudaGraphLaunch. `run` keeps
 * nothing of its own for p that a captured run would address. `run` must neither synchronise, allocate nor copy between
 * host and device once warmed up; when a capture fails anyway (or its graph cannot be
 * instantiated), the capture is ended, a line on stderr names the plan node that cannot be
 * captured, the step runs eagerly (run's result is returned) and p runs without graphs
 * from then on. */
typedef int (*cuda_plan_runner)(struct cuda_ctx *c, const struct plan *p);
int cuda_graph_run(struct cuda_ctx *c, const struct plan *p, cuda_plan_runner run);

/* Drops p's graphs (plan p is being freed). */
void cuda_graph_forget(struct cuda_ctx *c, const struct plan *p);

/* Releases what graph_cuda.cu keeps in c->graphs. */
void cuda_graph_release(struct cuda_ctx *c);

#endif

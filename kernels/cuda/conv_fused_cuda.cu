/* Convolutions fused with the batch norm beside them, as cuDNN runtime-fusion graphs built
 * with cuDNN's backend graph API (conv_fused_cuda.h says what the three graphs compute).
 *
 * A graph is described once per key (kind, x's shape, outputs, k, stride, pad, prologue,
 * statistics, residual, data type): tensor, convolution and pointwise descriptors, the operations,
 * the operation graph; then cuDNN's heuristics (mode A, then the fallback mode when A gives
 * nothing that works) list engine configurations, and the first whose execution plan
 * finalizes, whose workspace is at most 2 GiB and whose trial execution succeeds is kept.
 * The trial reads the call's real inputs and writes into scratch (SLOT_TRIAL for the large
 * output, a small buffer of this file for the per-channel ones), so that building never
 * writes an operand. A key no configuration serves is remembered as refused, said once on
 * stderr, and its callers run the unfused ops.
 *
 * What building costs is bounded, because real cuDNN compiles each runtime-fusion plan when
 * it is finalized (about 1.5 s each): at most FUSED_TRY_CONFIGS configurations are tried
 * per heuristics mode (however many are listed), and a context spends at most
 * DAWNRUN_CUDA_FUSED_BUILD_S seconds (default FUSED_BUILD_S_DEFAULT) building graphs, on
 * CLOCK_MONOTONIC. Once that budget is spent, the configuration being tried is the last
 * one: the graph being built and every key not built yet are refused (one line on stderr
 * says so, once), and run unfused; 0 builds none. The counters fused_graphs_built,
 * fused_graphs_refused and fused_build_ns (kernels/counters.h) say what was built and how
 * long it took.
 *
 * Every descriptor of a kept graph lives until cuda_conv_fused_release: the execution plan
 * refers to its engine configuration, which refers to the operation graph and so on, and
 * cuDNN does not promise that a plan outlives them. Each set of operand addresses (with the
 * workspace address) gets its own variant pack, made on first use and kept, so that a
 * call seen before makes exactly one cuDNN call, the execution. Making a variant pack is
 * host-only descriptor work, allowed inside graph capture; building (allocation, trial,
 * synchronisation) is not, and happens in cuda_conv_fused_usable.
 *
 * Unlike conv_cuda.cu, nothing here keeps fp32 convolutions off TF32 tensor cores: cuDNN
 * may pick an engine that rounds through TF32; the plan executor (plan_cuda.cu) therefore
 * asks for these graphs in the half precisions only. The engines' numerical notes are
 * read for one thing: a context that asks for determinism skips every configuration whose
 * engine is noted non-deterministic (fused_cfg_deterministic). docs/cudnn-graphs.md lists
 * every call, attribute and id used here. */
#include <float.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conv_fused_cuda.h"
#include "fused_support.h"
#include "../../base/grow.h"

#define FUSED_WORKSPACE_CAP ((int64_t)2 << 30)   /* configurations wanting more are skipped */
#define FUSED_MAX_DESCS 48      /* descriptors of one graph: the largest (DGRAD_DBN with its
                                   residual) has 37 */
#define FUSED_MAX_OPS 10        /* operations of one graph: FWD has 9 with its prologue, a
                                   recomputed residual and statistics */
#define FUSED_MAX_IDS 16        /* non-virtual tensors of one graph: DGRAD_DBN has 13, 14
                                   with res */
#define FUSED_TRY_CONFIGS 4     /* engine configurations tried per heuristics mode (the
                                   first listed): each plan finalize may compile a kernel */
#define FUSED_BUILD_S_DEFAULT 20.0 /* seconds of building per context, unless
                                      DAWNRUN_CUDA_FUSED_BUILD_S says otherwise: with the
                                      algorithm search, a bench of the GPU protocol fits
                                      its 45 s (docs/gpu.md) */
#define FUSED_MAX_PACKS 64      /* variant packs kept per graph (then the oldest is reused) */
#define FUSED_ALIGN 16          /* bytes: the alignment every tensor is declared with */
#define FUSED_KEY_LEN 13

/* The unique ids of the graphs' tensors, fixed per role. Non-virtual ones (the variant
 * packs' operands) are below 100; virtual intermediates (fp32) above. */
enum fused_id {
    ID_X = 1, ID_W = 2, ID_Y = 3, ID_DY = 4, ID_DW = 5, ID_DZ = 6, ID_SCALE = 7, ID_BIAS = 8,
    ID_SUM = 9, ID_SQSUM = 10, ID_MEAN = 11, ID_INVSTD = 12, ID_GAMMA = 13, ID_BETA = 14,
    ID_DSCALE = 15, ID_DBIAS = 16, ID_EQ_DY = 17, ID_EQ_X = 18, ID_EQ_B = 19, ID_RES = 20,
    ID_RSCALE = 21, ID_RBIAS = 22,
    ID_V_SCALED = 101, ID_V_BIASED = 102, ID_V_RELU = 103,                 /* the prologue */
    ID_V_DGRAD = 111, ID_V_CENTRED = 112, ID_V_NORMED = 113, ID_V_GAMMA = 114,
    ID_V_BN = 115, ID_V_DSUM = 116,                                         /* DGRAD_DBN */
    ID_V_CONV = 117, ID_V_RSCALED = 121, ID_V_RBIASED = 122, ID_V_RRELU = 123 /* FWD + r */
};

/* The key's fields, in order. */
enum { K_KIND, K_N, K_CI, K_H, K_W, K_CO, K_K, K_STRIDE, K_PAD, K_PRO, K_STATS, K_RES, K_DT };

/* The per-channel outputs, in the order of struct fused_outputs' small[]: FWD's sum and
 * sqsum, or DGRAD_DBN's dscale, dbias, eq_dy, eq_x, eq_b. */
#define FUSED_SMALL 5

/* Where one execution writes: big is y (FWD), the compute-type dw (WGRAD) or dz
 * (DGRAD_DBN); small the per-channel outputs (unused ones NULL). */
struct fused_outputs {
    void *big;
    float *small[FUSED_SMALL];
};

/* One variant pack: the operand addresses it was made for (in the graph's id order) and
 * the workspace address. */
struct fused_pack {
    void *ptrs[FUSED_MAX_IDS];
    void *ws;
    cudnnBackendDescriptor_t vp;
};

/* One key's graph: usable with its plan, or refused (plan NULL). */
struct fused_graph {
    int key[FUSED_KEY_LEN];
    cudnnBackendDescriptor_t descs[FUSED_MAX_DESCS];   /* everything but plan and packs */
    int n_descs;
    cudnnBackendDescriptor_t plan;
    int64_t ws_bytes;
    struct fused_pack *packs;   /* grown by doubling up to FUSED_MAX_PACKS */
    int n_packs, cap_packs, next_reuse;
};

/* What c->fused_convs holds. */
struct fused_state {
    struct fused_graph *graphs;   /* grown by doubling: one per key the model has */
    int n_graphs, cap_graphs;
    void *small;                  /* the trials' per-channel outputs */
    size_t small_bytes;
    uint64_t budget_ns;           /* DAWNRUN_CUDA_FUSED_BUILD_S, read when s is made */
    uint64_t spent_ns;            /* on the builds finished so far */
    uint64_t build_t0;            /* the build under way: when it began */
    int budget_said;              /* the line that the budget is spent was printed */
    int listed, tried;            /* the build under way: configurations listed by the
                                     heuristics and tried, over its modes */
    int cut;                      /* the build under way was stopped by the budget */
};

/* Whether s's build budget is spent, counting the build under way. */
static int fused_budget_spent(const struct fused_state *s)
{
    return s->spent_ns + (cuda_now_ns() - s->build_t0) >= s->budget_ns;
}

/* A cuDNN call whose failure means "not supported here" rather than an error (finalizing
 * an operation, a graph, a plan, a variant pack; heuristics; a trial execution): counted
 * as CHECK_CUDNN counts, its status stored in *st; on failure, jumps to cleanup with rc
 * unchanged (DR_OK), the caller reading *st. */
#define PROBE_CUDNN(c, st, call)                                                           \
    do {                                                                                   \
        (c)->counts.cudnn_calls++;                                                         \
        *(st) = (call);                                                                    \
        if (*(st) != CUDNN_STATUS_SUCCESS) goto cleanup;                                   \
    } while (0)

/* A step that returns an rc and may record a refusal in *st: jumps to cleanup on either. */
#define STEP(st, expr)                                                                     \
    do {                                                                                   \
        TRY(expr);                                                                         \
        if (*(st) != CUDNN_STATUS_SUCCESS) goto cleanup;                                   \
    } while (0)

/* One attribute, through CHECK_CUDNN (the message then names the attribute). */
#define SET_ATTR(c, d, name, type, count, ptr)                                             \
    CHECK_CUDNN(c, cudnnBackendSetAttribute((d), (name), (type), (int64_t)(count), (ptr)))

/* One attribute that is one descriptor (an lvalue). */
#define SET_DESC(c, d, name, desc) SET_ATTR(c, d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &(desc))

static cudnnDataType_t fused_dtype(enum cuda_dtype dt)
{
    return dt == CUDA_F32 ? CUDNN_DATA_FLOAT : dt == CUDA_F16 ? CUDNN_DATA_HALF
                                                              : CUDNN_DATA_BFLOAT16;
}

static const char *fused_dtype_name(int dt)
{
    return dt == CUDA_F32 ? "float (fp32)" : dt == CUDA_F16 ? "half (fp16)" : "bfloat16 (bf16)";
}

/* cuDNN's name of the key's graph (for messages). */
static const char *fused_graph_name(const int key[FUSED_KEY_LEN])
{
    if (key[K_KIND] == CUDA_CONV_FUSED_WGRAD)
        return key[K_PRO] ? "scale-bias-relu-wgrad" : "wgrad";
    if (key[K_KIND] == CUDA_CONV_FUSED_DGRAD_DBN)
        return key[K_RES] ? "dgrad-add-drelu-dbn-weight" : "dgrad-drelu-dbn-weight";
    /* [scale-bias-relu-]conv[-add | -scale-bias-relu-add][-genstats] */
    static const char *const names[2][3][2] = {
        {{"conv", "conv-genstats"},
         {"conv-add", "conv-add-genstats"},
         {"conv-scale-bias-relu-add", "conv-scale-bias-relu-add-genstats"}},
        {{"scale-bias-relu-conv", "scale-bias-relu-conv-genstats"},
         {"scale-bias-relu-conv-add", "scale-bias-relu-conv-add-genstats"},
         {"scale-bias-relu-conv-scale-bias-relu-add",
          "scale-bias-relu-conv-scale-bias-relu-add-genstats"}}};
    return names[key[K_PRO] != 0][key[K_RES] >= 0 && key[K_RES] <= 2 ? key[K_RES] : 0]
                [key[K_STATS] != 0];
}

/* "input (n 512, c 64, h 32, w 32) -> 64 outputs, k 3, stride 1, pad 1, data type half
 * (fp16), layout NHWC (filters KRSC)" for a key. */
static void fused_shape_text(char *buf, size_t len, const int key[FUSED_KEY_LEN])
{
    snprintf(buf, len,
             "input (n %d, c %d, h %d, w %d) -> %d outputs, k %d, stride %d, pad %d, data type "
             "%s, layout NHWC (filters KRSC)",
             key[K_N], key[K_CI], key[K_H], key[K_W], key[K_CO], key[K_K], key[K_STRIDE],
             key[K_PAD], fused_dtype_name(key[K_DT]));
}

/* Checks args as conv_check does for the plain convolution, and that every operand the
 * kind reads or writes is there; sets *ho, *wo (the output plane). */
static int fused_check(const struct cuda_conv_fused_args *args, int *ho, int *wo)
{
    int rc = DR_OK;
    const struct conv_attr *a = NULL;
    const struct tensor *x = NULL, *w = NULL, *dy = NULL;
    EXPECT(args && args->a && args->x && args->w, "fused conv: missing attributes, x or w");
    EXPECT(args->kind >= CUDA_CONV_FUSED_FWD && args->kind < CUDA_CONV_FUSED_KIND_COUNT,
           "fused conv: unknown kind %d", (int)args->kind);
    a = args->a;
    x = args->x;
    w = args->w;
    dy = args->dy;
    EXPECT(w->c == x->c && w->h == a->k && w->w == a->k && a->stride >= 1 && a->pad >= 0,
           "fused conv: weight (%d, %d, %d, %d) does not fit input channels %d, k %d, "
           "stride %d, pad %d", w->n, w->c, w->h, w->w, x->c, a->k, a->stride, a->pad);
    *ho = (x->h + 2 * a->pad - a->k) / a->stride + 1;
    *wo = (x->w + 2 * a->pad - a->k) / a->stride + 1;
    EXPECT(*ho >= 1 && *wo >= 1, "fused conv: %dx%d input too small for k %d pad %d", x->h,
           x->w, a->k, a->pad);
    EXPECT(x->n == 0 || x->data, "fused conv: x has no data");
    if (args->kind == CUDA_CONV_FUSED_FWD) {
        const struct tensor *y = args->y;
        EXPECT(y && y->n == x->n && y->c == w->n && y->h == *ho && y->w == *wo,
               "fused conv: output (%d, %d, %d, %d), expected (%d, %d, %d, %d)",
               y ? y->n : -1, y ? y->c : -1, y ? y->h : -1, y ? y->w : -1, x->n, w->n, *ho,
               *wo);
        EXPECT(x->n == 0 || (y->data && w->data), "fused conv: y or w has no data");
        EXPECT(!args->sum == !args->sqsum, "fused conv: sum and sqsum come together");
        EXPECT(!args->res || (tensor_same_shape(args->res, y) && (x->n == 0 || args->res->data)),
               "fused conv: the residual is unlike the output");
        EXPECT(!args->res_pro || (args->res && args->res_pro->scale && args->res_pro->bias),
               "fused conv: a residual prologue without its residual, scale or bias");
    } else {
        EXPECT(dy && dy->n == x->n && dy->c == w->n && dy->h == *ho && dy->w == *wo,
               "fused conv: dy (%d, %d, %d, %d), expected (%d, %d, %d, %d)",
               dy ? dy->n : -1, dy ? dy->c : -1, dy ? dy->h : -1, dy ? dy->w : -1, x->n, w->n,
               *ho, *wo);
        EXPECT(x->n == 0 || dy->data, "fused conv: dy has no data");
    }
    if (args->kind == CUDA_CONV_FUSED_WGRAD)
        EXPECT(args->dw && args->dw->data && tensor_count(args->dw) == tensor_count(w),
               "fused conv: dw missing or unlike w");
    if (args->kind != CUDA_CONV_FUSED_DGRAD_DBN) {
        EXPECT(!args->pro || (args->pro->scale && args->pro->bias),
               "fused conv: a prologue without scale or bias");
    } else {
        EXPECT(args->dz && tensor_same_shape(args->dz, x) && (x->n == 0 || args->dz->data),
               "fused conv: dz missing or unlike x");
        EXPECT(x->n == 0 || w->data, "fused conv: w has no data");
        EXPECT(args->dscale && args->dbias && args->eq_dy && args->eq_x && args->eq_b,
               "fused conv: a batch-norm gradient output is missing");
        EXPECT(args->mean && args->invstd && args->gamma && args->beta,
               "fused conv: a batch-norm statistic or parameter is missing");
        EXPECT(!args->res || (tensor_same_shape(args->res, x) && (x->n == 0 || args->res->data)),
               "fused conv: the residual gradient is unlike x");
    }
cleanup:
    return rc;
}

/* The support table's query (fused_support.h) of key. */
static struct fused_support_query fused_query(const int key[FUSED_KEY_LEN])
{
    struct fused_support_query q;
    memset(&q, 0, sizeof(q));
    q.op = key[K_KIND] == CUDA_CONV_FUSED_FWD     ? FUSED_SUPPORT_FWD
           : key[K_KIND] == CUDA_CONV_FUSED_WGRAD ? FUSED_SUPPORT_WGRAD
                                                  : FUSED_SUPPORT_DGRAD;
    q.pro = key[K_PRO];
    q.res = key[K_RES];
    q.stats = key[K_STATS];
    q.dtype = key[K_DT] == CUDA_F32   ? FUSED_SUPPORT_F32
              : key[K_DT] == CUDA_F16 ? FUSED_SUPPORT_F16
                                      : FUSED_SUPPORT_BF16;
    q.stride = key[K_STRIDE];
    q.k = key[K_K];
    q.ci = key[K_CI];
    q.co = key[K_CO];
    return q;
}

/* The key of args (checked) in context c. */
static void fused_key(int key[FUSED_KEY_LEN], const struct cuda_ctx *c,
                      const struct cuda_conv_fused_args *args)
{
    const struct tensor *x = args->x;
    const int dbn = args->kind == CUDA_CONV_FUSED_DGRAD_DBN;
    const int k[FUSED_KEY_LEN] = {(int)args->kind, x->n, x->c, x->h, x->w, args->w->n,
                                  args->a->k, args->a->stride, args->a->pad,
                                  !dbn && args->pro != NULL,
                                  args->kind == CUDA_CONV_FUSED_FWD && args->sum != NULL,
                                  !args->res ? 0 : dbn || !args->res_pro ? 1 : 2,
                                  (int)c->dt};
    memcpy(key, k, sizeof(k));
}

/* The operands of one execution of args' graph (key), in the graph's id order: ids[i]
 * and ptrs[i] for i < *count; inputs are args', outputs out's; w is the compute copy. */
static void fused_operands(const struct cuda_ctx *c, const struct cuda_conv_fused_args *args,
                           const int key[FUSED_KEY_LEN], const struct fused_outputs *out,
                           int64_t ids[FUSED_MAX_IDS], void *ptrs[FUSED_MAX_IDS], int *count)
{
    int n = 0;
#define OPERAND(id, p)                                                                     \
    do {                                                                                   \
        ids[n] = (id);                                                                     \
        ptrs[n] = (void *)(p);                                                             \
        n++;                                                                               \
    } while (0)
    if (key[K_KIND] == CUDA_CONV_FUSED_FWD) {
        OPERAND(ID_X, args->x->data);
        OPERAND(ID_W, cuda_param_copy(c, args->w));
        OPERAND(ID_Y, out->big);
        if (key[K_PRO]) {
            OPERAND(ID_SCALE, args->pro->scale);
            OPERAND(ID_BIAS, args->pro->bias);
        }
        if (key[K_STATS]) {
            OPERAND(ID_SUM, out->small[0]);
            OPERAND(ID_SQSUM, out->small[1]);
        }
        if (key[K_RES]) OPERAND(ID_RES, args->res->data);
        if (key[K_RES] == 2) {
            OPERAND(ID_RSCALE, args->res_pro->scale);
            OPERAND(ID_RBIAS, args->res_pro->bias);
        }
    } else if (key[K_KIND] == CUDA_CONV_FUSED_WGRAD) {
        OPERAND(ID_X, args->x->data);
        OPERAND(ID_DY, args->dy->data);
        OPERAND(ID_DW, out->big);
        if (key[K_PRO]) {
            OPERAND(ID_SCALE, args->pro->scale);
            OPERAND(ID_BIAS, args->pro->bias);
        }
    } else {
        OPERAND(ID_DY, args->dy->data);
        OPERAND(ID_W, cuda_param_copy(c, args->w));
        OPERAND(ID_X, args->x->data);
        OPERAND(ID_MEAN, args->mean);
        OPERAND(ID_INVSTD, args->invstd);
        OPERAND(ID_GAMMA, args->gamma);
        OPERAND(ID_BETA, args->beta);
        OPERAND(ID_DZ, out->big);
        OPERAND(ID_DSCALE, out->small[0]);
        OPERAND(ID_DBIAS, out->small[1]);
        OPERAND(ID_EQ_DY, out->small[2]);
        OPERAND(ID_EQ_X, out->small[3]);
        OPERAND(ID_EQ_B, out->small[4]);
        if (key[K_RES]) OPERAND(ID_RES, args->res->data);
    }
#undef OPERAND
    *count = n;
}

/* Whether every operand address is FUSED_ALIGN-aligned, as the tensors declare. */
static int fused_aligned(void *const *ptrs, int count)
{
    for (int i = 0; i < count; i++)
        if ((uintptr_t)ptrs[i] % FUSED_ALIGN) return 0;
    return 1;
}

/* ------------------------------------------------------------------ describing a graph */

/* A new descriptor of type, owned by g (destroyed with it). A cuDNN that does not know
 * the type (an operation newer than it) answers NOT_SUPPORTED: a refusal in *st, not an
 * error; any other failure is an error. */
static int fused_new(struct cuda_ctx *c, struct fused_graph *g, cudnnBackendDescriptorType_t type,
                     cudnnBackendDescriptor_t *d, cudnnStatus_t *st)
{
    int rc = DR_OK;
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    *d = NULL;
    EXPECT(g->n_descs < FUSED_MAX_DESCS, "fused conv: more than %d descriptors in a graph",
           FUSED_MAX_DESCS);
    c->counts.cudnn_calls++;   /* the one creation below, as CHECK_CUDNN counts */
    s = cudnnBackendCreateDescriptor(type, d);
    if ((int)s / 1000 == (int)CUDNN_STATUS_NOT_SUPPORTED / 1000) {
        *st = s;
        *d = NULL;
        goto cleanup;
    }
    if (s != CUDNN_STATUS_SUCCESS) {
        *d = NULL;
        rc = dr_report(DR_ERR_DEVICE, __FILE__, __LINE__, "cuDNN",
                       "cudnnBackendCreateDescriptor(type %d): %s", (int)type,
                       cudnnGetErrorString(s));
        goto cleanup;
    }
    g->descs[g->n_descs++] = *d;
cleanup:
    return rc;
}

/* A finalized tensor descriptor (dims (n, ch, h, w), NHWC strides (ch*h*w, 1, ch*w, ch),
 * which for a (co, ci, k, k) filter are the KRSC strides and for a (1, ch, 1, 1) vector
 * (ch, 1, ch, ch)), unique id uid, virtual or not. Every attribute is set, defaults
 * included: the byte alignment is what lets the fusion engines use 16-byte vector
 * accesses (so every call's addresses are checked against it), and a virtual tensor is
 * one cuDNN keeps on chip, never in memory (it has no place in a variant pack). */
static int fused_tensor(struct cuda_ctx *c, struct fused_graph *g, int64_t uid,
                        cudnnDataType_t dt, int n, int ch, int h, int w, int is_virtual,
                        cudnnBackendDescriptor_t *t, cudnnStatus_t *st)
{
    int rc = DR_OK;
    const int64_t dims[4] = {n, ch, h, w};
    const int64_t strides[4] = {(int64_t)ch * h * w, 1, (int64_t)ch * w, ch};
    const int64_t align = FUSED_ALIGN;
    const bool virt = is_virtual != 0;
    STEP(st, fused_new(c, g, CUDNN_BACKEND_TENSOR_DESCRIPTOR, t, st));
    SET_ATTR(c, *t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt);
    SET_ATTR(c, *t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims);
    SET_ATTR(c, *t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides);
    SET_ATTR(c, *t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
    SET_ATTR(c, *t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &align);
    SET_ATTR(c, *t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt);
    PROBE_CUDNN(c, st, cudnnBackendFinalize(*t));
cleanup:
    return rc;
}

/* A finalized pointwise operation of mode: binary modes y = x OP b (b per channel,
 * broadcast, or of x's shape); RELU_FWD y = relu(x) (b NULL); RELU_BWD y = x > 0 ? b : 0,
 * b the incoming gradient (cuDNN's DYDESC), x the forward input (XDESC), y the result
 * (DXDESC). The math is fp32. */
static int fused_pointwise(struct cuda_ctx *c, struct fused_graph *g, cudnnPointwiseMode_t mode,
                           cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                           cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t *op,
                           cudnnStatus_t *st)
{
    int rc = DR_OK;
    cudnnBackendDescriptor_t pw = NULL;
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    const float one = 1.0f;
    const int relu = mode == CUDNN_POINTWISE_RELU_FWD || mode == CUDNN_POINTWISE_RELU_BWD;
    STEP(st, fused_new(c, g, CUDNN_BACKEND_POINTWISE_DESCRIPTOR, &pw, st));
    SET_ATTR(c, pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
    SET_ATTR(c, pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec);
    /* a plain ReLU: the clips are set as cuDNN's frontend sets them, the upper one at
     * FLT_MAX because the default (DBL_MAX) does not fit the fp32 math */
    if (relu) {
        const double lower = 0.0, upper = FLT_MAX;
        SET_ATTR(c, pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1, &lower);
        SET_ATTR(c, pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1, &upper);
    }
    PROBE_CUDNN(c, st, cudnnBackendFinalize(pw));
    STEP(st, fused_new(c, g, CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op, st));
    SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR,
             1, &pw);
    SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x);
    if (mode == CUDNN_POINTWISE_RELU_BWD) {
        SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &b);
        SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &y);
    } else {
        if (b)
            SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                     1, &b);
        SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
                 &y);
    }
    /* the scalings, 1, as fp32 values: the type follows the fp32 math */
    SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, CUDNN_TYPE_FLOAT, 1, &one);
    SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, CUDNN_TYPE_FLOAT, 1, &one);
    PROBE_CUDNN(c, st, cudnnBackendFinalize(*op));
cleanup:
    return rc;
}

/* The finalized convolution descriptor of key: cross-correlation of 2 spatial dims in fp32,
 * stride and symmetric padding from the key, dilation 1. */
static int fused_conv_desc(struct cuda_ctx *c, struct fused_graph *g, const int key[FUSED_KEY_LEN],
                           cudnnBackendDescriptor_t *cd, cudnnStatus_t *st)
{
    int rc = DR_OK;
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t dims = 2;
    const int64_t pad[2] = {key[K_PAD], key[K_PAD]};
    const int64_t dil[2] = {1, 1};
    const int64_t stride[2] = {key[K_STRIDE], key[K_STRIDE]};
    STEP(st, fused_new(c, g, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, cd, st));
    SET_ATTR(c, *cd, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &comp);
    SET_ATTR(c, *cd, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
    SET_ATTR(c, *cd, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &dims);
    SET_ATTR(c, *cd, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    SET_ATTR(c, *cd, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pad);
    SET_ATTR(c, *cd, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, dil);
    SET_ATTR(c, *cd, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, stride);
    PROBE_CUDNN(c, st, cudnnBackendFinalize(*cd));
cleanup:
    return rc;
}

/* A finalized convolution operation of type (forward, backward data or backward filter)
 * on conv descriptor cd with alpha 1, beta 0 (CUDNN_TYPE_FLOAT values, since the compute
 * type is fp32; cuDNN takes doubles only for a double compute type); a, b, out are the
 * attribute names of its three tensors and ta, tb, tout the tensors. */
static int fused_conv_op(struct cuda_ctx *c, struct fused_graph *g,
                         cudnnBackendDescriptorType_t type, cudnnBackendDescriptor_t cd,
                         cudnnBackendAttributeName_t cd_name,
                         cudnnBackendAttributeName_t alpha_name,
                         cudnnBackendAttributeName_t beta_name, cudnnBackendAttributeName_t a,
                         cudnnBackendDescriptor_t ta, cudnnBackendAttributeName_t b,
                         cudnnBackendDescriptor_t tb, cudnnBackendAttributeName_t out,
                         cudnnBackendDescriptor_t tout, cudnnBackendDescriptor_t *op,
                         cudnnStatus_t *st)
{
    int rc = DR_OK;
    const float alpha = 1.0f, beta = 0.0f;
    STEP(st, fused_new(c, g, type, op, st));
    SET_ATTR(c, *op, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &ta);
    SET_ATTR(c, *op, b, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tb);
    SET_ATTR(c, *op, out, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &tout);
    SET_ATTR(c, *op, cd_name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &cd);
    SET_ATTR(c, *op, alpha_name, CUDNN_TYPE_FLOAT, 1, &alpha);
    SET_ATTR(c, *op, beta_name, CUDNN_TYPE_FLOAT, 1, &beta);
    PROBE_CUDNN(c, st, cudnnBackendFinalize(*op));
cleanup:
    return rc;
}

/* The ids of one scale-bias-ReLU chain: its per-channel scale and bias (non-virtual) and
 * its three virtual results. */
struct fused_sbr_ids {
    int64_t scale, bias, scaled, biased, relu;
};

/* relu(tx * scale + bias) of an (n, ch, h, w) tensor tx with the ids of sbr: its three
 * pointwise operations appended to ops (*nops), *out its virtual result; the virtual
 * tensors are of type vdt (the math is fp32 either way), scale and bias of type io. */
static int fused_sbr(struct cuda_ctx *c, struct fused_graph *g, const struct fused_sbr_ids *sbr,
                     cudnnDataType_t io, cudnnDataType_t vdt, int n, int ch, int h, int w,
                     cudnnBackendDescriptor_t tx, cudnnBackendDescriptor_t *ops, int *nops,
                     cudnnBackendDescriptor_t *out, cudnnStatus_t *st)
{
    int rc = DR_OK;
    cudnnBackendDescriptor_t ts = NULL, tb = NULL, v1 = NULL, v2 = NULL;
    STEP(st, fused_tensor(c, g, sbr->scale, io, 1, ch, 1, 1, 0, &ts, st));
    STEP(st, fused_tensor(c, g, sbr->bias, io, 1, ch, 1, 1, 0, &tb, st));
    STEP(st, fused_tensor(c, g, sbr->scaled, vdt, n, ch, h, w, 1, &v1, st));
    STEP(st, fused_tensor(c, g, sbr->biased, vdt, n, ch, h, w, 1, &v2, st));
    STEP(st, fused_tensor(c, g, sbr->relu, vdt, n, ch, h, w, 1, out, st));
    STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_MUL, tx, ts, v1, &ops[(*nops)++], st));
    STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_ADD, v1, tb, v2, &ops[(*nops)++], st));
    STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_RELU_FWD, v2, NULL, *out, &ops[(*nops)++],
                             st));
cleanup:
    return rc;
}

/* The prologue relu(x * scale + bias) of the (n, ci, h, w) input tx (fused_sbr). */
static int fused_prologue(struct cuda_ctx *c, struct fused_graph *g, const int key[FUSED_KEY_LEN],
                          cudnnDataType_t vdt, cudnnBackendDescriptor_t tx,
                          cudnnBackendDescriptor_t *ops, int *nops, cudnnBackendDescriptor_t *out,
                          cudnnStatus_t *st)
{
    static const struct fused_sbr_ids ids = {ID_SCALE, ID_BIAS, ID_V_SCALED, ID_V_BIASED,
                                             ID_V_RELU};
    return fused_sbr(c, g, &ids, fused_dtype((enum cuda_dtype)key[K_DT]), vdt, key[K_N],
                     key[K_CI], key[K_H], key[K_W], tx, ops, nops, out, st);
}

/* The sizes of a key's graph. */
struct fused_dims {
    int n, ci, h, w, co, k, ho, wo;
};

static struct fused_dims fused_dims_of(const int key[FUSED_KEY_LEN])
{
    struct fused_dims d;
    d.n = key[K_N], d.ci = key[K_CI], d.h = key[K_H], d.w = key[K_W], d.co = key[K_CO];
    d.k = key[K_K];
    d.ho = (d.h + 2 * key[K_PAD] - d.k) / key[K_STRIDE] + 1;
    d.wo = (d.w + 2 * key[K_PAD] - d.k) / key[K_STRIDE] + 1;
    return d;
}

/* The operations of a FWD graph into ops (count *nops): [prologue,] the convolution of
 * input tx by ID_W into ID_Y [, or into ID_V_CONV and its sum with ID_RES (or with
 * relu(ID_RES * ID_RSCALE + ID_RBIAS)) into ID_Y], [the statistics of ID_Y into ID_SUM,
 * ID_SQSUM]. */
static int fused_describe_fwd(struct cuda_ctx *c, struct fused_graph *g,
                              const int key[FUSED_KEY_LEN], cudnnDataType_t pro_vdt,
                              cudnnBackendDescriptor_t cd, cudnnBackendDescriptor_t tx,
                              cudnnBackendDescriptor_t *ops, int *nops, cudnnStatus_t *st)
{
    int rc = DR_OK;
    const cudnnDataType_t io = fused_dtype((enum cuda_dtype)key[K_DT]), f32 = CUDNN_DATA_FLOAT;
    const struct fused_dims d = fused_dims_of(key);
    cudnnBackendDescriptor_t in = tx, tw = NULL, ty = NULL, tconv = NULL;
    if (key[K_PRO]) STEP(st, fused_prologue(c, g, key, pro_vdt, tx, ops, nops, &in, st));
    STEP(st, fused_tensor(c, g, ID_W, io, d.co, d.ci, d.k, d.k, 0, &tw, st));
    STEP(st, fused_tensor(c, g, ID_Y, io, d.n, d.co, d.ho, d.wo, 0, &ty, st));
    if (key[K_RES]) /* the convolution's output stays on chip */
        STEP(st, fused_tensor(c, g, ID_V_CONV, f32, d.n, d.co, d.ho, d.wo, 1, &tconv, st));
    STEP(st, fused_conv_op(c, g, CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR, cd,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, in,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, tw,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, tconv ? tconv : ty,
                           &ops[(*nops)++], st));
    if (key[K_RES]) {   /* y = conv + r, r = res or relu(res * rscale + rbias) */
        static const struct fused_sbr_ids rids = {ID_RSCALE, ID_RBIAS, ID_V_RSCALED,
                                                  ID_V_RBIASED, ID_V_RRELU};
        cudnnBackendDescriptor_t tres = NULL, r = NULL;
        STEP(st, fused_tensor(c, g, ID_RES, io, d.n, d.co, d.ho, d.wo, 0, &tres, st));
        r = tres;
        if (key[K_RES] == 2)
            STEP(st, fused_sbr(c, g, &rids, io, f32, d.n, d.co, d.ho, d.wo, tres, ops, nops, &r,
                               st));
        STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_ADD, tconv, r, ty, &ops[(*nops)++], st));
    }
    if (key[K_STATS]) {
        /* the statistics' math precision is their input's type, as cuDNN's own frontend
         * sets it; the sums themselves are fp32 */
        const cudnnGenStatsMode_t mode = CUDNN_GENSTATS_SUM_SQSUM;
        cudnnBackendDescriptor_t tsum = NULL, tsq = NULL, *op = &ops[(*nops)++];
        STEP(st, fused_tensor(c, g, ID_SUM, f32, 1, d.co, 1, 1, 0, &tsum, st));
        STEP(st, fused_tensor(c, g, ID_SQSUM, f32, 1, d.co, 1, 1, 0, &tsq, st));
        STEP(st, fused_new(c, g, CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR, op, st));
        SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE, 1, &mode);
        SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &io);
        SET_DESC(c, *op, CUDNN_ATTR_OPERATION_GENSTATS_XDESC, ty);
        SET_DESC(c, *op, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, tsum);
        SET_DESC(c, *op, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, tsq);
        PROBE_CUDNN(c, st, cudnnBackendFinalize(*op));
    }
cleanup:
    return rc;
}

/* The operations of a WGRAD graph into ops (count *nops): [prologue on tx,] the weight
 * gradient of ID_DY into ID_DW. */
static int fused_describe_wgrad(struct cuda_ctx *c, struct fused_graph *g,
                                const int key[FUSED_KEY_LEN], cudnnDataType_t pro_vdt,
                                cudnnBackendDescriptor_t cd, cudnnBackendDescriptor_t tx,
                                cudnnBackendDescriptor_t *ops, int *nops, cudnnStatus_t *st)
{
    int rc = DR_OK;
    const cudnnDataType_t io = fused_dtype((enum cuda_dtype)key[K_DT]);
    const struct fused_dims d = fused_dims_of(key);
    cudnnBackendDescriptor_t in = tx, tdy = NULL, tdw = NULL;
    if (key[K_PRO]) STEP(st, fused_prologue(c, g, key, pro_vdt, tx, ops, nops, &in, st));
    STEP(st, fused_tensor(c, g, ID_DY, io, d.n, d.co, d.ho, d.wo, 0, &tdy, st));
    STEP(st, fused_tensor(c, g, ID_DW, io, d.co, d.ci, d.k, d.k, 0, &tdw, st));
    STEP(st, fused_conv_op(c, g, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                           cd, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, in,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, tdy,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, tdw, &ops[(*nops)++],
                           st));
cleanup:
    return rc;
}

/* The operations of a DGRAD_DBN graph into ops (count *nops): the data gradient of ID_DY
 * by ID_W [plus ID_RES], the batch norm recomputed from tx (ID_X) and its statistics, the
 * ReLU's mask into ID_DZ, and the batch norm's weight gradients and input-gradient
 * coefficients. */
static int fused_describe_dgrad_dbn(struct cuda_ctx *c, struct fused_graph *g,
                                    const int key[FUSED_KEY_LEN], cudnnBackendDescriptor_t cd,
                                    cudnnBackendDescriptor_t tx, cudnnBackendDescriptor_t *ops,
                                    int *nops, cudnnStatus_t *st)
{
    int rc = DR_OK;
    const cudnnDataType_t io = fused_dtype((enum cuda_dtype)key[K_DT]), f32 = CUDNN_DATA_FLOAT;
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    const struct fused_dims d = fused_dims_of(key);
    cudnnBackendDescriptor_t tdy = NULL, tw = NULL, tt = NULL, tdz = NULL;
    cudnnBackendDescriptor_t tm = NULL, tv = NULL, tg = NULL, tb = NULL;
    cudnnBackendDescriptor_t v1 = NULL, v2 = NULL, v3 = NULL, v4 = NULL;
    cudnnBackendDescriptor_t out[FUSED_SMALL] = {NULL, NULL, NULL, NULL, NULL};
    cudnnBackendDescriptor_t *op = NULL;
    static const int64_t out_ids[FUSED_SMALL] = {ID_DSCALE, ID_DBIAS, ID_EQ_DY, ID_EQ_X,
                                                 ID_EQ_B};
    /* the per-channel tensors (ci): the statistics and weights in, the results out */
    const struct {
        int64_t id;
        cudnnBackendDescriptor_t *t;
    } small[] = {{ID_MEAN, &tm}, {ID_INVSTD, &tv}, {ID_GAMMA, &tg}, {ID_BETA, &tb}};
    /* the virtual (n, ci, h, w) fp32 values: centred, normalised, scaled, the batch norm */
    const struct {
        int64_t id;
        cudnnBackendDescriptor_t *t;
    } virt[] = {{ID_V_CENTRED, &v1}, {ID_V_NORMED, &v2}, {ID_V_GAMMA, &v3}, {ID_V_BN, &v4}};
    STEP(st, fused_tensor(c, g, ID_DY, io, d.n, d.co, d.ho, d.wo, 0, &tdy, st));
    STEP(st, fused_tensor(c, g, ID_W, io, d.co, d.ci, d.k, d.k, 0, &tw, st));
    STEP(st, fused_tensor(c, g, ID_V_DGRAD, f32, d.n, d.ci, d.h, d.w, 1, &tt, st));
    STEP(st, fused_conv_op(c, g, CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                           cd, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, tdy,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, tw,
                           CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, tt, &ops[(*nops)++],
                           st));
    for (size_t i = 0; i < sizeof(small) / sizeof(small[0]); i++)
        STEP(st, fused_tensor(c, g, small[i].id, f32, 1, d.ci, 1, 1, 0, small[i].t, st));
    for (size_t i = 0; i < sizeof(virt) / sizeof(virt[0]); i++)
        STEP(st, fused_tensor(c, g, virt[i].id, f32, d.n, d.ci, d.h, d.w, 1, virt[i].t, st));
    STEP(st, fused_tensor(c, g, ID_DZ, io, d.n, d.ci, d.h, d.w, 0, &tdz, st));
    for (int i = 0; i < FUSED_SMALL; i++)
        STEP(st, fused_tensor(c, g, out_ids[i], f32, 1, d.ci, 1, 1, 0, &out[i], st));
    STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_SUB, tx, tm, v1, &ops[(*nops)++], st));
    STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_MUL, v1, tv, v2, &ops[(*nops)++], st));
    STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_MUL, v2, tg, v3, &ops[(*nops)++], st));
    STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_ADD, v3, tb, v4, &ops[(*nops)++], st));
    if (key[K_RES]) {   /* the residual gradient joins the data gradient before the mask */
        cudnnBackendDescriptor_t tr = NULL, tsum = NULL;
        STEP(st, fused_tensor(c, g, ID_RES, io, d.n, d.ci, d.h, d.w, 0, &tr, st));
        STEP(st, fused_tensor(c, g, ID_V_DSUM, f32, d.n, d.ci, d.h, d.w, 1, &tsum, st));
        STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_ADD, tt, tr, tsum, &ops[(*nops)++], st));
        tt = tsum;
    }
    STEP(st, fused_pointwise(c, g, CUDNN_POINTWISE_RELU_BWD, v4, tt, tdz, &ops[(*nops)++], st));
    op = &ops[(*nops)++];
    STEP(st, fused_new(c, g, CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR, op, st));
    SET_ATTR(c, *op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1,
             &prec);
    {
        const struct {
            cudnnBackendAttributeName_t name;
            cudnnBackendDescriptor_t t;
        } attrs[] = {{CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC, tx},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC, tdz},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC, tm},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC, tv},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC, tg},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC, out[0]},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC, out[1]},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC, out[2]},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC, out[3]},
                     {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS, out[4]}};
        for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
            SET_DESC(c, *op, attrs[i].name, attrs[i].t);
    }
    PROBE_CUDNN(c, st, cudnnBackendFinalize(*op));
cleanup:
    return rc;
}

/* Describes key's graph into g: every tensor and operation, and *graph, the finalized
 * operation graph; the prologue's virtual tensors are of type pro_vdt (the others fp32).
 * A refusal from cuDNN on the way leaves its status in *st (rc DR_OK). */
static int fused_describe(struct cuda_ctx *c, struct fused_graph *g, const int key[FUSED_KEY_LEN],
                          cudnnDataType_t pro_vdt, cudnnBackendDescriptor_t *graph,
                          cudnnStatus_t *st)
{
    int rc = DR_OK;
    const cudnnDataType_t io = fused_dtype((enum cuda_dtype)key[K_DT]);
    const struct fused_dims d = fused_dims_of(key);
    cudnnBackendDescriptor_t ops[FUSED_MAX_OPS];
    int nops = 0;
    cudnnBackendDescriptor_t cd = NULL, tx = NULL;
    *graph = NULL;
    STEP(st, fused_conv_desc(c, g, key, &cd, st));
    STEP(st, fused_tensor(c, g, ID_X, io, d.n, d.ci, d.h, d.w, 0, &tx, st));
    if (key[K_KIND] == CUDA_CONV_FUSED_FWD)
        STEP(st, fused_describe_fwd(c, g, key, pro_vdt, cd, tx, ops, &nops, st));
    else if (key[K_KIND] == CUDA_CONV_FUSED_WGRAD)
        STEP(st, fused_describe_wgrad(c, g, key, pro_vdt, cd, tx, ops, &nops, st));
    else
        STEP(st, fused_describe_dgrad_dbn(c, g, key, cd, tx, ops, &nops, st));
    STEP(st, fused_new(c, g, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, graph, st));
    SET_ATTR(c, *graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, nops, ops);
    SET_ATTR(c, *graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->cudnn);
    PROBE_CUDNN(c, st, cudnnBackendFinalize(*graph));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ choosing an engine */

/* A finalized variant pack *vp for operands ids/ptrs (count) and workspace ws; NULL with
 * cuDNN's status in *st when cuDNN refuses it. */
static int fused_pack_make(struct cuda_ctx *c, const int64_t *ids, void *const *ptrs, int count,
                           void *ws, cudnnBackendDescriptor_t *vp, cudnnStatus_t *st)
{
    int rc = DR_OK;
    cudnnBackendDescriptor_t d = NULL;
    *vp = NULL;
    CHECK_CUDNN(c, cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &d));
    SET_ATTR(c, d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, count, ids);
    SET_ATTR(c, d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, count, ptrs);
    SET_ATTR(c, d, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws);
    PROBE_CUDNN(c, st, cudnnBackendFinalize(d));
    *vp = d;
    d = NULL;
cleanup:
    if (d) cudnnBackendDestroyDescriptor(d);
    return rc;
}

/* The trial's outputs for key: the large one in SLOT_TRIAL, the per-channel ones in the
 * state's small buffer (grown after waiting for the stream, which may still use it). */
static int fused_trial_outputs(struct cuda_ctx *c, struct fused_state *s,
                               const int key[FUSED_KEY_LEN], struct fused_outputs *out)
{
    int rc = DR_OK;
    const int ho = (key[K_H] + 2 * key[K_PAD] - key[K_K]) / key[K_STRIDE] + 1;
    const int wo = (key[K_W] + 2 * key[K_PAD] - key[K_K]) / key[K_STRIDE] + 1;
    const size_t es = cuda_dt_size((enum cuda_dtype)key[K_DT]);
    const int ch = key[K_CI] > key[K_CO] ? key[K_CI] : key[K_CO];
    const size_t vec = ((size_t)ch * sizeof(float) + CUDA_ALIGN - 1) / CUDA_ALIGN * CUDA_ALIGN;
    size_t big = 0;
    memset(out, 0, sizeof(*out));
    if (key[K_KIND] == CUDA_CONV_FUSED_FWD)
        big = (size_t)key[K_N] * key[K_CO] * ho * wo * es;
    else if (key[K_KIND] == CUDA_CONV_FUSED_WGRAD)
        big = (size_t)key[K_CO] * key[K_CI] * key[K_K] * key[K_K] * es;
    else
        big = (size_t)key[K_N] * key[K_CI] * key[K_H] * key[K_W] * es;
    TRY(cuda_scratch(c, SLOT_TRIAL, big, &out->big));
    if (key[K_KIND] == CUDA_CONV_FUSED_WGRAD && key[K_DT] != CUDA_F32) {
        /* grown now, while graphs are built, so that runs find it final (SLOT_FUSED_DW) */
        void *dw = NULL;
        TRY(cuda_scratch(c, SLOT_FUSED_DW, big, &dw));
    }
    if (s->small_bytes < FUSED_SMALL * vec) {
        void *p = NULL;
        CHECK_CUDA(cuda_counted_sync(c));
        if (s->small) CHECK_CUDA(cuda_counted_free(c, s->small));
        s->small = NULL;
        s->small_bytes = 0;
        if (cuda_counted_malloc(c, &p, FUSED_SMALL * vec) != cudaSuccess) {
            (void)cudaGetLastError();
            FAIL(DR_ERR_NOMEM, "out of GPU memory allocating the fused convolutions' trial "
                 "outputs (%zu bytes)", FUSED_SMALL * vec);
        }
        s->small = p;
        s->small_bytes = FUSED_SMALL * vec;
    }
    for (int i = 0; i < FUSED_SMALL; i++) out->small[i] = (float *)((char *)s->small + i * vec);
cleanup:
    return rc;
}

/* *det = 1 when the engine of configuration cfg does not carry cuDNN's
 * CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC (read on the engine CUDNN_ATTR_ENGINECFG_ENGINE
 * gives), 0 when it does or its notes cannot be read. */
static int fused_cfg_deterministic(int *det, struct cuda_ctx *c, cudnnBackendDescriptor_t cfg)
{
    int rc = DR_OK;
    cudnnBackendDescriptor_t engine = NULL;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t got = 0;
    cudnnStatus_t probe = CUDNN_STATUS_SUCCESS;
    *det = 0;
    CHECK_CUDNN(c, cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine));
    PROBE_CUDNN(c, &probe, cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got,
                                                    &engine));
    PROBE_CUDNN(c, &probe, cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                                    CUDNN_TYPE_NUMERICAL_NOTE,
                                                    CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &got,
                                                    notes));
    *det = 1;
    for (int64_t i = 0; i < got && i < CUDNN_NUMERICAL_NOTE_TYPE_COUNT; i++)
        if (notes[i] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) *det = 0;
cleanup:
    if (probe != CUDNN_STATUS_SUCCESS) cuda_clear_library_error();
    if (engine) cudnnBackendDestroyDescriptor(engine);
    return rc;
}

/* Tries engine configuration cfg for g (key set, operation graph described): its plan,
 * its workspace size, a trial execution on args' inputs into scratch outputs. On success
 * g->plan and g->ws_bytes are set; otherwise *st (cuDNN's refusal) or *why (ours) says
 * why not. */
static int fused_try_config(struct cuda_ctx *c, struct fused_state *s, struct fused_graph *g,
                            const struct cuda_conv_fused_args *args, cudnnBackendDescriptor_t cfg,
                            cudnnStatus_t *st, const char **why)
{
    int rc = DR_OK;
    cudnnBackendDescriptor_t plan = NULL, vp = NULL;
    int64_t ws_bytes = 0, got = 0, ids[FUSED_MAX_IDS];
    void *ptrs[FUSED_MAX_IDS], *ws = NULL;
    struct fused_outputs out;
    int count = 0, det = 1;
    cudnnStatus_t probe = CUDNN_STATUS_SUCCESS;
    if (c->deterministic) TRY(fused_cfg_deterministic(&det, c, cfg));
    if (!det) {
        *why = "every configuration cuDNN lists is non-deterministic";
        goto cleanup;
    }
    CHECK_CUDNN(c, cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &plan));
    SET_ATTR(c, plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &c->cudnn);
    SET_ATTR(c, plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &cfg);
    PROBE_CUDNN(c, &probe, cudnnBackendFinalize(plan));
    PROBE_CUDNN(c, &probe, cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                                    CUDNN_TYPE_INT64, 1, &got, &ws_bytes));
    if (ws_bytes < 0 || ws_bytes > FUSED_WORKSPACE_CAP) {
        *why = "every configuration that finalizes wants more than 2 GiB of workspace";
        goto cleanup;
    }
    TRY(fused_trial_outputs(c, s, g->key, &out));
    TRY(cuda_scratch(c, SLOT_FUSED_WS, (size_t)ws_bytes, &ws));
    fused_operands(c, args, g->key, &out, ids, ptrs, &count);
    TRY(fused_pack_make(c, ids, ptrs, count, ws, &vp, &probe));
    if (probe != CUDNN_STATUS_SUCCESS) goto cleanup;
    PROBE_CUDNN(c, &probe, cudnnBackendExecute(c->cudnn, plan, vp));
    CHECK_CUDA(cuda_counted_sync(c));
    g->plan = plan;
    g->ws_bytes = ws_bytes;
    plan = NULL;
cleanup:
    if (probe != CUDNN_STATUS_SUCCESS) {   /* a refusal, not an error: the next is tried */
        *st = probe;
        cuda_clear_library_error();
    }
    if (vp) cudnnBackendDestroyDescriptor(vp);
    if (plan) cudnnBackendDestroyDescriptor(plan);
    return rc;
}

/* Asks cuDNN's heuristics in mode for g's operation graph and tries their configurations
 * in order (fused_try_config) until one works; the one kept joins g's descriptors. A
 * heuristics query that fails leaves its status in *st. */
static int fused_try_mode(struct cuda_ctx *c, struct fused_state *s, struct fused_graph *g,
                          const struct cuda_conv_fused_args *args, cudnnBackendDescriptor_t graph,
                          cudnnBackendHeurMode_t mode, cudnnStatus_t *st, const char **why)
{
    int rc = DR_OK;
    cudnnBackendDescriptor_t heur = NULL, cfgs[FUSED_TRY_CONFIGS];
    int64_t count = 0, got = 0;
    int made = 0;
    cudnnStatus_t probe = CUDNN_STATUS_SUCCESS;
    CHECK_CUDNN(c, cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur));
    SET_ATTR(c, heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1,
             &graph);
    SET_ATTR(c, heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    PROBE_CUDNN(c, &probe, cudnnBackendFinalize(heur));
    /* the count first (no array), then the configurations into descriptors made for them */
    PROBE_CUDNN(c, &probe, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count,
                                                    NULL));
    /* all that are listed are counted; the first few are tried */
    if (count > 0) s->listed += (int)(count < 1 << 20 ? count : 1 << 20);
    if (count > FUSED_TRY_CONFIGS) count = FUSED_TRY_CONFIGS;
    for (; made < (int)count; made++) {
        cfgs[made] = NULL;
        CHECK_CUDNN(c, cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                                    &cfgs[made]));
    }
    if (count > 0)
        PROBE_CUDNN(c, &probe, cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                                        CUDNN_TYPE_BACKEND_DESCRIPTOR, count,
                                                        &got, cfgs));
    if (got > count) got = count;
    for (int i = 0; i < (int)got && !g->plan; i++) {
        if (fused_budget_spent(s)) {   /* the configuration before was the last one */
            s->cut = 1;
            break;
        }
        s->tried++;
        TRY(fused_try_config(c, s, g, args, cfgs[i], st, why));
        if (g->plan) {   /* the plan refers to its configuration: kept with the graph */
            EXPECT(g->n_descs < FUSED_MAX_DESCS, "fused conv: more than %d descriptors in a graph",
                   FUSED_MAX_DESCS);
            g->descs[g->n_descs++] = cfgs[i];
            cfgs[i] = NULL;
        }
    }
cleanup:
    if (probe != CUDNN_STATUS_SUCCESS) {
        *st = probe;
        cuda_clear_library_error();
    }
    for (int i = 0; i < made; i++)
        if (cfgs[i]) cudnnBackendDestroyDescriptor(cfgs[i]);
    if (heur) cudnnBackendDestroyDescriptor(heur);
    return rc;
}

/* Destroys g's variant packs, plan and descriptors. */
static void fused_graph_free(struct fused_graph *g)
{
    for (int i = 0; i < g->n_packs; i++)
        if (g->packs[i].vp) cudnnBackendDestroyDescriptor(g->packs[i].vp);
    free(g->packs);
    g->packs = NULL;
    g->n_packs = g->cap_packs = 0;
    if (g->plan) cudnnBackendDestroyDescriptor(g->plan);
    g->plan = NULL;
    for (int i = g->n_descs - 1; i >= 0; i--) cudnnBackendDestroyDescriptor(g->descs[i]);
    g->n_descs = 0;
}

/* The build budget in nanoseconds: DAWNRUN_CUDA_FUSED_BUILD_S (seconds, 0 or more), or
 * FUSED_BUILD_S_DEFAULT when it is unset, or with a note on stderr when it is not a
 * number of seconds. */
static uint64_t fused_budget_read(void)
{
    const char *v = getenv("DAWNRUN_CUDA_FUSED_BUILD_S");
    double secs = FUSED_BUILD_S_DEFAULT;
    if (v && *v) {
        char *end = NULL;
        const double x = strtod(v, &end);
        if (end != v && !*end && x >= 0.0 && x <= 1e6)
            secs = x;
        else
            dr_eprintf("dawnrun: DAWNRUN_CUDA_FUSED_BUILD_S=%s is not a number of seconds "
                       "from 0 to 1e6; building fused convolution graphs for at most %g s\n",
                       v, secs);
    }
    return (uint64_t)(secs * 1e9);
}

/* The state of c, made on first use (which reads the build budget). */
static int fused_state_of(struct cuda_ctx *c, struct fused_state **out)
{
    int rc = DR_OK;
    if (!c->fused_convs) {
        struct fused_state *s = (struct fused_state *)calloc(1, sizeof(*s));
        CHECK_ALLOC(s, "the fused convolutions' state");
        s->budget_ns = fused_budget_read();
        c->fused_convs = s;
    }
    *out = (struct fused_state *)c->fused_convs;
cleanup:
    return rc;
}

/* Finds key's graph in s: its index, or -1. */
static int fused_find(const struct fused_state *s, const int key[FUSED_KEY_LEN])
{
    for (int i = 0; i < s->n_graphs; i++)
        if (!memcmp(s->graphs[i].key, key, sizeof(s->graphs[i].key))) return i;
    return -1;
}

/* Builds key's graph (args checked, x->n > 0) and caches it, usable or refused; *index is
 * its place in s->graphs. A refusal is said once on stderr, unless cuDNN's reason is that
 * the device's architecture has no such engine; a refusal because the build budget is
 * spent is said once per context, for every key it refuses. The time it takes (error or
 * not) is spent from the budget and added to c's fused_build_ns; built and refused keys
 * are counted. An error (rc) caches nothing. */
static int fused_build(struct cuda_ctx *c, struct fused_state *s,
                       const struct cuda_conv_fused_args *args, const int key[FUSED_KEY_LEN],
                       int *index)
{
    static const cudnnBackendHeurMode_t modes[2] = {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK};
    int rc = DR_OK;
    struct fused_graph g;
    cudnnBackendDescriptor_t graph = NULL;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    const char *why = NULL;
    char shape[256], reason[320];
    int attempts = 1;
    const struct fused_support_query q = fused_query(key);
    /* a graph the documentation gives no engine for is not asked for at all (no cuDNN
     * call, no message, no cuDNN time spent from the budget: docs/cudnn-graphs.md,
     * "Support table") */
    const int unsupported = !fused_support_accepts(&q, NULL);
    s->build_t0 = cuda_now_ns();
    s->listed = s->tried = 0;
    s->cut = !unsupported && fused_budget_spent(s);   /* spent before: nothing is tried */
    memset(&g, 0, sizeof(g));
    memcpy(g.key, key, sizeof(g.key));
    if (grow_reserve(&s->graphs, &s->cap_graphs, s->n_graphs + 1, 16, sizeof(*s->graphs)) != DR_OK)
        FAIL(DR_ERR_NOMEM, "out of memory allocating the fused convolution cache");
    /* the prologue's intermediates in fp32 first; a half-precision WGRAD then tries them
     * in the compute type, as cuDNN's own scale-bias-relu-wgrad sample declares them */
    if (key[K_KIND] == CUDA_CONV_FUSED_WGRAD && key[K_PRO] && key[K_DT] != CUDA_F32)
        attempts = 2;
    if (unsupported) attempts = 0;
    for (int at = 0; at < attempts && !g.plan && !s->cut &&
                     st != CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH;
         at++) {
        const cudnnDataType_t vdt =
            at == 0 ? CUDNN_DATA_FLOAT : fused_dtype((enum cuda_dtype)key[K_DT]);
        fused_graph_free(&g);   /* the previous attempt's descriptors, if any */
        st = CUDNN_STATUS_SUCCESS;
        TRY(fused_describe(c, &g, key, vdt, &graph, &st));
        for (int m = 0; m < 2 && st == CUDNN_STATUS_SUCCESS && !g.plan && !s->cut; m++) {
            cudnnStatus_t mode_st = CUDNN_STATUS_SUCCESS;
            TRY(fused_try_mode(c, s, &g, args, graph, modes[m], &mode_st, &why));
            if (mode_st != CUDNN_STATUS_SUCCESS) why = cudnnGetErrorString(mode_st);
            if (mode_st == CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH) st = mode_st;
        }
    }
    if (unsupported) {
        /* nothing said: the support table's verdict, not cuDNN's */
    } else if (!g.plan && s->cut) {
        if (!s->budget_said) {
            fused_shape_text(shape, sizeof(shape), key);
            dr_eprintf("dawnrun: the build budget of the fused convolution graphs is spent "
                       "(%.1f s of %g s, DAWNRUN_CUDA_FUSED_BUILD_S): %s on %s and every "
                       "graph not built yet run unfused\n",
                       1e-9 * (double)(s->spent_ns + (cuda_now_ns() - s->build_t0)),
                       1e-9 * (double)s->budget_ns, fused_graph_name(key), shape);
            s->budget_said = 1;
        }
    } else if (!g.plan) {
        if (st != CUDNN_STATUS_SUCCESS) why = cudnnGetErrorString(st);
        if (!why) why = "cuDNN's heuristics list no engine configuration";
        if (s->tried < s->listed) {   /* others were listed but not tried */
            snprintf(reason, sizeof(reason), "%s; the first %d of %d configurations listed "
                     "tried", why, s->tried, s->listed);
            why = reason;
        }
        if (st != CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH) {
            fused_shape_text(shape, sizeof(shape), key);
            dr_eprintf("dawnrun: cuDNN has no fused engine for %s on %s (%s); those "
                       "convolutions run unfused\n", fused_graph_name(key), shape, why);
        }
    }
    if (!g.plan) fused_graph_free(&g);   /* a refused key keeps only its key */
    *index = s->n_graphs;
    s->graphs[s->n_graphs++] = g;
    if (g.plan)
        c->counts.fused_graphs_built++;
    else if (unsupported)
        c->counts.fused_graphs_unsupported++;
    else
        c->counts.fused_graphs_refused++;
    memset(&g, 0, sizeof(g));
cleanup:
    {   /* the time of this build, whatever its outcome */
        const uint64_t took = cuda_now_ns() - s->build_t0;
        s->spent_ns += took;
        c->counts.fused_build_ns += took;
    }
    fused_graph_free(&g);
    return rc;
}

/* The index of args' graph in c's state, built when the key is new; *s the state. */
static int fused_lookup(struct cuda_ctx *c, const struct cuda_conv_fused_args *args,
                        const int key[FUSED_KEY_LEN], struct fused_state **s, int *index)
{
    int rc = DR_OK;
    TRY(fused_state_of(c, s));
    *index = fused_find(*s, key);
    if (*index < 0) TRY(fused_build(c, *s, args, key, index));
cleanup:
    return rc;
}

/* The variant pack of g for operands ptrs (count, in g's id order ids) and workspace ws:
 * the one made before for exactly these addresses, or a new one (host-only work; when the
 * graph holds FUSED_MAX_PACKS already, the oldest is destroyed for it). */
static int fused_pack(struct cuda_ctx *c, struct fused_graph *g, const int64_t *ids,
                      void *const *ptrs, int count, void *ws, cudnnBackendDescriptor_t *vp)
{
    int rc = DR_OK;
    cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
    struct fused_pack *p = NULL;
    char shape[256];
    *vp = NULL;
    for (int i = 0; i < g->n_packs && !*vp; i++)
        if (g->packs[i].ws == ws && !memcmp(g->packs[i].ptrs, ptrs, sizeof(void *) * count))
            *vp = g->packs[i].vp;
    if (*vp) goto cleanup;
    if (g->n_packs == g->cap_packs && g->cap_packs < FUSED_MAX_PACKS &&
        grow_reserve(&g->packs, &g->cap_packs, g->n_packs + 1, 4, sizeof(*g->packs)) != DR_OK)
        FAIL(DR_ERR_NOMEM, "out of memory allocating the fused convolution's variant packs");
    if (g->n_packs < g->cap_packs) {
        p = &g->packs[g->n_packs++];
    } else {   /* full: the oldest goes (its executions, already queued, do not need it) */
        p = &g->packs[g->next_reuse];
        g->next_reuse = (g->next_reuse + 1) % g->n_packs;
        cudnnBackendDestroyDescriptor(p->vp);
    }
    memset(p, 0, sizeof(*p));
    memcpy(p->ptrs, ptrs, sizeof(void *) * count);
    p->ws = ws;
    TRY(fused_pack_make(c, ids, ptrs, count, ws, &p->vp, &st));
    if (st != CUDNN_STATUS_SUCCESS) {
        fused_shape_text(shape, sizeof(shape), g->key);
        FAIL(DR_ERR_DEVICE, "cuDNN refused the operands of the fused %s graph on %s: %s",
             fused_graph_name(g->key), shape, cudnnGetErrorString(st));
    }
    *vp = p->vp;
cleanup:
    if (rc != DR_OK && p) {   /* the slot is left empty: it matches nothing */
        memset(p->ptrs, 0, sizeof(p->ptrs));
        p->ws = (void *)(uintptr_t)1;
    }
    return rc;
}

/* The zero results of an empty batch: FWD's sums, WGRAD's dw, DGRAD_DBN's per-channel
 * outputs. */
static int fused_empty(struct cuda_ctx *c, const struct cuda_conv_fused_args *args)
{
    int rc = DR_OK;
    const size_t co = sizeof(float) * (size_t)args->w->n, ci = sizeof(float) * (size_t)args->x->c;
    if (args->kind == CUDA_CONV_FUSED_FWD) {
        if (args->sum) CHECK_CUDA(cuda_counted_memset(c, args->sum, co));
        if (args->sqsum) CHECK_CUDA(cuda_counted_memset(c, args->sqsum, co));
    } else if (args->kind == CUDA_CONV_FUSED_WGRAD) {
        CHECK_CUDA(cuda_counted_memset(c, args->dw->data, sizeof(float) * tensor_count(args->dw)));
    } else {
        float *const outs[FUSED_SMALL] = {args->dscale, args->dbias, args->eq_dy, args->eq_x,
                                          args->eq_b};
        for (int i = 0; i < FUSED_SMALL; i++) CHECK_CUDA(cuda_counted_memset(c, outs[i], ci));
    }
cleanup:
    return rc;
}

/* Whether every operand address of args (outputs: args' own; WGRAD's dw as the caller
 * gave it) is FUSED_ALIGN-aligned. */
static int fused_args_aligned(const struct cuda_ctx *c, const struct cuda_conv_fused_args *args,
                              const int key[FUSED_KEY_LEN])
{
    struct fused_outputs out;
    int64_t ids[FUSED_MAX_IDS];
    void *ptrs[FUSED_MAX_IDS];
    int count = 0;
    memset(&out, 0, sizeof(out));
    if (args->kind == CUDA_CONV_FUSED_FWD) {
        out.big = args->y->data;
        out.small[0] = args->sum;
        out.small[1] = args->sqsum;
    } else if (args->kind == CUDA_CONV_FUSED_WGRAD) {
        out.big = args->dw->data;
    } else {
        float *const s[FUSED_SMALL] = {args->dscale, args->dbias, args->eq_dy, args->eq_x,
                                       args->eq_b};
        out.big = args->dz->data;
        memcpy(out.small, s, sizeof(s));
    }
    fused_operands(c, args, key, &out, ids, ptrs, &count);
    return fused_aligned(ptrs, count);
}

/* What cuda_conv_fused_usable (build 1) and cuda_conv_fused_plausible (build 0) answer
 * for args, as they say; build 0 builds nothing and calls no cuDNN function. The rc of an
 * error is returned negated (dr_status values are positive), so that it cannot be read as
 * 1. */
static int fused_answer(struct cuda_ctx *c, const struct cuda_conv_fused_args *args, int build)
{
    int rc = DR_OK, yes = 0;
    int ho = 0, wo = 0, key[FUSED_KEY_LEN], index = -1;
    struct fused_support_query q;
    struct fused_state *s = NULL;
    TRY(fused_check(args, &ho, &wo));
    if (args->x->n == 0) {   /* nothing to build: run() writes the zeros */
        yes = 1;
        goto cleanup;
    }
    fused_key(key, c, args);
    /* cuDNN's tensors are declared 16-byte aligned: other addresses run unfused */
    if (!fused_args_aligned(c, args, key)) goto cleanup;
    q = fused_query(key);
    TRY(fused_state_of(c, &s));
    index = fused_find(s, key);
    if (build || (index < 0 && !fused_support_accepts(&q, NULL))) {
        /* built now when new (a graph the support table refuses is only remembered as
         * such and counted, without a cuDNN call: fused_build) */
        if (build) TRY(cuda_enter(c));
        TRY(fused_lookup(c, args, key, &s, &index));
    }
    yes = index < 0 || s->graphs[index].plan != NULL;
cleanup:
    return rc != DR_OK ? -rc : yes;
}

int cuda_conv_fused_usable(struct cuda_ctx *c, const struct cuda_conv_fused_args *args)
{
    return fused_answer(c, args, 1);
}

int cuda_conv_fused_plausible(struct cuda_ctx *c, const struct cuda_conv_fused_args *args)
{
    return fused_answer(c, args, 0);
}

int cuda_conv_fused_run(struct cuda_ctx *c, const struct cuda_conv_fused_args *args)
{
    int rc = DR_OK;
    int ho = 0, wo = 0, key[FUSED_KEY_LEN], index = -1, count = 0;
    struct fused_state *s = NULL;
    struct fused_graph *g = NULL;
    struct fused_outputs out;
    int64_t ids[FUSED_MAX_IDS];
    void *ptrs[FUSED_MAX_IDS], *ws = NULL;
    cudnnBackendDescriptor_t vp = NULL;
    char shape[256];
    TRY(fused_check(args, &ho, &wo));
    TRY(cuda_enter(c));
    if (args->x->n == 0) {
        TRY(fused_empty(c, args));
        goto cleanup;
    }
    fused_key(key, c, args);
    TRY(fused_lookup(c, args, key, &s, &index));
    g = &s->graphs[index];
    if (!g->plan) {
        fused_shape_text(shape, sizeof(shape), key);
        FAIL(DR_ERR_DEVICE, "cuDNN has no fused engine for %s on %s", fused_graph_name(key),
             shape);
    }
    memset(&out, 0, sizeof(out));
    if (args->kind == CUDA_CONV_FUSED_FWD) {
        out.big = args->y->data;
        out.small[0] = args->sum;
        out.small[1] = args->sqsum;
    } else if (args->kind == CUDA_CONV_FUSED_WGRAD) {
        /* half precisions: the compute-type gradient first, widened into dw below */
        if (c->dt == CUDA_F32)
            out.big = args->dw->data;
        else
            TRY(cuda_scratch(c, SLOT_FUSED_DW, tensor_count(args->dw) * cuda_dt_size(c->dt),
                             &out.big));
    } else {
        float *const sm[FUSED_SMALL] = {args->dscale, args->dbias, args->eq_dy, args->eq_x,
                                        args->eq_b};
        out.big = args->dz->data;
        memcpy(out.small, sm, sizeof(sm));
    }
    fused_operands(c, args, key, &out, ids, ptrs, &count);
    if (!fused_aligned(ptrs, count)) {
        fused_shape_text(shape, sizeof(shape), key);
        FAIL(DR_ERR_INTERNAL, "fused %s on %s: an operand is not 16-byte aligned",
             fused_graph_name(key), shape);
    }
    TRY(cuda_scratch(c, SLOT_FUSED_WS, (size_t)g->ws_bytes, &ws));
    TRY(fused_pack(c, g, ids, ptrs, count, ws, &vp));
    CHECK_CUDNN(c, cudnnBackendExecute(c->cudnn, g->plan, vp));
    if (args->kind == CUDA_CONV_FUSED_WGRAD && out.big != args->dw->data)
        TRY(cuda_to_fp32(c, (float *)args->dw->data, out.big, tensor_count(args->dw)));
cleanup:
    return rc;
}

void cuda_conv_fused_release(struct cuda_ctx *c)
{
    struct fused_state *s = (struct fused_state *)c->fused_convs;
    if (!s) return;
    for (int i = 0; i < s->n_graphs; i++) fused_graph_free(&s->graphs[i]);
    free(s->graphs);
    if (s->small) cuda_counted_free(c, s->small);
    free(s);
    c->fused_convs = NULL;
}

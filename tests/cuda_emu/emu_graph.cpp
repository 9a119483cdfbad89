/* Host emulation (see run.sh): cuDNN's backend graph API for the three fused convolution
 * patterns the engine builds (kernels/cuda/conv_fused_cuda.h), computed on the host in
 * fp32 with double sums.
 *
 * Descriptors (cudnnBackendCreateDescriptor) hold their attributes as set; a set checks
 * the attribute belongs to the descriptor's type and has the attribute type and element
 * count real cuDNN expects for it (CUDNN_STATUS_BAD_PARAM and one line on stderr naming
 * the attribute otherwise), and a set on a finalized descriptor is refused with
 * CUDNN_STATUS_NOT_SUPPORTED, as in cuDNN. A descriptor set as another's attribute is
 * copied then (it must be finalized), so destroying it afterwards is harmless.
 * Finalize validates: the required attributes are present; tensors have matching
 * dimension and stride counts, positive dimensions and strides that do not overlap, a
 * known data type and a power-of-two byte alignment; operations have operands of
 * consistent shapes (convolution output sizes from stride, padding and dilation;
 * pointwise operands equal or broadcast per dimension; per-channel statistics (1, c, 1, 1));
 * operation graphs have no two different tensors under one unique id, no tensor written
 * twice, every virtual tensor both written and read, no cycle, and their operations
 * connected into one graph.
 *
 * Supported graphs. An operation graph that passes those checks finalizes; it gets
 * engines only when it is one of (all activations NHWC-packed in fp32, fp16 or bf16,
 * virtual tensors fp32 (the prologue's may also be fp16 or bf16, as in cuDNN's wgrad
 * sample), per-channel tensors (1, c, 1, 1), fp32 compute, alphas 1, betas 0):
 *   FWD        [MUL(x, scale) -> ADD(bias) -> RELU_FWD ->] CONV_FWD(w) -> y
 *              [-> ADD(r) -> y, r an activation of y's shape or MUL(r, scale) ->
 *              ADD(bias) -> RELU_FWD of one] [, GEN_STATS(y) -> sum, sqsum (fp32)];
 *   WGRAD      [MUL(x, scale) -> ADD(bias) -> RELU_FWD ->] CONV_BWD_FILTER(dy) -> dw;
 *   DGRAD_DBN  CONV_BWD_DATA(dy, w) -> t [-> ADD(res) -> t, res an activation of t's
 *              shape]; SUB(x, mean) -> MUL(invstd) -> MUL(gamma) -> ADD(beta) -> xbn;
 *              RELU_BWD(dy t, x xbn) -> dz; BN_BWD_WEIGHTS(dy dz, x, mean, invstd, gamma)
 *              -> dscale, dbias, eq_dy, eq_x, eq_b (fp32).
 * and then only when the support table (kernels/cuda/fused_support.h, docs/cudnn-graphs.md
 * "Support table": what NVIDIA documents cuDNN 9 to run on compute capability 9.0, and
 * "refused" where the documentation is silent) accepts the graph in its data type, stride
 * and channel counts; a dilated convolution is refused (no pattern documents one).
 * Any other graph finalizes with CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT 0 and its
 * heuristics finalize and return no engine configuration. (Real cuDNN, as far as its
 * documentation and frontend tell, also finalizes a well-formed graph no engine serves
 * and refuses it later, at heuristics or at plan finalize; a caller must treat a
 * heuristics failure, zero configurations and plans that all fail alike.) A supported
 * graph has three engines, and heuristics (every mode) list them in order: engine 0's
 * execution plan fails to finalize (CUDNN_STATUS_NOT_SUPPORTED, as a runtime-compiled
 * kernel sometimes does); engines 1 and 2 finalize with a workspace of
 * EMU_GRAPH_WORKSPACE bytes; so a caller's loop over the configurations and its workspace
 * are exercised. An engine's numerical notes (CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, read on
 * the engine a configuration's CUDNN_ATTR_ENGINECFG_ENGINE gives) are TENSOR_CORE, and
 * for engine 1 NONDETERMINISTIC too: its executions move each convolution output's sum by
 * one fp32 ulp up or down with probability 1/2 before rounding (emu_atomic_noise, emu.h),
 * so that a caller wanting the same bits every run must skip it for engine 2.
 * Engine 0's refused plan, like any refused execution, also leaves
 * cudaErrorInvalidConfiguration as the runtime's last error, as a kernel launch cuDNN
 * attempted and the GPU refused would (cuDNN's documentation does not promise a clean
 * error state after a failed call; the caller clears it: emu_set_last_error, emu.h).
 * DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1 (any value but "" or "0", read at operation graph
 * finalize) gives every graph zero engines, for the caller's fallback to unfused
 * operations. DAWNRUN_EMU_CUDNN_FUSED_ENGINES=N (2 to 64, read at operation graph
 * finalize) gives a supported graph N engines instead of three, every plan but the last
 * one's refusing to finalize (and none non-deterministic): for a caller's cap on the
 * configurations it tries.
 *
 * Compile time. Real cuDNN compiles a runtime-fusion kernel when an execution plan is
 * finalized (about 1.5 s each). DAWNRUN_EMU_CUDNN_FINALIZE_MS=N (default 0, read at each
 * finalize) makes every execution-plan finalize sleep N ms (a real sleep, before it
 * succeeds or refuses), so that a caller's time limits can be rehearsed; every one of a
 * supported graph's plans tried takes it. emu_cudnn_plan_finalizes() (emu.h) counts the
 * execution-plan finalizes, and at exit, when the variable is set, one stderr line says
 * how many there were.
 *
 * Execution (cudnnBackendExecute) checks the plan was built on that handle, every
 * non-virtual tensor of the graph has a non-NULL pointer in the variant pack aligned to
 * its byte alignment, and a workspace is given when the plan needs one; then it enqueues
 * the computation on the handle's stream (emu_enqueue: run now, or recorded by a capture
 * with the pointers copied). The computation: operations in dependency order, each
 * result rounded to its tensor's data type (virtual ones fp32); pointwise operations in
 * fp32 (y = op(alpha1 x, alpha2 b); RELU_FWD clamps x to [lower clip, upper clip], 0 and
 * +inf unless set; RELU_BWD is lower < x < upper ? dy : 0); convolutions (NHWC / KRSC
 * through the strides; stride, padding, dilation) and sums in double; GEN_STATS: the sum
 * and the sum of squares over (n, h, w) of its input as stored; BN_BWD_WEIGHTS with
 * N = n h w: dscale = sum dz (x - mean) invstd, dbias = sum dz, eq_dy = gamma invstd,
 * eq_x = -eq_dy invstd dscale / N, eq_b = -eq_dy dbias / N - eq_x mean (fp32 results).
 * The workspace is scribbled over. With DAWNRUN_EMU_COUNT_ONLY (emu.h) the execution is
 * checked and enqueued, and computes nothing. */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <vector>

#include "emu.h"
#include "fused_support.h"
#include "include/cudnn.h"

#define EMU_GRAPH_WORKSPACE 1024 /* bytes, every usable plan */
#define EMU_GRAPH_ENGINES   3    /* per supported graph: engine 0's plan refuses, engine 1
                                    is non-deterministic, engine 2 deterministic (see
                                    DAWNRUN_EMU_CUDNN_FUSED_ENGINES for other counts) */
#define EMU_GRAPH_ENGINES_MAX 64
#define EMU_MAX_DIMS        8

struct emu_bd;
typedef std::shared_ptr<const emu_bd> emu_ref;

struct emu_attr {
    int type;
    int64_t count;
    std::vector<unsigned char> raw; /* count elements of the type (not descriptors) */
    std::vector<emu_ref> refs;      /* CUDNN_TYPE_BACKEND_DESCRIPTOR: copies */
};

enum emu_pattern { EMU_PAT_NONE, EMU_PAT_FWD, EMU_PAT_WGRAD, EMU_PAT_DGRAD_DBN };

struct emu_bd {
    int type;
    bool finalized;
    std::map<int, emu_attr> attrs;
    /* set by finalize */
    int pattern;            /* operation graph */
    int64_t engines;        /* operation graph: engine count */
    int64_t refusing;       /* operation graph: its first engines whose plans refuse */
    std::vector<int> order; /* operation graph: ops in dependency order */
    int64_t workspace;      /* engine configuration, plan */
};

static std::set<const emu_bd *> emu_live; /* descriptors created and not destroyed */

/* ------------------------------------------------------------------ attribute table */

struct emu_spec {
    int desc, attr;
    const char *name;
    int type, type2; /* type2: an alternative (FLOAT / DOUBLE), or -1 */
    int64_t lo, hi;  /* element count range */
    int ref;         /* descriptors: the type referenced, -2 any operation, -1 any */
};

#define D_T          CUDNN_BACKEND_TENSOR_DESCRIPTOR
#define D_CONV       CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR
#define D_PW         CUDNN_BACKEND_POINTWISE_DESCRIPTOR
#define D_FWD        CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR
#define D_BWD_DATA   CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR
#define D_BWD_FILTER CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR
#define D_OPW        CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR
#define D_GS         CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR
#define D_BNW        CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR
#define D_GRAPH      CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR
#define D_HEUR       CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR
#define D_CFG        CUDNN_BACKEND_ENGINECFG_DESCRIPTOR
#define D_ENGINE     CUDNN_BACKEND_ENGINE_DESCRIPTOR
#define D_PLAN       CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR
#define D_PACK       CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR
#define T_BD         CUDNN_TYPE_BACKEND_DESCRIPTOR
#define SPEC(d, a, t, t2, lo, hi, ref) {d, a, #a, t, t2, lo, hi, ref}
#define SCALAR(d, a, t) SPEC(d, a, t, -1, 1, 1, -1)
#define REAL(d, a)      SPEC(d, a, CUDNN_TYPE_FLOAT, CUDNN_TYPE_DOUBLE, 1, 1, -1)
#define DESC(d, a, r)   SPEC(d, a, T_BD, -1, 1, 1, r)

static const emu_spec emu_specs[] = {
    SCALAR(D_T, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE),
    SPEC(D_T, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, -1, 1, EMU_MAX_DIMS, -1),
    SPEC(D_T, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, -1, 1, EMU_MAX_DIMS, -1),
    SCALAR(D_T, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64),
    SCALAR(D_T, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64),
    SCALAR(D_T, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN),

    SCALAR(D_CONV, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE),
    SCALAR(D_CONV, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE),
    SCALAR(D_CONV, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64),
    SPEC(D_CONV, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, -1, 1, 3, -1),
    SPEC(D_CONV, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, -1, 1, 3, -1),
    SPEC(D_CONV, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, -1, 1, 3, -1),
    SPEC(D_CONV, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, -1, 1, 3, -1),

    SCALAR(D_PW, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE),
    SCALAR(D_PW, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE),
    REAL(D_PW, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP),
    REAL(D_PW, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP),

    REAL(D_FWD, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA),
    REAL(D_FWD, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA),
    DESC(D_FWD, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, D_CONV),
    DESC(D_FWD, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, D_T),
    DESC(D_FWD, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, D_T),
    DESC(D_FWD, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, D_T),
    REAL(D_BWD_DATA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA),
    REAL(D_BWD_DATA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA),
    DESC(D_BWD_DATA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, D_CONV),
    DESC(D_BWD_DATA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, D_T),
    DESC(D_BWD_DATA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, D_T),
    DESC(D_BWD_DATA, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, D_T),
    REAL(D_BWD_FILTER, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA),
    REAL(D_BWD_FILTER, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA),
    DESC(D_BWD_FILTER, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, D_CONV),
    DESC(D_BWD_FILTER, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, D_T),
    DESC(D_BWD_FILTER, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, D_T),
    DESC(D_BWD_FILTER, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, D_T),

    DESC(D_OPW, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, D_PW),
    DESC(D_OPW, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, D_T),
    DESC(D_OPW, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, D_T),
    DESC(D_OPW, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, D_T),
    DESC(D_OPW, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, D_T),
    DESC(D_OPW, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, D_T),
    REAL(D_OPW, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1),
    REAL(D_OPW, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2),

    SCALAR(D_GS, CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_TYPE_GENSTATS_MODE),
    SCALAR(D_GS, CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC, CUDNN_TYPE_DATA_TYPE),
    DESC(D_GS, CUDNN_ATTR_OPERATION_GENSTATS_XDESC, D_T),
    DESC(D_GS, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC, D_T),
    DESC(D_GS, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC, D_T),

    SCALAR(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC, CUDNN_TYPE_DATA_TYPE),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC, D_T),
    DESC(D_BNW, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS, D_T),

    SCALAR(D_GRAPH, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE),
    SPEC(D_GRAPH, CUDNN_ATTR_OPERATIONGRAPH_OPS, T_BD, -1, 1, 64, -2),
    SCALAR(D_GRAPH, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64),

    DESC(D_HEUR, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, D_GRAPH),
    SCALAR(D_HEUR, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE),
    SPEC(D_HEUR, CUDNN_ATTR_ENGINEHEUR_RESULTS, T_BD, -1, 0, 1 << 20, D_CFG),

    DESC(D_CFG, CUDNN_ATTR_ENGINECFG_ENGINE, D_ENGINE),
    SCALAR(D_CFG, CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE, CUDNN_TYPE_INT64),

    DESC(D_ENGINE, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, D_GRAPH),
    SCALAR(D_ENGINE, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64),
    SPEC(D_ENGINE, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE, -1, 0,
         CUDNN_NUMERICAL_NOTE_TYPE_COUNT, -1),

    SCALAR(D_PLAN, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE),
    DESC(D_PLAN, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, D_CFG),
    SCALAR(D_PLAN, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64),

    SPEC(D_PACK, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, -1, 0, 1 << 20, -1),
    SPEC(D_PACK, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, -1, 0, 1 << 20, -1),
    SCALAR(D_PACK, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR),
};

/* Attributes only cuDNN writes (read with get, refused by set). */
static int emu_read_only(int attr)
{
    return attr == CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT ||
           attr == CUDNN_ATTR_ENGINEHEUR_RESULTS || attr == CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE ||
           attr == CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE ||
           attr == CUDNN_ATTR_ENGINE_NUMERICAL_NOTE;
}

static const emu_spec *emu_find_spec(int desc, int attr)
{
    for (const emu_spec &s : emu_specs)
        if (s.desc == desc && s.attr == attr) return &s;
    return NULL;
}

/* Bytes of one element of attribute type t (0 for descriptors and unknown types). */
static size_t emu_elem_size(int t)
{
    switch (t) {
    case CUDNN_TYPE_HANDLE: return sizeof(cudnnHandle_t);
    case CUDNN_TYPE_DATA_TYPE: return sizeof(cudnnDataType_t);
    case CUDNN_TYPE_BOOLEAN: return sizeof(bool);
    case CUDNN_TYPE_INT64: return sizeof(int64_t);
    case CUDNN_TYPE_FLOAT: return sizeof(float);
    case CUDNN_TYPE_DOUBLE: return sizeof(double);
    case CUDNN_TYPE_VOID_PTR: return sizeof(void *);
    case CUDNN_TYPE_CONVOLUTION_MODE: return sizeof(cudnnConvolutionMode_t);
    case CUDNN_TYPE_HEUR_MODE: return sizeof(cudnnBackendHeurMode_t);
    case CUDNN_TYPE_POINTWISE_MODE: return sizeof(cudnnPointwiseMode_t);
    case CUDNN_TYPE_GENSTATS_MODE: return sizeof(cudnnGenStatsMode_t);
    case CUDNN_TYPE_INT32: return sizeof(int32_t);
    case CUDNN_TYPE_NUMERICAL_NOTE: return sizeof(cudnnBackendNumericalNote_t);
    default: return 0;
    }
}

static cudnnStatus_t emu_note(cudnnStatus_t s, const char *what, const char *name)
{
    fprintf(stderr, "emu cuDNN backend: %s%s%s\n", what, name ? ": " : "", name ? name : "");
    return s;
}

/* d as a live descriptor, or NULL. */
static emu_bd *emu_desc(cudnnBackendDescriptor_t d)
{
    emu_bd *b = (emu_bd *)d;
    return d && emu_live.count(b) ? b : NULL;
}

/* ------------------------------------------------------------------ attribute readers */

static const emu_attr *emu_get_attr(const emu_bd *b, int attr)
{
    auto it = b->attrs.find(attr);
    return it == b->attrs.end() ? NULL : &it->second;
}

static int64_t emu_i64(const emu_bd *b, int attr, int64_t dflt)
{
    const emu_attr *a = emu_get_attr(b, attr);
    int64_t v = dflt;
    if (a && a->count >= 1) memcpy(&v, a->raw.data(), sizeof(v));
    return v;
}

static std::vector<int64_t> emu_i64s(const emu_bd *b, int attr)
{
    const emu_attr *a = emu_get_attr(b, attr);
    std::vector<int64_t> v;
    if (a) {
        v.resize((size_t)a->count);
        if (a->count) memcpy(v.data(), a->raw.data(), (size_t)a->count * sizeof(int64_t));
    }
    return v;
}

/* A 4-byte enum attribute (data type, modes). */
static int emu_enum(const emu_bd *b, int attr, int dflt)
{
    const emu_attr *a = emu_get_attr(b, attr);
    int v = dflt;
    if (a && a->count >= 1) memcpy(&v, a->raw.data(), sizeof(v));
    return v;
}

static double emu_real(const emu_bd *b, int attr, double dflt)
{
    const emu_attr *a = emu_get_attr(b, attr);
    if (!a || a->count < 1) return dflt;
    if (a->type == CUDNN_TYPE_FLOAT) {
        float f;
        memcpy(&f, a->raw.data(), sizeof(f));
        return f;
    }
    double v;
    memcpy(&v, a->raw.data(), sizeof(v));
    return v;
}

static const emu_bd *emu_ref_of(const emu_bd *b, int attr)
{
    const emu_attr *a = emu_get_attr(b, attr);
    return a && !a->refs.empty() ? a->refs[0].get() : NULL;
}

static void *emu_ptr(const emu_bd *b, int attr)
{
    const emu_attr *a = emu_get_attr(b, attr);
    void *p = NULL;
    if (a && a->count >= 1) memcpy(&p, a->raw.data(), sizeof(p));
    return p;
}

/* ------------------------------------------------------------------ tensors */

struct emu_tensor {
    int64_t uid;
    int dt;
    bool virt;
    int64_t align;
    std::vector<int64_t> dims, strides;
};

static emu_tensor emu_tensor_of(const emu_bd *t)
{
    emu_tensor r;
    r.uid = emu_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 0);
    r.dt = emu_enum(t, CUDNN_ATTR_TENSOR_DATA_TYPE, -1);
    const emu_attr *v = emu_get_attr(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
    r.virt = v && v->raw[0];
    r.align = emu_i64(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 0);
    r.dims = emu_i64s(t, CUDNN_ATTR_TENSOR_DIMENSIONS);
    r.strides = emu_i64s(t, CUDNN_ATTR_TENSOR_STRIDES);
    return r;
}

static size_t emu_numel(const emu_tensor &t)
{
    size_t n = 1;
    for (int64_t d : t.dims) n *= (size_t)d;
    return n;
}

static size_t emu_dt_size(int dt)
{
    switch (dt) {
    case CUDNN_DATA_FLOAT: return 4;
    case CUDNN_DATA_HALF:
    case CUDNN_DATA_BFLOAT16: return 2;
    case 1:
    case 10: return 8; /* CUDNN_DATA_DOUBLE, CUDNN_DATA_INT64 */
    case 3:
    case 6:
    case 11: return 1; /* INT8, UINT8, BOOLEAN */
    case 4: return 4;  /* INT32 */
    default: return 0;
    }
}

static bool emu_computed_dt(int dt)
{
    return dt == CUDNN_DATA_FLOAT || dt == CUDNN_DATA_HALF || dt == CUDNN_DATA_BFLOAT16;
}

static double emu_round(int dt, double v)
{
    if (dt == CUDNN_DATA_HALF) return __half2float(__float2half_rn((float)v));
    if (dt == CUDNN_DATA_BFLOAT16) return __bfloat162float(__float2bfloat16_rn((float)v));
    return (float)v;
}

static cudnnStatus_t emu_finalize_tensor(const emu_bd *b)
{
    const emu_tensor t = emu_tensor_of(b);
    if (t.dims.size() != t.strides.size())
        return emu_note(CUDNN_STATUS_BAD_PARAM, "tensor: dimension and stride counts differ", NULL);
    if (!emu_dt_size(t.dt))
        return emu_note(CUDNN_STATUS_BAD_PARAM, "tensor: unknown data type", NULL);
    if (t.align <= 0 || (t.align & (t.align - 1)))
        return emu_note(CUDNN_STATUS_BAD_PARAM, "tensor: byte alignment not a power of two",
                        "CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT");
    std::vector<size_t> idx;
    for (size_t i = 0; i < t.dims.size(); i++) {
        if (t.dims[i] <= 0 || t.strides[i] <= 0)
            return emu_note(CUDNN_STATUS_BAD_PARAM, "tensor: dimension or stride not positive",
                            NULL);
        if (t.dims[i] > 1) idx.push_back(i);
    }
    /* no two elements at one address: each stride covers the dimensions below it */
    std::sort(idx.begin(), idx.end(),
              [&](size_t a, size_t c) { return t.strides[a] < t.strides[c]; });
    int64_t span = 1;
    for (size_t i : idx) {
        if (t.strides[i] < span)
            return emu_note(CUDNN_STATUS_BAD_PARAM, "tensor: strides overlap", NULL);
        span = t.strides[i] * t.dims[i];
    }
    return CUDNN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ operations */

/* The tensors an operation reads and writes (copies of the descriptors it holds). */
struct emu_io {
    std::vector<std::pair<int, const emu_bd *>> in, out; /* (attribute, tensor) */
};

static int emu_pw_mode(const emu_bd *op)
{
    const emu_bd *pw = emu_ref_of(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
    return pw ? emu_enum(pw, CUDNN_ATTR_POINTWISE_MODE, -1) : -1;
}

static bool emu_pw_binary(int mode)
{
    return mode == CUDNN_POINTWISE_ADD || mode == CUDNN_POINTWISE_MUL ||
           mode == CUDNN_POINTWISE_SUB;
}

static emu_io emu_io_of(const emu_bd *op)
{
    emu_io io;
    auto in = [&](int a) {
        if (const emu_bd *t = emu_ref_of(op, a)) io.in.push_back({a, t});
    };
    auto out = [&](int a) {
        if (const emu_bd *t = emu_ref_of(op, a)) io.out.push_back({a, t});
    };
    switch (op->type) {
    case D_FWD:
        in(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X);
        in(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W);
        out(CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y);
        break;
    case D_BWD_DATA:
        in(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY);
        in(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W);
        out(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX);
        break;
    case D_BWD_FILTER:
        in(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X);
        in(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY);
        out(CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW);
        break;
    case D_OPW:
        in(CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        if (emu_pw_mode(op) == CUDNN_POINTWISE_RELU_BWD) {
            in(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC);
            out(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC);
        } else {
            if (emu_pw_binary(emu_pw_mode(op))) in(CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
            out(CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
        }
        break;
    case D_GS:
        in(CUDNN_ATTR_OPERATION_GENSTATS_XDESC);
        out(CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC);
        out(CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC);
        break;
    case D_BNW:
        in(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC);
        in(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC);
        in(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC);
        in(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC);
        in(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC);
        out(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC);
        out(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC);
        out(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC);
        out(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC);
        out(CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS);
        break;
    }
    return io;
}

/* The attributes finalize requires of b (the pointwise operation's depend on its mode). */
static std::vector<int> emu_required(const emu_bd *b)
{
    switch (b->type) {
    case D_T:
        return {CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_ATTR_TENSOR_DIMENSIONS,
                CUDNN_ATTR_TENSOR_STRIDES, CUDNN_ATTR_TENSOR_UNIQUE_ID,
                CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT};
    case D_CONV:
        return {CUDNN_ATTR_CONVOLUTION_COMP_TYPE,      CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS,   CUDNN_ATTR_CONVOLUTION_DILATIONS,
                CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS,
                CUDNN_ATTR_CONVOLUTION_POST_PADDINGS};
    case D_PW: return {CUDNN_ATTR_POINTWISE_MODE, CUDNN_ATTR_POINTWISE_MATH_PREC};
    case D_FWD:
        return {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
    case D_BWD_DATA:
        return {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY};
    case D_BWD_FILTER:
        return {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
                CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY};
    case D_OPW: {
        std::vector<int> r = {CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_POINTWISE_XDESC};
        const int m = emu_pw_mode(b);
        if (m == CUDNN_POINTWISE_RELU_BWD) {
            r.push_back(CUDNN_ATTR_OPERATION_POINTWISE_DYDESC);
            r.push_back(CUDNN_ATTR_OPERATION_POINTWISE_DXDESC);
        } else {
            r.push_back(CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
            if (emu_pw_binary(m)) r.push_back(CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        }
        return r;
    }
    case D_GS:
        return {CUDNN_ATTR_OPERATION_GENSTATS_MODE, CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC,
                CUDNN_ATTR_OPERATION_GENSTATS_XDESC, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC,
                CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC};
    case D_BNW:
        return {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC,
                CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS};
    case D_GRAPH: return {CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_ATTR_OPERATIONGRAPH_OPS};
    case D_HEUR: return {CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_ATTR_ENGINEHEUR_MODE};
    case D_CFG: return {CUDNN_ATTR_ENGINECFG_ENGINE};
    case D_ENGINE: return {CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_ATTR_ENGINE_GLOBAL_INDEX};
    case D_PLAN: return {CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG};
    case D_PACK: return {CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS};
    }
    return {};
}

static const char *emu_attr_name(int desc, int attr)
{
    const emu_spec *s = emu_find_spec(desc, attr);
    return s ? s->name : "(unknown attribute)";
}

/* The geometry of a convolution descriptor. */
struct emu_geom {
    int64_t pre[2], post[2], stride[2], dil[2];
    int mode, comp;
};

static emu_geom emu_geom_of(const emu_bd *conv)
{
    emu_geom g;
    const std::vector<int64_t> pre = emu_i64s(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS),
                               post = emu_i64s(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS),
                               st = emu_i64s(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES),
                               dil = emu_i64s(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS);
    for (int i = 0; i < 2; i++) {
        g.pre[i] = pre[i];
        g.post[i] = post[i];
        g.stride[i] = st[i];
        g.dil[i] = dil[i];
    }
    g.mode = emu_enum(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, -1);
    g.comp = emu_enum(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, -1);
    return g;
}

static cudnnStatus_t emu_finalize_conv(const emu_bd *b)
{
    const int64_t nd = emu_i64(b, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 0);
    if (nd != 2)
        return emu_note(CUDNN_STATUS_NOT_SUPPORTED,
                        "convolution: only 2 spatial dimensions emulated",
                        "CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS");
    static const int arrays[4] = {
        CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS,
        CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_ATTR_CONVOLUTION_DILATIONS};
    for (int i = 0; i < 4; i++) {
        const std::vector<int64_t> v = emu_i64s(b, arrays[i]);
        if ((int64_t)v.size() != nd)
            return emu_note(CUDNN_STATUS_BAD_PARAM, "convolution: count differs from spatial dims",
                            emu_attr_name(D_CONV, arrays[i]));
        for (int64_t x : v)
            if (x < (i < 2 ? 0 : 1))
                return emu_note(CUDNN_STATUS_BAD_PARAM, "convolution: value out of range",
                                emu_attr_name(D_CONV, arrays[i]));
    }
    const int mode = emu_enum(b, CUDNN_ATTR_CONVOLUTION_CONV_MODE, -1);
    if (mode != CUDNN_CONVOLUTION && mode != CUDNN_CROSS_CORRELATION)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "convolution: unknown mode",
                        "CUDNN_ATTR_CONVOLUTION_CONV_MODE");
    if (!emu_dt_size(emu_enum(b, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, -1)))
        return emu_note(CUDNN_STATUS_BAD_PARAM, "convolution: unknown compute type",
                        "CUDNN_ATTR_CONVOLUTION_COMP_TYPE");
    return CUDNN_STATUS_SUCCESS;
}

/* Output size of one spatial dimension. */
static int64_t emu_out_size(int64_t in, int64_t k, int64_t pre, int64_t post, int64_t st,
                            int64_t dil)
{
    return (in + pre + post - ((k - 1) * dil + 1)) / st + 1;
}

static void emu_dims_str(char *buf, size_t n, const emu_tensor &t)
{
    size_t o = (size_t)snprintf(buf, n, "(");
    for (size_t i = 0; i < t.dims.size() && o < n; i++)
        o += (size_t)snprintf(buf + o, n - o, "%s%lld", i ? ", " : "", (long long)t.dims[i]);
    if (o < n) snprintf(buf + o, n - o, ")");
}

static cudnnStatus_t emu_shape_note(const char *what, const emu_tensor &a, const emu_tensor &b,
                                    const emu_tensor *c)
{
    char sa[96], sb[96], sc[96] = "";
    emu_dims_str(sa, sizeof(sa), a);
    emu_dims_str(sb, sizeof(sb), b);
    if (c) emu_dims_str(sc, sizeof(sc), *c);
    fprintf(stderr, "emu cuDNN backend: %s: shapes %s %s %s\n", what, sa, sb, sc);
    return CUDNN_STATUS_BAD_PARAM;
}

/* x (n, c, h, w), w (k, c, r, s), y (n, k, ho, wo) consistent with conv's geometry. */
static cudnnStatus_t emu_check_conv_shapes(const char *what, const emu_bd *conv, const emu_bd *xb,
                                           const emu_bd *wb, const emu_bd *yb)
{
    const emu_tensor x = emu_tensor_of(xb), w = emu_tensor_of(wb), y = emu_tensor_of(yb);
    if (x.dims.size() != 4 || w.dims.size() != 4 || y.dims.size() != 4)
        return emu_shape_note(what, x, w, &y);
    const emu_geom g = emu_geom_of(conv);
    const int64_t ho =
        emu_out_size(x.dims[2], w.dims[2], g.pre[0], g.post[0], g.stride[0], g.dil[0]);
    const int64_t wo =
        emu_out_size(x.dims[3], w.dims[3], g.pre[1], g.post[1], g.stride[1], g.dil[1]);
    if (x.dims[1] != w.dims[1] || y.dims[0] != x.dims[0] || y.dims[1] != w.dims[0] ||
        y.dims[2] != ho || y.dims[3] != wo || ho < 1 || wo < 1)
        return emu_shape_note(what, x, w, &y);
    return CUDNN_STATUS_SUCCESS;
}

static bool emu_same_dims(const emu_tensor &a, const emu_tensor &b)
{
    return a.dims == b.dims;
}

/* b broadcasts to a: the same rank, each dimension equal or 1. */
static bool emu_broadcasts(const emu_tensor &b, const emu_tensor &a)
{
    if (a.dims.size() != b.dims.size()) return false;
    for (size_t i = 0; i < a.dims.size(); i++)
        if (b.dims[i] != a.dims[i] && b.dims[i] != 1) return false;
    return true;
}

/* t is (1, c, 1, 1). */
static bool emu_per_channel(const emu_tensor &t, int64_t c)
{
    return t.dims.size() == 4 && t.dims[0] == 1 && t.dims[1] == c && t.dims[2] == 1 &&
           t.dims[3] == 1;
}

static cudnnStatus_t emu_finalize_op(const emu_bd *b)
{
    switch (b->type) {
    case D_FWD:
        return emu_check_conv_shapes(
            "convolution forward",
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y));
    case D_BWD_DATA:
        return emu_check_conv_shapes(
            "convolution backward data",
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY));
    case D_BWD_FILTER:
        return emu_check_conv_shapes(
            "convolution backward filter",
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW),
            emu_ref_of(b, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY));
    case D_OPW: {
        const int m = emu_pw_mode(b);
        const emu_tensor x = emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_POINTWISE_XDESC));
        if (m == CUDNN_POINTWISE_RELU_BWD) {
            const emu_tensor dy =
                emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC));
            const emu_tensor dx =
                emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC));
            if (!emu_same_dims(x, dy) || !emu_same_dims(x, dx))
                return emu_shape_note("pointwise RELU_BWD", x, dy, &dx);
            return CUDNN_STATUS_SUCCESS;
        }
        const emu_tensor y = emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_POINTWISE_YDESC));
        if (!emu_same_dims(x, y)) return emu_shape_note("pointwise", x, y, NULL);
        if (emu_pw_binary(m)) {
            const emu_tensor bt =
                emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_POINTWISE_BDESC));
            if (!emu_broadcasts(bt, x)) return emu_shape_note("pointwise operand b", x, bt, NULL);
        }
        return CUDNN_STATUS_SUCCESS;
    }
    case D_GS: {
        if (emu_enum(b, CUDNN_ATTR_OPERATION_GENSTATS_MODE, -1) != CUDNN_GENSTATS_SUM_SQSUM)
            return emu_note(CUDNN_STATUS_BAD_PARAM, "gen stats: unknown mode",
                            "CUDNN_ATTR_OPERATION_GENSTATS_MODE");
        const emu_tensor x = emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_GENSTATS_XDESC));
        const emu_tensor s = emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC));
        const emu_tensor q = emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC));
        if (x.dims.size() != 4 || !emu_per_channel(s, x.dims[1]) || !emu_per_channel(q, x.dims[1]))
            return emu_shape_note("gen stats", x, s, &q);
        return CUDNN_STATUS_SUCCESS;
    }
    case D_BNW: {
        const emu_tensor x =
            emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC));
        const emu_tensor dy =
            emu_tensor_of(emu_ref_of(b, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC));
        if (x.dims.size() != 4 || !emu_same_dims(x, dy))
            return emu_shape_note("bn backward weights x, dy", x, dy, NULL);
        static const int vec[8] = {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC,
                                   CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC,
                                   CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC,
                                   CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC,
                                   CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC,
                                   CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC,
                                   CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC,
                                   CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS};
        for (int a : vec) {
            const emu_tensor v = emu_tensor_of(emu_ref_of(b, a));
            if (!emu_per_channel(v, x.dims[1]))
                return emu_shape_note(emu_attr_name(D_BNW, a), x, v, NULL);
        }
        return CUDNN_STATUS_SUCCESS;
    }
    }
    return CUDNN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ operation graphs */

struct emu_graph_view {
    std::vector<const emu_bd *> ops;
    std::map<int64_t, emu_tensor> tensors; /* by unique id */
    std::map<int64_t, int> producer;       /* uid -> op index */
    std::map<int64_t, std::vector<int>> consumers;
};

static emu_graph_view emu_view_of(const emu_bd *g)
{
    emu_graph_view v;
    const emu_attr *ops = emu_get_attr(g, CUDNN_ATTR_OPERATIONGRAPH_OPS);
    if (ops)
        for (const emu_ref &r : ops->refs) v.ops.push_back(r.get());
    return v;
}

static bool emu_same_tensor(const emu_tensor &a, const emu_tensor &b)
{
    return a.dt == b.dt && a.virt == b.virt && a.dims == b.dims && a.strides == b.strides &&
           a.align == b.align;
}

/* Validates g's operations as one graph; fills v (tensors, producers, consumers) and
 * order (a dependency order of the operations). */
static cudnnStatus_t emu_graph_check(const emu_bd *g, emu_graph_view &v, std::vector<int> &order)
{
    v = emu_view_of(g);
    const int n = (int)v.ops.size();
    for (int i = 0; i < n; i++) {
        const emu_io io = emu_io_of(v.ops[i]);
        std::set<int64_t> own_in;
        for (int pass = 0; pass < 2; pass++)
            for (const auto &p : pass ? io.out : io.in) {
                const emu_tensor t = emu_tensor_of(p.second);
                auto it = v.tensors.find(t.uid);
                if (it != v.tensors.end() && !emu_same_tensor(it->second, t)) {
                    fprintf(stderr,
                            "emu cuDNN backend: operation graph: unique id %lld names two "
                            "different tensors\n",
                            (long long)t.uid);
                    return CUDNN_STATUS_BAD_PARAM;
                }
                v.tensors[t.uid] = t;
                if (pass == 0) {
                    own_in.insert(t.uid);
                    v.consumers[t.uid].push_back(i);
                } else {
                    if (v.producer.count(t.uid) || own_in.count(t.uid)) {
                        fprintf(stderr,
                                "emu cuDNN backend: operation graph: tensor %lld written "
                                "twice or by its reader\n",
                                (long long)t.uid);
                        return CUDNN_STATUS_BAD_PARAM;
                    }
                    v.producer[t.uid] = i;
                }
            }
    }
    for (const auto &p : v.tensors)
        if (p.second.virt && (!v.producer.count(p.first) || !v.consumers.count(p.first))) {
            fprintf(stderr,
                    "emu cuDNN backend: operation graph: virtual tensor %lld not both "
                    "written and read\n",
                    (long long)p.first);
            return CUDNN_STATUS_BAD_PARAM;
        }
    /* connected: union of operations sharing a tensor */
    std::vector<int> root(n);
    for (int i = 0; i < n; i++) root[i] = i;
    std::function<int(int)> find = [&](int i) {
        return root[i] == i ? i : root[i] = find(root[i]);
    };
    for (const auto &p : v.tensors) {
        std::vector<int> users =
            v.consumers.count(p.first) ? v.consumers[p.first] : std::vector<int>();
        if (v.producer.count(p.first)) users.push_back(v.producer[p.first]);
        for (size_t k = 1; k < users.size(); k++) root[find(users[k])] = find(users[0]);
    }
    for (int i = 1; i < n; i++)
        if (find(i) != find(0))
            return emu_note(CUDNN_STATUS_BAD_PARAM, "operation graph: operations not connected",
                            NULL);
    /* dependency order (Kahn) */
    std::vector<int> indeg(n, 0);
    for (int i = 0; i < n; i++)
        for (const auto &p : emu_io_of(v.ops[i]).in)
            if (v.producer.count(emu_tensor_of(p.second).uid)) indeg[i]++;
    order.clear();
    std::vector<bool> done(n, false);
    for (bool progress = true; progress;) {
        progress = false;
        for (int i = 0; i < n; i++)
            if (!done[i] && indeg[i] == 0) {
                done[i] = true;
                progress = true;
                order.push_back(i);
                for (const auto &p : emu_io_of(v.ops[i]).out) {
                    const int64_t uid = emu_tensor_of(p.second).uid;
                    if (v.consumers.count(uid))
                        for (int c : v.consumers[uid]) indeg[c]--;
                }
            }
    }
    if ((int)order.size() != n)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "operation graph: a cycle", NULL);
    return CUDNN_STATUS_SUCCESS;
}

/* ---- pattern recognition (what the emulated engines serve) */

static bool emu_nhwc_packed(const emu_tensor &t)
{
    if (t.dims.size() != 4) return false;
    const int64_t c = t.dims[1], h = t.dims[2], w = t.dims[3];
    return t.strides[0] == c * h * w && t.strides[1] == 1 && t.strides[2] == c * w &&
           t.strides[3] == c;
}

struct emu_matcher {
    const emu_graph_view &v;
    std::set<int> used;

    const emu_bd *producer(int64_t uid)
    {
        auto it = v.producer.find(uid);
        if (it == v.producer.end()) return NULL;
        used.insert(it->second);
        return v.ops[it->second];
    }
    emu_tensor t(const emu_bd *op, int attr) { return emu_tensor_of(emu_ref_of(op, attr)); }
    bool io(const emu_tensor &x) { return !x.virt && emu_computed_dt(x.dt) && emu_nhwc_packed(x); }
    bool vec(const emu_tensor &x, int64_t c, bool fp32)
    {
        return !x.virt && emu_per_channel(x, c) && x.strides[1] == 1 &&
               (fp32 ? x.dt == CUDNN_DATA_FLOAT : emu_computed_dt(x.dt));
    }
    bool virt(const emu_tensor &x) { return x.virt && x.dt == CUDNN_DATA_FLOAT; }
    /* the prologue's intermediates: fp32, or a 16-bit type (the frontend's wgrad sample) */
    bool pvirt(const emu_tensor &x) { return x.virt && emu_computed_dt(x.dt); }
    /* a pointwise op of mode m, fp32 math, alphas 1, relu clip at 0 */
    bool pw(const emu_bd *op, int m)
    {
        if (!op || op->type != D_OPW || emu_pw_mode(op) != m) return false;
        const emu_bd *d = emu_ref_of(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
        return emu_enum(d, CUDNN_ATTR_POINTWISE_MATH_PREC, -1) == CUDNN_DATA_FLOAT &&
               emu_real(d, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, 0.0) == 0.0 &&
               emu_real(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 1.0) == 1.0 &&
               emu_real(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 1.0) == 1.0;
    }
    /* the convolution's input x: a graph input, or relu(x * scale + bias); the graph input
     * in *src */
    bool prologue(const emu_tensor &in, emu_tensor *src)
    {
        if (!in.virt) {
            *src = in;
            return io(in);
        }
        const emu_bd *relu = producer(in.uid);
        if (!pvirt(in) || !pw(relu, CUDNN_POINTWISE_RELU_FWD)) return false;
        const emu_tensor a = t(relu, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        const emu_bd *add = producer(a.uid);
        if (!pvirt(a) || !pw(add, CUDNN_POINTWISE_ADD)) return false;
        const emu_tensor m = t(add, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        const emu_bd *mul = producer(m.uid);
        if (!pvirt(m) || !pw(mul, CUDNN_POINTWISE_MUL)) return false;
        *src = t(mul, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        return io(*src) && vec(t(add, CUDNN_ATTR_OPERATION_POINTWISE_BDESC), src->dims[1], false) &&
               vec(t(mul, CUDNN_ATTR_OPERATION_POINTWISE_BDESC), src->dims[1], false);
    }
    bool conv_ok(const emu_bd *op, int conv, int alpha, int beta)
    {
        return emu_geom_of(emu_ref_of(op, conv)).comp == CUDNN_DATA_FLOAT &&
               emu_real(op, alpha, 1.0) == 1.0 && emu_real(op, beta, 0.0) == 0.0;
    }
};

/* The support table's data type of cuDNN data type dt. */
static fused_support_dtype emu_support_dtype(int dt)
{
    return dt == CUDNN_DATA_HALF       ? FUSED_SUPPORT_F16
           : dt == CUDNN_DATA_BFLOAT16 ? FUSED_SUPPORT_BF16
                                       : FUSED_SUPPORT_F32;
}

/* Recognises v as one of the graphs the emulated engines know (EMU_PAT_*, or
 * EMU_PAT_NONE) and fills *q with its shape of operations and geometry, for the support
 * table to decide on. */
static int emu_classify(const emu_graph_view &v, fused_support_query *q)
{
    emu_matcher m{v, {}};
    memset(q, 0, sizeof(*q));
    int conv = -1;
    for (int i = 0; i < (int)v.ops.size(); i++)
        if (v.ops[i]->type == D_FWD || v.ops[i]->type == D_BWD_DATA ||
            v.ops[i]->type == D_BWD_FILTER) {
            if (conv >= 0) return EMU_PAT_NONE;
            conv = i;
        }
    if (conv < 0) return EMU_PAT_NONE;
    const emu_bd *op = v.ops[conv];
    m.used.insert(conv);
    int pattern = EMU_PAT_NONE;
    emu_tensor src;
    if (op->type == D_FWD) {
        const emu_tensor x = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X);
        const emu_tensor w = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W);
        const emu_tensor y = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y);
        if (!m.conv_ok(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA) ||
            !m.prologue(x, &src) || !m.io(w) || w.dt != src.dt)
            return EMU_PAT_NONE;
        q->op = FUSED_SUPPORT_FWD;
        q->pro = x.virt;
        q->ci = src.dims[1];
        q->co = w.dims[0];
        q->k = w.dims[2];
        emu_tensor out = y;   /* what the graph writes: y, or y + r */
        if (y.virt) {         /* ADD(y, r), r an activation of y's shape or relu(r * s + b) */
            auto at = v.consumers.find(y.uid);
            if (!m.virt(y) || at == v.consumers.end() || at->second.size() != 1)
                return EMU_PAT_NONE;
            const emu_bd *add = v.ops[at->second[0]];
            m.used.insert(at->second[0]);
            emu_tensor rsrc;
            if (!m.pw(add, CUDNN_POINTWISE_ADD) ||
                m.t(add, CUDNN_ATTR_OPERATION_POINTWISE_XDESC).uid != y.uid ||
                !m.prologue(m.t(add, CUDNN_ATTR_OPERATION_POINTWISE_BDESC), &rsrc) ||
                !emu_same_dims(rsrc, y) || rsrc.dt != src.dt)
                return EMU_PAT_NONE;
            q->res = m.t(add, CUDNN_ATTR_OPERATION_POINTWISE_BDESC).virt ? 2 : 1;
            out = m.t(add, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
        }
        if (!m.io(out) || out.dt != src.dt) return EMU_PAT_NONE;
        auto it = v.consumers.find(out.uid);
        if (it != v.consumers.end()) {
            if (it->second.size() != 1) return EMU_PAT_NONE;
            const emu_bd *gs = v.ops[it->second[0]];
            m.used.insert(it->second[0]);
            if (gs->type != D_GS ||
                !m.vec(m.t(gs, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC), out.dims[1], true) ||
                !m.vec(m.t(gs, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC), out.dims[1], true))
                return EMU_PAT_NONE;
            q->stats = 1;
        }
        pattern = EMU_PAT_FWD;
    } else if (op->type == D_BWD_FILTER) {
        const emu_tensor x = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X);
        const emu_tensor dy = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY);
        const emu_tensor dw = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW);
        if (!m.conv_ok(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA) ||
            !m.prologue(x, &src) || !m.io(dy) || !m.io(dw) || dy.dt != src.dt ||
            v.consumers.count(dw.uid))
            return EMU_PAT_NONE;
        q->op = FUSED_SUPPORT_WGRAD;
        q->pro = x.virt;
        q->ci = src.dims[1];
        q->co = dw.dims[0];
        q->k = dw.dims[2];
        pattern = EMU_PAT_WGRAD;
    } else {
        const emu_tensor dy = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY);
        const emu_tensor w = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W);
        const emu_tensor t = m.t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX);
        if (!m.conv_ok(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                       CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA) ||
            !m.io(dy) || !m.io(w) || w.dt != dy.dt || !m.virt(t))
            return EMU_PAT_NONE;
        auto it = v.consumers.find(t.uid);
        if (it == v.consumers.end() || it->second.size() != 1) return EMU_PAT_NONE;
        const emu_bd *drelu = v.ops[it->second[0]];
        m.used.insert(it->second[0]);
        emu_tensor g = t;   /* the gradient the mask takes: t, or t + res */
        if (m.pw(drelu, CUDNN_POINTWISE_ADD)) {
            const emu_tensor res = m.t(drelu, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
            if (m.t(drelu, CUDNN_ATTR_OPERATION_POINTWISE_XDESC).uid != t.uid || !m.io(res) ||
                res.dt != dy.dt || !emu_same_dims(res, t))
                return EMU_PAT_NONE;
            g = m.t(drelu, CUDNN_ATTR_OPERATION_POINTWISE_YDESC);
            auto gt = v.consumers.find(g.uid);
            if (!m.virt(g) || gt == v.consumers.end() || gt->second.size() != 1)
                return EMU_PAT_NONE;
            drelu = v.ops[gt->second[0]];
            m.used.insert(gt->second[0]);
            q->res = 1;
        }
        if (!m.pw(drelu, CUDNN_POINTWISE_RELU_BWD) ||
            m.t(drelu, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC).uid != g.uid)
            return EMU_PAT_NONE;
        const emu_tensor dz = m.t(drelu, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC);
        const emu_tensor xbn = m.t(drelu, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        if (!m.io(dz) || dz.dt != dy.dt || !m.virt(xbn)) return EMU_PAT_NONE;
        /* xbn = (((x - mean) * invstd) * gamma) + beta */
        const emu_bd *add = m.producer(xbn.uid);
        if (!m.pw(add, CUDNN_POINTWISE_ADD)) return EMU_PAT_NONE;
        const emu_tensor s = m.t(add, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        const emu_bd *mg = m.producer(s.uid);
        if (!m.virt(s) || !m.pw(mg, CUDNN_POINTWISE_MUL)) return EMU_PAT_NONE;
        const emu_tensor u = m.t(mg, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        const emu_bd *mi = m.producer(u.uid);
        if (!m.virt(u) || !m.pw(mi, CUDNN_POINTWISE_MUL)) return EMU_PAT_NONE;
        const emu_tensor d = m.t(mi, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        const emu_bd *sub = m.producer(d.uid);
        if (!m.virt(d) || !m.pw(sub, CUDNN_POINTWISE_SUB)) return EMU_PAT_NONE;
        const emu_tensor x = m.t(sub, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        const int64_t c = x.dims.size() == 4 ? x.dims[1] : -1;
        const emu_tensor mean = m.t(sub, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        const emu_tensor invstd = m.t(mi, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        const emu_tensor gamma = m.t(mg, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        const emu_tensor beta = m.t(add, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
        if (!m.io(x) || x.dt != dy.dt || !m.vec(mean, c, true) || !m.vec(invstd, c, true) ||
            !m.vec(gamma, c, true) || !m.vec(beta, c, true))
            return EMU_PAT_NONE;
        /* bn_bwd_weights(x, dy dz, mean, invstd, gamma) */
        auto jt = v.consumers.find(dz.uid);
        if (jt == v.consumers.end() || jt->second.size() != 1) return EMU_PAT_NONE;
        const emu_bd *bnw = v.ops[jt->second[0]];
        m.used.insert(jt->second[0]);
        if (bnw->type != D_BNW ||
            emu_enum(bnw, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC, -1) != CUDNN_DATA_FLOAT ||
            m.t(bnw, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC).uid != dz.uid ||
            m.t(bnw, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC).uid != x.uid ||
            m.t(bnw, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC).uid != mean.uid ||
            m.t(bnw, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC).uid != invstd.uid ||
            m.t(bnw, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC).uid != gamma.uid)
            return EMU_PAT_NONE;
        static const int outs[5] = {CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC,
                                    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC,
                                    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC,
                                    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC,
                                    CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS};
        for (int a : outs)
            if (!m.vec(m.t(bnw, a), c, true)) return EMU_PAT_NONE;
        q->op = FUSED_SUPPORT_DGRAD;
        q->ci = w.dims[1];
        q->co = w.dims[0];
        q->k = w.dims[2];
        src = dy;
        pattern = EMU_PAT_DGRAD_DBN;
    }
    /* nothing else in the graph */
    if (m.used.size() != v.ops.size()) return EMU_PAT_NONE;
    q->dtype = emu_support_dtype(src.dt);
    {
        const int conv_desc = op->type == D_FWD ? CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC
                              : op->type == D_BWD_FILTER
                                  ? CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC
                                  : CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC;
        const emu_geom g = emu_geom_of(emu_ref_of(op, conv_desc));
        q->stride = g.stride[0] == g.stride[1] ? (int)g.stride[0] : -1;
        if (g.dil[0] != 1 || g.dil[1] != 1) return EMU_PAT_NONE;   /* no dilation documented */
    }
    return pattern;
}

static int emu_fused_refused(void)
{
    const char *e = getenv("DAWNRUN_EMU_CUDNN_FUSED_REFUSE");
    return e && *e && strcmp(e, "0") != 0;
}

/* The engine count DAWNRUN_EMU_CUDNN_FUSED_ENGINES asks for (2 to EMU_GRAPH_ENGINES_MAX),
 * or 0 when it is unset or not such a number (then the default engines serve). */
static int emu_fused_engines_asked(void)
{
    const char *e = getenv("DAWNRUN_EMU_CUDNN_FUSED_ENGINES");
    char *end = NULL;
    if (!e || !*e) return 0;
    const long n = strtol(e, &end, 10);
    return *end == '\0' && n >= 2 && n <= EMU_GRAPH_ENGINES_MAX ? (int)n : 0;
}

static cudnnStatus_t emu_finalize_graph(emu_bd *b)
{
    emu_graph_view v;
    const cudnnStatus_t s = emu_graph_check(b, v, b->order);
    if (s) return s;
    fused_support_query q;
    b->pattern = emu_classify(v, &q);
    /* the support table decides, as cuDNN's documentation does for the real library */
    if (b->pattern != EMU_PAT_NONE && !fused_support_accepts(&q, NULL)) b->pattern = EMU_PAT_NONE;
    /* by default EMU_GRAPH_ENGINES, engine 0 refusing; with DAWNRUN_EMU_CUDNN_FUSED_ENGINES
     * every one but the last refuses */
    const int asked = emu_fused_engines_asked();
    b->engines = b->pattern == EMU_PAT_NONE || emu_fused_refused() ? 0
                 : asked                                         ? asked
                                                                 : EMU_GRAPH_ENGINES;
    b->refusing = asked ? asked - 1 : 1;
    return CUDNN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ compile time */

static long emu_plan_finalize_count;

long emu_cudnn_plan_finalizes(void)
{
    return emu_plan_finalize_count;
}

/* At exit, when DAWNRUN_EMU_CUDNN_FINALIZE_MS is set: how many plans were finalized. */
static void emu_plan_finalizes_say(void)
{
    fprintf(stderr, "emu cuDNN backend: %ld execution-plan finalizes, each delayed %s ms "
            "(DAWNRUN_EMU_CUDNN_FINALIZE_MS)\n", emu_plan_finalize_count,
            getenv("DAWNRUN_EMU_CUDNN_FINALIZE_MS"));
}

/* The delay of a plan finalize (DAWNRUN_EMU_CUDNN_FINALIZE_MS); when it is set, the count
 * is said at exit. */
static long emu_finalize_ms(void)
{
    static bool said;
    const char *e = getenv("DAWNRUN_EMU_CUDNN_FINALIZE_MS");
    if (!e || !*e) return 0;
    if (!said) {
        said = true;
        atexit(emu_plan_finalizes_say);
    }
    return strtol(e, NULL, 10);
}

/* Read at start-up too, so that a run that finalizes no plan says its 0. */
static const long emu_finalize_ms_at_start = emu_finalize_ms();

/* One execution-plan finalize: counted, and delayed by DAWNRUN_EMU_CUDNN_FINALIZE_MS. */
static void emu_plan_finalize_cost(void)
{
    const long ms = emu_finalize_ms();
    emu_plan_finalize_count++;
    if (ms <= 0) return;
    struct timespec left = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&left, &left) != 0 && errno == EINTR) {
    }
}

/* ------------------------------------------------------------------ the API */

cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                           cudnnBackendDescriptor_t *desc)
{
    if (!desc) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    bool known = false;
    for (const emu_spec &s : emu_specs) known |= s.desc == (int)type;
    if (!known) {
        fprintf(stderr, "emu cuDNN backend: descriptor type %d not emulated\n", (int)type);
        return CUDNN_STATUS_NOT_SUPPORTED;
    }
    emu_bd *b = new emu_bd();
    b->type = type;
    b->finalized = false;
    b->pattern = EMU_PAT_NONE;
    b->engines = 0;
    b->workspace = 0;
    emu_live.insert(b);
    *desc = b;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t desc)
{
    emu_bd *b = emu_desc(desc);
    if (!desc) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    if (!b) return emu_note(CUDNN_STATUS_BAD_PARAM, "destroy: not a live descriptor", NULL);
    emu_live.erase(b);
    delete b;
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t count,
                                       const void *elements)
{
    emu_bd *b = emu_desc(desc);
    if (!b) return emu_note(CUDNN_STATUS_BAD_PARAM, "set: not a live descriptor", NULL);
    const emu_spec *s = emu_find_spec(b->type, name);
    if (!s || emu_read_only(name)) {
        fprintf(stderr, "emu cuDNN backend: set: attribute %d not settable on descriptor type %d\n",
                (int)name, b->type);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (b->finalized) return emu_note(CUDNN_STATUS_NOT_SUPPORTED, "set after finalize", s->name);
    if ((int)type != s->type && (int)type != s->type2)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "set: wrong attribute type", s->name);
    if (count < s->lo || count > s->hi)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "set: wrong element count", s->name);
    if (count > 0 && !elements)
        return emu_note(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "set: no elements", s->name);
    emu_attr a;
    a.type = type;
    a.count = count;
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        for (int64_t i = 0; i < count; i++) {
            const emu_bd *r = emu_desc(((const cudnnBackendDescriptor_t *)elements)[i]);
            if (!r) return emu_note(CUDNN_STATUS_BAD_PARAM, "set: not a live descriptor", s->name);
            const bool op_type = r->type == D_FWD || r->type == D_BWD_DATA ||
                                 r->type == D_BWD_FILTER || r->type == D_OPW || r->type == D_GS ||
                                 r->type == D_BNW;
            if (s->ref == -2 ? !op_type : s->ref >= 0 && r->type != s->ref)
                return emu_note(CUDNN_STATUS_BAD_PARAM, "set: wrong descriptor type", s->name);
            if (!r->finalized)
                return emu_note(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED,
                                "set: descriptor not finalized", s->name);
            a.refs.push_back(std::make_shared<const emu_bd>(*r));
        }
    } else {
        const size_t bytes = (size_t)count * emu_elem_size(type);
        a.raw.assign((const unsigned char *)elements, (const unsigned char *)elements + bytes);
    }
    b->attrs[name] = a;
    return CUDNN_STATUS_SUCCESS;
}

/* Fills the caller's engine configuration d as heuristics result engine index of g. */
static void emu_fill_cfg(emu_bd *d, const emu_ref &g, int64_t index)
{
    emu_bd e;
    e.type = D_ENGINE;
    e.finalized = true;
    e.pattern = EMU_PAT_NONE;
    e.engines = 0;
    e.workspace = 0;
    e.attrs[CUDNN_ATTR_ENGINE_OPERATION_GRAPH] = {T_BD, 1, {}, {g}};
    emu_attr ix{CUDNN_TYPE_INT64, 1, std::vector<unsigned char>(sizeof(int64_t)), {}};
    memcpy(ix.raw.data(), &index, sizeof(index));
    e.attrs[CUDNN_ATTR_ENGINE_GLOBAL_INDEX] = ix;
    d->attrs.clear();
    d->attrs[CUDNN_ATTR_ENGINECFG_ENGINE] = {T_BD, 1, {}, {std::make_shared<const emu_bd>(e)}};
    d->workspace = EMU_GRAPH_WORKSPACE;
    d->finalized = true;
}

cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t desc)
{
    emu_bd *b = emu_desc(desc);
    if (!b) return emu_note(CUDNN_STATUS_BAD_PARAM, "finalize: not a live descriptor", NULL);
    if (b->finalized) return emu_note(CUDNN_STATUS_BAD_PARAM, "finalize: already finalized", NULL);
    for (int a : emu_required(b))
        if (!b->attrs.count(a))
            return emu_note(CUDNN_STATUS_BAD_PARAM, "finalize: required attribute missing",
                            emu_attr_name(b->type, a));
    cudnnStatus_t s = CUDNN_STATUS_SUCCESS;
    switch (b->type) {
    case D_T: s = emu_finalize_tensor(b); break;
    case D_CONV: s = emu_finalize_conv(b); break;
    case D_PW: {
        const int m = emu_enum(b, CUDNN_ATTR_POINTWISE_MODE, -1);
        if (!emu_pw_binary(m) && m != CUDNN_POINTWISE_RELU_FWD && m != CUDNN_POINTWISE_RELU_BWD)
            s = emu_note(CUDNN_STATUS_NOT_SUPPORTED, "pointwise mode not emulated",
                         "CUDNN_ATTR_POINTWISE_MODE");
        break;
    }
    case D_FWD:
    case D_BWD_DATA:
    case D_BWD_FILTER:
    case D_OPW:
    case D_GS:
    case D_BNW: s = emu_finalize_op(b); break;
    case D_GRAPH: s = emu_finalize_graph(b); break;
    case D_HEUR: {
        const int m = emu_enum(b, CUDNN_ATTR_ENGINEHEUR_MODE, -1);
        if (m != CUDNN_HEUR_MODE_INSTANT && m != CUDNN_HEUR_MODE_B &&
            m != CUDNN_HEUR_MODE_FALLBACK && m != CUDNN_HEUR_MODE_A)
            s = emu_note(CUDNN_STATUS_BAD_PARAM, "heuristics: unknown mode",
                         "CUDNN_ATTR_ENGINEHEUR_MODE");
        break;
    }
    case D_ENGINE: {
        const emu_bd *g = emu_ref_of(b, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
        const int64_t i = emu_i64(b, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, -1);
        if (i < 0 || i >= g->engines) s = CUDNN_STATUS_NOT_SUPPORTED;
        break;
    }
    case D_CFG: b->workspace = EMU_GRAPH_WORKSPACE; break;
    case D_PLAN: {
        const emu_bd *cfg = emu_ref_of(b, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
        const emu_bd *e = emu_ref_of(cfg, CUDNN_ATTR_ENGINECFG_ENGINE);
        const emu_bd *g = emu_ref_of(e, CUDNN_ATTR_ENGINE_OPERATION_GRAPH);
        emu_plan_finalize_cost();
        /* the first g->refusing engines "fail to compile" (see the top of this file) */
        if (emu_i64(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, 0) < g->refusing) {
            s = CUDNN_STATUS_NOT_SUPPORTED;
            emu_set_last_error(cudaErrorInvalidConfiguration);   /* see the top of this file */
        }
        b->workspace = cfg->workspace;
        break;
    }
    case D_PACK: {
        const std::vector<int64_t> uids = emu_i64s(b, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
        if ((int64_t)uids.size() != emu_get_attr(b, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS)->count)
            s = emu_note(CUDNN_STATUS_BAD_PARAM, "variant pack: id and pointer counts differ",
                         NULL);
        else if (std::set<int64_t>(uids.begin(), uids.end()).size() != uids.size())
            s = emu_note(CUDNN_STATUS_BAD_PARAM, "variant pack: an id twice",
                         "CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS");
        break;
    }
    }
    if (s == CUDNN_STATUS_SUCCESS) b->finalized = true;
    return s;
}

/* The numerical notes of engine index i of supported graph g: the first engine after the
 * refusing ones sums with atomics (non-deterministic) when another follows it, the others
 * do not; all use tensor cores. */
static std::vector<cudnnBackendNumericalNote_t> emu_engine_notes(const emu_bd *g, int64_t i)
{
    if (g && i == g->refusing && i < g->engines - 1)
        return {CUDNN_NUMERICAL_NOTE_TENSOR_CORE, CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC};
    return {CUDNN_NUMERICAL_NOTE_TENSOR_CORE};
}

/* Writes n int64 v into elements, checking the request. */
static cudnnStatus_t emu_put_i64(const char *name, int type, int64_t requested, int64_t *count,
                                 void *elements, int64_t v)
{
    if (type != CUDNN_TYPE_INT64)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "get: wrong attribute type", name);
    if (count) *count = 1;
    if (requested >= 1) {
        if (!elements)
            return emu_note(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "get: no elements", name);
        memcpy(elements, &v, sizeof(v));
    }
    return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const desc,
                                       cudnnBackendAttributeName_t name,
                                       cudnnBackendAttributeType_t type, int64_t requested,
                                       int64_t *count, void *elements)
{
    emu_bd *b = emu_desc(desc);
    if (!b) return emu_note(CUDNN_STATUS_BAD_PARAM, "get: not a live descriptor", NULL);
    const emu_spec *s = emu_find_spec(b->type, name);
    if (!s) {
        fprintf(stderr, "emu cuDNN backend: get: attribute %d not on descriptor type %d\n",
                (int)name, b->type);
        return CUDNN_STATUS_BAD_PARAM;
    }
    if (requested < 0) return emu_note(CUDNN_STATUS_BAD_PARAM, "get: negative count", s->name);
    if (emu_read_only(name) && !b->finalized)
        return emu_note(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "get: descriptor not finalized",
                        s->name);
    switch ((int)name) {
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
        return emu_put_i64(s->name, type, requested, count, elements, b->engines);
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
        return emu_put_i64(s->name, type, requested, count, elements, b->workspace);
    case CUDNN_ATTR_ENGINE_NUMERICAL_NOTE: {
        if (type != CUDNN_TYPE_NUMERICAL_NOTE)
            return emu_note(CUDNN_STATUS_BAD_PARAM, "get: wrong attribute type", s->name);
        const std::vector<cudnnBackendNumericalNote_t> notes =
            emu_engine_notes(emu_ref_of(b, CUDNN_ATTR_ENGINE_OPERATION_GRAPH),
                             emu_i64(b, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, -1));
        const int64_t n = (int64_t)notes.size(), k = requested < n ? requested : n;
        if (k > 0 && !elements)
            return emu_note(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "get: no elements", s->name);
        if (k > 0) memcpy(elements, notes.data(), (size_t)k * sizeof(notes[0]));
        if (count) *count = requested == 0 ? n : k;
        return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
        if (type != CUDNN_TYPE_BACKEND_DESCRIPTOR)
            return emu_note(CUDNN_STATUS_BAD_PARAM, "get: wrong attribute type", s->name);
        const emu_attr *ga = emu_get_attr(b, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
        const emu_ref g = ga->refs[0];
        const int64_t n = g->engines, k = requested < n ? requested : n;
        if (k > 0 && !elements)
            return emu_note(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "get: no elements", s->name);
        for (int64_t i = 0; i < k; i++) {
            emu_bd *d = emu_desc(((cudnnBackendDescriptor_t *)elements)[i]);
            if (!d || d->type != D_CFG || d->finalized)
                return emu_note(CUDNN_STATUS_BAD_PARAM,
                                "get: results need live, unfinalized engine configurations",
                                s->name);
        }
        for (int64_t i = 0; i < k; i++)
            emu_fill_cfg(emu_desc(((cudnnBackendDescriptor_t *)elements)[i]), g, i);
        if (count) *count = requested == 0 ? n : k;
        return CUDNN_STATUS_SUCCESS;
    }
    }
    /* an attribute as set */
    const emu_attr *a = emu_get_attr(b, name);
    if (!a) return emu_note(CUDNN_STATUS_BAD_PARAM, "get: attribute not set", s->name);
    if ((int)type != a->type)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "get: wrong attribute type", s->name);
    const int64_t k = requested < a->count ? requested : a->count;
    if (count) *count = requested == 0 ? a->count : k;
    if (k > 0 && !elements)
        return emu_note(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "get: no elements", s->name);
    if (type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
        for (int64_t i = 0; i < k; i++) {
            emu_bd *d = emu_desc(((cudnnBackendDescriptor_t *)elements)[i]);
            if (!d || d->type != a->refs[i]->type)
                return emu_note(CUDNN_STATUS_BAD_PARAM, "get: wrong descriptor to fill", s->name);
            *d = *a->refs[i];
        }
    } else if (k > 0) {
        memcpy(elements, a->raw.data(), (size_t)k * emu_elem_size(type));
    }
    return CUDNN_STATUS_SUCCESS;
}

/* ------------------------------------------------------------------ execution */

/* The values of the graph's tensors, fp32 in (n, c, h, w) row-major order. */
typedef std::map<int64_t, std::vector<float>> emu_values;

static size_t emu_offset(const emu_tensor &t, size_t linear)
{
    size_t off = 0;
    for (size_t d = t.dims.size(); d-- > 0;) {
        off += (linear % (size_t)t.dims[d]) * (size_t)t.strides[d];
        linear /= (size_t)t.dims[d];
    }
    return off;
}

static float emu_load(const emu_tensor &t, const void *p, size_t linear)
{
    const size_t o = emu_offset(t, linear);
    if (t.dt == CUDNN_DATA_FLOAT) return ((const float *)p)[o];
    if (t.dt == CUDNN_DATA_HALF) return __half2float(((const __half *)p)[o]);
    return __bfloat162float(((const __nv_bfloat16 *)p)[o]);
}

static void emu_store(const emu_tensor &t, void *p, size_t linear, float v)
{
    const size_t o = emu_offset(t, linear);
    if (t.dt == CUDNN_DATA_FLOAT)
        ((float *)p)[o] = v;
    else if (t.dt == CUDNN_DATA_HALF)
        ((__half *)p)[o] = __float2half_rn(v);
    else
        ((__nv_bfloat16 *)p)[o] = __float2bfloat16_rn(v);
}

/* Index into b (broadcast to a's dims) of a's linear element i. */
static size_t emu_bcast(const emu_tensor &a, const emu_tensor &b, size_t i)
{
    size_t bi = 0, mul = 1;
    for (size_t d = a.dims.size(); d-- > 0;) {
        const size_t c = i % (size_t)a.dims[d];
        i /= (size_t)a.dims[d];
        if (b.dims[d] != 1) bi += c * mul;
        mul *= (size_t)b.dims[d];
    }
    return bi;
}

struct emu_exec {
    emu_values val;
    std::map<int64_t, void *> ptr;
    bool nondet; /* the engine is non-deterministic: convolution sums vary (emu_noisy) */

    const std::vector<float> &in(const emu_tensor &t)
    {
        auto it = val.find(t.uid);
        if (it != val.end()) return it->second;
        std::vector<float> &v = val[t.uid];
        v.resize(emu_numel(t));
        const void *p = ptr[t.uid];
        for (size_t i = 0; i < v.size(); i++) v[i] = emu_load(t, p, i);
        return v;
    }
    /* stores out (already computed in double or float) rounded to t's type */
    void out(const emu_tensor &t, const std::vector<double> &r)
    {
        std::vector<float> &v = val[t.uid];
        v.resize(r.size());
        for (size_t i = 0; i < r.size(); i++) v[i] = (float)emu_round(t.dt, r[i]);
        if (!t.virt) {
            void *p = ptr[t.uid];
            for (size_t i = 0; i < v.size(); i++) emu_store(t, p, i, v[i]);
        }
    }
};

/* v (a, p, q) as (a, q, p): with (p, q) = (c, hw) the channels innermost, with
 * (p, q) = (hw, c) back. */
template <typename T>
static std::vector<T> emu_swap_inner(const std::vector<T> &v, int64_t A, int64_t P, int64_t Q)
{
    std::vector<T> o(v.size());
    for (int64_t i = 0; i < A; i++)
        for (int64_t p = 0; p < P; p++)
            for (int64_t q = 0; q < Q; q++)
                o[(size_t)((i * Q + q) * P + p)] = v[(size_t)((i * P + p) * Q + q)];
    return o;
}

/* emu_conv_loops' sums on channels-last copies: x (n, h, w, c) and w (k, r, s, c) read for
 * dir 0 and 2, y (n, k, ho, wo) as the graph holds it; acc is y's (dir 0), x's (dir 1) or
 * w's (dir 2) in those layouts. Every output's terms are added in the order of the plain
 * loop over n, k, output row and column, r, s, then c, so the sums are the same; the
 * arrays are this file's own, sized by the caller, and no sanitizer checks them. */
__attribute__((no_sanitize("address", "undefined")))
static void emu_conv_sums(int dir, const emu_geom &g, int64_t N, int64_t C, int64_t H, int64_t W,
                          int64_t K, int64_t R, int64_t S, int64_t HO, int64_t WO,
                          const float *x,   /* (n, h, w, c) */
                          const float *w,   /* (k, r, s, c) */
                          const float *y,   /* (n, k, ho, wo) */
                          double *acc)
{
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t oh = 0; oh < HO; oh++)
                for (int64_t ow = 0; ow < WO; ow++) {
                    const size_t yi = (size_t)(((n * K + k) * HO + oh) * WO + ow);
                    const double yv = dir == 0 ? 0.0 : (double)y[yi];
                    double s = 0.0;
                    for (int64_t r = 0; r < R; r++)
                        for (int64_t q = 0; q < S; q++) {
                            const int64_t ih = oh * g.stride[0] - g.pre[0] + r * g.dil[0];
                            const int64_t iw = ow * g.stride[1] - g.pre[1] + q * g.dil[1];
                            if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                            /* CUDNN_CONVOLUTION flips the filter */
                            const int64_t fr = g.mode == CUDNN_CONVOLUTION ? R - 1 - r : r;
                            const int64_t fq = g.mode == CUDNN_CONVOLUTION ? S - 1 - q : q;
                            const size_t xo = (size_t)(((n * H + ih) * W + iw) * C);
                            const size_t wo = (size_t)(((k * R + fr) * S + fq) * C);
                            if (dir == 0)
                                for (int64_t c = 0; c < C; c++) s += (double)x[xo + c] * w[wo + c];
                            else if (dir == 1)
                                for (int64_t c = 0; c < C; c++) acc[xo + c] += yv * w[wo + c];
                            else
                                for (int64_t c = 0; c < C; c++)
                                    acc[wo + c] += (double)x[xo + c] * yv;
                        }
                    if (dir == 0) acc[yi] = s;
                }
}

/* dir 0: y = conv(x, w); 1: dx = conv^T(dy, w); 2: dw = corr(x, dy); x (n, c, h, w),
 * w (k, c, r, s), y (n, k, ho, wo) logical; sums in double, in the result's logical
 * layout. */
static std::vector<double> emu_conv_loops(int dir, const emu_geom &g, const emu_tensor &xt,
                                          const emu_tensor &wt, const emu_tensor &yt,
                                          const std::vector<float> &x, const std::vector<float> &w,
                                          const std::vector<float> &y)
{
    const int64_t N = xt.dims[0], C = xt.dims[1], H = xt.dims[2], W = xt.dims[3];
    const int64_t K = wt.dims[0], R = wt.dims[2], S = wt.dims[3];
    const int64_t HO = yt.dims[2], WO = yt.dims[3];
    const std::vector<float> none;
    const std::vector<float> xl = dir == 1 ? none : emu_swap_inner(x, N, C, H * W);
    const std::vector<float> wl = dir == 2 ? none : emu_swap_inner(w, K, C, R * S);
    std::vector<double> acc(dir == 0   ? emu_numel(yt)
                            : dir == 1 ? emu_numel(xt)
                                       : emu_numel(wt),
                            0.0);
    emu_conv_sums(dir, g, N, C, H, W, K, R, S, HO, WO, xl.data(), wl.data(), y.data(),
                  acc.data());
    if (dir == 1) return emu_swap_inner(acc, N, H * W, C);
    if (dir == 2) return emu_swap_inner(acc, K, R * S, C);
    return acc;
}

/* A convolution's sums r as ex's engine leaves them: moved in their low bits by a
 * non-deterministic one (emu_atomic_noise, emu.h), as they are otherwise. */
static void emu_noisy(const emu_exec &ex, std::vector<double> &r)
{
    if (ex.nondet)
        for (double &v : r) v = emu_atomic_noise(v);
}

static emu_tensor emu_t(const emu_bd *op, int attr)
{
    return emu_tensor_of(emu_ref_of(op, attr));
}

static void emu_run_op(emu_exec &ex, const emu_bd *op)
{
    switch (op->type) {
    case D_FWD: {
        const emu_tensor x = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X);
        const emu_tensor w = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W);
        const emu_tensor y = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y);
        const emu_geom g =
            emu_geom_of(emu_ref_of(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC));
        const double a = emu_real(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0);
        const double be = emu_real(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0);
        std::vector<double> r = emu_conv_loops(0, g, x, w, y, ex.in(x), ex.in(w), {});
        for (size_t i = 0; i < r.size(); i++)
            r[i] = a * r[i] + (be != 0.0 ? be * emu_load(y, ex.ptr[y.uid], i) : 0.0);
        emu_noisy(ex, r);
        ex.out(y, r);
        break;
    }
    case D_BWD_DATA: {
        const emu_tensor dy = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY);
        const emu_tensor w = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W);
        const emu_tensor dx = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX);
        const emu_geom g =
            emu_geom_of(emu_ref_of(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC));
        const double a = emu_real(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, 1.0);
        const double be = emu_real(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, 0.0);
        std::vector<double> r = emu_conv_loops(1, g, dx, w, dy, {}, ex.in(w), ex.in(dy));
        for (size_t i = 0; i < r.size(); i++)
            r[i] = a * r[i] + (be != 0.0 && !dx.virt ? be * emu_load(dx, ex.ptr[dx.uid], i) : 0.0);
        emu_noisy(ex, r);
        ex.out(dx, r);
        break;
    }
    case D_BWD_FILTER: {
        const emu_tensor x = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X);
        const emu_tensor dy = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY);
        const emu_tensor dw = emu_t(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW);
        const emu_geom g =
            emu_geom_of(emu_ref_of(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC));
        const double a = emu_real(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, 1.0);
        const double be = emu_real(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, 0.0);
        std::vector<double> r = emu_conv_loops(2, g, x, dw, dy, ex.in(x), {}, ex.in(dy));
        for (size_t i = 0; i < r.size(); i++)
            r[i] = a * r[i] + (be != 0.0 ? be * emu_load(dw, ex.ptr[dw.uid], i) : 0.0);
        emu_noisy(ex, r);
        ex.out(dw, r);
        break;
    }
    case D_OPW: {
        const int m = emu_pw_mode(op);
        const emu_bd *d = emu_ref_of(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR);
        const float lo = (float)emu_real(d, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, 0.0);
        const float hi = (float)emu_real(d, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, INFINITY);
        const float a1 = (float)emu_real(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 1.0);
        const float a2 = (float)emu_real(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 1.0);
        const emu_tensor x = emu_t(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC);
        const std::vector<float> &xv = ex.in(x);
        std::vector<double> r(xv.size());
        if (m == CUDNN_POINTWISE_RELU_BWD) {
            const emu_tensor dy = emu_t(op, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC);
            const std::vector<float> &dyv = ex.in(dy);
            for (size_t i = 0; i < r.size(); i++)
                r[i] = xv[i] > lo && xv[i] < hi ? a1 * dyv[i] : 0.0f;
            ex.out(emu_t(op, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC), r);
        } else if (m == CUDNN_POINTWISE_RELU_FWD) {
            for (size_t i = 0; i < r.size(); i++) {
                const float v = a1 * xv[i];
                r[i] = v < lo ? lo : v > hi ? hi : v;
            }
            ex.out(emu_t(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC), r);
        } else {
            const emu_tensor b = emu_t(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC);
            const std::vector<float> &bv = ex.in(b);
            for (size_t i = 0; i < r.size(); i++) {
                const float u = a1 * xv[i], v = a2 * bv[emu_bcast(x, b, i)];
                r[i] = m == CUDNN_POINTWISE_ADD ? u + v : m == CUDNN_POINTWISE_SUB ? u - v : u * v;
            }
            ex.out(emu_t(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC), r);
        }
        break;
    }
    case D_GS: {
        const emu_tensor x = emu_t(op, CUDNN_ATTR_OPERATION_GENSTATS_XDESC);
        const std::vector<float> &xv = ex.in(x);
        const int64_t C = x.dims[1], HW = x.dims[2] * x.dims[3];
        std::vector<double> s((size_t)C, 0.0), q((size_t)C, 0.0);
        for (size_t i = 0; i < xv.size(); i++) {
            const size_t c = (i / (size_t)HW) % (size_t)C;
            s[c] += xv[i];
            q[c] += (double)xv[i] * xv[i];
        }
        ex.out(emu_t(op, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC), s);
        ex.out(emu_t(op, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC), q);
        break;
    }
    case D_BNW: {
        const emu_tensor x = emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC);
        const std::vector<float> &xv = ex.in(x);
        const std::vector<float> &dz =
            ex.in(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC));
        const std::vector<float> &mean =
            ex.in(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC));
        const std::vector<float> &invstd =
            ex.in(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC));
        const std::vector<float> &gamma =
            ex.in(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC));
        const int64_t C = x.dims[1], HW = x.dims[2] * x.dims[3];
        const double N = (double)(x.dims[0] * HW);
        std::vector<double> ds((size_t)C, 0.0), db((size_t)C, 0.0), ey((size_t)C), exs((size_t)C),
            eb((size_t)C);
        for (size_t i = 0; i < xv.size(); i++) {
            const size_t c = (i / (size_t)HW) % (size_t)C;
            ds[c] += (double)dz[i] * ((double)xv[i] - mean[c]) * invstd[c];
            db[c] += dz[i];
        }
        for (size_t c = 0; c < (size_t)C; c++) {
            ey[c] = (double)gamma[c] * invstd[c];
            exs[c] = -ey[c] * invstd[c] * ds[c] / N;
            eb[c] = -ey[c] * db[c] / N - exs[c] * mean[c];
        }
        ex.out(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC), ds);
        ex.out(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC), db);
        ex.out(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC), ey);
        ex.out(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC), exs);
        ex.out(emu_t(op, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS), eb);
        break;
    }
    }
}

/* cudnnBackendExecute's checks and enqueueing. */
static cudnnStatus_t emu_execute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                 cudnnBackendDescriptor_t variant_pack)
{
    const emu_bd *p = emu_desc(plan), *vp = emu_desc(variant_pack);
    if (!handle) return emu_note(CUDNN_STATUS_BAD_PARAM_NULL_POINTER, "execute: no handle", NULL);
    if (!p || p->type != D_PLAN || !vp || vp->type != D_PACK)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "execute: not a plan and a variant pack", NULL);
    if (!p->finalized || !vp->finalized)
        return emu_note(CUDNN_STATUS_BAD_PARAM_NOT_FINALIZED, "execute: not finalized", NULL);
    cudnnHandle_t ph;
    memcpy(&ph, emu_get_attr(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE)->raw.data(), sizeof(ph));
    if (ph != handle)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "execute: the plan was built on another handle",
                        "CUDNN_ATTR_EXECUTION_PLAN_HANDLE");
    const emu_bd *cfg = emu_ref_of(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG);
    const emu_bd *eng = emu_ref_of(cfg, CUDNN_ATTR_ENGINECFG_ENGINE);
    const emu_ref graph = emu_get_attr(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH)->refs[0];
    /* the pack's pointers by id */
    std::map<int64_t, void *> ptr;
    const std::vector<int64_t> uids = emu_i64s(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
    const emu_attr *pa = emu_get_attr(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    for (size_t i = 0; i < uids.size(); i++) {
        void *q;
        memcpy(&q, pa->raw.data() + i * sizeof(void *), sizeof(q));
        ptr[uids[i]] = q;
    }
    emu_graph_view v;
    std::vector<int> order;
    emu_graph_check(graph.get(), v, order); /* passed at finalize */
    for (const auto &t : v.tensors) {
        if (t.second.virt) continue;
        auto it = ptr.find(t.first);
        if (it == ptr.end() || !it->second) {
            fprintf(stderr, "emu cuDNN backend: execute: no pointer for tensor %lld\n",
                    (long long)t.first);
            return CUDNN_STATUS_BAD_PARAM;
        }
        if ((uintptr_t)it->second % (uintptr_t)t.second.align) {
            fprintf(stderr, "emu cuDNN backend: execute: tensor %lld not %lld-byte aligned\n",
                    (long long)t.first, (long long)t.second.align);
            return CUDNN_STATUS_BAD_PARAM_MISALIGNED_POINTER;
        }
    }
    void *ws = emu_ptr(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE);
    const int64_t ws_bytes = p->workspace;
    if (ws_bytes > 0 && !ws)
        return emu_note(CUDNN_STATUS_BAD_PARAM, "execute: the plan needs a workspace",
                        "CUDNN_ATTR_VARIANT_PACK_WORKSPACE");
    const std::vector<const emu_bd *> ops = v.ops;
    const cudaStream_t stream = emu_cudnn_stream(handle);
    const std::vector<cudnnBackendNumericalNote_t> notes =
        emu_engine_notes(emu_ref_of(eng, CUDNN_ATTR_ENGINE_OPERATION_GRAPH),
                         emu_i64(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, -1));
    const bool nondet = std::find(notes.begin(), notes.end(),
                                  CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) != notes.end();
    cudaError_t e;
    if (emu_count_only()) {
        e = emu_enqueue(stream, EMU_NODE_LIBRARY, []() {});
    } else {
        /* graph keeps ops' descriptors alive in a recorded copy */
        e = emu_enqueue(stream, EMU_NODE_LIBRARY, [graph, ops, order, ptr, ws, ws_bytes, nondet]() {
            emu_exec ex;
            ex.ptr = ptr;
            ex.nondet = nondet;
            for (int i : order) emu_run_op(ex, ops[i]);
            if (ws) memset(ws, 0x5a, (size_t)ws_bytes);
        });
    }
    return e ? CUDNN_STATUS_EXECUTION_FAILED : CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle, cudnnBackendDescriptor_t plan,
                                  cudnnBackendDescriptor_t variant_pack)
{
    const cudnnStatus_t s = emu_execute(handle, plan, variant_pack);
    if (s != CUDNN_STATUS_SUCCESS) emu_set_last_error(cudaErrorInvalidConfiguration);
    return s;
}

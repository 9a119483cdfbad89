/* The emulation of cuDNN's backend graph API (run with
 * `tests/cuda_emu/run.sh --test BUILD_DIR tests/cuda_emu/test_cudnn_graph.cu`): builds the
 * three runtime-fusion graphs the engine uses (scale-bias-relu-conv-genstats, with and
 * without its prologue and statistics, and with a residual, as it is or through its own
 * scale-bias-relu, added to the convolution's output; scale-bias-relu-wgrad, with and
 * without its prologue; dgrad-drelu-dbn-weight, with and without a residual gradient
 * added before the mask) attribute by attribute as cuDNN's frontend does (NHWC
 * activations, KRSC filters, fp32 virtual intermediates, a prologue's also in the io type
 * as the frontend's wgrad sample has them, fp32 compute), in fp32, fp16 and bf16, with
 * stride 1 and 2, padding 0 and 1, 1x1 and 3x3 filters; runs each through heuristics,
 * execution plan and variant pack, directly and once replayed from a captured graph, and
 * compares every output with a direct host computation of the same math (on the first
 * deterministic engine: a non-deterministic one's last bits vary from run to run).
 * Then the refusals: an unsupported graph (among them residuals the forward pattern does
 * not take) gets no engine configuration, and neither does a supported one under
 * DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1; a supported graph's three engines (engine 0's plan
 * refused; engine 1's numerical notes, read through its configuration, say
 * non-deterministic, engine 2's do not); under DAWNRUN_EMU_CUDNN_FUSED_ENGINES=5 one lists
 * five, the last alone finalizing its plan (every plan finalize is counted,
 * emu_cudnn_plan_finalizes); an execution missing a pointer
 * or its workspace, or on another handle, fails; wrong attribute types, sets after
 * finalize, mismatched shapes and malformed graphs are refused. Exits 0 when every check
 * holds, 1 otherwise (each failed check is printed). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

#include "cuda_runtime.h"
#include "cudnn.h"
#include "fused_support.h"

static int failures;

#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "test_cudnn_graph.cu:%d: expected %s\n", __LINE__, #cond);             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)
#define OK(call)      EXPECT((call) == CUDNN_STATUS_SUCCESS)
#define CUDA_OK(call) EXPECT((call) == cudaSuccess)

typedef cudnnBackendDescriptor_t bd;

/* Every descriptor a case creates, destroyed at its end. */
static std::vector<bd> made;

static bd create(cudnnBackendDescriptorType_t t)
{
    bd d = NULL;
    OK(cudnnBackendCreateDescriptor(t, &d));
    made.push_back(d);
    return d;
}

static void destroy_all(void)
{
    for (size_t i = made.size(); i-- > 0;) OK(cudnnBackendDestroyDescriptor(made[i]));
    made.clear();
}

static cudnnStatus_t set_i64(bd d, cudnnBackendAttributeName_t a, int64_t n, const int64_t *v)
{
    return cudnnBackendSetAttribute(d, a, CUDNN_TYPE_INT64, n, v);
}

static cudnnStatus_t set_desc(bd d, cudnnBackendAttributeName_t a, bd v)
{
    return cudnnBackendSetAttribute(d, a, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &v);
}

static cudnnStatus_t set_f32(bd d, cudnnBackendAttributeName_t a, float v)
{
    return cudnnBackendSetAttribute(d, a, CUDNN_TYPE_FLOAT, 1, &v);
}

/* A finalized tensor (n, c, h, w) with NHWC strides (c h w, 1, c w, c) (filters (k, c, r,
 * s): KRSC); per-channel tensors are (1, c, 1, 1). */
static bd tensor(int64_t uid, cudnnDataType_t dt, int64_t n, int64_t c, int64_t h, int64_t w,
                 bool virt)
{
    bd t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const int64_t dims[4] = {n, c, h, w}, strides[4] = {c * h * w, 1, c * w, c}, align = 16;
    OK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt));
    OK(set_i64(t, CUDNN_ATTR_TENSOR_DIMENSIONS, 4, dims));
    OK(set_i64(t, CUDNN_ATTR_TENSOR_STRIDES, 4, strides));
    OK(set_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 1, &uid));
    OK(set_i64(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, 1, &align));
    OK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &virt));
    OK(cudnnBackendFinalize(t));
    return t;
}

static bd conv_desc(int64_t pad, int64_t stride)
{
    bd c = create(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
    const cudnnDataType_t comp = CUDNN_DATA_FLOAT;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    const int64_t nd = 2, p[2] = {pad, pad}, s[2] = {stride, stride}, d[2] = {1, 1};
    OK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1,
                                &comp));
    OK(cudnnBackendSetAttribute(c, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1,
                                &mode));
    OK(set_i64(c, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 1, &nd));
    OK(set_i64(c, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, 2, p));
    OK(set_i64(c, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, 2, p));
    OK(set_i64(c, CUDNN_ATTR_CONVOLUTION_DILATIONS, 2, d));
    OK(set_i64(c, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, 2, s));
    OK(cudnnBackendFinalize(c));
    return c;
}

static bd pw_desc(cudnnPointwiseMode_t m)
{
    bd p = create(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    OK(cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &m));
    OK(cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &prec));
    if (m == CUDNN_POINTWISE_RELU_FWD || m == CUDNN_POINTWISE_RELU_BWD) {
        const double lo = 0.0, hi = 3.4028234663852886e38;
        OK(cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP, CUDNN_TYPE_DOUBLE, 1,
                                    &lo));
        OK(cudnnBackendSetAttribute(p, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP, CUDNN_TYPE_DOUBLE, 1,
                                    &hi));
    }
    OK(cudnnBackendFinalize(p));
    return p;
}

/* y = x OP b (b NULL: unary), or for RELU_BWD dx (y) from dy (b) and x. Returns the
 * operation's finalize status in *st when st is given (the op unfinalized then). */
static bd pw_op(cudnnPointwiseMode_t m, bd x, bd b, bd y, cudnnStatus_t *st = NULL)
{
    bd op = create(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    OK(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw_desc(m)));
    OK(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x));
    if (m == CUDNN_POINTWISE_RELU_BWD) {
        OK(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_DYDESC, b));
        OK(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_DXDESC, y));
    } else {
        if (b) OK(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b));
        OK(set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y));
    }
    OK(set_f32(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA1, 1.0f));
    OK(set_f32(op, CUDNN_ATTR_OPERATION_POINTWISE_ALPHA2, 1.0f));
    if (st)
        *st = cudnnBackendFinalize(op);
    else
        OK(cudnnBackendFinalize(op));
    return op;
}

/* A convolution operation of type t with its three tensors' attributes a0..a2 (in the
 * order the attribute names are listed) and its alpha, beta, conv names. */
static bd conv_op(cudnnBackendDescriptorType_t t, cudnnBackendAttributeName_t na,
                  cudnnBackendAttributeName_t nb, cudnnBackendAttributeName_t ncv,
                  cudnnBackendAttributeName_t n0, bd t0, cudnnBackendAttributeName_t n1, bd t1,
                  cudnnBackendAttributeName_t n2, bd t2, bd conv)
{
    bd op = create(t);
    OK(set_desc(op, n0, t0));
    OK(set_desc(op, n1, t1));
    OK(set_desc(op, n2, t2));
    OK(set_desc(op, ncv, conv));
    OK(set_f32(op, na, 1.0f));
    OK(set_f32(op, nb, 0.0f));
    OK(cudnnBackendFinalize(op));
    return op;
}

/* A forward convolution y = conv(x, w) on conv descriptor conv (conv_op). */
static bd fwd_conv_op(bd x, bd w, bd y, bd conv)
{
    return conv_op(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x,
                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w,
                   CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, y, conv);
}

/* A finalized operation graph of ops (n) on h; its finalize status. */
static cudnnStatus_t graph(cudnnHandle_t h, const bd *ops, int n, bd *g)
{
    *g = create(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    OK(cudnnBackendSetAttribute(*g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, n,
                                ops));
    OK(cudnnBackendSetAttribute(*g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
    return cudnnBackendFinalize(*g);
}

/* Whether configuration cfg's engine is noted non-deterministic (its results vary in their
 * last bits from run to run: the cases compare them with exact host sums). */
static bool nondeterministic(bd cfg)
{
    bd e = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
    int64_t got = -1, n = -1;
    bool nondet = false;
    OK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                1, &got, &e));
    OK(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                                CUDNN_NUMERICAL_NOTE_TYPE_COUNT, &n, notes));
    for (int64_t k = 0; k < n; k++) nondet |= notes[k] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC;
    return nondet;
}

/* The number of engine configurations heuristics (mode) gives g; the first deterministic
 * one whose plan finalizes in *plan (NULL when none), the count of those whose plans did
 * not finalize in *refused. */
static int64_t heuristics(cudnnHandle_t h, bd g, cudnnBackendHeurMode_t mode, bd *plan,
                          int *refused)
{
    bd heur = create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
    OK(set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g));
    OK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode));
    OK(cudnnBackendFinalize(heur));
    int64_t count = -1, got = -1;
    OK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                0, &count, NULL));
    *plan = NULL;
    *refused = 0;
    if (count <= 0) return count;
    std::vector<bd> cfgs((size_t)count);
    for (bd &c : cfgs) c = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    OK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                count, &got, cfgs.data()));
    EXPECT(got == count);
    for (bd c : cfgs) {
        if (nondeterministic(c)) continue;
        bd p = create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        OK(cudnnBackendSetAttribute(p, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &h));
        OK(set_desc(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, c));
        if (cudnnBackendFinalize(p) == CUDNN_STATUS_SUCCESS) {
            *plan = p;
            break;
        }
        (*refused)++;
    }
    return count;
}

/* A finalized variant pack of uids and ptrs (n) and workspace ws. */
static bd pack(const int64_t *uids, void *const *ptrs, int n, void *ws)
{
    bd v = create(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
    OK(set_i64(v, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, n, uids));
    OK(cudnnBackendSetAttribute(v, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n,
                                ptrs));
    OK(cudnnBackendSetAttribute(v, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &ws));
    OK(cudnnBackendFinalize(v));
    return v;
}

/* ------------------------------------------------------------------ host data */

/* A device array of n values of type dt, and its values as the host reads them. */
struct buf {
    cudnnDataType_t dt;
    std::vector<float> host;
    void *dev;
};

static unsigned rng = 12345u;

static float uniform(void)
{
    rng = rng * 1664525u + 1013904223u;
    return (float)((rng >> 8) & 0xffff) / 32768.0f - 1.0f;
}

static float round_to(cudnnDataType_t dt, double v)
{
    if (dt == CUDNN_DATA_HALF) return __half2float(__float2half_rn((float)v));
    if (dt == CUDNN_DATA_BFLOAT16) return __bfloat162float(__float2bfloat16_rn((float)v));
    return (float)v;
}

static size_t dt_size(cudnnDataType_t dt)
{
    return dt == CUDNN_DATA_FLOAT ? 4 : 2;
}

/* n random values in [lo, lo + 2 span) (rounded to dt), copied to the device; or NaN
 * filled outputs when out. */
static buf make(cudnnDataType_t dt, size_t n, float lo, float span, bool out = false)
{
    buf b;
    b.dt = dt;
    b.host.resize(n);
    std::vector<unsigned char> raw(n * dt_size(dt));
    for (size_t i = 0; i < n; i++) {
        b.host[i] = out ? NAN : round_to(dt, lo + span * (uniform() + 1.0f));
        if (dt == CUDNN_DATA_HALF)
            ((__half *)raw.data())[i] = __float2half_rn(b.host[i]);
        else if (dt == CUDNN_DATA_BFLOAT16)
            ((__nv_bfloat16 *)raw.data())[i] = __float2bfloat16_rn(b.host[i]);
        else
            ((float *)raw.data())[i] = b.host[i];
    }
    CUDA_OK(cudaMalloc(&b.dev, raw.size()));
    CUDA_OK(cudaMemcpy(b.dev, raw.data(), raw.size(), cudaMemcpyHostToDevice));
    return b;
}

/* The device contents of b as floats. */
static std::vector<float> fetch(const buf &b)
{
    const size_t n = b.host.size();
    std::vector<unsigned char> raw(n * dt_size(b.dt));
    std::vector<float> v(n);
    CUDA_OK(cudaMemcpy(raw.data(), b.dev, raw.size(), cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < n; i++)
        v[i] = b.dt == CUDNN_DATA_HALF       ? __half2float(((__half *)raw.data())[i])
               : b.dt == CUDNN_DATA_BFLOAT16 ? __bfloat162float(((__nv_bfloat16 *)raw.data())[i])
                                             : ((float *)raw.data())[i];
    return v;
}

/* Compares b's device contents with ref (relative tolerance tol); prints the worst. */
static void compare(const char *what, const char *name, const buf &b,
                    const std::vector<double> &ref, double tol)
{
    const std::vector<float> got = fetch(b);
    double worst = 0.0;
    size_t at = 0;
    for (size_t i = 0; i < ref.size(); i++) {
        const double e = fabs(got[i] - ref[i]) / (1.0 + fabs(ref[i]));
        if (!(e <= worst)) {
            worst = e;
            at = i;
        }
    }
    if (!(worst <= tol)) {
        fprintf(stderr, "test_cudnn_graph.cu: %s: %s[%zu] = %g, expected %g (error %g > %g)\n",
                what, name, at, got[at], ref[at], worst, tol);
        failures++;
    }
}

/* ------------------------------------------------------------------ the cases */

enum kind { FWD, WGRAD, DGRAD_DBN };

struct conv_case {
    kind k;
    cudnnDataType_t dt;
    int n, c, h, w, co, r, stride, pad;
    bool pro, stats;
    bool pro_io_type; /* the prologue's intermediates in the io type (else fp32) */
    int res;          /* FWD: 1 adds RES to the output, 2 relu(RES * RSCALE + RBIAS);
                         DGRAD_DBN: 1 adds a residual gradient (RES) before the mask */
};

/* uids as the engine numbers them */
enum {
    X = 1,
    W = 2,
    Y = 3,
    DY = 4,
    DW = 5,
    DZ = 6,
    SCALE = 7,
    BIAS = 8,
    SUM = 9,
    SQSUM = 10,
    MEAN = 11,
    INVSTD = 12,
    GAMMA = 13,
    BETA = 14,
    DSCALE = 15,
    DBIAS = 16,
    EQ_DY = 17,
    EQ_X = 18,
    EQ_B = 19,
    RES = 20,
    RSCALE = 21,
    RBIAS = 22
};

/* The support table's query of case cc. */
static fused_support_query query_of(const conv_case &cc)
{
    fused_support_query q;
    memset(&q, 0, sizeof(q));
    q.op = cc.k == FWD ? FUSED_SUPPORT_FWD : cc.k == WGRAD ? FUSED_SUPPORT_WGRAD
                                                           : FUSED_SUPPORT_DGRAD;
    q.pro = cc.k != DGRAD_DBN && cc.pro;
    q.res = cc.k == WGRAD ? 0 : cc.res;
    q.stats = cc.k == FWD && cc.stats;
    q.dtype = cc.dt == CUDNN_DATA_HALF       ? FUSED_SUPPORT_F16
              : cc.dt == CUDNN_DATA_BFLOAT16 ? FUSED_SUPPORT_BF16
                                             : FUSED_SUPPORT_F32;
    q.stride = cc.stride;
    q.k = cc.r;
    q.ci = cc.c;
    q.co = cc.co;
    return q;
}

/* Builds case cc on h (stream s) and, when the support table accepts its graph, runs and
 * checks it (capture: replayed from a graph); when the table refuses it, checks that the
 * emulated cuDNN lists no engine for it. Returns whether the graph got a plan. */
static bool run_case(cudnnHandle_t h, cudaStream_t s, const conv_case &cc, bool capture)
{
    const fused_support_query q = query_of(cc);
    const bool accepted = fused_support_accepts(&q, NULL) != 0;
    char what[160];
    snprintf(what, sizeof(what), "%s %s n%d c%d %dx%d co%d k%d s%d p%d%s%s%s%s",
             cc.k == FWD     ? "fwd"
             : cc.k == WGRAD ? "wgrad"
                             : "dgrad_dbn",
             cc.dt == CUDNN_DATA_HALF       ? "half"
             : cc.dt == CUDNN_DATA_BFLOAT16 ? "bf16"
                                            : "float",
             cc.n, cc.c, cc.h, cc.w, cc.co, cc.r, cc.stride, cc.pad,
             cc.pro ? (cc.pro_io_type ? " prologue(io type)" : " prologue") : "",
             cc.stats ? " stats" : "", cc.res ? " residual" : "", capture ? " captured" : "");
    const cudnnDataType_t dt = cc.dt, F = CUDNN_DATA_FLOAT;
    const int N = cc.n, C = cc.c, H = cc.h, Wd = cc.w, K = cc.co, R = cc.r;
    const int HO = (H + 2 * cc.pad - R) / cc.stride + 1, WO = (Wd + 2 * cc.pad - R) / cc.stride + 1;
    const size_t nx = (size_t)N * H * Wd * C, ny = (size_t)N * HO * WO * K,
                 nw = (size_t)K * R * R * C;
    /* one unit in the last place of the type, for sums rounded on either side of a tie */
    const double tol = dt == CUDNN_DATA_HALF       ? 1.5e-3
                       : dt == CUDNN_DATA_BFLOAT16 ? 1.2e-2
                                                   : 2e-6,
                 tol_sum = 2e-6;

    std::vector<bd> ops;
    std::vector<int64_t> uids;
    std::vector<void *> ptrs;
    std::vector<buf> bufs;
    auto add = [&](int64_t uid, const buf &b) {
        uids.push_back(uid);
        ptrs.push_back(b.dev);
    };
    bd conv = conv_desc(cc.pad, cc.stride);
    /* inputs */
    buf x = make(dt, nx, -1.0f, 1.0f), w = make(dt, nw, -0.5f, 0.5f);
    buf scale = make(dt, C, 0.5f, 0.5f), bias = make(dt, C, -0.5f, 0.5f);
    buf dy = make(dt, ny, -1.0f, 1.0f);
    buf mean = make(F, C, -0.2f, 0.2f), invstd = make(F, C, 0.5f, 0.5f);
    buf gamma = make(F, C, 0.5f, 0.5f), beta = make(F, C, -0.3f, 0.3f);
    buf res = make(dt, cc.k == FWD ? ny : nx, -1.0f, 1.0f);
    buf rscale = make(dt, K, 0.5f, 0.5f), rbias = make(dt, K, -0.5f, 0.5f);
    /* the convolution's input p = pro(x) (FWD, WGRAD), as the host computes it */
    std::vector<float> p(nx);
    for (size_t i = 0; i < nx; i++) {
        const size_t c = i % (size_t)C;
        const cudnnDataType_t vt = cc.pro_io_type ? cc.dt : CUDNN_DATA_FLOAT;
        const float t = round_to(vt, x.host[i] * scale.host[c]);
        const float u = round_to(vt, t + bias.host[c]);
        p[i] = cc.pro ? (u > 0.0f ? u : 0.0f) : x.host[i];
    }
    bd tx = tensor(X, dt, N, C, H, Wd, false), conv_in = tx;
    if (cc.k != DGRAD_DBN && cc.pro) {
        bd ts = tensor(SCALE, dt, 1, C, 1, 1, false), tb = tensor(BIAS, dt, 1, C, 1, 1, false);
        const cudnnDataType_t vt = cc.pro_io_type ? dt : F;
        bd v1 = tensor(101, vt, N, C, H, Wd, true), v2 = tensor(102, vt, N, C, H, Wd, true);
        bd v3 = tensor(103, vt, N, C, H, Wd, true);
        ops.push_back(pw_op(CUDNN_POINTWISE_MUL, tx, ts, v1));
        ops.push_back(pw_op(CUDNN_POINTWISE_ADD, v1, tb, v2));
        ops.push_back(pw_op(CUDNN_POINTWISE_RELU_FWD, v2, NULL, v3));
        conv_in = v3;
        add(SCALE, scale);
        add(BIAS, bias);
    }
    buf y, sum, sqsum, dw, dz, dscale, dbias, eqdy, eqx, eqb;
    std::vector<double> ry, rsum, rsq, rdw, rdz, rds, rdb, rey, rex, reb;
    if (cc.k == FWD) {
        bd tw = tensor(W, dt, K, C, R, R, false), ty = tensor(Y, dt, N, K, HO, WO, false);
        bd tc = cc.res ? tensor(117, F, N, K, HO, WO, true) : ty;   /* the conv's output */
        ops.push_back(fwd_conv_op(conv_in, tw, tc, conv));
        if (cc.res) {   /* y = conv + r */
            bd tr = tensor(RES, dt, N, K, HO, WO, false), r = tr;
            if (cc.res == 2) {
                bd ts = tensor(RSCALE, dt, 1, K, 1, 1, false);
                bd tb = tensor(RBIAS, dt, 1, K, 1, 1, false);
                bd v1 = tensor(121, F, N, K, HO, WO, true), v2 = tensor(122, F, N, K, HO, WO, true);
                r = tensor(123, F, N, K, HO, WO, true);
                ops.push_back(pw_op(CUDNN_POINTWISE_MUL, tr, ts, v1));
                ops.push_back(pw_op(CUDNN_POINTWISE_ADD, v1, tb, v2));
                ops.push_back(pw_op(CUDNN_POINTWISE_RELU_FWD, v2, NULL, r));
                add(RSCALE, rscale);
                add(RBIAS, rbias);
            }
            ops.push_back(pw_op(CUDNN_POINTWISE_ADD, tc, r, ty));
            add(RES, res);
        }
        y = make(dt, ny, 0, 0, true);
        add(X, x);
        add(W, w);
        add(Y, y);
        if (cc.stats) {
            bd gs = create(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR);
            const cudnnGenStatsMode_t m = CUDNN_GENSTATS_SUM_SQSUM;
            OK(cudnnBackendSetAttribute(gs, CUDNN_ATTR_OPERATION_GENSTATS_MODE,
                                        CUDNN_TYPE_GENSTATS_MODE, 1, &m));
            OK(cudnnBackendSetAttribute(gs, CUDNN_ATTR_OPERATION_GENSTATS_MATH_PREC,
                                        CUDNN_TYPE_DATA_TYPE, 1, &dt));
            OK(set_desc(gs, CUDNN_ATTR_OPERATION_GENSTATS_XDESC, ty));
            OK(set_desc(gs, CUDNN_ATTR_OPERATION_GENSTATS_SUMDESC,
                        tensor(SUM, F, 1, K, 1, 1, false)));
            OK(set_desc(gs, CUDNN_ATTR_OPERATION_GENSTATS_SQSUMDESC,
                        tensor(SQSUM, F, 1, K, 1, 1, false)));
            OK(cudnnBackendFinalize(gs));
            ops.push_back(gs);
            sum = make(F, K, 0, 0, true);
            sqsum = make(F, K, 0, 0, true);
            add(SUM, sum);
            add(SQSUM, sqsum);
        }
        /* y[n, oh, ow, k] = sum p[n, ih, iw, c] w[k, r, q, c] */
        ry.assign(ny, 0.0);
        rsum.assign(K, 0.0);
        rsq.assign(K, 0.0);
        for (int n = 0; n < N; n++)
            for (int oh = 0; oh < HO; oh++)
                for (int ow = 0; ow < WO; ow++)
                    for (int k = 0; k < K; k++) {
                        double a = 0.0;
                        for (int r = 0; r < R; r++)
                            for (int q = 0; q < R; q++) {
                                const int ih = oh * cc.stride - cc.pad + r,
                                          iw = ow * cc.stride - cc.pad + q;
                                if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                                for (int c = 0; c < C; c++)
                                    a += (double)p[(((size_t)n * H + ih) * Wd + iw) * C + c] *
                                         w.host[(((size_t)k * R + r) * R + q) * C + c];
                            }
                        const size_t yi = (((size_t)n * HO + oh) * WO + ow) * K + k;
                        float r = res.host[yi];
                        if (cc.res == 2) {
                            const float u = r * rscale.host[k] + rbias.host[k];
                            r = u > 0.0f ? u : 0.0f;
                        }
                        ry[yi] = cc.res ? round_to(dt, (float)a + r) : round_to(dt, a);
                        rsum[k] += ry[yi];
                        rsq[k] += ry[yi] * ry[yi];
                    }
    } else if (cc.k == WGRAD) {
        bd tdy = tensor(DY, dt, N, K, HO, WO, false), tdw = tensor(DW, dt, K, C, R, R, false);
        ops.push_back(conv_op(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, conv_in,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, tdy,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, tdw, conv));
        dw = make(dt, nw, 0, 0, true);
        add(X, x);
        add(DY, dy);
        add(DW, dw);
        /* dw[k, r, q, c] = sum p[n, ih, iw, c] dy[n, oh, ow, k] */
        rdw.assign(nw, 0.0);
        for (int k = 0; k < K; k++)
            for (int r = 0; r < R; r++)
                for (int q = 0; q < R; q++)
                    for (int c = 0; c < C; c++) {
                        double a = 0.0;
                        for (int n = 0; n < N; n++)
                            for (int oh = 0; oh < HO; oh++)
                                for (int ow = 0; ow < WO; ow++) {
                                    const int ih = oh * cc.stride - cc.pad + r,
                                              iw = ow * cc.stride - cc.pad + q;
                                    if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                                    a += (double)p[(((size_t)n * H + ih) * Wd + iw) * C + c] *
                                         dy.host[(((size_t)n * HO + oh) * WO + ow) * K + k];
                                }
                        rdw[(((size_t)k * R + r) * R + q) * C + c] = round_to(dt, a);
                    }
    } else {
        bd tdy = tensor(DY, dt, N, K, HO, WO, false), tw = tensor(W, dt, K, C, R, R, false);
        bd tt = tensor(111, F, N, C, H, Wd, true);
        ops.push_back(conv_op(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, tdy,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, tw,
                              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, tt, conv));
        bd tmean = tensor(MEAN, F, 1, C, 1, 1, false), tinv = tensor(INVSTD, F, 1, C, 1, 1, false);
        bd tgam = tensor(GAMMA, F, 1, C, 1, 1, false), tbeta = tensor(BETA, F, 1, C, 1, 1, false);
        bd v2 = tensor(112, F, N, C, H, Wd, true), v3 = tensor(113, F, N, C, H, Wd, true);
        bd v4 = tensor(114, F, N, C, H, Wd, true), v5 = tensor(115, F, N, C, H, Wd, true);
        bd tdz = tensor(DZ, dt, N, C, H, Wd, false);
        ops.push_back(pw_op(CUDNN_POINTWISE_SUB, tx, tmean, v2));
        ops.push_back(pw_op(CUDNN_POINTWISE_MUL, v2, tinv, v3));
        ops.push_back(pw_op(CUDNN_POINTWISE_MUL, v3, tgam, v4));
        ops.push_back(pw_op(CUDNN_POINTWISE_ADD, v4, tbeta, v5));
        bd tg = tt;   /* the gradient the mask takes */
        if (cc.res) {
            tg = tensor(116, F, N, C, H, Wd, true);
            ops.push_back(pw_op(CUDNN_POINTWISE_ADD, tt, tensor(RES, dt, N, C, H, Wd, false), tg));
        }
        ops.push_back(pw_op(CUDNN_POINTWISE_RELU_BWD, v5, tg, tdz));
        bd bn = create(CUDNN_BACKEND_OPERATION_BN_BWD_WEIGHTS_DESCRIPTOR);
        OK(cudnnBackendSetAttribute(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MATH_PREC,
                                    CUDNN_TYPE_DATA_TYPE, 1, &F));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_X_DESC, tx));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DY_DESC, tdz));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_MEAN_DESC, tmean));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_INVSTD_DESC, tinv));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_BN_SCALE_DESC, tgam));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_SCALE_DESC,
                    tensor(DSCALE, F, 1, C, 1, 1, false)));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_DBN_BIAS_DESC,
                    tensor(DBIAS, F, 1, C, 1, 1, false)));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_DY_SCALE_DESC,
                    tensor(EQ_DY, F, 1, C, 1, 1, false)));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_X_SCALE_DESC,
                    tensor(EQ_X, F, 1, C, 1, 1, false)));
        OK(set_desc(bn, CUDNN_ATTR_OPERATION_BN_BWD_WEIGHTS_EQ_BIAS,
                    tensor(EQ_B, F, 1, C, 1, 1, false)));
        OK(cudnnBackendFinalize(bn));
        ops.push_back(bn);
        dz = make(dt, nx, 0, 0, true);
        dscale = make(F, C, 0, 0, true);
        dbias = make(F, C, 0, 0, true);
        eqdy = make(F, C, 0, 0, true);
        eqx = make(F, C, 0, 0, true);
        eqb = make(F, C, 0, 0, true);
        add(DY, dy);
        add(W, w);
        add(X, x);
        add(MEAN, mean);
        add(INVSTD, invstd);
        add(GAMMA, gamma);
        add(BETA, beta);
        add(DZ, dz);
        add(DSCALE, dscale);
        add(DBIAS, dbias);
        add(EQ_DY, eqdy);
        add(EQ_X, eqx);
        add(EQ_B, eqb);
        if (cc.res) add(RES, res);
        /* t[n, ih, iw, c] = sum dy[n, oh, ow, k] w[k, r, q, c] over ih = oh s - pad + r */
        std::vector<double> t(nx, 0.0);
        for (int n = 0; n < N; n++)
            for (int oh = 0; oh < HO; oh++)
                for (int ow = 0; ow < WO; ow++)
                    for (int r = 0; r < R; r++)
                        for (int q = 0; q < R; q++) {
                            const int ih = oh * cc.stride - cc.pad + r,
                                      iw = ow * cc.stride - cc.pad + q;
                            if (ih < 0 || ih >= H || iw < 0 || iw >= Wd) continue;
                            for (int c = 0; c < C; c++)
                                for (int k = 0; k < K; k++)
                                    t[(((size_t)n * H + ih) * Wd + iw) * C + c] +=
                                        (double)dy.host[(((size_t)n * HO + oh) * WO + ow) * K + k] *
                                        w.host[(((size_t)k * R + r) * R + q) * C + c];
                        }
        rdz.assign(nx, 0.0);
        rds.assign(C, 0.0);
        rdb.assign(C, 0.0);
        rey.assign(C, 0.0);
        rex.assign(C, 0.0);
        reb.assign(C, 0.0);
        for (size_t i = 0; i < nx; i++) {
            const size_t c = i % (size_t)C;
            const float a = x.host[i] - mean.host[c], b = a * invstd.host[c];
            const float g = b * gamma.host[c], xbn = g + beta.host[c];
            const float gi = cc.res ? (float)t[i] + res.host[i] : (float)t[i];
            rdz[i] = xbn > 0.0f ? round_to(dt, gi) : 0.0;
            rds[c] += rdz[i] * ((double)x.host[i] - mean.host[c]) * invstd.host[c];
            rdb[c] += rdz[i];
        }
        const double cnt = (double)N * H * Wd;
        for (int c = 0; c < C; c++) {
            rey[c] = (double)gamma.host[c] * invstd.host[c];
            rex[c] = -rey[c] * invstd.host[c] * rds[c] / cnt;
            reb[c] = -rey[c] * rdb[c] / cnt - rex[c] * mean.host[c];
            rds[c] = (float)rds[c];
            rdb[c] = (float)rdb[c];
            rey[c] = (float)rey[c];
            rex[c] = (float)rex[c];
            reb[c] = (float)reb[c];
        }
    }
    bd g = NULL;
    OK(graph(h, ops.data(), (int)ops.size(), &g));
    int64_t engines = -1;
    OK(cudnnBackendGetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT, CUDNN_TYPE_INT64,
                                1, &engines, &engines));
    bd plan = NULL;
    int refused = 0;
    const int64_t n_cfg = heuristics(h, g, CUDNN_HEUR_MODE_A, &plan, &refused);
    if ((engines > 0) != accepted || (n_cfg > 0) != accepted || (plan != NULL) != accepted) {
        fprintf(stderr, "test_cudnn_graph.cu: %s: %lld engines, %lld configurations, %s; "
                "the support table %s it\n", what, (long long)engines, (long long)n_cfg,
                plan ? "a plan" : "no plan", accepted ? "accepts" : "refuses");
        failures++;
    }
    if (!plan || !accepted) {
        for (buf *b : {&x, &w, &scale, &bias, &dy, &mean, &invstd, &gamma, &beta, &res, &rscale,
                       &rbias, &y, &sum, &sqsum, &dw, &dz, &dscale, &dbias, &eqdy, &eqx, &eqb})
            if (!b->host.empty()) CUDA_OK(cudaFree(b->dev));
        destroy_all();
        return plan != NULL;
    }
    int64_t ws_size = -1, got = 0;
    OK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                &got, &ws_size));
    EXPECT(got == 1 && ws_size > 0);
    void *ws = NULL;
    CUDA_OK(cudaMalloc(&ws, (size_t)(ws_size > 0 ? ws_size : 1)));
    bd vp = pack(uids.data(), ptrs.data(), (int)uids.size(), ws);
    if (capture) {
        cudaGraph_t cg = NULL;
        cudaGraphExec_t ge = NULL;
        CUDA_OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        OK(cudnnBackendExecute(h, plan, vp));
        CUDA_OK(cudaStreamEndCapture(s, &cg));
        CUDA_OK(cudaGraphInstantiate(&ge, cg, 0));
        CUDA_OK(cudaGraphLaunch(ge, s));
        CUDA_OK(cudaGraphExecDestroy(ge));
        CUDA_OK(cudaGraphDestroy(cg));
    } else {
        OK(cudnnBackendExecute(h, plan, vp));
    }
    CUDA_OK(cudaStreamSynchronize(s));
    if (cc.k == FWD) {
        compare(what, "y", y, ry, tol);
        if (cc.stats) {
            compare(what, "sum", sum, rsum, tol_sum);
            compare(what, "sqsum", sqsum, rsq, tol_sum);
        }
    } else if (cc.k == WGRAD) {
        compare(what, "dw", dw, rdw, tol);
    } else {
        compare(what, "dz", dz, rdz, tol);
        compare(what, "dscale", dscale, rds, tol_sum);
        compare(what, "dbias", dbias, rdb, tol_sum);
        compare(what, "eq_dy", eqdy, rey, tol_sum);
        compare(what, "eq_x", eqx, rex, tol_sum);
        compare(what, "eq_b", eqb, reb, tol_sum);
    }
    /* refusals of this plan's execution */
    if (cc.k == FWD && !cc.pro && !cc.stats && !capture && cc.n == 2) {
        std::vector<void *> missing = ptrs;
        missing[1] = NULL; /* W */
        EXPECT(
            cudnnBackendExecute(h, plan, pack(uids.data(), missing.data(), (int)uids.size(), ws)) ==
            CUDNN_STATUS_BAD_PARAM);
        EXPECT(cudnnBackendExecute(h, plan,
                                   pack(uids.data(), ptrs.data(), (int)uids.size() - 1, ws)) ==
               CUDNN_STATUS_BAD_PARAM); /* Y left out */
        EXPECT(
            cudnnBackendExecute(h, plan, pack(uids.data(), ptrs.data(), (int)uids.size(), NULL)) ==
            CUDNN_STATUS_BAD_PARAM); /* no workspace */
        cudnnHandle_t other = NULL;
        EXPECT(cudnnCreate(&other) == CUDNN_STATUS_SUCCESS);
        EXPECT(cudnnBackendExecute(other, plan, vp) == CUDNN_STATUS_BAD_PARAM);
        EXPECT(cudnnDestroy(other) == CUDNN_STATUS_SUCCESS);
        EXPECT(cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR,
                                        1, &ws) == CUDNN_STATUS_NOT_SUPPORTED); /* finalized */
        EXPECT(refused >= 0);
    }
    CUDA_OK(cudaFree(ws));
    for (buf *b : {&x, &w, &scale, &bias, &dy, &mean, &invstd, &gamma, &beta, &res, &rscale,
                   &rbias, &y, &sum,
                   &sqsum, &dw, &dz, &dscale, &dbias, &eqdy, &eqx, &eqb})
        if (!b->host.empty()) CUDA_OK(cudaFree(b->dev));
    destroy_all();
    return true;
}

/* Graphs the emulated engines refuse, attributes and graphs finalize refuses. */
static void test_refusals(cudnnHandle_t h)
{
    const cudnnDataType_t F = CUDNN_DATA_FLOAT;
    bd plan = NULL, g = NULL;
    int refused = 0;
    /* a pointwise operation alone: a valid graph no engine serves */
    {
        bd x = tensor(X, F, 2, 4, 3, 3, false), b = tensor(BIAS, F, 1, 4, 1, 1, false);
        bd y = tensor(Y, F, 2, 4, 3, 3, false);
        bd op = pw_op(CUDNN_POINTWISE_ADD, x, b, y);
        OK(graph(h, &op, 1, &g));
        int64_t engines = -1;
        OK(cudnnBackendGetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                    CUDNN_TYPE_INT64, 1, &engines, &engines));
        EXPECT(engines == 0);
        EXPECT(heuristics(h, g, CUDNN_HEUR_MODE_A, &plan, &refused) == 0);
        EXPECT(heuristics(h, g, CUDNN_HEUR_MODE_FALLBACK, &plan, &refused) == 0);
        destroy_all();
    }
    /* a convolution with a ReLU epilogue: not one of the patterns */
    {
        bd x = tensor(X, F, 2, 4, 5, 5, false), w = tensor(W, F, 8, 4, 3, 3, false);
        bd v = tensor(120, F, 2, 8, 5, 5, true), y = tensor(Y, F, 2, 8, 5, 5, false);
        bd ops[2] = {fwd_conv_op(x, w, v, conv_desc(1, 1)),
                     pw_op(CUDNN_POINTWISE_RELU_FWD, v, NULL, y)};
        OK(graph(h, ops, 2, &g));
        EXPECT(heuristics(h, g, CUDNN_HEUR_MODE_A, &plan, &refused) == 0);
        destroy_all();
    }
    /* a residual the forward pattern does not take: the add's operands swapped (the
     * convolution's output as b), a per-channel vector instead of an activation, a 16-bit
     * convolution output */
    for (int variant = 0; variant < 3; variant++) {
        bd x = tensor(X, F, 2, 4, 5, 5, false), w = tensor(W, F, 8, 4, 3, 3, false);
        bd v = tensor(117, variant == 2 ? CUDNN_DATA_HALF : F, 2, 8, 5, 5, true);
        bd r = variant == 1 ? tensor(RES, F, 1, 8, 1, 1, false) : tensor(RES, F, 2, 8, 5, 5, false);
        bd y = tensor(Y, F, 2, 8, 5, 5, false);
        bd ops[2] = {fwd_conv_op(x, w, v, conv_desc(1, 1)),
                     variant == 0 ? pw_op(CUDNN_POINTWISE_ADD, r, v, y)
                                  : pw_op(CUDNN_POINTWISE_ADD, v, r, y)};
        OK(graph(h, ops, 2, &g));
        EXPECT(heuristics(h, g, CUDNN_HEUR_MODE_A, &plan, &refused) == 0);
        destroy_all();
    }
    /* a supported graph under DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1, then without it, then with
     * five engines listed (DAWNRUN_EMU_CUDNN_FUSED_ENGINES); every plan finalize counted */
    for (int pass = 0; pass < 3; pass++) {
        if (pass == 0)
            setenv("DAWNRUN_EMU_CUDNN_FUSED_REFUSE", "1", 1);
        else
            unsetenv("DAWNRUN_EMU_CUDNN_FUSED_REFUSE");
        if (pass == 2) setenv("DAWNRUN_EMU_CUDNN_FUSED_ENGINES", "5", 1);
        bd x = tensor(X, F, 2, 4, 5, 5, false), w = tensor(W, F, 8, 4, 3, 3, false);
        bd y = tensor(Y, F, 2, 8, 5, 5, false);
        bd op = fwd_conv_op(x, w, y, conv_desc(1, 1));
        OK(graph(h, &op, 1, &g));
        const long finalizes = emu_cudnn_plan_finalizes();
        const int64_t n = heuristics(h, g, CUDNN_HEUR_MODE_A, &plan, &refused);
        if (pass == 0)
            EXPECT(n == 0 && plan == NULL);
        else if (pass == 1)
            EXPECT(n == 3 && plan != NULL && refused == 1); /* engine 0 refuses */
        else
            EXPECT(n == 5 && plan != NULL && refused == 4); /* all but the last refuse */
        EXPECT(emu_cudnn_plan_finalizes() - finalizes == refused + (plan ? 1 : 0));
        unsetenv("DAWNRUN_EMU_CUDNN_FUSED_ENGINES");
        destroy_all();
    }
    /* the engines' numerical notes, read through a configuration's engine: engine 1 is
     * non-deterministic, engines 0 and 2 are not */
    {
        bd x = tensor(X, F, 2, 4, 5, 5, false), w = tensor(W, F, 8, 4, 3, 3, false);
        bd y = tensor(Y, F, 2, 8, 5, 5, false);
        bd op = fwd_conv_op(x, w, y, conv_desc(1, 1));
        OK(graph(h, &op, 1, &g));
        bd heur = create(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
        const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
        OK(set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g));
        OK(cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                    &mode));
        OK(cudnnBackendFinalize(heur));
        bd cfgs[3];
        int64_t got = -1;
        for (bd &c : cfgs) c = create(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
        OK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 3, &got, cfgs));
        EXPECT(got == 3);
        for (int i = 0; i < 3; i++) EXPECT(nondeterministic(cfgs[i]) == (i == 1));
        bd e = create(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
        cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT];
        int64_t n = -1;
        OK(cudnnBackendGetAttribute(cfgs[1], CUDNN_ATTR_ENGINECFG_ENGINE,
                                    CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &got, &e));
        EXPECT(cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_INT64, 1,
                                        &n, notes) == CUDNN_STATUS_BAD_PARAM);
        destroy_all();
    }
    /* attribute checks */
    {
        bd t = create(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
        const int32_t dims32[4] = {1, 2, 3, 4};
        const int64_t dims[4] = {1, 2, 3, 4}, one = 1;
        EXPECT(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT32, 4,
                                        dims32) == CUDNN_STATUS_BAD_PARAM);
        EXPECT(set_i64(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, 2, dims) == CUDNN_STATUS_BAD_PARAM);
        EXPECT(set_i64(t, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, 1, &one) == CUDNN_STATUS_BAD_PARAM);
        OK(set_i64(t, CUDNN_ATTR_TENSOR_DIMENSIONS, 4, dims));
        EXPECT(cudnnBackendFinalize(t) == CUDNN_STATUS_BAD_PARAM); /* strides etc. missing */
        bd u = tensor(X, F, 1, 2, 3, 4, false);
        EXPECT(set_i64(u, CUDNN_ATTR_TENSOR_UNIQUE_ID, 1, &one) == CUDNN_STATUS_NOT_SUPPORTED);
        bd p = create(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
        EXPECT(set_desc(p, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, u) == CUDNN_STATUS_BAD_PARAM);
        destroy_all();
    }
    /* shapes: a bias of the wrong channel count; a convolution's output size */
    {
        bd x = tensor(X, F, 2, 4, 5, 5, false), b = tensor(BIAS, F, 1, 5, 1, 1, false);
        bd y = tensor(Y, F, 2, 4, 5, 5, false);
        cudnnStatus_t st = CUDNN_STATUS_SUCCESS;
        pw_op(CUDNN_POINTWISE_ADD, x, b, y, &st);
        EXPECT(st == CUDNN_STATUS_BAD_PARAM);
        bd w = tensor(W, F, 8, 4, 3, 3, false), yy = tensor(Y, F, 2, 8, 5, 5, false);
        bd op = create(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
        OK(set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, x));
        OK(set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, w));
        OK(set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, yy));
        OK(set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv_desc(0, 1)));
        OK(set_f32(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, 1.0f));
        OK(set_f32(op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, 0.0f));
        EXPECT(cudnnBackendFinalize(op) == CUDNN_STATUS_BAD_PARAM); /* 3x3 pad 0: 3x3 out */
        destroy_all();
    }
    /* graphs: one id for two different tensors; operations not connected */
    {
        bd x = tensor(X, F, 2, 4, 5, 5, false), b = tensor(BIAS, F, 1, 4, 1, 1, false);
        bd y = tensor(Y, F, 2, 4, 5, 5, false), x2 = tensor(X, F, 2, 4, 6, 6, false);
        bd y2 = tensor(DZ, F, 2, 4, 6, 6, false), x3 = tensor(DY, F, 2, 4, 5, 5, false);
        bd y3 = tensor(DW, F, 2, 4, 5, 5, false);
        bd two[2] = {pw_op(CUDNN_POINTWISE_ADD, x, b, y),
                     pw_op(CUDNN_POINTWISE_RELU_FWD, x2, NULL, y2)};
        EXPECT(graph(h, two, 2, &g) == CUDNN_STATUS_BAD_PARAM);
        bd apart[2] = {two[0], pw_op(CUDNN_POINTWISE_RELU_FWD, x3, NULL, y3)};
        EXPECT(graph(h, apart, 2, &g) == CUDNN_STATUS_BAD_PARAM);
        destroy_all();
    }
}

/* Prints the support table (fused_support.h) as docs/cudnn-graphs.md has it, one row per
 * graph and data type. */
static void print_support_table(void)
{
    int n = 0;
    const fused_support_row *rows = fused_support_rows(&n);
    printf("| graph | type | verdict | kernel compiled | stride | channels | filter | "
           "documentation |\n");
    printf("| --- | --- | --- | --- | --- | --- | --- | --- |\n");
    for (int i = 0; i < n; i++)
        for (int d = FUSED_SUPPORT_F16; d < FUSED_SUPPORT_DTYPE_COUNT + FUSED_SUPPORT_F16; d++) {
            const int dt = d % FUSED_SUPPORT_DTYPE_COUNT;   /* fp16, bf16, fp32 */
            const fused_support_cell &c = rows[i].cell[dt];
            const char *none = "-";
            printf("| %s | %s | %s%s | %s | %s | %s | %s | %s |\n", rows[i].graph,
                   fused_support_dtype_name((fused_support_dtype)dt),
                   c.accepted ? "accepted: " : "", c.verdict,
                   !c.accepted ? none : c.runtime_compiled ? "at plan finalize" : "no",
                   !c.accepted ? none : rows[i].stride1_only ? "1" : "any",
                   !c.accepted ? none : dt == FUSED_SUPPORT_F32 ? "C, K multiples of 4"
                                                                : "C, K multiples of 8",
                   !c.accepted ? none : "any", c.source);
        }
}

/* Every row of the support table, in every data type, at strides 1 and 2, filter sizes 1
 * and 3, and channel counts that meet the table's condition and that do not (the input's,
 * then the output's): the emulated cuDNN serves exactly what the table accepts, and each
 * accepted case computes what the host computes. */
static void test_support_table(cudnnHandle_t h, cudaStream_t s)
{
    const cudnnDataType_t types[3] = {CUDNN_DATA_FLOAT, CUDNN_DATA_HALF, CUDNN_DATA_BFLOAT16};
    int n_rows = 0;
    const fused_support_row *rows = fused_support_rows(&n_rows);
    std::vector<int> seen((size_t)n_rows * 3, 0), ran((size_t)n_rows * 3, 0);
    /* (kind, prologue, residual, statistics): every graph of the table */
    struct shape { kind k; bool pro; int res; bool stats; };
    std::vector<shape> shapes;
    for (int pro = 0; pro < 2; pro++)
        for (int res = 0; res < 3; res++)
            for (int st = 0; st < 2; st++) shapes.push_back({FWD, pro != 0, res, st != 0});
    shapes.push_back({WGRAD, false, 0, false});
    shapes.push_back({WGRAD, true, 0, false});
    shapes.push_back({DGRAD_DBN, false, 0, false});
    shapes.push_back({DGRAD_DBN, false, 1, false});
    for (const shape &sh : shapes)
        for (int d = 0; d < 3; d++)
            for (int stride = 1; stride <= 2; stride++)
                for (int r = 1; r <= 3; r += 2)
                    for (int chan = 0; chan < 3; chan++) {
                        const int ok = d == 0 ? 4 : 8;   /* 16-byte channel rows */
                        const int ci = chan == 1 ? 3 : ok, co = chan == 2 ? ok + 2 : 2 * ok;
                        conv_case cc = {sh.k, types[d], 1, ci, 5, 5, co, r, stride, r / 2,
                                        sh.pro, sh.stats, false, sh.res};
                        const fused_support_query q = query_of(cc);
                        const fused_support_row *row = fused_support_row_of(&q);
                        EXPECT(row != NULL);
                        if (!row) continue;
                        const size_t at = (size_t)(row - rows) * 3 + (size_t)d;
                        seen[at]++;
                        if (run_case(h, s, cc, false)) ran[at]++;
                    }
    for (int i = 0; i < n_rows; i++)
        for (int d = 0; d < 3; d++) {
            const size_t at = (size_t)i * 3 + (size_t)d;
            if (!seen[at] || (rows[i].cell[d].accepted && !ran[at])) {
                fprintf(stderr, "test_cudnn_graph.cu: support table row %s %s: %d cases, %d "
                        "ran\n", rows[i].graph,
                        fused_support_dtype_name((fused_support_dtype)d), seen[at], ran[at]);
                failures++;
            }
        }
}

int main(void)
{
    if (getenv("FUSED_SUPPORT_PRINT")) {
        print_support_table();
        return 0;
    }
    cudnnHandle_t h = NULL;
    cudaStream_t s = NULL;
    CUDA_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    EXPECT(cudnnCreate(&h) == CUDNN_STATUS_SUCCESS);
    EXPECT(cudnnSetStream(h, s) == CUDNN_STATUS_SUCCESS);
    const cudnnDataType_t F = CUDNN_DATA_FLOAT, HF = CUDNN_DATA_HALF, BF = CUDNN_DATA_BFLOAT16;
    /* kind, type, n, c, h, w, co, k, stride, pad, prologue, stats[, prologue in io type[,
     * residual]]: graphs the support table accepts (channel rows of 16 bytes), and some it
     * refuses, which the emulated cuDNN must refuse too */
    const conv_case cases[] = {
        {FWD, F, 2, 4, 6, 5, 8, 3, 1, 1, true, false, false, 0},
        {FWD, HF, 2, 8, 5, 6, 8, 3, 2, 1, true, true, false, 0},   /* ConvBNfprop, full */
        {FWD, F, 2, 4, 5, 5, 4, 1, 2, 0, false, true, false, 0},
        {FWD, HF, 1, 8, 4, 4, 8, 1, 1, 0, true, false, false, 0},
        {FWD, F, 2, 4, 5, 5, 4, 3, 1, 0, false, false, false, 0},
        {FWD, HF, 2, 8, 5, 5, 16, 3, 1, 1, false, true, false, 0},  /* ConvBNfprop, partial */
        {FWD, BF, 2, 8, 5, 5, 8, 3, 1, 1, true, false, false, 0},
        {FWD, BF, 2, 8, 5, 5, 8, 3, 2, 1, true, false, true, 0},
        {WGRAD, F, 2, 4, 6, 5, 4, 3, 1, 1, true, false, false, 0},  /* refused */
        {WGRAD, HF, 2, 8, 5, 6, 8, 3, 2, 1, true, false, false, 0}, /* ConvBNwgrad */
        {WGRAD, F, 2, 4, 6, 6, 8, 1, 2, 0, false, false, false, 0},
        {WGRAD, HF, 1, 8, 5, 5, 8, 3, 1, 0, false, false, false, 0},
        {WGRAD, HF, 2, 8, 6, 6, 8, 3, 1, 1, true, false, true, 0},  /* the frontend's sample */
        {WGRAD, BF, 2, 8, 5, 5, 8, 3, 2, 1, true, false, false, 0}, /* refused */
        {DGRAD_DBN, HF, 2, 8, 5, 6, 8, 3, 1, 1, false, false, false, 0},
        {DGRAD_DBN, HF, 1, 8, 4, 4, 16, 1, 1, 0, false, false, false, 0},
        {DGRAD_DBN, HF, 2, 8, 5, 6, 8, 3, 2, 1, false, false, false, 0},      /* refused: stride */
        {DGRAD_DBN, F, 2, 4, 6, 6, 4, 1, 1, 0, false, false, false, 0},       /* refused: fp32 */
        {DGRAD_DBN, BF, 2, 8, 5, 5, 8, 3, 1, 1, false, false, false, 0},      /* refused: bf16 */
        {DGRAD_DBN, HF, 2, 8, 5, 6, 8, 3, 1, 1, false, false, false, 1},   /* refused */
        {FWD, HF, 2, 8, 5, 6, 8, 3, 2, 1, true, false, false, 1},  /* + residual */
        {FWD, F, 2, 4, 5, 5, 4, 3, 1, 0, false, false, false, 1},
        {FWD, BF, 2, 8, 5, 5, 8, 3, 1, 1, false, false, false, 1},
        {FWD, HF, 2, 8, 5, 6, 8, 3, 2, 1, true, true, false, 1},   /* refused: add + stats */
        {FWD, BF, 2, 8, 5, 5, 8, 3, 1, 1, true, false, false, 2},  /* refused: relu(res s + b) */
        {FWD, HF, 2, 8, 5, 5, 8, 1, 2, 0, false, true, false, 2},  /* refused */
        {FWD, HF, 2, 3, 5, 5, 8, 3, 1, 1, false, true, false, 0},     /* refused: 3 channels */
    };
    for (const conv_case &cc : cases) run_case(h, s, cc, false);
    run_case(h, s, cases[1], true);
    run_case(h, s, cases[14], true);
    run_case(h, s, cases[20], true);
    test_support_table(h, s);
    test_refusals(h);
    EXPECT(cudnnDestroy(h) == CUDNN_STATUS_SUCCESS);
    CUDA_OK(cudaStreamDestroy(s));
    if (failures) {
        fprintf(stderr, "test_cudnn_graph: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_cudnn_graph: all checks passed\n");
    return 0;
}

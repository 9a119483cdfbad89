/* CUDA graphs of the CUDA engine (kernels/cuda/graph_cuda.cu) under the host emulation
 * (run by tests/cuda_emu_graph_run.sh): a small replayable plan (convolution, batch norm,
 * ReLU, flatten, linear, cross-entropy forward and backward) run with graphs gives, run by
 * run, the bits it gives with DAWNRUN_CUDA_GRAPH=0; the first run of a signature is eager,
 * the second a capture, later ones one graph launch with no kernel launch, allocation,
 * synchronisation or copy of their own, the launch accounting the captured work (the
 * linear layer's GEMM is captured only from a cuBLAS handle with a workspace of its own,
 * which the engine sets: emu_libs.cpp refuses it otherwise); pointing a tensor handle at
 * other data makes a new graph, pointing it back replays the old one, and a fifth
 * signature replaces the least recently used graph; a regrown scratch buffer
 * makes the graph that addressed the old one be captured again; an op that synchronises
 * inside a capture: the step runs eagerly all the same (the eager run's results, no
 * error), one line names its plan node, the stream stops capturing, the other plan still
 * replays and this one runs eagerly from then on, saying nothing more; a plan freed with
 * its tensors and another built in its place, at the same host and device addresses,
 * starts with a warm-up of its own; and the engine runs a node of every op (its runner
 * table, backend_ops.supports). Exits 0 when every check holds, 1 otherwise (each failed
 * check is printed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern "C" {
#include "kernels/precision.h"
}
#include "cuda_internal.h"

static int failures;

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) {                                                                     \
            fprintf(stderr, "test_graph_run.cu:%d: expected %s\n", __LINE__, #cond);       \
            failures++;                                                                    \
        }                                                                                  \
    } while (0)

enum { B = 4, CI = 3, CO = 8, HW = 6, K = 10, NX = 4 };

/* The plan's tensors on one engine, and the plan. */
struct net {
    struct backend be;
    struct cuda_ctx *c;
    struct tensor x, x_other, w, y, z, gamma, beta, mean, invstd, rmean, rvar, a, flat, wl,
        logits, stats, probs, labels, dlogits, extra[NX];
    void *inputs[2 + NX];   /* the data x may point at: its own, x_other's, extra's */
    struct plan plan;
};

static struct tensor *net_tensors(struct net *n, int i)
{
    struct tensor *all[] = {&n->x,     &n->x_other, &n->w,      &n->y,      &n->z,
                            &n->gamma, &n->beta,    &n->mean,   &n->invstd, &n->rmean,
                            &n->rvar,  &n->a,       &n->flat,   &n->wl,     &n->logits,
                            &n->stats, &n->probs,   &n->labels, &n->dlogits};
    const int count = (int)(sizeof(all) / sizeof(all[0]));
    return i < count ? all[i] : i < count + NX ? &n->extra[i - count] : NULL;
}

static void shape(struct tensor *t, enum tensor_kind kind, int n, int c, int h, int w)
{
    t->kind = kind;
    t->n = n;
    t->c = c;
    t->h = h;
    t->w = w;
}

/* Deterministic values in [-1, 1) (seed picks the sequence). */
static void fill(float *v, size_t count, unsigned seed)
{
    unsigned s = seed * 2654435761u + 12345u;
    for (size_t i = 0; i < count; i++) {
        s = s * 1664525u + 1013904223u;
        v[i] = (float)((s >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
}

static int write_random(struct net *n, struct tensor *t, unsigned seed)
{
    const size_t count = tensor_count(t);
    float *v = (float *)malloc(count * sizeof(float));
    fill(v, count, seed);
    const int rc = n->be.ops->tensor_write(n->be.ctx, t, v);
    free(v);
    return rc;
}

static void node_conv(struct net *n)
{
    struct plan_node *d = plan_append(&n->plan, PLAN_CONV_FWD, PLAN_PHASE_FORWARD, 0);
    d->dst[PLAN_Y] = &n->y;
    d->src[PLAN_X] = &n->x;
    d->src[PLAN_W] = &n->w;
    d->par.conv.k = 3;
    d->par.conv.stride = 1;
    d->par.conv.pad = 1;
}

static void node_relu(struct net *n)
{
    struct plan_node *d = plan_append(&n->plan, PLAN_ACT_FWD, PLAN_PHASE_FORWARD, 2);
    d->dst[PLAN_Y] = &n->a;
    d->src[PLAN_X] = &n->z;
    d->par.act.kind = ACT_RELU;
}

/* Allocates and fills the plan's tensors (in the order of net_tensors) and builds the
 * plan; 0 on success. */
static int net_build(struct net *n)
{
    shape(&n->x, TENSOR_ACT, B, CI, HW, HW);
    shape(&n->x_other, TENSOR_ACT, B, CI, HW, HW);
    shape(&n->w, TENSOR_PARAM, CO, CI, 3, 3);
    shape(&n->y, TENSOR_ACT, B, CO, HW, HW);
    shape(&n->z, TENSOR_ACT, B, CO, HW, HW);
    shape(&n->gamma, TENSOR_PARAM, CO, 1, 1, 1);
    shape(&n->beta, TENSOR_PARAM, CO, 1, 1, 1);
    shape(&n->mean, TENSOR_F32, CO, 1, 1, 1);
    shape(&n->invstd, TENSOR_F32, CO, 1, 1, 1);
    shape(&n->rmean, TENSOR_F32, CO, 1, 1, 1);
    shape(&n->rvar, TENSOR_F32, CO, 1, 1, 1);
    shape(&n->a, TENSOR_ACT, B, CO, HW, HW);
    shape(&n->flat, TENSOR_ACT, B, CO * HW * HW, 1, 1);
    shape(&n->wl, TENSOR_PARAM, K, CO * HW * HW, 1, 1);
    shape(&n->logits, TENSOR_ACT, B, K, 1, 1);
    shape(&n->stats, TENSOR_F32, 2, 1, 1, 1);
    shape(&n->probs, TENSOR_ACT, B, K, 1, 1);
    shape(&n->labels, TENSOR_I32, B, 1, 1, 1);
    shape(&n->dlogits, TENSOR_ACT, B, K, 1, 1);
    for (int i = 0; i < NX; i++) shape(&n->extra[i], TENSOR_ACT, B, CI, HW, HW);
    for (int i = 0; net_tensors(n, i); i++)
        if (n->be.ops->tensor_alloc(n->be.ctx, net_tensors(n, i)) != DR_OK) return 1;
    const int32_t labels[B] = {3, 0, 9, 5};
    const float ones[CO] = {1, 1, 1, 1, 1, 1, 1, 1};
    if (write_random(n, &n->x, 1) || write_random(n, &n->x_other, 2) ||
        write_random(n, &n->w, 3) || write_random(n, &n->gamma, 4) ||
        write_random(n, &n->beta, 5) || write_random(n, &n->wl, 6) ||
        n->be.ops->tensor_write(n->be.ctx, &n->rvar, ones) ||
        n->be.ops->tensor_write(n->be.ctx, &n->labels, labels))
        return 1;
    for (int i = 0; i < NX; i++)
        if (write_random(n, &n->extra[i], 10 + (unsigned)i)) return 1;
    n->inputs[0] = n->x.data;
    n->inputs[1] = n->x_other.data;
    for (int i = 0; i < NX; i++) n->inputs[2 + i] = n->extra[i].data;

    node_conv(n);
    struct plan_node *d = plan_append(&n->plan, PLAN_BN_FWD_TRAIN, PLAN_PHASE_FORWARD, 1);
    d->dst[PLAN_Y] = &n->z;
    d->dst[PLAN_SAVE_MEAN] = &n->mean;
    d->dst[PLAN_SAVE_INVSTD] = &n->invstd;
    d->dst[PLAN_RUNNING_MEAN] = &n->rmean;
    d->dst[PLAN_RUNNING_VAR] = &n->rvar;
    d->src[PLAN_X] = &n->y;
    d->src[PLAN_GAMMA] = &n->gamma;
    d->src[PLAN_BETA] = &n->beta;
    d->par.bn.eps = 1e-5f;
    d->par.bn.momentum = 0.1f;
    node_relu(n);
    d = plan_append(&n->plan, PLAN_FLATTEN_FWD, PLAN_PHASE_FORWARD, 3);
    d->dst[PLAN_Y] = &n->flat;
    d->src[PLAN_X] = &n->a;
    d = plan_append(&n->plan, PLAN_LINEAR_FWD, PLAN_PHASE_FORWARD, 4);
    d->dst[PLAN_Y] = &n->logits;
    d->src[PLAN_X] = &n->flat;
    d->src[PLAN_W] = &n->wl;
    d = plan_append(&n->plan, PLAN_XENT_FWD, PLAN_PHASE_LOSS, -1);
    d->dst[PLAN_XENT_STATS] = &n->stats;   /* accumulates: a run that is skipped shows */
    d->dst[PLAN_XENT_PROBS] = &n->probs;
    d->src[PLAN_XENT_LOGITS] = &n->logits;
    d->src[PLAN_XENT_LABELS] = &n->labels;
    d->par.xent.smoothing = 0.2f;
    d = plan_append(&n->plan, PLAN_XENT_BWD, PLAN_PHASE_LOSS, -1);
    d->dst[PLAN_XENT_DLOGITS] = &n->dlogits;
    d->src[PLAN_XENT_BWD_PROBS] = &n->probs;
    d->src[PLAN_XENT_LABELS] = &n->labels;
    d->par.xent.smoothing = 0.2f;
    d->par.xent.scale = 1.0f / B;
    n->plan.replayable = 1;
    return 0;
}

/* Frees the plan and its tensors (the last allocated first), keeping the engine. */
static void net_unbuild(struct net *n)
{
    int count = 0;
    n->x.data = n->inputs[0];
    plan_free(&n->plan);
    while (net_tensors(n, count)) count++;
    for (int i = count - 1; i >= 0; i--) n->be.ops->tensor_free(n->be.ctx, net_tensors(n, i));
}

/* Builds the engine (graphs on or off), the tensors and the plan; 0 on success. */
static int net_create(struct net *n, int graphs)
{
    memset(n, 0, sizeof(*n));
    if (graphs) unsetenv("DAWNRUN_CUDA_GRAPH");
    else setenv("DAWNRUN_CUDA_GRAPH", "0", 1);
    if (backend_cuda_create(&n->be, 0, PRECISION_FP32) != DR_OK) return 1;
    n->c = (struct cuda_ctx *)n->be.ctx;
    /* runs are compared bit for bit: only deterministic cuDNN algorithms */
    if (n->be.ops->set_deterministic(n->be.ctx, 1) != DR_OK) return 1;
    return net_build(n);
}

static void net_free(struct net *n)
{
    net_unbuild(n);
    backend_destroy(&n->be);
}

/* Runs plan p once; *d = the counts of that run. */
static int run_counted(struct net *n, struct plan *p, struct backend_counters *d)
{
    struct backend_counters before = n->c->counts;
    const int rc = plan_compute(&n->be, p);
    backend_counters_diff(d, &n->c->counts, &before);
    return rc;
}

/* What the plan wrote and updated, read back: running statistics, loss sums, logits,
 * gradient. */
struct outputs {
    float rmean[CO], rvar[CO], stats[2], logits[B * K], dlogits[B * K];
};

static void read_outputs(struct net *n, struct outputs *o)
{
    memset(o, 0, sizeof(*o));
    const struct backend_ops *ops = n->be.ops;
    CHECK(ops->tensor_read(n->be.ctx, o->rmean, &n->rmean) == DR_OK);
    CHECK(ops->tensor_read(n->be.ctx, o->rvar, &n->rvar) == DR_OK);
    CHECK(ops->tensor_read(n->be.ctx, o->stats, &n->stats) == DR_OK);
    CHECK(ops->tensor_read(n->be.ctx, o->logits, &n->logits) == DR_OK);
    CHECK(ops->tensor_read(n->be.ctx, o->dlogits, &n->dlogits) == DR_OK);
}

static int same_outputs(const struct outputs *a, const struct outputs *b)
{
    return memcmp(a, b, sizeof(*a)) == 0;
}

static int capturing(struct net *n)
{
    cudaStreamCaptureStatus st = cudaStreamCaptureStatusActive;
    return cudaStreamIsCapturing(n->c->stream, &st) != cudaSuccess ||
           st != cudaStreamCaptureStatusNone;
}

/* Which data x points at in each run of the sequence (an index into net.inputs), and what
 * the graph runner does in that run: E eager (a signature's warm-up), C capture and
 * launch, R replay. A new data pointer is a new signature; one seen before replays at
 * once while the plan's graphs still hold it (up to four); the fifth evicts the least
 * recently used, whose exec the next capture updates. */
static const int schedule[] = {0, 0, 0, 1, 1, 1, 0, 2, 2, 2, 3, 3, 3, 4, 4, 4, 5, 5, 5, 1, 1, 1, 1};
static const char expected_kind[] = "ECRECRRECRECRECRECRECRC";
enum { RUNS = sizeof(schedule) / sizeof(schedule[0]) };
enum { REGROW_AT = RUNS - 1 };   /* before it every scratch buffer is regrown: the graph,
                                    which addresses the old ones, is captured again */

/* Grows every scratch buffer of the context (each moves to a new allocation). */
static void regrow_scratch(struct net *n)
{
    for (int k = 0; k < SLOT_COUNT; k++) {
        void *p = NULL;
        CHECK(cuda_scratch(n->c, (enum cuda_slot)k, n->c->scratch[k].bytes + 1, &p) == DR_OK);
    }
}

/* The eager reference: the sequence with DAWNRUN_CUDA_GRAPH=0. ref[k] = the outputs after
 * run k, eager[k] = run k's counts. */
static void reference(struct outputs ref[RUNS], struct backend_counters eager[RUNS])
{
    struct net n;
    if (net_create(&n, 0)) {
        fprintf(stderr, "test_graph_run: no emulated CUDA engine\n");
        exit(1);
    }
    for (int k = 0; k < RUNS; k++) {
        n.x.data = n.inputs[schedule[k]];
        if (k == REGROW_AT) regrow_scratch(&n);
        CHECK(run_counted(&n, &n.plan, &eager[k]) == DR_OK);
        CHECK(eager[k].graph_launches == 0 && eager[k].graph_captures == 0);
        CHECK(eager[k].kernel_launches > 0);
        read_outputs(&n, &ref[k]);
    }
    net_free(&n);
}

/* A replayed run: one graph launch and nothing else from the host, accounting the work
 * an eager run of the same plan does. */
static void check_replay(const struct backend_counters *d, const struct backend_counters *eager)
{
    CHECK(d->graph_launches == 1);
    CHECK(d->graph_captures == 0);
    CHECK(d->kernel_launches == 0);
    CHECK(d->cudnn_calls == 0 && d->cublas_calls == 0);
    CHECK(d->kernel_bytes_read == 0 && d->kernel_bytes_written == 0);
    CHECK(d->allocs == 0 && d->frees == 0);
    CHECK(d->syncs == 0);
    CHECK(d->h2d_copies == 0 && d->d2h_copies == 0);
    CHECK(d->d2d_copies == 0 && d->memsets == 0);
    CHECK(d->graph_kernels == eager->kernel_launches);
    CHECK(d->graph_kernel_bytes_read == eager->kernel_bytes_read);
    CHECK(d->graph_kernel_bytes_written == eager->kernel_bytes_written);
    CHECK(d->graph_cudnn_calls == eager->cudnn_calls);
    CHECK(d->graph_cublas_calls == eager->cublas_calls);
    CHECK(d->graph_memsets == eager->memsets && d->graph_d2d_copies == eager->d2d_copies);
}

/* Runs fn with stderr going to a buffer (out, size); returns fn's result. */
template <typename F> static int with_stderr(char *out, size_t size, F fn)
{
    char path[] = "/tmp/test_graph_run.XXXXXX";
    const int fd = mkstemp(path), saved = dup(2);
    fflush(stderr);
    dup2(fd, 2);
    const int rc = fn();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    const ssize_t got = pread(fd, out, size - 1, 0);
    out[got > 0 ? got : 0] = 0;
    close(fd);
    unlink(path);
    fprintf(stderr, "%s", out);   /* shown as well */
    return rc;
}

/* A plan run eagerly, captured and replayed, then freed with its tensors; another of the
 * same shapes built in the same host storage, its tensors at the freed ones' device
 * addresses (the emulated cudaMalloc reuses them, as the real one does): the engine must
 * not take it for the first one (its captured graph), so its first run is
 * an eager warm-up with the eager run's results, and its second a capture. */
static void check_rebuilt(const struct outputs ref[RUNS])
{
    struct net n;
    struct outputs got;
    struct backend_counters d;
    void *data[64];
    int count = 0, same = 1;
    CHECK(net_create(&n, 1) == 0);
    for (int k = 0; k < 3; k++) CHECK(run_counted(&n, &n.plan, &d) == DR_OK);   /* E, C, R */
    CHECK(d.graph_launches == 1 && d.kernel_launches == 0);
    for (count = 0; net_tensors(&n, count); count++) data[count] = net_tensors(&n, count)->data;
    net_unbuild(&n);
    CHECK(net_build(&n) == 0);
    for (int i = 0; i < count; i++) same &= net_tensors(&n, i)->data == data[i];
    CHECK(same);   /* else this check would not check anything */
    CHECK(run_counted(&n, &n.plan, &d) == DR_OK);
    CHECK(d.graph_launches == 0 && d.graph_captures == 0);
    CHECK(d.kernel_launches > 0);
    read_outputs(&n, &got);
    CHECK(same_outputs(&got, &ref[0]));
    CHECK(run_counted(&n, &n.plan, &d) == DR_OK);
    CHECK(d.graph_captures == 1 && d.graph_launches == 1);
    net_free(&n);
}

int main(void)
{
    static struct outputs ref[RUNS], got;
    struct backend_counters eager[RUNS], d;
    static_assert(sizeof(expected_kind) - 1 == RUNS, "one kind per run");
    reference(ref, eager);

    struct net n;
    CHECK(net_create(&n, 1) == 0);
    for (int k = 0; k < PLAN_OP_COUNT; k++) {   /* a runner for every plain op (nodes_cuda.cu) */
        struct plan_node bare;
        plan_node_init(&bare, (enum plan_op)k);
        CHECK(n.be.ops->supports(n.be.ctx, &bare) == !plan_op_is_fused((enum plan_op)k));
    }
    for (int k = 0; k < RUNS; k++) {
        const int before = failures;
        n.x.data = n.inputs[schedule[k]];
        if (k == REGROW_AT) regrow_scratch(&n);
        CHECK(run_counted(&n, &n.plan, &d) == DR_OK);
        switch (expected_kind[k]) {
        case 'E':
            CHECK(d.graph_launches == 0 && d.graph_captures == 0);
            CHECK(d.kernel_launches == eager[k].kernel_launches);
            break;
        case 'C':
            CHECK(d.graph_captures == 1 && d.graph_launches == 1);
            CHECK(d.kernel_launches == 0 && d.cudnn_calls == 0 && d.syncs == 0);
            CHECK(d.graph_kernels == eager[k].kernel_launches);
            break;
        default: check_replay(&d, &eager[k]);
        }
        read_outputs(&n, &got);
        CHECK(same_outputs(&got, &ref[k]));
        if (failures != before)
            fprintf(stderr, "  (run %d: input %d, expected %c)\n", k, schedule[k],
                    expected_kind[k]);
    }

    /* an op that synchronises inside the capture: a second plan (a ReLU, a convolution)
     * whose convolution has to choose its algorithms again at its capture (timing them
     * waits for the stream). The capture fails; the step runs eagerly all the same, with
     * the eager run's results and one line naming the node, and the plan runs without
     * graphs from then on. */
    struct plan lone = {};
    lone.replayable = 1;
    struct plan saved = n.plan;
    n.plan = lone;
    node_relu(&n);
    node_conv(&n);
    lone = n.plan;
    n.plan = saved;
    CHECK(run_counted(&n, &lone, &d) == DR_OK);   /* warm-up */
    const size_t ny = tensor_count(&n.y), na = tensor_count(&n.a);
    float *y_eager = (float *)calloc(ny, sizeof(float));
    float *y_got = (float *)calloc(ny, sizeof(float));
    float *a_eager = (float *)calloc(na, sizeof(float));
    float *a_got = (float *)calloc(na, sizeof(float));
    CHECK(n.be.ops->tensor_read(n.be.ctx, y_eager, &n.y) == DR_OK);
    CHECK(n.be.ops->tensor_read(n.be.ctx, a_eager, &n.a) == DR_OK);
    CHECK(n.be.ops->tensor_zero(n.be.ctx, &n.y) == DR_OK);   /* a run that is skipped shows */
    CHECK(n.be.ops->tensor_zero(n.be.ctx, &n.a) == DR_OK);
    const int n_algos = n.c->n_algos;
    n.c->n_algos = 0;
    char err[4096];
    int rc = with_stderr(err, sizeof(err), [&] { return run_counted(&n, &lone, &d); });
    CHECK(rc == DR_OK);
    CHECK(strstr(err, "plan node 1 of 2 (conv_fwd, forward, layer 0) cannot be captured"));
    CHECK(strstr(err, "this plan runs without CUDA graphs from now on"));
    const char *first = strstr(err, "cannot be captured");
    CHECK(first && !strstr(first + 1, "cannot be captured"));   /* said once */
    CHECK(!capturing(&n));
    CHECK(d.graph_launches == 0 && d.graph_captures == 0 && d.kernel_launches > 0);
    CHECK(n.c->n_algos >= n_algos);   /* chosen again by the eager run */
    CHECK(n.be.ops->tensor_read(n.be.ctx, y_got, &n.y) == DR_OK);
    CHECK(n.be.ops->tensor_read(n.be.ctx, a_got, &n.a) == DR_OK);
    CHECK(!memcmp(y_got, y_eager, ny * sizeof(float)));
    CHECK(!memcmp(a_got, a_eager, na * sizeof(float)));
    /* the stream works: the first plan replays; the second runs eagerly, saying nothing */
    CHECK(n.x.data == n.inputs[schedule[RUNS - 1]]);   /* the last graph the plan used */
    CHECK(run_counted(&n, &n.plan, &d) == DR_OK);
    CHECK(d.graph_launches == 1);
    for (int k = 0; k < 2; k++) {
        rc = with_stderr(err, sizeof(err), [&] { return run_counted(&n, &lone, &d); });
        CHECK(rc == DR_OK && !strstr(err, "cannot be captured"));
        CHECK(d.graph_launches == 0 && d.graph_captures == 0 && d.kernel_launches > 0);
    }
    CHECK(!capturing(&n));
    free(y_eager);
    free(y_got);
    free(a_eager);
    free(a_got);
    plan_free(&lone);
    net_free(&n);
    check_rebuilt(ref);

    if (failures) {
        fprintf(stderr, "test_graph_run: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_graph_run: every check holds\n");
    return 0;
}

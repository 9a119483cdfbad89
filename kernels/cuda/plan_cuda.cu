/* Runs a plan (kernels/plan.h) on the CUDA engine: every node through the engine's own
 * table, except the patterns fused here, replayed as a graph where graph_cuda.cu can.
 *
 * Which plain nodes fuse (docs/gpu.md, "Fused paths") is decided by the engine's analysis
 * (kernels/plan_fuse.h; in the half precisions with DAWNRUN_CUDA_FUSE_CONV on, the engine
 * takes none of the builder's fused nodes, so the analysis sees every batch norm there;
 * elsewhere the builder's fused nodes, run by fused_nodes_cuda.cu, hold the batch-norm
 * patterns and the analysis finds what is left), over the whole plan once per plan and signature
 * (plan_signature), kept in c->plans by the plan's address until the plan is freed
 * (cuda_plan_forget, called by plan_free, drops it with the plan's graphs): batch norm,
 * forward and evaluation, with the activation after it (and a residual add after that),
 * an activation's backward folded
 * into the batch norm's backward, a residual add taking the statistics of the batch
 * norm that reads its output, and a max pool whose windows tile the plane folded into the
 * batch norm whose activation it reads (bn_pool_cuda.cu). The CUDA engine's fused kernels
 * take every activation kind and leave values unwritten in any plan whose own nodes allow
 * it; this file keeps the analyses, the device buffers of the
 * coefficients a fused forward keeps for its backward and of the partial sums an add
 * takes for its batch norm, and runs the steps.
 * The batch norm inside the convolutions (cuDNN's fused graphs, conv_fused_cuda.cu) is
 * taken where the analysis finds it and cuDNN runs the graphs (plan_fuse_caps.conv_fwd_ok,
 * conv_bwd_ok ask conv_fused_cuda.cu, which builds and tries them), with the sums, the
 * apply's coefficients and the backward's coefficients in one device buffer per plan;
 * so is a convolution summing its output for a training batch norm that otherwise runs
 * with our own passes (the sums in the same buffer, the batch norm starting from them),
 * and a batch norm whose activation only convolutions read, through their prologue (its
 * coefficients only, BN_COEF; their weight gradients through the prologue too,
 * CONV_BWD_PRO, and the last data gradient into its activation's gradient through the
 * ReLU's mask and the batch norm's weight gradients, CONV_BWD, adding the shortcut's
 * gradient), and a residual add as the epilogue of the convolution writing one of its
 * operands (CONV_FWD with add).
 * DAWNRUN_CUDA_FUSE=0 (read at each run of a plan) runs every node one by one;
 * DAWNRUN_CUDA_FUSE_CONV=0 (read at each run too; a change redoes the analysis) keeps
 * the batch norm and the residual adds out of the convolutions, the other fused paths
 * on. */
#include <stdlib.h>
#include <string.h>

#include "cuda_internal.h"
#include "../../base/env.h"
#include "../../base/grow.h"

#include "conv_bn_cuda.h"
#include "conv_fused_cuda.h"
extern "C" {
#include "../plan_fuse.h"
}

/* The analysis of one plan. */
struct plan_entry {
    const struct plan *p;
    uint64_t sig;
    int count;
    int conv_on;                    /* DAWNRUN_CUDA_FUSE_CONV when analysed */
    struct plan_fuse_step *steps;   /* (count) */
    size_t *coef_at;                /* (count): where steps[i].keeps_coef, the float offset
                                       of node i's kept coefficients in coef */
    float *coef;                    /* device: the kept coefficients of every fused forward
                                       that keeps them */
    size_t coef_floats;
    size_t *stats_at;               /* (count): where steps[i] is an ADD_STATS (or an
                                       ADD_PRO taking statistics), the double
                                       offset of the partial sums it takes in stats */
    double *stats;                  /* device: the statistics' partial sums each such add
                                       takes for its batch norm */
    size_t stats_doubles;
    size_t *cbn_at;                 /* (count): where batch norm i has vectors in cbn
                                       (has_cbn), the float offset of them (CBN_*) */
    float *cbn;                     /* device: those vectors of every batch norm inside the
                                       convolutions, read through their prologue or taking
                                       their sums */
    size_t cbn_floats;
    /* The device buffers only grow: an analysis for another signature keeps them when they
     * are large enough (their contents live within one run), so that a graph captured for
     * one signature of the plan still addresses live buffers after a run of another. */
    size_t coef_cap, stats_cap, cbn_cap;   /* elements allocated */
    uint64_t gen;                   /* changes whenever a buffer moves (plan_cache.clock) */
};

/* The vectors of a batch norm inside the convolutions, of c floats each from cbn_at: the
 * sums the convolution writing x takes, the apply's scale and bias (in the compute type,
 * c elements each within their c floats), the weight gradients when the batch norm's own
 * tensors do not take them, and the input gradient's coefficients. */
enum { CBN_SUM, CBN_SQSUM, CBN_SCALE, CBN_BIAS, CBN_DSCALE, CBN_DBIAS, CBN_EQ_DY, CBN_EQ_X,
       CBN_EQ_B, CBN_COUNT };

struct plan_cache {
    struct plan_entry *e;
    int n, cap;
    uint64_t clock;                 /* the last plan_entry.gen given */
};

/* What the fused kernels (bn_cuda.cu) take beyond the analysis's rules: an add taking a
 * batch norm's statistics, the max pool folded in, the cuDNN graphs as conv_fused_cuda.cu
 * answers; the kernels check their shapes themselves. */
static int conv_fwd_ok(void *user, const struct plan_node *conv, const struct plan_node *pro,
                       const struct plan_node *stats);
static int conv_bwd_ok(void *user, const struct plan_node *conv, const struct plan_node *bn);
static int conv_wgrad_ok(void *user, const struct plan_node *conv, const struct plan_node *bn);
static int conv_add_ok(void *user, const struct plan_node *conv, const struct plan_node *pro,
                       const struct plan_node *add, const struct plan_node *res_bn,
                       const struct plan_node *stats);
static const struct plan_fuse_caps CUDA_FUSE_CAPS = {1, conv_fwd_ok, conv_bwd_ok, NULL, 1,
                                                     conv_wgrad_ok, 1, conv_add_ok};

/* The fused graphs' arguments, filled alike for the analysis's trial (conv_fwd_ok,
 * conv_bwd_ok) and the run (run_conv_fwd, run_conv_bwd), so that the trial asks about the
 * graph the run executes. */

/* CONV_FWD node conv: reading bn_x through the apply pro (the batch norm's scale and bias)
 * instead of its own x when pro is given; the per-channel sums of its output into sum,
 * sqsum (co) when given. */
static struct cuda_conv_fused_args conv_fwd_args(const struct plan_node *conv,
                                                 const struct tensor *bn_x,
                                                 const struct cuda_conv_prologue *pro,
                                                 float *sum, float *sqsum)
{
    struct cuda_conv_fused_args args = {};
    args.kind = CUDA_CONV_FUSED_FWD;
    args.a = &conv->par.conv;
    args.y = conv->dst[PLAN_Y];
    args.x = pro ? bn_x : conv->src[PLAN_X];
    args.w = conv->src[PLAN_W];
    args.pro = pro;
    args.sum = sum;
    args.sqsum = sqsum;
    return args;
}

/* Adds ADD_FWD node add to the args of CONV_FWD node conv: the sum written as the add's
 * output, the add's other operand added, recomputed from BN_FWD_TRAIN node res_bn's x
 * through res_pro (that batch norm's apply) when res_bn is given. */
static void conv_add_args(struct cuda_conv_fused_args *args, const struct plan_node *conv,
                          const struct plan_node *add, const struct plan_node *res_bn,
                          const struct cuda_conv_prologue *res_pro)
{
    args->y = add->dst[PLAN_Y];
    if (res_bn) {
        args->res = res_bn->src[PLAN_X];
        args->res_pro = res_pro;
    } else {
        args->res = plan_fuse_add_other(add, conv->dst[PLAN_Y], NULL);
    }
}

/* CONV_BWD node conv's weight gradient, reading BN_FWD_TRAIN node bn's x through the apply
 * pro. */
static struct cuda_conv_fused_args conv_wgrad_args(const struct plan_node *conv,
                                                   const struct plan_node *bn,
                                                   const struct cuda_conv_prologue *pro)
{
    struct cuda_conv_fused_args args = {};
    args.kind = CUDA_CONV_FUSED_WGRAD;
    args.a = &conv->par.conv;
    args.dw = conv->dst[PLAN_DW];
    args.x = bn->src[PLAN_X];
    args.w = conv->src[PLAN_BWD_W];
    args.dy = conv->src[PLAN_DY];
    args.pro = pro;
    return args;
}

/* The per-channel outputs (ci) of a data gradient with the batch norm's backward sums. */
struct conv_dbn_out {
    float *dscale, *dbias, *eq_dy, *eq_x, *eq_b;
};

/* CONV_BWD node conv's data gradient (plus what its dx holds, when it accumulates: the
 * gradient the activation's other readers gave it) through the ReLU mask of BN_FWD_TRAIN
 * node bn into dz (bn's x's shape), with bn's weight gradients and input-gradient
 * coefficients into o. */
static struct cuda_conv_fused_args conv_dgrad_dbn_args(const struct plan_node *conv,
                                                       const struct plan_node *bn,
                                                       struct tensor *dz,
                                                       const struct conv_dbn_out *o)
{
    struct cuda_conv_fused_args args = {};
    args.kind = CUDA_CONV_FUSED_DGRAD_DBN;
    args.a = &conv->par.conv;
    args.dz = dz;
    args.dscale = o->dscale;
    args.dbias = o->dbias;
    args.eq_dy = o->eq_dy;
    args.eq_x = o->eq_x;
    args.eq_b = o->eq_b;
    args.dy = conv->src[PLAN_DY];
    args.w = conv->src[PLAN_BWD_W];
    args.x = bn->src[PLAN_X];
    args.mean = (const float *)bn->dst[PLAN_SAVE_MEAN]->data;
    args.invstd = (const float *)bn->dst[PLAN_SAVE_INVSTD]->data;
    args.gamma = (const float *)bn->src[PLAN_GAMMA]->data;
    args.beta = (const float *)bn->src[PLAN_BETA]->data;
    args.res = PLAN_NODE_ACC(conv, PLAN_DX) ? conv->dst[PLAN_DX] : NULL;
    return args;
}

/* Whether CONV_BWD node conv computes a weight gradient. */
static int conv_has_dw(const struct plan_node *conv)
{
    return conv->dst[PLAN_DW] && conv->dst[PLAN_DW]->data;
}

/* Probe vectors for cuda_conv_fused_usable's trial (which reads them and writes nothing
 * of theirs): 2 x c floats of scratch, contents arbitrary. */
static int probe_vectors(struct cuda_ctx *c, int channels, float **out)
{
    void *p = NULL;
    const int rc = cuda_scratch(c, SLOT_REDUCE, sizeof(float) * 2 * (size_t)channels, &p);
    *out = (float *)p;
    return rc;
}

/* The batch norm goes inside the convolutions in the half precisions only: in fp32 the
 * engine's convolutions are FMA-only to match the CPU engine (conv_cuda.cu), and cuDNN's
 * fused engines may compute fp32 on TF32 tensor cores (the graph API has no math type). */

/* Who answers the conv_* caps below: the context, and whether the answer may build the
 * graph (cuDNN's heuristics, plan finalizes where it compiles, a trial) or only say
 * whether the graph may be used (the support table, alignment, an earlier refusal). The
 * analysis asks without building; the graphs of the steps it then chose are built, and
 * a graph cuDNN refuses sends the plan back to the analysis without it (analyse). failed
 * is set when an answer met an error (said on stderr) rather than a refusal. */
struct fuse_asker {
    struct cuda_ctx *c;
    int build;
    int failed;
};

/* The batch norm inside a convolution is a choice, not a need: an error while asking
 * (an allocation) is said, noted in a->failed, and the convolution runs as it is. */
static int usable_or_not(struct fuse_asker *a, const struct cuda_conv_fused_args *args)
{
    const int r = a->build ? cuda_conv_fused_usable(a->c, args)
                           : cuda_conv_fused_plausible(a->c, args);
    if (r < 0) a->failed = 1;
    return r > 0;
}

/* plan_fuse_caps.conv_add_ok: whether conv_fused_cuda.cu runs CONV_FWD node conv with the
 * apply of batch norm pro on its input (or none), ADD_FWD node add's other operand
 * (recomputed through batch norm res_bn's apply, or as it is) added to its output (add
 * NULL: nothing added, res_bn NULL too), and the sums of batch norm stats (or none). */
static int conv_add_ok(void *user, const struct plan_node *conv, const struct plan_node *pro,
                       const struct plan_node *add, const struct plan_node *res_bn,
                       const struct plan_node *stats)
{
    struct fuse_asker *asker = (struct fuse_asker *)user;
    struct cuda_ctx *c = asker ? asker->c : NULL;
    float *probe = NULL;
    const int width = conv->src[PLAN_X]->c > conv->src[PLAN_W]->n ? conv->src[PLAN_X]->c
                                                                   : conv->src[PLAN_W]->n;
    if (!c || c->dt == CUDA_F32 || probe_vectors(c, 3 * width, &probe) != DR_OK) return 0;
    if (pro && !tensor_same_shape(pro->src[PLAN_X], conv->src[PLAN_X])) return 0;
    const struct tensor *out = add ? add->dst[PLAN_Y] : conv->dst[PLAN_Y];
    if (stats && !tensor_same_shape(stats->src[PLAN_X], out)) return 0;
    if (res_bn && !tensor_same_shape(res_bn->src[PLAN_X], out)) return 0;
    const struct cuda_conv_prologue prologue = {probe, probe + width};
    const struct cuda_conv_prologue res_pro = {probe + 2 * width, probe + 3 * width};
    struct cuda_conv_fused_args args =
        conv_fwd_args(conv, pro ? pro->src[PLAN_X] : NULL, pro ? &prologue : NULL,
                      stats ? probe + 4 * width : NULL, stats ? probe + 5 * width : NULL);
    if (add) conv_add_args(&args, conv, add, res_bn, res_bn ? &res_pro : NULL);
    return usable_or_not(asker, &args);
}

/* plan_fuse_caps.conv_fwd_ok: whether conv_fused_cuda.cu runs CONV_FWD node conv with the
 * apply of batch norm pro on its input and the sums of batch norm stats (conv_add_ok
 * without an add). */
static int conv_fwd_ok(void *user, const struct plan_node *conv, const struct plan_node *pro,
                       const struct plan_node *stats)
{
    return conv_add_ok(user, conv, pro, NULL, NULL, stats);
}

/* plan_fuse_caps.conv_bwd_ok: whether conv_fused_cuda.cu runs CONV_BWD node conv with the
 * apply of batch norm bn on x for the weight gradient and the ReLU mask and bn's weight
 * gradients after the data gradient (plus what dx holds, when conv accumulates). */
static int conv_bwd_ok(void *user, const struct plan_node *conv, const struct plan_node *bn)
{
    struct fuse_asker *asker = (struct fuse_asker *)user;
    struct cuda_ctx *c = asker ? asker->c : NULL;
    float *probe = NULL;
    const struct tensor *x = bn->src[PLAN_X];
    if (!c || c->dt == CUDA_F32 || !tensor_same_shape(x, conv->src[PLAN_BWD_X]) ||
        probe_vectors(c, 3 * x->c, &probe) != DR_OK)
        return 0;
    const struct cuda_conv_prologue prologue = {probe, probe + x->c};
    if (conv_has_dw(conv)) {
        const struct cuda_conv_fused_args args = conv_wgrad_args(conv, bn, &prologue);
        if (!usable_or_not(asker, &args)) return 0;
    }
    struct tensor dz = *x;   /* a tensor of x's shape: the trial writes nothing of it */
    const struct conv_dbn_out o = {probe, probe + x->c, probe + 2 * x->c, probe + 3 * x->c,
                                   probe + 4 * x->c};
    const struct cuda_conv_fused_args args = conv_dgrad_dbn_args(conv, bn, &dz, &o);
    return usable_or_not(asker, &args);
}

/* Whether node i's step takes the sums a fused convolution computes for it (a BN_TRAIN or
 * BN_COEF whose stats names a CONV_FWD). */
static int sums_from_conv(const struct plan *p, const struct plan_fuse_step *steps, int i)
{
    const struct plan_fuse_step *s = &steps[i];
    return (s->kind == PLAN_FUSE_BN_TRAIN || s->kind == PLAN_FUSE_BN_COEF) && s->stats >= 0 &&
           p->nodes[s->stats].op == PLAN_CONV_FWD;
}

/* Whether batch norm node i has vectors in cbn (CBN_*): one inside the convolutions
 * (BN_SUMS), one whose activation convolutions read through its apply (BN_COEF), or one
 * taking a convolution's sums. */
static int has_cbn(const struct plan *p, const struct plan_fuse_step *steps, int i)
{
    return steps[i].kind == PLAN_FUSE_BN_SUMS || steps[i].kind == PLAN_FUSE_BN_COEF ||
           sums_from_conv(p, steps, i);
}

/* plan_fuse_caps.conv_wgrad_ok: whether conv_fused_cuda.cu runs CONV_BWD node conv's
 * weight gradient with the apply of batch norm bn on x (its data gradient runs as it is). */
static int conv_wgrad_ok(void *user, const struct plan_node *conv, const struct plan_node *bn)
{
    struct fuse_asker *asker = (struct fuse_asker *)user;
    struct cuda_ctx *c = asker ? asker->c : NULL;
    float *probe = NULL;
    const struct tensor *x = bn->src[PLAN_X];
    if (!c || c->dt == CUDA_F32 || !tensor_same_shape(x, conv->src[PLAN_BWD_X])) return 0;
    if (!conv_has_dw(conv)) return 1;   /* nothing reads x */
    if (probe_vectors(c, x->c, &probe) != DR_OK) return 0;
    const struct cuda_conv_prologue prologue = {probe, probe + x->c};
    const struct cuda_conv_fused_args args = conv_wgrad_args(conv, bn, &prologue);
    return usable_or_not(asker, &args);
}

/* The analysis's rounds at most (analyse), each refusing one graph or more. */
#define FUSE_ROUNDS 64

/* Builds the fused cuDNN graphs that steps (of plan p) run, through the caps' own
 * questions asked of builder (which builds): 1 when every one is usable, 0 at the first
 * that is not (cuDNN refused it, or the build budget is spent: it is remembered as
 * refused; or building it met an error: builder->failed; nothing after it is built). */
static int steps_built(struct fuse_asker *builder, const struct plan *p,
                       const struct plan_fuse_step *steps)
{
    void *user = builder;
    for (int i = 0; i < p->count; i++) {
        const struct plan_fuse_step *s = &steps[i];
        const struct plan_node *n = &p->nodes[i];
        int ok = 1;
        if (s->kind == PLAN_FUSE_CONV_FWD) {
            const struct plan_node *add = s->add >= 0 ? &p->nodes[s->add] : NULL;
            ok = conv_add_ok(user, n, s->fwd >= 0 ? &p->nodes[s->fwd] : NULL, add,
                             add && s->act >= 0 ? &p->nodes[s->act] : NULL,
                             s->stats >= 0 ? &p->nodes[s->stats] : NULL);
        } else if (s->kind == PLAN_FUSE_CONV_BWD) {
            ok = conv_bwd_ok(user, n, &p->nodes[s->fwd]);
        } else if (s->kind == PLAN_FUSE_CONV_BWD_PRO) {
            ok = conv_wgrad_ok(user, n, &p->nodes[s->fwd]);
        }
        if (!ok) return 0;
    }
    return 1;
}

/* Frees e's analysis, keeping its device buffers (and their generation). */
static void entry_clear_analysis(struct plan_entry *e)
{
    free(e->cbn_at);
    free(e->coef_at);
    free(e->stats_at);
    free(e->steps);
    e->cbn_at = e->coef_at = e->stats_at = NULL;
    e->steps = NULL;   /* analysed again on its next use */
}

/* Frees e whole, its device buffers after the stream has finished with them. */
static void entry_clear(struct cuda_ctx *c, struct plan_entry *e)
{
    if (e->coef || e->stats || e->cbn) cuda_counted_sync(c);
    if (e->coef) cuda_counted_free(c, e->coef);
    if (e->stats) cuda_counted_free(c, e->stats);
    if (e->cbn) cuda_counted_free(c, e->cbn);
    entry_clear_analysis(e);
    memset(e, 0, sizeof(*e));
}

/* Makes device buffer *buf (*cap elements of size bytes) hold need elements: kept when it
 * does; else freed once the stream has finished with it, allocated anew, and *moved set. */
static int buffer_fit(struct cuda_ctx *c, void **buf, size_t *cap, int *moved, size_t need,
                      size_t size)
{
    int rc = DR_OK;
    if (need <= *cap) return DR_OK;
    *moved = 1;
    if (*buf) {   /* kept as it was (buffer and capacity) when this fails */
        CHECK_CUDA(cuda_counted_sync(c));   /* graphs and runs queued may still use it */
        CHECK_CUDA(cuda_counted_free(c, *buf));
        *buf = NULL;
        *cap = 0;
    }
    CHECK_CUDA(cuda_counted_malloc(c, buf, size * need));
    *cap = need;
cleanup:
    if (rc != DR_OK && *cap == 0) *buf = NULL;   /* a failed allocation leaves nothing */
    return rc;
}

/* Finds the fused steps of p into e (its analysis cleared), with the device buffers of the
 * vectors, coefficients and partial sums they keep (grown when too small, which gives e a
 * new generation from clock). */
static int analyse(struct cuda_ctx *c, struct plan_entry *e, const struct plan *p, int conv_on,
                   uint64_t *clock)
{
    int rc = DR_OK;
    int moved = 0;
    const size_t slots = (size_t)(p->count ? p->count : 1);
    e->p = p;
    e->conv_on = conv_on;
    e->sig = plan_signature(p);
    e->count = p->count;
    e->steps = (struct plan_fuse_step *)calloc(slots, sizeof(*e->steps));
    CHECK_ALLOC(e->steps, "the CUDA plan analysis");
    e->coef_at = (size_t *)calloc(slots, sizeof(*e->coef_at));
    CHECK_ALLOC(e->coef_at, "the CUDA plan analysis");
    e->stats_at = (size_t *)calloc(slots, sizeof(*e->stats_at));
    CHECK_ALLOC(e->stats_at, "the CUDA plan analysis");
    e->cbn_at = (size_t *)calloc(slots, sizeof(*e->cbn_at));
    CHECK_ALLOC(e->cbn_at, "the CUDA plan analysis");
    {
        struct plan_fuse_caps caps = CUDA_FUSE_CAPS;
        struct fuse_asker ask = {c, 0, 0}, build = {c, 1, 0};
        caps.user = &ask;
        for (int round = 1; conv_on; round++) {
            plan_fuse_analyse(e->steps, p, &caps);
            if (steps_built(&build, p, e->steps)) break;
            /* a graph cuDNN refused is remembered as refused: the next round's analysis
             * does without it. After an error (not remembered: it could recur each
             * round), or after FUSE_ROUNDS rounds, the plan does without cuDNN's fused
             * graphs altogether. */
            if (build.failed || ask.failed || round == FUSE_ROUNDS) conv_on = 0;
        }
        if (!conv_on) {
            caps.conv_fwd_ok = NULL;
            caps.conv_bwd_ok = NULL;
            caps.conv_wgrad_ok = NULL;
            caps.conv_add_ok = NULL;
            plan_fuse_analyse(e->steps, p, &caps);
        }
    }
    e->cbn_floats = 0;
    for (int i = 0; i < p->count; i++) {
        if (!has_cbn(p, e->steps, i)) continue;
        e->cbn_at[i] = e->cbn_floats;
        /* 16-byte aligned vectors */
        e->cbn_floats += (size_t)CBN_COUNT * (((size_t)p->nodes[i].src[PLAN_X]->c + 3) / 4 * 4);
    }
    TRY(buffer_fit(c, (void **)&e->cbn, &e->cbn_cap, &moved, e->cbn_floats, sizeof(float)));
    e->coef_floats = 0;
    for (int i = 0; i < p->count; i++) {
        if (!e->steps[i].keeps_coef) continue;
        const struct plan_node *n = &p->nodes[i];   /* a BN_FWD_TRAIN */
        const int splits = n->par.bn.splits > 1 ? n->par.bn.splits : 1;
        e->coef_at[i] = e->coef_floats;
        /* 16-byte aligned pieces */
        e->coef_floats += ((size_t)COEF_FWD_COUNT * splits * n->src[PLAN_X]->c + 3) / 4 * 4;
    }
    TRY(buffer_fit(c, (void **)&e->coef, &e->coef_cap, &moved, e->coef_floats, sizeof(float)));
    e->stats_doubles = 0;
    for (int i = 0; i < p->count; i++) {
        if (e->steps[i].kind != PLAN_FUSE_ADD_STATS &&
            !(e->steps[i].kind == PLAN_FUSE_ADD_PRO && e->steps[i].stats >= 0))
            continue;
        const struct plan_node *bn = &p->nodes[e->steps[i].stats];   /* a BN_FWD_TRAIN */
        e->stats_at[i] = e->stats_doubles;
        /* 16-byte aligned pieces */
        e->stats_doubles +=
            (cuda_bn_partial_count(bn->src[PLAN_X], &bn->par.bn) + 1) / 2 * 2;
    }
    TRY(buffer_fit(c, (void **)&e->stats, &e->stats_cap, &moved, e->stats_doubles, sizeof(double)));
cleanup:
    if (moved || !e->gen) e->gen = ++*clock;
    return rc;
}

/* p's entry in cache pc (NULL for none, or no cache). */
static struct plan_entry *plan_entry_find(const struct plan_cache *pc, const struct plan *p)
{
    for (int i = 0; pc && i < pc->n; i++)
        if (pc->e[i].p == p) return &pc->e[i];
    return NULL;
}

/* The entry of p in c's cache, analysed for its current signature. */
static int plan_entry_for(struct cuda_ctx *c, const struct plan *p, struct plan_entry **out)
{
    int rc = DR_OK;
    struct plan_cache *pc = (struct plan_cache *)c->plans;
    struct plan_entry *e = NULL;
    const int conv_on = env_switch_on("DAWNRUN_CUDA_FUSE_CONV");
    if (!pc) {
        pc = (struct plan_cache *)calloc(1, sizeof(*pc));
        CHECK_ALLOC(pc, "the CUDA plan cache");
        c->plans = pc;
    }
    e = plan_entry_find(pc, p);
    if (e && (!e->steps || e->sig != plan_signature(p) || e->count != p->count ||
              e->conv_on != conv_on)) {
        entry_clear_analysis(e);
        rc = analyse(c, e, p, conv_on, &pc->clock);
    }
    if (!e) {
        if (grow_reserve(&pc->e, &pc->cap, pc->n + 1, 4, sizeof(*pc->e)) != DR_OK)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the CUDA plan cache");
        e = &pc->e[pc->n++];
        memset(e, 0, sizeof(*e));
        e->p = p;
        rc = analyse(c, e, p, conv_on, &pc->clock);
    }
    if (rc != DR_OK) {   /* half an analysis is none */
        entry_clear_analysis(e);
        goto cleanup;
    }
    *out = e;
cleanup:
    return rc;
}

/* Vector v (CBN_*) of batch norm node i (has_cbn) in e's device buffer. */
static float *cbn_vec(const struct plan_entry *e, const struct plan *p, int i, int v)
{
    const size_t padded = ((size_t)p->nodes[i].src[PLAN_X]->c + 3) / 4 * 4;
    return e->cbn + e->cbn_at[i] + (size_t)v * padded;
}

/* A PLAN_FUSE_CONV_FWD step: CONV_FWD node n through the fused graph (with the add after
 * it when the step folds one in). */
static int run_conv_fwd(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e,
                        const struct plan_fuse_step *s, const struct plan_node *n)
{
    struct cuda_conv_prologue pro = {NULL, NULL};
    if (s->fwd >= 0)   /* the input is the batch norm's x, read through its apply */
        pro = {cbn_vec(e, p, s->fwd, CBN_SCALE), cbn_vec(e, p, s->fwd, CBN_BIAS)};
    struct cuda_conv_fused_args args = conv_fwd_args(
        n, s->fwd >= 0 ? p->nodes[s->fwd].src[PLAN_X] : NULL, s->fwd >= 0 ? &pro : NULL,
        s->stats >= 0 ? cbn_vec(e, p, s->stats, CBN_SUM) : NULL,
        s->stats >= 0 ? cbn_vec(e, p, s->stats, CBN_SQSUM) : NULL);
    struct cuda_conv_prologue res_pro = {NULL, NULL};
    if (s->add >= 0) {   /* the add folded after it; its operand recomputed from BN_COEF act */
        if (s->act >= 0)
            res_pro = {cbn_vec(e, p, s->act, CBN_SCALE), cbn_vec(e, p, s->act, CBN_BIAS)};
        conv_add_args(&args, n, &p->nodes[s->add], s->act >= 0 ? &p->nodes[s->act] : NULL,
                      s->act >= 0 ? &res_pro : NULL);
    }
    return cuda_conv_fused_run(c, &args);
}

/* CONV_BWD node n's weight gradient (when it has one) through the apply and ReLU of batch
 * norm node fwd, whose scale and bias are in e's cbn. */
static int run_wgrad_pro(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e,
                         int fwd, const struct plan_node *n)
{
    if (!conv_has_dw(n)) return DR_OK;
    const struct cuda_conv_prologue pro = {cbn_vec(e, p, fwd, CBN_SCALE),
                                           cbn_vec(e, p, fwd, CBN_BIAS)};
    const struct cuda_conv_fused_args args = conv_wgrad_args(n, &p->nodes[fwd], &pro);
    return cuda_conv_fused_run(c, &args);
}

/* A PLAN_FUSE_CONV_BWD step: CONV_BWD node n's weight gradient through the batch norm's
 * apply, and its data gradient through the ReLU's mask into the BN_BWD's dy, with the
 * batch norm's weight gradients and input-gradient coefficients. */
static int run_conv_bwd(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e,
                        const struct plan_fuse_step *s, const struct plan_node *n)
{
    int rc = DR_OK;
    const struct plan_node *bn = &p->nodes[s->fwd], *m = &p->nodes[s->stats];
    TRY(run_wgrad_pro(c, p, e, s->fwd, n));
    {
        const struct conv_dbn_out o = {
            m->dst[PLAN_DGAMMA] && m->dst[PLAN_DGAMMA]->data ? (float *)m->dst[PLAN_DGAMMA]->data
                                                           : cbn_vec(e, p, s->fwd, CBN_DSCALE),
            m->dst[PLAN_DBETA] && m->dst[PLAN_DBETA]->data ? (float *)m->dst[PLAN_DBETA]->data
                                                         : cbn_vec(e, p, s->fwd, CBN_DBIAS),
            cbn_vec(e, p, s->fwd, CBN_EQ_DY), cbn_vec(e, p, s->fwd, CBN_EQ_X),
            cbn_vec(e, p, s->fwd, CBN_EQ_B)};
        /* dz: the BN_BWD's dy, the ReLU backward's dx */
        const struct cuda_conv_fused_args args =
            conv_dgrad_dbn_args(n, bn, p->nodes[s->act].dst[PLAN_DX], &o);
        TRY(cuda_conv_fused_run(c, &args));
    }
cleanup:
    return rc;
}

/* The sums BN_TRAIN or BN_COEF node i's batch norm starts from (the add's partial sums
 * or the convolution's fp32 sums, as its stats says; all NULL when it makes its own). */
static struct cuda_bn_sums taken_sums(const struct plan *p, const struct plan_entry *e, int i)
{
    struct cuda_bn_sums sums = {NULL, NULL, NULL};
    if (sums_from_conv(p, e->steps, i))
        sums = {NULL, cbn_vec(e, p, i, CBN_SUM), cbn_vec(e, p, i, CBN_SQSUM)};
    else if (e->steps[i].stats >= 0)
        sums.partial = e->stats + e->stats_at[e->steps[i].stats];
    return sums;
}

/* A PLAN_FUSE_BN_COEF step: BN_FWD_TRAIN node i's statistics and coefficients (kept for
 * its backward), and its apply's scale and bias for the convolutions reading its
 * activation through their prologue. */
static int run_bn_coef(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e,
                       int i)
{
    int rc = DR_OK;
    const struct plan_node *n = &p->nodes[i];
    const struct plan_fuse_step *s = &e->steps[i];
    const struct cuda_bn_sums sums = taken_sums(p, e, i);
    float *coef = e->coef + e->coef_at[i];
    TRY(cuda_bn_train_fused(c, NULL, NULL, NULL, NULL, NULL, coef, s->stats >= 0 ? &sums : NULL,
                            n->dst[PLAN_SAVE_MEAN], n->dst[PLAN_SAVE_INVSTD],
                            n->dst[PLAN_RUNNING_MEAN], n->dst[PLAN_RUNNING_VAR],
                            n->src[PLAN_X], n->src[PLAN_GAMMA],
                            n->src[PLAN_BETA], &n->par.bn));
    TRY(cuda_bn_prologue_from_coef(c, cbn_vec(e, p, i, CBN_SCALE), cbn_vec(e, p, i, CBN_BIAS),
                                   coef, n->src[PLAN_X]->c));
cleanup:
    return rc;
}

/* A PLAN_FUSE_CONV_BWD_PRO step: CONV_BWD node n's weight gradient through the apply of
 * the BN_COEF batch norm whose activation it read, its data gradient as it is. */
static int run_conv_bwd_pro(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e,
                            const struct plan_fuse_step *s, const struct plan_node *n)
{
    int rc = DR_OK;
    TRY(run_wgrad_pro(c, p, e, s->fwd, n));
    if (n->dst[PLAN_DX] && n->dst[PLAN_DX]->data)
        TRY(cuda_conv_backward(c, n->dst[PLAN_DX], NULL, NULL, n->src[PLAN_DY],
                               n->src[PLAN_BWD_X], n->src[PLAN_BWD_W], &n->par.conv,
                               PLAN_NODE_ACC(n, PLAN_DX)));
cleanup:
    return rc;
}

/* A PLAN_FUSE_ADD_STATS or PLAN_FUSE_ADD_PRO step: ADD_FWD node n, its operand that is
 * the unwritten activation of BN_COEF node s->fwd (ADD_PRO) recomputed from that batch
 * norm's x and kept coefficients, summing its output for BN_FWD_TRAIN node s->stats when
 * there is one. */
static int run_add(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e, int i)
{
    const struct plan_fuse_step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i];
    const struct tensor *a = n->src[PLAN_ADD_A], *b = n->src[PLAN_ADD_B];
    const float *a_coef = NULL;
    if (s->kind == PLAN_FUSE_ADD_PRO) {
        const struct plan_node *bn = &p->nodes[s->fwd];
        const struct tensor *act = p->nodes[e->steps[s->fwd].act].dst[PLAN_Y];
        b = plan_fuse_add_other(n, act, NULL);
        a = bn->src[PLAN_X];   /* the sum's order does not change its bits */
        a_coef = e->coef + e->coef_at[s->fwd];
    }
    const struct plan_node *sb = s->stats >= 0 ? &p->nodes[s->stats] : NULL;
    return cuda_add_fused(c, n->dst[PLAN_Y], sb ? e->stats + e->stats_at[i] : NULL,
                          a, a_coef, b, sb ? sb->dst[PLAN_SAVE_MEAN] : NULL,
                          sb ? sb->dst[PLAN_SAVE_INVSTD] : NULL,
                          sb ? &sb->par.bn : NULL);
}

/* Runs node i of p as its step says. */
static int run_step(struct cuda_ctx *c, const struct plan *p, const struct plan_entry *e, int i)
{
    const struct plan_fuse_step *s = &e->steps[i];
    const struct plan_node *n = &p->nodes[i];
    struct cuda_bn_act act = {ACT_RELU, 0.0f};
    struct cuda_bn_pool pool = {1, 1};
    const struct pool_attr *pa = NULL;   /* the folded pool's (plan_fuse_step.pool) */
    if (s->pool >= 0) {
        const struct plan_node *q = &p->nodes[s->pool];
        pa = &q->par.pool;   /* POOL_FWD or POOL_BWD */
        pool = (struct cuda_bn_pool){pa->kh, pa->kw};
    }
    switch (s->kind) {
    case PLAN_FUSE_SKIP: return DR_OK;
    case PLAN_FUSE_BN_COEF: return run_bn_coef(c, p, e, i);
    case PLAN_FUSE_CONV_BWD_PRO: return run_conv_bwd_pro(c, p, e, s, n);
    case PLAN_FUSE_BN_TRAIN: {
        const struct plan_node *a = s->act >= 0 ? &p->nodes[s->act] : NULL;
        const struct cuda_bn_sums sums = taken_sums(p, e, i);
        const struct plan_node *q = s->add >= 0 ? &p->nodes[s->add] : NULL;
        if (a) act = (struct cuda_bn_act){a->par.act.kind, a->par.act.alpha};
        return cuda_bn_train_fused(c, s->keep_y || !a ? n->dst[PLAN_Y] : NULL,
                                   pa ? p->nodes[s->pool].dst[PLAN_Y]
                                   : q ? q->dst[PLAN_Y]
                                   : a ? a->dst[PLAN_Y]
                                       : NULL,
                                   q ? plan_fuse_add_other(q, a->dst[PLAN_Y], NULL) : NULL,
                                   a ? &act : NULL, pa ? &pool : NULL,
                                   s->keeps_coef ? e->coef + e->coef_at[i] : NULL,
                                   s->stats >= 0 ? &sums : NULL,
                                   n->dst[PLAN_SAVE_MEAN], n->dst[PLAN_SAVE_INVSTD],
                                   n->dst[PLAN_RUNNING_MEAN], n->dst[PLAN_RUNNING_VAR],
                                   n->src[PLAN_X], n->src[PLAN_GAMMA],
                                   n->src[PLAN_BETA], &n->par.bn);
    }
    case PLAN_FUSE_BN_EVAL: {
        const struct plan_node *a = &p->nodes[s->act];
        const struct plan_node *q = s->add >= 0 ? &p->nodes[s->add] : NULL;
        act = (struct cuda_bn_act){a->par.act.kind, a->par.act.alpha};
        return cuda_bn_eval_fused(c, s->keep_y ? n->dst[PLAN_Y] : NULL,
                                  pa ? p->nodes[s->pool].dst[PLAN_Y]
                                  : q ? q->dst[PLAN_Y]
                                      : a->dst[PLAN_Y],
                                  q ? plan_fuse_add_other(q, a->dst[PLAN_Y], NULL) : NULL, &act,
                                  pa ? &pool : NULL, n->src[PLAN_X], n->src[PLAN_GAMMA],
                                  n->src[PLAN_BETA], n->src[PLAN_RUNNING_MEAN],
                                  n->src[PLAN_RUNNING_VAR], &n->par.bn);
    }
    case PLAN_FUSE_BN_BWD: {
        const struct plan_node *a = &p->nodes[s->act];
        act = (struct cuda_bn_act){a->par.act.kind, a->par.act.alpha};
        /* with a pool folded in, its dy instead of the activation's */
        return cuda_bn_backward_fused(c, n->dst[PLAN_DX], n->dst[PLAN_DGAMMA], n->dst[PLAN_DBETA],
                                      pa ? p->nodes[s->pool].src[PLAN_DY] : a->src[PLAN_DY],
                                      &act, pa ? &pool : NULL, e->coef + e->coef_at[s->fwd],
                                      n->src[PLAN_BWD_X], n->src[PLAN_BWD_GAMMA],
                                      n->src[PLAN_BWD_SAVE_MEAN], n->src[PLAN_BWD_SAVE_INVSTD],
                                      PLAN_NODE_ACC(n, PLAN_DX));
    }
    case PLAN_FUSE_ADD_STATS:
    case PLAN_FUSE_ADD_PRO: return run_add(c, p, e, i);
    case PLAN_FUSE_CONV_FWD: return run_conv_fwd(c, p, e, s, n);
    case PLAN_FUSE_CONV_BWD: return run_conv_bwd(c, p, e, s, n);
    case PLAN_FUSE_BN_SUMS:
        return cuda_bn_sums_finalize(c, cbn_vec(e, p, i, CBN_SCALE), cbn_vec(e, p, i, CBN_BIAS),
                                     n->dst[PLAN_SAVE_MEAN], n->dst[PLAN_SAVE_INVSTD],
                                     n->dst[PLAN_RUNNING_MEAN],
                                     n->dst[PLAN_RUNNING_VAR], cbn_vec(e, p, i, CBN_SUM),
                                     cbn_vec(e, p, i, CBN_SQSUM), n->src[PLAN_GAMMA],
                                     n->src[PLAN_BETA], n->src[PLAN_X],
                                     &n->par.bn);
    case PLAN_FUSE_BN_APPLY:
        if (!n->dst[PLAN_DX] || !n->dst[PLAN_DX]->data) return DR_OK;
        /* the coefficients are the forward batch norm's (s->fwd) */
        return cuda_bn_eq_apply(c, n->dst[PLAN_DX], n->src[PLAN_DY], n->src[PLAN_BWD_X],
                                cbn_vec(e, p, s->fwd, CBN_EQ_DY), cbn_vec(e, p, s->fwd, CBN_EQ_X),
                                cbn_vec(e, p, s->fwd, CBN_EQ_B), PLAN_NODE_ACC(n, PLAN_DX));
    case PLAN_FUSE_RUN:
    case PLAN_FUSE_KIND_COUNT: break;
    }
    const struct backend b = {c->ops, c};
    return plan_run_node(&b, n);
}

int cuda_plan_execute(struct cuda_ctx *c, const struct plan *p)
{
    int rc = DR_OK;
    struct plan_entry *e = NULL;
    if (!env_switch_on("DAWNRUN_CUDA_FUSE")) {
        const struct backend b = {c->ops, c};
        return plan_run_each(&b, p, NULL, NULL);
    }
    TRY(plan_entry_for(c, p, &e));
    for (int i = 0; i < p->count; i++) TRY(run_step(c, p, e, i));
cleanup:
    return rc;
}

/* The generation of p's device buffers (plan_entry.gen), 0 before its first analysis: a
 * graph captured with another one addresses buffers that have moved since. */
static uint64_t plan_state(const struct cuda_ctx *c, const struct plan *p)
{
    const struct plan_entry *e = plan_entry_find((const struct plan_cache *)c->plans, p);
    return e ? e->gen : 0;
}

int cuda_plan_compute(void *ctx, const struct plan *p)
{
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    return cuda_graph_run(c, p, plan_state(c, p), cuda_plan_execute);
}

void cuda_plan_forget(void *ctx, const struct plan *p)
{
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    struct plan_cache *pc = (struct plan_cache *)c->plans;
    struct plan_entry *e = plan_entry_find(pc, p);
    cuda_graph_forget(c, p);
    if (e) {
        entry_clear(c, e);
        *e = pc->e[--pc->n];
    }
}

void cuda_plan_release(struct cuda_ctx *c)
{
    struct plan_cache *pc = (struct plan_cache *)c->plans;
    if (pc) {
        for (int i = 0; i < pc->n; i++) entry_clear(c, &pc->e[i]);
        free(pc->e);
        free(pc);
    }
    c->plans = NULL;
}

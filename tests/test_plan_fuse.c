/* The CUDA engine's fusion analysis (kernels/plan_fuse.h), on small plans built by hand,
 * under its capabilities (every activation kind, any plan, with and without the cuDNN
 * graphs' answers): a batch norm, its ReLU and a residual add fold into one step, and the batch norm's
 * output is written only when another node reads it; the add stays apart when the
 * ReLU's output has a second reader; an activation's backward folds into the batch
 * norm's backward, which makes the forward keep its coefficients and spares its output,
 * but not when it accumulates or when the batch norm's input changes between the two; an
 * evaluation plan whose two views rewrite the
 * same tensors has each view's values considered apart, wrapping round the plan's end; a
 * residual add whose output the next batch norm reads takes that batch norm's statistics,
 * unless the sum is rewritten between or the batch norm reads another tensor;
 * the batch norm inside the convolutions, a max pool folded into the batch norm before it,
 * a convolution summing its output for the batch norm after it, and a batch norm's
 * activation inside the convolutions that alone read it, an identity shortcut's add
 * recomputing it (each on an engine whose caps take it). Tensors are handles with
 * distinct data pointers that are never read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/env.h"
#include "kernels/plan.h"
#include "kernels/plan_fuse.h"

/* ------------------------------------------------------------------ tensors and nodes */

enum {
    X, Y, A, R, S, OUT, GAMMA, BETA, MEAN, INVSTD, RMEAN, RVAR,
    DOUT, DS, DY, DX, DGAMMA, DBETA, IMG, OTHER, W0, W1, BIAS, DA, DW0, DW1, P, DP,
    MEAN2, INVSTD2, TENSOR_COUNT
};

static float memory[TENSOR_COUNT][4];   /* distinct data pointers */
static struct tensor t[TENSOR_COUNT];

/* Activations (2, 4, 3, 3), per-channel vectors (4), pooled activations (2, 4, 1, 1). */
static void tensors_init(void)
{
    for (int i = 0; i < TENSOR_COUNT; i++)
        t[i] = (struct tensor){memory[i], TENSOR_ACT, 2, 4, 3, 3};
    const int vectors[] = {GAMMA, BETA, MEAN, INVSTD, RMEAN, RVAR, DGAMMA, DBETA, BIAS,
                           MEAN2, INVSTD2};
    for (size_t i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++)
        t[vectors[i]] = (struct tensor){memory[vectors[i]], TENSOR_F32, 4, 1, 1, 1};
    const int weights[] = {W0, W1, DW0, DW1};   /* 3x3, 4 -> 4 channels */
    for (size_t i = 0; i < sizeof(weights) / sizeof(weights[0]); i++)
        t[weights[i]] = (struct tensor){memory[weights[i]], TENSOR_PARAM, 4, 4, 3, 3};
    t[P] = (struct tensor){memory[P], TENSOR_ACT, 2, 4, 1, 1};
    t[DP] = (struct tensor){memory[DP], TENSOR_ACT, 2, 4, 1, 1};
}

static struct plan_node *append(struct plan *p, enum plan_op op)
{
    struct plan_node *n = plan_append(p, op, PLAN_PHASE_FORWARD, -1);
    if (!n) {
        printf("out of memory\n");
        exit(1);
    }
    return n;
}

/* y = bn(x), training, with the fixture's statistics. */
static void bn_train(struct plan *p, int y, int x)
{
    struct plan_node *n = append(p, PLAN_BN_FWD_TRAIN);
    n->dst[PLAN_Y] = &t[y];
    n->dst[PLAN_SAVE_MEAN] = &t[MEAN];
    n->dst[PLAN_SAVE_INVSTD] = &t[INVSTD];
    n->dst[PLAN_RUNNING_MEAN] = &t[RMEAN];
    n->dst[PLAN_RUNNING_VAR] = &t[RVAR];
    n->src[PLAN_X] = &t[x];
    n->src[PLAN_GAMMA] = &t[GAMMA];
    n->src[PLAN_BETA] = &t[BETA];
    n->par.bn = (struct bn_attr){1e-5f, 0.1f, 1};
}

/* y = bn(x) with the running statistics. */
static void bn_eval(struct plan *p, int y, int x)
{
    struct plan_node *n = append(p, PLAN_BN_FWD_EVAL);
    n->dst[PLAN_Y] = &t[y];
    n->src[PLAN_X] = &t[x];
    n->src[PLAN_GAMMA] = &t[GAMMA];
    n->src[PLAN_BETA] = &t[BETA];
    n->src[PLAN_RUNNING_MEAN] = &t[RMEAN];
    n->src[PLAN_RUNNING_VAR] = &t[RVAR];
    n->par.bn = (struct bn_attr){1e-5f, 0.0f, 1};
}

static void act_fwd(struct plan *p, int y, int x, enum act_kind kind)
{
    struct plan_node *n = append(p, PLAN_ACT_FWD);
    n->dst[PLAN_Y] = &t[y];
    n->src[PLAN_X] = &t[x];
    n->par.act.kind = kind;
}

static void add_fwd(struct plan *p, int y, int a, int b)
{
    struct plan_node *n = append(p, PLAN_ADD_FWD);
    n->dst[PLAN_Y] = &t[y];
    n->src[PLAN_ADD_A] = &t[a];
    n->src[PLAN_ADD_B] = &t[b];
}

/* y = s * x: a reader of x (the rest of the network, the loss). */
static void scale(struct plan *p, int y, int x)
{
    struct plan_node *n = append(p, PLAN_SCALE_FWD);
    n->dst[PLAN_Y] = &t[y];
    n->src[PLAN_X] = &t[x];
    n->par.scale.s = 0.5f;
}

static void act_bwd(struct plan *p, int dx, int dy, int x, enum act_kind kind, int accumulate)
{
    struct plan_node *n = append(p, PLAN_ACT_BWD);
    n->dst[PLAN_DX] = &t[dx];
    n->src[PLAN_DY] = &t[dy];
    n->src[PLAN_BWD_X] = &t[x];
    n->par.act.kind = kind;
    n->acc = accumulate;
}

/* The backward of bn_train(p, ., x): dx (or none, -1) from dy. */
static void bn_bwd(struct plan *p, int dx, int dy, int x)
{
    struct plan_node *n = append(p, PLAN_BN_BWD);
    n->dst[PLAN_DX] = dx >= 0 ? &t[dx] : NULL;
    n->dst[PLAN_DGAMMA] = &t[DGAMMA];
    n->dst[PLAN_DBETA] = &t[DBETA];
    n->src[PLAN_DY] = &t[dy];
    n->src[PLAN_BWD_X] = &t[x];
    n->src[PLAN_BWD_GAMMA] = &t[GAMMA];
    n->src[PLAN_BWD_SAVE_MEAN] = &t[MEAN];
    n->src[PLAN_BWD_SAVE_INVSTD] = &t[INVSTD];
}

/* y = conv(x, w) (3x3, stride 1, pad 1), with bias b (or none, -1). */
static void conv_fwd(struct plan *p, int y, int x, int w, int b)
{
    struct plan_node *n = append(p, PLAN_CONV_FWD);
    n->dst[PLAN_Y] = &t[y];
    n->src[PLAN_X] = &t[x];
    n->src[PLAN_W] = &t[w];
    n->src[PLAN_B] = b >= 0 ? &t[b] : NULL;
    n->par.conv = (struct conv_attr){3, 1, 1};
}

/* y = pool(x), k x k windows, stride k (3: one window tiling a 3x3 plane). */
static void pool_fwd(struct plan *p, int y, int x, enum pool_kind kind, int k)
{
    struct plan_node *n = append(p, PLAN_POOL_FWD);
    n->dst[PLAN_Y] = &t[y];
    n->src[PLAN_X] = &t[x];
    n->par.pool = (struct pool_attr){kind, k, k, k, k};
}

/* The backward of pool_fwd(p, y, x, kind, k): dx from dy. */
static void pool_bwd(struct plan *p, int dx, int dy, int x, int y, enum pool_kind kind, int k,
                     int accumulate)
{
    struct plan_node *n = append(p, PLAN_POOL_BWD);
    n->dst[PLAN_DX] = &t[dx];
    n->src[PLAN_DY] = &t[dy];
    n->src[PLAN_BWD_X] = &t[x];
    n->src[PLAN_BWD_Y] = &t[y];
    n->par.pool = (struct pool_attr){kind, k, k, k, k};
    n->acc = accumulate;
}

/* The backward of conv_fwd(p, ., x, w, -1): dx (or none, -1) and dw from dy. */
static void conv_bwd(struct plan *p, int dx, int dw, int dy, int x, int w, int accumulate)
{
    struct plan_node *n = append(p, PLAN_CONV_BWD);
    n->dst[PLAN_DX] = dx >= 0 ? &t[dx] : NULL;
    n->dst[PLAN_DW] = &t[dw];
    n->src[PLAN_DY] = &t[dy];
    n->src[PLAN_BWD_X] = &t[x];
    n->src[PLAN_BWD_W] = &t[w];
    n->par.conv = (struct conv_attr){3, 1, 1};
    n->acc = accumulate;
}

/* ------------------------------------------------------------------ the engines' caps */

/* The CUDA engine's caps, as kernels/cuda/plan_cuda.cu sets them (not linked into a
 * CPU-only build). */
static const struct plan_fuse_caps CUDA_CAPS = {1, NULL, NULL, NULL, 1, NULL, 1, NULL};

/* An engine with the batch norm inside its convolutions: the CUDA engine's caps with
 * conv_fwd_ok and conv_bwd_ok answering as conv_answer says, counting the questions. */
static struct {
    int answer;              /* what every question gets */
    int fwd_asked, bwd_asked;
    int pro_and_stats;       /* forward questions with both a prologue and statistics */
    int wgrad_refused;       /* conv_wgrad_ok says no whatever answer says */
    int wgrad_asked;
    int bwd_refused;         /* conv_bwd_ok says no whatever answer says */
    int add_taken;           /* conv_add_ok says yes (when answer does); 0: no */
    int add_asked, add_recomputed, add_stats;   /* its questions, with res_bn, with stats */
} conv_answer;

static int conv_fwd_ok(void *user, const struct plan_node *conv, const struct plan_node *pro,
                       const struct plan_node *stats)
{
    CHECK(user == &conv_answer && conv->op == PLAN_CONV_FWD && (pro || stats) &&
          (!pro || pro->op == PLAN_BN_FWD_TRAIN) && (!stats || stats->op == PLAN_BN_FWD_TRAIN));
    conv_answer.fwd_asked++;
    conv_answer.pro_and_stats += pro && stats;
    return conv_answer.answer;
}

static int conv_bwd_ok(void *user, const struct plan_node *conv, const struct plan_node *bn)
{
    CHECK(user == &conv_answer && conv->op == PLAN_CONV_BWD && bn->op == PLAN_BN_FWD_TRAIN);
    conv_answer.bwd_asked++;
    return conv_answer.answer && !conv_answer.bwd_refused;
}

static int conv_wgrad_ok(void *user, const struct plan_node *conv, const struct plan_node *bn)
{
    CHECK(user == &conv_answer && conv->op == PLAN_CONV_BWD && bn->op == PLAN_BN_FWD_TRAIN);
    conv_answer.wgrad_asked++;
    return conv_answer.answer && !conv_answer.wgrad_refused;
}

static int conv_add_ok(void *user, const struct plan_node *conv, const struct plan_node *pro,
                       const struct plan_node *add, const struct plan_node *res_bn,
                       const struct plan_node *stats)
{
    CHECK(user == &conv_answer && conv->op == PLAN_CONV_FWD && add->op == PLAN_ADD_FWD &&
          (!pro || pro->op == PLAN_BN_FWD_TRAIN) && (!res_bn || res_bn->op == PLAN_BN_FWD_TRAIN) &&
          (!stats || stats->op == PLAN_BN_FWD_TRAIN));
    conv_answer.add_asked++;
    conv_answer.add_recomputed += res_bn != NULL;
    conv_answer.add_stats += stats != NULL;
    return conv_answer.answer && conv_answer.add_taken;
}

/* The adds are taken into the convolutions only where a test sets add_taken, so that the
 * other patterns' tests see the steps before that pass. */
static const struct plan_fuse_caps CONV_CAPS = {1, conv_fwd_ok, conv_bwd_ok, &conv_answer, 1,
                                                conv_wgrad_ok, 1, conv_add_ok};

/* ------------------------------------------------------------------ expectations */

/* One step as expected: "node kind act add fwd keep_y keeps_coef stats pool". */
struct want {
    int node;
    enum plan_fuse_kind kind;
    int act, add, fwd, keep_y, keeps_coef, stats;
    int pool;
};

#define RUN_STEP(i) {i, PLAN_FUSE_RUN, -1, -1, -1, 0, 0, -1, -1}

/* Analyses p under caps and checks every step against w (nodes not in w: PLAN_FUSE_RUN
 * with nothing folded). */
static void expect_steps(const char *what, const struct plan *p, const struct plan_fuse_caps *caps,
                         const struct want *w, int nw)
{
    struct plan_fuse_step steps[64];
    CHECK(p->count <= 64);
    if (p->count > 64) return;
    memset(steps, 0xa5, sizeof(steps));   /* every field must be set */
    plan_fuse_analyse(steps, p, caps);
    for (int i = 0; i < p->count; i++) {
        struct want e = RUN_STEP(i);
        for (int k = 0; k < nw; k++)
            if (w[k].node == i) e = w[k];
        const struct plan_fuse_step *s = &steps[i];
        const int ok = s->kind == e.kind && s->act == e.act && s->add == e.add &&
                       s->fwd == e.fwd && s->keep_y == e.keep_y &&
                       s->keeps_coef == e.keeps_coef && s->stats == e.stats &&
                       s->pool == e.pool;
        if (!ok)
            printf("%s: node %d (%s): %s act %d add %d fwd %d keep_y %d keeps_coef %d stats %d "
                   "pool %d; expected %s act %d add %d fwd %d keep_y %d keeps_coef %d stats %d "
                   "pool %d\n",
                   what, i, plan_op_name(p->nodes[i].op), plan_fuse_kind_name(s->kind), s->act,
                   s->add, s->fwd, s->keep_y, s->keeps_coef, s->stats, s->pool,
                   plan_fuse_kind_name(e.kind), e.act, e.add, e.fwd, e.keep_y, e.keeps_coef,
                   e.stats, e.pool);
        CHECK(ok);
    }
}

#define EXPECT_STEPS(what, p, caps, ...)                                                   \
    expect_steps(what, p, caps, (const struct want[]){__VA_ARGS__},                       \
                 (int)(sizeof((const struct want[]){__VA_ARGS__}) / sizeof(struct want)))

/* Every node runs alone. */
static void expect_unfused(const char *what, const struct plan *p,
                           const struct plan_fuse_caps *caps)
{
    EXPECT_STEPS(what, p, caps, RUN_STEP(0));
}

/* ------------------------------------------------------------------ the cases */

/* bn -> relu -> add(relu out, residual) -> reader of the sum. */
static void test_forward_add(void)
{
    struct plan p = {0};
    bn_train(&p, Y, X);          /* 0 */
    act_fwd(&p, A, Y, ACT_RELU); /* 1 */
    add_fwd(&p, S, A, R);        /* 2 */
    scale(&p, OUT, S);           /* 3 */
    p.replayable = 1;
    const struct want folded[] = {{0, PLAN_FUSE_BN_TRAIN, 1, 2, -1, 0, 0, -1, -1},
                                  {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                  {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1}};
    expect_steps("bn+relu+add (cuda)", &p, &CUDA_CAPS, folded, 3);

    /* not replayable: folded the same (the plan's nodes are all its readers) */
    p.replayable = 0;
    expect_steps("bn+relu+add, not replayable (cuda)", &p, &CUDA_CAPS, folded, 3);
    p.replayable = 1;

    /* the residual as the add's first operand: folded the same */
    p.nodes[2].src[PLAN_ADD_A] = &t[R];
    p.nodes[2].src[PLAN_ADD_B] = &t[A];
    expect_steps("bn+relu+add, residual first (cuda)", &p, &CUDA_CAPS, folded, 3);
    int second = -1;
    CHECK(plan_fuse_add_other(&p.nodes[2], &t[A], &second) == &t[R] && second == 1);
    CHECK(plan_fuse_add_other(&p.nodes[2], &t[R], &second) == &t[A] && second == 0);

    /* gelu: fused as any kind */
    p.nodes[1].par.act.kind = ACT_GELU;
    expect_steps("bn+gelu+add (cuda)", &p, &CUDA_CAPS, folded, 3);
    p.nodes[1].par.act.kind = ACT_RELU;

    /* an x of another shape than the output (the kernels check their shapes) */
    t[X].h = 4;
    expect_steps("bn+relu+add, x of another shape (cuda)", &p, &CUDA_CAPS, folded, 3);
    t[X].h = 3;

    /* the residual is written between the batch norm and the add: the add stays apart */
    struct plan q = {0};
    bn_train(&q, Y, X);
    act_fwd(&q, A, Y, ACT_RELU);
    scale(&q, R, IMG);
    add_fwd(&q, S, A, R);
    scale(&q, OUT, S);
    q.replayable = 1;
    EXPECT_STEPS("residual written in between", &q, &CUDA_CAPS,
                 {0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 0, 0, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&q);
    plan_free(&p);
}

/* A second reader of the batch norm's output, then of the activation's output. */
static void test_second_reader(void)
{
    struct plan p = {0};
    bn_train(&p, Y, X);          /* 0 */
    act_fwd(&p, A, Y, ACT_RELU); /* 1 */
    add_fwd(&p, S, A, R);        /* 2 */
    scale(&p, OUT, Y);           /* 3: reads the batch norm's output */
    p.replayable = 1;
    const struct want keep[] = {{0, PLAN_FUSE_BN_TRAIN, 1, 2, -1, 1, 0, -1, -1},
                                {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1}};
    expect_steps("bn output read twice (cuda)", &p, &CUDA_CAPS, keep, 3);

    /* the reader rewritten to read the activation's output: the add is not folded (its
     * input must be written), the activation is, and the batch norm's output is spared */
    p.nodes[3].src[PLAN_X] = &t[A];
    EXPECT_STEPS("act output read twice", &p, &CUDA_CAPS,
                 {0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 0, 0, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});

    /* a node between the batch norm and its activation reads the batch norm's output: the
     * activation is not the next node touching it, so nothing fuses */
    struct plan q = {0};
    bn_train(&q, Y, X);
    scale(&q, OUT, Y);
    act_fwd(&q, A, Y, ACT_RELU);
    q.replayable = 1;
    expect_unfused("reader before the activation", &q, &CUDA_CAPS);
    plan_free(&q);
    plan_free(&p);
}

/* The forward and backward of bn -> relu, as a training step has them. */
static void build_step(struct plan *p, int accumulate)
{
    bn_train(p, Y, X);                            /* 0 */
    act_fwd(p, A, Y, ACT_RELU);                   /* 1 */
    scale(p, OUT, A);                             /* 2: the rest of the forward */
    scale(p, DOUT, OUT);                          /* 3: the loss's gradient, as it were */
    scale(p, DS, DOUT);                           /* 4: the gradient of the relu's output */
    act_bwd(p, DY, DS, Y, ACT_RELU, accumulate);  /* 5 */
    bn_bwd(p, DX, DY, X);                         /* 6 */
    p->replayable = 1;
}

static void test_backward(void)
{
    struct plan p = {0};
    build_step(&p, 0);
    const struct want fused[] = {{0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 0, 1, -1, -1},
                                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                 {5, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                 {6, PLAN_FUSE_BN_BWD, 5, -1, 0, 0, 0, -1, -1}};
    expect_steps("act_bwd into bn_bwd (cuda)", &p, &CUDA_CAPS, fused, 4);

    /* the batch norm's backward without a dx (it reads the network's input) */
    p.nodes[6].dst[PLAN_DX] = NULL;
    expect_steps("act_bwd into bn_bwd, no dx", &p, &CUDA_CAPS, fused, 4);
    p.nodes[6].dst[PLAN_DX] = &t[DX];

    /* not replayable: folded the same */
    p.replayable = 0;
    expect_steps("act_bwd into bn_bwd, not replayable (cuda)", &p, &CUDA_CAPS, fused, 4);
    p.replayable = 1;
    plan_free(&p);

    /* an accumulating activation backward stays apart; it reads the batch norm's output,
     * which must then be written */
    build_step(&p, 1);
    const struct want apart[] = {{0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 1, 0, -1, -1},
                                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1}};
    expect_steps("accumulating act_bwd (cuda)", &p, &CUDA_CAPS, apart, 2);
    plan_free(&p);

    /* gelu: folded as any kind */
    build_step(&p, 0);
    p.nodes[1].par.act.kind = ACT_GELU;
    p.nodes[5].par.act.kind = ACT_GELU;
    expect_steps("gelu backward (cuda)", &p, &CUDA_CAPS, fused, 4);
    plan_free(&p);

    /* the batch norm's input rewritten between the forward and the backward: the
     * backward cannot recompute from it; the forward keeps its output for the act_bwd */
    build_step(&p, 0);
    p.nodes[3].dst[PLAN_Y] = &t[X];
    EXPECT_STEPS("x written before the backward", &p, &CUDA_CAPS,
                 {0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 1, 0, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);

    /* the activation's dx read by another node besides the batch norm's backward */
    build_step(&p, 0);
    scale(&p, OTHER, DY);
    EXPECT_STEPS("act dx read twice", &p, &CUDA_CAPS,
                 {0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 1, 0, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);

    /* the activation's dy written between its backward and the batch norm's: the
     * activation backward cannot move to the batch norm backward's place */
    build_step(&p, 0);
    struct plan_node saved = p.nodes[6];
    plan_node_init(&p.nodes[6], PLAN_SCALE_FWD);
    p.nodes[6].dst[PLAN_Y] = &t[DS];
    p.nodes[6].src[PLAN_X] = &t[IMG];
    p.nodes[6].par.scale.s = 1.0f;
    *append(&p, PLAN_BN_BWD) = saved;
    EXPECT_STEPS("act dy written in between", &p, &CUDA_CAPS,
                 {0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 1, 0, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);
}

/* One test-time view: IMG -> X (as a batch node writes the input), bn (eval), relu, and a
 * reader of the activation's output into the view's logits. */
static void build_view(struct plan *p, int logits)
{
    scale(p, X, IMG);
    bn_eval(p, Y, X);
    act_fwd(p, A, Y, ACT_RELU);
    scale(p, logits, A);
}

static void test_eval_views(void)
{
    struct plan p = {0};
    build_view(&p, OUT);    /* 0 .. 3 */
    build_view(&p, OTHER);  /* 4 .. 7 */
    add_fwd(&p, S, OUT, OTHER);
    p.replayable = 1;
    const struct want views[] = {{1, PLAN_FUSE_BN_EVAL, 2, -1, -1, 0, 0, -1, -1},
                                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                 {5, PLAN_FUSE_BN_EVAL, 6, -1, -1, 0, 0, -1, -1},
                                 {6, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1}};
    expect_steps("two views (cuda)", &p, &CUDA_CAPS, views, 4);
    plan_free(&p);

    /* a reader of the first view's batch-norm output, before the second view rewrites
     * it: the first view writes it, the second does not */
    build_view(&p, OUT);
    scale(&p, DOUT, Y);     /* 4 */
    build_view(&p, OTHER);  /* 5 .. 8 */
    p.replayable = 1;
    EXPECT_STEPS("first view's output read", &p, &CUDA_CAPS,
                 {1, PLAN_FUSE_BN_EVAL, 2, -1, -1, 1, 0, -1, -1},
                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {6, PLAN_FUSE_BN_EVAL, 7, -1, -1, 0, 0, -1, -1},
                 {7, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);

    /* a reader of the batch norm's output at the plan's start: the last view's value is
     * read there when the plan runs again (the span wraps round), the first view's not */
    scale(&p, DOUT, Y);     /* 0 */
    build_view(&p, OUT);    /* 1 .. 4 */
    build_view(&p, OTHER);  /* 5 .. 8 */
    p.replayable = 1;
    EXPECT_STEPS("read at the plan's start", &p, &CUDA_CAPS,
                 {2, PLAN_FUSE_BN_EVAL, 3, -1, -1, 0, 0, -1, -1},
                 {3, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {6, PLAN_FUSE_BN_EVAL, 7, -1, -1, 1, 0, -1, -1},
                 {7, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);
}

/* A residual add whose output is the next batch norm's x: the add takes the statistics
 * (CUDA), the batch norm starting from them, with or without its ReLU folded in; not when
 * another node writes the sum between the two, nor when the batch norm reads another
 * tensor, nor on an engine whose caps do not take it. */
static void test_add_stats(void)
{
    struct plan p = {0};
    add_fwd(&p, S, A, R);   /* 0 */
    bn_train(&p, Y, S);     /* 1 */
    scale(&p, OUT, Y);      /* 2 */
    p.replayable = 1;
    EXPECT_STEPS("add takes the statistics", &p, &CUDA_CAPS,
                 {0, PLAN_FUSE_ADD_STATS, -1, -1, -1, 0, 0, 1, -1},
                 {1, PLAN_FUSE_BN_TRAIN, -1, -1, -1, 1, 0, 0, -1});
    plan_free(&p);

    add_fwd(&p, S, A, R);          /* 0 */
    bn_train(&p, Y, S);            /* 1 */
    act_fwd(&p, X, Y, ACT_RELU);   /* 2 */
    scale(&p, OUT, X);             /* 3 */
    p.replayable = 1;
    EXPECT_STEPS("add takes the statistics, relu folded", &p, &CUDA_CAPS,
                 {0, PLAN_FUSE_ADD_STATS, -1, -1, -1, 0, 0, 1, -1},
                 {1, PLAN_FUSE_BN_TRAIN, 2, -1, -1, 0, 0, 0, -1},
                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);

    add_fwd(&p, S, A, R);   /* 0 */
    scale(&p, S, OTHER);    /* 1: rewrites the sum */
    bn_train(&p, Y, S);     /* 2 */
    scale(&p, OUT, Y);      /* 3 */
    p.replayable = 1;
    expect_unfused("sum rewritten before the batch norm", &p, &CUDA_CAPS);
    plan_free(&p);

    add_fwd(&p, S, A, R);   /* 0 */
    bn_train(&p, Y, X);     /* 1: another tensor */
    scale(&p, OUT, Y);      /* 2 */
    scale(&p, DOUT, S);     /* 3 */
    p.replayable = 1;
    expect_unfused("batch norm of another tensor", &p, &CUDA_CAPS);
    plan_free(&p);
}

/* conv0 -> bn -> relu -> conv1 -> reader, and the backward: conv1's (dx, dw), the relu's,
 * the batch norm's, conv0's weight gradient. second_reader adds a reader of the relu's
 * output; bias gives conv1 a bias; accumulate makes conv1's dx accumulate. */
static void conv_bn_plan(struct plan *p, int second_reader, int bias, int accumulate)
{
    conv_fwd(p, X, IMG, W0, -1);                 /* 0 */
    bn_train(p, Y, X);                           /* 1 */
    act_fwd(p, A, Y, ACT_RELU);                  /* 2 */
    conv_fwd(p, OUT, A, W1, bias ? BIAS : -1);   /* 3 */
    scale(p, DOUT, second_reader ? A : OUT);     /* 4: the loss */
    conv_bwd(p, DA, DW1, DOUT, A, W1, accumulate);   /* 5 */
    act_bwd(p, DY, DA, Y, ACT_RELU, 0);          /* 6 */
    bn_bwd(p, DX, DY, X);                        /* 7 */
    conv_bwd(p, -1, DW0, DX, IMG, W0, 0);        /* 8 */
    p->replayable = 1;
}

/* The batch norm inside the convolutions: found with an engine that takes it, and not
 * when the engine refuses, the activation is not a ReLU (hardswish), the relu's output has
 * another reader, the convolution has a bias or accumulates its dx, or the engine has no
 * such path (the CUDA caps without the callbacks). */
static void test_conv_bn(void)
{
    struct plan p = {0};
    const struct want old_fusion[] = {{1, PLAN_FUSE_BN_TRAIN, 2, -1, -1, 0, 1, -1, -1},
                                      {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                      {6, PLAN_FUSE_SKIP, -1, -1, 1, 0, 0, -1, -1},
                                      {7, PLAN_FUSE_BN_BWD, 6, -1, 1, 0, 0, -1, -1}};
    const struct want stats_fusion[] = {{0, PLAN_FUSE_CONV_FWD, -1, -1, -1, 0, 0, 1, -1},
                                        {1, PLAN_FUSE_BN_TRAIN, 2, -1, -1, 0, 1, 0, -1},
                                        {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                        {6, PLAN_FUSE_SKIP, -1, -1, 1, 0, 0, -1, -1},
                                        {7, PLAN_FUSE_BN_BWD, 6, -1, 1, 0, 0, -1, -1}};
    conv_bn_plan(&p, 0, 0, 0);
    conv_answer.answer = 1;
    conv_answer.fwd_asked = conv_answer.bwd_asked = conv_answer.pro_and_stats = 0;
    EXPECT_STEPS("batch norm inside the convolutions", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_CONV_FWD, -1, -1, -1, 0, 0, 1, -1},
                 {1, PLAN_FUSE_BN_SUMS, 2, -1, -1, 0, 0, 0, -1},
                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {3, PLAN_FUSE_CONV_FWD, -1, -1, 1, 0, 0, -1, -1},
                 {5, PLAN_FUSE_CONV_BWD, 6, -1, 1, 0, 0, 7, -1},
                 {6, PLAN_FUSE_SKIP, -1, -1, 1, 0, 0, -1, -1},
                 {7, PLAN_FUSE_BN_APPLY, 6, -1, 1, 0, 0, 5, -1});
    CHECK(conv_answer.fwd_asked == 2 && conv_answer.bwd_asked == 1 &&
          conv_answer.pro_and_stats == 0);
    conv_answer.answer = 0;
    expect_steps("the engine refuses", &p, &CONV_CAPS, old_fusion, 4);
    expect_steps("no such path (cuda caps)", &p, &CUDA_CAPS, old_fusion, 4);
    conv_answer.answer = 1;

    /* hardswish: the convolutions' graphs apply ReLU only (cuDNN has no pointwise mode
     * for hardswish), so the batch norm stays out of them and its fused passes (our own
     * kernels) take the activation; the convolution still sums for the batch norm */
    p.nodes[2].par.act.kind = ACT_HARDSWISH;
    p.nodes[6].par.act.kind = ACT_HARDSWISH;
    conv_answer.fwd_asked = conv_answer.bwd_asked = 0;
    expect_steps("hardswish: not inside the convolutions", &p, &CONV_CAPS, stats_fusion, 5);
    CHECK(conv_answer.bwd_asked == 0);
    expect_steps("hardswish (cuda caps)", &p, &CUDA_CAPS, old_fusion, 4);
    plan_free(&p);

    /* not inside the convolutions: conv0 still sums its output for the batch norm */
    conv_bn_plan(&p, 1, 0, 0);
    expect_steps("the relu's output has another reader", &p, &CONV_CAPS, stats_fusion, 5);
    plan_free(&p);
    conv_bn_plan(&p, 0, 1, 0);
    expect_steps("the convolution has a bias", &p, &CONV_CAPS, stats_fusion, 5);
    plan_free(&p);
    /* with conv1's dx accumulating, the relu's output goes inside conv1 instead
     * (test_bn_into_convs); conv1, dx's only writer, adds to what it wrote in the last
     * run, so its data gradient is not folded */
    conv_bn_plan(&p, 0, 0, 1);
    EXPECT_STEPS("the convolution's dx accumulates", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_CONV_FWD, -1, -1, -1, 0, 0, 1, -1},
                 {1, PLAN_FUSE_BN_COEF, 2, -1, -1, 0, 1, 0, -1},
                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {3, PLAN_FUSE_CONV_FWD, -1, -1, 1, 0, 0, -1, -1},
                 {5, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 1, 0, 0, -1, -1},
                 {6, PLAN_FUSE_SKIP, -1, -1, 1, 0, 0, -1, -1},
                 {7, PLAN_FUSE_BN_BWD, 6, -1, 1, 0, 0, -1, -1});
    plan_free(&p);
}

/* conv -> bn -> relu -> max pool, and the backward (ResNet-9's conv_bn -> pool): the
 * convolution sums its output for the batch norm (CONV_FWD stats, BN_TRAIN stats) on an
 * engine that takes it, the pool folded as ever; with a prologue when the convolution
 * reads a batch norm inside the convolutions; not when the engine refuses, the
 * convolution has a bias, a node rewrites x between the two, the batch norm has ghost
 * parts, or on engines without the path. */
static void conv_stats_plan(struct plan *p, int bias, int rewrite_x, int splits)
{
    *p = (struct plan){0};
    conv_fwd(p, X, IMG, W0, bias ? BIAS : -1);     /* 0 */
    if (rewrite_x) scale(p, X, OTHER);             /* 1 */
    bn_train(p, Y, X);                             /* 1 (2) */
    p->nodes[p->count - 1].par.bn.splits = splits;
    act_fwd(p, A, Y, ACT_RELU);
    pool_fwd(p, P, A, POOL_MAX, 3);
    scale(p, OUT, P);                              /* the loss */
    p->replayable = 1;
}

static void test_conv_stats(void)
{
    struct plan p;
    conv_answer.answer = 1;
    conv_answer.fwd_asked = conv_answer.pro_and_stats = 0;
    conv_stats_plan(&p, 0, 0, 1);
    EXPECT_STEPS("convolution summing for the batch norm", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_CONV_FWD, -1, -1, -1, 0, 0, 1, -1},
                 {1, PLAN_FUSE_BN_TRAIN, 2, -1, -1, 0, 0, 0, 3},
                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {3, PLAN_FUSE_SKIP, -1, -1, 1, 0, 0, -1, -1});
    CHECK(conv_answer.fwd_asked == 1 && conv_answer.pro_and_stats == 0);
    const struct want unsummed[] = {{1, PLAN_FUSE_BN_TRAIN, 2, -1, -1, 0, 0, -1, 3},
                                    {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                    {3, PLAN_FUSE_SKIP, -1, -1, 1, 0, 0, -1, -1}};
    conv_answer.answer = 0;
    expect_steps("the engine refuses the sums", &p, &CONV_CAPS, unsummed, 3);
    conv_answer.answer = 1;
    expect_steps("no such path (cuda caps)", &p, &CUDA_CAPS, unsummed, 3);
    /* a batch norm without an activation after it runs fused for the sums */
    p.nodes[2].src[PLAN_X] = &t[OTHER];
    EXPECT_STEPS("no activation", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_CONV_FWD, -1, -1, -1, 0, 0, 1, -1},
                 {1, PLAN_FUSE_BN_TRAIN, -1, -1, -1, 0, 0, 0, -1});
    plan_free(&p);
    /* an evaluation batch norm takes no sums */
    p = (struct plan){0};
    conv_fwd(&p, X, IMG, W0, -1);
    bn_eval(&p, Y, X);
    act_fwd(&p, A, Y, ACT_RELU);
    scale(&p, OUT, A);
    p.replayable = 1;
    EXPECT_STEPS("evaluation", &p, &CONV_CAPS, {1, PLAN_FUSE_BN_EVAL, 2, -1, -1, 0, 0, -1, -1},
                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);

    conv_stats_plan(&p, 1, 0, 1);
    expect_steps("the convolution has a bias", &p, &CONV_CAPS, unsummed, 3);
    plan_free(&p);
    conv_stats_plan(&p, 0, 0, 2);
    EXPECT_STEPS("ghost batch norm", &p, &CONV_CAPS,
                 {1, PLAN_FUSE_BN_TRAIN, 2, -1, -1, 0, 0, -1, -1},
                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);
    conv_stats_plan(&p, 0, 1, 1);
    EXPECT_STEPS("x rewritten between", &p, &CONV_CAPS,
                 {2, PLAN_FUSE_BN_TRAIN, 3, -1, -1, 0, 0, -1, 4},
                 {3, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {4, PLAN_FUSE_SKIP, -1, -1, 2, 0, 0, -1, -1});
    plan_free(&p);

    /* the convolution reading a batch norm inside the convolutions sums for the next:
     * conv0 -> bn -> relu -> conv1 -> bn2 -> relu -> pool */
    p = (struct plan){0};
    conv_bn_plan(&p, 0, 0, 0);
    p.nodes[4].src[PLAN_X] = &t[R];                  /* the loss: of the pooled branch */
    bn_train(&p, S, OUT);                          /* 9 */
    act_fwd(&p, DS, S, ACT_RELU);                  /* 10 */
    pool_fwd(&p, DP, DS, POOL_MAX, 3);             /* 11 */
    scale(&p, R, DP);                              /* 12 */
    conv_answer.fwd_asked = conv_answer.pro_and_stats = 0;
    EXPECT_STEPS("prologue and statistics", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_CONV_FWD, -1, -1, -1, 0, 0, 1, -1},
                 {1, PLAN_FUSE_BN_SUMS, 2, -1, -1, 0, 0, 0, -1},
                 {2, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {3, PLAN_FUSE_CONV_FWD, -1, -1, 1, 0, 0, 9, -1},
                 {5, PLAN_FUSE_CONV_BWD, 6, -1, 1, 0, 0, 7, -1},
                 {6, PLAN_FUSE_SKIP, -1, -1, 1, 0, 0, -1, -1},
                 {7, PLAN_FUSE_BN_APPLY, 6, -1, 1, 0, 0, 5, -1},
                 {9, PLAN_FUSE_BN_TRAIN, 10, -1, -1, 0, 0, 3, 11},
                 {10, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {11, PLAN_FUSE_SKIP, -1, -1, 9, 0, 0, -1, -1});
    CHECK(conv_answer.pro_and_stats == 1);
    plan_free(&p);
}

/* A pre-activation block with a 1x1 shortcut (DAWN_net's first block of a stage): bn ->
 * relu, read by the branch's convolution and the shortcut's, forward and backward (the
 * second data gradient accumulating), then the add and the batch norm's backward. With
 * third_reader another node reads the relu's output; with bias the branch's convolution
 * has one. */
static void preact_plan(struct plan *p, int third_reader, int bias)
{
    *p = (struct plan){0};
    bn_train(p, Y, X);                               /* 0 */
    act_fwd(p, A, Y, ACT_RELU);                      /* 1 */
    conv_fwd(p, OUT, A, W1, bias ? BIAS : -1);       /* 2: the branch */
    conv_fwd(p, S, A, W0, -1);                       /* 3: the shortcut */
    add_fwd(p, R, OUT, S);                           /* 4 */
    scale(p, DOUT, third_reader ? A : R);            /* 5: the loss */
    conv_bwd(p, DA, DW0, DOUT, A, W0, 0);            /* 6: the shortcut's */
    conv_bwd(p, DA, DW1, DOUT, A, W1, 1);            /* 7: the branch's, accumulating */
    act_bwd(p, DY, DA, Y, ACT_RELU, 0);              /* 8 */
    bn_bwd(p, DX, DY, X);                            /* 9 */
    p->replayable = 1;
}

/* The activation inside the convolutions reading it: found on an engine that takes it,
 * the statistics a convolution takes for another batch norm kept, the last data gradient
 * into the activation's gradient (the branch's) running the ReLU's mask and the batch
 * norm's weight gradients, adding the shortcut's gradient, unless the engine refuses that
 * graph or another node reads the gradient it would leave unwritten; not when the engine
 * refuses the forward or the weight gradient, a third node reads the activation, a
 * convolution has a bias, or the engine has no such path. */
static void test_bn_into_convs(void)
{
    struct plan p;
    const struct want unfolded[] = {{0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 0, 1, -1, -1},
                                    {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                    {8, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                    {9, PLAN_FUSE_BN_BWD, 8, -1, 0, 0, 0, -1, -1}};
    const struct want folded_pro[] = {{0, PLAN_FUSE_BN_COEF, 1, -1, -1, 0, 1, -1, -1},
                                      {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                      {2, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                                      {3, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                                      {6, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 0, 0, 0, -1, -1},
                                      {7, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 0, 0, 0, -1, -1},
                                      {8, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                      {9, PLAN_FUSE_BN_BWD, 8, -1, 0, 0, 0, -1, -1}};
    const struct want folded[] = {{0, PLAN_FUSE_BN_COEF, 1, -1, -1, 0, 1, -1, -1},
                                  {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                  {2, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                                  {3, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                                  {6, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 0, 0, 0, -1, -1},
                                  {7, PLAN_FUSE_CONV_BWD, 8, -1, 0, 0, 0, 9, -1},
                                  {8, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                  {9, PLAN_FUSE_BN_APPLY, 8, -1, 0, 0, 0, 7, -1}};
    CHECK(!strcmp(plan_fuse_kind_name(PLAN_FUSE_BN_COEF), "bn_coef") &&
          !strcmp(plan_fuse_kind_name(PLAN_FUSE_CONV_BWD_PRO), "conv_bwd_pro"));
    preact_plan(&p, 0, 0);
    conv_answer.answer = 1;
    conv_answer.fwd_asked = conv_answer.wgrad_asked = conv_answer.pro_and_stats = 0;
    conv_answer.bwd_asked = 0;
    expect_steps("activation inside its convolutions", &p, &CONV_CAPS, folded, 8);
    CHECK(conv_answer.fwd_asked == 2 && conv_answer.wgrad_asked == 1 &&
          conv_answer.bwd_asked == 1 && conv_answer.pro_and_stats == 0);
    conv_answer.bwd_refused = 1;
    expect_steps("the engine refuses the mask after the data gradient", &p, &CONV_CAPS,
                 folded_pro, 8);
    conv_answer.bwd_refused = 0;
    /* a node after the batch norm's backward reads the activation's gradient: the branch's
     * data gradient must still be written there */
    scale(&p, OTHER, DA);
    expect_steps("the activation's gradient read again", &p, &CONV_CAPS, folded_pro, 8);
    p.count--;
    /* a node between the branch's backward and the ReLU's reads the gradient */
    {
        struct plan q = {0};
        for (int i = 0; i < p.count; i++) {
            if (i == 8) scale(&q, OTHER, DA);
            *append(&q, p.nodes[i].op) = p.nodes[i];
        }
        q.replayable = 1;
        EXPECT_STEPS("the gradient read before the ReLU's backward", &q, &CONV_CAPS,
                     {0, PLAN_FUSE_BN_COEF, 1, -1, -1, 0, 1, -1, -1},
                     {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                     {2, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                     {3, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                     {6, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 0, 0, 0, -1, -1},
                     {7, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 0, 0, 0, -1, -1},
                     {9, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                     {10, PLAN_FUSE_BN_BWD, 9, -1, 0, 0, 0, -1, -1});
        plan_free(&q);
    }
    /* the branch's accumulating backward is the gradient's only writer (the shortcut's
     * writes elsewhere): a replay would add to what it wrote itself, so it stays */
    p.nodes[6].dst[PLAN_DX] = &t[OTHER];
    expect_steps("an accumulating only writer", &p, &CONV_CAPS, folded_pro, 8);
    p.nodes[6].dst[PLAN_DX] = &t[DA];
    conv_answer.answer = 0;
    expect_steps("the engine refuses", &p, &CONV_CAPS, unfolded, 4);
    conv_answer.answer = 1;
    conv_answer.wgrad_refused = 1;
    expect_steps("the engine refuses the weight gradient", &p, &CONV_CAPS, unfolded, 4);
    conv_answer.wgrad_refused = 0;
    expect_steps("no such path (cuda caps)", &p, &CUDA_CAPS, unfolded, 4);
    /* the data gradients need not accumulate: only the weight gradients read x */
    p.nodes[7].acc = 0;
    expect_steps("overwriting data gradients", &p, &CONV_CAPS, folded, 8);
    plan_free(&p);
    preact_plan(&p, 1, 0);
    expect_steps("a third reader", &p, &CONV_CAPS, unfolded, 4);
    plan_free(&p);
    preact_plan(&p, 0, 1);
    expect_steps("a convolution with a bias", &p, &CONV_CAPS, unfolded, 4);
    plan_free(&p);

    /* the branch's convolution sums its output for the next batch norm, and keeps doing
     * so with the prologue: node 4 becomes bn2 of the branch's output */
    preact_plan(&p, 0, 0);
    p.nodes[4] = p.nodes[0];   /* op, slots and parameters */
    p.nodes[4].src[PLAN_X] = &t[OUT];
    p.nodes[4].dst[PLAN_Y] = &t[R];
    p.nodes[4].dst[PLAN_SAVE_MEAN] = &t[MEAN2];
    p.nodes[4].dst[PLAN_SAVE_INVSTD] = &t[INVSTD2];
    conv_answer.pro_and_stats = 0;
    EXPECT_STEPS("prologue and the next statistics", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_BN_COEF, 1, -1, -1, 0, 1, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {2, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, 4, -1},
                 {3, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                 {4, PLAN_FUSE_BN_TRAIN, -1, -1, -1, 0, 0, 2, -1},
                 {6, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 0, 0, 0, -1, -1},
                 {7, PLAN_FUSE_CONV_BWD, 8, -1, 0, 0, 0, 9, -1},
                 {8, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                 {9, PLAN_FUSE_BN_APPLY, 8, -1, 0, 0, 0, 7, -1});
    CHECK(conv_answer.pro_and_stats == 1);
    plan_free(&p);
}

/* A pre-activation block with an identity shortcut (DAWN_net's blocks that keep the
 * shape): bn -> relu, read by the branch's convolution, forward and backward, and by the
 * residual add (as operand `second` + 1, the branch's output the other), the add's
 * backward a copy into the activation's gradient that the branch's data gradient
 * accumulates into, then the batch norm's backward. With next_bn a training batch norm
 * reads the sum (node 4: the add takes its statistics). sum is the add's output. */
static int identity_plan(struct plan *p, int second, int next_bn, int sum)
{
    *p = (struct plan){0};
    bn_train(p, Y, X);                               /* 0 */
    act_fwd(p, A, Y, ACT_RELU);                      /* 1 */
    conv_fwd(p, OUT, A, W1, -1);                     /* 2: the branch */
    if (second) add_fwd(p, sum, OUT, A);             /* 3 */
    else add_fwd(p, sum, A, OUT);
    if (next_bn) {                                   /* 4 */
        bn_train(p, S, sum);
        p->nodes[4].dst[PLAN_SAVE_MEAN] = &t[MEAN2];
        p->nodes[4].dst[PLAN_SAVE_INVSTD] = &t[INVSTD2];
    }
    scale(p, DOUT, next_bn ? S : sum);               /* 4 (5): the loss */
    scale(p, DA, DOUT);                              /* the add's backward to the shortcut */
    conv_bwd(p, DA, DW1, DOUT, A, W1, 1);            /* the branch's, accumulating */
    act_bwd(p, DY, DA, Y, ACT_RELU, 0);
    bn_bwd(p, DX, DY, X);
    p->replayable = 1;
    return next_bn;   /* how far the backward moved */
}

/* The identity shortcut's add recomputing the activation it reads: found on an engine
 * that takes the batch norm's activation into its convolutions and sets add_recompute,
 * with the add's statistics for the next batch norm kept, whichever operand the
 * activation is, the engine asked for the add inside the convolution and refusing it (its
 * taking it: test_conv_add); not when the engine lacks add_recompute or refuses the
 * convolutions, the
 * add reads the activation twice, a second add reads it, or the sum overwrites the batch
 * norm's x. */
static void test_identity_add(void)
{
    struct plan p;
    struct plan_fuse_caps no_recompute = CONV_CAPS;
    no_recompute.add_recompute = 0;
    conv_answer.answer = 1;
    conv_answer.wgrad_refused = 0;
    CHECK(!strcmp(plan_fuse_kind_name(PLAN_FUSE_ADD_PRO), "add_pro"));
    for (int second = 0; second <= 1; second++)
        for (int next_bn = 0; next_bn <= 1; next_bn++) {
            const int d = identity_plan(&p, second, next_bn, R);
            char what[96];
            snprintf(what, sizeof(what), "identity add recomputing (operand %d%s)", second + 1,
                     next_bn ? ", statistics" : "");
            const struct want folded[] = {
                {0, PLAN_FUSE_BN_COEF, 1, -1, -1, 0, 1, -1, -1},
                {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                {2, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                {3, PLAN_FUSE_ADD_PRO, -1, -1, 0, 0, 0, next_bn ? 4 : -1, -1},
                {6 + d, PLAN_FUSE_CONV_BWD, 7 + d, -1, 0, 0, 0, 8 + d, -1},
                {7 + d, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                {8 + d, PLAN_FUSE_BN_APPLY, 7 + d, -1, 0, 0, 0, 6 + d, -1},
                {4, PLAN_FUSE_BN_TRAIN, -1, -1, -1, 1, 0, 3, -1}};
            const struct want unfolded[] = {
                {0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 0, 1, -1, -1},
                {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                {3, next_bn ? PLAN_FUSE_ADD_STATS : PLAN_FUSE_RUN, -1, -1, -1, 0, 0,
                 next_bn ? 4 : -1, -1},
                {7 + d, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                {8 + d, PLAN_FUSE_BN_BWD, 7 + d, -1, 0, 0, 0, -1, -1},
                {4, PLAN_FUSE_BN_TRAIN, -1, -1, -1, 1, 0, 3, -1}};
            /* the engine refuses the add inside the convolution (add_taken 0), as asked */
            conv_answer.add_asked = 0;
            expect_steps(what, &p, &CONV_CAPS, folded, 7 + next_bn);
            CHECK(conv_answer.add_asked == 1);
            snprintf(what, sizeof(what), "no add_recompute (operand %d%s)", second + 1,
                     next_bn ? ", statistics" : "");
            expect_steps(what, &p, &no_recompute, unfolded, 5 + next_bn);
            conv_answer.answer = 0;
            expect_steps("the engine refuses the convolutions", &p, &CONV_CAPS, unfolded,
                         5 + next_bn);
            conv_answer.answer = 1;
            expect_steps("no such path (cuda caps)", &p, &CUDA_CAPS, unfolded, 5 + next_bn);
            plan_free(&p);
        }
    const struct want apart[] = {{0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 0, 1, -1, -1},
                                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                 {7, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                 {8, PLAN_FUSE_BN_BWD, 7, -1, 0, 0, 0, -1, -1}};
    /* the add reads the activation as both operands */
    identity_plan(&p, 0, 0, R);
    p.nodes[3].src[PLAN_ADD_B] = &t[A];
    expect_steps("add of the activation to itself", &p, &CONV_CAPS, apart, 4);
    plan_free(&p);
    /* a second add reads it: node 4 adds it to the branch's output again */
    identity_plan(&p, 0, 0, R);
    p.nodes[4] = p.nodes[3];   /* op, slots and parameters */
    p.nodes[4].dst[PLAN_Y] = &t[DOUT];
    expect_steps("a second add", &p, &CONV_CAPS, apart, 4);
    plan_free(&p);
    /* the sum overwrites x: the backward cannot recompute, so nothing keeps coefficients */
    identity_plan(&p, 0, 0, X);
    EXPECT_STEPS("the sum overwrites the batch norm's x", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 1, 0, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);
}

/* The add inside the convolution writing its operand, on an engine that takes it: the
 * identity shortcut's (its other operand recomputed from the batch norm's x, its
 * statistics for the next batch norm moved to the convolution, whichever operand the
 * activation is), the 1x1 shortcut's (into the later of the two convolutions, the
 * branch's output already written), and a plain convolution's; not when another node
 * reads the convolution's output or the other operand is written between the two (the
 * engine refusing the identity add: test_identity_add). */
static void test_conv_add(void)
{
    struct plan p;
    conv_answer.answer = 1;
    conv_answer.add_taken = 1;
    for (int second = 0; second <= 1; second++)
        for (int next_bn = 0; next_bn <= 1; next_bn++) {
            const int d = identity_plan(&p, second, next_bn, R);
            char what[96];
            snprintf(what, sizeof(what), "identity add in the convolution (operand %d%s)",
                     second + 1, next_bn ? ", statistics" : "");
            const struct want folded[] = {
                {0, PLAN_FUSE_BN_COEF, 1, -1, -1, 0, 1, -1, -1},
                {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                {2, PLAN_FUSE_CONV_FWD, 0, 3, 0, 0, 0, next_bn ? 4 : -1, -1},
                {3, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                {6 + d, PLAN_FUSE_CONV_BWD, 7 + d, -1, 0, 0, 0, 8 + d, -1},
                {7 + d, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                {8 + d, PLAN_FUSE_BN_APPLY, 7 + d, -1, 0, 0, 0, 6 + d, -1},
                {4, PLAN_FUSE_BN_TRAIN, -1, -1, -1, 1, 0, 2, -1}};
            conv_answer.add_asked = conv_answer.add_recomputed = conv_answer.add_stats = 0;
            expect_steps(what, &p, &CONV_CAPS, folded, 7 + next_bn);
            CHECK(conv_answer.add_asked == 1 && conv_answer.add_recomputed == 1 &&
                  conv_answer.add_stats == next_bn);
            plan_free(&p);
        }
    /* the 1x1 shortcut: into the shortcut's convolution, the later writer */
    preact_plan(&p, 0, 0);
    const struct want shortcut[] = {{0, PLAN_FUSE_BN_COEF, 1, -1, -1, 0, 1, -1, -1},
                                    {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                    {2, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                                    {3, PLAN_FUSE_CONV_FWD, -1, 4, 0, 0, 0, -1, -1},
                                    {4, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                    {6, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 0, 0, 0, -1, -1},
                                    {7, PLAN_FUSE_CONV_BWD, 8, -1, 0, 0, 0, 9, -1},
                                    {8, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                    {9, PLAN_FUSE_BN_APPLY, 8, -1, 0, 0, 0, 7, -1}};
    conv_answer.add_recomputed = 0;
    expect_steps("1x1 shortcut's add in its convolution", &p, &CONV_CAPS, shortcut, 9);
    CHECK(conv_answer.add_recomputed == 0);
    /* the shortcut's output read again after the add: the add runs alone */
    scale(&p, OTHER, S);
    EXPECT_STEPS("the convolution's output read again", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_BN_COEF, 1, -1, -1, 0, 1, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {2, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                 {3, PLAN_FUSE_CONV_FWD, -1, -1, 0, 0, 0, -1, -1},
                 {6, PLAN_FUSE_CONV_BWD_PRO, -1, -1, 0, 0, 0, -1, -1},
                 {7, PLAN_FUSE_CONV_BWD, 8, -1, 0, 0, 0, 9, -1},
                 {8, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                 {9, PLAN_FUSE_BN_APPLY, 8, -1, 0, 0, 0, 7, -1});
    plan_free(&p);
    /* a plain convolution and add; then the other operand rewritten in between */
    p = (struct plan){0};
    conv_fwd(&p, OUT, IMG, W0, -1);                  /* 0 */
    add_fwd(&p, R, OTHER, OUT);                      /* 1 */
    scale(&p, DOUT, R);                              /* 2 */
    p.replayable = 1;
    EXPECT_STEPS("a plain convolution's add", &p, &CONV_CAPS,
                 {0, PLAN_FUSE_CONV_FWD, -1, 1, -1, 0, 0, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);
    p = (struct plan){0};
    conv_fwd(&p, OUT, IMG, W0, -1);                  /* 0 */
    scale(&p, OTHER, IMG);                           /* 1: rewrites the other operand */
    add_fwd(&p, R, OTHER, OUT);                      /* 2 */
    scale(&p, DOUT, R);                              /* 3 */
    p.replayable = 1;
    expect_unfused("the other operand written in between", &p, &CONV_CAPS);
    plan_free(&p);
    conv_answer.add_taken = 0;
}

/* An empty plan, and the switch. */
static void test_edges(void)
{
    struct plan p = {0};
    struct plan_fuse_step s;
    plan_fuse_analyse(&s, &p, &CUDA_CAPS);   /* touches nothing */
    const char *var = "DAWNRUN_PLAN_FUSE_TEST";
    unsetenv(var);
    CHECK(env_switch_on(var) == 1);
    setenv(var, "0", 1);
    CHECK(env_switch_on(var) == 0);
    setenv(var, "1", 1);
    CHECK(env_switch_on(var) == 1);
    setenv(var, "", 1);
    CHECK(env_switch_on(var) == 1);
    unsetenv(var);
    CHECK(!strcmp(plan_fuse_kind_name(PLAN_FUSE_BN_BWD), "bn_bwd"));
    CHECK(!strcmp(plan_fuse_kind_name(PLAN_FUSE_ADD_STATS), "add_stats"));
    CHECK(!strcmp(plan_fuse_kind_name(PLAN_FUSE_KIND_COUNT), "?"));
    CHECK(plan_fuse_same_tensor(&t[X], &t[X]) && !plan_fuse_same_tensor(&t[X], &t[Y]) &&
          !plan_fuse_same_tensor(&t[X], NULL));
    struct tensor alias = t[X];   /* another handle of the same data */
    CHECK(plan_fuse_same_tensor(&alias, &t[X]));
}

/* bn -> relu -> max pool (the pool's windows tiling the plane), and the backward: the
 * pool folds into the batch norm's passes, forward and backward, on an engine whose caps
 * set pool_fold; not when its windows do not tile the plane, it averages, the activation
 * has another reader, the pool's backward accumulates or its dy changes before the batch
 * norm's backward reads it; in an evaluation plan, the forward alone. With rewrite_dy, a
 * node between the activation's backward and the batch norm's rewrites the pool's dy
 * (the batch norm's backward is then node 7). */
static void build_pool_plan(struct plan *p, int rewrite_dy)
{
    *p = (struct plan){0};
    bn_train(p, Y, X);                              /* 0 */
    act_fwd(p, A, Y, ACT_RELU);                     /* 1 */
    pool_fwd(p, P, A, POOL_MAX, 3);                 /* 2 */
    scale(p, DP, P);                                /* 3: the loss, the pool's dy */
    pool_bwd(p, DA, DP, A, P, POOL_MAX, 3, 0);      /* 4 */
    act_bwd(p, DY, DA, Y, ACT_RELU, 0);             /* 5 */
    if (rewrite_dy) scale(p, DP, IMG);              /* 6 */
    bn_bwd(p, DX, DY, X);                           /* 6 (7) */
    p->replayable = 1;
}

/* The steps of build_pool_plan's plan with the batch norm's backward at node bwd: the
 * pool folded (pooled) or not. */
static void pool_steps(struct want *w, int pooled, int bwd)
{
    const struct want folded[] = {{0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 0, 1, -1, 2},
                                  {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                  {2, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                  {4, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                  {5, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                  {bwd, PLAN_FUSE_BN_BWD, 5, -1, 0, 0, 0, -1, 4}};
    const struct want unpooled[] = {{0, PLAN_FUSE_BN_TRAIN, 1, -1, -1, 0, 1, -1, -1},
                                    {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                                    {5, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1},
                                    {bwd, PLAN_FUSE_BN_BWD, 5, -1, 0, 0, 0, -1, -1}};
    if (pooled) memcpy(w, folded, sizeof(folded));
    else memcpy(w, unpooled, sizeof(unpooled));
}

#define POOLED 6     /* pool_steps's counts */
#define UNPOOLED 4

static void test_bn_pool(void)
{
    /* pools that must not fold: the forward's and the backward's attributes */
    static const struct {
        const char *what;
        struct pool_attr fwd, bwd;
    } apart[] = {
        {"windows not tiling", {POOL_MAX, 2, 2, 2, 2}, {POOL_MAX, 2, 2, 2, 2}},   /* 3x3 plane */
        {"overlapping windows", {POOL_MAX, 3, 3, 1, 1}, {POOL_MAX, 3, 3, 1, 1}},
        {"average pool", {POOL_AVG, 3, 3, 3, 3}, {POOL_AVG, 3, 3, 3, 3}},
        {"backward of another pool", {POOL_MAX, 3, 3, 3, 3}, {POOL_AVG, 3, 3, 3, 3}},
    };
    struct plan p;
    struct want folded[POOLED], unpooled[UNPOOLED];
    pool_steps(folded, 1, 6);
    pool_steps(unpooled, 0, 6);
    build_pool_plan(&p, 0);
    expect_steps("bn+relu+pool (cuda)", &p, &CUDA_CAPS, folded, POOLED);
    const struct pool_attr tiling = p.nodes[2].par.pool;
    for (size_t i = 0; i < sizeof(apart) / sizeof(apart[0]); i++) {
        p.nodes[2].par.pool = apart[i].fwd;
        p.nodes[4].par.pool = apart[i].bwd;
        expect_steps(apart[i].what, &p, &CUDA_CAPS, unpooled, UNPOOLED);
    }
    p.nodes[2].par.pool = p.nodes[4].par.pool = tiling;
    expect_steps("bn+relu+pool again (cuda)", &p, &CUDA_CAPS, folded, POOLED);
    /* the pool's backward accumulates */
    p.nodes[4].acc = 1;
    expect_steps("pool backward accumulating", &p, &CUDA_CAPS, unpooled, UNPOOLED);
    p.nodes[4].acc = 0;
    /* the pool's backward reads another output */
    p.nodes[4].src[PLAN_BWD_Y] = &t[OTHER];
    expect_steps("pool backward of another output", &p, &CUDA_CAPS, unpooled, UNPOOLED);
    plan_free(&p);

    /* a second reader of the activation's output */
    build_pool_plan(&p, 0);
    scale(&p, OTHER, A);
    expect_steps("activation read twice", &p, &CUDA_CAPS, unpooled, UNPOOLED);
    plan_free(&p);

    /* the pool's dy rewritten between the pool's backward and the batch norm's */
    build_pool_plan(&p, 1);
    pool_steps(unpooled, 0, 7);
    expect_steps("pool dy rewritten", &p, &CUDA_CAPS, unpooled, UNPOOLED);
    plan_free(&p);

    /* evaluation: the forward alone */
    p = (struct plan){0};
    bn_eval(&p, Y, X);
    act_fwd(&p, A, Y, ACT_GELU);
    pool_fwd(&p, P, A, POOL_MAX, 3);
    scale(&p, OUT, P);
    p.replayable = 1;
    EXPECT_STEPS("eval bn+gelu+pool", &p, &CUDA_CAPS,
                 {0, PLAN_FUSE_BN_EVAL, 1, -1, -1, 0, 0, -1, 2},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1},
                 {2, PLAN_FUSE_SKIP, -1, -1, 0, 0, 0, -1, -1});
    /* the pool's output is also its input's: not folded */
    p.nodes[2].dst[PLAN_Y] = &t[A];
    EXPECT_STEPS("pool in place", &p, &CUDA_CAPS,
                 {0, PLAN_FUSE_BN_EVAL, 1, -1, -1, 0, 0, -1, -1},
                 {1, PLAN_FUSE_SKIP, -1, -1, -1, 0, 0, -1, -1});
    plan_free(&p);
}

int main(void)
{
    tensors_init();
    test_forward_add();
    test_second_reader();
    test_backward();
    test_eval_views();
    test_add_stats();
    test_conv_bn();
    test_bn_pool();
    test_conv_stats();
    test_bn_into_convs();
    test_identity_add();
    test_conv_add();
    test_edges();
    return check_finish("test_plan_fuse");
}

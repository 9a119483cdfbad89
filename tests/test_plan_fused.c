/* The fused ops (kernels/plan.h PLAN_FUSED_OPS) on the CPU engine: each fused node,
 * with and without a residual, keeping the batch norm's output or not, ghost parts, an
 * accumulating backward, gives its reference decomposition's bits (plan_fused_expand's
 * parts run as lone nodes) on every output it writes; a fused node of an activation the
 * engine's fused passes do not apply (GELU) is not supported and plan_run_node runs its
 * decomposition; DAWNRUN_CPU_FUSE=0 supports none; the op's rule refuses kept
 * coefficients of the wrong size and a residual without the add's output. The max pool
 * after the activation and the add before the batch norm, which the CPU engine runs as
 * their decompositions: those are the plain nodes, and the rule's limits on them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/status.h"
#include "kernels/backend.h"
#include "kernels/plan.h"

enum { N = 4, C = 3, H = 5, W = 6 };

static struct backend be;

static struct tensor filled(enum tensor_kind kind, int n, int c, int h, int w, unsigned salt)
{
    struct tensor t = {NULL, kind, n, c, h, w};
    CHECK(be.ops->tensor_alloc(be.ctx, &t) == DR_OK);
    float *v = malloc(tensor_count(&t) * sizeof(float));
    for (size_t i = 0; v && i < tensor_count(&t); i++)
        v[i] = (float)((i * 2654435761u + salt * 97u) % 1000u) / 400.0f - 1.25f;
    if (v) CHECK(be.ops->tensor_write(be.ctx, &t, v) == DR_OK);
    free(v);
    return t;
}

static int same_bits(const struct tensor *a, const struct tensor *b)
{
    const size_t bytes = tensor_count(a) * sizeof(float);
    float *x = malloc(bytes), *y = malloc(bytes);
    const int same = x && y && be.ops->tensor_read(be.ctx, x, a) == DR_OK &&
                     be.ops->tensor_read(be.ctx, y, b) == DR_OK && memcmp(x, y, bytes) == 0;
    free(x);
    free(y);
    return same;
}

/* One set of tensors a fused batch norm touches: r = 0 for the fused node, 1 for its
 * decomposition. */
struct set {
    struct tensor x, gamma, beta, y, mean, invstd, rmean, rvar, act, out, res, coef;
    struct tensor dy, dx, dgamma, dbeta, dact;
};

static void set_make(struct set *s, int parts)
{
    s->x = filled(TENSOR_ACT, N, C, H, W, 1);
    s->gamma = filled(TENSOR_PARAM, C, 1, 1, 1, 2);
    s->beta = filled(TENSOR_PARAM, C, 1, 1, 1, 3);
    s->y = filled(TENSOR_ACT, N, C, H, W, 4);
    s->mean = filled(TENSOR_F32, parts * C, 1, 1, 1, 5);
    s->invstd = filled(TENSOR_F32, parts * C, 1, 1, 1, 6);
    s->rmean = filled(TENSOR_F32, C, 1, 1, 1, 7);
    s->rvar = filled(TENSOR_F32, C, 1, 1, 1, 8);
    s->act = filled(TENSOR_ACT, N, C, H, W, 9);
    s->out = filled(TENSOR_ACT, N, C, H, W, 10);
    s->res = filled(TENSOR_ACT, N, C, H, W, 11);
    s->coef = filled(TENSOR_F32, PLAN_BN_COEF_PER_CHANNEL * parts * C, 1, 1, 1, 12);
    s->dy = filled(TENSOR_ACT, N, C, H, W, 13);
    s->dx = filled(TENSOR_ACT, N, C, H, W, 14);
    s->dgamma = filled(TENSOR_PARAM, C, 1, 1, 1, 15);
    s->dbeta = filled(TENSOR_PARAM, C, 1, 1, 1, 16);
    s->dact = filled(TENSOR_ACT, N, C, H, W, 17);
}

static void set_free(struct set *s)
{
    struct tensor *all[] = {&s->x,   &s->gamma, &s->beta, &s->y,  &s->mean,   &s->invstd,
                            &s->rmean, &s->rvar, &s->act, &s->out, &s->res,   &s->coef,
                            &s->dy,  &s->dx,    &s->dgamma, &s->dbeta, &s->dact};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) be.ops->tensor_free(be.ctx, all[i]);
}

/* The fused forward (train or eval) of set s as node n. */
static void fwd_node(struct plan_node *n, struct set *s, int train, int residual, int keep_y,
                     int res_first, int parts, enum act_kind kind)
{
    plan_node_init(n, train ? PLAN_BN_ACT_TRAIN : PLAN_BN_ACT_EVAL);
    if (train)
        plan_node_set_tensors(n,
                              PLAN_DSTS(&s->y, &s->mean, &s->invstd, &s->rmean, &s->rvar,
                                        &s->act, residual ? &s->out : NULL, &s->coef, NULL),
                              PLAN_SRCS(&s->x, &s->gamma, &s->beta, residual ? &s->res : NULL,
                                        NULL, NULL, NULL, NULL));
    else
        plan_node_set_tensors(n,
                              PLAN_DSTS(&s->y, NULL, NULL, NULL, NULL, &s->act,
                                        residual ? &s->out : NULL, NULL, NULL),
                              PLAN_SRCS(&s->x, &s->gamma, &s->beta, residual ? &s->res : NULL,
                                        &s->rmean, &s->rvar, NULL, NULL));
    n->par.bn_act.bn = (struct bn_attr){1e-5f, 0.1f, parts};
    n->par.bn_act.kind = kind;
    n->par.bn_act.alpha = 0.5f;
    n->par.bn_act.keep_y = keep_y;
    n->par.bn_act.res_first = res_first;
}

static void bwd_node(struct plan_node *n, struct set *s, int acc, enum act_kind kind)
{
    plan_node_init(n, PLAN_BN_ACT_BWD);
    plan_node_set_tensors(n, PLAN_DSTS(&s->dx, &s->dgamma, &s->dbeta, &s->dact, NULL),
                          PLAN_SRCS(&s->dy, &s->x, &s->gamma, &s->mean, &s->invstd, &s->y,
                                    &s->coef, NULL, NULL));
    n->acc = (unsigned)acc;
    n->par.bn_act.kind = kind;
}

/* Runs node n whole on set 0's tensors and as its parts on set 1's (the same node built
 * on set 1 by the caller into d). */
static void run_both(const struct plan_node *n, const struct plan_node *d)
{
    struct plan_node parts[PLAN_FUSED_MAX_PARTS];
    CHECK(plan_run_one(&be, n) == DR_OK);
    const int count = plan_fused_expand(parts, d);
    CHECK(count >= 2);
    for (int i = 0; i < count; i++) CHECK(plan_run_one(&be, &parts[i]) == DR_OK);
}

/* The training batch norm and ReLU of set s as lone plain nodes (one part): the reference
 * the fused forwards' decompositions are held to. */
static void plain_bn_relu(struct set *s)
{
    const union plan_params relu = {.act = {ACT_RELU, 0.0f}}, bn = {.bn = {1e-5f, 0.1f, 1}};
    CHECK(plan_run_op(&be, PLAN_BN_FWD_TRAIN,
                      PLAN_DSTS(&s->y, &s->mean, &s->invstd, &s->rmean, &s->rvar),
                      PLAN_SRCS(&s->x, &s->gamma, &s->beta), 0, &bn) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_ACT_FWD, PLAN_DSTS(&s->act), PLAN_SRCS(&s->y), 0, &relu) ==
          DR_OK);
}

/* Forward, then backward, fused against decomposed, for one combination. */
static void case_train(int residual, int keep_y, int res_first, int parts, int acc)
{
    struct set s[2];
    struct plan_node n[2];
    for (int r = 0; r < 2; r++) set_make(&s[r], parts);
    for (int r = 0; r < 2; r++) fwd_node(&n[r], &s[r], 1, residual, keep_y, res_first, parts,
                                         ACT_RELU);
    CHECK(be.ops->supports(be.ctx, &n[0]));
    run_both(&n[0], &n[1]);
    int ok = same_bits(&s[0].mean, &s[1].mean) && same_bits(&s[0].invstd, &s[1].invstd) &&
             same_bits(&s[0].rmean, &s[1].rmean) && same_bits(&s[0].rvar, &s[1].rvar);
    ok &= residual ? same_bits(&s[0].out, &s[1].out) : same_bits(&s[0].act, &s[1].act);
    if (keep_y) ok &= same_bits(&s[0].y, &s[1].y);
    for (int r = 0; r < 2; r++) bwd_node(&n[r], &s[r], acc, ACT_RELU);
    CHECK(be.ops->supports(be.ctx, &n[0]));
    run_both(&n[0], &n[1]);
    ok &= same_bits(&s[0].dx, &s[1].dx) && same_bits(&s[0].dgamma, &s[1].dgamma) &&
          same_bits(&s[0].dbeta, &s[1].dbeta);
    if (!ok)
        printf("train: residual %d keep_y %d res_first %d parts %d acc %d differ\n", residual,
               keep_y, res_first, parts, acc);
    CHECK(ok);
    for (int r = 0; r < 2; r++) set_free(&s[r]);
}

static void case_eval(int residual, int keep_y)
{
    struct set s[2];
    struct plan_node n[2];
    for (int r = 0; r < 2; r++) set_make(&s[r], 1);
    for (int r = 0; r < 2; r++) fwd_node(&n[r], &s[r], 0, residual, keep_y, 0, 1, ACT_RELU);
    CHECK(be.ops->supports(be.ctx, &n[0]));
    run_both(&n[0], &n[1]);
    int ok = residual ? same_bits(&s[0].out, &s[1].out) : same_bits(&s[0].act, &s[1].act);
    if (keep_y) ok &= same_bits(&s[0].y, &s[1].y);
    CHECK(ok);
    for (int r = 0; r < 2; r++) set_free(&s[r]);
}

/* GELU: the CPU's fused passes do not apply it, so the engine does not support the
 * node, and plan_run_node runs the decomposition, writing every output. */
static void case_fallback(void)
{
    struct set s[2];
    struct plan_node n[2];
    for (int r = 0; r < 2; r++) set_make(&s[r], 1);
    for (int r = 0; r < 2; r++) fwd_node(&n[r], &s[r], 1, 1, 0, 0, 1, ACT_GELU);
    CHECK(!be.ops->supports(be.ctx, &n[0]));
    run_both(&n[0], &n[1]);
    CHECK(same_bits(&s[0].y, &s[1].y) && same_bits(&s[0].act, &s[1].act) &&
          same_bits(&s[0].out, &s[1].out));
    for (int r = 0; r < 2; r++) bwd_node(&n[r], &s[r], 0, ACT_GELU);
    CHECK(!be.ops->supports(be.ctx, &n[0]));
    run_both(&n[0], &n[1]);
    CHECK(same_bits(&s[0].dx, &s[1].dx) && same_bits(&s[0].dact, &s[1].dact));
    /* fusion switched off: not even a ReLU */
    fwd_node(&n[0], &s[0], 1, 0, 1, 0, 1, ACT_RELU);
    CHECK(be.ops->supports(be.ctx, &n[0]));
    CHECK(setenv("DAWNRUN_CPU_FUSE", "0", 1) == 0);
    CHECK(!be.ops->supports(be.ctx, &n[0]));
    CHECK(unsetenv("DAWNRUN_CPU_FUSE") == 0);
    for (int r = 0; r < 2; r++) set_free(&s[r]);
}

/* The rule: kept coefficients of another size, a residual without the add's output, a
 * backward without coefficients; plain ops are not fused and expand to nothing. */
static void case_rule(void)
{
    struct set s;
    struct plan_node n, parts[PLAN_FUSED_MAX_PARTS];
    set_make(&s, 2);
    fprintf(stderr, "(three error messages expected below)\n");
    fwd_node(&n, &s, 1, 1, 1, 0, 2, ACT_RELU);
    CHECK(plan_node_check(&n) == DR_OK);
    n.dst[PLAN_BNA_COEF] = &s.mean;   /* 2 parts x 3 channels: not 4 floats each */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.dst[PLAN_BNA_COEF] = &s.coef;
    n.dst[PLAN_BNA_OUT] = NULL;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    bwd_node(&n, &s, 0, ACT_RELU);
    CHECK(plan_node_check(&n) == DR_OK);
    n.src[PLAN_BNA_BWD_COEF] = NULL;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    plan_node_init(&n, PLAN_ADD_FWD);
    CHECK(plan_fused_expand(parts, &n) == 0 && !plan_op_is_fused(PLAN_ADD_FWD));
    CHECK(plan_op_is_fused(PLAN_BN_ACT_TRAIN) && plan_op_is_fused(PLAN_BN_ACT_BWD));
    set_free(&s);
}

/* The max pool after the activation (5 x 3 windows, tiling the 5 x 6 plane) and the add
 * before the batch norm: the CPU engine does not take them (their decomposition runs),
 * and the decomposition is the plain nodes built here by hand, bit for bit: forward
 * (training and evaluation) and backward with the pool, training with the add before
 * (with and without a residual after). Then the rule's refusals. */
static const struct pool_attr POOL53 = {POOL_MAX, 5, 3, 5, 3};

static void case_pool_and_add(void)
{
    struct set s[2];
    struct plan_node n, parts[PLAN_FUSED_MAX_PARTS];
    struct tensor pool[2], dpool_y[2], dpool[2];
    const union plan_params relu = {.act = {ACT_RELU, 0.0f}}, mp = {.pool = POOL53};
    const union plan_params bn = {.bn = {1e-5f, 0.1f, 1}};
    for (int r = 0; r < 2; r++) {
        set_make(&s[r], 1);
        pool[r] = filled(TENSOR_ACT, N, C, 1, 2, 20);
        dpool_y[r] = filled(TENSOR_ACT, N, C, 1, 2, 21);
        dpool[r] = filled(TENSOR_ACT, N, C, H, W, 22);
    }
    /* training forward with the pool: 3 parts, the last the pool */
    fwd_node(&n, &s[0], 1, 0, 0, 0, 1, ACT_RELU);
    n.dst[PLAN_BNA_OUT] = &pool[0];
    n.par.bn_act.pool = POOL53;
    CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
    CHECK(plan_fused_expand(parts, &n) == 3 && parts[2].op == PLAN_POOL_FWD &&
          parts[2].src[PLAN_X] == &s[0].act && parts[2].dst[PLAN_Y] == &pool[0] &&
          !memcmp(&parts[2].par.pool, &POOL53, sizeof(POOL53)));
    CHECK(plan_run_one(&be, &n) == DR_OK);
    plain_bn_relu(&s[1]);
    CHECK(plan_run_op(&be, PLAN_POOL_FWD, PLAN_DSTS(&pool[1]), PLAN_SRCS(&s[1].act), 0, &mp) ==
          DR_OK);
    CHECK(same_bits(&pool[0], &pool[1]) && same_bits(&s[0].mean, &s[1].mean) &&
          same_bits(&s[0].rvar, &s[1].rvar));
    /* its backward from the pool's dy: 3 parts, the pool's first */
    bwd_node(&n, &s[0], 0, ACT_RELU);
    n.src[PLAN_DY] = &dpool_y[0];
    n.dst[PLAN_BNA_DPOOL] = &dpool[0];
    n.src[PLAN_BNA_BWD_ACT] = &s[0].act;
    n.src[PLAN_BNA_BWD_POOL_Y] = &pool[0];
    n.par.bn_act.pool = POOL53;
    CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
    CHECK(plan_fused_expand(parts, &n) == 3 && parts[0].op == PLAN_POOL_BWD &&
          parts[1].src[PLAN_DY] == &dpool[0]);
    CHECK(plan_run_one(&be, &n) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_POOL_BWD, PLAN_DSTS(&dpool[1]),
                      PLAN_SRCS(&dpool_y[1], &s[1].act, &pool[1]), 0, &mp) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_ACT_BWD, PLAN_DSTS(&s[1].dact), PLAN_SRCS(&dpool[1], &s[1].y), 0,
                      &relu) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_BN_BWD, PLAN_DSTS(&s[1].dx, &s[1].dgamma, &s[1].dbeta),
                      PLAN_SRCS(&s[1].dact, &s[1].x, &s[1].gamma, &s[1].mean, &s[1].invstd), 0,
                      NULL) == DR_OK);
    CHECK(same_bits(&s[0].dx, &s[1].dx) && same_bits(&s[0].dgamma, &s[1].dgamma) &&
          same_bits(&dpool[0], &dpool[1]));
    /* evaluation with the pool */
    fwd_node(&n, &s[0], 0, 0, 0, 0, 1, ACT_RELU);
    n.dst[PLAN_BNA_OUT] = &pool[0];
    n.par.bn_act.pool = POOL53;
    CHECK(plan_node_check(&n) == DR_OK && plan_fused_expand(parts, &n) == 3);
    CHECK(plan_run_one(&be, &n) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_BN_FWD_EVAL, PLAN_DSTS(&s[1].y),
                      PLAN_SRCS(&s[1].x, &s[1].gamma, &s[1].beta, &s[1].rmean, &s[1].rvar), 0,
                      &bn) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_ACT_FWD, PLAN_DSTS(&s[1].act), PLAN_SRCS(&s[1].y), 0, &relu) ==
          DR_OK);
    CHECK(plan_run_op(&be, PLAN_POOL_FWD, PLAN_DSTS(&pool[1]), PLAN_SRCS(&s[1].act), 0, &mp) ==
          DR_OK);
    CHECK(same_bits(&pool[0], &pool[1]));
    /* training with the add before (x = dy + dx), with a residual after and without */
    for (int res = 0; res < 2; res++) {
        fwd_node(&n, &s[0], 1, res, 1, 0, 1, ACT_RELU);
        n.dst[PLAN_BNA_SUM] = &s[0].x;
        n.src[PLAN_BNA_ADD_A] = &s[0].dy;
        n.src[PLAN_BNA_ADD_B] = &s[0].dx;
        n.par.bn_act.add_in = 1;
        CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
        CHECK(plan_fused_expand(parts, &n) == 3 + res && parts[0].op == PLAN_ADD_FWD &&
              parts[0].dst[PLAN_Y] == &s[0].x);
        CHECK(plan_run_one(&be, &n) == DR_OK);
        CHECK(plan_run_op(&be, PLAN_ADD_FWD, PLAN_DSTS(&s[1].x), PLAN_SRCS(&s[1].dy, &s[1].dx), 0,
                          NULL) == DR_OK);
        plain_bn_relu(&s[1]);
        if (res)
            CHECK(plan_run_op(&be, PLAN_ADD_FWD, PLAN_DSTS(&s[1].out),
                              PLAN_SRCS(&s[1].act, &s[1].res), 0, NULL) == DR_OK);
        CHECK(same_bits(&s[0].x, &s[1].x) && same_bits(&s[0].y, &s[1].y) &&
              same_bits(&s[0].act, &s[1].act) && same_bits(&s[0].rmean, &s[1].rmean));
        if (res) CHECK(same_bits(&s[0].out, &s[1].out));
    }
    /* the rule */
    fprintf(stderr, "(six error messages expected below)\n");
    fwd_node(&n, &s[0], 1, 1, 0, 0, 1, ACT_RELU);   /* a pool and a residual */
    n.par.bn_act.pool = POOL53;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    fwd_node(&n, &s[0], 0, 0, 0, 0, 1, ACT_RELU);   /* windows not tiling the plane */
    n.dst[PLAN_BNA_OUT] = &pool[0];
    n.par.bn_act.pool = (struct pool_attr){POOL_MAX, 2, 2, 2, 2};
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    fwd_node(&n, &s[0], 1, 0, 1, 0, 1, ACT_RELU);   /* the add's output not x */
    n.dst[PLAN_BNA_SUM] = &s[0].out;
    n.src[PLAN_BNA_ADD_A] = &s[0].dy;
    n.src[PLAN_BNA_ADD_B] = &s[0].dx;
    n.par.bn_act.add_in = 1;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.dst[PLAN_BNA_SUM] = &s[0].x;   /* operands without add_in */
    n.par.bn_act.add_in = 0;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    fwd_node(&n, &s[0], 0, 0, 1, 0, 1, ACT_RELU);   /* the add before in evaluation */
    n.par.bn_act.add_in = 1;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    bwd_node(&n, &s[0], 0, ACT_RELU);   /* a pool without its tensors */
    n.par.bn_act.pool = POOL53;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    for (int r = 0; r < 2; r++) {
        set_free(&s[r]);
        be.ops->tensor_free(be.ctx, &pool[r]);
        be.ops->tensor_free(be.ctx, &dpool_y[r]);
        be.ops->tensor_free(be.ctx, &dpool[r]);
    }
}

/* The convolutions' fused nodes (CONV_FUSED_FWD, CONV_FUSED_BWD, BN_APPLY_BWD, ADD_PRO) and
 * the batch norm's node with vectors: the CPU engine runs none of them fused, and their
 * decomposition is the plain nodes built here by hand, bit for bit, every slot given (the
 * vectors, the prologue's x and the recomputed operand's, which only a fused run reads, are
 * not touched). Then the rules' refusals. */
enum { VEC_FLOATS = PLAN_BNV_COUNT * 4 };   /* plan_bn_vec_stride(C) = 4 */

static void case_conv_nodes(void)
{
    struct set s[2];
    struct tensor w[2], c2[2], vec, vec2, vec_bad;
    struct plan_node n, parts[PLAN_FUSED_MAX_PARTS];
    const union plan_params conv = {.conv = {3, 1, 1}}, relu = {.act = {ACT_RELU, 0.0f}};
    CHECK(plan_bn_vec_stride(C) == 4 && plan_bn_vec_stride(8) == 8 && plan_bn_vec_stride(0) == 0);
    for (int r = 0; r < 2; r++) {
        set_make(&s[r], 1);
        w[r] = filled(TENSOR_PARAM, C, C, 3, 3, 30);
        c2[r] = filled(TENSOR_ACT, N, C, H, W, 31);
    }
    vec = filled(TENSOR_F32, VEC_FLOATS, 1, 1, 1, 32);
    vec2 = filled(TENSOR_F32, VEC_FLOATS, 1, 1, 1, 33);
    vec_bad = filled(TENSOR_F32, VEC_FLOATS - 4, 1, 1, 1, 34);
    /* the forward: conv(act, w) + res, summed into vec, act read through x's apply */
    plan_node_init(&n, PLAN_CONV_FUSED_FWD);
    plan_node_set_tensors(&n, PLAN_DSTS(&c2[0], &s[0].out, &vec2),
                          PLAN_SRCS(&s[0].act, &w[0], &s[0].x, &vec, &s[0].res, &s[0].y, &vec));
    n.par.conv = conv.conv;
    CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
    CHECK(plan_fused_expand(parts, &n) == 2 && parts[0].op == PLAN_CONV_FWD &&
          parts[1].op == PLAN_ADD_FWD && parts[1].src[0] == &c2[0]);
    CHECK(plan_run_one(&be, &n) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_CONV_FWD, PLAN_DSTS(&c2[1]), PLAN_SRCS(&s[1].act, &w[1], NULL), 0,
                      &conv) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_ADD_FWD, PLAN_DSTS(&s[1].out), PLAN_SRCS(&c2[1], &s[1].res), 0,
                      NULL) == DR_OK);
    CHECK(same_bits(&c2[0], &c2[1]) && same_bits(&s[0].out, &s[1].out));
    /* the backward with the batch norm's: dx (added to) then the ReLU's mask into dact */
    plan_node_init(&n, PLAN_CONV_FUSED_BWD);
    plan_node_set_tensors(&n,
                          PLAN_DSTS(&s[0].dx, &s[0].dgamma, &s[0].dact, &s[0].dgamma,
                                    &s[0].dbeta, &vec),
                          PLAN_SRCS(&s[0].dy, &s[0].act, &w[0], &s[0].x, &vec, &s[0].y,
                                    &s[0].mean, &s[0].invstd, &s[0].gamma, &s[0].beta));
    struct tensor dw[2] = {filled(TENSOR_PARAM, C, C, 3, 3, 35),
                           filled(TENSOR_PARAM, C, C, 3, 3, 35)};
    n.dst[PLAN_DW] = &dw[0];
    n.par.conv = conv.conv;
    n.acc = 1;
    CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
    CHECK(plan_fused_expand(parts, &n) == 2 && parts[0].op == PLAN_CONV_BWD && parts[0].acc == 1 &&
          parts[1].op == PLAN_ACT_BWD && parts[1].src[PLAN_DY] == &s[0].dx);
    CHECK(plan_run_one(&be, &n) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_CONV_BWD, PLAN_DSTS(&s[1].dx, &dw[1], NULL),
                      PLAN_SRCS(&s[1].dy, &s[1].act, &w[1]), 1, &conv) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_ACT_BWD, PLAN_DSTS(&s[1].dact), PLAN_SRCS(&s[1].dx, &s[1].y), 0,
                      &relu) == DR_OK);
    CHECK(same_bits(&s[0].dx, &s[1].dx) && same_bits(&dw[0], &dw[1]) &&
          same_bits(&s[0].dact, &s[1].dact));
    /* the batch norm's backward that applies the coefficients */
    plan_node_init(&n, PLAN_BN_APPLY_BWD);
    plan_node_set_tensors(&n, PLAN_DSTS(&c2[0], &s[0].dgamma, &s[0].dbeta),
                          PLAN_SRCS(&s[0].dact, &s[0].x, &s[0].gamma, &s[0].mean, &s[0].invstd,
                                    &vec));
    CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
    CHECK(plan_fused_expand(parts, &n) == 1 && parts[0].op == PLAN_BN_BWD);
    CHECK(plan_run_one(&be, &n) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_BN_BWD, PLAN_DSTS(&c2[1], &s[1].dgamma, &s[1].dbeta),
                      PLAN_SRCS(&s[1].dact, &s[1].x, &s[1].gamma, &s[1].mean, &s[1].invstd), 0,
                      NULL) == DR_OK);
    CHECK(same_bits(&c2[0], &c2[1]) && same_bits(&s[0].dgamma, &s[1].dgamma) &&
          same_bits(&s[0].dbeta, &s[1].dbeta));
    /* the add recomputing its first operand */
    plan_node_init(&n, PLAN_ADD_PRO);
    plan_node_set_tensors(&n, PLAN_DSTS(&s[0].out), PLAN_SRCS(&s[0].act, &s[0].res, &s[0].x,
                                                               &s[0].coef));
    CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
    CHECK(plan_fused_expand(parts, &n) == 1 && parts[0].op == PLAN_ADD_FWD);
    CHECK(plan_run_one(&be, &n) == DR_OK);
    CHECK(plan_run_op(&be, PLAN_ADD_FWD, PLAN_DSTS(&s[1].out), PLAN_SRCS(&s[1].act, &s[1].res), 0,
                      NULL) == DR_OK);
    CHECK(same_bits(&s[0].out, &s[1].out));
    /* the batch norm writing its vectors from the convolution's sums: its plain nodes */
    fwd_node(&n, &s[0], 1, 0, 0, 0, 1, ACT_RELU);
    n.dst[PLAN_BNA_VEC] = &vec;
    n.src[PLAN_BNA_VEC_IN] = &vec;
    CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
    CHECK(plan_fused_expand(parts, &n) == 2);
    CHECK(plan_run_one(&be, &n) == DR_OK);
    plain_bn_relu(&s[1]);
    CHECK(same_bits(&s[0].act, &s[1].act) && same_bits(&s[0].rvar, &s[1].rvar));
    /* the add before it recomputing its first operand: the add's plain node first */
    fwd_node(&n, &s[0], 1, 0, 1, 0, 1, ACT_RELU);
    n.dst[PLAN_BNA_SUM] = &s[0].x;
    n.src[PLAN_BNA_ADD_A] = &s[0].res, n.src[PLAN_BNA_ADD_B] = &s[0].dy;
    n.src[PLAN_BNA_ADD_PRO_X] = &s[0].out, n.src[PLAN_BNA_ADD_PRO_COEF] = &s[0].coef;
    n.par.bn_act.add_in = 1;
    CHECK(plan_node_check(&n) == DR_OK && !be.ops->supports(be.ctx, &n));
    CHECK(plan_fused_expand(parts, &n) == 3 && parts[0].op == PLAN_ADD_FWD &&
          parts[0].src[0] == &s[0].res);
    /* the rules */
    fprintf(stderr, "(nine error messages expected below)\n");
    plan_node_init(&n, PLAN_CONV_FUSED_FWD);   /* a prologue's x without its vectors */
    plan_node_set_tensors(&n, PLAN_DSTS(&c2[0]), PLAN_SRCS(&s[0].act, &w[0], &s[0].x));
    n.par.conv = conv.conv;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[PLAN_CF_PRO_VEC] = &vec_bad;   /* vectors of another size */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[PLAN_CF_PRO_VEC] = &vec;
    CHECK(plan_node_check(&n) == DR_OK);
    n.src[PLAN_CF_RES] = &s[0].res;   /* a residual without the add's output */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.src[PLAN_CF_RES] = NULL;
    n.src[PLAN_CF_RES_X] = &s[0].y;   /* a recomputed residual without a residual */
    n.src[PLAN_CF_RES_VEC] = &vec;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    plan_node_init(&n, PLAN_CONV_FUSED_BWD);   /* the batch norm's dy without its vectors */
    plan_node_set_tensors(&n, PLAN_DSTS(&s[0].dx, &dw[0], &s[0].dact),
                          PLAN_SRCS(&s[0].dy, &s[0].act, &w[0], &s[0].x, &vec, &s[0].y,
                                    &s[0].mean, &s[0].invstd, &s[0].gamma, &s[0].beta));
    n.par.conv = conv.conv;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.dst[PLAN_CB_DZ] = NULL;   /* the batch norm's inputs without its dy */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    fwd_node(&n, &s[0], 1, 0, 1, 0, 1, ACT_RELU);   /* vectors with the output kept */
    n.dst[PLAN_BNA_VEC] = &vec;
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    n.par.bn_act.keep_y = 0;
    n.src[PLAN_BNA_VEC_IN] = &vec2;   /* two vectors */
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    plan_node_init(&n, PLAN_ADD_PRO);   /* coefficients of another size */
    plan_node_set_tensors(&n, PLAN_DSTS(&s[0].out), PLAN_SRCS(&s[0].act, &s[0].res, &s[0].x,
                                                               &s[0].mean));
    CHECK(plan_node_check(&n) == DR_ERR_INTERNAL);
    CHECK(plan_op_is_fused(PLAN_CONV_FUSED_FWD) && plan_op_is_fused(PLAN_ADD_PRO));
    for (int r = 0; r < 2; r++) {
        set_free(&s[r]);
        be.ops->tensor_free(be.ctx, &w[r]);
        be.ops->tensor_free(be.ctx, &c2[r]);
        be.ops->tensor_free(be.ctx, &dw[r]);
    }
    be.ops->tensor_free(be.ctx, &vec);
    be.ops->tensor_free(be.ctx, &vec2);
    be.ops->tensor_free(be.ctx, &vec_bad);
}

int main(void)
{
    if (backend_cpu_create(&be, 2) != DR_OK) return check_finish("test_plan_fused");
    for (int residual = 0; residual < 2; residual++)
        for (int keep_y = 0; keep_y < 2; keep_y++) {
            case_train(residual, keep_y, residual, 1, 0);
            case_eval(residual, keep_y);
        }
    case_train(1, 0, 0, 2, 1);   /* ghost parts, accumulating dx */
    case_train(0, 1, 0, 4, 1);
    case_fallback();
    case_rule();
    case_pool_and_add();
    case_conv_nodes();
    backend_destroy(&be);
    return check_finish("test_plan_fused");
}

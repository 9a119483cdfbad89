/* `dawnrun selfcheck [--engine cuda] [--device N] [--precision P] [--threads N]
 * [--only PARTS]`: checks the CUDA engine against the CPU reference engine on this machine,
 * in three parts (--only runs a subset, e.g. under a slow memory checker):
 *   1. every op of the backend table, forward and backward (overwrite and accumulate),
 *      on random inputs of the shapes DAWN_net and ResNet-9 use: the largest error
 *      relative to the CPU output, one line per op and case, against the tolerance of
 *      the precision (OP_TOL below);
 *   2. the augmentation: the GPU batch equals the CPU batch for a seed (bit for bit in
 *      fp32, within one rounding to the half type otherwise);
 *   3. 20 training steps of a small network from the same initial weights on both
 *      engines, then an evaluation: the losses must track within TRAIN_TOL.
 * Both engines get identical inputs: values go to the GPU first and what it stores
 * (rounded to its precision) is read back and given to the CPU engine.
 * Exit status: 0 all passed, 1 a check failed, 6 a device error, 77 no usable device.
 * Entry point: cmd_selfcheck (runner/cli.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/experiment.h"
#include "engine/graph.h"
#include "kernels/rng.h"
#include "engine/shuffle.h"
#include "base/status.h"
#include "engine/train.h"

#define SC_NAMES 3
static const char *const PRECISION_NAMES[SC_NAMES] = {"fp32", "fp16", "bf16"};

/* Largest |gpu - cpu| / max |cpu| allowed per op output, by precision. fp32: both engines
 * compute in fp32 but sum in different orders (and cuDNN may pick Winograd or FFT
 * algorithms), a few 1e-6 in practice; fp16 / bf16: the output is rounded once to the
 * half type (2^-11 / 2^-8 relative) and cuDNN's half kernels may round intermediates.
 * An indexing mistake gives errors of order 1. */
static const double OP_TOL[SC_NAMES] = {5e-4, 1e-2, 5e-2};
/* Which ops must be exact: sgd_update and param_lerp are fp32 in every precision, in the
 * CPU twin's rounding order and compiled without FMA contraction (cmake/cuda.cmake), so
 * they must equal it to the bit; so must the fp32 augmentation (AUG_TOL). Every other op
 * sums in another order than the CPU twin (cuDNN, cuBLAS, the per-channel reductions
 * behind batch norm, whose arithmetic from the sums is shared and uncontracted but whose
 * sums are not ordered alike) and gets OP_TOL. */
#define SGD_TOL 0.0
/* Largest relative difference of the per-step training loss and of the test loss after
 * TRAIN_STEPS steps. Half precisions train on rounded weights and activations, and
 * training amplifies differences: a host emulation of the engine's kernels saw 3e-3 and
 * 4e-3 at worst in fp16 and bf16 (1e-7 in fp32). */
static const double TRAIN_TOL[SC_NAMES] = {2e-3, 2e-2, 5e-2};
/* Augmentation: fp32 must be exact; half types within one rounding of the CPU value. */
static const double AUG_TOL[SC_NAMES] = {0.0, 1.0 / 2048.0, 1.0 / 256.0};

#define TRAIN_STEPS 20
#define TRAIN_BATCH 32
#define TRAIN_IMAGES (TRAIN_STEPS * TRAIN_BATCH)
#define TOOLBOX_STEPS 10               /* the speed-training options' run (check_training) */
#define TEST_IMAGES 100
#define EVAL_BATCH 64                  /* 100 = 64 + 36: the last batch is partial */
#define RNG_STREAM_SELFCHECK 77        /* not used by training */

/* The parts --only selects from. */
enum sc_part {
    PART_CONV = 1,       /* the convolution checks of part 1 */
    PART_OPS = 2,        /* every other op of part 1 */
    PART_AUGMENT = 4,
    PART_TRAIN = 8,      /* the small network */
    PART_TOOLBOX = 16,   /* the network with the speed-training options */
    PART_ALL = 31
};
static const char *const PART_NAMES[] = {"conv", "ops", "augment", "train", "toolbox"};

struct sc {
    struct backend cpu, gpu;
    int parts;                         /* enum sc_part bits */
    int precision;
    double tol;
    int checks, failures;
    uint32_t draws;                    /* counter of the random input generator */
};

/* The same tensor on both engines. */
struct pair {
    struct tensor c, g;
};

/* The worst output of one check. */
struct result {
    double err;
    const char *worst;
};

/* ------------------------------------------------------------------ host helpers */

/* Uniform values in [lo, hi) from the counter-based generator. */
static void fill_uniform(struct sc *s, float *x, size_t n, float lo, float hi)
{
    for (size_t i = 0; i < n; i += 4) {
        struct rng4 r = rng_draw(20240611u, RNG_STREAM_SELFCHECK, 0, s->draws++, 0);
        for (size_t j = 0; j < 4 && i + j < n; j++) x[i + j] = lo + (hi - lo) * rng_unit(r.v[j]);
    }
}

/* x rounded to the nearest value of the precision's type (ties to even). */
static float round_to(float x, int precision)
{
    int bits = precision == PRECISION_FP16 ? 11 : precision == PRECISION_BF16 ? 8 : 0;
    int e;
    if (bits == 0 || x == 0.0f || !isfinite(x)) return x;
    if (precision == PRECISION_FP16 && fabsf(x) < ldexpf(1.0f, -14))   /* fp16 subnormal */
        return ldexpf(rintf(ldexpf(x, 24)), -24);
    float m = frexpf(x, &e);
    return ldexpf(rintf(ldexpf(m, bits)), e - bits);
}

/* max |gpu - cpu| / max |cpu| (an absolute floor of 1e-6 below the denominator). */
static double rel_err(const float *gpu, const float *cpu, size_t n)
{
    double diff = 0.0, ref = 1e-6;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)gpu[i] - (double)cpu[i]);
        if (!(d <= diff)) diff = isnan(d) ? INFINITY : d;
        if (fabs((double)cpu[i]) > ref) ref = fabs((double)cpu[i]);
    }
    return diff / ref;
}

static void result_add(struct result *r, const char *what, double err)
{
    if (!(err <= r->err)) {
        r->err = isnan(err) ? INFINITY : err;
        r->worst = what;
    }
}

/* Prints one check's line and counts it. */
static void sc_line(struct sc *s, const char *op, const char *shape, const struct result *r,
                    double tol)
{
    int ok = r->err <= tol;
    s->checks++;
    if (!ok) s->failures++;
    printf("  %-18s %-34s err %9.2e %-7s (tol %.2g)  %s\n", op, shape, r->err,
           r->worst ? r->worst : "", tol, ok ? "ok" : "FAIL");
    fflush(stdout);
}

static void sc_error(struct sc *s, const char *op, const char *shape, int rc)
{
    s->checks++;
    s->failures++;
    printf("  %-18s %-34s ERROR: %s  FAIL\n", op, shape, dr_status_str(rc));
    fflush(stdout);
}

/* ------------------------------------------------------------------ tensor pairs */

static int pair_new(struct sc *s, struct pair *p, enum tensor_kind kind, int n, int c, int h,
                    int w)
{
    int rc = DR_OK;
    p->c = (struct tensor){NULL, kind, n, c, h, w};
    p->g = p->c;
    TRY(s->cpu.ops->tensor_alloc(s->cpu.ctx, &p->c));
    TRY(s->gpu.ops->tensor_alloc(s->gpu.ctx, &p->g));
cleanup:
    return rc;
}

static void pair_del(struct sc *s, struct pair *p)
{
    if (p->c.data) s->cpu.ops->tensor_free(s->cpu.ctx, &p->c);
    if (p->g.data) s->gpu.ops->tensor_free(s->gpu.ctx, &p->g);
}

static void pair_set_n(struct pair *p, int n)
{
    p->c.n = n;
    p->g.n = n;
}

/* Gives both engines the values in host (fp32, canonical), as the GPU stores them: ACT
 * tensors make a round trip through the GPU, PARAM tensors are rounded here to the
 * compute type (the GPU's compute copy); host ends up holding what both engines see. */
static int pair_write(struct sc *s, struct pair *p, float *host)
{
    int rc = DR_OK;
    size_t n = tensor_count(&p->c);
    if (p->c.kind == TENSOR_PARAM)
        for (size_t i = 0; i < n; i++) host[i] = round_to(host[i], s->precision);
    TRY(s->gpu.ops->tensor_write(s->gpu.ctx, &p->g, host));
    if (p->c.kind == TENSOR_ACT) TRY(s->gpu.ops->tensor_read(s->gpu.ctx, host, &p->g));
    TRY(s->cpu.ops->tensor_write(s->cpu.ctx, &p->c, host));
cleanup:
    return rc;
}

/* Random contents in [lo, hi). */
static int pair_random(struct sc *s, struct pair *p, float lo, float hi)
{
    int rc = DR_OK;
    size_t n = tensor_count(&p->c);
    float *host = malloc((n ? n : 1) * sizeof(float));
    CHECK_ALLOC(host, "selfcheck input");
    fill_uniform(s, host, n, lo, hi);
    TRY(pair_write(s, p, host));
cleanup:
    free(host);
    return rc;
}

/* The same raw contents (I32 labels, U8 images) on both engines. */
static int pair_write_raw(struct sc *s, struct pair *p, const void *host)
{
    int rc = DR_OK;
    TRY(s->gpu.ops->tensor_write(s->gpu.ctx, &p->g, host));
    TRY(s->cpu.ops->tensor_write(s->cpu.ctx, &p->c, host));
cleanup:
    return rc;
}

/* Folds the GPU-vs-CPU error of p's contents into r under the name `what`. */
static int pair_check(struct sc *s, struct result *r, const char *what, const struct pair *p)
{
    int rc = DR_OK;
    size_t n = tensor_count(&p->c);
    float *a = malloc((n ? n : 1) * sizeof(float)), *b = malloc((n ? n : 1) * sizeof(float));
    CHECK_ALLOC(a, "selfcheck output");
    CHECK_ALLOC(b, "selfcheck output");
    TRY(s->gpu.ops->tensor_read(s->gpu.ctx, a, &p->g));
    TRY(s->cpu.ops->tensor_read(s->cpu.ctx, b, &p->c));
    result_add(r, what, rel_err(a, b, n));
cleanup:
    free(a);
    free(b);
    return rc;
}

/* Runs `call` on the CPU engine then on the GPU engine. Inside, B is the backend and
 * T(p) the pair member for it. */
#define T(p) (side ? &(p)->g : &(p)->c)
#define BOTH(call)                                                                         \
    do {                                                                                   \
        for (side = 0; side < 2; side++) {                                                 \
            struct backend *B = side ? &s->gpu : &s->cpu;                                  \
            TRY(call);                                                                     \
        }                                                                                  \
    } while (0)

/* Ends a check: its line, or its error. */
#define REPORT(op, res, tol)                                                               \
    do {                                                                                   \
        sc_line(s, (op), shape, (res), (tol));                                             \
        *(res) = (struct result){0.0, NULL};                                               \
    } while (0)

/* ------------------------------------------------------------------ op checks */

static int check_conv(struct sc *s, int n, int cap, int ci, int co, int hw, int k, int stride,
                      int pad, int bias, int image_input)
{
    int rc = DR_OK, side;
    struct pair x = {0}, w = {0}, b = {0}, y = {0}, dy = {0}, dx = {0}, dw = {0}, db = {0};
    struct conv_attr a = {k, stride, pad};
    struct result r = {0.0, NULL};
    const int ho = (hw + 2 * pad - k) / stride + 1;
    const char *op = "conv_forward";
    char shape[96];
    snprintf(shape, sizeof(shape), "%d->%d %dx%d k%d s%d p%d n%d/%d%s", ci, co, hw, hw, k,
             stride, pad, n, cap, bias ? " bias" : "");
    TRY(pair_new(s, &x, TENSOR_ACT, cap, ci, hw, hw));
    TRY(pair_new(s, &dx, TENSOR_ACT, cap, ci, hw, hw));
    TRY(pair_new(s, &y, TENSOR_ACT, cap, co, ho, ho));
    TRY(pair_new(s, &dy, TENSOR_ACT, cap, co, ho, ho));
    TRY(pair_new(s, &w, TENSOR_PARAM, co, ci, k, k));
    TRY(pair_new(s, &dw, TENSOR_PARAM, co, ci, k, k));
    TRY(pair_new(s, &b, TENSOR_PARAM, co, 1, 1, 1));
    TRY(pair_new(s, &db, TENSOR_PARAM, co, 1, 1, 1));
    pair_set_n(&x, n);
    pair_set_n(&dx, n);
    pair_set_n(&y, n);
    pair_set_n(&dy, n);
    TRY(pair_random(s, &x, -2.0f, 2.0f));
    TRY(pair_random(s, &w, -0.3f, 0.3f));
    TRY(pair_random(s, &b, -1.0f, 1.0f));
    BOTH(B->ops->conv_forward(B->ctx, T(&y), T(&x), T(&w), bias ? T(&b) : NULL, &a));
    TRY(pair_check(s, &r, "y", &y));
    REPORT(op, &r, s->tol);

    op = "conv_backward";
    TRY(pair_random(s, &dy, -1.0f, 1.0f));
    BOTH(B->ops->conv_backward(B->ctx, image_input ? NULL : T(&dx), T(&dw), bias ? T(&db) : NULL,
                               T(&dy), T(&x), T(&w), &a, 0));
    if (!image_input) TRY(pair_check(s, &r, "dx", &dx));
    TRY(pair_check(s, &r, "dw", &dw));
    if (bias) TRY(pair_check(s, &r, "db", &db));
    REPORT(op, &r, s->tol);

    if (image_input && bias) {
        /* a fixed filter with a trained bias (the whitening layer): no dw */
        op = "conv_backward db";
        TRY(pair_random(s, &dy, -1.0f, 1.0f));
        BOTH(B->ops->conv_backward(B->ctx, NULL, NULL, T(&db), T(&dy), T(&x), T(&w), &a, 0));
        TRY(pair_check(s, &r, "db", &db));
        REPORT(op, &r, s->tol);
    }
    if (!image_input) {
        op = "conv_backward +=";
        TRY(pair_random(s, &dx, -1.0f, 1.0f));
        BOTH(B->ops->conv_backward(B->ctx, T(&dx), T(&dw), NULL, T(&dy), T(&x), T(&w), &a, 1));
        TRY(pair_check(s, &r, "dx", &dx));
        TRY(pair_check(s, &r, "dw", &dw));
        REPORT(op, &r, s->tol);
    }
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    struct pair *all[] = {&x, &w, &b, &y, &dy, &dx, &dw, &db};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) pair_del(s, all[i]);
    return rc;
}

/* splits > 1: ghost batch norm, the statistics (saved ones and the running update) over
 * each of `splits` parts of the batch. */
static int check_bn(struct sc *s, int n, int c, int hw, float offset, int splits)
{
    int rc = DR_OK, side;
    struct pair x = {0}, y = {0}, dy = {0}, dx = {0}, gamma = {0}, beta = {0}, dgamma = {0},
                dbeta = {0}, mean = {0}, invstd = {0}, rmean = {0}, rvar = {0};
    struct bn_attr a = {1e-5f, 0.1f, splits};
    struct result r = {0.0, NULL};
    const int parts = splits > 1 ? splits : 1;
    const char *op = "bn_forward_train";
    char shape[96];
    snprintf(shape, sizeof(shape), "(%d, %d, %d, %d) mean %+.0f", n, c, hw, hw, offset);
    if (parts > 1)
        snprintf(shape + strlen(shape), sizeof(shape) - strlen(shape), " ghost /%d", parts);
    TRY(pair_new(s, &x, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &y, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &dy, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &dx, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &gamma, TENSOR_PARAM, c, 1, 1, 1));
    TRY(pair_new(s, &beta, TENSOR_PARAM, c, 1, 1, 1));
    TRY(pair_new(s, &dgamma, TENSOR_PARAM, c, 1, 1, 1));
    TRY(pair_new(s, &dbeta, TENSOR_PARAM, c, 1, 1, 1));
    TRY(pair_new(s, &mean, TENSOR_F32, parts * c, 1, 1, 1));
    TRY(pair_new(s, &invstd, TENSOR_F32, parts * c, 1, 1, 1));
    TRY(pair_new(s, &rmean, TENSOR_F32, c, 1, 1, 1));
    TRY(pair_new(s, &rvar, TENSOR_F32, c, 1, 1, 1));
    TRY(pair_random(s, &x, offset - 2.0f, offset + 2.0f));
    TRY(pair_random(s, &gamma, 0.5f, 1.5f));
    TRY(pair_random(s, &beta, -0.5f, 0.5f));
    TRY(pair_random(s, &rmean, -0.5f, 0.5f));
    TRY(pair_random(s, &rvar, 0.5f, 2.0f));
    BOTH(B->ops->bn_forward_train(B->ctx, T(&y), T(&mean), T(&invstd), T(&rmean), T(&rvar),
                                  T(&x), T(&gamma), T(&beta), &a));
    TRY(pair_check(s, &r, "y", &y));
    TRY(pair_check(s, &r, "mean", &mean));
    TRY(pair_check(s, &r, "invstd", &invstd));
    TRY(pair_check(s, &r, "rmean", &rmean));
    TRY(pair_check(s, &r, "rvar", &rvar));
    REPORT(op, &r, s->tol);

    op = "bn_forward_eval";
    BOTH(B->ops->bn_forward_eval(B->ctx, T(&y), T(&x), T(&gamma), T(&beta), T(&rmean), T(&rvar),
                                 &a));
    TRY(pair_check(s, &r, "y", &y));
    REPORT(op, &r, s->tol);

    op = "bn_backward";
    TRY(pair_random(s, &dy, -1.0f, 1.0f));
    BOTH(B->ops->bn_backward(B->ctx, T(&dx), T(&dgamma), T(&dbeta), T(&dy), T(&x), T(&gamma),
                             T(&mean), T(&invstd), 0));
    TRY(pair_check(s, &r, "dx", &dx));
    TRY(pair_check(s, &r, "dgamma", &dgamma));
    TRY(pair_check(s, &r, "dbeta", &dbeta));
    REPORT(op, &r, s->tol);

    op = "bn_backward +=";
    TRY(pair_random(s, &dx, -1.0f, 1.0f));
    BOTH(B->ops->bn_backward(B->ctx, T(&dx), T(&dgamma), T(&dbeta), T(&dy), T(&x), T(&gamma),
                             T(&mean), T(&invstd), 1));
    TRY(pair_check(s, &r, "dx", &dx));
    REPORT(op, &r, s->tol);
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    struct pair *all[] = {&x, &y, &dy, &dx, &gamma, &beta, &dgamma, &dbeta,
                          &mean, &invstd, &rmean, &rvar};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) pair_del(s, all[i]);
    return rc;
}

static int check_act(struct sc *s, enum act_kind kind, float alpha, int n, int c, int hw)
{
    int rc = DR_OK, side;
    struct pair x = {0}, y = {0}, dy = {0}, dx = {0};
    struct result r = {0.0, NULL};
    static const char *const names[] = {"relu", "celu", "gelu"};
    const char *op = "act_forward";
    char shape[96];
    snprintf(shape, sizeof(shape), "%s (%d, %d, %d, %d)", names[kind], n, c, hw, hw);
    TRY(pair_new(s, &x, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &y, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &dy, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &dx, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_random(s, &x, -3.0f, 3.0f));
    BOTH(B->ops->act_forward(B->ctx, T(&y), T(&x), kind, alpha));
    TRY(pair_check(s, &r, "y", &y));
    REPORT(op, &r, s->tol);
    TRY(pair_random(s, &dy, -1.0f, 1.0f));
    for (int acc = 0; acc < 2; acc++) {
        op = acc ? "act_backward +=" : "act_backward";
        if (acc) TRY(pair_random(s, &dx, -1.0f, 1.0f));
        BOTH(B->ops->act_backward(B->ctx, T(&dx), T(&dy), T(&x), kind, alpha, acc));
        TRY(pair_check(s, &r, "dx", &dx));
        REPORT(op, &r, s->tol);
    }
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    pair_del(s, &x);
    pair_del(s, &y);
    pair_del(s, &dy);
    pair_del(s, &dx);
    return rc;
}

/* levels > 0: inputs take only that many distinct values, so that windows hold ties. */
static int check_pool(struct sc *s, enum pool_kind kind, int n, int c, int hw, int k, int stride,
                      int levels)
{
    int rc = DR_OK, side;
    struct pair x = {0}, y = {0}, dy = {0}, dx = {0};
    struct pool_attr a = {kind, k, k, stride, stride};
    struct result r = {0.0, NULL};
    const int ho = (hw - k) / stride + 1;
    const size_t count = (size_t)n * c * hw * hw;
    float *host = NULL;
    const char *op = "pool_forward";
    char shape[96];
    snprintf(shape, sizeof(shape), "%s k%d s%d (%d, %d, %d, %d)%s",
             kind == POOL_MAX ? "max" : "avg", k, stride, n, c, hw, hw, levels ? " ties" : "");
    TRY(pair_new(s, &x, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &dx, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &y, TENSOR_ACT, n, c, ho, ho));
    TRY(pair_new(s, &dy, TENSOR_ACT, n, c, ho, ho));
    host = malloc(count * sizeof(float));
    CHECK_ALLOC(host, "selfcheck pool input");
    fill_uniform(s, host, count, -2.0f, 2.0f);
    if (levels)
        for (size_t i = 0; i < count; i++) host[i] = floorf((host[i] + 2.0f) * levels / 4.0f);
    TRY(pair_write(s, &x, host));
    BOTH(B->ops->pool_forward(B->ctx, T(&y), T(&x), &a));
    TRY(pair_check(s, &r, "y", &y));
    REPORT(op, &r, s->tol);
    TRY(pair_random(s, &dy, -1.0f, 1.0f));
    for (int acc = 0; acc < 2; acc++) {
        op = acc ? "pool_backward +=" : "pool_backward";
        if (acc) TRY(pair_random(s, &dx, -1.0f, 1.0f));
        BOTH(B->ops->pool_backward(B->ctx, T(&dx), T(&dy), T(&x), T(&y), &a, acc));
        TRY(pair_check(s, &r, "dx", &dx));
        REPORT(op, &r, s->tol);
    }
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    free(host);
    pair_del(s, &x);
    pair_del(s, &y);
    pair_del(s, &dy);
    pair_del(s, &dx);
    return rc;
}

/* Two inputs of c0 and c1 channels; skip_first: the first input has no gradient. */
static int check_concat(struct sc *s, int n, int c0, int c1, int hw, int skip_first)
{
    int rc = DR_OK, side;
    struct pair x0 = {0}, x1 = {0}, y = {0}, dy = {0}, d0 = {0}, d1 = {0};
    struct result r = {0.0, NULL};
    const char *op = "concat_forward";
    char shape[96];
    snprintf(shape, sizeof(shape), "%d+%d (%d, ., %d, %d)%s", c0, c1, n, hw, hw,
             skip_first ? " no dx0" : "");
    TRY(pair_new(s, &x0, TENSOR_ACT, n, c0, hw, hw));
    TRY(pair_new(s, &x1, TENSOR_ACT, n, c1, hw, hw));
    TRY(pair_new(s, &d0, TENSOR_ACT, n, c0, hw, hw));
    TRY(pair_new(s, &d1, TENSOR_ACT, n, c1, hw, hw));
    TRY(pair_new(s, &y, TENSOR_ACT, n, c0 + c1, hw, hw));
    TRY(pair_new(s, &dy, TENSOR_ACT, n, c0 + c1, hw, hw));
    TRY(pair_random(s, &x0, -1.0f, 1.0f));
    TRY(pair_random(s, &x1, -1.0f, 1.0f));
    BOTH(B->ops->concat_forward(B->ctx, T(&y),
                                (const struct tensor *const[]){T(&x0), T(&x1)}, 2));
    TRY(pair_check(s, &r, "y", &y));
    REPORT(op, &r, s->tol);
    op = "concat_backward";
    TRY(pair_random(s, &dy, -1.0f, 1.0f));
    TRY(pair_random(s, &d1, -1.0f, 1.0f));   /* accumulated into */
    BOTH(B->ops->concat_backward(B->ctx,
                                 (struct tensor *const[]){skip_first ? NULL : T(&d0), T(&d1)},
                                 T(&dy), 2, (const int[]){0, 1}));
    if (!skip_first) TRY(pair_check(s, &r, "dx0", &d0));
    TRY(pair_check(s, &r, "dx1+=", &d1));
    REPORT(op, &r, s->tol);
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    struct pair *all[] = {&x0, &x1, &y, &dy, &d0, &d1};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) pair_del(s, all[i]);
    return rc;
}

/* add, scale, scaled_copy (both modes) and flatten on (n, c, hw, hw). */
static int check_structural(struct sc *s, int n, int c, int hw)
{
    int rc = DR_OK, side;
    struct pair a = {0}, b = {0}, y = {0}, f = {0}, df = {0};
    struct result r = {0.0, NULL};
    const char *op = "add_forward";
    char shape[96];
    snprintf(shape, sizeof(shape), "(%d, %d, %d, %d)", n, c, hw, hw);
    TRY(pair_new(s, &a, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &b, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &y, TENSOR_ACT, n, c, hw, hw));
    TRY(pair_new(s, &f, TENSOR_ACT, n, c * hw * hw, 1, 1));
    TRY(pair_new(s, &df, TENSOR_ACT, n, c * hw * hw, 1, 1));
    TRY(pair_random(s, &a, -2.0f, 2.0f));
    TRY(pair_random(s, &b, -2.0f, 2.0f));
    BOTH(B->ops->add_forward(B->ctx, T(&y), T(&a), T(&b)));
    TRY(pair_check(s, &r, "y", &y));
    REPORT(op, &r, s->tol);
    op = "scale_forward";
    BOTH(B->ops->scale_forward(B->ctx, T(&y), T(&a), 0.125f));
    TRY(pair_check(s, &r, "y", &y));
    REPORT(op, &r, s->tol);
    op = "scaled_copy";
    BOTH(B->ops->scaled_copy(B->ctx, T(&y), T(&a), 1.0f, 0));
    TRY(pair_check(s, &r, "dx", &y));
    BOTH(B->ops->scaled_copy(B->ctx, T(&y), T(&b), 0.5f, 0));
    TRY(pair_check(s, &r, "dx*s", &y));
    REPORT(op, &r, s->tol);
    op = "scaled_copy +=";
    BOTH(B->ops->scaled_copy(B->ctx, T(&y), T(&a), 0.25f, 1));
    TRY(pair_check(s, &r, "dx", &y));
    REPORT(op, &r, s->tol);
    op = "flatten_forward";
    BOTH(B->ops->flatten_forward(B->ctx, T(&f), T(&a)));
    TRY(pair_check(s, &r, "y", &f));
    REPORT(op, &r, s->tol);
    op = "flatten_backward";
    TRY(pair_random(s, &df, -1.0f, 1.0f));
    BOTH(B->ops->flatten_backward(B->ctx, T(&y), T(&df), 0));
    TRY(pair_check(s, &r, "dx", &y));
    BOTH(B->ops->flatten_backward(B->ctx, T(&b), T(&df), 1));
    TRY(pair_check(s, &r, "dx+=", &b));
    REPORT(op, &r, s->tol);
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    struct pair *all[] = {&a, &b, &y, &f, &df};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) pair_del(s, all[i]);
    return rc;
}

static int check_linear(struct sc *s, int n, int cap, int in, int out, int bias)
{
    int rc = DR_OK, side;
    struct pair x = {0}, y = {0}, dy = {0}, dx = {0}, w = {0}, b = {0}, dw = {0}, db = {0};
    struct result r = {0.0, NULL};
    const char *op = "linear_forward";
    char shape[96];
    snprintf(shape, sizeof(shape), "%d->%d n%d/%d%s", in, out, n, cap, bias ? " bias" : "");
    TRY(pair_new(s, &x, TENSOR_ACT, cap, in, 1, 1));
    TRY(pair_new(s, &dx, TENSOR_ACT, cap, in, 1, 1));
    TRY(pair_new(s, &y, TENSOR_ACT, cap, out, 1, 1));
    TRY(pair_new(s, &dy, TENSOR_ACT, cap, out, 1, 1));
    TRY(pair_new(s, &w, TENSOR_PARAM, out, in, 1, 1));
    TRY(pair_new(s, &dw, TENSOR_PARAM, out, in, 1, 1));
    TRY(pair_new(s, &b, TENSOR_PARAM, out, 1, 1, 1));
    TRY(pair_new(s, &db, TENSOR_PARAM, out, 1, 1, 1));
    pair_set_n(&x, n);
    pair_set_n(&dx, n);
    pair_set_n(&y, n);
    pair_set_n(&dy, n);
    TRY(pair_random(s, &x, -2.0f, 2.0f));
    TRY(pair_random(s, &w, -0.1f, 0.1f));
    TRY(pair_random(s, &b, -1.0f, 1.0f));
    BOTH(B->ops->linear_forward(B->ctx, T(&y), T(&x), T(&w), bias ? T(&b) : NULL));
    TRY(pair_check(s, &r, "y", &y));
    REPORT(op, &r, s->tol);
    TRY(pair_random(s, &dy, -1.0f, 1.0f));
    for (int acc = 0; acc < 2; acc++) {
        op = acc ? "linear_backward +=" : "linear_backward";
        if (acc) TRY(pair_random(s, &dx, -1.0f, 1.0f));
        BOTH(B->ops->linear_backward(B->ctx, T(&dx), T(&dw), bias ? T(&db) : NULL, T(&dy), T(&x),
                                     T(&w), acc));
        TRY(pair_check(s, &r, "dx", &dx));
        TRY(pair_check(s, &r, "dw", &dw));
        if (bias) TRY(pair_check(s, &r, "db", &db));
        REPORT(op, &r, s->tol);
    }
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    struct pair *all[] = {&x, &y, &dy, &dx, &w, &b, &dw, &db};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) pair_del(s, all[i]);
    return rc;
}

static int check_xent(struct sc *s, int n, int k, float smoothing, float scale)
{
    int rc = DR_OK, side;
    struct pair logits = {0}, probs = {0}, dl = {0}, labels = {0}, stats = {0};
    struct result r = {0.0, NULL};
    int32_t *lab = NULL;
    float start[2] = {1.5f, 2.0f};
    const char *op = "xent_forward";
    char shape[96];
    snprintf(shape, sizeof(shape), "(%d, %d) smoothing %.1f scale %.3g", n, k, smoothing, scale);
    TRY(pair_new(s, &logits, TENSOR_ACT, n, k, 1, 1));
    TRY(pair_new(s, &probs, TENSOR_ACT, n, k, 1, 1));
    TRY(pair_new(s, &dl, TENSOR_ACT, n, k, 1, 1));
    TRY(pair_new(s, &labels, TENSOR_I32, n, 1, 1, 1));
    TRY(pair_new(s, &stats, TENSOR_F32, 2, 1, 1, 1));
    lab = malloc(sizeof(int32_t) * (size_t)n);
    CHECK_ALLOC(lab, "selfcheck labels");
    for (int i = 0; i < n; i++) lab[i] = (int32_t)rng_below(rng_draw(7, RNG_STREAM_SELFCHECK, 1,
                                                                     (uint32_t)i, 0).v[0],
                                                            (uint32_t)k);
    TRY(pair_write_raw(s, &labels, lab));
    TRY(pair_write_raw(s, &stats, start));   /* the loss adds to what is there */
    TRY(pair_random(s, &logits, -4.0f, 4.0f));
    BOTH(B->ops->xent_forward(B->ctx, T(&stats), T(&probs), T(&logits), T(&labels), smoothing));
    TRY(pair_check(s, &r, "probs", &probs));
    TRY(pair_check(s, &r, "stats", &stats));
    REPORT(op, &r, s->tol);
    op = "xent_backward";
    BOTH(B->ops->xent_backward(B->ctx, T(&dl), T(&probs), T(&labels), smoothing, scale));
    TRY(pair_check(s, &r, "dlogits", &dl));
    REPORT(op, &r, s->tol);
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    free(lab);
    struct pair *all[] = {&logits, &probs, &dl, &labels, &stats};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) pair_del(s, all[i]);
    return rc;
}

/* sgd_update on a linear weight, then a linear forward with it: the GPU's compute copy
 * must have followed the fp32 master. The step is large next to the weights, so that a
 * stale copy would miss by far more than the tolerance. */
static int check_sgd(struct sc *s, int nesterov)
{
    int rc = DR_OK, side;
    struct pair w = {0}, v = {0}, dw = {0}, x = {0}, y = {0};
    struct result r = {0.0, NULL};
    const char *op = "sgd_update";
    char shape[96];
    snprintf(shape, sizeof(shape), "(10, 512)%s", nesterov ? " nesterov" : "");
    TRY(pair_new(s, &w, TENSOR_PARAM, 10, 512, 1, 1));
    TRY(pair_new(s, &v, TENSOR_PARAM, 10, 512, 1, 1));
    TRY(pair_new(s, &dw, TENSOR_PARAM, 10, 512, 1, 1));
    TRY(pair_new(s, &x, TENSOR_ACT, 16, 512, 1, 1));
    TRY(pair_new(s, &y, TENSOR_ACT, 16, 10, 1, 1));
    TRY(pair_random(s, &w, -0.1f, 0.1f));
    TRY(pair_random(s, &v, -0.01f, 0.01f));
    TRY(pair_random(s, &dw, -1.0f, 1.0f));
    TRY(pair_random(s, &x, -1.0f, 1.0f));
    BOTH(B->ops->sgd_update(B->ctx, T(&w), T(&v), T(&dw), 0.05f, 5e-4f * 512.0f, 0.9f,
                            nesterov));
    TRY(pair_check(s, &r, "w", &w));
    TRY(pair_check(s, &r, "v", &v));
    TRY(pair_check(s, &r, "dw", &dw));
    REPORT(op, &r, SGD_TOL);
    op = "sgd -> linear";
    BOTH(B->ops->linear_forward(B->ctx, T(&y), T(&x), T(&w), NULL));
    TRY(pair_check(s, &r, "y", &y));
    /* the GPU computes with w rounded to its type, the CPU with the fp32 update */
    REPORT(op, &r, 2.0 * s->tol);
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    struct pair *all[] = {&w, &v, &dw, &x, &y};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) pair_del(s, all[i]);
    return rc;
}

/* param_lerp on a linear weight (PARAM: then a linear forward with the average, and with
 * the weight when copied back, so that the GPU's compute copies must have followed) or
 * on a vector of running statistics (F32). The average moves by a quarter of a large
 * difference, so that a stale copy would miss by far more than the tolerance. */
static int check_lerp(struct sc *s, enum tensor_kind kind, int copy_back)
{
    int rc = DR_OK, side;
    struct pair avg = {0}, w = {0}, x = {0}, y = {0};
    struct result r = {0.0, NULL};
    const int param = kind == TENSOR_PARAM;
    const char *op = "param_lerp";
    char shape[96];
    snprintf(shape, sizeof(shape), "%s%s", param ? "PARAM (10, 512)" : "F32 (256)",
             copy_back ? " copy back" : "");
    if (param) {
        TRY(pair_new(s, &avg, TENSOR_PARAM, 10, 512, 1, 1));
        TRY(pair_new(s, &w, TENSOR_PARAM, 10, 512, 1, 1));
    } else {
        TRY(pair_new(s, &avg, TENSOR_F32, 256, 1, 1, 1));
        TRY(pair_new(s, &w, TENSOR_F32, 256, 1, 1, 1));
    }
    TRY(pair_random(s, &avg, -0.1f, 0.1f));
    TRY(pair_random(s, &w, -0.5f, 0.5f));
    BOTH(B->ops->param_lerp(B->ctx, T(&avg), T(&w), 0.25f, copy_back));
    TRY(pair_check(s, &r, "avg", &avg));
    TRY(pair_check(s, &r, "w", &w));
    /* fp32 in every precision, with the CPU twin's rounding order */
    REPORT(op, &r, SGD_TOL);
    if (param) {
        op = "lerp -> linear";
        TRY(pair_new(s, &x, TENSOR_ACT, 16, 512, 1, 1));
        TRY(pair_new(s, &y, TENSOR_ACT, 16, 10, 1, 1));
        TRY(pair_random(s, &x, -1.0f, 1.0f));
        BOTH(B->ops->linear_forward(B->ctx, T(&y), T(&x), T(&avg), NULL));
        TRY(pair_check(s, &r, "y(avg)", &y));
        if (copy_back) {
            BOTH(B->ops->linear_forward(B->ctx, T(&y), T(&x), T(&w), NULL));
            TRY(pair_check(s, &r, "y(w)", &y));
        }
        /* the GPU computes with the weights rounded to its type, the CPU with fp32 */
        REPORT(op, &r, 2.0 * s->tol);
    }
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    struct pair *all[] = {&avg, &w, &x, &y};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) pair_del(s, all[i]);
    return rc;
}

/* Every op on the shapes of DAWN_net and ResNet-9 (batches kept small for the CPU).
 * Returns the number of checks that could not run. */
static int check_ops(struct sc *s)
{
    int errors = 0;
    printf("ops (largest |gpu - cpu| / max |cpu| over the outputs; the worst output named)\n");
    if (s->parts & PART_CONV) {
        errors += check_conv(s, 8, 8, 3, 64, 32, 3, 1, 1, 0, 1) != DR_OK;     /* prep */
        errors += check_conv(s, 8, 8, 64, 128, 16, 3, 2, 1, 1, 0) != DR_OK;   /* strided, bias */
        errors += check_conv(s, 8, 8, 64, 128, 16, 1, 2, 0, 0, 0) != DR_OK;   /* 1x1 shortcut */
        errors += check_conv(s, 6, 8, 128, 128, 8, 3, 1, 1, 0, 0) != DR_OK;   /* partial batch */
        errors += check_conv(s, 8, 8, 3, 24, 32, 2, 1, 0, 1, 1) != DR_OK;    /* whitening */
    }
    if (!(s->parts & PART_OPS)) return errors;
    errors += check_bn(s, 16, 64, 32, 0.0f, 0) != DR_OK;
    errors += check_bn(s, 32, 256, 4, 30.0f, 0) != DR_OK;                /* large mean */
    errors += check_bn(s, 16, 64, 32, 0.0f, 4) != DR_OK;                 /* ghost */
    errors += check_bn(s, 32, 256, 4, 30.0f, 16) != DR_OK;
    errors += check_act(s, ACT_RELU, 0.0f, 8, 64, 16) != DR_OK;
    errors += check_act(s, ACT_CELU, 0.3f, 8, 64, 16) != DR_OK;
    errors += check_act(s, ACT_GELU, 0.0f, 8, 64, 16) != DR_OK;
    errors += check_pool(s, POOL_MAX, 8, 64, 16, 2, 2, 0) != DR_OK;
    errors += check_pool(s, POOL_MAX, 8, 64, 16, 2, 2, 3) != DR_OK;       /* ties */
    errors += check_pool(s, POOL_AVG, 8, 64, 16, 2, 2, 0) != DR_OK;
    errors += check_pool(s, POOL_MAX, 8, 256, 4, 4, 4, 0) != DR_OK;       /* global */
    errors += check_pool(s, POOL_AVG, 8, 256, 4, 4, 4, 0) != DR_OK;
    errors += check_pool(s, POOL_MAX, 4, 16, 9, 3, 2, 4) != DR_OK;        /* overlapping */
    errors += check_pool(s, POOL_AVG, 4, 16, 9, 3, 2, 0) != DR_OK;
    errors += check_concat(s, 8, 256, 256, 1, 0) != DR_OK;
    errors += check_concat(s, 4, 16, 48, 8, 1) != DR_OK;
    errors += check_structural(s, 8, 64, 16) != DR_OK;
    errors += check_structural(s, 4, 32, 1) != DR_OK;
    errors += check_linear(s, 16, 16, 512, 10, 1) != DR_OK;
    errors += check_linear(s, 12, 16, 256, 10, 0) != DR_OK;
    errors += check_xent(s, 32, 10, 0.0f, 1.0f) != DR_OK;
    errors += check_xent(s, 32, 10, 0.2f, 1.0f / 32.0f) != DR_OK;
    errors += check_sgd(s, 1) != DR_OK;
    errors += check_sgd(s, 0) != DR_OK;
    errors += check_lerp(s, TENSOR_PARAM, 0) != DR_OK;
    errors += check_lerp(s, TENSOR_PARAM, 1) != DR_OK;
    errors += check_lerp(s, TENSOR_F32, 1) != DR_OK;
    return errors;
}

/* ------------------------------------------------------------------ augmentation */

/* A dataset of count images whose class shows (a bright band in one channel at a
 * class-dependent height) under uniform noise, so that a small network learns it. */
static int learnable_dataset(struct dataset *d, int count, uint32_t salt)
{
    d->count = count;
    d->images = malloc((size_t)count * CIFAR10_IMAGE_BYTES);
    d->labels = malloc((size_t)count);
    if (!d->images || !d->labels) return DR_ERR_NOMEM;
    for (int i = 0; i < count; i++) {
        struct rng4 r = rng_draw(salt, RNG_STREAM_SELFCHECK, 2, (uint32_t)i, 0);
        int label = (int)rng_below(r.v[0], CIFAR10_CLASSES);
        d->labels[i] = (uint8_t)label;
        uint8_t *img = d->images + (size_t)i * CIFAR10_IMAGE_BYTES;
        for (int j = 0; j < CIFAR10_IMAGE_BYTES; j += 4) {
            struct rng4 q = rng_draw(salt, RNG_STREAM_SELFCHECK, 3, (uint32_t)i, (uint32_t)j);
            for (int b = 0; b < 4; b++) img[j + b] = (uint8_t)(q.v[b] >> 25);   /* 0..127 */
        }
        for (int y = 3 * label; y < 3 * label + 3; y++)
            for (int x = 0; x < 32; x++) img[(label % 3) * 1024 + y * 32 + x] += 128;
    }
    return DR_OK;
}

static int check_augment_case(struct sc *s, const struct dataset *d, const struct pair *images,
                              const struct pair *labels, const struct augment_params *aug,
                              const char *name, int epoch)
{
    int rc = DR_OK, side;
    const int cap = 64, n = 50;
    struct pair x = {0}, lab = {0}, rows = {0};
    int32_t *perm = NULL, *lc = NULL, *lg = NULL;
    float *xc = NULL, *xg = NULL;
    const size_t count = (size_t)n * 3 * 32 * 32;
    double worst = 0.0;
    int label_mismatch = 0;
    const char *op = "augment";
    char shape[96];
    snprintf(shape, sizeof(shape), "%s n%d/%d epoch %d", name, n, cap, epoch);
    TRY(pair_new(s, &x, TENSOR_ACT, cap, 3, 32, 32));
    TRY(pair_new(s, &lab, TENSOR_I32, cap, 1, 1, 1));
    TRY(pair_new(s, &rows, TENSOR_I32, cap, 1, 1, 1));
    pair_set_n(&x, n);
    pair_set_n(&lab, n);
    pair_set_n(&rows, n);
    perm = malloc(sizeof(int32_t) * (size_t)d->count);
    xc = malloc(count * sizeof(float));
    xg = malloc(count * sizeof(float));
    lc = malloc(sizeof(int32_t) * (size_t)n);
    lg = malloc(sizeof(int32_t) * (size_t)n);
    if (!perm || !xc || !xg || !lc || !lg) FAIL(DR_ERR_NOMEM, "out of memory in selfcheck");
    shuffle_epoch(perm, d->count, 99, epoch);
    TRY(pair_write_raw(s, &rows, perm));
    BOTH(B->ops->augment(B->ctx, T(&x), T(&lab), T(images), T(labels), T(&rows), aug, 1234567,
                         epoch));
    TRY(s->gpu.ops->tensor_read(s->gpu.ctx, xg, &x.g));
    TRY(s->cpu.ops->tensor_read(s->cpu.ctx, xc, &x.c));
    TRY(s->gpu.ops->tensor_read(s->gpu.ctx, lg, &lab.g));
    TRY(s->cpu.ops->tensor_read(s->cpu.ctx, lc, &lab.c));
    for (size_t i = 0; i < count; i++) {
        double e = fabs((double)xg[i] - (double)xc[i]) / fmax(fabs((double)xc[i]), 1e-30);
        if (xg[i] == xc[i]) e = 0.0;
        if (!(e <= worst)) worst = isnan(e) ? INFINITY : e;
    }
    for (int i = 0; i < n; i++) label_mismatch += lc[i] != lg[i];
    struct result r = {worst, "x"};
    if (label_mismatch) r = (struct result){INFINITY, "labels"};
    sc_line(s, op, shape, &r, AUG_TOL[s->precision]);
cleanup:
    if (rc != DR_OK) sc_error(s, op, shape, rc);
    free(perm);
    free(xc);
    free(xg);
    free(lc);
    free(lg);
    pair_del(s, &x);
    pair_del(s, &lab);
    pair_del(s, &rows);
    return rc;
}

static int check_augment(struct sc *s)
{
    int rc = DR_OK, errors = 0;
    struct dataset d = {0};
    struct pair images = {0}, labels = {0};
    const struct augment_params page = {4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0},
                                wide = {16, PAD_ZERO, 1, 1, 5, 0, 0, 0, 0, 0},
                                plain = {4, PAD_REFLECT, 0, 0, 0, 0, 0, 0, 0, 0},
                                alt = {2, PAD_REFLECT, 1, 1, 0, 1, 0, 0, 0, 0},
                                view = {1, PAD_REFLECT, 1, 1, 8, 0, 1, 1, 1, 1},
                                view2 = {1, PAD_REFLECT, 1, 1, 8, 0, 1, -1, -1, 0};
    printf("augmentation (largest |gpu - cpu| / |cpu| per value; fp32 must be exact)\n");
    TRY(learnable_dataset(&d, 200, 5));
    TRY(pair_new(s, &images, TENSOR_U8, d.count, 3, 32, 32));
    TRY(pair_new(s, &labels, TENSOR_U8, d.count, 1, 1, 1));
    TRY(pair_write_raw(s, &images, d.images));
    TRY(pair_write_raw(s, &labels, d.labels));
    errors += check_augment_case(s, &d, &images, &labels, &page, "pad 4 reflect crop flip cut 8",
                                 0) != DR_OK;
    errors += check_augment_case(s, &d, &images, &labels, &page, "pad 4 reflect crop flip cut 8",
                                 7) != DR_OK;
    errors += check_augment_case(s, &d, &images, &labels, &wide, "pad 16 zero crop flip cut 5",
                                 3) != DR_OK;
    errors += check_augment_case(s, &d, &images, &labels, &plain, "centre, no flip", 1) != DR_OK;
    errors += check_augment_case(s, &d, &images, &labels, &alt, "pad 2 crop alternating flip",
                                 3) != DR_OK;
    errors += check_augment_case(s, &d, &images, &labels, &view, "view +1 +1 mirrored", 0) != DR_OK;
    errors += check_augment_case(s, &d, &images, &labels, &view2, "view -1 -1", 0) != DR_OK;
    errors += check_augment_case(s, &d, &images, &labels, NULL, "test batch", 0) != DR_OK;
    if (errors) rc = DR_ERR_INTERNAL;
cleanup:
    pair_del(s, &images);
    pair_del(s, &labels);
    dataset_free(&d);
    return rc;
}

/* ------------------------------------------------------------------ training */

/* Appends a layer; in1/in2 name its inputs ("" = the previous layer). */
static struct layer_spec *add_layer(struct net_spec *spec, const char *name, enum layer_type type,
                                    const char *in1, const char *in2)
{
    struct layer_spec *l = net_spec_add(spec, type);
    if (!l) return NULL;
    snprintf(l->name, sizeof(l->name), "%s", name);
    if (in1[0]) snprintf(l->inputs[l->n_inputs++], GRAPH_NAME_MAX, "%s", in1);
    if (in2[0]) snprintf(l->inputs[l->n_inputs++], GRAPH_NAME_MAX, "%s", in2);
    return l;
}

/* A small network with every layer type of the shipped configs: conv-bn-relu blocks, max
 * pools, a residual add, a CELU, max and average pools concatenated, flatten, a linear
 * layer with bias and a fixed scale. */
static int small_net(struct net_spec *spec)
{
    struct layer_spec *l;
    int ok = 1;
#define ADD(name, type, in1, in2) ok = ok && (l = add_layer(spec, name, type, in1, in2)) != NULL
    ADD("prep", LAYER_CONV, "", "");
    if (ok) l->out = 16;
    ADD("prep_bn", LAYER_BN, "", "");
    ADD("prep_relu", LAYER_RELU, "", "");
    ADD("pool1", LAYER_MAXPOOL, "", "");
    if (ok) l->k = l->stride = 2;
    ADD("conv2", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("bn2", LAYER_BN, "", "");
    ADD("act2", LAYER_CELU, "", "");
    if (ok) l->alpha = 0.3f;
    ADD("res", LAYER_CONV, "", "");
    if (ok) l->out = 32;
    ADD("res_bn", LAYER_BN, "", "");
    ADD("res_relu", LAYER_RELU, "", "");
    ADD("add", LAYER_ADD, "act2", "res_relu");
    ADD("pool2", LAYER_MAXPOOL, "", "");
    if (ok) l->k = l->stride = 2;
    ADD("down", LAYER_CONV, "", "");
    if (ok) {
        l->out = 64;
        l->stride = 2;
        l->bias = 1;
    }
    ADD("gmax", LAYER_GMAXPOOL, "down", "");
    ADD("gavg", LAYER_AVGPOOL, "down", "");
    if (ok) l->k = l->stride = 4;
    ADD("cat", LAYER_CONCAT, "gmax", "gavg");
    ADD("flat", LAYER_FLATTEN, "", "");
    ADD("linear", LAYER_LINEAR, "", "");
    if (ok) {
        l->out = 10;
        l->bias = 1;
    }
    ADD("logits", LAYER_SCALE, "", "");
    if (ok) l->scale = 0.125f;
#undef ADD
    return ok ? DR_OK : DR_ERR_NOMEM;
}

/* The speed-training options on one network: a 2x2 whitening layer with its negations
 * and a bias, GELU, dirac-started convs, ghost batch norm (4 parts) with frozen scales,
 * CELU, a global max pool and a bias-free linear layer with airbench's 1/9 scale. It
 * pools early to stay cheap under the emulated CUDA runtime. */
static int toolbox_net(struct net_spec *spec)
{
    struct layer_spec *l;
    int ok = 1;
#define ADD(name, type) ok = ok && (l = add_layer(spec, name, type, "", "")) != NULL
    ADD("whiten", LAYER_WHITEN);
    if (ok) {
        l->k = 2;
        l->pad = 0;
        l->eps = 5e-4f;
        l->negate = 1;
        l->bias = 1;
        l->bias_epochs = 1;
        l->whiten_images = TRAIN_IMAGES;
    }
    ADD("act0", LAYER_GELU);
    ADD("pool0", LAYER_MAXPOOL);
    if (ok) l->k = l->stride = 2;
    ADD("conv1", LAYER_CONV);
    if (ok) {
        l->out = 32;
        l->dirac = 1;
    }
    ADD("pool1", LAYER_MAXPOOL);
    if (ok) l->k = l->stride = 2;
    ADD("bn1", LAYER_BN);
    if (ok) {
        l->splits = 4;
        l->freeze_weight = 1;
        l->eps = 1e-12f;
        l->momentum = 0.4f;
    }
    ADD("act1", LAYER_CELU);
    if (ok) l->alpha = 0.3f;
    ADD("conv2", LAYER_CONV);
    if (ok) {
        l->out = 32;
        l->dirac = 1;
    }
    ADD("bn2", LAYER_BN);
    if (ok) l->splits = 4;
    ADD("act2", LAYER_GELU);
    ADD("gmax", LAYER_GMAXPOOL);
    ADD("flat", LAYER_FLATTEN);
    ADD("linear", LAYER_LINEAR);
    if (ok) {
        l->out = 10;
        l->bias = 0;
    }
    ADD("logits", LAYER_SCALE);
    if (ok) l->scale = 1.0f / 9.0f;
#undef ADD
    return ok ? DR_OK : DR_ERR_NOMEM;
}

static void small_experiment(struct experiment *e, int precision)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "selfcheck");
    snprintf(e->path, sizeof(e->path), "(selfcheck network)");
    e->train.epochs = 1.0;
    e->train.batch_size = TRAIN_BATCH;
    e->train.lr.count = 2;
    e->train.lr.knots[0] = 0.0;
    e->train.lr.knots[1] = 1.0;
    e->train.lr.values[0] = 0.2;
    e->train.lr.values[1] = 0.2;
    e->train.momentum = 0.9;
    e->train.nesterov = 1;
    e->train.weight_decay = 5e-4;
    e->train.loss = LOSS_SUM;
    e->train.label_smoothing = 0.2;
    e->train.precision = (enum precision)precision;
    e->augment = (struct augment_params){4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0};
    e->eval.batch_size = EVAL_BATCH;
    e->seeds = 1;
    for (int k = 0; k < PARAM_KIND_COUNT; k++) e->train.lr_scale[k] = e->train.wd_scale[k] = 1.0;
}

/* The toolbox run's options: airbench's translate and alternating flip, BN shifts at
 * lr x 64 and wd / 64, Lookahead every 2 steps, and 6-view test-time augmentation. */
static void toolbox_experiment(struct experiment *e, int precision)
{
    small_experiment(e, precision);
    e->train.momentum = 0.85;
    e->augment = (struct augment_params){2, PAD_REFLECT, 1, 1, 0, 1, 0, 0, 0, 0};
    e->train.lr_scale[PARAM_BN_B] = 64.0;
    e->train.wd_scale[PARAM_BN_B] = 1.0 / 64.0;
    e->train.average.kind = AVERAGE_LOOKAHEAD;
    e->train.average.every = 2;
    e->train.average.decay = 0.95;
    e->eval.tta = TTA_FLIP_TRANSLATE;
}

/* Summed loss and correct count accumulated by a trainer's model, then cleared. */
static int take_loss(struct trainer *t, double *loss)
{
    int rc = DR_OK;
    float st[2];
    TRY(t->be->ops->tensor_read(t->be->ctx, st, &t->model.stats));
    TRY(t->be->ops->tensor_zero(t->be->ctx, &t->model.stats));
    *loss = st[0];
cleanup:
    return rc;
}

/* toolbox = 0: the small network; 1: the speed-training options (toolbox_net and
 * toolbox_experiment), stepping with trainer_after_step so that Lookahead acts. */
static int check_training(struct sc *s, int toolbox)
{
    int rc = DR_OK;
    struct net_spec spec = {0};
    struct graph g = {0};
    struct experiment e;
    struct dataset train = {0}, test = {0};
    struct trainer tc = {0}, tg = {0};
    int32_t *perm = NULL;
    char err[512] = "";
    double worst = 0.0, first = 0.0, last = 0.0;
    const double tol = TRAIN_TOL[s->precision];
    const char *what = toolbox ? "train toolbox" : "train steps";
    const int steps = toolbox ? TOOLBOX_STEPS : TRAIN_STEPS;
    printf("training%s: %d steps of batch %d on both engines from the same weights\n",
           toolbox ? " with the speed-training options" : "", steps, TRAIN_BATCH);
    if (toolbox) {
        toolbox_experiment(&e, s->precision);
        TRY(toolbox_net(&spec));
    } else {
        small_experiment(&e, s->precision);
        TRY(small_net(&spec));
    }
    TRY(graph_build(&g, &spec, 3, 32, 32, err, sizeof(err)));
    TRY(learnable_dataset(&train, TRAIN_IMAGES, 11));
    TRY(learnable_dataset(&test, TEST_IMAGES, 12));
    TRY(trainer_create(&tc, &e, &g, &s->cpu, &train, &test, 42));
    TRY(trainer_create(&tg, &e, &g, &s->gpu, &train, &test, 42));
    perm = malloc(sizeof(int32_t) * TRAIN_IMAGES);
    CHECK_ALLOC(perm, "the selfcheck permutation");
    shuffle_epoch(perm, TRAIN_IMAGES, 42, 0);
    for (int step = 0; step < steps; step++) {
        float lr, wd, gs;
        double lc, lg, d;
        train_step_hparams(&e, step, steps, &lr, &wd, &gs, NULL);
        TRY(trainer_step(&tc, 0, perm + step * TRAIN_BATCH, lr, wd, gs));
        TRY(trainer_step(&tg, 0, perm + step * TRAIN_BATCH, lr, wd, gs));
        if (toolbox) {
            TRY(trainer_after_step(&tc));
            TRY(trainer_after_step(&tg));
        }
        TRY(take_loss(&tc, &lc));
        TRY(take_loss(&tg, &lg));
        lc /= TRAIN_BATCH;
        lg /= TRAIN_BATCH;
        d = fabs(lg - lc) / fmax(fabs(lc), 1e-6);
        if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
        if (step == 0) first = lc;
        last = lc;
        printf("    step %2d  loss cpu %.6f  cuda %.6f  rel diff %.2e\n", step + 1, lc, lg, d);
    }
    struct result r = {worst, "loss"};
    char shape[96];
    snprintf(shape, sizeof(shape), "%d steps, loss %.3f -> %.3f", steps, first, last);
    sc_line(s, what, shape, &r, tol);

    double lossc, accc, lossg, accg;
    TRY(trainer_evaluate(&tc, &lossc, &accc));
    TRY(trainer_evaluate(&tg, &lossg, &accg));
    r = (struct result){fabs(lossg - lossc) / fmax(lossc, 1e-6), "loss"};
    snprintf(shape, sizeof(shape), "test loss %.4f/%.4f acc %.2f/%.2f", lossc, lossg, accc, accg);
    sc_line(s, toolbox ? "evaluate toolbox" : "evaluate", shape, &r, tol);
cleanup:
    if (rc != DR_OK) {
        if (err[0] && rc == DR_ERR_CONFIG) fprintf(stderr, "%s\n", err);
        sc_error(s, what, "", rc);
    }
    free(perm);
    trainer_free(&tc);
    trainer_free(&tg);
    dataset_free(&train);
    dataset_free(&test);
    graph_free(&g);
    net_spec_free(&spec);
    return rc;
}

/* ------------------------------------------------------------------ the command */

static int run_precision(struct backend *cpu, int device, int precision, int parts,
                         int *device_error)
{
    struct sc s;
    int rc;
    memset(&s, 0, sizeof(s));
    s.cpu = *cpu;
    s.parts = parts;
    s.precision = precision;
    s.tol = OP_TOL[precision];
    rc = backend_cuda_create(&s.gpu, device, precision);
    if (rc != DR_OK) {
        *device_error = 1;
        return 1;
    }
    printf("== precision %s on %s\n", PRECISION_NAMES[precision],
           s.gpu.ops->device_name(s.gpu.ctx));
    if (parts & (PART_CONV | PART_OPS)) check_ops(&s);
    if (parts & PART_AUGMENT) check_augment(&s);
    if (parts & PART_TRAIN) check_training(&s, 0);
    if (parts & PART_TOOLBOX) check_training(&s, 1);
    printf("== precision %s: %d checks, %d failed\n\n", PRECISION_NAMES[precision], s.checks,
           s.failures);
    backend_destroy(&s.gpu);
    return s.failures;
}

/* The enum sc_part bits of a comma-separated list of PART_NAMES; -1 (said on stderr) when
 * the list is missing, empty or names something else. */
static int parse_parts(const char *list)
{
    int parts = 0;
    const char *p = list;
    while (p && *p) {
        size_t len = strcspn(p, ",");
        int bit = 0;
        for (size_t j = 0; j < sizeof(PART_NAMES) / sizeof(PART_NAMES[0]); j++)
            if (strlen(PART_NAMES[j]) == len && !strncmp(p, PART_NAMES[j], len)) bit = 1 << j;
        if (!bit) break;
        parts |= bit;
        p += len;
        if (*p == ',') p++;
        if (!*p) return parts;
    }
    fprintf(stderr, "dawnrun selfcheck: --only: expected a comma-separated list of conv, ops, "
                    "augment, train, toolbox, got '%s'\n", list ? list : "");
    return -1;
}

int cmd_selfcheck(int argc, char **argv)
{
    int device = 0, threads = 0, first = 0, last = SC_NAMES - 1, failures = 0, device_error = 0;
    int parts = PART_ALL;
    char why[256];
    struct backend cpu = {0};
    for (int i = 1; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--engine")) {
            if (!val || strcmp(val, "cuda")) {
                fprintf(stderr, "dawnrun selfcheck: --engine: only cuda is checked (against "
                                "the CPU engine)\n");
                return EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(argv[i], "--device")) {
            long v = cli_parse_long("--device", val, 0, 1024);
            if (v < 0) return EXIT_USAGE;
            device = (int)v;
            i++;
        } else if (!strcmp(argv[i], "--threads")) {
            long v = cli_parse_long("--threads", val, 0, 1024);
            if (v < 0) return EXIT_USAGE;
            threads = (int)v;
            i++;
        } else if (!strcmp(argv[i], "--precision")) {
            int k = -1;
            for (int j = 0; j < SC_NAMES && val; j++)
                if (!strcmp(val, PRECISION_NAMES[j])) k = j;
            if (val && !strcmp(val, "all")) {
                first = 0;
                last = SC_NAMES - 1;
            } else if (k >= 0) {
                first = last = k;
            } else {
                fprintf(stderr, "dawnrun selfcheck: --precision: expected fp32, fp16, bf16 or "
                                "all, got '%s'\n", val ? val : "");
                return EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(argv[i], "--only")) {
            if ((parts = parse_parts(val)) < 0) return EXIT_USAGE;
            i++;
        } else {
            fprintf(stderr, "usage: dawnrun selfcheck [--engine cuda] [--device N] "
                            "[--precision fp32|fp16|bf16|all] [--threads N] "
                            "[--only conv,ops,augment,train,toolbox]\n");
            return EXIT_USAGE;
        }
    }
    if (backend_cuda_probe(device, why, sizeof(why)) != DR_OK) {
        printf("dawnrun selfcheck: skipped, no usable CUDA device: %s\n", why);
        return 77;
    }
    if (backend_cpu_create(&cpu, threads) != DR_OK) return EXIT_FAILURE_OTHER;
    printf("dawnrun selfcheck: CUDA engine against the CPU engine (%s)\n\n",
           cpu.ops->device_name(cpu.ctx));
    for (int p = first; p <= last && !device_error; p++)
        failures += run_precision(&cpu, device, p, parts, &device_error);
    backend_destroy(&cpu);
    if (device_error) {
        printf("dawnrun selfcheck: FAILED: the CUDA engine could not be created\n");
        return EXIT_DEVICE;
    }
    printf("dawnrun selfcheck: %s (%d failed)\n", failures ? "FAILED" : "all passed", failures);
    return failures ? EXIT_FAILURE_OTHER : EXIT_OK;
}

/* The CPU kernels' instruction-set variants (kernels/cpu/cpu_isa.h) give the same bits:
 * every kernel with variants runs on the same inputs (odd sizes, so that vector bodies
 * and scalar remainders both run; sizes on both sides of the kernels' threading
 * thresholds; NaN, infinities and signed zeros among the elementwise inputs) under each
 * variant this processor has, and every output is compared with the generic variant's,
 * bit for bit. Under each variant, the fused batch-norm passes (kernels/cpu/bn_fused.h)
 * also give the bits of the separate kernels run one after another. DAWNRUN_CPU_ISA is
 * honoured and reported as the chosen variant. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support.h"
#include "base/status.h"
#include "kernels/cpu/cpu_isa.h"

#define C 4
#define N 8
#define HW_SMALL 37     /* 296 values per channel: remainders of 8 and 16 lanes */
#define HW_BIG 1029     /* 32928 values: above the elementwise kernels' threading threshold */
#define MAX_SEGS 160

/* Every output of one variant's run, as named segments of one float array. */
struct record {
    float *v;
    size_t n, cap;
    int segs;
    const char *name[MAX_SEGS];
    size_t at[MAX_SEGS + 1];
};

static void rec_add(struct record *r, const char *name, const float *v, size_t n)
{
    if (r->segs >= MAX_SEGS) {
        CHECK(!"too many segments");
        return;
    }
    if (r->n + n > r->cap) {
        size_t cap = 2 * (r->n + n);
        float *grown = realloc(r->v, cap * sizeof(float));
        CHECK(grown != NULL);
        if (!grown) return;
        r->v = grown;
        r->cap = cap;
    }
    memcpy(r->v + r->n, v, n * sizeof(float));
    r->name[r->segs] = name;
    r->at[r->segs++] = r->n;
    r->n += n;
    r->at[r->segs] = r->n;
}

/* The shared inputs. */
struct inputs {
    float *x, *x2, *dy, *special, *gamma, *beta, *rmean, *rvar, *w, *v, *dw;
    size_t big;
};

static void inputs_make(struct inputs *in)
{
    struct support_rng rng = {0x5eed15a7u};
    in->big = (size_t)C * N * HW_BIG;
    in->x = support_rand_buf(&rng, -3.0f, 3.0f, in->big);
    in->x2 = support_rand_buf(&rng, -3.0f, 3.0f, in->big);
    in->dy = support_rand_buf(&rng, -1.0f, 1.0f, in->big);
    in->special = support_rand_buf(&rng, -40.0f, 40.0f, in->big);
    in->gamma = support_rand_buf(&rng, 0.5f, 1.5f, C);
    in->beta = support_rand_buf(&rng, -0.5f, 0.5f, C);
    in->rmean = support_rand_buf(&rng, -0.2f, 0.2f, C);
    in->rvar = support_rand_buf(&rng, 0.5f, 2.0f, C);
    in->w = support_rand_buf(&rng, -1.0f, 1.0f, in->big);
    in->v = support_rand_buf(&rng, -0.1f, 0.1f, in->big);
    in->dw = support_rand_buf(&rng, -1.0f, 1.0f, in->big);
    const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 0.0f, -0.0f, 1e-40f, -1e-40f,
                              3e38f, -3e38f, 88.7f, -104.0f};
    for (size_t i = 0; i < in->big; i += 97)
        in->special[i] = specials[(i / 97) % (sizeof specials / sizeof specials[0])];
    /* the batch norm's input: one channel with a large mean, a ReLU-exact zero */
    for (size_t i = 0; i < (size_t)N * HW_BIG; i++) in->x[i] += 1000.0f;
    in->x[(size_t)N * HW_BIG + 5] = 0.0f;
}

static void inputs_free(struct inputs *in)
{
    free(in->x);
    free(in->x2);
    free(in->dy);
    free(in->special);
    free(in->gamma);
    free(in->beta);
    free(in->rmean);
    free(in->rvar);
    free(in->w);
    free(in->v);
    free(in->dw);
}

/* Buffers for outputs, filled with a pattern before each kernel (so that accumulating
 * kernels add into known values). */
static float *out_a, *out_b, *out_c, *out_d, *st0, *st1, *st2, *st3, *coef;

static void prefill(float *p, size_t n, float base)
{
    for (size_t i = 0; i < n; i++) p[i] = base + (float)(i % 13) * 0.125f;
}

/* Batch norm at one size and split count, plain and fused, into r. */
static void run_bn(struct record *r, const struct inputs *in, int hw, int splits)
{
    const size_t cnt = (size_t)C * N * hw;
    const int parts = splits > 1 ? splits : 1;
    memcpy(st2, in->rmean, sizeof(float) * C);
    memcpy(st3, in->rvar, sizeof(float) * C);
    batchnorm_forward_train_cpu(out_a, st0, st1, st2, st3, in->x, in->gamma, in->beta, C, N, hw,
                                splits, 1e-5f, 0.1f);
    rec_add(r, "bn_train y", out_a, cnt);
    rec_add(r, "bn_train mean", st0, (size_t)parts * C);
    rec_add(r, "bn_train invstd", st1, (size_t)parts * C);
    rec_add(r, "bn_train running", st2, C);
    rec_add(r, "bn_train running_var", st3, C);
    for (int acc = 0; acc < 2; acc++) {
        prefill(out_b, cnt, -1.0f);
        batchnorm_backward_cpu(out_b, st2, st3, in->dy, in->x, in->gamma, st0, st1, C, N, hw,
                               splits, acc);
        rec_add(r, "bn_backward dx", out_b, cnt);
        rec_add(r, "bn_backward dgamma", st2, C);
        rec_add(r, "bn_backward dbeta", st3, C);
    }
    batchnorm_forward_eval_cpu(out_a, in->x, in->gamma, in->beta, in->rmean, in->rvar, C, N, hw,
                               1e-5f);
    rec_add(r, "bn_eval y", out_a, cnt);
}

/* The fused passes against the separate kernels, under the current variant. */
static void check_fused(const struct inputs *in, int hw, int splits)
{
    const size_t cnt = (size_t)C * N * hw, bytes = cnt * sizeof(float);
    const int parts = splits > 1 ? splits : 1;
    float *ref_y = malloc(bytes), *ref_out = malloc(bytes), *ref_dx = malloc(bytes);
    float ref_stats[4][4 * C], stats[4][4 * C], g0[C], g1[C], h0[C], h1[C];
    CHECK(ref_y && ref_out && ref_dx);
    if (!ref_y || !ref_out || !ref_dx) goto done;
    for (int mode = 0; mode < 3; mode++)      /* relu, relu + res, res + relu */
        for (int keep_y = 0; keep_y < 2; keep_y++) {
            memcpy(ref_stats[2], in->rmean, sizeof(float) * C);
            memcpy(ref_stats[3], in->rvar, sizeof(float) * C);
            batchnorm_forward_train_cpu(ref_y, ref_stats[0], ref_stats[1], ref_stats[2],
                                        ref_stats[3], in->x, in->gamma, in->beta, C, N, hw,
                                        splits, 1e-5f, 0.1f);
            activation_forward_cpu(ref_out, ref_y, ACT_RELU, 0.0f, cnt);
            if (mode == 1) add_forward_cpu(ref_out, ref_out, in->x2, cnt);
            if (mode == 2) add_forward_cpu(ref_out, in->x2, ref_out, cnt);
            memcpy(stats[2], in->rmean, sizeof(float) * C);
            memcpy(stats[3], in->rvar, sizeof(float) * C);
            prefill(out_a, cnt, 7.0f);
            bn_train_fused_cpu(keep_y ? out_a : NULL, out_c, coef, stats[0], stats[1], stats[2],
                               stats[3], in->x, mode ? in->x2 : NULL, in->gamma, in->beta,
                               mode == 2, C, N, hw, splits, 1e-5f, 0.1f);
            CHECK(!memcmp(out_c, ref_out, bytes));
            if (keep_y) CHECK(!memcmp(out_a, ref_y, bytes));
            else CHECK(out_a[0] == 7.0f);   /* not written */
            CHECK(!memcmp(stats[0], ref_stats[0], sizeof(float) * parts * C));
            CHECK(!memcmp(stats[1], ref_stats[1], sizeof(float) * parts * C));
            CHECK(!memcmp(stats[2], ref_stats[2], sizeof(float) * C));
            CHECK(!memcmp(stats[3], ref_stats[3], sizeof(float) * C));
            /* eval */
            batchnorm_forward_eval_cpu(ref_y, in->x, in->gamma, in->beta, in->rmean, in->rvar, C,
                                       N, hw, 1e-5f);
            activation_forward_cpu(ref_out, ref_y, ACT_RELU, 0.0f, cnt);
            if (mode == 1) add_forward_cpu(ref_out, ref_out, in->x2, cnt);
            if (mode == 2) add_forward_cpu(ref_out, in->x2, ref_out, cnt);
            bn_eval_fused_cpu(keep_y ? out_a : NULL, out_c, in->x, mode ? in->x2 : NULL,
                              in->gamma, in->beta, in->rmean, in->rvar, mode == 2, C, N, hw,
                              1e-5f);
            CHECK(!memcmp(out_c, ref_out, bytes));
            if (keep_y) CHECK(!memcmp(out_a, ref_y, bytes));
        }
    /* backward: relu backward then batch-norm backward, against the fused one (coef from
     * the last fused forward, over the same x) */
    batchnorm_forward_train_cpu(ref_y, ref_stats[0], ref_stats[1], ref_stats[2], ref_stats[3],
                                in->x, in->gamma, in->beta, C, N, hw, splits, 1e-5f, 0.1f);
    for (int acc = 0; acc < 2; acc++) {
        activation_backward_cpu(ref_out, in->dy, ref_y, ACT_RELU, 0.0f, cnt, 0);
        prefill(ref_dx, cnt, 2.0f);
        batchnorm_backward_cpu(ref_dx, g0, h0, ref_out, in->x, in->gamma, ref_stats[0],
                               ref_stats[1], C, N, hw, splits, acc);
        prefill(out_b, cnt, 2.0f);
        bn_backward_fused_cpu(out_b, g1, h1, in->dy, coef, in->x, in->gamma, ref_stats[1], C, N,
                              hw, splits, acc);
        CHECK(!memcmp(out_b, ref_dx, bytes));
        CHECK(!memcmp(g0, g1, sizeof g0));
        CHECK(!memcmp(h0, h1, sizeof h0));
    }
done:
    free(ref_y);
    free(ref_out);
    free(ref_dx);
}

/* Every kernel with variants, into r. */
static void run_all(struct record *r, const struct inputs *in)
{
    const size_t big = in->big, small = (size_t)C * N * HW_SMALL;
    run_bn(r, in, HW_SMALL, 1);
    run_bn(r, in, HW_SMALL, 2);
    run_bn(r, in, HW_BIG, 1);
    run_bn(r, in, HW_BIG, 4);
    bn_train_fused_cpu(out_a, out_c, coef, st0, st1, st2, st3, in->x, in->x2, in->gamma,
                       in->beta, 0, C, N, HW_BIG, 2, 1e-5f, 0.1f);
    rec_add(r, "bn_train_fused out", out_c, big);
    rec_add(r, "bn_train_fused coef", coef, (size_t)2 * C * BN_COEF_COUNT);
    bn_backward_fused_cpu(out_b, st2, st3, in->dy, coef, in->x, in->gamma, st1, C, N, HW_BIG, 2,
                          0);
    rec_add(r, "bn_backward_fused dx", out_b, big);
    const size_t sizes[2] = {small, big};
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < ACT_KIND_COUNT; k++) {
            const float alpha = 0.3f;
            activation_forward_cpu(out_a, in->special, (enum act_kind)k, alpha, sizes[s]);
            rec_add(r, act_kind_name((enum act_kind)k), out_a, sizes[s]);
            for (int acc = 0; acc < 2; acc++) {
                prefill(out_b, sizes[s], 0.5f);
                activation_backward_cpu(out_b, in->dy, in->special, (enum act_kind)k, alpha,
                                        sizes[s], acc);
                rec_add(r, "activation backward", out_b, sizes[s]);
            }
        }
    const struct pool_dims pools[3] = {
        {C * N, 32, 32, 2, 2, 2, 2, 16, 16},   /* the 2x2 fast path */
        {C * N, 31, 31, 3, 3, 2, 2, 15, 15},   /* the general path */
        {C * N, 31, 30, 2, 2, 2, 2, 15, 15},   /* 2x2 with an odd last row */
    };
    for (int p = 0; p < 3; p++)
        for (int kind = 0; kind < 2; kind++) {
            const enum pool_kind pk = kind ? POOL_AVG : POOL_MAX;
            pool_forward_cpu(out_a, in->special, pk, &pools[p]);
            rec_add(r, "pool forward", out_a, (size_t)C * N * pools[p].ho * pools[p].wo);
            for (int acc = 0; acc < 2; acc++) {
                prefill(out_b, (size_t)C * N * 32 * 32, 1.0f);
                pool_backward_cpu(out_b, in->dy, in->special, out_a, pk, &pools[p], acc);
                rec_add(r, "pool backward", out_b, (size_t)C * N * pools[p].h * pools[p].w);
            }
        }
    for (int s = 0; s < 2; s++) {
        add_forward_cpu(out_a, in->special, in->x2, sizes[s]);
        rec_add(r, "add", out_a, sizes[s]);
        scale_forward_cpu(out_a, in->special, 0.125f, sizes[s]);
        rec_add(r, "scale", out_a, sizes[s]);
        for (int acc = 0; acc < 2; acc++) {
            prefill(out_b, sizes[s], 3.0f);
            scaled_copy_cpu(out_b, in->special, 0.7f, sizes[s], acc);
            rec_add(r, "scaled_copy", out_b, sizes[s]);
        }
    }
    const float *xs[2] = {in->x2, in->special};
    const int cs[2] = {1, 3};
    concat_forward_cpu(out_a, xs, cs, 2, (size_t)N * HW_BIG);
    rec_add(r, "concat", out_a, big);
    float *dxs[2] = {out_b, out_d};
    const int accs[2] = {0, 1};
    prefill(out_d, big, 1.0f);
    concat_backward_cpu(dxs, in->special, cs, 2, (size_t)N * HW_BIG, accs);
    rec_add(r, "concat backward 0", out_b, (size_t)N * HW_BIG);
    rec_add(r, "concat backward 1", out_d, 3 * (size_t)N * HW_BIG);
    flatten_forward_cpu(out_a, in->special, C, N, HW_BIG);
    rec_add(r, "flatten", out_a, big);
    for (int acc = 0; acc < 2; acc++) {
        prefill(out_b, big, 1.0f);
        flatten_backward_cpu(out_b, in->special, C, N, HW_BIG, acc);
        rec_add(r, "flatten backward", out_b, big);
    }
    for (int nesterov = 0; nesterov < 2; nesterov++) {
        memcpy(out_a, in->w, big * sizeof(float));
        memcpy(out_b, in->v, big * sizeof(float));
        memcpy(out_c, in->dw, big * sizeof(float));
        sgd_update_cpu(out_a, out_b, out_c, 0.01f, 5e-4f, 0.9f, nesterov, big);
        rec_add(r, "sgd w", out_a, big);
        rec_add(r, "sgd v", out_b, big);
        rec_add(r, "sgd dw", out_c, big);
    }
    for (int copy = 0; copy < 2; copy++) {
        memcpy(out_a, in->w, big * sizeof(float));
        memcpy(out_b, in->dw, big * sizeof(float));
        param_lerp_cpu(out_a, out_b, 0.01f, copy, big);
        rec_add(r, "lerp avg", out_a, big);
        rec_add(r, "lerp w", out_b, big);
    }
}

/* Says where segment s of r first differs from g's. */
static void print_first_difference(const struct record *r, const struct record *g, int s,
                                   const char *isa)
{
    for (size_t i = r->at[s]; i < r->at[s + 1]; i++) {
        uint32_t a, b;
        memcpy(&a, &r->v[i], sizeof a);
        memcpy(&b, &g->v[i], sizeof b);
        if (a == b) continue;
        printf("%s: output %d (%s) differs from generic at %zu: %a (0x%08x), generic %a "
               "(0x%08x)\n", isa, s, r->name[s], i - r->at[s], r->v[i], (unsigned)a, g->v[i],
               (unsigned)b);
        return;
    }
}

int main(void)
{
    struct inputs in;
    struct record recs[CPU_ISA_COUNT];
    memset(recs, 0, sizeof recs);
    inputs_make(&in);
    const size_t big = in.big, bytes = big * sizeof(float);
    out_a = malloc(bytes);
    out_b = malloc(bytes);
    out_c = malloc(bytes);
    out_d = malloc(bytes);
    st0 = malloc(sizeof(float) * 4 * C);
    st1 = malloc(sizeof(float) * 4 * C);
    st2 = malloc(sizeof(float) * 4 * C);
    st3 = malloc(sizeof(float) * 4 * C);
    coef = malloc(sizeof(float) * 4 * C * BN_COEF_COUNT);
    CHECK(out_a && out_b && out_c && out_d && st0 && st1 && st2 && st3 && coef && in.x &&
          in.special && in.w);
    if (check_failures) return check_finish("cpu_isa");

    /* the environment's choice, as the first call made it */
    const char *want = getenv("DAWNRUN_CPU_ISA");
    const enum cpu_isa chosen = cpu_isa_active();
    printf("kernels: %s (DAWNRUN_CPU_ISA %s)\n", cpu_isa_name(chosen), want ? want : "unset");
    if (want && !strcmp(want, cpu_isa_name(CPU_ISA_GENERIC))) CHECK(chosen == CPU_ISA_GENERIC);
    CHECK(cpu_isa_supported(CPU_ISA_GENERIC));
    CHECK(cpu_isa_supported(chosen));
    CHECK(cpu_isa_use(CPU_ISA_COUNT) == DR_ERR_USAGE);

    int variants = 0;
    for (int v = 0; v < CPU_ISA_COUNT; v++) {
        if (!cpu_isa_supported((enum cpu_isa)v)) {
            printf("%s: not on this processor, skipped\n", cpu_isa_name((enum cpu_isa)v));
            continue;
        }
        CHECK(cpu_isa_use((enum cpu_isa)v) == DR_OK);
        CHECK(cpu_isa_active() == (enum cpu_isa)v);
        run_all(&recs[v], &in);
        check_fused(&in, HW_SMALL, 1);
        check_fused(&in, HW_SMALL, 2);
        check_fused(&in, HW_BIG, 4);
        variants++;
        if (v == CPU_ISA_GENERIC) continue;
        const struct record *g = &recs[CPU_ISA_GENERIC], *r = &recs[v];
        CHECK(r->segs == g->segs && r->n == g->n);
        if (r->segs != g->segs || r->n != g->n) continue;
        int differ = 0;
        for (int s = 0; s < r->segs; s++)
            if (memcmp(r->v + r->at[s], g->v + g->at[s],
                       (r->at[s + 1] - r->at[s]) * sizeof(float))) {
                print_first_difference(r, g, s, cpu_isa_name((enum cpu_isa)v));
                differ = 1;
            }
        CHECK(!differ);
        if (!differ) printf("%s: %d outputs, %zu values, the same bits as generic\n",
               cpu_isa_name((enum cpu_isa)v), r->segs, r->n);
    }
    CHECK(variants >= 1);
    for (int v = 0; v < CPU_ISA_COUNT; v++) free(recs[v].v);
    free(out_a);
    free(out_b);
    free(out_c);
    free(out_d);
    free(st0);
    free(st1);
    free(st2);
    free(st3);
    free(coef);
    inputs_free(&in);
    return check_finish("cpu_isa");
}

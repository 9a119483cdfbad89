/* The RNG specification (kernels/rng.h), the epoch shuffle, weight initialisation and the
 * dropout mask (kernels/dropout.h) against known answers (Random123 KATs and
 * tests/vectors/augment_vectors.h, made by an independent Python implementation) and
 * against their statistical properties. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/core/init.h"
#include "kernels/dropout.h"
#include "kernels/rng.h"
#include "engine/core/shuffle.h"
#include "vectors/augment_vectors.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static uint32_t float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static void test_known_answers(void)
{
    for (int i = 0; i < COUNT(VEC_PHILOX_KAT); i++) {
        const uint32_t *k = VEC_PHILOX_KAT[i];
        struct rng4 r = rng_philox(k[0], k[1], k[2], k[3], k[4], k[5]);
        for (int w = 0; w < 4; w++) CHECK(r.v[w] == k[6 + w]);
    }
    for (int i = 0; i < COUNT(VEC_DRAW); i++) {
        const struct vec_draw *d = &VEC_DRAW[i];
        struct rng4 r = rng_draw(d->seed, d->stream, d->epoch, d->index, d->sub);
        for (int w = 0; w < 4; w++) CHECK(r.v[w] == d->v[w]);
    }
    for (int i = 0; i < COUNT(VEC_BELOW); i++)
        CHECK(rng_below(VEC_BELOW[i].u, VEC_BELOW[i].n) == VEC_BELOW[i].r);
    for (int i = 0; i < COUNT(VEC_UNIT); i++)
        CHECK(float_bits(rng_unit(VEC_UNIT[i].u)) == VEC_UNIT[i].bits);
    for (int i = 0; i < COUNT(VEC_DROPOUT); i++) {
        const struct vec_dropout *d = &VEC_DROPOUT[i];
        const struct dropout_attr a = {.seed = d->seed, .p = d->p, .layer = (int)d->layer};
        uint64_t keep = 0;
        for (int e = 0; e < 64; e++)
            keep |= (uint64_t)dropout_keep(&a, d->step, (uint64_t)e) << e;
        CHECK(keep == d->keep);
    }
}

static void test_below_and_unit(void)
{
    static const uint32_t ns[] = {1, 2, 9, 33, 50000, 0xffffffffu};
    for (int k = 0; k < COUNT(ns); k++) {
        CHECK(rng_below(0, ns[k]) == 0);
        CHECK(rng_below(0xffffffffu, ns[k]) == ns[k] - 1);
    }
    CHECK(rng_unit(0) == 0.0f);
    CHECK(rng_unit(0xffffffffu) < 1.0f);
    CHECK(rng_unit(0xffffffffu) == 1.0f - 1.0f / 16777216.0f);

    /* Chi-square of rng_below(., 9) over 90000 draws: 8 degrees of freedom; P(chi2 > 40)
     * is about 2e-6, so a correct generator passes and a biased one fails. */
    enum { BINS = 9, DRAWS = 90000 };
    long hist[BINS] = {0};
    int range_ok = 1, unit_ok = 1;
    double unit_sum = 0.0;
    for (int i = 0; i < DRAWS / 4 + 1; i++) {
        struct rng4 r = rng_draw(42, RNG_STREAM_AUGMENT, 5, (uint32_t)i, 0);
        for (int w = 0; w < 4 && 4 * i + w < DRAWS; w++) {
            uint32_t b = rng_below(r.v[w], BINS);
            if (b >= BINS) range_ok = 0; else hist[b]++;
            float f = rng_unit(r.v[w]);
            if (!(f >= 0.0f && f < 1.0f)) unit_ok = 0;
            unit_sum += f;
        }
    }
    CHECK(range_ok);
    CHECK(unit_ok);
    double chi2 = 0.0, expect = (double)DRAWS / BINS;
    for (int b = 0; b < BINS; b++) chi2 += (hist[b] - expect) * (hist[b] - expect) / expect;
    printf("rng_below(., 9) chi-square over %d draws: %.2f (8 dof)\n", DRAWS, chi2);
    CHECK(chi2 < 40.0);
    CHECK_NEAR(unit_sum / DRAWS, 0.5, 0.01);
}

static int is_permutation(const int32_t *p, int n)
{
    unsigned char *seen = calloc((size_t)n, 1);
    int ok = seen != NULL;
    for (int i = 0; ok && i < n; i++) {
        if (p[i] < 0 || p[i] >= n || seen[p[i]]) ok = 0;
        else seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

static void test_shuffle(void)
{
    enum { N = VEC_SHUFFLE_N };
    int32_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    CHECK(a && b);
    if (!a || !b) goto cleanup;
    for (int i = 0; i < COUNT(VEC_SHUFFLE); i++) {
        const struct vec_shuffle *v = &VEC_SHUFFLE[i];
        shuffle_epoch(a, N, v->seed, v->epoch);
        CHECK(is_permutation(a, N));
        CHECK(memcmp(a, v->head, sizeof v->head) == 0);
        shuffle_epoch(b, N, v->seed, v->epoch);
        CHECK(memcmp(a, b, N * sizeof *a) == 0);   /* deterministic */
    }
    for (int i = 0; i < COUNT(VEC_SHUFFLE10); i++) {
        int32_t p[10];
        shuffle_epoch(p, 10, VEC_SHUFFLE10[i].seed, VEC_SHUFFLE10[i].epoch);
        CHECK(memcmp(p, VEC_SHUFFLE10[i].perm, sizeof p) == 0);
    }
    /* different epochs and seeds give different orders; few fixed points */
    shuffle_epoch(a, N, 7, 0);
    shuffle_epoch(b, N, 7, 1);
    int same = 0, fixed = 0;
    for (int i = 0; i < N; i++) {
        same += a[i] == b[i];
        fixed += a[i] == i;
    }
    CHECK(same < 20);
    CHECK(fixed < 20);
    shuffle_epoch(b, N, 8, 0);
    same = 0;
    for (int i = 0; i < N; i++) same += a[i] == b[i];
    CHECK(same < 20);
    /* edge sizes */
    int32_t one = -1;
    shuffle_epoch(&one, 1, 7, 0);
    CHECK(one == 0);
    shuffle_epoch(NULL, 0, 7, 0);
cleanup:
    free(a);
    free(b);
}

static void test_init(void)
{
    for (int i = 0; i < COUNT(VEC_INIT); i++) {
        const struct vec_init *v = &VEC_INIT[i];
        float w[10];
        init_uniform(w, 10, v->seed, v->ordinal, v->bound);
        for (int k = 0; k < 10; k++) CHECK(float_bits(w[k]) == v->bits[k]);
    }
    enum { N = 100003 };
    const float bound = 0.0417f;
    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    CHECK(a && b);
    if (!a || !b) goto cleanup;
    init_uniform(a, N, 99, 3, bound);
    init_uniform(b, N, 99, 3, bound);
    CHECK(memcmp(a, b, N * sizeof *a) == 0);
    int in_range = 1;
    double sum = 0.0, sumsq = 0.0;
    float lo = 1.0f, hi = -1.0f;
    for (int i = 0; i < N; i++) {
        if (!(a[i] >= -bound && a[i] < bound)) in_range = 0;
        sum += a[i];
        sumsq += (double)a[i] * a[i];
        if (a[i] < lo) lo = a[i];
        if (a[i] > hi) hi = a[i];
    }
    CHECK(in_range);
    CHECK_NEAR(sum / N, 0.0, 0.01 * bound);
    CHECK_NEAR(sumsq / N, bound * bound / 3.0, 0.02 * bound * bound);   /* var of U(-b, b) */
    CHECK(lo < -0.99f * bound && hi > 0.99f * bound);
    /* a prefix is the same whatever the count; another ordinal or seed differs */
    init_uniform(b, 7, 99, 3, bound);
    CHECK(memcmp(a, b, 7 * sizeof *a) == 0);
    init_uniform(b, N, 99, 4, bound);
    CHECK(memcmp(a, b, N * sizeof *a) != 0);
    init_uniform(b, N, 100, 3, bound);
    CHECK(memcmp(a, b, N * sizeof *a) != 0);
cleanup:
    free(a);
    free(b);
}

int main(void)
{
    test_known_answers();
    test_below_and_unit();
    test_shuffle();
    test_init();
    return check_finish("test_rng");
}

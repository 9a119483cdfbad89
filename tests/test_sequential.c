/* The sequential method (results/sequential.h) against independent computations: the
 * capital process re-implemented here from its definition, the confidence sequence's
 * ends against a scan of that capital, the decision against the interval, and the edge
 * cases (n = 0, identical differences, differences at the bounds, bad arguments); then
 * the whole procedure by simulation over the kinds of runs real batches produce
 * (Gaussian, skewed and heavy-tailed noise, outlier runs in one experiment, shared
 * seeds, accuracies on the 10,000- and 500-image grids, most differences exactly zero,
 * three comparisons against one baseline, and nulls at the bounds of [-1, 1]): in every
 * null case P(DIFFERENT) <= alpha and in every case with |mean difference| >= 1.5 delta
 * P(EQUIVALENT) <= alpha, each checked against a binomial upper bound of the count, and
 * the former Gaussian rule on the same runs as the negative control. Prints the tables
 * docs/reports.md quotes. `test_sequential --long` runs every case with 20,000 batches
 * instead of 4,000 (ctest sequential_long). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "results/sequential.h"
#include "results/stats.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* This file's own random stream, independent of seq_simulate's: a 64-bit LCG with a
 * permuted 32-bit output (PCG XSH-RR), and normals by Marsaglia's polar method. */
struct own_rng {
    uint64_t state;
    int has_spare;
    double spare;
};

static uint32_t own_u32(struct own_rng *r)
{
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + 1442695040888963407ULL;
    uint32_t shifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (shifted >> rot) | (shifted << ((32 - rot) & 31));
}

/* A uniform in [0, 1). */
static double own_unit(struct own_rng *r)
{
    uint64_t hi = own_u32(r) >> 5, lo = own_u32(r) >> 6;
    return (double)(hi * 67108864ULL + lo) / 9007199254740992.0;
}

static double own_normal(struct own_rng *r)
{
    if (r->has_spare) {
        r->has_spare = 0;
        return r->spare;
    }
    double u, v, q;
    do {
        u = 2.0 * own_unit(r) - 1.0;
        v = 2.0 * own_unit(r) - 1.0;
        q = u * u + v * v;
    } while (q >= 1.0 || q == 0.0);
    double f = sqrt(-2.0 * log(q) / q);
    r->spare = v * f;
    r->has_spare = 1;
    return u * f;
}

static struct own_rng own_seed(uint64_t seed)
{
    struct own_rng r = {seed * 2 + 1, 0, 0.0};
    for (int i = 0; i < 4; i++) (void)own_u32(&r);
    return r;
}

/* ---- the capital process, written again from its definition ----
 * Waudby-Smith & Ramdas (2024), the hedged capital with predictable plug-in bets: values
 * x in [0, 1], hypothesised mean m, bets lambda_t = sqrt(2 log(2/alpha) / (s2_{t-1} t
 * log(1 + t))) with s2_0 = 1/4, s2_t = (1/4 + sum_{i<=t} (x_i - mu_i)^2) / (t + 1) and
 * mu_t = (1/2 + sum_{i<=t} x_i) / (t + 1), truncated at 3/4 of the largest bet the
 * bounds allow: K+ = prod (1 + min(lambda, 0.75/m)(x - m)), K- = prod (1 - min(lambda,
 * 0.75/(1 - m))(x - m)). m is excluded when max(K+, K-) / 2 >= 1 / alpha. Here the
 * bets are computed first, for every t, from arrays of the running means, and the
 * capital is a plain product (n is small enough). */

enum { REF_MAX = 512 };

static void ref_bets(double *lambda, const double *d, int n, double alpha)
{
    static double x[REF_MAX], mu[REF_MAX + 1], s2[REF_MAX + 1];
    double sum = 0.0;
    for (int t = 1; t <= n; t++) {
        x[t - 1] = (d[t - 1] + 1.0) / 2.0;
        sum += x[t - 1];
        mu[t] = (0.5 + sum) / (t + 1.0);
    }
    s2[0] = 0.25;
    double acc = 0.0;
    for (int t = 1; t <= n; t++) {
        acc += (x[t - 1] - mu[t]) * (x[t - 1] - mu[t]);
        s2[t] = (0.25 + acc) / (t + 1.0);
    }
    for (int t = 1; t <= n; t++)
        lambda[t - 1] = sqrt(2.0 * log(2.0 / alpha) / (s2[t - 1] * t * log(1.0 + t)));
}

/* K+ and K- at the mean mu0 of the differences. */
static void ref_capital(double *up, double *down, const double *d, int n, double alpha,
                        double mu0)
{
    double lambda[REF_MAX];
    ref_bets(lambda, d, n, alpha);
    double m = (mu0 + 1.0) / 2.0;
    *up = *down = 1.0;
    for (int t = 0; t < n; t++) {
        double x = (d[t] + 1.0) / 2.0;
        double lu = m > 0 ? fmin(lambda[t], 0.75 / m) : lambda[t];
        double ld = m < 1 ? fmin(lambda[t], 0.75 / (1.0 - m)) : lambda[t];
        *up *= 1.0 + lu * (x - m);
        *down *= 1.0 - ld * (x - m);
    }
}

/* 1 when mu0 is excluded at level alpha. */
static int ref_excluded(const double *d, int n, double alpha, double mu0)
{
    double up, down;
    ref_capital(&up, &down, d, n, alpha, mu0);
    return fmax(up, down) / 2.0 >= 1.0 / alpha;
}

static const double SET_A[] = {0.003, -0.001, 0.007, 0.002, 0.005};
static const double SET_B[] = {0.12, -0.05, 0.21, 0.09, 0.17, -0.02, 0.14, 0.30, 0.06, 0.11};
static const double SET_C[] = {0.4, 0.6};
static const double SET_D[] = {0.31, 0.28, 0.34, 0.30, 0.26, 0.33, 0.32, 0.29, 0.35, 0.27,
                               0.30, 0.31, 0.295, 0.325, 0.285, 0.305, 0.36, 0.25, 0.315,
                               0.29, 0.31, 0.30, 0.28, 0.33, 0.32};
static const double SET_E[] = {-1.0, 1.0, -1.0, -1.0, 1.0, 0.0, 1.0, -0.5, 0.25, 1.0};

struct data_set {
    const double *d;
    int n;
};

static const struct data_set SETS[] = {
    {SET_A, COUNT(SET_A)}, {SET_B, COUNT(SET_B)}, {SET_C, COUNT(SET_C)},
    {SET_D, COUNT(SET_D)}, {SET_E, COUNT(SET_E)},
};

/* seq_log_e is the log of the hedged capital max(K+, K-) / 2 of the definition. */
static void test_log_e_independent(void)
{
    static const double alphas[] = {0.05, 0.01, 0.2};
    static const double mu0s[] = {0.0, 0.1, -0.3, 0.25, 0.9, -0.97};
    for (int k = 0; k < COUNT(SETS); k++)
        for (int a = 0; a < COUNT(alphas); a++)
            for (int j = 0; j < COUNT(mu0s); j++) {
                const struct data_set *s = &SETS[k];
                double up, down;
                ref_capital(&up, &down, s->d, s->n, alphas[a], mu0s[j]);
                double want = log(fmax(up, down) / 2.0);
                double got = seq_log_e(s->d, s->n, mu0s[j], alphas[a]);
                CHECK_NEAR(got, want, 1e-10 * fmax(1.0, fabs(want)));
            }
    CHECK_NEAR(seq_log_e(NULL, 0, 0.0, 0.05), -log(2.0), 1e-15);
    CHECK(isnan(seq_log_e(SET_A, 5, 1.0, 0.05)));
    CHECK(isnan(seq_log_e(SET_A, 5, 0.0, 0.0)));
    static const double outside[] = {0.1, 1.5};
    CHECK(isnan(seq_log_e(outside, 2, 0.0, 0.05)));
}

/* The interval holds every mu0 the capital does not exclude and nothing far outside it:
 * a scan of 4001 points of [-1, 1] with the reference capital; at its ends the capital
 * crosses 1 / alpha; the decision is what the interval says. */
static void test_interval_against_scan(void)
{
    static const double alphas[] = {0.05, 0.01, 0.2};
    for (int k = 0; k < COUNT(SETS); k++)
        for (int a = 0; a < COUNT(alphas); a++) {
            const struct data_set *s = &SETS[k];
            struct seq_look look;
            CHECK(seq_look_at(&look, s->d, s->n, alphas[a], 0.0) == DR_OK);
            CHECK(look.cs_lo < look.cs_hi);
            CHECK(look.cs_lo >= -1.0 && look.cs_hi <= 1.0);
            int bad_in = 0, bad_out = 0;
            for (int g = 0; g <= 4000; g++) {
                double mu0 = -1.0 + g / 2000.0;
                int excl = ref_excluded(s->d, s->n, alphas[a], mu0);
                if (!excl && (mu0 < look.cs_lo || mu0 > look.cs_hi)) bad_in++;
                if (excl && mu0 > look.cs_lo + 1e-9 && mu0 < look.cs_hi - 1e-9) bad_out++;
            }
            CHECK(bad_in == 0);
            CHECK(bad_out == 0);
            /* the ends are excluded values within 1e-9 of included ones */
            if (look.cs_lo > -1.0) {
                CHECK(ref_excluded(s->d, s->n, alphas[a], look.cs_lo - 1e-12));
                CHECK(!ref_excluded(s->d, s->n, alphas[a], look.cs_lo + 1e-9));
            }
            if (look.cs_hi < 1.0) {
                CHECK(ref_excluded(s->d, s->n, alphas[a], look.cs_hi + 1e-12));
                CHECK(!ref_excluded(s->d, s->n, alphas[a], look.cs_hi - 1e-9));
            }
            /* the decision follows the interval */
            int excludes_0 = look.cs_lo > 0.0 || look.cs_hi < 0.0;
            CHECK(excludes_0 == (look.decision == SEQ_DIFFERENT));
            CHECK_NEAR(look.log_e, seq_log_e(s->d, s->n, 0.0, alphas[a]), 0.0);
            double m = 0.0;
            for (int i = 0; i < s->n; i++) m += s->d[i];
            CHECK_NEAR(look.estimate, m / s->n, 1e-15);
        }
}

/* K+ falls and K- rises with mu0, so the excluded set is two end pieces of [-1, 1]. */
static void test_monotone(void)
{
    for (int k = 0; k < COUNT(SETS); k++) {
        const struct data_set *s = &SETS[k];
        double last_up = INFINITY, last_down = 0.0;
        for (int g = -999; g <= 999; g++) {
            double up, down;
            ref_capital(&up, &down, s->d, s->n, 0.05, g / 1000.0);
            CHECK(up <= last_up * (1.0 + 1e-12));
            CHECK(down >= last_down * (1.0 - 1e-12));
            last_up = up;
            last_down = down;
        }
    }
}

/* Equivalence: the interval inside (-delta, delta); on the decision's three points. */
static void test_decisions(void)
{
    /* zero differences: the interval shrinks with n only as the bounds allow */
    static double zero[200];
    struct seq_look look;
    int first_eq = 0;
    for (int n = 1; n <= 200; n++) {
        CHECK(seq_look_at(&look, zero, n, 0.05, 0.1) == DR_OK);
        CHECK(look.cs_lo < 0.0 && look.cs_hi > 0.0 && look.cs_hi - look.cs_lo > 0.04);
        int inside = look.cs_lo > -0.1 && look.cs_hi < 0.1;
        CHECK(inside == (look.decision == SEQ_EQUIVALENT));
        CHECK(seq_decision_at(zero, n, 0.05, 0.1) == look.decision);
        if (inside && !first_eq) first_eq = n;
    }
    printf("zero differences: equivalent within 10 pp from %d seeds on\n", first_eq);
    CHECK(first_eq > 5 && first_eq < 200);
    /* delta 0 never shows equivalence */
    CHECK(seq_look_at(&look, zero, 200, 0.05, 0.0) == DR_OK);
    CHECK(look.decision == SEQ_UNDECIDED);
    /* a clear effect */
    CHECK(seq_look_at(&look, SET_D, COUNT(SET_D), 0.05, 0.1) == DR_OK);
    CHECK(look.decision == SEQ_DIFFERENT && look.cs_lo > 0.0);
    /* the Bonferroni share */
    struct seq_design design = {.alpha = 0.05, .delta = 0.1, .round = 2, .max_seeds = 10,
                                .n_compared = 4};
    CHECK_NEAR(seq_alpha_each(&design), 0.0125, 1e-15);
}

/* Identical differences alone decide nothing: five of +0.01 pp give an interval points
 * wide, undecided; any number of them up to 500 stays undecided (the bounds still allow
 * a rare run far below); no interval ever has zero width. A large identical difference
 * is decided by its size: 0.5 after a dozen seeds. */
static void test_identical(void)
{
    static double same[500];
    struct seq_look look;
    for (int i = 0; i < 500; i++) same[i] = 0.0001;
    CHECK(seq_look_at(&look, same, 5, 0.05, 0.001) == DR_OK);
    CHECK(look.decision == SEQ_UNDECIDED);
    CHECK(look.cs_lo < -0.1 && look.cs_hi > 0.1);
    printf("five differences of +0.01 pp: %+.2f..%+.2f pp, %s\n", 100 * look.cs_lo,
           100 * look.cs_hi, seq_decision_name(look.decision));
    for (int n = 1; n <= 500; n++) {
        CHECK(seq_decision_at(same, n, 0.05, 0.001) == SEQ_UNDECIDED);
        if (n % 50 == 0 || n < 10) {
            CHECK(seq_look_at(&look, same, n, 0.05, 0.001) == DR_OK);
            CHECK(look.cs_hi - look.cs_lo > 0.0);
        }
    }
    static const double values[] = {-1.0, -0.3, 0.0, 0.2, 0.5, 1.0};
    for (int v = 0; v < COUNT(values); v++) {
        for (int i = 0; i < 60; i++) same[i] = values[v];
        for (int n = 1; n <= 60; n++) {
            CHECK(seq_look_at(&look, same, n, 0.05, 0.01) == DR_OK);
            CHECK(look.cs_hi > look.cs_lo);
            CHECK(look.cs_lo <= values[v] && values[v] <= look.cs_hi);
        }
    }
    for (int i = 0; i < 60; i++) same[i] = 0.5;
    int first = 0;
    for (int n = 1; n <= 60 && !first; n++)
        if (seq_decision_at(same, n, 0.05, 0.0) == SEQ_DIFFERENT) first = n;
    printf("identical differences of +50 pp: different from %d seeds on\n", first);
    CHECK(first > 5 && first < 20);
}

static void test_edges_and_errors(void)
{
    struct seq_look look;
    CHECK(seq_look_at(&look, NULL, 0, 0.05, 0.1) == DR_OK);
    CHECK(look.n == 0 && isnan(look.estimate) && look.cs_lo == -1.0 && look.cs_hi == 1.0);
    CHECK(look.decision == SEQ_UNDECIDED);
    CHECK(seq_look_at(&look, SET_A, 5, 0.0, 0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, SET_A, 5, 1.0, 0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, SET_A, 5, NAN, 0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, SET_A, 5, 0.05, -0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, SET_A, 5, 0.05, 1.0) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, SET_A, -1, 0.05, 0.1) == DR_ERR_USAGE);
    double holed[] = {0.1, NAN, 0.2};
    CHECK(seq_look_at(&look, holed, 3, 0.05, 0.1) == DR_ERR_USAGE);
    holed[1] = INFINITY;
    CHECK(seq_look_at(&look, holed, 3, 0.05, 0.1) == DR_ERR_USAGE);
    holed[1] = 1.0000001;
    CHECK(seq_look_at(&look, holed, 3, 0.05, 0.1) == DR_ERR_USAGE);
    CHECK(seq_decision_at(holed, 3, 0.05, 0.1) == SEQ_UNDECIDED);
    CHECK(seq_look_at(&look, holed, 1, 0.05, 0.1) == DR_OK);
    static const double bounds[] = {-1.0, 1.0, 1.0, -1.0};
    CHECK(seq_look_at(&look, bounds, 4, 0.05, 0.1) == DR_OK);
    CHECK(strcmp(seq_decision_name(SEQ_DIFFERENT), "different") == 0);
    CHECK(strcmp(seq_decision_name(SEQ_EQUIVALENT), "equivalent") == 0);
    CHECK(strcmp(seq_decision_name(SEQ_UNDECIDED), "undecided") == 0);
}

/* ---- the former rule, the negative control ----
 * The anytime-valid t confidence sequence dawnrun used before (Gaussian mixture c^2 = 1
 * with a right-Haar scale, Wang & Ramdas 2023): mean -+ h, h^2 = (R - 1) Q / (n (1 - R
 * k)), k = 1 / (n + 1), R = (alpha^-1 sqrt(n + 1))^(2/n), unbounded while R k >= 1.
 * Valid for Gaussian differences only. */
static enum seq_decision former_decision(const double *d, int n, double alpha, double delta)
{
    if (n < 2) return SEQ_UNDECIDED;
    double m = 0.0, q = 0.0;
    for (int i = 0; i < n; i++) m += d[i];
    m /= n;
    for (int i = 0; i < n; i++) q += (d[i] - m) * (d[i] - m);
    double k = 1.0 / (n + 1.0);
    double log_r = (2.0 / n) * (-log(alpha) + 0.5 * log(n + 1.0));
    double log_rk = log_r + log(k);
    if (log_rk >= 0.0) return SEQ_UNDECIDED;
    double h = sqrt(expm1(log_r) * q / (n * -expm1(log_rk)));
    if (m - h > 0.0 || m + h < 0.0) return SEQ_DIFFERENT;
    if (delta > 0.0 && -delta < m - h && m + h < delta) return SEQ_EQUIVALENT;
    return SEQ_UNDECIDED;
}

/* ---- the kinds of runs ----
 * Each model draws the final accuracies of one seed: the baseline's a[0] and members'
 * a[1..members]. ACC is a recipe near its ceiling, SD the seed-to-seed spread of one
 * experiment (0.15 pp, as measured for the 94 % recipes). */

#define ACC 0.94
#define SD 0.0015
#define DELTA 0.001      /* the default margin, 0.1 pp */

enum model {
    M_GAUSS, M_SKEW, M_HEAVY, M_OUTLIER, M_SHARED_OUTLIER, M_GRID_10000, M_GRID_500,
    M_MOSTLY_ZERO, M_HEAVY_SHIFT, M_BOUNDS, M_TWO_POINT, M_ZERO_BIG, M_GAUSS_BIG, M_SAME,
    M_GAUSS_MID,
};

struct model_case {
    const char *name;
    enum model model;
    double shift;        /* the true mean difference of each member, accuracy */
    double delta;        /* the margin */
    int members;         /* comparisons against the baseline */
    int round, max_seeds;
};

static double clamp01(double v)
{
    return fmin(1.0, fmax(0.0, v));
}

/* Student t with 3 degrees of freedom, scaled to unit variance. */
static double t3_unit(struct own_rng *r)
{
    double z = own_normal(r), c = 0.0;
    for (int i = 0; i < 3; i++) {
        double g = own_normal(r);
        c += g * g;
    }
    return z / sqrt(c / 3.0) / sqrt(3.0);
}

/* An outlier-prone run: 5 % of runs partly diverge and end 3 pp low; the others sit
 * 0.05 * 3 / 0.95 pp high, so that the mean is that of a plain run. */
static double outlier_run(struct own_rng *r, double noise)
{
    const double p = 0.05, drop = 0.03;
    if (own_unit(r) < p) return ACC - drop + noise;
    return ACC + p * drop / (1.0 - p) + noise;
}

/* One seed of case c: a[0] the baseline, a[1..members] the members. Grid models round
 * to the test set's 1/N. */
static void draw_seed(double *a, const struct model_case *c, struct own_rng *r)
{
    switch (c->model) {
    case M_GAUSS:
    case M_GRID_10000:
    case M_GRID_500:
        for (int j = 0; j <= c->members; j++)
            a[j] = ACC + (j ? c->shift : 0.0) + SD * own_normal(r);
        if (c->model != M_GAUSS) {
            double grid = c->model == M_GRID_500 ? 500.0 : 10000.0;
            for (int j = 0; j <= c->members; j++) a[j] = round(a[j] * grid) / grid;
        }
        break;
    case M_SKEW:   /* a ceiling: long tail below, exponential, the mean kept */
        for (int j = 0; j <= c->members; j++)
            a[j] = ACC + (j ? c->shift : 0.0) - SD * (-log(1.0 - own_unit(r)) - 1.0);
        break;
    case M_HEAVY:
    case M_HEAVY_SHIFT:
        for (int j = 0; j <= c->members; j++)
            a[j] = ACC + (j ? c->shift : 0.0) + SD * t3_unit(r);
        break;
    case M_OUTLIER:
        a[0] = ACC + SD * own_normal(r);
        for (int j = 1; j <= c->members; j++) a[j] = outlier_run(r, SD * own_normal(r));
        break;
    case M_SHARED_OUTLIER: {   /* a shared seed: the runs of one seed correlate (0.9) */
        double z0 = own_normal(r), rho = 0.9, rest = sqrt(1.0 - rho * rho);
        a[0] = ACC + SD * (rho * z0 + rest * own_normal(r));
        for (int j = 1; j <= c->members; j++)
            a[j] = outlier_run(r, SD * (rho * z0 + rest * own_normal(r)));
        break;
    }
    case M_MOSTLY_ZERO:   /* a deterministic engine: 80 % of the seeds come out the same */
    case M_ZERO_BIG: {    /* the same at the tiny networks' 40 % and spread, 70 % */
        int big = c->model == M_ZERO_BIG;
        double base = big ? 0.4 : ACC, sd = big ? 0.04 : SD, moved = big ? 0.3 : 0.2;
        a[0] = base + sd * own_normal(r);
        for (int j = 1; j <= c->members; j++)
            a[j] = own_unit(r) < moved ? base + c->shift / moved + sd * own_normal(r) : a[0];
        break;
    }
    case M_SAME:   /* the same recipe on a deterministic engine: identical runs */
        a[0] = ACC + SD * own_normal(r);
        for (int j = 1; j <= c->members; j++) a[j] = a[0];
        break;
    case M_BOUNDS:   /* runs that either work or fail outright: accuracies 0 or 1 */
        for (int j = 0; j <= c->members; j++) a[j] = own_unit(r) < 0.5 ? 0.0 : 1.0;
        break;
    case M_TWO_POINT:   /* differences -0.8 (20 %) or +0.2: mean 0, skewed */
        a[0] = 0.8;
        for (int j = 1; j <= c->members; j++) a[j] = own_unit(r) < 0.2 ? 0.0 : 1.0;
        break;
    case M_GAUSS_MID:   /* the 94 % recipes' spread, away from the ceiling */
        for (int j = 0; j <= c->members; j++)
            a[j] = 0.5 + (j ? c->shift : 0.0) + SD * own_normal(r);
        break;
    case M_GAUSS_BIG:   /* the tiny networks: 4 pp of spread */
        for (int j = 0; j <= c->members; j++)
            a[j] = 0.2 + (j ? c->shift : 0.0) + 0.04 * own_normal(r);
        break;
    }
    for (int j = 0; j <= c->members; j++) a[j] = clamp01(a[j]);
}

enum { MAX_MEMBERS = 3, MAX_N = 400 };

/* What one rule did over the batches of a case. */
struct case_rates {
    long sims, different, equivalent, wrong;   /* wrong: batches with an error */
    double seeds;                              /* mean seeds per experiment at the stop */
};

/* Runs `sims` batches of case c with both rules on the same runs: rounds of c->round
 * seeds to every experiment, a look at each undecided comparison at alpha / members
 * after each round, a stop when every comparison is decided or at c->max_seeds.
 * different / equivalent count batches in which some comparison ended so; wrong counts
 * those with an error: DIFFERENT where the member's true difference is 0, EQUIVALENT
 * where it is at least 1.5 delta. */
static void run_case(struct case_rates *now, struct case_rates *former,
                     const struct model_case *c, double alpha, long sims, uint64_t seed)
{
    static double d[MAX_MEMBERS][MAX_N];
    struct own_rng r = own_seed(seed);
    double alpha_each = alpha / c->members;
    memset(now, 0, sizeof *now);
    memset(former, 0, sizeof *former);
    int null_case = c->shift == 0.0;
    int margin_case = fabs(c->shift) >= 1.5 * c->delta && c->delta > 0.0;
    for (long s = 0; s < sims; s++) {
        double a[MAX_MEMBERS + 1];
        for (int i = 0; i < c->max_seeds; i++) {
            draw_seed(a, c, &r);
            for (int j = 1; j <= c->members; j++) d[j - 1][i] = a[j] - a[0];
        }
        for (int rule = 0; rule < 2; rule++) {
            enum seq_decision got[MAX_MEMBERS] = {SEQ_UNDECIDED};
            int n = 0, open = c->members;
            while (open > 0 && n < c->max_seeds) {
                n = n + c->round < c->max_seeds ? n + c->round : c->max_seeds;
                for (int j = 0; j < c->members; j++) {
                    if (got[j] != SEQ_UNDECIDED) continue;
                    got[j] = rule == 0 ? seq_decision_at(d[j], n, alpha_each, c->delta)
                                       : former_decision(d[j], n, alpha_each, c->delta);
                    open -= got[j] != SEQ_UNDECIDED;
                }
            }
            struct case_rates *out = rule == 0 ? now : former;
            int diff = 0, eq = 0;
            for (int j = 0; j < c->members; j++) {
                diff |= got[j] == SEQ_DIFFERENT;
                eq |= got[j] == SEQ_EQUIVALENT;
            }
            out->different += diff;
            out->equivalent += eq;
            out->wrong += (null_case && diff) || (margin_case && eq);
            out->seeds += n;
        }
    }
    now->sims = former->sims = sims;
    now->seeds /= sims;
    former->seeds /= sims;
}

/* The largest count of errors consistent with a true rate of alpha: the smallest k with
 * P(Binomial(sims, alpha) > k) <= 0.001. A count above it says, at that level, that the
 * rule's error exceeds alpha. */
static long binomial_upper(long sims, double alpha)
{
    double log_p = sims * log1p(-alpha), cdf = 0.0;   /* P(X = 0) */
    for (long k = 0; k <= sims; k++) {
        cdf += exp(log_p);
        if (1.0 - cdf <= 0.001) return k;
        log_p += log((double)(sims - k) / (k + 1.0)) + log(alpha) - log1p(-alpha);
    }
    return sims;
}

static const struct model_case CASES[] = {
    /* nulls: equal means */
    {"Gaussian noise", M_GAUSS, 0.0, DELTA, 1, 5, 50},
    {"skewed noise (a ceiling)", M_SKEW, 0.0, DELTA, 1, 5, 50},
    {"heavy tails (t, 3 df)", M_HEAVY, 0.0, DELTA, 1, 5, 50},
    {"5 % outlier runs in B, equal means", M_OUTLIER, 0.0, DELTA, 1, 5, 50},
    {"the same, seeds shared (r 0.9)", M_SHARED_OUTLIER, 0.0, DELTA, 1, 5, 50},
    {"grid of 10,000 images", M_GRID_10000, 0.0, DELTA, 1, 5, 50},
    {"grid of 500 images", M_GRID_500, 0.0, DELTA, 1, 5, 50},
    {"three comparisons, outliers", M_OUTLIER, 0.0, DELTA, 3, 5, 50},
    {"runs at 0 or 1", M_BOUNDS, 0.0, 0.05, 1, 5, 200},
    {"differences -0.8 (20 %) or +0.2", M_TWO_POINT, 0.0, 0.05, 1, 5, 200},
    /* |difference| = 1.5 delta */
    {"Gaussian, 1.5 delta", M_GAUSS, 1.5 * DELTA, DELTA, 1, 5, 50},
    {"heavy tails, -1.5 delta", M_HEAVY_SHIFT, -1.5 * DELTA, DELTA, 1, 5, 50},
    {"80 % differences 0, 1.5 delta", M_MOSTLY_ZERO, 1.5 * DELTA, DELTA, 1, 5, 50},
    {"80 % differences 0, -1.5 delta", M_MOSTLY_ZERO, -1.5 * DELTA, DELTA, 1, 5, 50},
    {"70 % zero, 1.5 delta of 10 pp", M_ZERO_BIG, 0.15, 0.1, 1, 5, 400},
    {"tiny nets (sd 4 pp), 1.5 delta", M_GAUSS_BIG, 0.15, 0.1, 1, 5, 400},
};

/* Every case within alpha for the betting rule; the former rule broke several of them. */
static void test_cases(long sims)
{
    const double alpha = 0.05;
    long bound = binomial_upper(sims, alpha);
    printf("\nError rates, alpha %.2f, %ld batches per case (an error: DIFFERENT at a "
           "true difference of 0,\nEQUIVALENT at |difference| >= 1.5 delta; bound: the "
           "largest share consistent with alpha,\nP(Binomial > count) <= 0.001):\n", alpha,
           sims);
    printf("%-36s %8s %7s %5s | %9s %9s %6s | %9s %9s\n", "case", "Δ", "delta", "max",
           "different", "equivalnt", "seeds", "former d.", "former e.");
    int former_broke = 0;
    uint64_t seed = 100;
    for (int k = 0; k < COUNT(CASES); k++) {
        const struct model_case *c = &CASES[k];
        struct case_rates now, former;
        run_case(&now, &former, c, alpha, sims, seed++);
        CHECK(now.wrong <= bound);
        former_broke += former.wrong > bound;
        printf("%-36s %+6.2fpp %5.2fpp %5d | %9.4f %9.4f %6.1f | %9.4f %9.4f\n", c->name,
               100 * c->shift, 100 * c->delta, c->max_seeds, (double)now.different / sims,
               (double)now.equivalent / sims, now.seeds, (double)former.different / sims,
               (double)former.equivalent / sims);
        if (now.wrong > bound) printf("  ^ over the bound: %ld > %ld\n", now.wrong, bound);
    }
    printf("bound: %.4f; the former Gaussian rule exceeded it in %d case%s\n",
           (double)bound / sims, former_broke, former_broke == 1 ? "" : "s");
    /* the cases bite: the rule dawnrun replaced fails several of them */
    CHECK(former_broke >= 3);
}

/* The checks above could pass by never deciding: where the bounds allow a decision, the
 * rule makes it. Power and mean seeds at rounds of 5 up to 50 (and 200) seeds for a
 * difference of 0.2 pp at the 94 % recipes' spread (sd of one run 0.15 pp) and for the
 * differences the bounds let 50 seeds find; then equivalence of identical recipes. */
static void test_power(long sims)
{
    static const struct {
        double shift;
        int max_seeds;
    } rows[] = {
        {0.002, 50}, {0.002, 200}, {0.02, 50}, {0.06, 50}, {0.1, 50}, {0.12, 50},
        {0.15, 50}, {0.2, 50}, {0.3, 50},
    };
    printf("\nPower (share DIFFERENT) and mean seeds per experiment, alpha 0.05, rounds of "
           "5, one comparison,\nruns N(50 %% + Δ, 0.15 pp) against N(50 %%, 0.15 pp) (at 94 %% "
           "alike, up to Δ = 6 pp); "
           "former: the Gaussian rule on the same runs:\n");
    printf("%8s %5s | %7s %6s | %7s %6s\n", "Δ", "max", "power", "seeds", "former", "seeds");
    double last = -1.0;
    for (int k = 0; k < COUNT(rows); k++) {
        struct model_case c = {"power", M_GAUSS_MID, rows[k].shift, DELTA, 1, 5,
                               rows[k].max_seeds};
        struct case_rates now, former;
        run_case(&now, &former, &c, 0.05, sims / 4, 500 + (uint64_t)k);
        double p = (double)now.different / now.sims;
        printf("%+6.2fpp %5d | %7.4f %6.1f | %7.4f %6.1f\n", 100 * rows[k].shift,
               rows[k].max_seeds, p, now.seeds, (double)former.different / former.sims,
               former.seeds);
        if (rows[k].max_seeds == 50) {
            CHECK(p >= last);
            last = p;
        }
    }
    CHECK(last >= 0.95);
    /* identical recipes on a deterministic engine: every difference 0, margin 10 pp */
    struct model_case same = {"same", M_SAME, 0.0, 0.1, 1, 5, 100};
    struct case_rates now, former;
    run_case(&now, &former, &same, 0.05, sims / 4, 600);
    printf("identical recipes (every difference 0), delta 10 pp: equivalent %.4f after "
           "%.1f seeds\n", (double)now.equivalent / now.sims, now.seeds);
    CHECK((double)now.equivalent / now.sims > 0.99);
}

/* seq_simulate (its own random numbers) agrees with this file's loop over
 * seq_decision_at within the simulation error, and follows its contract. */
static void test_simulate(void)
{
    struct seq_design d = {.alpha = 0.05, .delta = 0.1, .round = 5, .max_seeds = 50,
                           .n_compared = 1};
    static const double mus[] = {0.0, 0.12, 0.2};
    for (int k = 0; k < COUNT(mus); k++) {
        struct seq_operating o;
        CHECK(seq_simulate(&o, &d, mus[k], 0.05, 2000, 7) == DR_OK);
        struct model_case c = {"sim", M_GAUSS_BIG, mus[k], 0.1, 1, 5, 50};
        struct case_rates now, former;
        /* the model's differences: sd 0.04 sqrt 2 = 0.0566 */
        run_case(&now, &former, &c, 0.05, 2000, 700 + (uint64_t)k);
        (void)former;
        struct seq_operating o2;
        CHECK(seq_simulate(&o2, &d, mus[k], 0.04 * sqrt(2.0), 2000, 7) == DR_OK);
        double p1 = o2.p_different, p2 = (double)now.different / now.sims;
        double se = sqrt(2.0 * fmax(0.5 * (p1 + p2) * (1 - 0.5 * (p1 + p2)), 1e-6) / 2000);
        CHECK(fabs(p1 - p2) <= 4.0 * se + 1e-12);
        CHECK_NEAR(o.p_different + o.p_equivalent + o.p_undecided, 1.0, 1e-12);
        printf("seq_simulate / this loop, Δ %.2f, sd 0.0566: different %.4f / %.4f, seeds "
               "%.1f / %.1f\n", mus[k], p1, p2, o2.mean_seeds, now.seeds);
    }
    struct seq_operating a, b, c;
    CHECK(seq_simulate(&a, &d, 0.15, 0.05, 300, 5) == DR_OK);
    CHECK(seq_simulate(&b, &d, 0.15, 0.05, 300, 5) == DR_OK);
    CHECK(seq_simulate(&c, &d, 0.15, 0.05, 300, 6) == DR_OK);
    CHECK(a.sims == 300 && a.p_different == b.p_different && a.mean_seeds == b.mean_seeds);
    CHECK(a.mean_seeds != c.mean_seeds);
    struct seq_design tiny = {.alpha = 0.05, .delta = 0.0, .round = 3, .max_seeds = 4,
                              .n_compared = 1};
    CHECK(seq_simulate(&a, &tiny, 0.0, 0.01, 50, 9) == DR_OK);
    CHECK(a.p_undecided == 1.0 && a.mean_seeds == 4.0);
    struct seq_design bad = d;
    bad.alpha = 0.0;
    CHECK(seq_simulate(&a, &bad, 0.0, 1.0, 10, 1) == DR_ERR_USAGE);
    bad = d;
    bad.max_seeds = 3;
    CHECK(seq_simulate(&a, &bad, 0.0, 1.0, 10, 1) == DR_ERR_USAGE);
    bad = d;
    bad.n_compared = 0;
    CHECK(seq_simulate(&a, &bad, 0.0, 1.0, 10, 1) == DR_ERR_USAGE);
    bad = d;
    bad.delta = 1.0;
    CHECK(seq_simulate(&a, &bad, 0.0, 1.0, 10, 1) == DR_ERR_USAGE);
    CHECK(seq_simulate(&a, &d, 0.0, 0.0, 10, 1) == DR_ERR_USAGE);
    CHECK(seq_simulate(&a, &d, 1.5, 0.1, 10, 1) == DR_ERR_USAGE);
    CHECK(seq_simulate(&a, &d, NAN, 0.1, 10, 1) == DR_ERR_USAGE);
    CHECK(seq_simulate(&a, &d, 0.0, 0.1, 0, 1) == DR_ERR_USAGE);
    CHECK(seq_design_check(&d) == DR_OK);
}

int main(int argc, char **argv)
{
    long sims = argc > 1 && !strcmp(argv[1], "--long") ? 20000 : 4000;
    test_log_e_independent();
    test_interval_against_scan();
    test_monotone();
    test_decisions();
    test_identical();
    test_edges_and_errors();
    test_simulate();
    test_cases(sims);
    test_power(sims);
    return check_finish("sequential");
}

/* The power and sample-size functions (results/stats.h, stats_power.c) against known
 * values: R's power.t.test (n = 16.71 for delta = sd, alpha 0.05, power 0.8; 63.77 for
 * half that delta) and figures computed independently with scipy 1.17 (scipy.stats.nct
 * for the noncentral t, brentq for the roots), plus the properties the report relies on:
 * the seeds found are the smallest with enough power, the detectable difference has the
 * power asked for, and the rank test needs pi / 3 times the seeds asymptotically. Then the
 * exact Mann-Whitney test the report prints: its smallest attainable p-value, its critical
 * values against an enumeration of its null distribution, and its simulated power, seeds
 * and detectable shift against this file's own simulation over stats_mann_whitney. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "results/stats.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define PI 3.14159265358979323846

/* scipy.stats.nct.cdf(t, df, ncp) */
static void test_nct_cdf(void)
{
    static const double cases[][4] = {
        /* t, df, ncp, cdf */
        {2.0, 10, 1.5, 0.6591540724421909},
        {1.0, 3, 2.0, 0.1573494339700365},
        {4.3, 2, 6.0, 0.16393126245075726},
        {0.5, 30, 0.0, 0.6896384975574363},
        {2.1, 8, -1.0, 0.996787051260097},
        {-1.0, 5, 1.0, 0.030807353260750292},
        {10.0, 50, 12.0, 0.07425801878825139},
    };
    for (int i = 0; i < COUNT(cases); i++)
        CHECK_NEAR(stats_nct_cdf(cases[i][0], cases[i][1], cases[i][2]), cases[i][3], 1e-10);
    /* ncp = 0 is Student's t */
    CHECK_NEAR(stats_nct_cdf(1.7, 7, 0.0), stats_t_cdf(1.7, 7), 1e-13);
    CHECK(isnan(stats_nct_cdf(1.0, 0, 1.0)) && isnan(stats_nct_cdf(NAN, 3, 1.0)));
    CHECK(stats_nct_cdf(INFINITY, 3, 1.0) == 1.0 && stats_nct_cdf(-INFINITY, 3, 1.0) == 0.0);
}

/* seeds per side: power.t.test(delta, sd, sig.level, power)$n */
static void test_seeds_needed(void)
{
    static const double cases[][6] = {
        /* delta, sd, alpha, power, n, whole seeds */
        {1.0, 1.0, 0.05, 0.80, 16.714759831161913, 17},
        {0.5, 1.0, 0.05, 0.80, 63.7657637248507, 64},
        {1.0, 1.0, 0.05, 0.90, 22.021095570097025, 23},
        {1.0, 1.0, 0.01, 0.80, 25.06670812641103, 26},
        {2.0, 1.0, 0.05, 0.80, 5.090000758688683, 6},
        {0.1, 1.0, 0.05, 0.80, 1570.736888008283, 1571},
        {1.0, 2.0, 0.05, 0.95, 104.9279503154276, 105},
    };
    for (int i = 0; i < COUNT(cases); i++) {
        const double *c = cases[i];
        double n = stats_power_t_n(c[0], c[1], c[2], c[3]);
        CHECK_NEAR(n, c[4], 1e-6 * c[4]);
        long seeds = stats_power_seeds(n);
        CHECK(seeds == (long)c[5]);
        /* the smallest whole number with the power asked for */
        CHECK(stats_power_t(c[0], c[1], seeds, seeds, c[2]) >= c[3]);
        CHECK(stats_power_t(c[0], c[1], seeds - 1, seeds - 1, c[2]) < c[3]);
        /* only delta / sd matters */
        CHECK_NEAR(stats_power_t_n(c[0] * 1e-3, c[1] * 1e-3, c[2], c[3]), n, 1e-6 * n);
    }
    /* a difference so large that two seeds are enough, one too small for 1e9 seeds */
    CHECK(stats_power_t_n(50.0, 1.0, 0.05, 0.8) == 2.0 && stats_power_seeds(2.0) == 2);
    CHECK(isinf(stats_power_t_n(1e-6, 1.0, 0.05, 0.8)));
    CHECK(stats_power_seeds(INFINITY) == -1 && stats_power_seeds(NAN) == -1);
    CHECK(isnan(stats_power_t_n(0.0, 1.0, 0.05, 0.8)));     /* no difference to detect */
    CHECK(isnan(stats_power_t_n(1.0, 0.0, 0.05, 0.8)));
    CHECK(isnan(stats_power_t_n(1.0, 1.0, 0.05, 0.02)));    /* power below alpha / 2 */
    CHECK(isnan(stats_power_t_n(1.0, 1.0, 1.5, 0.8)));
    /* at delta 0 the power is the one tail's alpha / 2 */
    CHECK_NEAR(stats_power_t(0.0, 1.0, 5, 5, 0.05), 0.025, 1e-12);
}

/* minimum detectable difference: brentq over delta of the scipy power */
static void test_mde(void)
{
    static const double cases[][6] = {
        /* sd, na, nb, alpha, power, delta */
        {1.0, 5, 5, 0.05, 0.80, 2.0244409773588217},
        {1.0, 3, 7, 0.05, 0.80, 2.2088461949326623},
        {0.0012, 5, 5, 0.05, 0.80, 0.0024293291728324107},
        {1.0, 2, 2, 0.05, 0.80, 5.653489266405571},
        {1.0, 20, 20, 0.01, 0.90, 1.2762434902609108},
    };
    for (int i = 0; i < COUNT(cases); i++) {
        const double *c = cases[i];
        double d = stats_power_t_mde(c[0], c[1], c[2], c[3], c[4]);
        CHECK_NEAR(d, c[5], 1e-9 * c[5]);
        CHECK_NEAR(stats_power_t(d, c[0], c[1], c[2], c[3]), c[4], 1e-9);
    }
    /* the two directions agree: 17 seeds detect a little less than 1 sd */
    double d17 = stats_power_t_mde(1.0, 17, 17, 0.05, 0.8);
    double d16 = stats_power_t_mde(1.0, 16, 16, 0.05, 0.8);
    CHECK(d17 < 1.0 && d16 > 1.0);
    CHECK(isnan(stats_power_t_mde(1.0, 1, 1, 0.05, 0.8)));   /* no degree of freedom */
    CHECK(isnan(stats_power_t_mde(0.0, 5, 5, 0.05, 0.8)));
    CHECK(isnan(stats_power_t_mde(1.0, 5, 5, 0.05, 1.0)));
}

/* the rank test at the asymptotic relative efficiency 3 / pi */
static void test_rank(void)
{
    CHECK_NEAR(STATS_RANK_ARE, 0.954929658551372, 1e-15);
    double nt = stats_power_t_n(1.0, 1.0, 0.05, 0.8);
    CHECK_NEAR(stats_power_rank_n(1.0, 1.0, 0.05, 0.8), nt * PI / 3.0, 1e-9);
    CHECK(stats_power_seeds(stats_power_rank_n(1.0, 1.0, 0.05, 0.8)) == 18);   /* 17.50 */
    CHECK_NEAR(stats_power_rank_mde(1.0, 5, 5, 0.05, 0.8),
               stats_power_t_mde(1.0, 5 * 3.0 / PI, 5 * 3.0 / PI, 0.05, 0.8), 1e-12);
    CHECK(stats_power_rank_mde(1.0, 5, 5, 0.05, 0.8) > stats_power_t_mde(1.0, 5, 5, 0.05, 0.8));
    CHECK_NEAR(stats_pooled_sd(3.0, 4.0), sqrt(12.5), 1e-15);
    CHECK(isnan(stats_pooled_sd(NAN, 1.0)));
}

/* ---- the exact Mann-Whitney test: attainability, critical values, power ---- */

/* The null distribution of U by enumeration: every choice of which na of the na + nb
 * ranks belong to the first sample is equally likely; U = sum of its ranks (1-based) -
 * na (na + 1) / 2. counts[u] for u = 0 .. na nb. */
static void enumerate_u(double *counts, int na, int nb)
{
    int n = na + nb;
    for (int u = 0; u <= na * nb; u++) counts[u] = 0.0;
    for (unsigned mask = 0; mask < (1u << n); mask++) {
        if (__builtin_popcount(mask) != na) continue;
        int rank_sum = 0;
        for (int i = 0; i < n; i++)
            if (mask & (1u << i)) rank_sum += i + 1;
        counts[rank_sum - na * (na + 1) / 2] += 1.0;
    }
}

static void test_mwu_attainable(void)
{
    CHECK_NEAR(stats_mwu_min_p(2, 2), 1.0 / 3, 1e-15);
    CHECK_NEAR(stats_mwu_min_p(3, 3), 0.1, 1e-15);
    CHECK_NEAR(stats_mwu_min_p(3, 4), 2.0 / 35, 1e-15);
    CHECK_NEAR(stats_mwu_min_p(4, 4), 2.0 / 70, 1e-15);
    CHECK_NEAR(stats_mwu_min_p(2, 8), 2.0 / 45, 1e-15);   /* unequal sides can */
    CHECK(stats_mwu_min_p(1, 1) == 1.0 && isnan(stats_mwu_min_p(0, 3)));
    CHECK(stats_mwu_min_n(0.05) == 4 && stats_mwu_min_n(0.01) == 5 &&
          stats_mwu_min_n(0.1) == 4 && stats_mwu_min_n(0.2) == 3);
    CHECK(stats_mwu_min_n(0.0) == -1);
    /* critical values against the enumerated distribution */
    static double counts[16 * 16 + 1];
    for (int na = 1; na <= 8; na++)
        for (int nb = 1; na + nb <= 14; nb++) {
            static const double alphas[] = {0.05, 0.01, 0.2};
            enumerate_u(counts, na, nb);
            double total = 0.0;
            for (int u = 0; u <= na * nb; u++) total += counts[u];
            for (int a = 0; a < COUNT(alphas); a++) {
                int c = -2;
                CHECK(stats_mwu_critical(&c, na, nb, alphas[a]) == DR_OK);
                /* want: the smallest k >= na nb / 2 with 2 P(U >= k) < alpha */
                int want = na * nb + 1;
                double upper = 0.0;
                for (int k = na * nb; 2 * k >= na * nb; k--) {
                    upper += counts[k];
                    if (2.0 * upper / total < alphas[a]) want = k;
                    else break;
                }
                CHECK(c == want);
                CHECK((c <= na * nb) == (stats_mwu_min_p(na, nb) < alphas[a]));
            }
        }
}

/* A normal number from a 64-bit LCG by Box-Muller: this file's own stream. */
static double own_normal(unsigned long long *state)
{
    double u[2];
    for (int i = 0; i < 2; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        u[i] = ((double)(*state >> 11) + 0.5) / 9007199254740992.0;
    }
    return sqrt(-2.0 * log(u[0])) * cos(2.0 * PI * u[1]);
}

/* The exact test's power by this file's own simulation: samples N(0, 1) and N(delta, 1),
 * stats_mann_whitney's exact p below alpha with the shifted sample ranked higher. */
static double own_mwu_power(double delta, int na, int nb, double alpha, int sims)
{
    unsigned long long state = 12345;
    double a[64], b[64];
    int hits = 0;
    for (int s = 0; s < sims; s++) {
        for (int i = 0; i < na; i++) a[i] = own_normal(&state);
        for (int j = 0; j < nb; j++) b[j] = delta + own_normal(&state);
        struct stats_test t;
        CHECK(stats_mann_whitney(&t, b, nb, a, na, STATS_MWU_EXACT) == DR_OK);
        hits += t.p < alpha && t.statistic > 0.5 * na * nb;
    }
    return (double)hits / sims;
}

static void test_mwu_power(void)
{
    static const struct {
        int na, nb;
        double delta;
    } cases[] = {{5, 5, 1.5}, {4, 6, 1.2}, {8, 8, 1.0}, {4, 4, 2.5}, {2, 8, 2.0}};
    for (int i = 0; i < COUNT(cases); i++) {
        double got = NAN, own = own_mwu_power(cases[i].delta, cases[i].na, cases[i].nb,
                                               0.05, 4000);
        CHECK(stats_power_mwu(&got, cases[i].delta, 1.0, cases[i].na, cases[i].nb, 0.05) ==
              DR_OK);
        double se = sqrt(own * (1 - own) / 4000 + got * (1 - got) / STATS_MWU_SIMS);
        CHECK(fabs(got - own) <= 4.0 * se + 1e-3);
        printf("exact Mann-Whitney power, %d and %d runs, shift %.1f sd: %.4f (own "
               "simulation %.4f)\n", cases[i].na, cases[i].nb, cases[i].delta, got, own);
        /* the scale: only delta / sd matters */
        double scaled = NAN;
        CHECK(stats_power_mwu(&scaled, 1e-3 * cases[i].delta, 1e-3, cases[i].na, cases[i].nb,
                              0.05) == DR_OK);
        CHECK(scaled == got);
    }
    /* the detectable shift has the power asked for; a little less has less */
    static const int sizes[][2] = {{4, 4}, {5, 5}, {3, 5}, {10, 12}, {2, 8}};
    for (int i = 0; i < COUNT(sizes); i++) {
        double mde = NAN, p_at = NAN, p_below = NAN;
        CHECK(stats_power_mwu_mde(&mde, 2.0, sizes[i][0], sizes[i][1], 0.05, 0.8) == DR_OK);
        CHECK(isfinite(mde) && mde > 0);
        CHECK(stats_power_mwu(&p_at, mde, 2.0, sizes[i][0], sizes[i][1], 0.05) == DR_OK);
        CHECK(stats_power_mwu(&p_below, 0.98 * mde, 2.0, sizes[i][0], sizes[i][1], 0.05) ==
              DR_OK);
        CHECK(p_at >= 0.8 && p_below < 0.8);
        /* the exact test with few runs needs a larger shift than the t-test */
        CHECK(mde > stats_power_t_mde(2.0, sizes[i][0], sizes[i][1], 0.05, 0.8));
    }
    /* nothing detectable where no p below alpha is attainable */
    double mde = 0, p = 1;
    CHECK(stats_power_mwu_mde(&mde, 1.0, 3, 3, 0.05, 0.8) == DR_OK && isinf(mde));
    CHECK(stats_power_mwu_mde(&mde, 1.0, 3, 4, 0.05, 0.8) == DR_OK && isinf(mde));
    CHECK(stats_power_mwu(&p, 100.0, 1.0, 3, 3, 0.05) == DR_OK && p == 0.0);
    CHECK(stats_power_mwu_mde(&mde, 1.0, 5, 5, 0.01, 0.8) == DR_OK && isfinite(mde));
    /* beyond the exact range: the efficiency rule */
    CHECK(stats_power_mwu_mde(&mde, 1.0, 60, 60, 0.05, 0.8) == DR_OK);
    CHECK_NEAR(mde, stats_power_rank_mde(1.0, 60, 60, 0.05, 0.8), 1e-12);
    CHECK(stats_power_mwu_mde(&mde, 0.0, 5, 5, 0.05, 0.8) == DR_OK && isnan(mde));
}

/* Seeds per side for the exact test: the smallest n with the power asked for. */
static void test_mwu_seeds(void)
{
    static const double deltas[] = {3.0, 2.0, 1.2, 0.8};
    for (int i = 0; i < COUNT(deltas); i++) {
        double n = NAN, p = NAN, q = NAN;
        CHECK(stats_power_mwu_n(&n, deltas[i], 1.0, 0.05, 0.8) == DR_OK);
        CHECK(n == floor(n) && n >= 4 && n <= 50);
        CHECK(stats_power_mwu(&p, deltas[i], 1.0, (int)n, (int)n, 0.05) == DR_OK);
        CHECK(p >= 0.8);
        if (n > 4) {
            CHECK(stats_power_mwu(&q, deltas[i], 1.0, (int)n - 1, (int)n - 1, 0.05) == DR_OK);
            CHECK(q < 0.8);
        }
        printf("exact Mann-Whitney, shift %.1f sd: %g runs a side (3/pi rule %.2f)\n",
               deltas[i], n, stats_power_rank_n(deltas[i], 1.0, 0.05, 0.8));
    }
    /* even a huge shift needs the 4 runs a side that can give p < 0.05 */
    double n = NAN;
    CHECK(stats_power_mwu_n(&n, 50.0, 1.0, 0.05, 0.8) == DR_OK && n == 4);
    CHECK(stats_power_mwu_n(&n, 50.0, 1.0, 0.01, 0.8) == DR_OK && n == 5);
    /* past 50 a side: the efficiency rule's root */
    CHECK(stats_power_mwu_n(&n, 0.3, 1.0, 0.05, 0.8) == DR_OK);
    CHECK_NEAR(n, stats_power_rank_n(0.3, 1.0, 0.05, 0.8), 1e-9);
}

int main(void)
{
    test_nct_cdf();
    test_seeds_needed();
    test_mde();
    test_rank();
    test_mwu_attainable();
    test_mwu_power();
    test_mwu_seeds();
    return check_finish("test_stats_power");
}

/* The power and sample-size functions (results/stats.h, stats_power.c) against known
 * values: R's power.t.test (n = 16.71 for delta = sd, alpha 0.05, power 0.8; 63.77 for
 * half that delta) and figures computed independently with scipy 1.17 (scipy.stats.nct
 * for the noncentral t, brentq for the roots), plus the properties the report relies on:
 * the seeds found are the smallest with enough power, the detectable difference has the
 * power asked for, and the rank test needs pi / 3 times the seeds. */
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

int main(void)
{
    test_nct_cdf();
    test_seeds_needed();
    test_mde();
    test_rank();
    return check_finish("test_stats_power");
}

/* The binomial proportions of results/stats.h: the beta and normal quantiles and the
 * Clopper-Pearson interval, against scipy 1.17 (scipy.stats.binomtest(k, n)
 * .proportion_ci(level, 'exact'), beta.ppf, norm.ppf; R's binom.test gives the same
 * intervals), against 40-digit mpmath values and closed forms, and against the
 * interval's definition: the binomial tail sums, added up term by term here, equal
 * (1 - level) / 2 at both ends. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "results/stats.h"

/* P(X >= k) for X ~ Binomial(n, p), summed term by term (n small). */
static double upper_tail(int k, int n, double p)
{
    long double sum = 0, c = 1;   /* c = C(n, j) */
    for (int j = 0; j <= n; j++) {
        if (j > 0) c = c * (n - j + 1) / j;
        if (j >= k) sum += c * powl(p, j) * powl(1 - p, n - j);
    }
    return (double)sum;
}

struct known {
    int k, n;
    double lo, hi;
};

static void test_known_intervals(void)
{
    static const struct known cases[] = {
        {4, 5, 0.28358206388191054, 0.9949492366205319},
        {0, 5, 0.0, 0.5218237501049814},
        {5, 5, 0.47817624989501856, 1.0},
        {1, 10, 0.0025285785444625728, 0.44501611702819543},
        {47, 50, 0.8345180533962271, 0.9874514121646659},
        {0, 1, 0.0, 0.975},
        {1, 1, 0.025000000000000022, 1.0},
        {3, 7, 0.09898827844243689, 0.81594843235993},
        {250, 1000, 0.2234304062646791, 0.2780500062237556},
        /* scipy's lower end here, 2.531777563270631e-06, is 1.2e-8 off in relative terms
         * from the closed form 1 - 0.975^(1/10000) (test_closed_forms) */
        {1, 10000, 2.5317775934746887e-06, 0.0005570369979869689},
        {9999, 10000, 0.999442963002013, 0.9999974682224367},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct known *c = &cases[i];
        double lo = -1, hi = -1;
        CHECK(stats_binomial_ci(&lo, &hi, c->k, c->n, 0.95) == DR_OK);
        CHECK_NEAR(lo, c->lo, 1e-6);
        CHECK_NEAR(hi, c->hi, 1e-6);
        /* and much closer than the 1e-6 asked for, relative to the value */
        CHECK(fabs(lo - c->lo) <= 1e-9 * c->lo);
        CHECK(fabs(hi - c->hi) <= 1e-9 * c->hi);
        if (fabs(lo - c->lo) > 1e-9 * c->lo || fabs(hi - c->hi) > 1e-9 * c->hi)
            printf("  %d/%d: [%.17g, %.17g], scipy [%.17g, %.17g]\n", c->k, c->n, lo, hi,
                   c->lo, c->hi);
    }
    /* the ends exactly at k = 0 and k = n */
    double lo, hi;
    CHECK(stats_binomial_ci(&lo, &hi, 0, 20, 0.95) == DR_OK && lo == 0.0 && hi < 1);
    CHECK(stats_binomial_ci(&lo, &hi, 20, 20, 0.95) == DR_OK && hi == 1.0 && lo > 0);
    /* another level: 90 % for 7/12 */
    CHECK(stats_binomial_ci(&lo, &hi, 7, 12, 0.90) == DR_OK);
    CHECK_NEAR(lo, 0.31523779072445207, 1e-10);
    CHECK_NEAR(hi, 0.8189752427576791, 1e-10);
}

/* The ends with a closed form: at k = 0 the upper end solves (1 - p)^n = 0.025, at k = 1
 * the lower end solves 1 - (1 - p)^n = 0.025, and k = n, n - 1 mirror them. */
static void test_closed_forms(void)
{
    const int ns[] = {1, 2, 5, 10, 50, 300, 10000, 1000000};
    for (int i = 0; i < 8; i++) {
        int n = ns[i];
        double lo, hi;
        double zero_hi = -expm1(log(0.025) / n), one_lo = -expm1(log(0.975) / n);
        CHECK(stats_binomial_ci(&lo, &hi, 0, n, 0.95) == DR_OK);
        CHECK(fabs(hi - zero_hi) <= 1e-10 * zero_hi);
        CHECK(stats_binomial_ci(&lo, &hi, n, n, 0.95) == DR_OK);
        CHECK_NEAR(lo, exp(log(0.025) / n), 1e-14);
        CHECK(stats_binomial_ci(&lo, &hi, 1, n, 0.95) == DR_OK);
        CHECK(fabs(lo - one_lo) <= 1e-10 * one_lo);
        if (fabs(lo - one_lo) > 1e-10 * one_lo)
            printf("  1/%d: %.17g, closed form %.17g\n", n, lo, one_lo);
        CHECK(stats_binomial_ci(&lo, &hi, n - 1, n, 0.95) == DR_OK);
        CHECK_NEAR(hi, exp(log(0.975) / n), 1e-14);   /* 1 - hi would cancel */
    }
}

/* 40-digit references (mpmath 1.3: bisection of betainc(a, b, 0, x, regularized=True)),
 * where scipy's own answers differ from them by up to 1.5e-13 (2/6): met to 1e-12
 * relative (the error of stats_betainc's log-gamma prefactor grows with n: 7e-14 at
 * n = 1000, 1e-16 at n = 6). */
static void test_high_precision(void)
{
    static const struct known cases[] = {
        {4, 5, 0.28358206388191048593, 0.99494923662053194347},
        {2, 6, 0.043271868292741678076, 0.77722190449648788472},
        {1, 10, 0.0025285785444617845022, 0.44501611702819542026},
        {47, 50, 0.83451805339622710692, 0.98745141216466593805},
        {250, 1000, 0.22343040626468036182, 0.27805000622375552846},
        {3, 7, 0.09898827844250786464, 0.81594843235991698781},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        double lo, hi;
        CHECK(stats_binomial_ci(&lo, &hi, cases[i].k, cases[i].n, 0.95) == DR_OK);
        CHECK(fabs(lo - cases[i].lo) <= 1e-12 * cases[i].lo);
        CHECK(fabs(hi - cases[i].hi) <= 1e-12 * cases[i].hi);
        if (fabs(lo - cases[i].lo) > 1e-12 * cases[i].lo ||
            fabs(hi - cases[i].hi) > 1e-12 * cases[i].hi)
            printf("  %d/%d: [%.17g, %.17g]\n", cases[i].k, cases[i].n, lo, hi);
    }
}

static void test_definition(void)
{
    /* lo: P(X >= k | lo) = 0.025; hi: P(X <= k | hi) = 0.025; for every k of small n */
    for (int n = 1; n <= 30; n++) {
        double prev_lo = -1, prev_hi = -1;
        for (int k = 0; k <= n; k++) {
            double lo, hi;
            CHECK(stats_binomial_ci(&lo, &hi, k, n, 0.95) == DR_OK);
            CHECK(lo >= 0 && lo < hi && hi <= 1);
            CHECK(lo <= (double)k / n && (double)k / n <= hi);
            CHECK(lo > prev_lo && hi > prev_hi);   /* both ends rise with k */
            if (k > 0) CHECK_NEAR(upper_tail(k, n, lo), 0.025, 1e-12);
            if (k < n) CHECK_NEAR(1.0 - upper_tail(k + 1, n, hi), 0.025, 1e-12);
            prev_lo = lo;
            prev_hi = hi;
        }
    }
}

static void test_bad_input(void)
{
    double lo = 0, hi = 0;
    CHECK(stats_binomial_ci(&lo, &hi, 0, 0, 0.95) == DR_ERR_USAGE && isnan(lo) && isnan(hi));
    CHECK(stats_binomial_ci(&lo, &hi, 6, 5, 0.95) == DR_ERR_USAGE);
    CHECK(stats_binomial_ci(&lo, &hi, -1, 5, 0.95) == DR_ERR_USAGE);
    CHECK(stats_binomial_ci(&lo, &hi, 2, 5, 1.0) == DR_ERR_USAGE);
    CHECK(stats_binomial_ci(&lo, &hi, 2, 5, 0.0) == DR_ERR_USAGE);
    CHECK(stats_binomial_ci(&lo, &hi, 2, 5, NAN) == DR_ERR_USAGE);
    CHECK(isnan(stats_beta_quantile(0.5, 0, 1)));
    CHECK(isnan(stats_beta_quantile(0.5, 1, -1)));
    CHECK(isnan(stats_beta_quantile(1.5, 1, 1)));
    CHECK(isnan(stats_beta_quantile(NAN, 1, 1)));
    CHECK(isnan(stats_normal_quantile(-0.1)) && isnan(stats_normal_quantile(NAN)));
    CHECK(isinf(stats_normal_quantile(0)) && stats_normal_quantile(0) < 0);
    CHECK(isinf(stats_normal_quantile(1)) && stats_normal_quantile(1) > 0);
}

static void test_beta_quantile(void)
{
    CHECK_NEAR(stats_beta_quantile(0.5, 2, 3), 0.3857275681323895, 1e-13);
    CHECK_NEAR(stats_beta_quantile(0.025, 0.5, 0.5), 0.001541333133436012, 1e-14);
    CHECK_NEAR(stats_beta_quantile(0.9, 10, 1), 0.9895192582062144, 1e-13);
    CHECK_NEAR(stats_beta_quantile(1e-10, 2, 2), 5.773513803060827e-06, 1e-16);
    CHECK_NEAR(stats_beta_quantile(0.3, 200, 300), 0.388410831537717, 1e-13);
    CHECK_NEAR(stats_beta_quantile(0.99, 0.1, 5), 0.2935069421957024, 1e-13);
    CHECK(stats_beta_quantile(0, 2, 3) == 0.0 && stats_beta_quantile(1, 2, 3) == 1.0);
    /* Beta(1, 1) is uniform: the quantile is p itself */
    for (double p = 0.05; p < 1; p += 0.1) CHECK_NEAR(stats_beta_quantile(p, 1, 1), p, 1e-14);
    /* the inverse of stats_betainc over a grid */
    const double shapes[] = {0.3, 1, 2.5, 17, 400};
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++)
            for (double p = 0.001; p < 1; p *= 3) {
                double a = shapes[i], b = shapes[j];
                double x = stats_beta_quantile(p, a, b);
                CHECK(x > 0 && x < 1);
                CHECK_NEAR(stats_betainc(a, b, x), p, 1e-12);
            }
}

static void test_normal_quantile(void)
{
    CHECK_NEAR(stats_normal_quantile(0.975), 1.959963984540054, 1e-13);
    CHECK_NEAR(stats_normal_quantile(0.025), -1.9599639845400545, 1e-13);
    CHECK(stats_normal_quantile(0.5) == 0.0);
    CHECK_NEAR(stats_normal_quantile(1e-10), -6.361340902404056, 1e-12);
    CHECK_NEAR(stats_normal_quantile(0.8), 0.8416212335729143, 1e-13);
    CHECK_NEAR(stats_normal_quantile(1 - 1e-9), 5.997807019601637, 1e-6);
    for (double p = 1e-12; p < 1; p *= 7)
        CHECK_NEAR(stats_normal_cdf(stats_normal_quantile(p)), p, 1e-14 + 1e-12 * p);
}

int main(void)
{
    test_known_intervals();
    test_closed_forms();
    test_high_precision();
    test_definition();
    test_bad_input();
    test_beta_quantile();
    test_normal_quantile();
    return check_finish("stats_binomial");
}

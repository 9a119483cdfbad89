/* Statistics for reports over a handful of runs: order statistics, mean and its t
 * confidence interval, Welch's t-test and the Mann-Whitney U test. Pure functions on
 * double arrays; no SQL, no I/O. */
#ifndef DAWNRUN_STATS_H
#define DAWNRUN_STATS_H

#include "../base/status.h"

/* q-quantile (0 <= q <= 1) of n >= 1 ascending values by linear interpolation between
 * closest ranks (Hyndman & Fan type 7, numpy's default "linear"): with h = (n - 1) q,
 * x[floor h] + (h - floor h) (x[floor h + 1] - x[floor h]). NaN when n < 1. */
double stats_quantile_sorted(const double *sorted, int n, double q);

struct stats_summary {
    int n;                   /* values used (NaNs in the input are left out) */
    double mean;
    double std;              /* sample standard deviation (n - 1); NaN when n < 2 */
    double min, max;
    double median, q1, q3;   /* stats_quantile_sorted at 0.5, 0.25, 0.75 */
    double iqr;              /* q3 - q1 */
    double ci_lo, ci_hi;     /* 95 % CI of the mean, mean -+ t(0.975, n-1) std / sqrt(n);
                                NaN when n < 2 */
};

/* Summarises x[0..n-1]; every field NaN (n = 0) when no value is usable. Returns DR_OK
 * or DR_ERR_NOMEM. */
int stats_summarize(struct stats_summary *out, const double *x, int n);

/* Regularized incomplete beta function I_x(a, b), a, b > 0, 0 <= x <= 1 (continued
 * fraction, about 1e-14 relative). NaN outside the domain. */
double stats_betainc(double a, double b, double x);

/* Student t distribution with df > 0 degrees of freedom: CDF and its inverse
 * (0 < p < 1). */
double stats_t_cdf(double t, double df);
double stats_t_quantile(double p, double df);

/* Standard normal CDF. */
double stats_normal_cdf(double z);

struct stats_test {
    double statistic;   /* Welch: t of a - b; Mann-Whitney: U of sample a */
    double df;          /* Welch: Welch-Satterthwaite degrees of freedom; MWU: NaN */
    double p;           /* two-sided p-value; NaN when the test is undefined */
    int exact;          /* MWU: 1 = exact distribution, 0 = normal approximation */
};

/* Welch's unequal-variance t-test of mean(a) = mean(b). Needs na, nb >= 2; p is NaN
 * when both samples have zero variance. */
int stats_welch(struct stats_test *out, const double *a, int na, const double *b, int nb);

enum stats_mwu_method {
    STATS_MWU_AUTO,        /* exact when there are no ties and na * nb <= 2500 */
    STATS_MWU_EXACT,       /* exact null distribution (ties not allowed) */
    STATS_MWU_ASYMPTOTIC   /* normal approximation, tie-corrected, continuity-corrected */
};

/* Two-sided Mann-Whitney U test (Wilcoxon rank-sum) of a against b, na, nb >= 1.
 * statistic = U of a = (rank sum of a, mid-ranks for ties) - na (na + 1) / 2; the
 * p-value follows scipy.stats.mannwhitneyu(a, b, alternative='two-sided', method=...).
 * DR_ERR_USAGE for EXACT with ties or na * nb > 10^6; DR_ERR_NOMEM. */
int stats_mann_whitney(struct stats_test *out, const double *a, int na, const double *b,
                       int nb, enum stats_mwu_method method);

/* Attainability of the exact Mann-Whitney test. With na and nb untied values the
 * smallest two-sided p-value the exact test can give is 2 / C(na + nb, na) (every value
 * of one sample above every value of the other), capped at 1: 0.333 for 2 and 2, 0.1
 * for 3 and 3, 0.0571 for 3 and 4, 0.0286 for 4 and 4. NaN for na or nb < 1. */
double stats_mwu_min_p(int na, int nb);

/* The smallest number of runs n per side at which the exact test can give p < alpha
 * (stats_mwu_min_p(n, n) < alpha): 4 at alpha 0.05, 5 at 0.01. -1 for a bad alpha. */
int stats_mwu_min_n(double alpha);

/* *c = the smallest U (of either sample) at which the exact two-sided test of na and nb
 * untied values gives p < alpha: the test rejects when U >= *c or U <= na nb - *c;
 * na nb + 1 when no U does (stats_mwu_min_p(na, nb) >= alpha). DR_ERR_USAGE (printed)
 * for na, nb < 1, na nb > 10^6 or a bad alpha; DR_ERR_NOMEM. */
int stats_mwu_critical(int *c, int na, int nb, double alpha);

/* ---- binomial proportions (stats_binomial.c) ----------------------------------------- */

/* Quantile of the Beta(a, b) distribution, a, b > 0, 0 <= p <= 1: the x in [0, 1] with
 * stats_betainc(a, b, x) = p, by bisection to a relative width of about 1e-15 (the
 * result is as accurate as stats_betainc allows, about 1e-12 or better). 0 at p = 0,
 * 1 at p = 1; NaN outside the domain. */
double stats_beta_quantile(double p, double a, double b);

/* The exact (Clopper-Pearson) two-sided interval [*lo, *hi] for the success probability
 * of k successes in n >= 1 trials (0 <= k <= n), at confidence `level` (0.95 for 95 %):
 * *lo = the level's lower beta quantile Beta((1 - level) / 2; k, n - k + 1), 0 when k = 0;
 * *hi = Beta((1 + level) / 2; k + 1, n - k), 1 when k = n. Its coverage is at least
 * `level` for every true probability. DR_OK; DR_ERR_USAGE (both NaN) for a bad n, k or
 * level. */
int stats_binomial_ci(double *lo, double *hi, int k, int n, double level);

/* Standard normal quantile, the inverse of stats_normal_cdf (0 < p < 1), to about
 * 1e-15 relative; -inf at 0, +inf at 1, NaN outside [0, 1]. */
double stats_normal_quantile(double p);

/* ---- power and sample size (stats_power.c) ------------------------------------------- */

/* The design behind `dawnrun power` and the report's detectable differences: two
 * experiments compared by a two-sided two-sample t-test at level alpha (equal variances,
 * sd the common per-run standard deviation). "Power" is the probability that the test
 * rejects with the sign of the true difference delta > 0,
 *   1 - F(t(1 - alpha / 2, na + nb - 2); na + nb - 2, delta / (sd sqrt(1/na + 1/nb)))
 * with F the noncentral t CDF (the one-tailed power R's power.t.test reports; the other
 * tail adds less than alpha / 2). Sizes are doubles: the rank test's equivalent sizes
 * are not whole. Every function returns NaN for an argument outside its domain. */

/* Asymptotic relative efficiency of the Mann-Whitney U test against the t-test for a
 * shift between normal samples (Pitman): the U test with n seeds per side has the power
 * of the t-test with STATS_RANK_ARE n. */
#define STATS_RANK_ARE (3.0 / 3.14159265358979323846)

/* CDF of the noncentral t distribution with df > 0 degrees of freedom and noncentrality
 * ncp at t (a series in the regularized incomplete beta function; tests/test_stats_power.c
 * checks it against scipy to 1e-10). */
double stats_nct_cdf(double t, double df, double ncp);

/* Power of the t-test of a difference delta >= 0 with na, nb > 0 seeds per side
 * (na + nb > 2: at least one degree of freedom), per-run sd > 0, 0 < alpha < 1. */
double stats_power_t(double delta, double sd, double na, double nb, double alpha);

/* Seeds per experiment (equal on both sides, not rounded) at which the power of
 * stats_power_t reaches `power` (alpha / 2 < power < 1) for a difference delta > 0: the
 * root in [2, 1e9] (power.t.test's n: 16.71 for delta = sd, alpha 0.05, power 0.8).
 * +inf when even 1e9 seeds fall short. */
double stats_power_t_n(double delta, double sd, double alpha, double power);

/* The whole number of seeds to run: n_exact (the root stats_power_t_n returned) rounded
 * up, at least 2, which is the smallest n with stats_power_t(delta, sd, n, n, alpha) >=
 * power (17 for the example above); -1 when n_exact is not finite and positive. */
long stats_power_seeds(double n_exact);

/* Minimum detectable difference: the delta at which na, nb seeds have power `power`
 * (na, nb > 0, na + nb > 2; sd > 0; alpha / 2 < power < 1). */
double stats_power_t_mde(double sd, double na, double nb, double alpha, double power);

/* The same for the Mann-Whitney U test at STATS_RANK_ARE: seeds per experiment
 * (stats_power_t_n / STATS_RANK_ARE, Noether's large-sample formula for a normal shift)
 * and the difference na, nb seeds detect (the t-test's at STATS_RANK_ARE na and nb).
 * sd is the per-run sd of the compared quantity. */
double stats_power_rank_n(double delta, double sd, double alpha, double power);
double stats_power_rank_mde(double sd, double na, double nb, double alpha, double power);

/* The Mann-Whitney U test as the report prints it (stats_mann_whitney, STATS_MWU_AUTO:
 * exact for untied samples of at most STATS_MWU_EXACT_PAIRS pairs), for a shift delta
 * between normal samples of per-run sd `sd`, rejecting at two-sided level alpha with the
 * sign of the shift. Up to STATS_MWU_EXACT_PAIRS pairs the figures are the exact test's,
 * estimated from STATS_MWU_SIMS simulated pairs of samples (a fixed random stream: the
 * same arguments give the same figures; their standard error is at most 0.008 in
 * power); beyond, the normal approximation's through STATS_RANK_ARE. Each returns DR_OK
 * (the figure NaN for an argument outside its domain) or DR_ERR_NOMEM. */
#define STATS_MWU_EXACT_PAIRS 2500
#define STATS_MWU_SIMS 4000

/* *power = the test's power for delta >= 0 with na, nb >= 1 values per side. */
int stats_power_mwu(double *power, double delta, double sd, int na, int nb, double alpha);

/* *mde = the shift that na, nb values detect with the power asked for; +inf when the
 * exact test cannot give p < alpha with them (stats_mwu_min_p(na, nb) >= alpha). */
int stats_power_mwu_mde(double *mde, double sd, int na, int nb, double alpha, double power);

/* *n = the smallest whole number of values per side whose power for delta > 0 reaches
 * `power`: searched from stats_mwu_min_n(alpha) up to sqrt(STATS_MWU_EXACT_PAIRS); past
 * that, stats_power_rank_n's root (not rounded, at least the next whole number). */
int stats_power_mwu_n(double *n, double delta, double sd, double alpha, double power);

/* sqrt((sd_a^2 + sd_b^2) / 2): the common sd of two experiments' runs (NaN when either
 * is NaN). */
double stats_pooled_sd(double sd_a, double sd_b);

#endif

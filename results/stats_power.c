/* Power and sample size of the two-sample comparisons the report makes: the noncentral t
 * distribution, the power of the t-test, the seeds it needs for a given difference, the
 * difference a given number of seeds detects, and the Mann-Whitney U test's figures
 * through its asymptotic relative efficiency. */
#include "stats.h"

#include <math.h>

#define NCT_EPS 1e-15          /* relative size of a series term that ends the sum */
#define ROOT_ITERS 200         /* bisection halvings: far past double resolution */
#define N_MIN 2.0              /* seeds per side searched for: [N_MIN, N_MAX] */
#define N_MAX 1e9

/* Term j of the series below: p_j I_x(j + 1/2, df/2) + q_j I_x(j + 1, df/2); *weight =
 * |p_j| + |q_j|. */
static double nct_term(double *weight, long j, double x, double df, double ncp, double lambda)
{
    double lj = lambda > 0 ? j * log(lambda) : (j == 0 ? 0.0 : -INFINITY);
    double p = exp(-lambda + lj - lgamma(j + 1.0));
    double q = ncp / sqrt(2.0) * exp(-lambda + lj - lgamma(j + 1.5));
    double term = 0.0;
    if (p > 0) term += p * stats_betainc(j + 0.5, 0.5 * df, x);
    if (q != 0) term += q * stats_betainc(j + 1.0, 0.5 * df, x);
    *weight = fabs(p) + fabs(q);
    return term;
}

/* F(t; df, ncp) for t >= 0, as the Poisson mixture over j of incomplete beta functions
 * (with x = t^2 / (t^2 + df), lambda = ncp^2 / 2):
 *   F = Phi(-ncp) + 1/2 sum_j [ p_j I_x(j + 1/2, df/2) + q_j I_x(j + 1, df/2) ],
 *   p_j = e^-lambda lambda^j / j!,  q_j = ncp e^-lambda lambda^j / (sqrt 2 Gamma(j + 3/2)).
 * The weights are computed in logs; the sum starts at the Poisson mode and runs down to
 * 0 and up until a weight is negligible, so that its length grows as sqrt(lambda). */
static double nct_cdf_nonneg(double t, double df, double ncp)
{
    double x = t * t / (t * t + df);
    double lambda = 0.5 * ncp * ncp;
    double sum = 0.0, weight;
    long mode = (long)lambda;
    for (long j = mode; j >= 0; j--) {
        sum += nct_term(&weight, j, x, df, ncp, lambda);
        if (weight < NCT_EPS * (fabs(sum) + 1e-300)) break;
    }
    for (long j = mode + 1;; j++) {
        sum += nct_term(&weight, j, x, df, ncp, lambda);
        if (weight < NCT_EPS * (fabs(sum) + 1e-300)) break;
    }
    double f = stats_normal_cdf(-ncp) + 0.5 * sum;
    return fmin(1.0, fmax(0.0, f));
}

double stats_nct_cdf(double t, double df, double ncp)
{
    if (isnan(t) || !(df > 0) || !isfinite(ncp)) return NAN;
    if (isinf(t)) return t > 0 ? 1.0 : 0.0;
    /* T = (Z + ncp) / sqrt(V / df): P(T <= t) = 1 - P(-T <= -t), and -T has ncp -ncp */
    if (t < 0) return 1.0 - nct_cdf_nonneg(-t, df, -ncp);
    if (t == 0) return stats_normal_cdf(-ncp);
    return nct_cdf_nonneg(t, df, ncp);
}

/* stats_power_t with the critical value crit = t(1 - alpha / 2, na + nb - 2) given. */
static double power_at(double delta, double sd, double na, double nb, double crit)
{
    double ncp = delta / (sd * sqrt(1.0 / na + 1.0 / nb));
    return 1.0 - stats_nct_cdf(crit, na + nb - 2.0, ncp);
}

double stats_power_t(double delta, double sd, double na, double nb, double alpha)
{
    if (!(delta >= 0) || !(sd > 0) || !(na > 0) || !(nb > 0) || !(na + nb > 2) ||
        !(alpha > 0) || !(alpha < 1) || isinf(delta) || isinf(sd))
        return NAN;
    return power_at(delta, sd, na, nb, stats_t_quantile(1.0 - 0.5 * alpha, na + nb - 2.0));
}

/* 1 when alpha and power describe a test that can be asked for. */
static int targets_ok(double alpha, double power)
{
    return alpha > 0 && alpha < 1 && power < 1 && power > 0.5 * alpha;
}

double stats_power_t_n(double delta, double sd, double alpha, double power)
{
    if (!(delta > 0) || !(sd > 0) || !targets_ok(alpha, power) || isinf(delta) || isinf(sd))
        return NAN;
    if (stats_power_t(delta, sd, N_MIN, N_MIN, alpha) >= power) return N_MIN;
    /* power grows with n: bracket the root by doubling (the noncentrality then stays
     * near the one the power asks for, where the series is short), then bisect on
     * log n */
    double lo = log(N_MIN), hi = lo;
    do {
        lo = hi;
        hi += log(2.0);
        if (hi > log(N_MAX)) return INFINITY;
    } while (stats_power_t(delta, sd, exp(hi), exp(hi), alpha) < power);
    for (int i = 0; i < ROOT_ITERS && hi - lo > 1e-15 * hi; i++) {
        double mid = 0.5 * (lo + hi), m = exp(mid);
        if (stats_power_t(delta, sd, m, m, alpha) < power) lo = mid;
        else hi = mid;
    }
    return exp(hi);
}

long stats_power_seeds(double n_exact)
{
    if (!isfinite(n_exact) || !(n_exact > 0)) return -1;
    /* the root is within a few ulps: a value a hair above a whole number is that number */
    long n = (long)ceil(n_exact * (1.0 - 1e-12));
    return n < 2 ? 2 : n;
}

double stats_power_t_mde(double sd, double na, double nb, double alpha, double power)
{
    if (!(sd > 0) || !(na > 0) || !(nb > 0) || !(na + nb > 2) || !targets_ok(alpha, power) ||
        isinf(sd) || isinf(na) || isinf(nb))
        return NAN;
    /* power grows with delta; find a bracket in units of the standard error, then bisect
     * (the degrees of freedom, hence the critical value, stay the same) */
    double crit = stats_t_quantile(1.0 - 0.5 * alpha, na + nb - 2.0);
    double se = sd * sqrt(1.0 / na + 1.0 / nb), lo = 0.0, hi = se;
    while (power_at(hi, sd, na, nb, crit) < power) {
        lo = hi;
        hi *= 2.0;
        if (hi > 1e6 * se) return NAN;   /* unreachable for power < 1 */
    }
    for (int i = 0; i < ROOT_ITERS && hi - lo > 1e-15 * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (power_at(mid, sd, na, nb, crit) < power) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}

double stats_power_rank_n(double delta, double sd, double alpha, double power)
{
    double n = stats_power_t_n(delta, sd, alpha, power);
    return isnan(n) ? NAN : n / STATS_RANK_ARE;
}

double stats_power_rank_mde(double sd, double na, double nb, double alpha, double power)
{
    return stats_power_t_mde(sd, STATS_RANK_ARE * na, STATS_RANK_ARE * nb, alpha, power);
}

double stats_pooled_sd(double sd_a, double sd_b)
{
    return sqrt(0.5 * (sd_a * sd_a + sd_b * sd_b));
}

/* Binomial proportions: the beta quantile (the inverse of stats_betainc), the exact
 * Clopper-Pearson interval of k successes in n trials built on it, and the standard
 * normal quantile. Bracketing only (bisection on a monotone function), so a quantile
 * can never leave its interval or diverge, whatever a and b are. */
#include "stats.h"

#include <float.h>
#include <math.h>

/* Halvings of [0, 1]: 2^-1100 is below the smallest double, so the loop always ends on
 * its width test first, at a relative width of a few DBL_EPSILON. */
#define BISECT_MAX 1100

double stats_beta_quantile(double p, double a, double b)
{
    if (!(a > 0) || !(b > 0) || !(p >= 0) || !(p <= 1)) return NAN;
    if (p == 0) return 0.0;
    if (p == 1) return 1.0;
    /* invariant: I_lo(a, b) <= p < I_hi(a, b); I_x is increasing in x */
    double lo = 0.0, hi = 1.0;
    for (int i = 0; i < BISECT_MAX; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) break;                /* no double between them */
        if (hi - lo <= 4 * DBL_EPSILON * hi) break;       /* relative 1e-15 */
        double f = stats_betainc(a, b, mid);
        if (isnan(f)) return NAN;
        if (f <= p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

int stats_binomial_ci(double *lo, double *hi, int k, int n, double level)
{
    *lo = NAN;
    *hi = NAN;
    if (n < 1 || k < 0 || k > n || !(level > 0) || !(level < 1)) return DR_ERR_USAGE;
    double tail = 0.5 * (1.0 - level);
    /* lower end: the p at which P(X >= k) = tail, the tail-th quantile of Beta(k, n-k+1);
     * upper end: the p at which P(X <= k) = tail, the (1-tail)-th of Beta(k+1, n-k) */
    *lo = k == 0 ? 0.0 : stats_beta_quantile(tail, k, n - k + 1);
    *hi = k == n ? 1.0 : stats_beta_quantile(1.0 - tail, k + 1, n - k);
    if (isnan(*lo) || isnan(*hi)) return DR_ERR_INTERNAL;
    return DR_OK;
}

double stats_normal_quantile(double p)
{
    if (!(p > 0) || !(p < 1)) {
        if (p == 0) return -INFINITY;
        if (p == 1) return INFINITY;
        return NAN;
    }
    if (p > 0.5) return -stats_normal_quantile(1.0 - p);
    if (p == 0.5) return 0.0;
    /* p < 0.5: z < 0, where stats_normal_cdf (erfc of a positive argument) keeps its
     * relative accuracy. Phi(-38.5) is below the smallest double, so [-40, 0] brackets
     * every p > 0. */
    double lo = -40.0, hi = 0.0;
    for (int i = 0; i < BISECT_MAX; i++) {
        double mid = 0.5 * (lo + hi);
        if (mid <= lo || mid >= hi) break;
        if (hi - lo <= 4 * DBL_EPSILON * fabs(lo)) break;
        if (stats_normal_cdf(mid) <= p)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* Power and sample size of the two-sample comparisons the report makes: the noncentral t
 * distribution, the power of the t-test, the seeds it needs for a given difference, the
 * difference a given number of seeds detects, and the same for the Mann-Whitney U test
 * the report prints (exact where it is exact, simulated under a normal shift; through its
 * asymptotic relative efficiency beyond). */
#include "stats.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

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

/* ---- the Mann-Whitney U test as printed ----
 * For na nb <= STATS_MWU_EXACT_PAIRS the report prints the exact test; its power against
 * a shift of delta between normal samples of sd 1 is estimated from STATS_MWU_SIMS pairs
 * of samples drawn from a fixed counter-based stream. In draw k the exact test rejects,
 * with the sign of the shift, when U of the shifted sample (the pairs with y + delta > x)
 * reaches the critical value c, i.e. when delta exceeds the c-th smallest of the na nb
 * differences x - y: that order statistic t_k is the smallest shift the draw detects.
 * The power at delta is the share of draws with t_k < delta, and the detectable shift at
 * power p is the p-quantile of the t_k. The same draws serve every delta, so the
 * estimate grows with delta as the power does. */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Standard normal number `i` of draw k (splitmix64 hashes, Box-Muller). */
static double draw_normal(uint64_t k, uint64_t i)
{
    uint64_t h = mix64(mix64(k * 0x9e3779b97f4a7c15ULL + 0x5851f42d4c957f2dULL) ^ i);
    uint64_t g = mix64(h + 0x9e3779b97f4a7c15ULL);
    double u1 = ((double)(h >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((double)(g >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

static int cmp_dbl(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The k-th smallest (0-based) of v[0..n-1], reordering v (quickselect). */
static double select_kth(double *v, int n, int k)
{
    int lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        int i = lo, j = hi;
        while (i <= j) {
            while (v[i] < pivot) i++;
            while (v[j] > pivot) j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        }
        if (k <= j) hi = j;
        else if (k >= i) lo = i;
        else return v[k];
    }
    return v[k];
}

/* t[0..STATS_MWU_SIMS) ascending: the smallest shift (in sd) each draw's exact test
 * detects at level alpha with na, nb values; +inf throughout when it detects none. */
static int mwu_thresholds(double *t, int na, int nb, double alpha)
{
    int rc = DR_OK, c = 0;
    double *x = NULL, *diff = NULL;
    TRY(stats_mwu_critical(&c, na, nb, alpha));
    if (c > na * nb) {
        for (int k = 0; k < STATS_MWU_SIMS; k++) t[k] = INFINITY;
        goto cleanup;
    }
    x = malloc((size_t)(na + nb) * sizeof *x);
    diff = malloc((size_t)na * nb * sizeof *diff);
    CHECK_ALLOC(x, "the simulated samples");
    CHECK_ALLOC(diff, "the simulated samples");
    for (int k = 0; k < STATS_MWU_SIMS; k++) {
        for (int i = 0; i < na + nb; i++) x[i] = draw_normal((uint64_t)k, (uint64_t)i);
        for (int i = 0; i < na; i++)
            for (int j = 0; j < nb; j++) diff[i * nb + j] = x[i] - x[na + j];
        t[k] = select_kth(diff, na * nb, c - 1);
    }
    qsort(t, STATS_MWU_SIMS, sizeof *t, cmp_dbl);
cleanup:
    free(x);
    free(diff);
    return rc;
}

/* The share of t[] at or below delta (t ascending). */
static double share_below(const double *t, double delta)
{
    int lo = 0, hi = STATS_MWU_SIMS;   /* first index with t > delta */
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (t[mid] <= delta) lo = mid + 1;
        else hi = mid;
    }
    return (double)lo / STATS_MWU_SIMS;
}

static int mwu_args_ok(double sd, int na, int nb, double alpha, double power)
{
    return sd > 0 && !isinf(sd) && na >= 1 && nb >= 1 && targets_ok(alpha, power);
}

int stats_power_mwu(double *power_out, double delta, double sd, int na, int nb, double alpha)
{
    int rc = DR_OK;
    double *t = NULL;
    *power_out = NAN;
    if (!(delta >= 0) || isinf(delta) || !mwu_args_ok(sd, na, nb, alpha, 0.5)) return DR_OK;
    if ((long long)na * nb > STATS_MWU_EXACT_PAIRS) {
        *power_out = stats_power_t(delta, sd, STATS_RANK_ARE * na, STATS_RANK_ARE * nb,
                                   alpha);
        return DR_OK;
    }
    t = malloc(STATS_MWU_SIMS * sizeof *t);
    CHECK_ALLOC(t, "the simulated thresholds");
    TRY(mwu_thresholds(t, na, nb, alpha));
    *power_out = share_below(t, delta / sd);
cleanup:
    free(t);
    return rc;
}

int stats_power_mwu_mde(double *mde, double sd, int na, int nb, double alpha, double power)
{
    int rc = DR_OK;
    double *t = NULL;
    *mde = NAN;
    if (!mwu_args_ok(sd, na, nb, alpha, power)) return DR_OK;
    if ((long long)na * nb > STATS_MWU_EXACT_PAIRS) {
        *mde = stats_power_rank_mde(sd, na, nb, alpha, power);
        return DR_OK;
    }
    t = malloc(STATS_MWU_SIMS * sizeof *t);
    CHECK_ALLOC(t, "the simulated thresholds");
    TRY(mwu_thresholds(t, na, nb, alpha));
    /* the smallest shift detected in a share `power` of the draws */
    int k = (int)ceil(power * STATS_MWU_SIMS - 1e-9) - 1;
    if (k < 0) k = 0;
    *mde = sd * t[k];   /* +inf when no draw can reject */
cleanup:
    free(t);
    return rc;
}

int stats_power_mwu_n(double *n_out, double delta, double sd, double alpha, double power)
{
    int rc = DR_OK;
    *n_out = NAN;
    if (!(delta > 0) || isinf(delta) || !mwu_args_ok(sd, 1, 1, alpha, power)) return DR_OK;
    int n_max = (int)floor(sqrt((double)STATS_MWU_EXACT_PAIRS));
    int n_min = stats_mwu_min_n(alpha);
    double n_are = stats_power_rank_n(delta, sd, alpha, power);
    if (n_min >= 1 && n_min <= n_max && n_are <= n_max + 2.0) {
        /* power grows with n: start at the efficiency's estimate and walk to the first
         * n with enough power (one to three simulations as a rule) */
        int n = (int)ceil(n_are);
        n = n < n_min ? n_min : n > n_max ? n_max : n;
        double p;
        TRY(stats_power_mwu(&p, delta, sd, n, n, alpha));
        if (p >= power) {
            while (n > n_min) {
                double q;
                TRY(stats_power_mwu(&q, delta, sd, n - 1, n - 1, alpha));
                if (q < power) break;
                n--;
            }
            *n_out = n;
            goto cleanup;
        }
        for (n++; n <= n_max; n++) {
            TRY(stats_power_mwu(&p, delta, sd, n, n, alpha));
            if (p >= power) {
                *n_out = n;
                goto cleanup;
            }
        }
    }
    /* beyond the exact test's range: the normal approximation at its efficiency 3/pi */
    *n_out = fmax(n_are, n_max + 1.0);
cleanup:
    return rc;
}

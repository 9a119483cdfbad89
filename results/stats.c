/* Summaries and two-sample tests over per-run numbers (accuracies, times): quantiles,
 * mean, std and t interval, Welch's t-test, the Mann-Whitney U test. */
#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

double stats_quantile_sorted(const double *sorted, int n, double q)
{
    if (n < 1 || !(q >= 0) || !(q <= 1)) return NAN;
    double h = (n - 1) * q;
    int i = (int)floor(h);
    if (i >= n - 1) return sorted[n - 1];
    return sorted[i] + (h - i) * (sorted[i + 1] - sorted[i]);
}

/* Mean and sample variance (two passes). */
static void mean_var(double *mean, double *var, const double *x, int n)
{
    double s = 0.0, ss = 0.0;
    for (int i = 0; i < n; i++) s += x[i];
    *mean = n > 0 ? s / n : NAN;
    for (int i = 0; i < n; i++) ss += (x[i] - *mean) * (x[i] - *mean);
    *var = n > 1 ? ss / (n - 1) : NAN;
}

int stats_summarize(struct stats_summary *out, const double *x, int n)
{
    int rc = DR_OK;
    int m = 0;
    double *v = NULL, var;

    out->n = 0;
    out->mean = out->std = out->min = out->max = NAN;
    out->median = out->q1 = out->q3 = out->iqr = out->ci_lo = out->ci_hi = NAN;
    if (n <= 0) return DR_OK;
    v = malloc((size_t)n * sizeof *v);
    CHECK_ALLOC(v, "statistics buffer");
    for (int i = 0; i < n; i++)
        if (!isnan(x[i])) v[m++] = x[i];
    if (m == 0) goto cleanup;
    qsort(v, (size_t)m, sizeof *v, cmp_double);
    out->n = m;
    mean_var(&out->mean, &var, v, m);
    out->std = sqrt(var);
    out->min = v[0];
    out->max = v[m - 1];
    out->median = stats_quantile_sorted(v, m, 0.5);
    out->q1 = stats_quantile_sorted(v, m, 0.25);
    out->q3 = stats_quantile_sorted(v, m, 0.75);
    out->iqr = out->q3 - out->q1;
    if (m >= 2) {
        double half = stats_t_quantile(0.975, m - 1) * out->std / sqrt((double)m);
        out->ci_lo = out->mean - half;
        out->ci_hi = out->mean + half;
    }
cleanup:
    free(v);
    return rc;
}

int stats_welch(struct stats_test *out, const double *a, int na, const double *b, int nb)
{
    int rc = DR_OK;
    double ma, va, mb, vb;
    out->statistic = out->df = out->p = NAN;
    out->exact = 0;
    if (na < 2 || nb < 2)
        FAIL(DR_ERR_USAGE, "Welch's t-test needs two values per sample (got %d and %d)", na, nb);
    mean_var(&ma, &va, a, na);
    mean_var(&mb, &vb, b, nb);
    double sa = va / na, sb = vb / nb, se2 = sa + sb;
    if (!(se2 > 0)) return DR_OK;   /* both constant: undefined, as in scipy */
    out->statistic = (ma - mb) / sqrt(se2);
    out->df = se2 * se2 / (sa * sa / (na - 1) + sb * sb / (nb - 1));
    /* two-sided p = 2 P(T > |t|) = I_(df / (df + t^2))(df / 2, 1 / 2) */
    out->p = stats_betainc(0.5 * out->df, 0.5,
                           out->df / (out->df + out->statistic * out->statistic));
cleanup:
    return rc;
}

/* ---- Mann-Whitney U ---------------------------------------------------------------- */

struct ranked {
    double value;
    int from_a;
};

static int cmp_ranked(const void *pa, const void *pb)
{
    return cmp_double(&((const struct ranked *)pa)->value, &((const struct ranked *)pb)->value);
}

/* The null distribution of U (no ties) for na, nb values: dist[u] (u = 0 .. na nb),
 * counts of the orderings with u pairs (a > b), by the recurrence on the largest value,
 * c(i, j, u) = c(i - 1, j, u - j) + c(i, j - 1, u). Counts are doubles (relative
 * precision). *dist is malloc'd (na nb + 1 entries). */
static int mwu_null_counts(double **dist, int na, int nb)
{
    int rc = DR_OK;
    int umax = na * nb;
    size_t row = (size_t)umax + 1;
    double *prev = calloc((size_t)(nb + 1) * row, sizeof *prev);
    double *cur = calloc((size_t)(nb + 1) * row, sizeof *cur);
    *dist = malloc(row * sizeof **dist);
    CHECK_ALLOC(prev, "exact U distribution");
    CHECK_ALLOC(cur, "exact U distribution");
    CHECK_ALLOC(*dist, "exact U distribution");
    for (int j = 0; j <= nb; j++) prev[(size_t)j * row] = 1.0;   /* i = 0: only u = 0 */
    for (int i = 1; i <= na; i++) {
        memset(cur, 0, (size_t)(nb + 1) * row * sizeof *cur);
        cur[0] = 1.0;                                            /* j = 0: u = 0 */
        for (int j = 1; j <= nb; j++) {
            double *c = cur + (size_t)j * row;
            const double *left = cur + (size_t)(j - 1) * row;   /* c(i, j - 1, .) */
            const double *up = prev + (size_t)j * row;          /* c(i - 1, j, .) */
            for (int v = 0; v <= i * j; v++) c[v] = left[v] + (v >= j ? up[v - j] : 0.0);
        }
        double *t = prev;
        prev = cur;
        cur = t;
    }
    memcpy(*dist, prev + (size_t)nb * row, row * sizeof **dist);
cleanup:
    if (rc != DR_OK) {
        free(*dist);
        *dist = NULL;
    }
    free(prev);
    free(cur);
    return rc;
}

/* Exact two-sided p-value of U (no ties): p = 2 P(U >= max(u, na nb - u)), at most 1. */
static int mwu_exact_p(double *p, double u, int na, int nb)
{
    int rc = DR_OK;
    int umax = na * nb;
    double *dist = NULL;
    TRY(mwu_null_counts(&dist, na, nb));
    double total = 0.0, upper = 0.0;
    double k = fmax(u, umax - u);
    for (int v = 0; v <= umax; v++) {
        total += dist[v];
        if (v >= k - 1e-9) upper += dist[v];
    }
    *p = fmin(1.0, 2.0 * upper / total);
cleanup:
    free(dist);
    return rc;
}

double stats_mwu_min_p(int na, int nb)
{
    if (na < 1 || nb < 1) return NAN;
    /* 2 / C(na + nb, na): the two orderings with every a above or every b above. The
     * product keeps every partial C(m + i, i) whole, exact while below 2^53 (past that
     * the value is far below any alpha) */
    int k = na < nb ? na : nb, m = na + nb - k;
    double c = 1.0;
    for (int i = 1; i <= k; i++) c = c * (m + i) / i;
    return fmin(1.0, 2.0 / c);
}

int stats_mwu_min_n(double alpha)
{
    if (!(alpha > 0 && alpha < 1)) return -1;
    for (int n = 1; n < 1000; n++)
        if (stats_mwu_min_p(n, n) < alpha) return n;
    return -1;
}

int stats_mwu_critical(int *c, int na, int nb, double alpha)
{
    int rc = DR_OK;
    double *dist = NULL;
    *c = -1;
    if (na < 1 || nb < 1 || (long long)na * nb > 1000000 || !(alpha > 0 && alpha < 1))
        FAIL(DR_ERR_USAGE, "exact Mann-Whitney U: no critical value for %d and %d values "
             "at alpha %g", na, nb, alpha);
    TRY(mwu_null_counts(&dist, na, nb));
    int umax = na * nb;
    double total = 0.0, upper = 0.0;
    for (int v = 0; v <= umax; v++) total += dist[v];
    *c = umax + 1;   /* none */
    /* the upper tail grows as k falls; the two-sided p of U = k (k >= umax / 2) is
     * 2 P(U >= k) */
    for (int k = umax; 2 * k >= umax; k--) {
        upper += dist[k];
        if (2.0 * upper / total < alpha) *c = k;
        else break;
    }
cleanup:
    free(dist);
    return rc;
}

int stats_mann_whitney(struct stats_test *out, const double *a, int na, const double *b,
                       int nb, enum stats_mwu_method method)
{
    int rc = DR_OK;
    int n = na + nb, ties = 0;
    double rank_sum_a = 0.0, tie_term = 0.0;
    struct ranked *all = NULL;

    out->statistic = out->df = out->p = NAN;
    out->exact = 0;
    if (na < 1 || nb < 1)
        FAIL(DR_ERR_USAGE, "Mann-Whitney U needs one value per sample (got %d and %d)", na, nb);
    all = malloc((size_t)n * sizeof *all);
    CHECK_ALLOC(all, "Mann-Whitney ranks");
    for (int i = 0; i < na; i++) all[i] = (struct ranked){a[i], 1};
    for (int i = 0; i < nb; i++) all[na + i] = (struct ranked){b[i], 0};
    qsort(all, (size_t)n, sizeof *all, cmp_ranked);
    /* mid-ranks: a group of t equal values at 1-based ranks i+1..i+t gets i + (t + 1) / 2 */
    for (int i = 0; i < n;) {
        int t = 1;
        while (i + t < n && all[i + t].value == all[i].value) t++;
        double r = i + (t + 1) / 2.0;
        for (int k = i; k < i + t; k++)
            if (all[k].from_a) rank_sum_a += r;
        if (t > 1) {
            ties = 1;
            tie_term += (double)t * t * t - t;
        }
        i += t;
    }
    double u = rank_sum_a - na * (na + 1) / 2.0;
    out->statistic = u;

    long long pairs = (long long)na * nb;
    if (method == STATS_MWU_EXACT && (ties || pairs > 1000000))
        FAIL(DR_ERR_USAGE, "exact Mann-Whitney U needs untied samples of at most 10^6 pairs");
    if (method == STATS_MWU_EXACT || (method == STATS_MWU_AUTO && !ties && pairs <= 2500)) {
        out->exact = 1;
        TRY(mwu_exact_p(&out->p, u, na, nb));
    } else {
        /* normal approximation: mean na nb / 2, variance with the tie correction,
         * continuity correction 0.5 toward the mean, two-sided at max(U, na nb - U) */
        double mu = pairs / 2.0;
        double var = pairs / 12.0 * ((n + 1) - tie_term / ((double)n * (n - 1)));
        double umax = fmax(u, pairs - u);
        if (!(var > 0)) {
            out->p = NAN;   /* every value equal */
        } else {
            double z = (umax - mu - 0.5) / sqrt(var);
            out->p = fmin(1.0, 2.0 * stats_normal_cdf(-z));
        }
    }
cleanup:
    free(all);
    return rc;
}

/* The sequential method (results/sequential.h) against independent computations: the
 * e-value against a numerical integration of its mixture and against its t-statistic
 * form, the closed-form confidence-sequence edges against bisection on the e-value, the
 * edge cases (n = 0, 1, ties, too few differences to bound the interval). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "results/sequential.h"
#include "results/stats.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define LOG_2PI 1.8378770664093453

/* ---- the e-value by quadrature ----
 * M_n(mu0) = [int int prod_i N(x_i; theta sigma, sigma^2) N(theta; 0, 1/c2) dtheta
 *             dsigma/sigma] / [int prod_i N(x_i; 0, sigma^2) dsigma/sigma], x = d - mu0:
 * the likelihood ratio of the effect theta = mean / sigma, mixed over theta ~ N(0, 1/c2)
 * and over sigma with the right-Haar prior 1/sigma. sigma = e^s makes dsigma/sigma = ds;
 * both integrands are entire in s and theta and decay fast, so the trapezoid rule on a
 * wide grid is exact to rounding. Each likelihood is a product over the data points. */

static double log_sum(const double *l, int m, double step)
{
    double top = -INFINITY;
    for (int i = 0; i < m; i++) top = l[i] > top ? l[i] : top;
    double acc = 0.0;
    for (int i = 0; i < m; i++) acc += exp(l[i] - top);
    return top + log(acc * step);
}

/* log prod_i N(x_i; a, sigma^2) with sigma = e^s. */
static double log_lik(const double *x, int n, double a, double s)
{
    double sigma = exp(s), acc = 0.0;
    for (int i = 0; i < n; i++) {
        double z = (x[i] - a) / sigma;
        acc += -0.5 * LOG_2PI - s - 0.5 * z * z;
    }
    return acc;
}

static double quad_log_e(const double *d, int n, double mu0, double c2)
{
    enum { MAX_N = 64, S_MAX = 20000, T_N = 481 };
    double x[MAX_N], sum = 0.0, sq = 0.0;
    for (int i = 0; i < n; i++) {
        x[i] = d[i] - mu0;
        sum += x[i];
        sq += x[i] * x[i];
    }
    /* where the integrands live: sigma^2 near V / n in the denominator, down to
     * V c2 / (n + c2) / n in the numerator; e^{-n s} decay above */
    double centre = 0.5 * log(sq / n);
    double s_lo = centre - 0.5 * log(1.0 + n / c2) - 8.0, s_hi = centre + 50.0 / n + 8.0;
    double hs = 0.01;
    int ms = (int)((s_hi - s_lo) / hs) + 1;
    if (ms > S_MAX) ms = S_MAX;
    static double num[S_MAX], den[S_MAX];
    double inner[T_N];
    double sd = 1.0 / sqrt(n + c2), ht = 24.0 * sd / (T_N - 1);
    for (int j = 0; j < ms; j++) {
        double s = s_lo + j * hs, sigma = exp(s);
        den[j] = log_lik(x, n, 0.0, s);
        double centre_t = sum / sigma / (n + c2);
        for (int t = 0; t < T_N; t++) {
            double theta = centre_t + (t - (T_N - 1) / 2) * ht;
            inner[t] = log_lik(x, n, theta * sigma, s) + 0.5 * log(c2) - 0.5 * LOG_2PI -
                       0.5 * c2 * theta * theta;
        }
        num[j] = log_sum(inner, T_N, ht);
    }
    return log_sum(num, ms, hs) - log_sum(den, ms, hs);
}

/* The t-statistic form: (1 + n g)^{-1/2} ((1 + t^2/nu) / (1 + t^2/(nu (1 + n g))))^{n/2},
 * g = 1 / c2, nu = n - 1, t the one-sample t statistic of d against mu0. */
static double t_form_log_e(const double *d, int n, double mu0, double c2)
{
    double m = 0.0;
    for (int i = 0; i < n; i++) m += d[i];
    m /= n;
    double ss = 0.0;
    for (int i = 0; i < n; i++) ss += (d[i] - m) * (d[i] - m);
    double nu = n - 1, sdev = sqrt(ss / nu), t = (m - mu0) / (sdev / sqrt((double)n));
    double g = 1.0 / c2, t2 = t * t / nu;
    return -0.5 * log(1.0 + n * g) + 0.5 * n * (log1p(t2) - log1p(t2 / (1.0 + n * g)));
}

static const double SET_A[] = {0.3, -0.1, 0.7, 0.2, 0.5};
static const double SET_B[] = {0.0012, -0.0005, 0.0021, 0.0009, 0.0017, -0.0002,
                               0.0014, 0.0030, 0.0006, 0.0011};
static const double SET_C[] = {1.0, 3.0};
static const double SET_D[] = {94.1, 93.8, 94.4, 94.0, 93.6, 94.3, 94.2, 93.9,
                               94.5, 93.7, 94.0, 94.1, 93.95, 94.25, 93.85, 94.05,
                               94.6, 93.5, 94.15, 93.9};

struct data_set {
    const double *d;
    int n;
};

static const struct data_set SETS[] = {
    {SET_A, COUNT(SET_A)}, {SET_B, COUNT(SET_B)}, {SET_C, COUNT(SET_C)},
    {SET_D, COUNT(SET_D)},
};

static void test_log_e_independent(void)
{
    static const double c2s[] = {1.0, 4.0, 0.25};
    for (int k = 0; k < COUNT(SETS); k++) {
        const struct data_set *s = &SETS[k];
        double m = 0.0;
        for (int i = 0; i < s->n; i++) m += s->d[i];
        m /= s->n;
        double spread = fabs(s->d[0] - s->d[1]) + 1e-12;
        double mu0s[] = {0.0, m, m + 0.5 * spread, m - 2.0 * spread};
        for (int c = 0; c < COUNT(c2s); c++)
            for (int j = 0; j < COUNT(mu0s); j++) {
                double got = seq_log_e(s->d, s->n, mu0s[j], c2s[c]);
                double quad = quad_log_e(s->d, s->n, mu0s[j], c2s[c]);
                double tf = t_form_log_e(s->d, s->n, mu0s[j], c2s[c]);
                CHECK_NEAR(got, quad, 1e-9);
                CHECK_NEAR(got, tf, 1e-9);
                if (fabs(got - quad) > 1e-9 || fabs(got - tf) > 1e-9)
                    printf("  set %d c2 %g mu0 %g: seq %.15g quad %.15g t %.15g\n", k,
                           c2s[c], mu0s[j], got, quad, tf);
            }
    }
    /* M_1 = 1 for any datum and mu0: the first difference only sets the scale; the
     * quadrature says so too, independently of the convention in seq_log_e */
    static const double one[] = {0.7};
    CHECK(seq_log_e(one, 1, 0.0, 1.0) == 0.0);
    CHECK_NEAR(quad_log_e(one, 1, 0.0, 1.0), 0.0, 1e-9);
    CHECK_NEAR(quad_log_e(one, 1, -3.0, 4.0), 0.0, 1e-9);
    CHECK(seq_log_e(NULL, 0, 0.0, 1.0) == 0.0);
    /* scale and location invariance */
    double scaled[COUNT(SET_A)];
    for (int i = 0; i < COUNT(SET_A); i++) scaled[i] = 1e-4 * SET_A[i] + 7.0;
    CHECK_NEAR(seq_log_e(scaled, COUNT(SET_A), 1e-4 * 0.1 + 7.0, 1.0),
               seq_log_e(SET_A, COUNT(SET_A), 0.1, 1.0), 1e-8);
}

/* The largest value log M_n can take: (n - 1)/2 log(1 + n / c2), reached as |mean - mu0|
 * / sd grows without bound. */
static double log_e_max(int n, double c2)
{
    return 0.5 * (n - 1) * log1p(n / c2);
}

/* mu0 above the mean where log M_n(mu0) = log(1/alpha), by bisection on seq_log_e. */
static double bisect_edge(const double *d, int n, double m, double alpha, double dir)
{
    double target = -log(alpha), lo = 0.0, hi = 1e-6;
    while (seq_log_e(d, n, m + dir * hi, SEQ_MIXTURE_C2) < target) hi *= 2.0;
    for (int it = 0; it < 400 && hi - lo > 1e-17 * hi; it++) {
        double mid = 0.5 * (lo + hi);
        if (seq_log_e(d, n, m + dir * mid, SEQ_MIXTURE_C2) < target) lo = mid;
        else hi = mid;
    }
    return m + dir * 0.5 * (lo + hi);
}

static void test_edges_bisection(void)
{
    static const double alphas[] = {0.05, 0.01, 0.2, 0.001};
    for (int k = 0; k < COUNT(SETS); k++)
        for (int a = 0; a < COUNT(alphas); a++) {
            const struct data_set *s = &SETS[k];
            struct seq_look look;
            CHECK(seq_look_at(&look, s->d, s->n, alphas[a], 0.0) == DR_OK);
            int bounded = log_e_max(s->n, SEQ_MIXTURE_C2) > -log(alphas[a]);
            CHECK(bounded == isfinite(look.cs_hi));
            CHECK(bounded == isfinite(look.cs_lo));
            if (!bounded) continue;
            double h = look.cs_hi - look.estimate;
            double hi = bisect_edge(s->d, s->n, look.estimate, alphas[a], 1.0);
            double lo = bisect_edge(s->d, s->n, look.estimate, alphas[a], -1.0);
            CHECK(fabs(look.cs_hi - hi) <= 1e-9 * h);
            CHECK(fabs(look.cs_lo - lo) <= 1e-9 * h);
            /* the e-value at the edges is 1 / alpha */
            CHECK_NEAR(seq_log_e(s->d, s->n, look.cs_hi, SEQ_MIXTURE_C2), -log(alphas[a]),
                       1e-9);
            CHECK_NEAR(seq_log_e(s->d, s->n, look.cs_lo, SEQ_MIXTURE_C2), -log(alphas[a]),
                       1e-9);
            /* and inside it is below */
            CHECK(seq_log_e(s->d, s->n, look.estimate + 0.999 * h, SEQ_MIXTURE_C2) <
                  -log(alphas[a]));
        }
}

/* Too few differences: the interval is unbounded exactly while the largest possible
 * e-value is below 1/alpha. At alpha = 0.05 that is n <= 4. */
static void test_unbounded_small_n(void)
{
    static const double alphas[] = {0.05, 0.01, 0.001, 0.3};
    /* a strong effect: all differences near 10 with sd about 0.1 */
    double d[16];
    for (int i = 0; i < 16; i++) d[i] = 10.0 + 0.1 * ((i * 7) % 5 - 2);
    for (int a = 0; a < COUNT(alphas); a++)
        for (int n = 1; n <= 16; n++) {
            struct seq_look look;
            CHECK(seq_look_at(&look, d, n, alphas[a], 1.0) == DR_OK);
            int bounded = log_e_max(n, SEQ_MIXTURE_C2) > -log(alphas[a]);
            CHECK(isfinite(look.cs_lo) == bounded && isfinite(look.cs_hi) == bounded);
            if (!bounded) {
                CHECK(isinf(look.cs_lo) && look.cs_lo < 0.0);
                CHECK(isinf(look.cs_hi) && look.cs_hi > 0.0);
                CHECK(look.decision == SEQ_UNDECIDED);
                /* no mu0 reaches 1/alpha, however far */
                CHECK(seq_log_e(d, n, -1e9, SEQ_MIXTURE_C2) < -log(alphas[a]));
            }
        }
    struct seq_look look;
    CHECK(seq_look_at(&look, d, 4, 0.05, 1.0) == DR_OK && isinf(look.cs_hi));
    CHECK(seq_look_at(&look, d, 5, 0.05, 1.0) == DR_OK && isfinite(look.cs_hi));
    CHECK(look.decision == SEQ_DIFFERENT);
    /* the supremum: log M_n -> (n - 1)/2 log(1 + n / c2) as mu0 moves away */
    for (int n = 2; n <= 16; n++)
        CHECK_NEAR(seq_log_e(d, n, -1e9, SEQ_MIXTURE_C2), log_e_max(n, SEQ_MIXTURE_C2),
                   1e-9);
}

static void test_ties_and_empty(void)
{
    /* all differences equal and non-zero: every other mu0 is at the largest e-value */
    double tie[8];
    for (int i = 0; i < 8; i++) tie[i] = 0.25;
    CHECK_NEAR(seq_log_e(tie, 8, 0.0, SEQ_MIXTURE_C2), log_e_max(8, SEQ_MIXTURE_C2), 1e-12);
    CHECK(seq_log_e(tie, 8, 0.25, SEQ_MIXTURE_C2) == 0.0);
    struct seq_look look;
    CHECK(seq_look_at(&look, tie, 8, 0.05, 0.1) == DR_OK);
    CHECK_NEAR(look.cs_lo, 0.25, 1e-12);
    CHECK_NEAR(look.cs_hi, 0.25, 1e-12);
    CHECK(look.decision == SEQ_DIFFERENT);
    CHECK(seq_look_at(&look, tie, 4, 0.05, 0.1) == DR_OK);
    CHECK(look.decision == SEQ_UNDECIDED && isinf(look.cs_hi));
    /* all zero: the interval is the point 0, equivalent for any positive margin */
    double zero[6] = {0};
    CHECK(seq_log_e(zero, 6, 0.0, SEQ_MIXTURE_C2) == 0.0);
    CHECK(seq_look_at(&look, zero, 6, 0.05, 0.01) == DR_OK);
    CHECK(look.cs_lo == 0.0 && look.cs_hi == 0.0 && look.decision == SEQ_EQUIVALENT);
    CHECK(seq_look_at(&look, zero, 6, 0.05, 0.0) == DR_OK);
    CHECK(look.decision == SEQ_UNDECIDED);
    /* n = 0 */
    CHECK(seq_look_at(&look, NULL, 0, 0.05, 0.1) == DR_OK);
    CHECK(look.n == 0 && isnan(look.estimate) && isinf(look.cs_lo) && isinf(look.cs_hi));
    CHECK(look.log_e == 0.0 && look.decision == SEQ_UNDECIDED);
    /* bad arguments */
    CHECK(seq_look_at(&look, tie, 8, 0.0, 0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, tie, 8, 1.0, 0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, tie, 8, NAN, 0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, tie, 8, 0.05, -0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, tie, -1, 0.05, 0.1) == DR_ERR_USAGE);
    CHECK(strcmp(seq_decision_name(SEQ_DIFFERENT), "different") == 0);
    CHECK(strcmp(seq_decision_name(SEQ_EQUIVALENT), "equivalent") == 0);
    CHECK(strcmp(seq_decision_name(SEQ_UNDECIDED), "undecided") == 0);
}

/* The decision follows the interval: DIFFERENT when it excludes 0, EQUIVALENT when it
 * lies inside (-delta, delta). */
static void test_decisions(void)
{
    struct seq_look look;
    CHECK(seq_look_at(&look, SET_D, COUNT(SET_D), 0.05, 0.0) == DR_OK);
    CHECK(look.decision == SEQ_DIFFERENT && look.cs_lo > 0.0);
    double centred[COUNT(SET_D)];
    for (int i = 0; i < COUNT(SET_D); i++) centred[i] = SET_D[i] - 94.0;
    CHECK(seq_look_at(&look, centred, COUNT(SET_D), 0.05, 0.0) == DR_OK);
    CHECK(look.cs_lo < 0.0 && look.cs_hi > 0.0 && look.decision == SEQ_UNDECIDED);
    double wide = 1.01 * fmax(-look.cs_lo, look.cs_hi);
    CHECK(seq_look_at(&look, centred, COUNT(SET_D), 0.05, wide) == DR_OK);
    CHECK(look.decision == SEQ_EQUIVALENT);
    CHECK(seq_look_at(&look, centred, COUNT(SET_D), 0.05, 0.5 * wide) == DR_OK);
    CHECK(look.decision == SEQ_UNDECIDED);
    struct seq_design design = {.alpha = 0.05, .delta = 0.1, .round = 2, .max_seeds = 10,
                                .n_compared = 4};
    CHECK_NEAR(seq_alpha_each(&design), 0.0125, 1e-15);
}

int main(void)
{
    test_log_e_independent();
    test_edges_bisection();
    test_unbounded_small_n();
    test_ties_and_empty();
    test_decisions();
    return check_finish("sequential");
}

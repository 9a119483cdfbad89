/* The sequential method (results/sequential.h) against independent computations: the
 * e-value against a numerical integration of its mixture and against its t-statistic
 * form, the closed-form confidence-sequence edges against bisection on the e-value, the
 * edge cases (n = 0, 1, ties, too few differences to bound the interval); then the
 * whole procedure by simulation: error rates under the null and on the equivalence
 * margin, seq_simulate against this file's own loop over seq_look_at, power, and a
 * naive t-test repeated after every round as the negative control. Prints the table of
 * simulated operating figures that docs/reports.md quotes. */
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
    /* many differences too: R - 1 and 1 - R k are then small */
    static double many[2000];
    struct own_rng rng = own_seed(7);
    for (int i = 0; i < 2000; i++) many[i] = 0.3 + 2.0 * own_normal(&rng);
    static const int ns[] = {50, 500, 2000};
    for (int k = 0; k < COUNT(ns); k++) {
        struct seq_look look;
        CHECK(seq_look_at(&look, many, ns[k], 0.05, 0.0) == DR_OK);
        double h = look.cs_hi - look.estimate;
        CHECK(fabs(look.cs_hi - bisect_edge(many, ns[k], look.estimate, 0.05, 1.0)) <=
              1e-9 * h);
        CHECK(fabs(look.cs_lo - bisect_edge(many, ns[k], look.estimate, 0.05, -1.0)) <=
              1e-9 * h);
    }
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
    double holed[] = {0.1, NAN, 0.2};
    CHECK(seq_look_at(&look, holed, 3, 0.05, 0.1) == DR_ERR_USAGE);
    holed[1] = INFINITY;
    CHECK(seq_look_at(&look, holed, 3, 0.05, 0.1) == DR_ERR_USAGE);
    CHECK(seq_look_at(&look, holed, 1, 0.05, 0.1) == DR_OK);
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

/* ---- simulation ---- */

/* What this file's loop measured for one design and mu. */
struct own_figures {
    int sims;
    double p_different, p_equivalent, mean_seeds, sd_seeds;
    double p_naive;          /* a fixed-level t-test after every round rejected 0 */
    double p_equiv_ever;     /* the sequence showed EQUIVALENT at some look, stopping or
                                not: an upper bound on the procedure's share */
    double p_naive_equiv;    /* a fixed-level TOST after every round showed equivalence */
    int look_failures;       /* seq_look_at calls that did not return DR_OK */
};

enum { MAX_SEEDS = 200 };

/* Runs the design `sims` times on N(mu, 1) differences: the sequential procedure over
 * seq_look_at (first decisive look, or max_seeds), and on the same sequences the naive
 * procedures that apply a fixed-level test after every round: the two-sided t-test at
 * alpha_each (the first rejection is DIFFERENT) and the TOST at alpha_each (the
 * 1 - 2 alpha_each t-interval inside (-delta, delta) is EQUIVALENT). Every look runs to
 * max_seeds, so the "ever" shares see every look. */
static void own_simulate(struct own_figures *out, const struct seq_design *design,
                         double mu, int sims, uint64_t seed)
{
    double alpha = seq_alpha_each(design);
    double quantile[MAX_SEEDS + 1] = {0}, quantile_tost[MAX_SEEDS + 1] = {0};
    for (int n = 2; n <= design->max_seeds; n++) {
        quantile[n] = stats_t_quantile(1.0 - 0.5 * alpha, n - 1);
        quantile_tost[n] = stats_t_quantile(1.0 - alpha, n - 1);
    }
    struct own_rng rng = own_seed(seed);
    double x[MAX_SEEDS];
    long different = 0, equivalent = 0, naive = 0, equiv_ever = 0, naive_equiv = 0;
    int failures = 0;
    double seeds = 0.0, seeds_sq = 0.0;
    for (int s = 0; s < sims; s++) {
        for (int i = 0; i < design->max_seeds; i++) x[i] = mu + own_normal(&rng);
        int n = 0, stopped = 0, rejected = 0, ever = 0, tost = 0;
        enum seq_decision decision = SEQ_UNDECIDED;
        while (n < design->max_seeds) {
            n += design->round;
            if (n > design->max_seeds) n = design->max_seeds;
            struct seq_look look;
            failures += seq_look_at(&look, x, n, alpha, design->delta) != DR_OK;
            if (!stopped && look.decision != SEQ_UNDECIDED) {
                decision = look.decision;
                stopped = n;
            }
            ever |= look.decision == SEQ_EQUIVALENT;
            if (n >= 2) {
                double m = 0.0, q = 0.0;
                for (int i = 0; i < n; i++) m += x[i];
                m /= n;
                for (int i = 0; i < n; i++) q += (x[i] - m) * (x[i] - m);
                double se = sqrt(q / (n - 1) / n);
                rejected |= fabs(m / se) > quantile[n];
                tost |= -design->delta < m - quantile_tost[n] * se &&
                        m + quantile_tost[n] * se < design->delta;
            }
        }
        if (!stopped) stopped = design->max_seeds;
        different += decision == SEQ_DIFFERENT;
        equivalent += decision == SEQ_EQUIVALENT;
        naive += rejected;
        equiv_ever += ever;
        naive_equiv += tost;
        seeds += stopped;
        seeds_sq += (double)stopped * stopped;
    }
    out->sims = sims;
    out->p_different = (double)different / sims;
    out->p_equivalent = (double)equivalent / sims;
    out->p_naive = (double)naive / sims;
    out->p_equiv_ever = (double)equiv_ever / sims;
    out->p_naive_equiv = (double)naive_equiv / sims;
    out->look_failures = failures;
    out->mean_seeds = seeds / sims;
    out->sd_seeds = sqrt(fmax(seeds_sq / sims - out->mean_seeds * out->mean_seeds, 0.0));
}

/* The binomial standard error of a rate p estimated from `sims` sequences. */
static double rate_se(double p, int sims)
{
    return sqrt(p * (1.0 - p) / sims);
}

static void print_header(void)
{
    printf("%-6s %-7s %5s %4s %5s %5s %6s %8s %8s %8s %7s %8s %8s\n", "alpha", "compare",
           "round", "max", "delta", "mu", "sims", "differ", "equiv", "undecid", "seeds",
           "eq-ever", "naive");
}

/* One row of the table: seq_simulate's figures, then (NaN: "-") the share of this
 * file's sequences that showed EQUIVALENT at any look and the naive procedure's share. */
static void print_row(const struct seq_design *d, double mu, const struct seq_operating *o,
                      double ever, double naive)
{
    printf("%-6g %-7d %5d %4d %5g %5g %6d %8.4f %8.4f %8.4f %7.2f", d->alpha, d->n_compared,
           d->round, d->max_seeds, d->delta, mu, o->sims, o->p_different, o->p_equivalent,
           o->p_undecided, o->mean_seeds);
    if (isnan(ever)) printf(" %8s", "-");
    else printf(" %8.4f", ever);
    if (isnan(naive)) printf(" %8s\n", "-");
    else printf(" %8.4f\n", naive);
}

enum { SIMS_NULL = 4000, SIMS_POWER = 2000 };

/* Under the null the share of DIFFERENT is at most alpha (plus 3 standard errors of the
 * simulation), for seq_simulate and for this file's loop; the naive repeated t-test on
 * the same sequences exceeds it. */
static void test_null_error(void)
{
    static const double alphas[] = {0.05, 0.01};
    static const int rounds[] = {1, 5};
    static const int maxes[] = {20, 100};
    uint64_t seed = 1000;
    for (int a = 0; a < COUNT(alphas); a++)
        for (int r = 0; r < COUNT(rounds); r++)
            for (int m = 0; m < COUNT(maxes); m++) {
                struct seq_design d = {.alpha = alphas[a], .delta = 0.0, .round = rounds[r],
                                       .max_seeds = maxes[m], .n_compared = 1};
                struct seq_operating o;
                struct own_figures own;
                CHECK(seq_simulate(&o, &d, 0.0, 1.0, SIMS_NULL, seed++) == DR_OK);
                own_simulate(&own, &d, 0.0, SIMS_NULL, seed++);
                double bound = d.alpha + 3.0 * rate_se(d.alpha, SIMS_NULL);
                CHECK(o.p_different <= bound);
                CHECK(own.p_different <= bound);
                CHECK(own.p_naive > bound);
                CHECK(own.look_failures == 0);
                print_row(&d, 0.0, &o, NAN, own.p_naive);
            }
    /* Bonferroni: three comparisons, each at alpha / 3 */
    struct seq_design d = {.alpha = 0.05, .delta = 0.0, .round = 1, .max_seeds = 100,
                           .n_compared = 3};
    struct seq_operating o;
    struct own_figures own;
    CHECK(seq_simulate(&o, &d, 0.0, 1.0, SIMS_NULL, seed++) == DR_OK);
    own_simulate(&own, &d, 0.0, SIMS_NULL, seed++);
    double bound = d.alpha / 3 + 3.0 * rate_se(d.alpha / 3, SIMS_NULL);
    CHECK(o.p_different <= bound);
    CHECK(own.p_different <= bound);
    CHECK(own.p_naive > bound);
    CHECK(own.look_failures == 0);
    print_row(&d, 0.0, &o, NAN, own.p_naive);
}

/* On the margin (|mu| = delta) the share of EQUIVALENT is at most alpha: for
 * seq_simulate's procedure, and for this file's loop even counting every look (also
 * after a DIFFERENT would have stopped it); the naive TOST after every round exceeds
 * it. Well inside the margin equivalence is shown often, so the check is not vacuous. */
static void test_equivalence_error(void)
{
    struct case_ {
        int round, max_seeds;
        double delta, mu;
    } cases[] = {
        {1, 200, 0.5, 0.5}, {5, 200, 0.5, -0.5}, {5, 100, 1.0, 1.0}, {1, 100, 1.0, -1.0},
    };
    uint64_t seed = 2000;
    for (int c = 0; c < COUNT(cases); c++) {
        struct seq_design d = {.alpha = 0.05, .delta = cases[c].delta,
                               .round = cases[c].round, .max_seeds = cases[c].max_seeds,
                               .n_compared = 1};
        struct seq_operating o;
        struct own_figures own;
        CHECK(seq_simulate(&o, &d, cases[c].mu, 1.0, SIMS_NULL, seed++) == DR_OK);
        own_simulate(&own, &d, cases[c].mu, SIMS_NULL, seed++);
        double bound = d.alpha + 3.0 * rate_se(d.alpha, SIMS_NULL);
        CHECK(o.p_equivalent <= bound);
        CHECK(own.p_equiv_ever <= bound);
        CHECK(own.p_naive_equiv > bound);
        CHECK(own.look_failures == 0);
        print_row(&d, cases[c].mu, &o, own.p_equiv_ever, own.p_naive_equiv);
    }
    struct seq_design d = {.alpha = 0.05, .delta = 0.5, .round = 5, .max_seeds = 200,
                           .n_compared = 1};
    struct seq_operating o;
    CHECK(seq_simulate(&o, &d, 0.0, 1.0, SIMS_POWER, seed++) == DR_OK);
    CHECK(o.p_equivalent > 0.5);
    print_row(&d, 0.0, &o, NAN, NAN);
}

/* seq_simulate and this file's own loop over seq_look_at (its own random stream) agree
 * within their combined simulation error. */
static void test_simulate_matches_loop(void)
{
    struct case_ {
        struct seq_design d;
        double mu, sigma;
    } cases[] = {
        {{.alpha = 0.05, .delta = 0.3, .round = 5, .max_seeds = 50, .n_compared = 1}, 0.5,
         1.0},
        {{.alpha = 0.05, .delta = 0.6, .round = 1, .max_seeds = 100, .n_compared = 2}, 0.1,
         1.0},
        {{.alpha = 0.01, .delta = 0.0, .round = 3, .max_seeds = 40, .n_compared = 1}, 0.7,
         1.0},
    };
    uint64_t seed = 3000;
    for (int c = 0; c < COUNT(cases); c++) {
        const struct seq_design *d = &cases[c].d;
        struct seq_operating o;
        struct own_figures own;
        CHECK(seq_simulate(&o, d, cases[c].mu, cases[c].sigma, SIMS_POWER, seed++) ==
              DR_OK);
        own_simulate(&own, d, cases[c].mu, SIMS_POWER, seed++);
        CHECK(own.look_failures == 0);
        /* the pooled rate's standard error, for two samples of SIMS_POWER */
        double se_d =
            sqrt(2.0) * rate_se(0.5 * (o.p_different + own.p_different), SIMS_POWER);
        double se_e =
            sqrt(2.0) * rate_se(0.5 * (o.p_equivalent + own.p_equivalent), SIMS_POWER);
        double se_n = sqrt(2.0) * own.sd_seeds / sqrt((double)SIMS_POWER);
        CHECK(fabs(o.p_different - own.p_different) <= 3.0 * se_d + 1e-12);
        CHECK(fabs(o.p_equivalent - own.p_equivalent) <= 3.0 * se_e + 1e-12);
        CHECK(fabs(o.mean_seeds - own.mean_seeds) <= 3.0 * se_n + 1e-12);
        CHECK_NEAR(o.p_different + o.p_equivalent + o.p_undecided, 1.0, 1e-12);
        printf("alpha %g, %d compared, round %d, max %d, delta %g, mu %g: differ %.4f / "
               "%.4f, equiv %.4f / %.4f, seeds %.2f / %.2f\n",
               d->alpha, d->n_compared, d->round, d->max_seeds, d->delta, cases[c].mu,
               o.p_different, own.p_different, o.p_equivalent, own.p_equivalent,
               o.mean_seeds, own.mean_seeds);
    }
    /* sigma scales out: the method is scale-invariant */
    struct seq_operating a, b;
    CHECK(seq_simulate(&a, &cases[0].d, 0.5, 1.0, 500, 77) == DR_OK);
    struct seq_design scaled = cases[0].d;
    scaled.delta *= 0.01;
    CHECK(seq_simulate(&b, &scaled, 0.005, 0.01, 500, 77) == DR_OK);
    CHECK_NEAR(a.p_different, b.p_different, 1e-12);
    CHECK_NEAR(a.mean_seeds, b.mean_seeds, 1e-12);
}

/* Power rises with the effect and with the number of seeds allowed; an effect of one
 * standard deviation is found almost surely within 50 seeds. */
static void test_power(void)
{
    static const double mus[] = {0.25, 0.5, 1.0};
    static const int maxes[] = {20, 50, 100};
    uint64_t seed = 4000;
    double last = -1.0;
    struct seq_operating o;
    for (int k = 0; k < COUNT(mus); k++) {
        struct seq_design d = {.alpha = 0.05, .delta = 0.0, .round = 5, .max_seeds = 50,
                               .n_compared = 1};
        CHECK(seq_simulate(&o, &d, mus[k], 1.0, SIMS_POWER, seed++) == DR_OK);
        CHECK(o.p_different > last + 3.0 * rate_se(o.p_different, SIMS_POWER));
        last = o.p_different;
        print_row(&d, mus[k], &o, NAN, NAN);
    }
    CHECK(o.p_different >= 0.95);
    last = -1.0;
    for (int m = 0; m < COUNT(maxes); m++) {
        struct seq_design d = {.alpha = 0.05, .delta = 0.0, .round = 5,
                               .max_seeds = maxes[m], .n_compared = 1};
        CHECK(seq_simulate(&o, &d, 0.5, 1.0, SIMS_POWER, seed++) == DR_OK);
        CHECK(o.p_different > last + 3.0 * rate_se(o.p_different, SIMS_POWER));
        last = o.p_different;
        print_row(&d, 0.5, &o, NAN, NAN);
    }
}

/* Same arguments, same figures; another seed, other figures; bad designs refused. */
static void test_simulate_contract(void)
{
    struct seq_design d = {.alpha = 0.05, .delta = 0.2, .round = 4, .max_seeds = 30,
                           .n_compared = 1};
    struct seq_operating a, b, c;
    CHECK(seq_simulate(&a, &d, 0.3, 2.0, 300, 5) == DR_OK);
    CHECK(seq_simulate(&b, &d, 0.3, 2.0, 300, 5) == DR_OK);
    CHECK(seq_simulate(&c, &d, 0.3, 2.0, 300, 6) == DR_OK);
    CHECK(a.sims == 300 && a.p_different == b.p_different && a.mean_seeds == b.mean_seeds);
    CHECK(a.mean_seeds != c.mean_seeds);
    /* max_seeds not a multiple of round: the last round stops at max_seeds */
    CHECK(seq_simulate(&a, &d, 0.0, 1.0, 200, 8) == DR_OK);
    CHECK(a.mean_seeds <= 30.0);
    struct seq_design tiny = {.alpha = 0.05, .delta = 0.0, .round = 3, .max_seeds = 4,
                              .n_compared = 1};
    CHECK(seq_simulate(&a, &tiny, 5.0, 1.0, 50, 9) == DR_OK);
    CHECK(a.p_undecided == 1.0 && a.mean_seeds == 4.0);   /* n <= 4 never decides */
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
    bad.delta = -1.0;
    CHECK(seq_simulate(&a, &bad, 0.0, 1.0, 10, 1) == DR_ERR_USAGE);
    CHECK(seq_simulate(&a, &d, 0.0, 0.0, 10, 1) == DR_ERR_USAGE);
    CHECK(seq_simulate(&a, &d, NAN, 1.0, 10, 1) == DR_ERR_USAGE);
    CHECK(seq_simulate(&a, &d, 0.0, 1.0, 0, 1) == DR_ERR_USAGE);
    CHECK(seq_design_check(&d) == DR_OK);
}

/* The price of looking at will: at a fixed n the confidence sequence is wider than the
 * fixed-n t-interval at the same level (which is valid at that n only). Printed in
 * units of the sample standard deviation of the differences. */
static void test_width_against_t(void)
{
    static const int ns[] = {5, 6, 8, 10, 20, 50, 100};
    double d[100];
    struct own_rng rng = own_seed(99);
    for (int i = 0; i < 100; i++) d[i] = own_normal(&rng);
    printf("Half-width at alpha 0.05 in sample standard deviations of the differences:\n");
    printf("%5s %10s %10s\n", "n", "sequence", "t (fixed)");
    for (int k = 0; k < COUNT(ns); k++) {
        int n = ns[k];
        struct seq_look look;
        CHECK(seq_look_at(&look, d, n, 0.05, 0.0) == DR_OK);
        double q = 0.0;
        for (int i = 0; i < n; i++) q += (d[i] - look.estimate) * (d[i] - look.estimate);
        double sd = sqrt(q / (n - 1));
        double cs = (look.cs_hi - look.estimate) / sd;
        double t = stats_t_quantile(0.975, n - 1) / sqrt((double)n);
        CHECK(cs > t);
        printf("%5d %10.3f %10.3f\n", n, cs, t);
    }
}

int main(void)
{
    test_log_e_independent();
    test_edges_bisection();
    test_unbounded_small_n();
    test_ties_and_empty();
    test_decisions();
    test_simulate_contract();
    test_width_against_t();
    printf("Simulated operating figures of seq_simulate (differences N(mu, 1); differ, "
           "equiv, undecid:\nshares of the sequences by how they stopped; seeds: mean "
           "seeds per experiment at the\nstop; eq-ever: share of this test's own sequences "
           "showing EQUIVALENT at any look; naive:\non the same sequences, a fixed-level "
           "t-test (mu = 0 rows) or TOST (mu = delta rows) after\nevery round):\n");
    print_header();
    test_null_error();
    test_equivalence_error();
    test_power();
    printf("seq_simulate / this test's own loop over seq_look_at (%d sequences each):\n",
           SIMS_POWER);
    test_simulate_matches_loop();
    return check_finish("sequential");
}

/* Comparisons that may be looked at after every round of seeds without inflating their
 * error: an anytime-valid confidence sequence for the mean of paired differences of
 * Gaussian observations with unknown variance (the scale-invariant Gaussian-mixture test
 * martingale of Wang & Ramdas 2023, a variant of Lai 1976), the decision it supports at
 * each look, and a simulation of a whole sequential design. Pure functions on double
 * arrays; no SQL, no I/O. docs/reports.md explains the method and when to use it. */
#ifndef DAWNRUN_SEQUENTIAL_H
#define DAWNRUN_SEQUENTIAL_H

#include <stdint.h>

#include "../base/status.h"

/* c^2 of the mixture N(0, 1 / c^2) over the standardised effect (mean / sd) of the
 * differences: 1, i.e. effects of about one standard deviation weigh most. Part of the
 * method: a batch records it in its method text. */
#define SEQ_MIXTURE_C2 1.0

/* The method as recorded with a batch and printed by the report. */
#define SEQ_METHOD_NAME                                                                    \
    "anytime-valid t confidence sequence (Gaussian mixture c^2 = 1, right-Haar scale; "    \
    "Wang & Ramdas 2023, after Lai 1976), differences paired by seed rank, Bonferroni "    \
    "over the comparisons"

enum seq_decision {
    SEQ_UNDECIDED = 0,   /* neither shown yet */
    SEQ_DIFFERENT,       /* the confidence sequence excludes 0: a difference is shown */
    SEQ_EQUIVALENT       /* it lies inside (-delta, delta): equivalence is shown */
};

/* "undecided", "different", "equivalent" (the database's words). */
const char *seq_decision_name(enum seq_decision d);

/* Log of the e-value (the test martingale) against "the mean of d is mu0" after the n
 * differences d[0..n-1] (n >= 0; 0 for n <= 1):
 *   log M_n = 0.5 log(c2 / (c2 + n)) + (n / 2) log(V / (V - S^2 / (n + c2)))
 * with x = d - mu0, S = sum x, V = sum x^2. Under the null, P(M_n >= 1/alpha for some n)
 * <= alpha (Ville's inequality). */
double seq_log_e(const double *d, int n, double mu0, double c2);

/* One look at n paired differences. */
struct seq_look {
    int n;
    double estimate;        /* mean of the differences (NaN when n = 0) */
    double cs_lo, cs_hi;    /* the level 1 - alpha confidence sequence at n: every mu0
                               whose e-value is below 1 / alpha; -inf / +inf while it is
                               unbounded (too few differences to bound it) */
    double log_e;           /* seq_log_e(d, n, 0, SEQ_MIXTURE_C2) */
    enum seq_decision decision;  /* DIFFERENT when 0 is outside [cs_lo, cs_hi], else
                                    EQUIVALENT when -delta < cs_lo and cs_hi < delta,
                                    else UNDECIDED */
};

/* Fills out for the differences d[0..n-1] at error level alpha (0 < alpha < 1) and
 * equivalence margin delta (>= 0; 0 never shows equivalence). The interval is
 * estimate -+ h with h in closed form (log M_n grows monotonically in |mu0 - estimate|).
 * DR_ERR_USAGE (nothing printed) for a bad alpha or delta, n < 0, or a difference that
 * is not finite (a diverged run has no accuracy: leave its pair out). */
int seq_look_at(struct seq_look *out, const double *d, int n, double alpha, double delta);

/* A sequential design: rounds of `round` seeds per experiment, looks after each round,
 * stop when every comparison is decided or at max_seeds. n_compared comparisons (the
 * members other than the baseline) share alpha equally (Bonferroni). */
struct seq_design {
    double alpha;           /* error level of the whole batch */
    double delta;           /* equivalence margin, in the units of the differences */
    int round;              /* >= 1 */
    int max_seeds;          /* >= round */
    int n_compared;         /* >= 1 */
};

/* DR_OK when the design is usable: 0 < alpha < 1, 0 <= delta < inf, round >= 1,
 * max_seeds >= round, n_compared >= 1; DR_ERR_USAGE otherwise (nothing printed). */
int seq_design_check(const struct seq_design *d);

/* alpha / n_compared: the level each comparison's confidence sequence is built at. */
double seq_alpha_each(const struct seq_design *d);

/* What a design does for one comparison whose differences are N(mu, sigma^2), estimated
 * by simulating `sims` sequences (counter-based random numbers from `seed`: the same
 * arguments give the same figures on every run and machine, as far as the C library's
 * log, cos and exp agree to the last bit). Each sequence runs the scheduler's
 * procedure: add `round` seeds (the last round stops at max_seeds), look with
 * seq_look_at at the level seq_alpha_each(d), stop at the first look that decides or
 * when max_seeds differences are in. Difference i of sequence s is
 * mu + sigma * z(seed, s, i), z a standard normal (splitmix64 chain + Box-Muller). */
struct seq_operating {
    int sims;
    double p_different;     /* share of sequences that stopped with DIFFERENT */
    double p_equivalent;    /* ... with EQUIVALENT */
    double p_undecided;     /* ... reached max_seeds undecided */
    double mean_seeds;      /* mean seeds per experiment when it stopped */
};

/* Fills out. DR_ERR_USAGE (nothing printed) for a design seq_design_check refuses, a
 * non-finite mu, sigma <= 0 or infinite, sims < 1; DR_ERR_NOMEM. */
int seq_simulate(struct seq_operating *out, const struct seq_design *d, double mu,
                 double sigma, int sims, uint64_t seed);

#endif

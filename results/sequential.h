/* Comparisons that may be looked at after every round of seeds without inflating their
 * error, whatever the distribution of the runs: an anytime-valid confidence sequence for
 * the mean of paired differences of accuracies, which lie in [-1, 1] (the betting
 * confidence sequence of Waudby-Smith & Ramdas 2024: a hedged capital process with
 * predictable plug-in bets), the decision it supports at each look, and a simulation of a
 * whole sequential design. Pure functions on double arrays; no SQL, no I/O.
 * docs/reports.md explains the method and when to use it. */
#ifndef DAWNRUN_SEQUENTIAL_H
#define DAWNRUN_SEQUENTIAL_H

#include <stdint.h>

#include "../base/status.h"

/* The truncation of the bets: a bet on the mean m of values in [0, 1] risks at most this
 * share of the capital on one value (lambda <= SEQ_BET_CAP / m upward, / (1 - m)
 * downward). 3/4, one of the two values Waudby-Smith & Ramdas recommend. Part of the
 * method: a batch records it in its method text. */
#define SEQ_BET_CAP 0.75

/* The method as recorded with a batch and printed by the report. */
#define SEQ_METHOD_NAME                                                                    \
    "betting confidence sequence for the mean difference (bounded in [-1, 1], no "         \
    "distributional assumption; hedged capital, predictable plug-in bets truncated at "    \
    "3/4; Waudby-Smith & Ramdas 2024), differences paired by seed rank, Bonferroni over "  \
    "the comparisons"

enum seq_decision {
    SEQ_UNDECIDED = 0,   /* neither shown yet */
    SEQ_DIFFERENT,       /* the confidence sequence excludes 0: a difference is shown */
    SEQ_EQUIVALENT       /* it lies inside (-delta, delta): equivalence is shown */
};

/* "undecided", "different", "equivalent" (the database's words). */
const char *seq_decision_name(enum seq_decision d);

/* Log of the e-value against "the mean of d is mu0" (-1 < mu0 < 1) after the n
 * differences d[0..n-1] (each in [-1, 1]; n >= 0, -log 2 for n = 0), with the bets of a
 * confidence sequence at level 1 - alpha: the hedged capital
 *   K = max(K+, K-) / 2,  K+- = prod_t (1 +- lambda+-_t (x_t - m)),
 * x = (d + 1) / 2 and m = (mu0 + 1) / 2 in [0, 1], lambda+_t = min(l_t, SEQ_BET_CAP / m),
 * lambda-_t = min(l_t, SEQ_BET_CAP / (1 - m)), l_t the predictable plug-in bet
 *   l_t = sqrt(2 log(2 / alpha) / (v_{t-1} t log(1 + t))),
 *   v_t = (1/4 + sum_{i<=t} (x_i - a_i)^2) / (t + 1),  a_t = (1/2 + sum_{i<=t} x_i) / (t + 1).
 * Whatever the distribution of the differences, under the null P(K >= 1/alpha for some n)
 * <= alpha (Ville's inequality). NaN for a bad argument. */
double seq_log_e(const double *d, int n, double mu0, double alpha);

/* One look at n paired differences. */
struct seq_look {
    int n;
    double estimate;        /* mean of the differences (NaN when n = 0) */
    double cs_lo, cs_hi;    /* the level 1 - alpha confidence sequence for the mean
                               difference at n: every mu0 in [-1, 1] whose e-value is
                               below 1 / alpha, to 1e-12 (the ends themselves are
                               excluded values, so [cs_lo, cs_hi] holds the whole set);
                               never of zero width; [-1, 1] for n = 0 */
    double log_e;           /* seq_log_e(d, n, 0, alpha): the evidence against no
                               difference */
    enum seq_decision decision;  /* seq_decision_at: DIFFERENT when 0 is outside the
                                    sequence, else EQUIVALENT when it lies inside
                                    (-delta, delta), else UNDECIDED */
};

/* The decision at one look, from the e-values at three points alone: DIFFERENT when
 * max(K+, K-) at mu0 = 0 reaches 2 / alpha; else EQUIVALENT when delta > 0, K+ at
 * -delta and K- at +delta both reach 2 / alpha (K+ falls and K- rises with mu0, so every
 * mu0 <= -delta and every mu0 >= delta is then excluded); else UNDECIDED. Arguments as
 * seq_look_at's; UNDECIDED for bad ones. */
enum seq_decision seq_decision_at(const double *d, int n, double alpha, double delta);

/* Fills out for the differences d[0..n-1] (each in [-1, 1]: differences of accuracies)
 * at error level alpha (0 < alpha < 1) and equivalence margin delta (0 <= delta < 1; 0
 * never shows equivalence). The ends of the interval are found by bisection on the
 * monotone K+ and K- (an empty set, which has probability at most alpha, is shown as the
 * span between its two ends). DR_ERR_USAGE (nothing printed) for a bad alpha or delta,
 * n < 0, or a difference that is not finite or outside [-1, 1] (a diverged run has no
 * accuracy: leave its pair out). */
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

/* DR_OK when the design is usable: 0 < alpha < 1, 0 <= delta < 1, round >= 1,
 * max_seeds >= round, n_compared >= 1; DR_ERR_USAGE otherwise (nothing printed). */
int seq_design_check(const struct seq_design *d);

/* alpha / n_compared: the level each comparison's confidence sequence is built at. */
double seq_alpha_each(const struct seq_design *d);

/* What a design does for one comparison whose differences are N(mu, sigma^2) cut to
 * [-1, 1], estimated by simulating `sims` sequences (counter-based random numbers from
 * `seed`: the same arguments give the same figures on every run and machine, as far as
 * the C library's log, cos and exp agree to the last bit). Each sequence runs the
 * scheduler's procedure: add `round` seeds (the last round stops at max_seeds), look
 * with seq_decision_at at the level seq_alpha_each(d), stop at the first look that
 * decides or when max_seeds differences are in. Difference i of sequence s is
 * mu + sigma * z(seed, s, i), z a standard normal (splitmix64 chain + Box-Muller), then
 * cut to [-1, 1] (a mean near a bound is then not quite mu). */
struct seq_operating {
    int sims;
    double p_different;     /* share of sequences that stopped with DIFFERENT */
    double p_equivalent;    /* ... with EQUIVALENT */
    double p_undecided;     /* ... reached max_seeds undecided */
    double mean_seeds;      /* mean seeds per experiment when it stopped */
};

/* Fills out. DR_ERR_USAGE (nothing printed) for a design seq_design_check refuses, mu
 * outside [-1, 1], sigma <= 0 or infinite, sims < 1; DR_ERR_NOMEM. */
int seq_simulate(struct seq_operating *out, const struct seq_design *d, double mu,
                 double sigma, int sims, uint64_t seed);

#endif

/* The betting confidence sequence for the mean of paired differences in [-1, 1], the
 * decision at one look, and the simulation of a whole sequential design with its own
 * counter-based normal numbers (results/sequential.h). */
#include "sequential.h"

#include <math.h>
#include <stdlib.h>

const char *seq_decision_name(enum seq_decision d)
{
    switch (d) {
    case SEQ_DIFFERENT: return "different";
    case SEQ_EQUIVALENT: return "equivalent";
    case SEQ_UNDECIDED: break;
    }
    return "undecided";
}

/* ---- the capital process ----
 * Values x = (d + 1) / 2 in [0, 1]; a hypothesised mean mu0 of d is m = (mu0 + 1) / 2.
 * The plug-in bet l_t is predictable: it uses x_1 .. x_{t-1} only. */

/* The running state of one comparison: the statistics the bets come from, and the log
 * capital of the bets up (K+) and down (K-) at up to SEQ_POINTS hypothesised means. */
#define SEQ_POINTS 3

struct seq_run {
    double log_2_alpha;          /* log(2 / alpha) */
    int t;                       /* values seen */
    double sum, ss, v;           /* sum x; sum (x_i - a_i)^2; v_t */
    int points;                  /* hypothesised means followed */
    double m[SEQ_POINTS];        /* in [0, 1] */
    double up[SEQ_POINTS], down[SEQ_POINTS];   /* log K+, log K- */
};

static void run_start(struct seq_run *r, double alpha, const double *mu0, int points)
{
    r->log_2_alpha = log(2.0 / alpha);
    r->t = 0;
    r->sum = r->ss = 0.0;
    r->v = 0.25;
    r->points = points;
    for (int k = 0; k < points; k++) {
        r->m[k] = 0.5 * (mu0[k] + 1.0);
        r->up[k] = r->down[k] = 0.0;
    }
}

/* Bets on the next difference d (in [-1, 1]) at every point, then learns from it. */
static void run_add(struct seq_run *r, double d)
{
    double x = 0.5 * (d + 1.0);
    int t = ++r->t;
    double l = sqrt(2.0 * r->log_2_alpha / (r->v * t * log1p((double)t)));
    for (int k = 0; k < r->points; k++) {
        double m = r->m[k], y = x - m;
        double l_up = m > 0.0 ? fmin(l, SEQ_BET_CAP / m) : l;
        double l_down = m < 1.0 ? fmin(l, SEQ_BET_CAP / (1.0 - m)) : l;
        r->up[k] += log1p(l_up * y);
        r->down[k] += log1p(-l_down * y);
    }
    r->sum += x;
    double a = (0.5 + r->sum) / (t + 1);
    r->ss += (x - a) * (x - a);
    r->v = (0.25 + r->ss) / (t + 1);
}

/* 1 when every argument of a look is usable: 0 < alpha < 1, 0 <= delta < 1, n >= 0 and
 * every difference finite and in [-1, 1]. */
static int look_args_ok(const double *d, int n, double alpha, double delta)
{
    if (!(alpha > 0.0 && alpha < 1.0) || !(delta >= 0.0 && delta < 1.0) || n < 0) return 0;
    for (int i = 0; i < n; i++)
        if (!(d[i] >= -1.0 && d[i] <= 1.0)) return 0;
    return 1;
}

/* The decision of a run whose points are 0, -delta, +delta (in that order). */
static enum seq_decision run_decision(const struct seq_run *r, double delta)
{
    double thr = r->log_2_alpha;   /* max(K+, K-) / 2 >= 1 / alpha */
    if (r->up[0] >= thr || r->down[0] >= thr) return SEQ_DIFFERENT;
    if (delta > 0.0 && r->up[1] >= thr && r->down[2] >= thr) return SEQ_EQUIVALENT;
    return SEQ_UNDECIDED;
}

static void run_decision_start(struct seq_run *r, double alpha, double delta)
{
    double points[SEQ_POINTS] = {0.0, -delta, delta};
    run_start(r, alpha, points, SEQ_POINTS);
}

enum seq_decision seq_decision_at(const double *d, int n, double alpha, double delta)
{
    struct seq_run r;
    if (!look_args_ok(d, n, alpha, delta)) return SEQ_UNDECIDED;
    run_decision_start(&r, alpha, delta);
    for (int i = 0; i < n; i++) run_add(&r, d[i]);
    return run_decision(&r, delta);
}

/* log K+ (up = 1) or log K- (up = 0) at the mean m of x. */
static double log_capital(const double *d, int n, double alpha, double m, int up)
{
    struct seq_run r;
    double mu0 = 2.0 * m - 1.0;
    run_start(&r, alpha, &mu0, 1);
    r.m[0] = m;   /* exactly, not through mu0 */
    for (int i = 0; i < n; i++) run_add(&r, d[i]);
    return up ? r.up[0] : r.down[0];
}

double seq_log_e(const double *d, int n, double mu0, double alpha)
{
    if (!look_args_ok(d, n, alpha, 0.0) || !(mu0 > -1.0 && mu0 < 1.0)) return NAN;
    struct seq_run r;
    run_start(&r, alpha, &mu0, 1);
    for (int i = 0; i < n; i++) run_add(&r, d[i]);
    return fmax(r.up[0], r.down[0]) - log(2.0);
}

#define SEQ_BISECT 64   /* halvings of [0, 1]: the ends to 2^-64 of the mean of x */

/* The end of the sequence on one side, in m: up = 1, the largest m with log K+(m) >=
 * log(2 / alpha) (0 when there is none: K+ falls with m); up = 0, the smallest m with
 * log K-(m) >= log(2 / alpha) (1 when none). Returns an excluded point within 2^-64 of
 * the edge, so that the interval between the two holds every included mean. */
static double edge(const double *d, int n, double alpha, int up)
{
    double thr = log(2.0 / alpha);
    double in = up ? 1.0 : 0.0, out = up ? 0.0 : 1.0;   /* in: K below thr; out: above */
    if (log_capital(d, n, alpha, out, up) < thr) return out;
    for (int i = 0; i < SEQ_BISECT; i++) {
        double mid = 0.5 * (in + out);
        if (log_capital(d, n, alpha, mid, up) >= thr) out = mid;
        else in = mid;
    }
    return out;
}

int seq_look_at(struct seq_look *out, const double *d, int n, double alpha, double delta)
{
    if (!look_args_ok(d, n, alpha, delta)) return DR_ERR_USAGE;
    out->n = n;
    out->estimate = NAN;
    out->cs_lo = -1.0;
    out->cs_hi = 1.0;
    out->log_e = seq_log_e(d, n, 0.0, alpha);
    out->decision = seq_decision_at(d, n, alpha, delta);
    if (n == 0) return DR_OK;
    double s = 0.0;
    for (int i = 0; i < n; i++) s += d[i];
    out->estimate = s / n;
    double lo = edge(d, n, alpha, 1), hi = edge(d, n, alpha, 0);
    if (lo > hi) {   /* empty: the span between the two ends */
        double t = lo;
        lo = hi;
        hi = t;
    }
    if (!(hi > lo)) hi = nextafter(lo, 2.0);   /* never of zero width */
    out->cs_lo = 2.0 * lo - 1.0;
    out->cs_hi = 2.0 * hi - 1.0;
    return DR_OK;
}

double seq_alpha_each(const struct seq_design *d)
{
    return d->alpha / (d->n_compared > 0 ? d->n_compared : 1);
}

/* ---- counter-based normal numbers for seq_simulate ----
 * Draw `draw` of sequence `seq` under `seed` is a pure function of the three: the
 * splitmix64 finaliser applied in a chain over them. Two 53-bit uniforms in (0, 1) give
 * one standard normal by Box-Muller (the cosine branch). */

static uint64_t seq_mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

#define SEQ_GOLDEN 0x9e3779b97f4a7c15ULL

static uint64_t seq_hash(uint64_t seed, uint64_t seq, uint64_t draw)
{
    uint64_t h = seq_mix64(seed + SEQ_GOLDEN);
    h = seq_mix64(h ^ (seq * SEQ_GOLDEN + 0x632be59bd9b4e019ULL));
    return seq_mix64(h ^ (draw * 0xd1b54a32d192ed03ULL + SEQ_GOLDEN));
}

/* A uniform in (0, 1), never 0 or 1. */
static double seq_unit(uint64_t h)
{
    return ((double)(h >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double seq_normal(uint64_t seed, uint64_t seq, uint64_t draw)
{
    double u1 = seq_unit(seq_hash(seed, seq, 2 * draw));
    double u2 = seq_unit(seq_hash(seed, seq, 2 * draw + 1));
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

int seq_design_check(const struct seq_design *d)
{
    if (!(d->alpha > 0.0 && d->alpha < 1.0)) return DR_ERR_USAGE;
    if (!(d->delta >= 0.0 && d->delta < 1.0)) return DR_ERR_USAGE;
    if (d->round < 1 || d->max_seeds < d->round || d->n_compared < 1) return DR_ERR_USAGE;
    return DR_OK;
}

int seq_simulate(struct seq_operating *out, const struct seq_design *d, double mu,
                 double sigma, int sims, uint64_t seed)
{
    if (seq_design_check(d) != DR_OK || !(sigma > 0.0) || isinf(sigma) ||
        !(mu >= -1.0 && mu <= 1.0) || sims < 1)
        return DR_ERR_USAGE;
    double alpha = seq_alpha_each(d);
    long different = 0, equivalent = 0, undecided = 0;
    double seeds = 0.0;
    for (int s = 0; s < sims; s++) {
        int n = 0;
        enum seq_decision decision = SEQ_UNDECIDED;
        struct seq_run r;
        run_decision_start(&r, alpha, d->delta);
        while (n < d->max_seeds) {
            int next = n + d->round < d->max_seeds ? n + d->round : d->max_seeds;
            for (; n < next; n++) {
                double x = mu + sigma * seq_normal(seed, (uint64_t)s, (uint64_t)n);
                run_add(&r, fmin(1.0, fmax(-1.0, x)));
            }
            decision = run_decision(&r, d->delta);
            if (decision != SEQ_UNDECIDED) break;
        }
        if (decision == SEQ_DIFFERENT) different++;
        else if (decision == SEQ_EQUIVALENT) equivalent++;
        else undecided++;
        seeds += n;
    }
    out->sims = sims;
    out->p_different = (double)different / sims;
    out->p_equivalent = (double)equivalent / sims;
    out->p_undecided = (double)undecided / sims;
    out->mean_seeds = seeds / sims;
    return DR_OK;
}

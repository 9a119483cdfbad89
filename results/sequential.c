/* The anytime-valid confidence sequence for the mean of paired differences, the
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

/* Q = sum (d - mean)^2 and the mean, by the two-pass sum (n >= 1). */
static void centered(double *mean, double *q, const double *d, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++) s += d[i];
    double m = s / n, acc = 0.0;
    for (int i = 0; i < n; i++) acc += (d[i] - m) * (d[i] - m);
    *mean = m;
    *q = acc;
}

double seq_log_e(const double *d, int n, double mu0, double c2)
{
    if (n <= 1) return 0.0;
    double m, q;
    centered(&m, &q, d, n);
    /* with delta = m - mu0: V = Q + n delta^2, S^2 = n^2 delta^2 */
    double u = (m - mu0) * (m - mu0);
    double v = q + n * u;
    double k = c2 / (n + c2);
    double w = q + n * u * k;          /* V - S^2 / (n + c2) */
    double head = 0.5 * log(k);
    if (w <= 0.0) return u > 0.0 ? head + 0.5 * n * log(1.0 / k) : 0.0;
    return head + 0.5 * n * log(v / w);
}

int seq_look_at(struct seq_look *out, const double *d, int n, double alpha, double delta)
{
    if (!(alpha > 0.0 && alpha < 1.0) || !(delta >= 0.0) || n < 0) return DR_ERR_USAGE;
    for (int i = 0; i < n; i++)
        if (!isfinite(d[i])) return DR_ERR_USAGE;
    out->n = n;
    out->estimate = NAN;
    out->cs_lo = -INFINITY;
    out->cs_hi = INFINITY;
    out->log_e = seq_log_e(d, n, 0.0, SEQ_MIXTURE_C2);
    out->decision = SEQ_UNDECIDED;
    if (n == 0) return DR_OK;
    double m, q;
    centered(&m, &q, d, n);
    out->estimate = m;
    /* log M_n(mu0) < log(1/alpha)  <=>  ratio V / W < R with
     * R = (alpha^-1 sqrt((n + c2) / c2))^(2/n); in u = (m - mu0)^2 the ratio is
     * (Q + n u) / (Q + n u k), increasing, so the set is |m - mu0| < sqrt(u*) with
     * u* = (R - 1) Q / (n (1 - R k)) when R k < 1, and unbounded otherwise. */
    double c2 = SEQ_MIXTURE_C2;
    double k = c2 / (n + c2);
    double log_r = (2.0 / n) * (-log(alpha) + 0.5 * log((n + c2) / c2));
    double log_rk = log_r + log(k);
    if (log_rk < 0.0) {
        /* R - 1 and 1 - R k by expm1: both are small when n is large */
        double h = sqrt(expm1(log_r) * q / (n * -expm1(log_rk)));
        out->cs_lo = m - h;
        out->cs_hi = m + h;
    }
    if (out->cs_lo > 0.0 || out->cs_hi < 0.0)
        out->decision = SEQ_DIFFERENT;
    else if (-delta < out->cs_lo && out->cs_hi < delta)
        out->decision = SEQ_EQUIVALENT;
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
    if (!(d->delta >= 0.0) || isinf(d->delta)) return DR_ERR_USAGE;
    if (d->round < 1 || d->max_seeds < d->round || d->n_compared < 1) return DR_ERR_USAGE;
    return DR_OK;
}

int seq_simulate(struct seq_operating *out, const struct seq_design *d, double mu,
                 double sigma, int sims, uint64_t seed)
{
    int rc = DR_OK;
    double *x = NULL;
    if (seq_design_check(d) != DR_OK || !(sigma > 0.0) || isinf(sigma) || !isfinite(mu) ||
        sims < 1)
        return DR_ERR_USAGE;
    double alpha = seq_alpha_each(d);
    x = malloc((size_t)d->max_seeds * sizeof *x);
    CHECK_ALLOC(x, "the simulated differences");
    long different = 0, equivalent = 0, undecided = 0;
    double seeds = 0.0;
    for (int s = 0; s < sims; s++) {
        int n = 0;
        enum seq_decision decision = SEQ_UNDECIDED;
        while (n < d->max_seeds) {
            int next = n + d->round < d->max_seeds ? n + d->round : d->max_seeds;
            for (; n < next; n++)
                x[n] = mu + sigma * seq_normal(seed, (uint64_t)s, (uint64_t)n);
            struct seq_look look;
            TRY(seq_look_at(&look, x, n, alpha, d->delta));
            decision = look.decision;
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
cleanup:
    free(x);
    return rc;
}

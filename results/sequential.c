/* The anytime-valid confidence sequence for the mean of paired differences and the
 * decision at one look (results/sequential.h). */
#include "sequential.h"

#include <math.h>

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
    double r = exp(log_r);
    if (r * k < 1.0) {
        double h = sqrt((r - 1.0) * q / (n * (1.0 - r * k)));
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

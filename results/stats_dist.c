/* Distribution functions for the report's statistics: the regularized incomplete beta
 * function, Student's t CDF and quantile, the normal CDF. */
#include "stats.h"

#include <float.h>
#include <math.h>

#define CF_EPS 1e-15
#define CF_TINY 1e-300
#define CF_MAX_TERMS 500

/* Continued fraction of I_x(a, b) without its prefactor, evaluated with the modified
 * Lentz method. Converges quickly for x < (a + 1) / (a + b + 2). The fraction is
 * 1 / (1 + d1 / (1 + d2 / (1 + ...))) with
 *   d(2m+1) = -(a + m)(a + b + m) x / ((a + 2m)(a + 2m + 1))
 *   d(2m)   =  m (b - m) x / ((a + 2m - 1)(a + 2m)). */
static double beta_fraction(double a, double b, double x)
{
    double f = CF_TINY, c = f, d = 0.0;
    for (int j = 1; j <= CF_MAX_TERMS; j++) {
        double num;
        if (j == 1) {
            num = 1.0;
        } else {
            int i = j - 1;   /* index of d_i */
            int m = i / 2;
            if (i % 2 == 1)
                num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1));
            else
                num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m));
        }
        d = 1.0 + num * d;
        if (fabs(d) < CF_TINY) d = CF_TINY;
        c = 1.0 + num / c;
        if (fabs(c) < CF_TINY) c = CF_TINY;
        d = 1.0 / d;
        double delta = c * d;
        f *= delta;
        if (fabs(delta - 1.0) < CF_EPS) break;
    }
    return f;
}

double stats_betainc(double a, double b, double x)
{
    if (!(a > 0) || !(b > 0) || !(x >= 0) || !(x <= 1)) return NAN;
    if (x == 0) return 0.0;
    if (x == 1) return 1.0;
    /* x^a (1-x)^b / B(a, b), in logs */
    double log_front = a * log(x) + b * log1p(-x) - (lgamma(a) + lgamma(b) - lgamma(a + b));
    if (x < (a + 1) / (a + b + 2)) return exp(log_front) / a * beta_fraction(a, b, x);
    /* I_x(a, b) = 1 - I_(1-x)(b, a) */
    return 1.0 - exp(log_front) / b * beta_fraction(b, a, 1.0 - x);
}

/* Upper tail P(T > t) for t >= 0, without the cancellation of 1 - CDF:
 * P(|T| > t) = I_(df / (df + t^2))(df / 2, 1 / 2), and the tail is half of it. */
static double t_upper_tail(double t, double df)
{
    return 0.5 * stats_betainc(0.5 * df, 0.5, df / (df + t * t));
}

double stats_t_cdf(double t, double df)
{
    if (isnan(t) || !(df > 0)) return NAN;
    if (isinf(t)) return t > 0 ? 1.0 : 0.0;
    double tail = t_upper_tail(fabs(t), df);
    return t > 0 ? 1.0 - tail : tail;
}

double stats_t_quantile(double p, double df)
{
    if (!(p > 0) || !(p < 1) || !(df > 0)) return NAN;
    if (p == 0.5) return 0.0;
    if (p < 0.5) return -stats_t_quantile(1.0 - p, df);
    double tail = 1.0 - p, lo = 0.0, hi = 1.0;
    while (t_upper_tail(hi, df) > tail && hi < 1e300) hi *= 2.0;
    /* bisection on the decreasing upper tail; 200 halvings reach double resolution */
    for (int i = 0; i < 200 && hi - lo > DBL_EPSILON * hi; i++) {
        double mid = 0.5 * (lo + hi);
        if (t_upper_tail(mid, df) > tail)
            lo = mid;
        else
            hi = mid;
    }
    return 0.5 * (lo + hi);
}

double stats_normal_cdf(double z)
{
    return 0.5 * erfc(-z / sqrt(2.0));
}

/* Weight initialisation (see engine/core/init.h and kernels/rng.h): uniform from the counter-based
 * RNG, and the dirac (identity) start of a conv. */
#include "init.h"

#include <math.h>

#include "kernels/rng.h"

void init_uniform(float *w /* (count) */, size_t count, uint64_t seed, int param_ordinal,
                  float bound)
{
    struct rng4 r = {{0, 0, 0, 0}};
    for (size_t e = 0; e < count; e++) {
        if (e % 4 == 0)
            r = rng_draw(seed, RNG_STREAM_INIT, (uint32_t)param_ordinal, (uint32_t)(e / 4), 0);
        w[e] = (2.0f * rng_unit(r.v[e % 4]) - 1.0f) * bound;
    }
}

void init_dirac(float *w /* (co, ci, k, k) */, int co, int ci, int k)
{
    const int n = co < ci ? co : ci;
    const size_t kk = (size_t)k * k, filter = (size_t)ci * kk;
    for (int o = 0; o < n; o++) {
        float *f = w + (size_t)o * filter;
        for (size_t e = 0; e < filter; e++) f[e] = 0.0f;
        f[(size_t)o * kk + (size_t)(k / 2) * k + k / 2] = 1.0f;
    }
}

void init_rescale_std(float *w, size_t count, double std)
{
    double sum = 0.0, sq = 0.0;
    if (count < 2) return;
    for (size_t i = 0; i < count; i++) sum += w[i];
    const double mean = sum / (double)count;
    for (size_t i = 0; i < count; i++) sq += ((double)w[i] - mean) * ((double)w[i] - mean);
    const double sd = sqrt(sq / (double)(count - 1));
    if (sd == 0.0) return;
    for (size_t i = 0; i < count; i++) w[i] = (float)((double)w[i] * (std / sd));
}

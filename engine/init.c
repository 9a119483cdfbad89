/* Uniform weight initialisation (see engine/init.h and engine/rng.h). */
#include "init.h"

#include "rng.h"

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

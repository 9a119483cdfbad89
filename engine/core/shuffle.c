/* Epoch permutation of the training set (see kernels/rng.h, RNG_STREAM_SHUFFLE). */
#include "shuffle.h"

#include "kernels/rng.h"

void shuffle_epoch(int32_t *perm /* (n) */, int n, uint64_t seed, int epoch)
{
    for (int i = 0; i < n; i++) perm[i] = i;
    for (int i = n - 1; i > 0; i--) {
        struct rng4 r = rng_draw(seed, RNG_STREAM_SHUFFLE, (uint32_t)epoch, (uint32_t)i, 0);
        uint32_t j = rng_below(r.v[0], (uint32_t)i + 1u);
        int32_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
}

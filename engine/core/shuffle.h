/* The epoch shuffle: which training rows make up each batch of an epoch, a pure
 * function of (seed, epoch) specified in kernels/rng.h (RNG_STREAM_SHUFFLE). */
#ifndef DAWNRUN_SHUFFLE_H
#define DAWNRUN_SHUFFLE_H

#include <stdint.h>

/* Writes into perm the permutation of 0..n-1 for `epoch`: Fisher-Yates over the
 * identity, for i = n-1 down to 1 swapping perm[i] with perm[j], j = rng_below(word 0
 * of rng_draw(seed, RNG_STREAM_SHUFFLE, epoch, i, 0), i + 1). n <= 0 writes nothing. */
void shuffle_epoch(int32_t *perm /* (n) */, int n, uint64_t seed, int epoch);

#endif

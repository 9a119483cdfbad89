/* The one specification of dawnrun's randomness. Every random decision (weight init,
 * epoch shuffle, crop, flip, cutout, dropout mask) is a pure function of (seed, stream,
 * epoch, index), computed with Philox4x32-10 (Salmon et al., "Parallel random numbers: as
 * easy as 1, 2, 3", SC 2011), so that any engine, host or device, reproduces the same
 * draws.
 *
 *   key     = (seed & 0xffffffff, seed >> 32)
 *   counter = (index, epoch, stream, sub)       four 32-bit words, in that order
 *   output  = four 32-bit words
 *
 * Derived draws (all integer arithmetic, no floating-point rounding questions):
 *   rng_below(u, n)  = (u * n) >> 32            uniform integer in [0, n)
 *   rng_unit(u)      = (u >> 8) * 2^-24         uniform float in [0, 1), exact in fp32
 *
 * Streams and how they use the counter:
 *   RNG_STREAM_INIT     index = element / 4, epoch = parameter ordinal in the graph,
 *                       sub = 0; element e takes output word e % 4.
 *   RNG_STREAM_SHUFFLE  Fisher-Yates over the identity permutation 0..n-1: for i = n-1
 *                       down to 1, j = rng_below(word 0 of (i, epoch, SHUFFLE, 0), i + 1),
 *                       swap perm[i] and perm[j].
 *   RNG_STREAM_AUGMENT  index = the image's row in the training set, sub = 0 gives
 *                       (crop_x, crop_y, flip, -), sub = 1 gives (cutout_x, cutout_y, -, -);
 *                       see kernels/augment.h.
 *   RNG_STREAM_DROPOUT  index = element / 4 (the element's canonical NCHW index in the
 *                       layer's output), epoch = the global training step, sub = the
 *                       layer's id in the graph; element e takes output word e % 4 and is
 *                       kept when rng_unit(word) >= p; see kernels/dropout.h.
 * Test vectors: tests/test_rng.c. */
#ifndef DAWNRUN_RNG_H
#define DAWNRUN_RNG_H

#include <stdint.h>

#if defined(__CUDACC__)
#define RNG_FN static inline __host__ __device__
#else
#define RNG_FN static inline
#endif

enum rng_stream {
    RNG_STREAM_INIT = 1,
    RNG_STREAM_SHUFFLE = 2,
    RNG_STREAM_AUGMENT = 3,
    RNG_STREAM_DROPOUT = 4
};

struct rng4 {
    uint32_t v[4];
};

/* Philox4x32-10 of (counter, key). */
RNG_FN struct rng4 rng_philox(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0,
                              uint32_t k1)
{
    for (int round = 0; round < 10; round++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0;
        uint64_t p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t hi0 = (uint32_t)(p0 >> 32), lo0 = (uint32_t)p0;
        uint32_t hi1 = (uint32_t)(p1 >> 32), lo1 = (uint32_t)p1;
        c0 = hi1 ^ c1 ^ k0;
        c1 = lo1;
        c2 = hi0 ^ c3 ^ k1;
        c3 = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    struct rng4 r = {{c0, c1, c2, c3}};
    return r;
}

/* The four words for (seed, stream, epoch, index, sub). */
RNG_FN struct rng4 rng_draw(uint64_t seed, uint32_t stream, uint32_t epoch, uint32_t index,
                            uint32_t sub)
{
    return rng_philox(index, epoch, stream, sub, (uint32_t)seed, (uint32_t)(seed >> 32));
}

/* Uniform integer in [0, n). */
RNG_FN uint32_t rng_below(uint32_t u, uint32_t n)
{
    return (uint32_t)(((uint64_t)u * n) >> 32);
}

/* Uniform float in [0, 1) with 24 random bits. */
RNG_FN float rng_unit(uint32_t u)
{
    return (float)(u >> 8) * (1.0f / 16777216.0f);
}

#endif

/* Weight initialisation from the counter-based RNG (kernels/rng.h, RNG_STREAM_INIT):
 * the same (seed, parameter ordinal) gives the same weights on every engine. */
#ifndef DAWNRUN_INIT_H
#define DAWNRUN_INIT_H

#include <stddef.h>
#include <stdint.h>

/* Fills w with uniform values in [-bound, bound): element e is
 * (2 * rng_unit(u) - 1) * bound, u = word e % 4 of
 * rng_draw(seed, RNG_STREAM_INIT, param_ordinal, e / 4, 0). The arithmetic is fp32 and
 * exact up to the final multiplication, so every engine gets the same bits. */
void init_uniform(float *w /* (count) */, size_t count, uint64_t seed, int param_ordinal,
                  float bound);

/* Dirac (identity) start of a conv weight: filters o < min(co, ci) become the identity
 * on channel o (1 at [o][o][k/2][k/2], 0 elsewhere); filters from ci on are left as they
 * are (normally uniform from init_uniform first). */
void init_dirac(float *w /* (co, ci, k, k) */, int co, int ci, int k);

/* Scales w so that its standard deviation (over all of it, unbiased as torch.std, summed
 * in double) becomes std: w[i] = (float)(w[i] * (std / sd)); nothing when sd is 0 or
 * count < 2 (airbench94_muon's head: w *= 1 / w.std()). */
void init_rescale_std(float *w /* (count) */, size_t count, double std);

#endif

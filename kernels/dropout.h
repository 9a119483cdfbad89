/* Dropout ("inverted": scaled while training, so that evaluation is the identity). In a
 * training step, with drop probability p in [0, 1) and s = dropout_scale(p):
 *   y_i  = keep_i ? x_i * s : +0
 *   dx_i = keep_i ? dy_i * s : +0                 (overwriting), or
 *   dx_i = keep_i ? dx_i + dy_i * s : dx_i        (accumulating)
 * each product and sum rounded once in fp32 (no multiply-add), so that both engines give
 * the same bits in fp32. A dropped element is +0 whatever x_i is (NaN included). Outside
 * training a dropout layer is the identity and has no node (engine/core/model_plan.c).
 *
 * The mask is counter-based (kernels/rng.h, RNG_STREAM_DROPOUT): keep_i is a pure
 * function of the run's seed, the global training step, the layer's id and i, the
 * element's index in the canonical NCHW order of kernels/tensor.h (whatever layout an
 * engine stores), so that every engine draws the same mask, and the backward pass
 * recomputes the forward's mask from the same step instead of storing it:
 *   u      = word i % 4 of rng_draw(seed, RNG_STREAM_DROPOUT, step, i / 4, layer)
 *   keep_i = rng_unit(u) >= p                     (probability 1 - p, to 2^-24)
 * The step is the cursor's CURSOR_STEP (kernels/plan.h), read by the engine where the
 * cursor lives. CPU twin layout (C, N, H, W). */
#ifndef DAWNRUN_KERNELS_DROPOUT_H
#define DAWNRUN_KERNELS_DROPOUT_H

#include <stdint.h>

#include "rng.h"

/* A dropout node's parameters (DROPOUT_FWD, DROPOUT_BWD): everything of the mask but the
 * step. No padding bytes (plan_signature hashes a node's parameters as bytes). */
struct dropout_attr {
    uint64_t seed;   /* the run's seed */
    float p;         /* drop probability, 0 <= p < 1 */
    int layer;       /* the layer's id in the graph (the draw's sub), >= 0 */
};

/* The four mask words of elements 4q .. 4q + 3 at step `step`. */
RNG_FN struct rng4 dropout_words(const struct dropout_attr *a, uint32_t step, uint32_t q)
{
    return rng_draw(a->seed, RNG_STREAM_DROPOUT, step, q, (uint32_t)a->layer);
}

/* Whether element i (canonical NCHW index, i / 4 < 2^32) is kept at step `step`. */
RNG_FN int dropout_keep(const struct dropout_attr *a, uint32_t step, uint64_t i)
{
    return rng_unit(dropout_words(a, step, (uint32_t)(i >> 2)).v[i & 3u]) >= a->p;
}

/* The factor of a kept element, 1 / (1 - p) rounded once in fp32 (1 - p too). */
RNG_FN float dropout_scale(float p)
{
    return 1.0f / (1.0f - p);
}

/* y = x masked and scaled (the contract above) at step `step`; an image's planes are
 * numbered as in NCHW (image j, channel k: canonical plane j * c + k). */
void dropout_forward_cpu(float *y,        /* (c, n, h, w) */
                         const float *x,  /* (c, n, h, w) */
                         const struct dropout_attr *a, uint32_t step, int c, int n, int hw);

/* dx (=|+=) dy masked and scaled with the forward's mask of the same step. */
void dropout_backward_cpu(float *dx,       /* (c, n, h, w) */
                          const float *dy, /* (c, n, h, w) */
                          const struct dropout_attr *a, uint32_t step, int c, int n, int hw,
                          int accumulate_dx);

#endif

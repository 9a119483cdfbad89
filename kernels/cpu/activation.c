/* CPU activations: relu, celu, gelu (erf form) and their derivatives, elementwise over
 * static OpenMP blocks. */
#include "../activation.h"

#include <math.h>

/* Below this many elements the loops stay on one thread. */
#define ACT_PARALLEL_MIN 32768

#define ACT_SQRT1_2 0.70710678118654752440      /* 1 / sqrt(2) */
#define ACT_INV_SQRT_2PI 0.39894228040143267794 /* 1 / sqrt(2 pi) */

/* dx[i] = g, or dx[i] += g; the branch is loop-invariant and hoisted by the compiler. */
static inline void act_store(float *dx, long i, float g, int accumulate)
{
    if (accumulate)
        dx[i] += g;
    else
        dx[i] = g;
}

void activation_forward_cpu(float *y, const float *x, enum act_kind kind, float alpha,
                            size_t count)
{
    const long cnt = (long)count;
    switch (kind) {
    case ACT_RELU:
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) y[i] = x[i] < 0.0f ? 0.0f : x[i];   /* NaN passes through */
        break;
    case ACT_CELU: {
        const float inv = 1.0f / alpha;
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) {
            const float v = x[i];
            y[i] = v > 0.0f ? v : alpha * (expf(v * inv) - 1.0f);
        }
        break;
    }
    case ACT_GELU:
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) {
            const float v = x[i];
            y[i] = 0.5f * v * (1.0f + erff(v * (float)ACT_SQRT1_2));
        }
        break;
    }
}

void activation_backward_cpu(float *dx, const float *dy, const float *x, enum act_kind kind,
                             float alpha, size_t count, int accumulate_dx)
{
    const long cnt = (long)count;
    switch (kind) {
    case ACT_RELU:
        if (accumulate_dx) {
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) dx[i] += x[i] > 0.0f ? dy[i] : 0.0f;
        } else {
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) dx[i] = x[i] > 0.0f ? dy[i] : 0.0f;
        }
        break;
    case ACT_CELU: {
        const float inv = 1.0f / alpha;
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) {
            const float v = x[i];
            const float g = v > 0.0f ? dy[i] : dy[i] * expf(v * inv);
            act_store(dx, i, g, accumulate_dx);
        }
        break;
    }
    case ACT_GELU: {
        const float c = (float)ACT_INV_SQRT_2PI;
#pragma omp parallel for schedule(static) if (count >= ACT_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) {
            const float v = x[i];
            const float cdf = 0.5f * (1.0f + erff(v * (float)ACT_SQRT1_2));
            const float g = dy[i] * (cdf + v * c * expf(-0.5f * v * v));
            act_store(dx, i, g, accumulate_dx);
        }
        break;
    }
    }
}

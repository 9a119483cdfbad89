/* Elementwise activations: relu, celu(alpha), gelu (exact: x Phi(x), Phi the normal
 * distribution function). Layout-free. NaN passes through; at +-inf every engine gives
 * the limits (gelu: -0 with slope 0 at -inf, +inf with slope 1 at +inf). */
#ifndef DAWNRUN_KERNELS_ACTIVATION_H
#define DAWNRUN_KERNELS_ACTIVATION_H

#include <stddef.h>

enum act_kind { ACT_RELU, ACT_CELU, ACT_GELU };
#define ACT_KIND_COUNT 3 /* the number of enum act_kind values, 0 .. ACT_KIND_COUNT - 1 */

/* The config name of an activation ("relu", ...). */
static inline const char *act_kind_name(enum act_kind kind)
{
    switch (kind) {
    case ACT_RELU: return "relu";
    case ACT_CELU: return "celu";
    case ACT_GELU: return "gelu";
    }
    return "?";
}

/* y = act(x). alpha is used by celu only: max(0,x) + min(0, alpha*(exp(x/alpha)-1)). */
void activation_forward_cpu(float *y,        /* (count) */
                            const float *x,  /* (count) */
                            enum act_kind kind, float alpha, size_t count);

/* dx (=|+=) dy * act'(x). */
void activation_backward_cpu(float *dx,       /* (count) */
                             const float *dy, /* (count) */
                             const float *x,  /* (count) */
                             enum act_kind kind, float alpha, size_t count, int accumulate_dx);

#endif

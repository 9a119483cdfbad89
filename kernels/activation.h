/* Elementwise activations: relu, celu(alpha), gelu (exact: x Phi(x), Phi the normal
 * distribution function), silu (x sigmoid(x) = x / (1 + exp(-x))). Layout-free. NaN
 * passes through; at +-inf every engine gives the limits (gelu and silu: -0 with slope 0
 * at -inf, +inf with slope 1 at +inf).
 *
 * A kind is one enum value, one name below and one case in each engine's twin
 * (kernels/cpu/activation.c, kernels/cuda/eltwise_cuda.cu); their switches have no
 * default, so the compiler names a twin that misses a kind. docs/adding-an-op.md lists
 * the rest (the layer type, the config schema, the tests). */
#ifndef DAWNRUN_KERNELS_ACTIVATION_H
#define DAWNRUN_KERNELS_ACTIVATION_H

#include <stddef.h>

enum act_kind {
    ACT_RELU,
    ACT_CELU,          /* the only kind that reads alpha */
    ACT_GELU,
    ACT_SILU,
    ACT_KIND_COUNT     /* not a kind: the number of kinds, 0 .. ACT_KIND_COUNT - 1 */
};

/* The config name of an activation ("relu", ...); "?" for a value that is not a kind. */
static inline const char *act_kind_name(enum act_kind kind)
{
    switch (kind) {
    case ACT_RELU: return "relu";
    case ACT_CELU: return "celu";
    case ACT_GELU: return "gelu";
    case ACT_SILU: return "silu";
    case ACT_KIND_COUNT: break;
    }
    return "?";
}

/* y = act(x). alpha is used by celu only: max(0,x) + min(0, alpha*(exp(x/alpha)-1)).
 * Returns DR_OK, or DR_ERR_INTERNAL (nothing written) for a kind this twin lacks. */
int activation_forward_cpu(float *y,        /* (count) */
                           const float *x,  /* (count) */
                           enum act_kind kind, float alpha, size_t count);

/* dx (=|+=) dy * act'(x). Returns as activation_forward_cpu. */
int activation_backward_cpu(float *dx,       /* (count) */
                            const float *dy, /* (count) */
                            const float *x,  /* (count) */
                            enum act_kind kind, float alpha, size_t count, int accumulate_dx);

#endif

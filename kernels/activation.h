/* Elementwise activations: relu, celu(alpha), gelu (exact: x Phi(x), Phi the normal
 * distribution function), silu (x sigmoid(x) = x / (1 + exp(-x))), hardswish
 * (x relu6(x + 3) / 6: -0 for x <= -3, x for x >= 3, x (x + 3) / 6 between; its slope 0
 * below -3, 1 above 3 and (2x + 3) / 6 from -3 to 3 inclusive, so -1/2 at -3 and 3/2 at 3,
 * as PyTorch's hardswish_backward gives them). Layout-free. NaN passes through; at +-inf
 * every engine gives the limits (gelu, silu and hardswish: -0 with slope 0 at -inf, +inf
 * with slope 1 at +inf).
 *
 * The kinds are stated once, in ACT_KINDS below: the enum, the config names, the layer
 * types (engine/core/layer_types.h) and every engine's dispatch switch are generated from
 * it. Each row names its twins' maths, which are written by hand: act_<name>() and
 * act_<name>_grad() in kernels/cpu/activation.c and the specialisation act_fn<ACT_<ID>>
 * in kernels/cuda/act_cuda.h; a row whose twin is missing fails to compile there.
 * docs/adding-an-op.md lists the rest (the config schema, the tests). */
#ifndef DAWNRUN_KERNELS_ACTIVATION_H
#define DAWNRUN_KERNELS_ACTIVATION_H

#include <stddef.h>

/* Every activation kind, one row each, in enum order: X(ID, NAME, READS_ALPHA, P) with
 * ACT_<ID> its enum value (and LAYER_<ID> its layer type), NAME its config name as a bare
 * token (#NAME the string; act_##NAME and act_##NAME##_grad the CPU twin's functions),
 * READS_ALPHA 1 for a kind that reads alpha, else 0; P is ACT_KINDS' second argument,
 * passed through to every row (~ where X needs none). */
#define ACT_KINDS(X, P)                                                                    \
    X(RELU, relu, 0, P)                                                                    \
    X(CELU, celu, 1, P)                                                                    \
    X(GELU, gelu, 0, P)                                                                    \
    X(SILU, silu, 0, P)                                                                    \
    X(HARDSWISH, hardswish, 0, P)

#define ACT_ENUM_ROW_(ID, NAME, READS_ALPHA, P) ACT_##ID,
enum act_kind {
    ACT_KINDS(ACT_ENUM_ROW_, ~)
    ACT_KIND_COUNT     /* not a kind: the number of kinds, 0 .. ACT_KIND_COUNT - 1 */
};
#undef ACT_ENUM_ROW_

/* The config name of an activation ("relu", ...); "?" for a value that is not a kind. */
static inline const char *act_kind_name(enum act_kind kind)
{
#define ACT_NAME_ROW_(ID, NAME, READS_ALPHA, P) case ACT_##ID: return #NAME;
    switch (kind) {
    ACT_KINDS(ACT_NAME_ROW_, ~)
    case ACT_KIND_COUNT: break;
    }
#undef ACT_NAME_ROW_
    return "?";
}

/* The kinds that read alpha (celu), as a mask of 1 << kind; a constant expression, so that
 * device code and templates may test it. */
#define ACT_ALPHA_ROW_(ID, NAME, READS_ALPHA, P) | ((READS_ALPHA) ? 1u << ACT_##ID : 0u)
#define ACT_ALPHA_KINDS (0u ACT_KINDS(ACT_ALPHA_ROW_, ~))

/* 1 when kind reads alpha, 0 for the other kinds and for a value that is not a kind. */
static inline int act_reads_alpha(enum act_kind kind)
{
    return (unsigned)kind < ACT_KIND_COUNT && ((ACT_ALPHA_KINDS >> (unsigned)kind) & 1u);
}

/* y = act(x). alpha is used by celu only: max(0,x) + min(0, alpha*(exp(x/alpha)-1)).
 * Returns DR_OK, or DR_ERR_INTERNAL (nothing written) for a value that is not a kind. */
int activation_forward_cpu(float *y,        /* (count) */
                           const float *x,  /* (count) */
                           enum act_kind kind, float alpha, size_t count);

/* dx (=|+=) dy * act'(x). Returns as activation_forward_cpu. */
int activation_backward_cpu(float *dx,       /* (count) */
                            const float *dy, /* (count) */
                            const float *x,  /* (count) */
                            enum act_kind kind, float alpha, size_t count, int accumulate_dx);

#endif

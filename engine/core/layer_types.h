/* The layer types as data: one row per type in one list (LAYER_TYPES, below) says what
 * the type is called in a config, which kind of layer it is to the graph and the model
 * (every activation is one kind, told apart by its activation), which attributes
 * graph_build checks, how many inputs it takes and how its FLOPs are counted; enum
 * layer_type and the table of rows (engine/core/layer_types.c) are generated from it.
 * graph_build, the model and the printers read the row; they switch over the kind, never
 * the type, and their switches have no default, so that a new kind is named by the
 * compiler wherever it needs code. The activations' types and rows are generated from the
 * list of activation kinds (kernels/activation.h, ACT_KINDS). The parameter kinds are
 * listed here too (PARAM_KINDS). docs/adding-an-op.md walks through adding a type. */
#ifndef DAWNRUN_ENGINE_LAYER_TYPES_H
#define DAWNRUN_ENGINE_LAYER_TYPES_H

#include "kernels/activation.h"
#include "kernels/pool.h"

/* How the graph shapes a layer and the model runs it. */
enum layer_kind {
    LAYER_KIND_INPUT,        /* the image */
    LAYER_KIND_CONV,         /* a convolution with weight (out, in, k, k) [and bias] */
    LAYER_KIND_WHITEN,       /* a fixed convolution of the image (runs as KIND_CONV) */
    LAYER_KIND_SHORTCUT,     /* spec only: graph_build makes it a conv or nothing */
    LAYER_KIND_BN,           /* batch norm, weight and bias per channel */
    LAYER_KIND_ACT,          /* an elementwise activation: the row's act */
    LAYER_KIND_POOL,         /* k x k windows: the row's pool */
    LAYER_KIND_GLOBAL_POOL,  /* the whole plane: the row's pool */
    LAYER_KIND_CONCAT,
    LAYER_KIND_ADD,
    LAYER_KIND_FLATTEN,
    LAYER_KIND_LINEAR,       /* weight (out, in) [and bias] */
    LAYER_KIND_SCALE,
    LAYER_KIND_DROPOUT,      /* a random mask while training (kernels/dropout.h), else
                                nothing */
    LAYER_KIND_TEMPERATURE   /* y = t x, t one trained scalar (kernels/temperature.h) */
};

/* The parameter kinds, X(ID, config name): a layer type with parameters adds its kinds
 * here, and train.lr_scale, train.wd_scale and train.groups name them by these names. */
#define PARAM_KINDS(X)                    \
    X(PARAM_CONV_W, "conv_weight")        \
    X(PARAM_CONV_B, "conv_bias")          \
    X(PARAM_BN_W, "bn_weight")            \
    X(PARAM_BN_B, "bn_bias")              \
    X(PARAM_LINEAR_W, "linear_weight")    \
    X(PARAM_LINEAR_B, "linear_bias")      \
    X(PARAM_WHITEN_W, "whiten_weight")    \
    X(PARAM_WHITEN_B, "whiten_bias")      \
    X(PARAM_TEMPERATURE, "temperature")

#define PARAM_KIND_ENUM_ROW_(id, name) id,
enum param_kind { PARAM_KINDS(PARAM_KIND_ENUM_ROW_) PARAM_KIND_COUNT };
#undef PARAM_KIND_ENUM_ROW_

/* Config name of a parameter kind ("conv_weight", "bn_bias", "whiten_bias", ...;
 * "unknown" when k is not a kind). */
const char *param_kind_name(enum param_kind k);

/* Attribute rules graph_build checks before shaping (a spec built in code has not been
 * through the config schema's limits), in this order; the first broken one is reported. */
enum layer_rule {
    LAYER_RULE_OUT = 1 << 0,          /* out >= 1 */
    LAYER_RULE_K = 1 << 1,            /* k >= 1 */
    LAYER_RULE_K_UPTO_7 = 1 << 2,     /* k in 1..7 */
    LAYER_RULE_PAD = 1 << 3,          /* pad >= 0, or -1 for k/2 */
    LAYER_RULE_STRIDE = 1 << 4,       /* stride >= 1 */
    LAYER_RULE_POOL_STRIDE = 1 << 5,  /* stride >= 1, or 0 for k */
    LAYER_RULE_SPLITS = 1 << 6,       /* splits >= 0 (0 and 1: plain batch norm) */
    LAYER_RULE_IMAGES = 1 << 7,       /* whiten_images >= 1 */
    LAYER_RULE_BIAS_EPOCHS = 1 << 8,  /* bias_epochs >= 0 */
    LAYER_RULE_EPS = 1 << 9,          /* eps > 0 */
    LAYER_RULE_MOMENTUM = 1 << 10,    /* momentum in [0, 1] */
    LAYER_RULE_ALPHA = 1 << 11,       /* alpha finite and non-zero */
    LAYER_RULE_SCALE = 1 << 12,       /* scale finite */
    LAYER_RULE_IN_CHANNELS = 1 << 13, /* expect_in, when > 0, is the input's channels
                                         (checked once the input's shape is known) */
    LAYER_RULE_DROP_P = 1 << 14,      /* p in [0, 1) */
    LAYER_RULE_INIT = 1 << 15         /* init finite and > 0 */
};

/* How a layer's forward FLOPs per image are counted (the convention in graph.h). */
enum layer_flops {
    LAYER_FLOPS_NONE,        /* data movement: 0 */
    LAYER_FLOPS_CONV,        /* 2 co ci k k ho wo, + co ho wo with a bias */
    LAYER_FLOPS_LINEAR,      /* 2 in out, + out with a bias */
    LAYER_FLOPS_PER_OUTPUT,  /* flops_per_output for each output element */
    LAYER_FLOPS_ADD,         /* inputs - 1 for each output element */
    LAYER_FLOPS_WINDOW,      /* k k for each output element */
    LAYER_FLOPS_PER_INPUT    /* 1 for each element of the input */
};

/* Every layer type, one row each, in enum order: X(ID, NAME, KIND, ...) with LAYER_<ID> its
 * enum value, NAME its config name as a bare token (#NAME the string), KIND its enum
 * layer_kind (LAYER_KIND_<KIND>), and the rest of its row of struct layer_info as
 * designated initialisers (.pool, .min_inputs / .max_inputs or LAYER_ONE_INPUT, .rules,
 * .flops, .flops_per_output, .matmul; what is left out is 0). From it come enum layer_type
 * (below) and the table (engine/core/layer_types.c): a new type is one row here. The
 * activations' rows are generated from ACT_KINDS (kernels/activation.h) in their place,
 * LAYER_<ID> for ACT_<ID>. */
#define LAYER_TYPES(X)                                                                     \
    /* the image batch; created by graph_build, never in a spec */                         \
    X(INPUT, input, INPUT, .flops = LAYER_FLOPS_NONE)                                      \
    /* out, k, stride, pad, bias */                                                        \
    X(CONV, conv, CONV, LAYER_ONE_INPUT,                                                   \
      .rules = LAYER_RULE_OUT | LAYER_RULE_K | LAYER_RULE_PAD | LAYER_RULE_STRIDE |        \
               LAYER_RULE_IN_CHANNELS,                                                     \
      .flops = LAYER_FLOPS_CONV, .matmul = 1)                                              \
    /* eps, momentum, freeze_weight, freeze_bias */                                        \
    X(BN, bn, BN, LAYER_ONE_INPUT,                                                         \
      .rules = LAYER_RULE_SPLITS | LAYER_RULE_EPS | LAYER_RULE_MOMENTUM |                  \
               LAYER_RULE_IN_CHANNELS,                                                     \
      .flops = LAYER_FLOPS_PER_OUTPUT, .flops_per_output = 4)                              \
    /* one type per activation kind: LAYER_RELU, LAYER_CELU (alpha), ... */               \
    ACT_KINDS(LAYER_TYPE_ACT_ROW, X)                                                       \
    /* k, stride (default k; 0 in a spec also means k) */                                  \
    X(MAXPOOL, maxpool, POOL, .pool = POOL_MAX, LAYER_ONE_INPUT,                           \
      .rules = LAYER_RULE_K | LAYER_RULE_POOL_STRIDE, .flops = LAYER_FLOPS_WINDOW)         \
    X(AVGPOOL, avgpool, POOL, .pool = POOL_AVG, LAYER_ONE_INPUT,                           \
      .rules = LAYER_RULE_K | LAYER_RULE_POOL_STRIDE, .flops = LAYER_FLOPS_WINDOW)         \
    /* global max and average pools */                                                     \
    X(GMAXPOOL, gmaxpool, GLOBAL_POOL, .pool = POOL_MAX, LAYER_ONE_INPUT,                  \
      .flops = LAYER_FLOPS_PER_INPUT)                                                      \
    X(GAVGPOOL, gavgpool, GLOBAL_POOL, .pool = POOL_AVG, LAYER_ONE_INPUT,                  \
      .flops = LAYER_FLOPS_PER_INPUT)                                                      \
    /* 2+ inputs, channels */                                                              \
    X(CONCAT, concat, CONCAT, .min_inputs = 2, .max_inputs = 0, .flops = LAYER_FLOPS_NONE) \
    /* 2 inputs, same shape */                                                             \
    X(ADD, add, ADD, .min_inputs = 2, .max_inputs = 2, .flops = LAYER_FLOPS_ADD)           \
    X(FLATTEN, flatten, FLATTEN, LAYER_ONE_INPUT, .flops = LAYER_FLOPS_NONE)               \
    /* out, bias */                                                                        \
    X(LINEAR, linear, LINEAR, LAYER_ONE_INPUT,                                             \
      .rules = LAYER_RULE_OUT | LAYER_RULE_IN_CHANNELS, .flops = LAYER_FLOPS_LINEAR,       \
      .matmul = 1)                                                                         \
    /* scale */                                                                            \
    X(SCALE, scale, SCALE, LAYER_ONE_INPUT, .rules = LAYER_RULE_SCALE,                     \
      .flops = LAYER_FLOPS_PER_OUTPUT, .flops_per_output = 1)                              \
    /* p: training only; the identity in evaluation */                                     \
    X(DROPOUT, dropout, DROPOUT, LAYER_ONE_INPUT, .rules = LAYER_RULE_DROP_P,              \
      .flops = LAYER_FLOPS_PER_OUTPUT, .flops_per_output = 1)                              \
    /* init: a trained scalar t, y = t x (the logits' temperature) */                      \
    X(TEMPERATURE, temperature, TEMPERATURE, LAYER_ONE_INPUT, .rules = LAYER_RULE_INIT,    \
      .flops = LAYER_FLOPS_PER_OUTPUT, .flops_per_output = 1)                              \
    /* spec only: identity when in == out channels and stride 1, else a bias-free 1x1     \
       conv (out, stride); graph_build resolves it, and it is counted as the conv it       \
       becomes (an identity shortcut is no layer) */                                       \
    X(SHORTCUT, shortcut, SHORTCUT, LAYER_ONE_INPUT,                                       \
      .rules = LAYER_RULE_OUT | LAYER_RULE_STRIDE | LAYER_RULE_IN_CHANNELS,                \
      .flops = LAYER_FLOPS_CONV, .matmul = 1)                                              \
    /* k, pad, eps, whiten_images, negate, bias, bias_epochs: a fixed conv of the image    \
       whose filters are the patch-covariance eigenvectors (engine/core/whiten.h);         \
       out = 3*k*k, twice that with negate */                                              \
    X(WHITEN, whiten, WHITEN, LAYER_ONE_INPUT,                                             \
      .rules = LAYER_RULE_K_UPTO_7 | LAYER_RULE_PAD | LAYER_RULE_IMAGES |                  \
               LAYER_RULE_BIAS_EPOCHS | LAYER_RULE_EPS,                                    \
      .flops = LAYER_FLOPS_CONV, .matmul = 1)

/* The row of each activation kind's type (ACT_KINDS passes LAYER_TYPES' X as P): its
 * config name, one FLOP per output, and alpha checked when the kind reads it. */
#define LAYER_TYPE_ACT_ROW(ID, NAME, READS_ALPHA, X)                                       \
    X(ID, NAME, ACT, .act = ACT_##ID, LAYER_ONE_INPUT,                                     \
      .rules = (READS_ALPHA) ? LAYER_RULE_ALPHA : 0u, .flops = LAYER_FLOPS_PER_OUTPUT,     \
      .flops_per_output = 1)

/* Most types read one input. */
#define LAYER_ONE_INPUT .min_inputs = 1, .max_inputs = 1

#define LAYER_TYPE_ENUM_ROW_(ID, NAME, KIND, ...) LAYER_##ID,
enum layer_type { LAYER_TYPES(LAYER_TYPE_ENUM_ROW_) LAYER_TYPE_COUNT };
#undef LAYER_TYPE_ENUM_ROW_

/* One row of the table. */
struct layer_info {
    const char *name;          /* the config name ("conv", "relu", ...) */
    enum layer_kind kind;
    enum act_kind act;         /* LAYER_KIND_ACT only */
    enum pool_kind pool;       /* LAYER_KIND_POOL and LAYER_KIND_GLOBAL_POOL only */
    int min_inputs;            /* resolved inputs the layer takes */
    int max_inputs;            /* 0: as many as a layer can name (GRAPH_MAX_INPUTS) */
    unsigned rules;            /* enum layer_rule bits */
    enum layer_flops flops;
    int flops_per_output;      /* LAYER_FLOPS_PER_OUTPUT only */
    int matmul;                /* 1: a convolution or matrix product, counted in
                                  graph.flops_forward and 3x its forward when trained */
};

/* The row of type t, or NULL when t is not a layer type (or the table lacks its row). */
const struct layer_info *layer_info(enum layer_type t);

/* The kind of type t (its row's), or LAYER_KIND_INPUT when t is not a layer type. */
enum layer_kind layer_type_kind(enum layer_type t);

/* Config name of a layer type ("conv", "bn", ...; "unknown" when t is not a type), and
 * the reverse (-1 if unknown). */
const char *layer_type_name(enum layer_type t);
int layer_type_from_name(const char *name);

#endif

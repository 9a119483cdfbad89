/* The network as data. A net_spec is what the config describes after block expansion
 * (names, types, attributes, source lines); graph_build() resolves it into a graph:
 * layers in topological order with input ids, output shapes, parameter shapes and
 * FLOPs. Engine-neutral: no device code, no config library. The layer types and what each
 * one is to the graph are in engine/core/layer_types.h. */
#ifndef DAWNRUN_GRAPH_H
#define DAWNRUN_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "layer_types.h"

#define GRAPH_NAME_MAX 96
#define GRAPH_MAX_INPUTS 8

/* Every layer attribute of the config schema (schemas/config.schema, layer_types), one row
 * each: X(TYPE, FIELD, NAME) a field `TYPE FIELD` of struct layer_spec (TYPE int, bools
 * too, or float) filled from the attribute NAME (a bare token, #NAME the string), and
 * ALIAS(FIELD, NAME) a second name for a field listed before. From it come the fields
 * below and the loader's table of where each attribute goes (engine/config/config_attrs.c):
 * a new attribute name is one row here (and its entries in the schema). */
#define LAYER_ATTRS(X, ALIAS)                                                              \
    X(int, out, out)                 /* conv/linear/shortcut: output channels */           \
    X(int, expect_in, in)            /* conv/bn/linear: declared input channels, 0 = any */ \
    ALIAS(expect_in, channels)                                                             \
    X(int, k, k)                     /* conv, pools */                                     \
    X(int, stride, stride)                                                                 \
    X(int, pad, pad)                 /* pad -1 = k/2 ("same") */                           \
    X(int, bias, bias)               /* conv/linear: 1 = has bias */                       \
    X(float, eps, eps)               /* bn */                                              \
    X(float, momentum, momentum)                                                           \
    X(int, freeze_weight, freeze_weight)   /* bn: keep gamma at 1 / beta at 0 */           \
    X(int, freeze_bias, freeze_bias)                                                       \
    X(int, splits, splits)           /* bn: ghost batch norm, statistics over this many    \
                                        equal parts of the batch (1 = plain) */            \
    X(int, frozen, frozen)           /* conv/bn/linear: no parameter is trained */         \
    X(int, dirac, dirac)             /* conv: the first `in` filters start as the          \
                                        identity (needs in <= out) */                      \
    X(int, whiten_images, images)    /* whiten: training images the covariance is          \
                                        estimated from (the first ones) */                 \
    X(int, negate, negate)           /* whiten: also the negated filters */                \
    X(int, bias_epochs, bias_epochs) /* whiten: its bias is trained only during the first  \
                                        bias_epochs epochs (0 = always) */                 \
    X(float, alpha, alpha)           /* celu */                                            \
    X(float, init_std, init_std)     /* linear: > 0: the drawn weight is rescaled to this  \
                                        standard deviation (0 = as drawn) */               \
    X(float, scale, scale)           /* scale */                                           \
    X(float, p, p)                   /* dropout: drop probability, in [0, 1) */            \
    X(float, init, init)             /* temperature: the scalar's starting value (> 0) */

/* One layer as written in the config (after blocks and variables are expanded). */
struct layer_spec {
    char name[GRAPH_NAME_MAX];             /* unique, block instances prefix "inst." */
    enum layer_type type;
    int n_inputs;                          /* 0 = the previous layer (or the image) */
    char inputs[GRAPH_MAX_INPUTS][GRAPH_NAME_MAX];
#define LAYER_SPEC_FIELD_(TYPE, FIELD, NAME) TYPE FIELD;
#define LAYER_SPEC_ALIAS_(FIELD, NAME)
    LAYER_ATTRS(LAYER_SPEC_FIELD_, LAYER_SPEC_ALIAS_)   /* the attributes, as listed above */
#undef LAYER_SPEC_FIELD_
#undef LAYER_SPEC_ALIAS_
    const char *file;                      /* where it was written, for messages (not owned;
                                              NULL = unknown) */
    int line;
};

struct net_spec {
    struct layer_spec *layers;             /* owned */
    int count, cap;
    char output[GRAPH_NAME_MAX];           /* "" = the last layer */
};

/* Appends a layer of the given type with every attribute of that type at its default
 * from the config schema (schemas/config.schema; required attributes, and the fields of
 * other types, 0): the layer a config entry of that type with no attribute written gives
 * (config_layer_defaults). The caller sets the name, the inputs and what differs.
 * Returns the layer, or NULL on out of memory or a broken schema. */
struct layer_spec *net_spec_add(struct net_spec *s, enum layer_type type);
/* Appends an all-zero layer (no defaults): for the config loader, which sets every
 * attribute itself. Returns it or NULL on out of memory. */
struct layer_spec *net_spec_append(struct net_spec *s);
void net_spec_free(struct net_spec *s);


/* How a parameter starts (model_init_params, trainer_create). */
enum param_init {
    PARAM_INIT_DEFAULT,   /* uniform(-init_bound, init_bound), or init_value when bound is 0 */
    PARAM_INIT_DIRAC,     /* conv weight (co, ci, k, k): filters 0..ci-1 are the identity
                             (1 at [o][o][k/2][k/2], 0 elsewhere), the others as DEFAULT */
    PARAM_INIT_WHITEN     /* whiten weight: computed from the training images (whiten.h) */
};


/* A trainable parameter tensor of a layer (canonical shape n, c, h, w). */
struct param_desc {
    enum param_kind kind;
    int layer;                             /* owning layer id */
    int n, c, h, w;                        /* conv: (co, ci, k, k); linear: (out, in, 1, 1) */
    float init_bound;                      /* uniform(-b, b); 0 with init_value for BN */
    float init_value;
    enum param_init init;
    float init_std;                        /* > 0: rescaled to this standard deviation
                                              after the draw (init_rescale_std) */
    int trainable;                         /* 0 for frozen BN weight/bias, frozen layers and
                                              whitening filters */
    int train_epochs;                      /* > 0: trained only while epoch < train_epochs
                                              (0-based), then frozen; 0 = always */
};

/* A resolved layer. Consumers read the type and attributes from `spec`, which graph_build
 * has resolved: a projection shortcut is LAYER_CONV (k 1, pad 0, bias 0, its stride), a
 * whiten layer keeps LAYER_WHITEN and runs as a conv (spec.out, k, stride 1, pad), a
 * conv's pad is never -1, a pool's stride is never 0; spec.n_inputs/spec.inputs are the
 * names as written: use n_inputs/inputs below instead. Layer i's output tensor has shape
 * (batch, c, h, w). Its parameters are params[param_first .. param_first+param_count):
 * conv: weight [, bias if spec.bias]; bn: weight, bias (always both, frozen ones have
 * trainable 0); linear: weight [, bias if spec.bias]; whiten: weight (PARAM_WHITEN_W,
 * never trainable) [, bias (PARAM_WHITEN_B) if spec.bias]; temperature: its scalar
 * (PARAM_TEMPERATURE, one value, starting at spec.init); other types: none. */
struct layer {
    struct layer_spec spec;                /* resolved copy (shortcut -> conv) */
    int n_inputs;                          /* >= 1 (0 only for layers[0], the image) */
    int inputs[GRAPH_MAX_INPUTS];          /* layer ids, all smaller than this layer's id */
    int c, h, w;                           /* output shape per image */
    int in_c, in_h, in_w;                  /* first input's shape per image (0 for the image) */
    int param_first, param_count;          /* range in graph.params */
    int64_t flops;                         /* forward FLOPs per image (MAC = 2) */
};

struct graph {
    struct layer *layers;                  /* layers[0] is LAYER_INPUT */
    int count;
    int output;                            /* id of the logits layer */
    struct param_desc *params;
    int n_params;
    int64_t n_weights;                     /* trainable scalars (BN weight/bias included) */
    int64_t flops_forward;                 /* per image: conv and linear layers only */
    int64_t flops_elementwise;             /* per image: all other layers */
};

/* FLOP convention (per image, forward). Conv and linear dominate and are counted exactly,
 * a multiply-accumulate being 2 FLOPs: conv 2*co*ci*k*k*ho*wo (+ co*ho*wo with bias),
 * linear 2*in*out (+ out with bias); their sum is graph.flops_forward (ResNet-9 on
 * 32x32: 758,523,904). The rest is graph.flops_elementwise, counted per output element:
 * bn 4 (batch statistics 2, fused scale-and-shift 2), every activation, scale, dropout and
 * temperature 1 (a transcendental counts 1, dropout's mask draw 0), add 1, maxpool/avgpool k*k (the
 * window), global pools 1 per input element, concat/flatten 0 (data movement).
 * layer.flops uses the same rule, which each type's row in engine/core/layer_types.c
 * names. */

/* Resolves names, checks shapes and builds the graph for images of in_c×in_h×in_w.
 * Errors name the layer and its file:line ("nets/x.cfg:12: layer 'l1.conv': ...") and are
 * written to err. Returns DR_OK or DR_ERR_CONFIG. */
/* Building stops at the first problem; err then holds that one line (no newline). An
 * identity shortcut produces no layer: references to its name resolve to its input. The
 * output is spec->output or else the last spec layer; it must be Cx1x1. On failure g is
 * left empty (graph_free is harmless); DR_ERR_NOMEM is also possible. g does not keep
 * pointers into spec except layer_spec.file. */
int graph_build(struct graph *g, const struct net_spec *spec, int in_c, int in_h, int in_w,
                char *err, size_t errlen);
void graph_free(struct graph *g);

/* Training FLOPs per image: forward + backward (2× forward for conv/linear, data and
 * weight gradients; the first conv needs no data gradient). */
/* Precisely: conv/linear 3× their forward, or 2× when their input is the image; every
 * other layer 2× its forward (the backward costs about as much as the forward). */
int64_t graph_train_flops(const struct graph *g);

#endif

/* The table of layer types (engine/core/layer_types.h): one row per enum layer_type, indexed
 * by it, the activations' rows generated from ACT_KINDS. A type added last to the enum
 * without a row fails to compile (the length check); one added in between without a row
 * leaves that row empty, which layer_info treats as no type and tests/test_graph.c
 * reports. Also the parameter kinds' names, generated from PARAM_KINDS. */
#include "layer_types.h"

#include <string.h>

/* Most types read one input. */
#define ONE_INPUT .min_inputs = 1, .max_inputs = 1

/* The row of each activation kind's type (kernels/activation.h, ACT_KINDS): its config name,
 * one FLOP per output, and alpha checked when the kind reads it. */
#define ACT_ROW(ID, NAME, READS_ALPHA, P)                                                  \
    [LAYER_##ID] = {.name = #NAME, .kind = LAYER_KIND_ACT, .act = ACT_##ID, ONE_INPUT,     \
                    .rules = (READS_ALPHA) ? LAYER_RULE_ALPHA : 0u,                        \
                    .flops = LAYER_FLOPS_PER_OUTPUT, .flops_per_output = 1},

static const struct layer_info layer_table[] = {
    [LAYER_INPUT] = {.name = "input", .kind = LAYER_KIND_INPUT, .flops = LAYER_FLOPS_NONE},
    [LAYER_CONV] = {.name = "conv", .kind = LAYER_KIND_CONV, ONE_INPUT,
                    .rules = LAYER_RULE_OUT | LAYER_RULE_K | LAYER_RULE_PAD | LAYER_RULE_STRIDE |
                             LAYER_RULE_IN_CHANNELS,
                    .flops = LAYER_FLOPS_CONV, .matmul = 1},
    [LAYER_BN] = {.name = "bn", .kind = LAYER_KIND_BN, ONE_INPUT,
                  .rules = LAYER_RULE_SPLITS | LAYER_RULE_EPS | LAYER_RULE_MOMENTUM |
                           LAYER_RULE_IN_CHANNELS,
                  .flops = LAYER_FLOPS_PER_OUTPUT, .flops_per_output = 4},
    ACT_KINDS(ACT_ROW, ~)
    [LAYER_MAXPOOL] = {.name = "maxpool", .kind = LAYER_KIND_POOL, .pool = POOL_MAX, ONE_INPUT,
                       .rules = LAYER_RULE_K | LAYER_RULE_POOL_STRIDE,
                       .flops = LAYER_FLOPS_WINDOW},
    [LAYER_AVGPOOL] = {.name = "avgpool", .kind = LAYER_KIND_POOL, .pool = POOL_AVG, ONE_INPUT,
                       .rules = LAYER_RULE_K | LAYER_RULE_POOL_STRIDE,
                       .flops = LAYER_FLOPS_WINDOW},
    [LAYER_GMAXPOOL] = {.name = "gmaxpool", .kind = LAYER_KIND_GLOBAL_POOL, .pool = POOL_MAX,
                        ONE_INPUT, .flops = LAYER_FLOPS_PER_INPUT},
    [LAYER_GAVGPOOL] = {.name = "gavgpool", .kind = LAYER_KIND_GLOBAL_POOL, .pool = POOL_AVG,
                        ONE_INPUT, .flops = LAYER_FLOPS_PER_INPUT},
    [LAYER_CONCAT] = {.name = "concat", .kind = LAYER_KIND_CONCAT, .min_inputs = 2,
                      .max_inputs = 0, .flops = LAYER_FLOPS_NONE},
    [LAYER_ADD] = {.name = "add", .kind = LAYER_KIND_ADD, .min_inputs = 2, .max_inputs = 2,
                   .flops = LAYER_FLOPS_ADD},
    [LAYER_FLATTEN] = {.name = "flatten", .kind = LAYER_KIND_FLATTEN, ONE_INPUT,
                       .flops = LAYER_FLOPS_NONE},
    [LAYER_LINEAR] = {.name = "linear", .kind = LAYER_KIND_LINEAR, ONE_INPUT,
                      .rules = LAYER_RULE_OUT | LAYER_RULE_IN_CHANNELS,
                      .flops = LAYER_FLOPS_LINEAR, .matmul = 1},
    [LAYER_SCALE] = {.name = "scale", .kind = LAYER_KIND_SCALE, ONE_INPUT,
                     .rules = LAYER_RULE_SCALE,
                     .flops = LAYER_FLOPS_PER_OUTPUT, .flops_per_output = 1},
    [LAYER_DROPOUT] = {.name = "dropout", .kind = LAYER_KIND_DROPOUT, ONE_INPUT,
                       .rules = LAYER_RULE_DROP_P,
                       .flops = LAYER_FLOPS_PER_OUTPUT, .flops_per_output = 1},
    /* counted as the conv it becomes (an identity shortcut is no layer) */
    [LAYER_SHORTCUT] = {.name = "shortcut", .kind = LAYER_KIND_SHORTCUT, ONE_INPUT,
                        .rules = LAYER_RULE_OUT | LAYER_RULE_STRIDE | LAYER_RULE_IN_CHANNELS,
                        .flops = LAYER_FLOPS_CONV, .matmul = 1},
    [LAYER_WHITEN] = {.name = "whiten", .kind = LAYER_KIND_WHITEN, ONE_INPUT,
                      .rules = LAYER_RULE_K_UPTO_7 | LAYER_RULE_PAD | LAYER_RULE_IMAGES |
                               LAYER_RULE_BIAS_EPOCHS | LAYER_RULE_EPS,
                      .flops = LAYER_FLOPS_CONV, .matmul = 1},
};

_Static_assert(sizeof layer_table / sizeof layer_table[0] == LAYER_TYPE_COUNT,
               "engine/core/layer_types.c: every enum layer_type needs its row in layer_table");

const struct layer_info *layer_info(enum layer_type t)
{
    if ((int)t < 0 || t >= LAYER_TYPE_COUNT || !layer_table[t].name) return NULL;
    return &layer_table[t];
}

enum layer_kind layer_type_kind(enum layer_type t)
{
    const struct layer_info *info = layer_info(t);
    return info ? info->kind : LAYER_KIND_INPUT;
}

const char *layer_type_name(enum layer_type t)
{
    const struct layer_info *info = layer_info(t);
    return info ? info->name : "unknown";
}

int layer_type_from_name(const char *name)
{
    if (!name) return -1;
    for (int t = 0; t < LAYER_TYPE_COUNT; t++)
        if (layer_table[t].name && strcmp(layer_table[t].name, name) == 0) return t;
    return -1;
}

#define PARAM_KIND_NAME_ROW_(id, name) [id] = name,
static const char *const param_kind_names[] = {PARAM_KINDS(PARAM_KIND_NAME_ROW_)};
#undef PARAM_KIND_NAME_ROW_

const char *param_kind_name(enum param_kind k)
{
    if ((int)k < 0 || k >= PARAM_KIND_COUNT) return "unknown";
    return param_kind_names[k];
}

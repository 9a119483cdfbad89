/* The table of layer types (engine/core/layer_types.h): one row per enum layer_type, indexed
 * by it, generated from the list LAYER_TYPES that enum layer_type comes from (the
 * activations' rows from ACT_KINDS), so that the two cannot disagree; the length check and
 * tests/test_graph.c (no row empty) hold the table to it. Also the parameter kinds' names,
 * generated from PARAM_KINDS. */
#include "layer_types.h"

#include <string.h>

/* Row ID of LAYER_TYPES: its config name, its kind and the rest as the list gives it. */
#define LAYER_TABLE_ROW_(ID, NAME, KIND, ...)                                              \
    [LAYER_##ID] = {.name = #NAME, .kind = LAYER_KIND_##KIND, __VA_ARGS__},

static const struct layer_info layer_table[] = {LAYER_TYPES(LAYER_TABLE_ROW_)};

#undef LAYER_TABLE_ROW_

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

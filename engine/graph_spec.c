/* The network as written: layer type and parameter kind names, and the growable net_spec
 * list that the config loader fills and code building a network appends to
 * (engine/graph.h; net_spec_add, which fills a layer with the schema's defaults, is
 * defined by the config's resolution layer, engine/config_defaults.c). */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

static const char *const type_names[LAYER_TYPE_COUNT] = {
    [LAYER_INPUT] = "input",       [LAYER_CONV] = "conv",         [LAYER_BN] = "bn",
    [LAYER_RELU] = "relu",         [LAYER_CELU] = "celu",         [LAYER_GELU] = "gelu",
    [LAYER_MAXPOOL] = "maxpool",   [LAYER_AVGPOOL] = "avgpool",   [LAYER_GMAXPOOL] = "gmaxpool",
    [LAYER_GAVGPOOL] = "gavgpool", [LAYER_CONCAT] = "concat",     [LAYER_ADD] = "add",
    [LAYER_FLATTEN] = "flatten",   [LAYER_LINEAR] = "linear",     [LAYER_SCALE] = "scale",
    [LAYER_SHORTCUT] = "shortcut", [LAYER_WHITEN] = "whiten",
};

static const char *const kind_names[PARAM_KIND_COUNT] = {
    [PARAM_CONV_W] = "conv_weight",     [PARAM_CONV_B] = "conv_bias",
    [PARAM_BN_W] = "bn_weight",         [PARAM_BN_B] = "bn_bias",
    [PARAM_LINEAR_W] = "linear_weight", [PARAM_LINEAR_B] = "linear_bias",
    [PARAM_WHITEN_W] = "whiten_weight", [PARAM_WHITEN_B] = "whiten_bias",
};

const char *param_kind_name(enum param_kind k)
{
    if ((int)k < 0 || k >= PARAM_KIND_COUNT) return "unknown";
    return kind_names[k];
}

const char *layer_type_name(enum layer_type t)
{
    if ((int)t < 0 || t >= LAYER_TYPE_COUNT) return "unknown";
    return type_names[t];
}

int layer_type_from_name(const char *name)
{
    if (!name) return -1;
    for (int t = 0; t < LAYER_TYPE_COUNT; t++)
        if (strcmp(type_names[t], name) == 0) return t;
    return -1;
}

struct layer_spec *net_spec_append(struct net_spec *s)
{
    if (s->count == s->cap) {
        int cap = s->cap ? 2 * s->cap : 32;
        struct layer_spec *grown = realloc(s->layers, (size_t)cap * sizeof *grown);
        if (!grown) return NULL;
        s->layers = grown;
        s->cap = cap;
    }
    struct layer_spec *l = &s->layers[s->count++];
    memset(l, 0, sizeof *l);
    return l;
}

void net_spec_free(struct net_spec *s)
{
    if (!s) return;
    free(s->layers);
    s->layers = NULL;
    s->count = s->cap = 0;
    s->output[0] = '\0';
}

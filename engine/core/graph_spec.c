/* The network as written: parameter kind names, and the growable net_spec list that the
 * config loader fills and code building a network appends to (engine/core/graph.h). The layer
 * type names are in the type table (engine/core/layer_types.c); net_spec_add, which fills a
 * layer with the schema's defaults, is defined by the config's resolution layer
 * (engine/config/config_defaults.c). */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"

static const char *const kind_names[] = {
    [PARAM_CONV_W] = "conv_weight",     [PARAM_CONV_B] = "conv_bias",
    [PARAM_BN_W] = "bn_weight",         [PARAM_BN_B] = "bn_bias",
    [PARAM_LINEAR_W] = "linear_weight", [PARAM_LINEAR_B] = "linear_bias",
    [PARAM_WHITEN_W] = "whiten_weight", [PARAM_WHITEN_B] = "whiten_bias",
};

_Static_assert(sizeof kind_names / sizeof kind_names[0] == PARAM_KIND_COUNT,
               "engine/core/graph_spec.c: every enum param_kind needs its name");

const char *param_kind_name(enum param_kind k)
{
    if ((int)k < 0 || k >= PARAM_KIND_COUNT) return "unknown";
    return kind_names[k];
}

struct layer_spec *net_spec_append(struct net_spec *s)
{
    if (grow_reserve(&s->layers, &s->cap, s->count + 1, 32, sizeof *s->layers) != DR_OK)
        return NULL;
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

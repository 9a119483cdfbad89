/* The network as written: the growable net_spec list that the config loader fills and
 * code building a network appends to (engine/core/graph.h). The layer type and parameter
 * kind names are listed in engine/core/layer_types.h; net_spec_add, which fills a
 * layer with the schema's defaults, is defined by the config's resolution layer
 * (engine/config/config_defaults.c). */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"

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

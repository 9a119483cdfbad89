/* The schema's defaults of a layer type for a network built in code: net_spec_add
 * (engine/core/graph.h) and config_layer_defaults (engine/core/experiment.h) fill a layer exactly
 * as the expansion of a config entry that writes no attribute does, so that a layer has
 * the same attributes however it was described. Layer 4 of config handling, resolution
 * (config_resolve.h). */
#include "config_resolve.h"
#include "config_lookup.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "base/status.h"

int config_layer_defaults(struct layer_spec *ls, enum layer_type type)
{
    int rc = DR_OK;
    config_t schema, empty;
    struct cfg_diag d = {0};
    config_init(&empty);
    TRY(cfg_schema_load(&schema));
    const char *name = layer_type_name(type);
    const config_setting_t *types =
        config_setting_get_member(config_root_setting(&schema), "layer_types");
    ls->type = type;
    if (type == LAYER_INPUT) goto cleanup; /* the image: no attributes, not in the schema */
    if (!config_setting_get_member(types, name))
        FAIL(DR_ERR_INTERNAL, "layer type '%s' is not in the config schema", name);
    /* an entry with no attribute written: every attribute from the schema, as the
     * expansion of a config fills it (nothing to evaluate, so no variables) */
    if (!cfg_attrs_fill(ls, &d, config_root_setting(&empty), cfg_type_attrs(types, name),
                        NULL, NULL, name) ||
        d.count > 0)
        FAIL(DR_ERR_INTERNAL, "the schema's defaults of layer type '%s' do not apply", name);
cleanup:
    cfg_diag_free(&d);
    config_destroy(&empty);
    config_destroy(&schema);
    return rc;
}

struct layer_spec *net_spec_add(struct net_spec *s, enum layer_type type)
{
    struct layer_spec *l = net_spec_append(s);
    if (!l) return NULL;
    if (config_layer_defaults(l, type) != DR_OK) {
        s->count--;
        return NULL;
    }
    return l;
}

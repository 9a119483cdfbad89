/* The canonical form of a checked layer list for the resolved experiment text: the same
 * network written in any key order, with or without default names and attributes, gives
 * the same text. */
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "../base/status.h"

static int add_string(config_setting_t *g, const char *name, const char *value)
{
    config_setting_t *s = config_setting_add(g, name, CONFIG_TYPE_STRING);
    return s && config_setting_set_string(s, value) ? DR_OK : DR_ERR_NOMEM;
}

/* Writes a typed layer's attributes in schema order, with defaults; floats as floats. An
 * attribute with omit_default is left out when it is absent or written as its default
 * (an expression is always kept: its value is known only after expansion). */
static int canonical_attrs(config_setting_t *g, const config_setting_t *layer,
                           const config_setting_t *attrs)
{
    for (int i = 0; attrs && i < config_setting_length(attrs); i++) {
        const config_setting_t *entry = config_setting_get_elem(attrs, (unsigned)i);
        const char *name = config_setting_name(entry), *type = NULL;
        const config_setting_t *v = config_setting_get_member(layer, name);
        int omit = 0;
        config_setting_lookup_string(entry, "type", &type);
        config_setting_lookup_bool(entry, "omit_default", &omit);
        if (omit && (!v || cfg_schema_is_default(entry, v))) continue;
        if (!v) v = config_setting_get_member(entry, "default");
        if (!v) continue; /* default_from: follows the other attribute */
        if (type && !strcmp(type, "float") && cfg_is_number(v)) {
            config_setting_t *s = config_setting_add(g, name, CONFIG_TYPE_FLOAT);
            if (!s || !config_setting_set_float(s, cfg_number(v))) return DR_ERR_NOMEM;
        } else if (!cfg_copy(g, name, v, NULL)) {
            return DR_ERR_NOMEM;
        }
    }
    return DR_OK;
}

static int arg_cmp(const void *pa, const void *pb)
{
    const config_setting_t *a = *(const config_setting_t *const *)pa;
    const config_setting_t *b = *(const config_setting_t *const *)pb;
    return strcmp(config_setting_name(a), config_setting_name(b));
}

/* Writes a block instance's arguments (every key that is not a layer key), sorted. */
static int canonical_args(config_setting_t *g, const config_setting_t *layer,
                          const config_setting_t *layer_keys)
{
    int n = config_setting_length(layer), k = 0, rc = DR_OK;
    const config_setting_t **args = malloc((size_t)(n ? n : 1) * sizeof(*args));
    if (!args) return DR_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        const config_setting_t *a = config_setting_get_elem(layer, (unsigned)i);
        if (!config_setting_get_member(layer_keys, config_setting_name(a))) args[k++] = a;
    }
    qsort(args, (size_t)k, sizeof(*args), arg_cmp);
    for (int i = 0; i < k && rc == DR_OK; i++)
        if (!cfg_copy(g, config_setting_name(args[i]), args[i], NULL)) rc = DR_ERR_NOMEM;
    free(args);
    return rc;
}

int cfg_model_canonical_layers(config_setting_t *dst, const config_setting_t *layers,
                               const config_setting_t *schema_root)
{
    const config_setting_t *layer_keys = config_setting_get_member(schema_root, "layer");
    const config_setting_t *types = config_setting_get_member(schema_root, "layer_types");
    for (int i = 0; i < config_setting_length(layers); i++) {
        const config_setting_t *layer = config_setting_get_elem(layers, (unsigned)i);
        config_setting_t *g = config_setting_add(dst, NULL, CONFIG_TYPE_GROUP);
        char name[512];
        const char *type = NULL, *block = NULL, *input = NULL;
        int rc;
        if (!g) return DR_ERR_NOMEM;
        cfg_layer_name(layer, i, name, sizeof(name));
        if ((rc = add_string(g, "name", name)) != DR_OK) return rc;
        if (config_setting_lookup_string(layer, "type", &type) &&
            (rc = add_string(g, "type", type)) != DR_OK)
            return rc;
        if (config_setting_lookup_string(layer, "block", &block) &&
            (rc = add_string(g, "block", block)) != DR_OK)
            return rc;
        const config_setting_t *inputs = config_setting_get_member(layer, "inputs");
        if (inputs && config_setting_length(inputs) == 1) /* the same as input = "..." */
            input = config_setting_get_string_elem(inputs, 0);
        else
            config_setting_lookup_string(layer, "input", &input);
        if (input && (rc = add_string(g, "input", input)) != DR_OK) return rc;
        if (inputs && config_setting_length(inputs) > 1) {
            config_setting_t *a = config_setting_add(g, "inputs", CONFIG_TYPE_ARRAY);
            if (!a) return DR_ERR_NOMEM;
            for (int k = 0; k < config_setting_length(inputs); k++)
                if (!config_setting_set_string_elem(a, -1,
                                                    config_setting_get_string_elem(inputs, k)))
                    return DR_ERR_NOMEM;
        }
        if (type) {
            const config_setting_t *t = config_setting_get_member(types, type);
            rc = canonical_attrs(g, layer, t ? config_setting_get_member(t, "attrs") : NULL);
        } else {
            rc = canonical_args(g, layer, layer_keys);
        }
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

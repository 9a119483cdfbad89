/* The canonical resolved tree, whose text identifies the experiment (it is hashed): the
 * schema's keys in schema order with their defaults filled, floats as floats, merged maps
 * dropped, groups of the model sorted by name, and every layer with its name, inputs and
 * attributes (defaults filled) or its block arguments (sorted). The same experiment
 * written in any key order, with or without default names and attributes, gives the same
 * text. Layer 4 of config handling, resolution (config_resolve.h). */
#include <stdlib.h>
#include <string.h>

#include "config_resolve.h"
#include "config_lookup.h"
#include "base/status.h"

/* Orders settings by name. */
static int name_cmp(const void *pa, const void *pb)
{
    const config_setting_t *a = *(const config_setting_t *const *)pa;
    const config_setting_t *b = *(const config_setting_t *const *)pb;
    return strcmp(config_setting_name(a), config_setting_name(b));
}

/* ---- layers ---------------------------------------------------------------------------- */

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

/* Writes a block instance's arguments (every key that is not a layer key), sorted. */
static int canonical_args(config_setting_t *g, const config_setting_t *layer,
                          const config_setting_t *layer_keys)
{
    int n = config_setting_length(layer), k = 0, rc = DR_OK;
    const config_setting_t **args = malloc((size_t)(n ? n : 1) * sizeof(*args));
    if (!args) return DR_ERR_NOMEM;
    for (int i = 0; i < n; i++) {
        const config_setting_t *a = config_setting_get_elem(layer, (unsigned)i);
        if (!cfg_is_layer_key(layer_keys, config_setting_name(a))) args[k++] = a;
    }
    qsort(args, (size_t)k, sizeof(*args), name_cmp);
    for (int i = 0; i < k && rc == DR_OK; i++)
        if (!cfg_copy(g, config_setting_name(args[i]), args[i], NULL)) rc = DR_ERR_NOMEM;
    free(args);
    return rc;
}

/* Appends to dst (a list) the canonical copy of a checked layer list: each layer's name
 * (the default one when absent), type or block, inputs, then its attributes in schema
 * order with defaults filled (float attributes as floats) or its block arguments sorted
 * by name. */
static int canonical_layers(config_setting_t *dst, const config_setting_t *layers,
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
            rc = canonical_attrs(g, layer, cfg_type_attrs(types, type));
        } else {
            rc = canonical_args(g, layer, layer_keys);
        }
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

/* ---- the experiment's keys ----------------------------------------------------------- */

/* Writes value v (a setting of any compatible type) as `name` under dst in the entry's
 * canonical type: float entries as floats, float arrays as arrays of floats. */
static int put_value(config_setting_t *dst, const char *name, const config_setting_t *entry,
                     const config_setting_t *v)
{
    config_setting_t *s;
    if (cfg_entry_is(entry, "float")) {
        s = config_setting_add(dst, name, CONFIG_TYPE_FLOAT);
        return s && config_setting_set_float(s, cfg_number(v)) ? DR_OK : DR_ERR_NOMEM;
    }
    if (cfg_entry_is(entry, "float_array")) {
        s = config_setting_add(dst, name, CONFIG_TYPE_ARRAY);
        if (!s) return DR_ERR_NOMEM;
        for (int i = 0; i < config_setting_length(v); i++)
            if (!config_setting_set_float_elem(s, -1,
                                               cfg_number(config_setting_get_elem(v, (unsigned)i))))
                return DR_ERR_NOMEM;
        return DR_OK;
    }
    if (cfg_entry_is(entry, "string_array")) {
        s = config_setting_add(dst, name, CONFIG_TYPE_ARRAY);
        if (!s) return DR_ERR_NOMEM;
        for (int i = 0; i < config_setting_length(v); i++)
            if (!config_setting_set_string_elem(s, -1, config_setting_get_string_elem(v, i)))
                return DR_ERR_NOMEM;
        return DR_OK;
    }
    return cfg_copy(dst, name, v, NULL) ? DR_OK : DR_ERR_NOMEM;
}

/* The members of group sorted by name, in a new array (NULL when empty or out of memory;
 * *n is then 0 or -1). */
static const config_setting_t **sorted_members(const config_setting_t *group, int *n)
{
    *n = config_setting_length(group);
    if (*n == 0) return NULL;
    const config_setting_t **v = malloc((size_t)*n * sizeof(*v));
    if (!v) {
        *n = -1;
        return NULL;
    }
    for (int i = 0; i < *n; i++) v[i] = config_setting_get_elem(group, (unsigned)i);
    qsort(v, (size_t)*n, sizeof(*v), name_cmp);
    return v;
}

static int resolve_group(config_setting_t *dst, const config_setting_t *src,
                         const config_setting_t *keys, const config_setting_t *schema_root);

static int resolve_entry(config_setting_t *dst, const char *name, const config_setting_t *src,
                         const config_setting_t *entry, const config_setting_t *schema_root)
{
    int rc = DR_OK, n;
    const config_setting_t **members = NULL;
    const config_setting_t *def = config_setting_get_member(entry, "default");
    config_setting_t *g;
    if (cfg_entry_is(entry, "group")) {
        g = config_setting_add(dst, name, CONFIG_TYPE_GROUP);
        if (!g) return DR_ERR_NOMEM;
        rc = resolve_group(g, src, config_setting_get_member(entry, "keys"), schema_root);
        if (rc == DR_OK && cfg_entry_flag(entry, "omit_default") && config_setting_length(g) == 0 &&
            !config_setting_remove(dst, name))
            rc = DR_ERR_INTERNAL;
        return rc;
    }
    if (cfg_entry_is(entry, "map") || cfg_entry_is(entry, "blocks")) {
        if (!src) return DR_OK;
        g = config_setting_add(dst, name, CONFIG_TYPE_GROUP);
        if (!g) return DR_ERR_NOMEM;
        members = sorted_members(src, &n);
        if (n < 0) return DR_ERR_NOMEM;
        const config_setting_t *of = config_setting_get_member(entry, "of");
        const config_setting_t *block_keys = config_setting_get_member(schema_root, "block");
        for (int i = 0; i < n && rc == DR_OK; i++) {
            const char *mname = config_setting_name(members[i]);
            if (cfg_entry_is(entry, "map")) {
                rc = put_value(g, mname, of, members[i]);
            } else {
                config_setting_t *b = config_setting_add(g, mname, CONFIG_TYPE_GROUP);
                rc = b ? resolve_group(b, members[i], block_keys, schema_root) : DR_ERR_NOMEM;
            }
        }
        free(members);
        return rc;
    }
    if (cfg_entry_is(entry, "layers")) {
        g = config_setting_add(dst, name, CONFIG_TYPE_LIST);
        if (!g) return DR_ERR_NOMEM;
        return src ? canonical_layers(g, src, schema_root) : DR_OK;
    }
    if (cfg_entry_flag(entry, "omit_default") && (!src || cfg_schema_is_default(entry, src)))
        return DR_OK; /* left out: readers fall back to the default */
    if (src) return put_value(dst, name, entry, src);
    if (def) return put_value(dst, name, entry, def);
    return DR_OK;
}

static int resolve_group(config_setting_t *dst, const config_setting_t *src,
                         const config_setting_t *keys, const config_setting_t *schema_root)
{
    for (int i = 0; keys && i < config_setting_length(keys); i++) {
        const config_setting_t *entry = config_setting_get_elem(keys, (unsigned)i);
        const char *name = config_setting_name(entry);
        if (cfg_entry_str(entry, "merge_into")) continue;
        const config_setting_t *s = src ? config_setting_get_member(src, name) : NULL;
        int rc = resolve_entry(dst, name, s, entry, schema_root);
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

int cfg_canonical_tree(config_setting_t *dst_root, const config_setting_t *root,
                       const config_setting_t *schema_root)
{
    return resolve_group(dst_root, root, config_setting_get_member(schema_root, "experiment"),
                         schema_root);
}

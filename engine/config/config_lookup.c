/* Layers and blocks by name in a model section, and a layer type's attributes in the
 * schema. Layer 2 of config handling (config_lookup.h); calls nothing else of config. */
#include <stdio.h>
#include <string.h>

#include "config_lookup.h"

#define NAME_BUF 512

void cfg_layer_name(const config_setting_t *layer, int i, char *buf, size_t n)
{
    const char *s = NULL;
    if (config_setting_is_group(layer)) {
        if (config_setting_lookup_string(layer, "name", &s)) {
            snprintf(buf, n, "%s", s);
            return;
        }
        if (!config_setting_lookup_string(layer, "type", &s))
            config_setting_lookup_string(layer, "block", &s);
    }
    snprintf(buf, n, "%s%d", s ? s : "layer", i);
}

int cfg_layer_find(const config_setting_t *list, const char *name)
{
    char buf[NAME_BUF];
    for (int i = 0; i < config_setting_length(list); i++) {
        cfg_layer_name(config_setting_get_elem(list, (unsigned)i), i, buf, sizeof(buf));
        if (strcmp(buf, name) == 0) return i;
    }
    return -1;
}

const config_setting_t *cfg_block_find(const config_setting_t *blocks, const char *name)
{
    if (!blocks || !name) return NULL;
    const config_setting_t *b = config_setting_get_member(blocks, name);
    return b && config_setting_is_group(b) ? b : NULL;
}

const config_setting_t *cfg_type_attrs(const config_setting_t *types, const char *type)
{
    const config_setting_t *t = config_setting_get_member(types, type);
    return t ? config_setting_get_member(t, "attrs") : NULL;
}

int cfg_is_layer_key(const config_setting_t *layer_keys, const char *key)
{
    return config_setting_get_member(layer_keys, key) != NULL;
}

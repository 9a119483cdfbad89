/* Layer 2 of config handling (the layers: engine/config/config_tree.h): layers and blocks found
 * by name in a model section, and the schema's entries of a layer type. A leaf: it reads
 * the libconfig tree it is given and calls nothing else of config, so that validation
 * and resolution name and find the same layers. */
#ifndef DAWNRUN_CONFIG_LOOKUP_H
#define DAWNRUN_CONFIG_LOOKUP_H

#include <libconfig.h>
#include <stddef.h>

/* The name of entry i of a layer list: its `name`, else "<type><i>" / "<block><i>". */
void cfg_layer_name(const config_setting_t *layer, int i, char *buf, size_t n);
/* Index of the entry named `name` in a layer list, or -1. */
int cfg_layer_find(const config_setting_t *list, const char *name);
/* The definition of a block by name (a group of blocks, model.blocks; NULL when blocks
 * or name is NULL), or NULL. */
const config_setting_t *cfg_block_find(const config_setting_t *blocks, const char *name);
/* The attribute entries ("attrs") of a layer type in the schema's layer_types, or NULL
 * when the type or its attrs are not there. */
const config_setting_t *cfg_type_attrs(const config_setting_t *types, const char *type);
/* 1 when `key` is one of the schema's keys of every layer entry (layer_keys: name, type,
 * block, input, ...). */
int cfg_is_layer_key(const config_setting_t *layer_keys, const char *key);

#endif

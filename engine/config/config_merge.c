/* The maps that merge into another key (model_vars into model.vars): their members
 * replace the target's, the later spelling winning, and the canonical spelling of a key
 * path for overrides and sweeps. Layer 4 of config handling, resolution
 * (config_resolve.h). */
#include <stdio.h>
#include <string.h>

#include "config_resolve.h"
#include "base/status.h"

/* The precedence of a setting among the ways of writing one value: -1 for the files,
 * else the index of the override it came from (later overrides rank higher). */
static int setting_rank(const config_setting_t *s)
{
    const struct cfg_origin *o = cfg_origin_of(s);
    return o ? o->index : -1;
}

/* A member of a merge_into map replaces the target's member of that name unless the
 * target's value was written later: model_vars in a file overrides model.vars in a file,
 * and among overrides (--set of either spelling) the last one wins, so that both
 * spellings behave the same and the command line beats the files. */
static int merge_map(struct cfg_diag *d, config_setting_t *root, config_setting_t *map,
                     const char *map_path, const char *target_path)
{
    config_setting_t *target = config_lookup(root->config, target_path);
    if (target && !config_setting_is_group(target)) return DR_OK; /* reported already */
    for (int i = 0; i < config_setting_length(map); i++) {
        config_setting_t *m = config_setting_get_elem(map, (unsigned)i);
        const char *name = config_setting_name(m);
        config_setting_t *old = target ? config_setting_get_member(target, name) : NULL;
        const struct cfg_origin *o = old ? config_setting_get_hook(old) : NULL;
        if (!old || (o && o->created)) {
            char dym[160];
            cfg_did_you_mean(dym, sizeof(dym), "", cfg_suggest_member(name, target));
            cfg_diag_at(d, m, "unknown key '%s' in '%s'%s", name, map_path, dym);
            continue;
        }
        if (!cfg_is_number(m)) continue; /* reported already */
        if (setting_rank(m) < setting_rank(old)) continue; /* a later value stands */
        if (!config_setting_remove(target, name)) return DR_ERR_INTERNAL;
        if (!cfg_copy(target, name, m, config_setting_get_hook(m))) return DR_ERR_NOMEM;
    }
    return DR_OK;
}

int cfg_merge_maps(struct cfg_diag *d, config_setting_t *root,
                   const config_setting_t *schema_root)
{
    const config_setting_t *keys = config_setting_get_member(schema_root, "experiment");
    for (int i = 0; keys && i < config_setting_length(keys); i++) {
        const config_setting_t *entry = config_setting_get_elem(keys, (unsigned)i);
        const char *into = cfg_entry_str(entry, "merge_into");
        config_setting_t *map = config_setting_get_member(root, config_setting_name(entry));
        if (!into || !map || !config_setting_is_group(map)) continue;
        int rc = merge_map(d, root, map, config_setting_name(entry), into);
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

int config_key_canonical(char *out, size_t n, const char *key)
{
    config_t schema;
    int rc = cfg_schema_load(&schema);
    const config_setting_t *keys = config_setting_get_member(config_root_setting(&schema),
                                                             "experiment");
    const char *rest = key, *into = NULL;
    for (int i = 0; rc == DR_OK && keys && i < config_setting_length(keys); i++) {
        const config_setting_t *entry = config_setting_get_elem(keys, (unsigned)i);
        const char *name = config_setting_name(entry);
        size_t len = strlen(name);
        const char *target = cfg_entry_str(entry, "merge_into");
        if (target && strncmp(key, name, len) == 0 && (key[len] == '.' || !key[len])) {
            into = target;
            rest = key + len;
        }
    }
    int w = snprintf(out, n, "%s%s", into ? into : "", rest);
    if (rc == DR_OK && (w < 0 || (size_t)w >= n)) rc = DR_ERR_NOMEM;
    config_destroy(&schema);
    return rc;
}

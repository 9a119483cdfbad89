/* --set key.path=value overrides: the value is parsed by libconfig itself, so numbers,
 * strings, booleans, arrays, lists and groups all work as in a file; the settings it makes
 * carry the override as their origin, so that later messages name the flag. Layer 1 of
 * config handling (config_tree.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tree.h"
#include "base/status.h"

/* 1 when [s, s + n) is a libconfig setting name: [A-Za-z*][-A-Za-z0-9_*]*. */
static int valid_segment(const char *s, size_t n)
{
    if (n == 0 || n > 255) return 0;
    if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z') || s[0] == '*'))
        return 0;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '*'))
            return 0;
    }
    return 1;
}

/* Parses "v = <value>;" into tmp. Returns 1 on success; on failure *why is libconfig's
 * message. */
static int parse_value(config_t *tmp, const char *value, int as_list, const char **why)
{
    size_t n = strlen(value);
    char *text = malloc(n + 16);
    if (!text) {
        *why = "out of memory";
        return 0;
    }
    if (as_list)
        snprintf(text, n + 16, "v = (%.*s);", (int)(n - 2), value + 1);
    else
        snprintf(text, n + 16, "v = %s;", value);
    config_destroy(tmp);
    config_init(tmp);
    int ok = config_read_string(tmp, text);
    free(text);
    if (!ok) {
        *why = config_error_text(tmp);
        return 0;
    }
    if (config_setting_length(config_root_setting(tmp)) != 1) {
        *why = "more than one value";
        return 0;
    }
    return 1;
}

/* The parsed value of an override in tmp ("v"), or NULL with the problem reported. */
static const config_setting_t *read_value(struct cfg_diag *d, config_t *tmp, int index,
                                          const char *text, const char *value)
{
    const char *why = NULL;
    size_t n = strlen(value);
    if (parse_value(tmp, value, 0, &why)) return config_lookup(tmp, "v");
    /* [0, 0.4, 0]: libconfig arrays hold one type; read it as a list. */
    if (n >= 2 && value[0] == '[' && value[n - 1] == ']' && parse_value(tmp, value, 1, &why))
        return config_lookup(tmp, "v");
    if (value[0] && !strchr("\"[({", value[0])) {
        /* A bare word (a path, a name) is a string. */
        config_destroy(tmp);
        config_init(tmp);
        config_setting_t *s = config_setting_add(config_root_setting(tmp), "v",
                                                 CONFIG_TYPE_STRING);
        if (s && config_setting_set_string(s, value)) return s;
        why = "out of memory";
    }
    cfg_diag_set(d, index, text, "cannot parse the value: %s", why ? why : "empty value");
    return NULL;
}

int cfg_set_apply(struct cfg_diag *d, config_t *cfg, int index, const char *text,
                  struct cfg_origin origins[2])
{
    int rc = DR_OK;
    config_t tmp;
    config_init(&tmp);
    const char *eq = strchr(text, '=');
    origins[0] = (struct cfg_origin){text, index, 0};
    origins[1] = (struct cfg_origin){text, index, 0};
    if (!eq) {
        cfg_diag_set(d, index, text, "expected key.path=value");
        rc = DR_ERR_CONFIG;
        goto cleanup;
    }
    for (const char *seg = text; seg <= eq;) {
        const char *end = seg;
        while (end < eq && *end != '.') end++;
        if (!valid_segment(seg, (size_t)(end - seg))) {
            cfg_diag_set(d, index, text, "bad key path '%.*s' (names separated by '.')",
                         (int)(eq - text), text);
            rc = DR_ERR_CONFIG;
            goto cleanup;
        }
        seg = end + 1;
    }
    const config_setting_t *value = read_value(d, &tmp, index, text, eq + 1);
    if (!value) {
        rc = DR_ERR_CONFIG;
        goto cleanup;
    }
    config_setting_t *parent = config_root_setting(cfg);
    const char *seg = text;
    char name[256];
    for (;;) {
        const char *end = seg;
        while (end < eq && *end != '.') end++;
        snprintf(name, sizeof(name), "%.*s", (int)(end - seg), seg);
        if (end == eq) break;
        config_setting_t *child = config_setting_get_member(parent, name);
        if (!child) {
            child = config_setting_add(parent, name, CONFIG_TYPE_GROUP);
            CHECK_ALLOC(child, "an override");
            config_setting_set_hook(child, &origins[0]);
            origins[0].created = 1;
        } else if (!config_setting_is_group(child)) {
            cfg_diag_set(d, index, text, "'%.*s' is %s, not a group", (int)(end - text), text,
                         cfg_type_phrase(child));
            rc = DR_ERR_CONFIG;
            goto cleanup;
        }
        parent = child;
        seg = end + 1;
    }
    if (config_setting_get_member(parent, name)) {
        if (!config_setting_remove(parent, name)) FAIL(DR_ERR_INTERNAL, "cannot replace '%s'", name);
    } else {
        origins[0].created = 1;
    }
    config_setting_t *leaf = cfg_copy(parent, name, value, &origins[1]);
    CHECK_ALLOC(leaf, "an override");
    config_setting_set_hook(leaf, &origins[0]);
cleanup:
    config_destroy(&tmp);
    return rc;
}

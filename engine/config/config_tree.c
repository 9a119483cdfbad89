/* Small helpers on libconfig trees for the config loader: type phrases for messages,
 * numeric access, deep copies and setting origins. Layer 1 of config handling
 * (config_tree.h); calls nothing else of config. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config_tree.h"

const char *cfg_type_phrase(const config_setting_t *s)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64: return "an integer";
    case CONFIG_TYPE_FLOAT: return "a float";
    case CONFIG_TYPE_STRING: return "a string";
    case CONFIG_TYPE_BOOL: return "a boolean";
    case CONFIG_TYPE_ARRAY: return "an array";
    case CONFIG_TYPE_LIST: return "a list";
    case CONFIG_TYPE_GROUP: return "a group";
    }
    return "nothing";
}

int cfg_is_number(const config_setting_t *s)
{
    int t = config_setting_type(s);
    return t == CONFIG_TYPE_INT || t == CONFIG_TYPE_INT64 || t == CONFIG_TYPE_FLOAT;
}

double cfg_number(const config_setting_t *s)
{
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT: return (double)config_setting_get_int(s);
    case CONFIG_TYPE_INT64: return (double)config_setting_get_int64(s);
    case CONFIG_TYPE_FLOAT: return config_setting_get_float(s);
    }
    return NAN;
}

/* Copies a scalar's value into dst (same type). Returns 1 on success. */
static int copy_scalar(config_setting_t *dst, const config_setting_t *src)
{
    switch (config_setting_type(src)) {
    case CONFIG_TYPE_INT: return config_setting_set_int(dst, config_setting_get_int(src));
    case CONFIG_TYPE_INT64:
        return config_setting_set_int64(dst, config_setting_get_int64(src));
    case CONFIG_TYPE_FLOAT: return config_setting_set_float(dst, config_setting_get_float(src));
    case CONFIG_TYPE_BOOL: return config_setting_set_bool(dst, config_setting_get_bool(src));
    case CONFIG_TYPE_STRING:
        return config_setting_set_string(dst, config_setting_get_string(src));
    }
    return CONFIG_FALSE;
}

config_setting_t *cfg_copy(config_setting_t *parent, const char *name,
                           const config_setting_t *src, void *hook)
{
    int in_group = config_setting_is_group(parent);
    config_setting_t *dst =
        config_setting_add(parent, in_group ? name : NULL, config_setting_type(src));
    if (!dst) return NULL;
    if (hook) config_setting_set_hook(dst, hook);
    if (config_setting_is_aggregate(src)) {
        for (int i = 0; i < config_setting_length(src); i++) {
            const config_setting_t *e = config_setting_get_elem(src, (unsigned)i);
            if (!cfg_copy(dst, config_setting_name(e), e, hook)) return NULL;
        }
        return dst;
    }
    return copy_scalar(dst, src) ? dst : NULL;
}

const struct cfg_origin *cfg_origin_of(const config_setting_t *s)
{
    for (; s; s = config_setting_parent(s)) {
        const struct cfg_origin *o = config_setting_get_hook(s);
        if (o) return o;
        if (s->file) return NULL;
    }
    return NULL;
}

void cfg_format_number(char *buf, size_t n, double v)
{
    if (v == floor(v) && fabs(v) < 1e15)
        snprintf(buf, n, "%.0f", v);
    else
        snprintf(buf, n, "%g", v);
}

int cfg_is_identifier(const char *name)
{
    if (!name || !((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') ||
                   *name == '_'))
        return 0;
    for (const char *p = name + 1; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '_'))
            return 0;
    return 1;
}

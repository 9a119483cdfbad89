/* The schema of experiment configs (schemas/config.schema, embedded at build time): loading
 * it, reading its entries, and the checks of one value against an entry (type, limits,
 * enum values, lengths), with the messages at the value's file:line. Layer 3 of config
 * handling, validation (config_schema.h); calls only reading (config_tree.h). */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "config_schema.h"
#include "base/status.h"

extern const char schema_config_schema[];
extern const unsigned long schema_config_schema_len;

int cfg_schema_load(config_t *schema)
{
    config_init(schema);
    if (!config_read_string(schema, schema_config_schema)) {
        dr_eprintf("dawnrun: internal error: the embedded config schema does not parse: "
                   "line %d: %s\n",
                   config_error_line(schema), config_error_text(schema));
        return DR_ERR_INTERNAL;
    }
    return DR_OK;
}

/* ---- reading entries ------------------------------------------------------------------ */

const char *cfg_entry_str(const config_setting_t *entry, const char *key)
{
    const char *v = NULL;
    if (!entry || !config_setting_lookup_string(entry, key, &v)) return NULL;
    return v;
}

static int entry_num(const config_setting_t *entry, const char *key, double *v)
{
    const config_setting_t *s = entry ? config_setting_get_member(entry, key) : NULL;
    if (!s || !cfg_is_number(s)) return 0;
    *v = cfg_number(s);
    return 1;
}

int cfg_entry_flag(const config_setting_t *entry, const char *key)
{
    int v = 0;
    if (!entry || !config_setting_lookup_bool(entry, key, &v)) return 0;
    return v;
}

int cfg_entry_is(const config_setting_t *entry, const char *type)
{
    const char *t = cfg_entry_str(entry, "type");
    return t && strcmp(t, type) == 0;
}

/* ---- checking single values ------------------------------------------------------------ */

int cfg_schema_check_number(const config_setting_t *entry, double v, char *msg, size_t n)
{
    char got[48], lim[48];
    double lo, hi;
    int is_int = cfg_entry_is(entry, "int");
    cfg_format_number(got, sizeof(got), v);
    if (!isfinite(v)) {
        snprintf(msg, n, "must be a finite number, got %s", got);
        return 0;
    }
    if (is_int && v != floor(v)) {
        snprintf(msg, n, "must be an integer, got %s", got);
        return 0;
    }
    if (entry_num(entry, "min", &lo) && v < lo) {
        cfg_format_number(lim, sizeof(lim), lo);
        snprintf(msg, n, "must be >= %s, got %s", lim, got);
        return 0;
    }
    if (entry_num(entry, "gt", &lo) && !(v > lo)) {
        cfg_format_number(lim, sizeof(lim), lo);
        snprintf(msg, n, "must be > %s, got %s", lim, got);
        return 0;
    }
    if (!entry_num(entry, "max", &hi)) hi = is_int ? INT_MAX : HUGE_VAL;
    if (v > hi) {
        cfg_format_number(lim, sizeof(lim), hi);
        snprintf(msg, n, "must be <= %s, got %s", lim, got);
        return 0;
    }
    if (is_int && v < INT_MIN) {
        snprintf(msg, n, "must be >= %d, got %s", INT_MIN, got);
        return 0;
    }
    return 1;
}

/* Checks the length of a string or array against min_length / max_length. */
static int check_length(struct cfg_diag *d, const config_setting_t *s,
                        const config_setting_t *entry, const char *prefix, const char *name,
                        long len, const char *unit)
{
    double lo, hi;
    if (entry_num(entry, "min_length", &lo) && len < (long)lo) {
        if (lo == 1)
            cfg_diag_at(d, s, "%s'%s' must not be empty", prefix, name);
        else
            cfg_diag_at(d, s, "%s'%s' must have at least %ld %s, got %ld", prefix, name,
                        (long)lo, unit, len);
        return 0;
    }
    if (entry_num(entry, "max_length", &hi) && len > (long)hi) {
        cfg_diag_at(d, s, "%s'%s' must have at most %ld %s, got %ld", prefix, name, (long)hi,
                    unit, len);
        return 0;
    }
    return 1;
}

static int check_enum(struct cfg_diag *d, const config_setting_t *s,
                      const config_setting_t *entry, const char *prefix, const char *name)
{
    const config_setting_t *values = config_setting_get_member(entry, "values");
    const char *v = config_setting_get_string(s);
    char list[512] = "";
    size_t used = 0;
    for (int i = 0; values && i < config_setting_length(values); i++) {
        const char *allowed = config_setting_get_string_elem(values, i);
        if (strcmp(allowed, v) == 0) return 1;
        int k = snprintf(list + used, sizeof(list) - used, "%s\"%s\"", i ? ", " : "", allowed);
        if (k > 0 && (size_t)k < sizeof(list) - used) used += (size_t)k;
    }
    cfg_diag_at(d, s, "%s'%s' must be one of %s, got \"%s\"", prefix, name, list, v);
    return 0;
}

static int check_array(struct cfg_diag *d, const config_setting_t *s,
                       const config_setting_t *entry, const char *prefix, const char *name,
                       int numbers)
{
    int ok = 1;
    if (!check_length(d, s, entry, prefix, name, config_setting_length(s),
                      config_setting_length(s) == 1 ? "element" : "elements"))
        ok = 0;
    for (int i = 0; i < config_setting_length(s); i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char msg[160];
        if (numbers && !cfg_is_number(e)) {
            cfg_diag_at(d, e, "%s'%s[%d]' must be a number, got %s", prefix, name, i,
                        cfg_type_phrase(e));
            ok = 0;
        } else if (numbers && !cfg_schema_check_number(entry, cfg_number(e), msg, sizeof(msg))) {
            cfg_diag_at(d, e, "%s'%s[%d]' %s", prefix, name, i, msg);
            ok = 0;
        } else if (!numbers && config_setting_type(e) != CONFIG_TYPE_STRING) {
            cfg_diag_at(d, e, "%s'%s[%d]' must be a string, got %s", prefix, name, i,
                        cfg_type_phrase(e));
            ok = 0;
        }
    }
    return ok;
}

int cfg_schema_check_value(struct cfg_diag *d, const config_setting_t *s,
                           const config_setting_t *entry, const char *prefix, const char *name)
{
    const char *type = cfg_entry_str(entry, "type");
    int t = config_setting_type(s);
    const char *want = NULL;
    char msg[160];
    if (!type) type = "";
    if (!strcmp(type, "int")) {
        if (t != CONFIG_TYPE_INT && t != CONFIG_TYPE_INT64) want = "an integer";
    } else if (!strcmp(type, "float")) {
        if (!cfg_is_number(s)) want = "a number";
    } else if (!strcmp(type, "bool")) {
        if (t != CONFIG_TYPE_BOOL) want = "a boolean";
    } else if (!strcmp(type, "string") || !strcmp(type, "enum")) {
        if (t != CONFIG_TYPE_STRING) want = "a string";
    } else if (!strcmp(type, "float_array")) {
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) want = "an array of numbers";
    } else if (!strcmp(type, "string_array")) {
        if (t != CONFIG_TYPE_ARRAY && t != CONFIG_TYPE_LIST) want = "an array of strings";
    } else if (!strcmp(type, "group") || !strcmp(type, "map")) {
        if (t != CONFIG_TYPE_GROUP) want = "a group";
    } else if (!strcmp(type, "blocks")) {
        if (t != CONFIG_TYPE_GROUP) want = "a group of blocks";
    } else if (!strcmp(type, "layers")) {
        if (t != CONFIG_TYPE_LIST) want = "a list of layers";
    }
    if (want) {
        cfg_diag_at(d, s, "%s'%s' must be %s, got %s", prefix, name, want, cfg_type_phrase(s));
        return 0;
    }
    if (!strcmp(type, "int") || !strcmp(type, "float")) {
        if (!cfg_schema_check_number(entry, cfg_number(s), msg, sizeof(msg))) {
            cfg_diag_at(d, s, "%s'%s' %s", prefix, name, msg);
            return 0;
        }
    } else if (!strcmp(type, "string")) {
        return check_length(d, s, entry, prefix, name, (long)strlen(config_setting_get_string(s)),
                            "characters");
    } else if (!strcmp(type, "enum")) {
        return check_enum(d, s, entry, prefix, name);
    } else if (!strcmp(type, "float_array") || !strcmp(type, "string_array")) {
        return check_array(d, s, entry, prefix, name, type[0] == 'f');
    }
    return 1;
}


/* ---- entries by path, defaults ------------------------------------------------------- */

int cfg_schema_is_default(const config_setting_t *entry, const config_setting_t *v)
{
    const config_setting_t *def = config_setting_get_member(entry, "default");
    if (!def || !v) return 0;
    if (cfg_is_number(def) && cfg_is_number(v)) return cfg_number(def) == cfg_number(v);
    if (config_setting_type(def) == CONFIG_TYPE_BOOL && config_setting_type(v) == CONFIG_TYPE_BOOL)
        return config_setting_get_bool(def) == config_setting_get_bool(v);
    if (config_setting_type(def) == CONFIG_TYPE_STRING &&
        config_setting_type(v) == CONFIG_TYPE_STRING)
        return strcmp(config_setting_get_string(def), config_setting_get_string(v)) == 0;
    return 0;
}

const config_setting_t *cfg_schema_entry(const config_setting_t *schema_root, const char *path,
                                         int *omittable)
{
    const config_setting_t *keys = config_setting_get_member(schema_root, "experiment");
    const config_setting_t *entry = NULL;
    char part[128];
    if (omittable) *omittable = 0;
    while (keys && *path) {
        size_t n = strcspn(path, ".");
        if (n >= sizeof(part)) return NULL;
        memcpy(part, path, n);
        part[n] = '\0';
        entry = config_setting_get_member(keys, part);
        if (!entry) return NULL;
        if (omittable && cfg_entry_flag(entry, "omit_default")) *omittable = 1;
        path += n;
        if (*path == '.') path++;
        keys = *path ? config_setting_get_member(entry, "keys") : NULL;
    }
    return *path ? NULL : entry;
}

/* Writes value v (a setting of any compatible type) as `name` under dst in the entry's
 * canonical type: float entries as floats, float arrays as arrays of floats. */

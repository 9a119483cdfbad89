/* Schema-driven checking of an experiment config (schemas/config.schema, embedded at
 * build time): types, limits, enums, required keys and unknown keys with did-you-mean;
 * then the model_vars merge and the canonical resolved tree with every default filled. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "../base/status.h"

extern const char schema_config_schema[];
extern const unsigned long schema_config_schema_len;

int cfg_schema_load(config_t *schema)
{
    config_init(schema);
    if (!config_read_string(schema, schema_config_schema)) {
        fprintf(stderr, "dawnrun: internal error: the embedded config schema does not parse: "
                        "line %d: %s\n",
                config_error_line(schema), config_error_text(schema));
        return DR_ERR_INTERNAL;
    }
    return DR_OK;
}

/* ---- reading entries ------------------------------------------------------------------ */

static const char *entry_str(const config_setting_t *entry, const char *key)
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

static int entry_flag(const config_setting_t *entry, const char *key)
{
    int v = 0;
    if (!entry || !config_setting_lookup_bool(entry, key, &v)) return 0;
    return v;
}

static int entry_is(const config_setting_t *entry, const char *type)
{
    const char *t = entry_str(entry, "type");
    return t && strcmp(t, type) == 0;
}

/* ---- checking single values ------------------------------------------------------------ */

int cfg_schema_check_number(const config_setting_t *entry, double v, char *msg, size_t n)
{
    char got[48], lim[48];
    double lo, hi;
    int is_int = entry_is(entry, "int");
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
    const char *type = entry_str(entry, "type");
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

/* ---- walking the experiment ------------------------------------------------------------ */

/* "parent.name", or "name" at the top. */
static void join_path(char *buf, size_t n, const char *parent, const char *name)
{
    int w = parent[0] ? snprintf(buf, n, "%s.%s", parent, name) : snprintf(buf, n, "%s", name);
    if (w < 0 || (size_t)w >= n) snprintf(buf, n, "...%s", name); /* absurdly deep */
}

static void unknown_key(struct cfg_diag *d, const config_setting_t *s, const char *path,
                        const config_setting_t *known)
{
    char dym[160];
    const char *name = config_setting_name(s);
    cfg_did_you_mean(dym, sizeof(dym), "", cfg_suggest_member(name, known));
    if (path[0])
        cfg_diag_at(d, s, "unknown key '%s' in '%s'%s", name, path, dym);
    else
        cfg_diag_at(d, s, "unknown top-level key '%s'%s", name, dym);
}

static void validate_group(struct cfg_diag *d, const config_setting_t *group,
                           const config_setting_t *where, const config_setting_t *keys,
                           const char *path);

/* knots strictly increasing, as many values as knots. */
static void check_schedule(struct cfg_diag *d, const config_setting_t *group, const char *path)
{
    const config_setting_t *knots = config_setting_get_member(group, "knots");
    const config_setting_t *values = config_setting_get_member(group, "values");
    if (!knots || !values) return;
    for (int i = 1; i < config_setting_length(knots); i++) {
        double a = cfg_number(config_setting_get_elem(knots, (unsigned)i - 1));
        double b = cfg_number(config_setting_get_elem(knots, (unsigned)i));
        if (!(b > a)) {
            char sa[48], sb[48];
            cfg_format_number(sa, sizeof(sa), a);
            cfg_format_number(sb, sizeof(sb), b);
            cfg_diag_at(d, knots, "'%s.knots' must be strictly increasing, got %s after %s",
                        path, sb, sa);
            break;
        }
    }
    if (config_setting_length(knots) != config_setting_length(values))
        cfg_diag_at(d, values, "'%s.values' must have as many elements as '%s.knots' (%d), got %d",
                    path, path, config_setting_length(knots), config_setting_length(values));
}

static void validate_entry(struct cfg_diag *d, const config_setting_t *s,
                           const config_setting_t *entry, const char *path)
{
    int before = d->count;
    if (!cfg_schema_check_value(d, s, entry, "", path)) return;
    if (entry_is(entry, "group")) {
        validate_group(d, s, s, config_setting_get_member(entry, "keys"), path);
        const char *check = entry_str(entry, "check");
        if (check && !strcmp(check, "schedule") && d->count == before)
            check_schedule(d, s, path);
    } else if (entry_is(entry, "map")) {
        const config_setting_t *of = config_setting_get_member(entry, "of");
        int merged = entry_str(entry, "merge_into") != NULL;
        for (int i = 0; i < config_setting_length(s); i++) {
            const config_setting_t *m = config_setting_get_elem(s, (unsigned)i);
            const struct cfg_origin *o = config_setting_get_hook(m);
            char sub[512];
            if (o && o->created && !merged) {
                unknown_key(d, m, path, s);
                continue;
            }
            join_path(sub, sizeof(sub), path, config_setting_name(m));
            if (of) cfg_schema_check_value(d, m, of, "", sub);
        }
    }
}

/* The boolean value of the entry named `name` in keys for group (as written, else its
 * default); -1 when it is not a boolean (reported elsewhere) or has no value. */
static int bool_member(const config_setting_t *group, const config_setting_t *keys,
                       const char *name)
{
    const config_setting_t *s = config_setting_get_member(group, name);
    if (!s) s = config_setting_get_member(config_setting_get_member(keys, name), "default");
    if (!s || config_setting_type(s) != CONFIG_TYPE_BOOL) return -1;
    return config_setting_get_bool(s);
}

/* A true bool whose entry `requires` another key of its group needs that key true. */
static void check_requires(struct cfg_diag *d, const config_setting_t *group,
                           const config_setting_t *m, const config_setting_t *keys,
                           const char *path)
{
    const char *name = config_setting_name(m);
    const char *other = entry_str(config_setting_get_member(keys, name), "requires");
    if (!other || bool_member(group, keys, name) != 1 || bool_member(group, keys, other) != 0)
        return;
    char a[512], b[512];
    join_path(a, sizeof(a), path, name);
    join_path(b, sizeof(b), path, other);
    cfg_diag_at(d, m, "'%s' needs '%s' = true", a, b);
}

/* Checks the members of group (NULL when absent; `where` is then the nearest existing
 * ancestor, for the place of "missing" messages) against the entries in keys. */
static void validate_group(struct cfg_diag *d, const config_setting_t *group,
                           const config_setting_t *where, const config_setting_t *keys,
                           const char *path)
{
    char sub[512];
    for (int i = 0; group && i < config_setting_length(group); i++) {
        const config_setting_t *m = config_setting_get_elem(group, (unsigned)i);
        const config_setting_t *entry = keys ? config_setting_get_member(keys, config_setting_name(m))
                                             : NULL;
        if (!entry) {
            unknown_key(d, m, path, keys);
            continue;
        }
        join_path(sub, sizeof(sub), path, config_setting_name(m));
        validate_entry(d, m, entry, sub);
    }
    for (int i = 0; keys && i < config_setting_length(keys); i++) {
        const config_setting_t *entry = config_setting_get_elem(keys, (unsigned)i);
        const char *name = config_setting_name(entry);
        if (group && config_setting_get_member(group, name)) continue;
        join_path(sub, sizeof(sub), path, name);
        if (entry_flag(entry, "required"))
            cfg_diag_at(d, where, "missing required key '%s'", sub);
        else if (entry_is(entry, "group"))
            validate_group(d, NULL, where, config_setting_get_member(entry, "keys"), sub);
    }
    for (int i = 0; group && keys && i < config_setting_length(group); i++)
        check_requires(d, group, config_setting_get_elem(group, (unsigned)i), keys, path);
}

void cfg_schema_validate(struct cfg_diag *d, const config_setting_t *root,
                         const config_setting_t *schema_root)
{
    validate_group(d, root, root, config_setting_get_member(schema_root, "experiment"), "");
}

/* ---- merging maps ---------------------------------------------------------------------- */

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

int cfg_schema_merge(struct cfg_diag *d, config_setting_t *root,
                     const config_setting_t *schema_root)
{
    const config_setting_t *keys = config_setting_get_member(schema_root, "experiment");
    for (int i = 0; keys && i < config_setting_length(keys); i++) {
        const config_setting_t *entry = config_setting_get_elem(keys, (unsigned)i);
        const char *into = entry_str(entry, "merge_into");
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
        const char *target = entry_str(entry, "merge_into");
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

/* ---- the canonical resolved tree ------------------------------------------------------- */

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
        if (omittable && entry_flag(entry, "omit_default")) *omittable = 1;
        path += n;
        if (*path == '.') path++;
        keys = *path ? config_setting_get_member(entry, "keys") : NULL;
    }
    return *path ? NULL : entry;
}

/* Writes value v (a setting of any compatible type) as `name` under dst in the entry's
 * canonical type: float entries as floats, float arrays as arrays of floats. */
static int put_value(config_setting_t *dst, const char *name, const config_setting_t *entry,
                     const config_setting_t *v)
{
    config_setting_t *s;
    if (entry_is(entry, "float")) {
        s = config_setting_add(dst, name, CONFIG_TYPE_FLOAT);
        return s && config_setting_set_float(s, cfg_number(v)) ? DR_OK : DR_ERR_NOMEM;
    }
    if (entry_is(entry, "float_array")) {
        s = config_setting_add(dst, name, CONFIG_TYPE_ARRAY);
        if (!s) return DR_ERR_NOMEM;
        for (int i = 0; i < config_setting_length(v); i++)
            if (!config_setting_set_float_elem(s, -1,
                                               cfg_number(config_setting_get_elem(v, (unsigned)i))))
                return DR_ERR_NOMEM;
        return DR_OK;
    }
    if (entry_is(entry, "string_array")) {
        s = config_setting_add(dst, name, CONFIG_TYPE_ARRAY);
        if (!s) return DR_ERR_NOMEM;
        for (int i = 0; i < config_setting_length(v); i++)
            if (!config_setting_set_string_elem(s, -1, config_setting_get_string_elem(v, i)))
                return DR_ERR_NOMEM;
        return DR_OK;
    }
    return cfg_copy(dst, name, v, NULL) ? DR_OK : DR_ERR_NOMEM;
}

static int name_cmp(const void *pa, const void *pb)
{
    const config_setting_t *a = *(const config_setting_t *const *)pa;
    const config_setting_t *b = *(const config_setting_t *const *)pb;
    return strcmp(config_setting_name(a), config_setting_name(b));
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
    if (entry_is(entry, "group")) {
        g = config_setting_add(dst, name, CONFIG_TYPE_GROUP);
        if (!g) return DR_ERR_NOMEM;
        rc = resolve_group(g, src, config_setting_get_member(entry, "keys"), schema_root);
        if (rc == DR_OK && entry_flag(entry, "omit_default") && config_setting_length(g) == 0 &&
            !config_setting_remove(dst, name))
            rc = DR_ERR_INTERNAL;
        return rc;
    }
    if (entry_is(entry, "map") || entry_is(entry, "blocks")) {
        if (!src) return DR_OK;
        g = config_setting_add(dst, name, CONFIG_TYPE_GROUP);
        if (!g) return DR_ERR_NOMEM;
        members = sorted_members(src, &n);
        if (n < 0) return DR_ERR_NOMEM;
        const config_setting_t *of = config_setting_get_member(entry, "of");
        const config_setting_t *block_keys = config_setting_get_member(schema_root, "block");
        for (int i = 0; i < n && rc == DR_OK; i++) {
            const char *mname = config_setting_name(members[i]);
            if (entry_is(entry, "map")) {
                rc = put_value(g, mname, of, members[i]);
            } else {
                config_setting_t *b = config_setting_add(g, mname, CONFIG_TYPE_GROUP);
                rc = b ? resolve_group(b, members[i], block_keys, schema_root) : DR_ERR_NOMEM;
            }
        }
        free(members);
        return rc;
    }
    if (entry_is(entry, "layers")) {
        g = config_setting_add(dst, name, CONFIG_TYPE_LIST);
        if (!g) return DR_ERR_NOMEM;
        return src ? cfg_model_canonical_layers(g, src, schema_root) : DR_OK;
    }
    if (entry_flag(entry, "omit_default") && (!src || cfg_schema_is_default(entry, src)))
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
        if (entry_str(entry, "merge_into")) continue;
        const config_setting_t *s = src ? config_setting_get_member(src, name) : NULL;
        int rc = resolve_entry(dst, name, s, entry, schema_root);
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

int cfg_schema_resolve(config_setting_t *dst_root, const config_setting_t *root,
                       const config_setting_t *schema_root)
{
    return resolve_group(dst_root, root, config_setting_get_member(schema_root, "experiment"),
                         schema_root);
}

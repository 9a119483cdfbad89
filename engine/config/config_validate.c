/* The walk of an experiment's keys against the schema's "experiment" entries: unknown
 * keys with did-you-mean, missing required keys, each value checked against its entry,
 * learning-rate schedules, and keys that need another one set. Layer 3 of config
 * handling, validation (config_schema.h). */
#include <stdio.h>
#include <string.h>

#include "config_schema.h"

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

/* knots strictly increasing, as many values as knots; both or neither (a parameter
 * group's optional schedule: train.groups). */
static void check_schedule(struct cfg_diag *d, const config_setting_t *group, const char *path)
{
    const config_setting_t *knots = config_setting_get_member(group, "knots");
    const config_setting_t *values = config_setting_get_member(group, "values");
    if (!knots != !values)
        cfg_diag_at(d, group, "'%s' needs both knots and values", path);
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
    if (cfg_entry_is(entry, "group")) {
        validate_group(d, s, s, config_setting_get_member(entry, "keys"), path);
        const char *check = cfg_entry_str(entry, "check");
        if (check && !strcmp(check, "schedule") && d->count == before)
            check_schedule(d, s, path);
    } else if (cfg_entry_is(entry, "map")) {
        const config_setting_t *of = config_setting_get_member(entry, "of");
        int merged = cfg_entry_str(entry, "merge_into") != NULL;
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
    const char *other = cfg_entry_str(config_setting_get_member(keys, name), "requires");
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
        if (cfg_entry_flag(entry, "required"))
            cfg_diag_at(d, where, "missing required key '%s'", sub);
        else if (cfg_entry_is(entry, "group"))
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

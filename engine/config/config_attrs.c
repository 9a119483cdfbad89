/* The values of one layer entry: every attribute of its type evaluated (a number, a
 * boolean, or an expression over the variables in scope), checked against its schema
 * entry, defaulted from the schema, and stored into the layer_spec field it fills.
 * Layer 4 of config handling, resolution (config_resolve.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config_resolve.h"

/* Where each attribute of the schema goes in a layer_spec: the final struct fill, from
 * LAYER_ATTRS (engine/core/graph.h); the kind from the field's type (a field of another
 * type fails to compile). */
#define LAYER_FIELD_ALIAS_(FIELD, NAME)                                                    \
    {#NAME, offsetof(struct layer_spec, FIELD),                                            \
     _Generic(((struct layer_spec *)0)->FIELD, int: 'i', float: 'f')},
#define LAYER_FIELD_ROW_(TYPE, FIELD, NAME) LAYER_FIELD_ALIAS_(FIELD, NAME)
static const struct {
    const char *name;
    size_t offset;
    char kind; /* 'i' int (bools too), 'f' float */
} layer_fields[] = {LAYER_ATTRS(LAYER_FIELD_ROW_, LAYER_FIELD_ALIAS_)};
#undef LAYER_FIELD_ROW_
#undef LAYER_FIELD_ALIAS_

int cfg_value_eval(double *v, struct cfg_diag *d, const config_setting_t *s,
                   cfg_expr_lookup lookup, void *ctx, const char *where, const char *what)
{
    if (config_setting_type(s) == CONFIG_TYPE_BOOL) {
        *v = config_setting_get_bool(s);
        return 1;
    }
    if (config_setting_type(s) != CONFIG_TYPE_STRING) {
        *v = cfg_number(s);
        return 1;
    }
    struct cfg_expr_error err;
    const char *text = config_setting_get_string(s);
    int st = cfg_expr_eval(v, text, lookup, ctx, 0, &err);
    if (st == EXPR_OK) return 1;
    if (st == EXPR_DIV_ZERO)
        cfg_diag_at(d, s, "%s: %s: division by zero in \"%s\"", where, what, text);
    else if (st == EXPR_UNKNOWN_VAR)
        cfg_diag_at(d, s, "%s: %s: unknown variable '$%s' in \"%s\"", where, what, err.name,
                    text);
    else
        cfg_diag_at(d, s, "%s: %s: %s in \"%s\"", where, what, err.msg, text);
    return 0;
}

static int store_field(struct layer_spec *ls, const char *name, double v)
{
    for (size_t i = 0; i < sizeof(layer_fields) / sizeof(layer_fields[0]); i++) {
        if (strcmp(layer_fields[i].name, name) != 0) continue;
        char *p = (char *)ls + layer_fields[i].offset;
        if (layer_fields[i].kind == 'i')
            *(int *)p = (int)v;
        else
            *(float *)p = (float)v;
        return 1;
    }
    return 0;
}

int cfg_attrs_fill(struct layer_spec *ls, struct cfg_diag *d, const config_setting_t *layer,
                   const config_setting_t *attrs, cfg_expr_lookup lookup, void *ctx,
                   const char *where)
{
    int n = attrs ? config_setting_length(attrs) : 0, ok = 1;
    double values[32];
    if (n > 32) return 0;
    for (int i = 0; i < n; i++) {
        const config_setting_t *entry = config_setting_get_elem(attrs, (unsigned)i);
        const char *name = config_setting_name(entry);
        const config_setting_t *s = config_setting_get_member(layer, name);
        const config_setting_t *def = config_setting_get_member(entry, "default");
        const char *from = NULL;
        char what[80], msg[160];
        double v = 0.0;
        snprintf(what, sizeof(what), "'%s'", name);
        if (s) {
            if (!cfg_value_eval(&v, d, s, lookup, ctx, where, what)) {
                ok = 0;
                continue;
            }
            if (config_setting_type(s) == CONFIG_TYPE_STRING &&
                !cfg_schema_check_number(entry, v, msg, sizeof(msg))) {
                cfg_diag_at(d, s, "%s: '%s' %s (from \"%s\")", where, name, msg,
                            config_setting_get_string(s));
                ok = 0;
                continue;
            }
        } else if (def) {
            v = config_setting_type(def) == CONFIG_TYPE_BOOL ? config_setting_get_bool(def)
                                                              : cfg_number(def);
        } else if (config_setting_lookup_string(entry, "default_from", &from)) {
            const config_setting_t *src = config_setting_get_member(attrs, from);
            if (!src || config_setting_index(src) >= i) return 0; /* schema bug */
            v = values[config_setting_index(src)];
        }
        values[i] = v;
        if (!store_field(ls, name, v)) {
            cfg_diag_at(d, layer, "%s: internal error: attribute '%s' has no field", where,
                        name);
            ok = 0;
        }
    }
    return ok;
}

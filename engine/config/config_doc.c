/* The config reference, printed from the schema itself (`dawnrun config-doc`, and the
 * generated part of docs/config.md), so that the documentation cannot drift from what
 * the loader accepts. Layer 3 of config handling, validation (config_schema.h). */
#include <stdio.h>
#include <string.h>

#include "config_schema.h"
#include "engine/core/experiment.h"
#include "base/status.h"

/* A value as written in a config: numbers, "strings", true/false, [a, b]. */
static void print_value(FILE *f, const config_setting_t *v, int as_float)
{
    char num[48];
    switch (config_setting_type(v)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
    case CONFIG_TYPE_FLOAT:
        cfg_format_number(num, sizeof(num), cfg_number(v));
        fprintf(f, "%s%s", num, as_float && !strpbrk(num, ".e") ? ".0" : "");
        break;
    case CONFIG_TYPE_BOOL: fputs(config_setting_get_bool(v) ? "true" : "false", f); break;
    case CONFIG_TYPE_STRING: fprintf(f, "\"%s\"", config_setting_get_string(v)); break;
    default:
        fputc('[', f);
        for (int i = 0; i < config_setting_length(v); i++) {
            if (i) fputs(", ", f);
            print_value(f, config_setting_get_elem(v, (unsigned)i), as_float);
        }
        fputc(']', f);
    }
}

/* Numeric limits: " >= 1", " 0..16", " > 0, <= 10000". */
static void print_limits(FILE *f, const config_setting_t *entry)
{
    const config_setting_t *lo = config_setting_get_member(entry, "min");
    const config_setting_t *hi = config_setting_get_member(entry, "max");
    const config_setting_t *gt = config_setting_get_member(entry, "gt");
    char a[48], b[48], c[48];
    const char *sep = " ";
    if (lo) cfg_format_number(a, sizeof(a), cfg_number(lo));
    if (hi) cfg_format_number(b, sizeof(b), cfg_number(hi));
    if (gt) cfg_format_number(c, sizeof(c), cfg_number(gt));
    if (lo && hi) {
        fprintf(f, " %s..%s", a, b);
        sep = ", ";
    } else if (lo) {
        fprintf(f, " >= %s", a);
        sep = ", ";
    }
    if (gt) {
        fprintf(f, "%s> %s", sep, c);
        sep = ", ";
    }
    if (hi && !lo) fprintf(f, "%s<= %s", sep, b);
}

/* "(type and limits, required | default X)" of an entry. */
static void print_kind(FILE *f, const config_setting_t *entry)
{
    const char *type = "", *from = NULL;
    const config_setting_t *s;
    config_setting_lookup_string(entry, "type", &type);
    fputc('(', f);
    if (!strcmp(type, "enum")) {
        s = config_setting_get_member(entry, "values");
        for (int i = 0; s && i < config_setting_length(s); i++)
            fprintf(f, "%s\"%s\"", i ? " | " : "", config_setting_get_string_elem(s, i));
    } else if (!strcmp(type, "float_array")) {
        const config_setting_t *lo = config_setting_get_member(entry, "min_length");
        const config_setting_t *hi = config_setting_get_member(entry, "max_length");
        fputs("array or list of numbers", f);
        print_limits(f, entry);
        if (lo && hi)
            fprintf(f, ", %d to %d of them", (int)cfg_number(lo), (int)cfg_number(hi));
    } else if (!strcmp(type, "string_array")) {
        fputs("array of strings", f);
    } else if (!strcmp(type, "map")) {
        fputs("group of name = number", f);
    } else if (!strcmp(type, "blocks")) {
        fputs("group of blocks", f);
    } else if (!strcmp(type, "layers")) {
        fputs("list of layers", f);
    } else {
        fputs(type, f);
        if (!strcmp(type, "int") || !strcmp(type, "float")) print_limits(f, entry);
    }
    int required = 0;
    config_setting_lookup_bool(entry, "required", &required);
    if (required) fputs(", required", f);
    if ((s = config_setting_get_member(entry, "default"))) {
        fputs(", default ", f);
        print_value(f, s, !strcmp(type, "float"));
    }
    if (config_setting_lookup_string(entry, "default_from", &from))
        fprintf(f, ", default: the value of %s", from);
    fputc(')', f);
}

static void print_entries(FILE *f, const config_setting_t *keys, const char *parent, int depth)
{
    for (int i = 0; keys && i < config_setting_length(keys); i++) {
        const config_setting_t *entry = config_setting_get_elem(keys, (unsigned)i);
        const char *doc = "", *type = "";
        char path[256];
        config_setting_lookup_string(entry, "doc", &doc);
        config_setting_lookup_string(entry, "type", &type);
        int w = parent[0] ? snprintf(path, sizeof(path), "%s.%s", parent, config_setting_name(entry))
                          : snprintf(path, sizeof(path), "%s", config_setting_name(entry));
        if (w < 0 || (size_t)w >= sizeof(path)) continue; /* no such depth in the schema */
        fprintf(f, "%*s- `%s` ", 2 * depth, "", path);
        print_kind(f, entry);
        fprintf(f, ": %s\n", doc);
        if (!strcmp(type, "group"))
            print_entries(f, config_setting_get_member(entry, "keys"), path, depth + 1);
    }
}

void config_schema_print(FILE *f)
{
    config_t schema;
    if (cfg_schema_load(&schema) != DR_OK) {
        config_destroy(&schema);
        return;
    }
    const config_setting_t *root = config_root_setting(&schema);
    fputs("## Experiment keys\n\n", f);
    print_entries(f, config_setting_get_member(root, "experiment"), "", 0);
    fputs("\n## Layer entries (in model.layers and in a block's layers)\n\n", f);
    print_entries(f, config_setting_get_member(root, "layer"), "", 0);
    fputs("\n## Block keys (model.blocks.NAME)\n\n", f);
    print_entries(f, config_setting_get_member(root, "block"), "", 0);
    fputs("\n## Layer types\n\nNumeric attributes take a number or a string holding an "
          "expression: numbers, $variables (block arguments, then model.vars), + - * / and "
          "parentheses.\n",
          f);
    const config_setting_t *types = config_setting_get_member(root, "layer_types");
    for (int i = 0; types && i < config_setting_length(types); i++) {
        const config_setting_t *t = config_setting_get_elem(types, (unsigned)i);
        const config_setting_t *attrs = config_setting_get_member(t, "attrs");
        const char *doc = "";
        config_setting_lookup_string(t, "doc", &doc);
        fprintf(f, "\n### %s\n\n%s\n", config_setting_name(t), doc);
        if (attrs && config_setting_length(attrs) > 0) {
            fputc('\n', f);
            print_entries(f, attrs, "", 0);
        } else {
            fputs("\nNo attributes.\n", f);
        }
    }
    config_destroy(&schema);
}

/* The dotted paths under `keys` (groups descended into, not printed), one a line. */
static void print_key_paths(FILE *f, const config_setting_t *keys, const char *parent)
{
    for (int i = 0; keys && i < config_setting_length(keys); i++) {
        const config_setting_t *entry = config_setting_get_elem(keys, (unsigned)i);
        const char *type = "";
        char path[256];
        config_setting_lookup_string(entry, "type", &type);
        int w = parent[0] ? snprintf(path, sizeof(path), "%s.%s", parent, config_setting_name(entry))
                          : snprintf(path, sizeof(path), "%s", config_setting_name(entry));
        if (w < 0 || (size_t)w >= sizeof(path)) continue; /* no such depth in the schema */
        if (!strcmp(type, "group"))
            print_key_paths(f, config_setting_get_member(entry, "keys"), path);
        else
            fprintf(f, "%s\n", path);
    }
}

void config_schema_print_keys(FILE *f)
{
    config_t schema;
    if (cfg_schema_load(&schema) != DR_OK) {
        config_destroy(&schema);
        return;
    }
    print_key_paths(f, config_setting_get_member(config_root_setting(&schema), "experiment"), "");
    config_destroy(&schema);
}

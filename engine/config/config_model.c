/* Checks of the model section that do not depend on values: layer entries, types,
 * attributes, blocks and their arguments, names, expressions' syntax and variables, and
 * block recursion. Every definition is checked once, so a mistake in a block is reported
 * once however often the block is used; the expansion (resolution, config_expand.c) runs
 * only on a model that passed. Layer 3 of config handling, validation (config_schema.h);
 * calls reading and lookups. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_lookup.h"
#include "config_schema.h"
#include "base/status.h"

#define NAME_BUF 512
#define CTX_BUF (2 * NAME_BUF + 64) /* "layer 'NAME' of block 'NAME'" */

/* The model section and the schema entries that describe it. */
struct model_check {
    struct cfg_diag *d;
    const config_setting_t *layer_keys;  /* schema: the keys of every layer entry */
    const config_setting_t *block_keys;  /* schema: the keys of a block */
    const config_setting_t *types;       /* schema: layer_types */
    const config_setting_t *vars;        /* model.vars (a group) or NULL */
    const config_setting_t *blocks;      /* model.blocks (a group) or NULL */
};

/* ---- variables in scope ---------------------------------------------------------------- */

/* The names an expression may use: a block's arguments (NULL at the top), then model.vars. */
struct names {
    const config_setting_t *args;
    const config_setting_t *vars;
};

static int args_has(const config_setting_t *args, const char *name)
{
    for (int i = 0; args && i < config_setting_length(args); i++) {
        const char *a = config_setting_get_string_elem(args, i);
        if (a && strcmp(a, name) == 0) return 1;
    }
    return 0;
}

static int names_lookup(void *ctx, const char *name, double *v)
{
    const struct names *nm = ctx;
    *v = 1.0;
    if (args_has(nm->args, name)) return 1;
    return nm->vars && config_setting_get_member(nm->vars, name) != NULL;
}

/* The closest name in scope to an unknown variable, or NULL. */
static const char *names_suggest(const struct names *nm, const char *word)
{
    const char *cands[256];
    int n = 0;
    for (int i = 0; nm->args && i < config_setting_length(nm->args) && n < 256; i++)
        cands[n++] = config_setting_get_string_elem(nm->args, i);
    for (int i = 0; nm->vars && i < config_setting_length(nm->vars) && n < 256; i++)
        cands[n++] = config_setting_name(config_setting_get_elem(nm->vars, (unsigned)i));
    return cfg_suggest(word, cands, n);
}

/* Checks a numeric value written as a number or an expression string. `what` names it in
 * messages ("'out'" or "argument 'c'"); entry (may be NULL) gives the limits. */
static void check_numeric(struct model_check *m, const config_setting_t *s, const char *ctx,
                          const char *what, const config_setting_t *entry,
                          const struct names *nm)
{
    if (config_setting_type(s) == CONFIG_TYPE_STRING) {
        struct cfg_expr_error err;
        const char *text = config_setting_get_string(s);
        int st = cfg_expr_eval(NULL, text, names_lookup, (void *)nm, 1, &err);
        char dym[160];
        if (st == EXPR_SYNTAX)
            cfg_diag_at(m->d, s, "%s: bad expression for %s (\"%s\"): %s", ctx, what, text,
                        err.msg);
        else if (st == EXPR_UNKNOWN_VAR)
            cfg_diag_at(m->d, s, "%s: unknown variable '$%s' in %s%s", ctx, err.name, what,
                        cfg_did_you_mean(dym, sizeof(dym), "$", names_suggest(nm, err.name)));
        return;
    }
    if (!entry) {
        if (!cfg_is_number(s))
            cfg_diag_at(m->d, s, "%s: %s must be a number or an expression, got %s", ctx, what,
                        cfg_type_phrase(s));
        return;
    }
    char prefix[CTX_BUF + 4];
    snprintf(prefix, sizeof(prefix), "%s: ", ctx);
    cfg_schema_check_value(m->d, s, entry, prefix, config_setting_name(s));
}

/* ---- one layer entry ------------------------------------------------------------------- */

/* Checks the attribute keys of a typed layer entry. */
static void check_typed(struct model_check *m, const config_setting_t *layer, const char *ctx,
                        const char *type, const struct names *nm)
{
    const config_setting_t *attrs = cfg_type_attrs(m->types, type);
    for (int i = 0; i < config_setting_length(layer); i++) {
        const config_setting_t *a = config_setting_get_elem(layer, (unsigned)i);
        const char *key = config_setting_name(a);
        if (cfg_is_layer_key(m->layer_keys, key)) continue;
        const config_setting_t *entry = attrs ? config_setting_get_member(attrs, key) : NULL;
        if (!entry) {
            char dym[160];
            const char *sugg = cfg_suggest_member(key, attrs);
            if (!sugg) sugg = cfg_suggest_member(key, m->layer_keys);
            cfg_diag_at(m->d, a, "%s: unknown attribute '%s' for type '%s'%s", ctx, key, type,
                        cfg_did_you_mean(dym, sizeof(dym), "", sugg));
            continue;
        }
        const char *etype = NULL;
        config_setting_lookup_string(entry, "type", &etype);
        char what[160];
        snprintf(what, sizeof(what), "'%s'", key);
        if (etype && (!strcmp(etype, "int") || !strcmp(etype, "float")))
            check_numeric(m, a, ctx, what, entry, nm);
        else {
            char prefix[CTX_BUF + 4];
            snprintf(prefix, sizeof(prefix), "%s: ", ctx);
            cfg_schema_check_value(m->d, a, entry, prefix, key);
        }
    }
    for (int i = 0; attrs && i < config_setting_length(attrs); i++) {
        const config_setting_t *entry = config_setting_get_elem(attrs, (unsigned)i);
        int required = 0;
        config_setting_lookup_bool(entry, "required", &required);
        if (required && !config_setting_get_member(layer, config_setting_name(entry)))
            cfg_diag_at(m->d, layer, "%s: missing required attribute '%s' for type '%s'", ctx,
                        config_setting_name(entry), type);
    }
}

/* Checks the argument keys of a block instance entry. */
static void check_instance(struct model_check *m, const config_setting_t *layer, const char *ctx,
                           const char *bname, const config_setting_t *block,
                           const struct names *nm)
{
    const config_setting_t *args = config_setting_get_member(block, "args");
    if (args && !config_setting_is_array(args) && !config_setting_is_list(args)) args = NULL;
    for (int i = 0; i < config_setting_length(layer); i++) {
        const config_setting_t *a = config_setting_get_elem(layer, (unsigned)i);
        const char *key = config_setting_name(a);
        if (cfg_is_layer_key(m->layer_keys, key)) continue;
        if (!args_has(args, key)) {
            char dym[160];
            cfg_diag_at(m->d, a, "%s: unknown argument '%s' for block '%s'%s", ctx, key, bname,
                        cfg_did_you_mean(dym, sizeof(dym), "", cfg_suggest_member(key, args)));
            continue;
        }
        char what[160];
        snprintf(what, sizeof(what), "argument '%s'", key);
        check_numeric(m, a, ctx, what, NULL, nm);
    }
    for (int i = 0; args && i < config_setting_length(args); i++) {
        const char *arg = config_setting_get_string_elem(args, i);
        if (arg && !config_setting_get_member(layer, arg))
            cfg_diag_at(m->d, layer, "%s: missing argument '%s' for block '%s'", ctx, arg, bname);
    }
    const config_setting_t *inputs = config_setting_get_member(layer, "inputs");
    if (inputs && config_setting_length(inputs) > 1)
        cfg_diag_at(m->d, inputs, "%s: a block instance takes one input, got %d", ctx,
                    config_setting_length(inputs));
}

/* Checks one entry of a layer list; `block` is the enclosing block's name (NULL at top). */
static void check_layer(struct model_check *m, const config_setting_t *layer, const char *name,
                        const char *block, const struct names *nm)
{
    char ctx[CTX_BUF], prefix[CTX_BUF + 4], dym[160];
    if (block)
        snprintf(ctx, sizeof(ctx), "layer '%s' of block '%s'", name, block);
    else
        snprintf(ctx, sizeof(ctx), "layer '%s'", name);
    snprintf(prefix, sizeof(prefix), "%s: ", ctx);
    for (int i = 0; i < config_setting_length(layer); i++) {
        const config_setting_t *a = config_setting_get_elem(layer, (unsigned)i);
        const config_setting_t *entry = config_setting_get_member(m->layer_keys,
                                                                  config_setting_name(a));
        if (entry && strcmp(config_setting_name(a), "name") != 0)
            cfg_schema_check_value(m->d, a, entry, prefix, config_setting_name(a));
    }
    const config_setting_t *type = config_setting_get_member(layer, "type");
    const config_setting_t *inst = config_setting_get_member(layer, "block");
    if (config_setting_get_member(layer, "input") && config_setting_get_member(layer, "inputs"))
        cfg_diag_at(m->d, layer, "%s: give either 'input' or 'inputs', not both", ctx);
    if (type && inst) {
        cfg_diag_at(m->d, inst, "%s: give either 'type' or 'block', not both", ctx);
        return;
    }
    if (!type && !inst) {
        cfg_diag_at(m->d, layer, "%s: needs 'type' (a layer type) or 'block' (a block name)",
                    ctx);
        return;
    }
    if (type && config_setting_type(type) == CONFIG_TYPE_STRING) {
        const char *t = config_setting_get_string(type);
        if (!config_setting_get_member(m->types, t))
            cfg_diag_at(m->d, type, "%s: unknown layer type '%s'%s", ctx, t,
                        cfg_did_you_mean(dym, sizeof(dym), "", cfg_suggest_member(t, m->types)));
        else
            check_typed(m, layer, ctx, t, nm);
    }
    if (inst && config_setting_type(inst) == CONFIG_TYPE_STRING) {
        const char *b = config_setting_get_string(inst);
        const config_setting_t *def = cfg_block_find(m->blocks, b);
        if (!def)
            cfg_diag_at(m->d, inst, "%s: unknown block '%s'%s", ctx, b,
                        cfg_did_you_mean(dym, sizeof(dym), "", cfg_suggest_member(b, m->blocks)));
        else
            check_instance(m, layer, ctx, b, def, nm);
    }
}

/* Checks a layer list: entries, names, then each entry. path names the list in messages. */
static void check_layers(struct model_check *m, const config_setting_t *list, const char *path,
                         const char *block, const struct names *nm)
{
    int n = config_setting_length(list);
    if (n == 0) {
        cfg_diag_at(m->d, list, "'%s' must not be empty", path);
        return;
    }
    for (int i = 0; i < n; i++) {
        const config_setting_t *layer = config_setting_get_elem(list, (unsigned)i);
        char name[NAME_BUF];
        if (!config_setting_is_group(layer)) {
            cfg_diag_at(m->d, layer, "'%s[%d]' must be a group, got %s", path, i,
                        cfg_type_phrase(layer));
            continue;
        }
        const config_setting_t *ns = config_setting_get_member(layer, "name");
        if (ns && config_setting_type(ns) != CONFIG_TYPE_STRING) {
            cfg_diag_at(m->d, ns, "'%s[%d].name' must be a string, got %s", path, i,
                        cfg_type_phrase(ns));
            continue;
        }
        cfg_layer_name(layer, i, name, sizeof(name));
        if (ns && !cfg_is_identifier(name)) {
            cfg_diag_at(m->d, ns, "'%s[%d].name' must be made of letters, digits and '_' "
                                  "(not starting with a digit), got \"%s\"",
                        path, i, name);
            continue;
        }
        if (!block && strcmp(name, "input") == 0)
            cfg_diag_at(m->d, layer, "layer name 'input' is reserved for the image");
        if (block && strcmp(name, "in") == 0)
            cfg_diag_at(m->d, layer, "layer name 'in' is reserved for the input of block '%s'",
                        block);
        int first = cfg_layer_find(list, name);
        if (first >= 0 && first < i) {
            const config_setting_t *f = config_setting_get_elem(list, (unsigned)first);
            char where[NAME_BUF + 32];
            snprintf(where, sizeof(where), "%s:%u", cfg_diag_file_name(m->d, f->file), f->line);
            if (block)
                cfg_diag_at(m->d, layer, "duplicate layer name '%s' in block '%s' (first "
                                         "defined at %s)", name, block, where);
            else
                cfg_diag_at(m->d, layer, "duplicate layer name '%s' (first defined at %s)", name,
                            where);
        }
        check_layer(m, layer, name, block, nm);
    }
}

/* ---- blocks ---------------------------------------------------------------------------- */

/* " (did you mean 'x'?)" for a name that is not an entry of a layer list, or "". */
static const char *suggest_layer(const config_setting_t *list, const char *word, char *buf,
                                 size_t n)
{
    const char *cands[256];
    char names[256][64];
    int count = 0;
    for (int i = 0; i < config_setting_length(list) && count < 256; i++, count++) {
        cfg_layer_name(config_setting_get_elem(list, (unsigned)i), i, names[count], 64);
        cands[count] = names[count];
    }
    return cfg_did_you_mean(buf, n, "", cfg_suggest(word, cands, count));
}

static void check_block(struct model_check *m, const config_setting_t *block)
{
    const char *bname = config_setting_name(block);
    char path[NAME_BUF + 32], sub[NAME_BUF + 64], dym[160];
    snprintf(path, sizeof(path), "model.blocks.%s", bname);
    if (!config_setting_is_group(block)) {
        cfg_diag_at(m->d, block, "'%s' must be a group, got %s", path, cfg_type_phrase(block));
        return;
    }
    for (int i = 0; i < config_setting_length(block); i++) {
        const config_setting_t *k = config_setting_get_elem(block, (unsigned)i);
        const char *key = config_setting_name(k);
        const config_setting_t *entry = config_setting_get_member(m->block_keys, key);
        snprintf(sub, sizeof(sub), "%s.%s", path, key);
        if (!entry)
            cfg_diag_at(m->d, k, "unknown key '%s' in '%s'%s", key, path,
                        cfg_did_you_mean(dym, sizeof(dym), "",
                                         cfg_suggest_member(key, m->block_keys)));
        else if (strcmp(key, "layers") != 0)
            cfg_schema_check_value(m->d, k, entry, "", sub);
    }
    const config_setting_t *args = config_setting_get_member(block, "args");
    if (args && !config_setting_is_array(args) && !config_setting_is_list(args)) args = NULL;
    for (int i = 0; args && i < config_setting_length(args); i++) {
        const config_setting_t *a = config_setting_get_elem(args, (unsigned)i);
        const char *arg = config_setting_get_string(a);
        if (!arg) continue;
        if (!cfg_is_identifier(arg))
            cfg_diag_at(m->d, a, "'%s.args[%d]' must be made of letters, digits and '_' (not "
                                 "starting with a digit), got \"%s\"", path, i, arg);
        else if (cfg_is_layer_key(m->layer_keys, arg))
            cfg_diag_at(m->d, a, "block '%s': '%s' cannot be an argument name (it is a layer "
                                 "key)", bname, arg);
        for (int j = 0; j < i; j++) {
            const char *prev = config_setting_get_string_elem(args, j);
            if (prev && strcmp(prev, arg) == 0) {
                cfg_diag_at(m->d, a, "block '%s': argument '%s' is listed twice", bname, arg);
                break;
            }
        }
    }
    const config_setting_t *layers = config_setting_get_member(block, "layers");
    snprintf(sub, sizeof(sub), "%s.layers", path);
    if (!layers) {
        cfg_diag_at(m->d, block, "missing required key '%s'", sub);
        return;
    }
    if (!config_setting_is_list(layers)) {
        cfg_diag_at(m->d, layers, "'%s' must be a list of layers, got %s", sub,
                    cfg_type_phrase(layers));
        return;
    }
    struct names nm = {args, m->vars};
    check_layers(m, layers, sub, bname, &nm);
    const char *out = NULL;
    if (config_setting_lookup_string(block, "output", &out) && out[0] &&
        cfg_layer_find(layers, out) < 0) {
        cfg_diag_at(m->d, config_setting_get_member(block, "output"),
                    "block '%s': output '%s' is not a layer of the block%s", bname, out,
                    suggest_layer(layers, out, dym, sizeof(dym)));
    }
}

/* Depth-first search for a block that instantiates itself, directly or not. state: 0 new,
 * 1 on the stack, 2 done. Reports each cycle once, at the instance that closes it. */
static void find_cycles(struct model_check *m, int b, int *state, int *stack, int depth)
{
    const config_setting_t *block = config_setting_get_elem(m->blocks, (unsigned)b);
    const config_setting_t *layers = config_setting_get_member(block, "layers");
    state[b] = 1;
    stack[depth] = b;
    for (int i = 0; layers && config_setting_is_list(layers) &&
                    i < config_setting_length(layers); i++) {
        const config_setting_t *layer = config_setting_get_elem(layers, (unsigned)i);
        const char *target = NULL;
        if (!config_setting_is_group(layer) ||
            !config_setting_lookup_string(layer, "block", &target))
            continue;
        const config_setting_t *def = cfg_block_find(m->blocks, target);
        if (!def) continue;
        int t = config_setting_index(def);
        if (state[t] == 1) {
            char chain[1024] = "";
            size_t used = 0;
            int from = depth;
            while (from > 0 && stack[from] != t) from--;
            for (int k = from; k <= depth; k++) {
                int w = snprintf(chain + used, sizeof(chain) - used, "%s -> ",
                                 config_setting_name(config_setting_get_elem(
                                     m->blocks, (unsigned)stack[k])));
                if (w > 0 && (size_t)w < sizeof(chain) - used) used += (size_t)w;
            }
            cfg_diag_at(m->d, layer, "block '%s' instantiates itself (%s%s)", target, chain,
                        target);
        } else if (state[t] == 0) {
            find_cycles(m, t, state, stack, depth + 1);
        }
    }
    state[b] = 2;
}

/* ---- the model ------------------------------------------------------------------------- */

int cfg_model_check(struct cfg_diag *d, const config_setting_t *model,
                    const config_setting_t *schema_root)
{
    int rc = DR_OK;
    int *state = NULL;
    struct model_check m = {
        .d = d,
        .layer_keys = config_setting_get_member(schema_root, "layer"),
        .block_keys = config_setting_get_member(schema_root, "block"),
        .types = config_setting_get_member(schema_root, "layer_types"),
    };
    if (!model || !config_setting_is_group(model)) return DR_OK; /* reported */
    const config_setting_t *vars = config_setting_get_member(model, "vars");
    const config_setting_t *blocks = config_setting_get_member(model, "blocks");
    const config_setting_t *layers = config_setting_get_member(model, "layers");
    m.vars = vars && config_setting_is_group(vars) ? vars : NULL;
    m.blocks = blocks && config_setting_is_group(blocks) ? blocks : NULL;
    int nb = m.blocks ? config_setting_length(m.blocks) : 0;
    for (int b = 0; b < nb; b++) check_block(&m, config_setting_get_elem(m.blocks, (unsigned)b));
    if (nb > 0) {
        state = calloc((size_t)nb * 2, sizeof(*state));
        CHECK_ALLOC(state, "the block check");
        for (int b = 0; b < nb; b++)
            if (state[b] == 0) find_cycles(&m, b, state, state + nb, 0);
    }
    if (layers && config_setting_is_list(layers)) {
        char dym[160];
        struct names nm = {NULL, m.vars};
        check_layers(&m, layers, "model.layers", NULL, &nm);
        const config_setting_t *os = config_setting_get_member(model, "output");
        const char *out = NULL;
        if (os && config_setting_type(os) == CONFIG_TYPE_STRING &&
            (out = config_setting_get_string(os))[0] && cfg_layer_find(layers, out) < 0)
            cfg_diag_at(d, os, "model output '%s' is not a layer of 'model.layers'%s", out,
                        suggest_layer(layers, out, dym, sizeof(dym)));
    }
cleanup:
    free(state);
    return rc;
}

/* Expansion of a checked model into a net_spec: block instances are replaced by their
 * layers under the prefix "<instance>.", every input name is resolved to a fully
 * qualified layer name (or "input", the image), and every attribute is evaluated (block
 * arguments first, then model.vars) and filled from the schema's defaults. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_internal.h"
#include "experiment.h"
#include "../base/status.h"

#define QNAME 1024

/* One layer list being expanded. */
struct scope {
    const char *prefix;            /* "" at the top, else "inst." / "outer.inst." */
    const config_setting_t *list;  /* the layer entries */
    const config_setting_t *args;  /* the block's argument names, NULL at the top */
    const double *values;          /* their values */
    const char *input;             /* qualified input of the instance ("input" at the top) */
    const char *block;             /* the block's name, NULL at the top */
    const config_setting_t *vars;  /* model.vars */
};

/* Where each attribute of the schema goes in a layer_spec: the final struct fill. */
static const struct {
    const char *name;
    size_t offset;
    char kind; /* 'i' int (bools too), 'f' float */
} layer_fields[] = {
    {"out", offsetof(struct layer_spec, out), 'i'},
    {"in", offsetof(struct layer_spec, expect_in), 'i'},
    {"channels", offsetof(struct layer_spec, expect_in), 'i'},
    {"k", offsetof(struct layer_spec, k), 'i'},
    {"stride", offsetof(struct layer_spec, stride), 'i'},
    {"pad", offsetof(struct layer_spec, pad), 'i'},
    {"bias", offsetof(struct layer_spec, bias), 'i'},
    {"eps", offsetof(struct layer_spec, eps), 'f'},
    {"momentum", offsetof(struct layer_spec, momentum), 'f'},
    {"freeze_weight", offsetof(struct layer_spec, freeze_weight), 'i'},
    {"freeze_bias", offsetof(struct layer_spec, freeze_bias), 'i'},
    {"splits", offsetof(struct layer_spec, splits), 'i'},
    {"frozen", offsetof(struct layer_spec, frozen), 'i'},
    {"dirac", offsetof(struct layer_spec, dirac), 'i'},
    {"images", offsetof(struct layer_spec, whiten_images), 'i'},
    {"negate", offsetof(struct layer_spec, negate), 'i'},
    {"bias_epochs", offsetof(struct layer_spec, bias_epochs), 'i'},
    {"alpha", offsetof(struct layer_spec, alpha), 'f'},
    {"scale", offsetof(struct layer_spec, scale), 'f'},
};

/* ---- file names ------------------------------------------------------------------------ */

const char *cfg_files_intern(struct cfg_files *f, const char *name)
{
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->names[i], name) == 0) return f->names[i];
    if (f->count == f->cap) {
        int cap = f->cap ? 2 * f->cap : 4;
        char **grown = realloc(f->names, (size_t)cap * sizeof(*grown));
        if (!grown) return NULL;
        f->names = grown;
        f->cap = cap;
    }
    size_t n = strlen(name) + 1;
    char *copy = malloc(n);
    if (!copy) return NULL;
    memcpy(copy, name, n);
    f->names[f->count++] = copy;
    return copy;
}

void cfg_files_free(struct cfg_files *f)
{
    for (int i = 0; i < f->count; i++) free(f->names[i]);
    free(f->names);
    f->names = NULL;
    f->count = f->cap = 0;
}

/* ---- names ----------------------------------------------------------------------------- */

static int scope_lookup(void *ctx, const char *name, double *v)
{
    const struct scope *sc = ctx;
    for (int i = 0; sc->args && i < config_setting_length(sc->args); i++)
        if (strcmp(config_setting_get_string_elem(sc->args, i), name) == 0) {
            *v = sc->values[i];
            return 1;
        }
    const config_setting_t *s = sc->vars ? config_setting_get_member(sc->vars, name) : NULL;
    if (!s || !cfg_is_number(s)) return 0;
    *v = cfg_number(s);
    return 1;
}

/* Qualified name of the output of entry i of sc->list: the layer itself, or for a block
 * instance the output layer of the block (its `output`, else its last entry). */
static void entry_output(const struct cfg_model *m, const char *prefix,
                         const config_setting_t *list, int i, char *buf, size_t n)
{
    const config_setting_t *layer = config_setting_get_elem(list, (unsigned)i);
    char local[QNAME], inner[QNAME];
    const char *bname = NULL, *out = NULL;
    cfg_layer_name(layer, i, local, sizeof(local));
    if (!config_setting_lookup_string(layer, "block", &bname)) {
        snprintf(buf, n, "%s%s", prefix, local);
        return;
    }
    const config_setting_t *block = cfg_block_find(m, bname);
    const config_setting_t *layers = config_setting_get_member(block, "layers");
    int last = config_setting_length(layers) - 1;
    if (config_setting_lookup_string(block, "output", &out) && out[0])
        last = cfg_layer_find(layers, out);
    if (snprintf(inner, sizeof(inner), "%s%s.", prefix, local) >= (int)sizeof(inner)) {
        snprintf(buf, n, "%s%s", prefix, local); /* too long: copy_name reports it */
        return;
    }
    entry_output(m, inner, layers, last, buf, n);
}

/* The qualified name a reference stands for in scope sc. */
static void resolve_ref(const struct cfg_model *m, const struct scope *sc, const char *ref,
                        char *buf, size_t n)
{
    int i = cfg_layer_find(sc->list, ref);
    if (i >= 0)
        entry_output(m, sc->prefix, sc->list, i, buf, n);
    else if (sc->block && strcmp(ref, "in") == 0)
        snprintf(buf, n, "%s", sc->input);
    else if (!sc->block && strcmp(ref, "input") == 0)
        snprintf(buf, n, "input");
    else
        snprintf(buf, n, "%s%s", sc->prefix, ref); /* unknown: graph_build names it */
}

/* The qualified input names of entry i: as written, or the previous entry's output (the
 * scope's input for the first). Returns how many, at most GRAPH_MAX_INPUTS. */
static int entry_inputs(const struct cfg_model *m, const struct scope *sc, int i,
                        char out[GRAPH_MAX_INPUTS][QNAME])
{
    const config_setting_t *layer = config_setting_get_elem(sc->list, (unsigned)i);
    const config_setting_t *inputs = config_setting_get_member(layer, "inputs");
    const char *one = NULL;
    if (inputs) {
        int n = config_setting_length(inputs);
        if (n > GRAPH_MAX_INPUTS) n = GRAPH_MAX_INPUTS;
        for (int k = 0; k < n; k++)
            resolve_ref(m, sc, config_setting_get_string_elem(inputs, k), out[k], QNAME);
        return n;
    }
    if (config_setting_lookup_string(layer, "input", &one))
        resolve_ref(m, sc, one, out[0], QNAME);
    else if (i == 0)
        snprintf(out[0], QNAME, "%s", sc->input);
    else
        entry_output(m, sc->prefix, sc->list, i - 1, out[0], QNAME);
    return 1;
}

/* ---- values ---------------------------------------------------------------------------- */

/* The value of a numeric setting or expression in scope; reports a failure under ctx. */
static int eval_value(struct cfg_model *m, const struct scope *sc, const config_setting_t *s,
                      const char *ctx, const char *what, double *v)
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
    int st = cfg_expr_eval(v, text, scope_lookup, (void *)sc, 0, &err);
    if (st == EXPR_OK) return 1;
    if (st == EXPR_DIV_ZERO)
        cfg_diag_at(m->d, s, "%s: %s: division by zero in \"%s\"", ctx, what, text);
    else if (st == EXPR_UNKNOWN_VAR)
        cfg_diag_at(m->d, s, "%s: %s: unknown variable '$%s' in \"%s\"", ctx, what, err.name,
                    text);
    else
        cfg_diag_at(m->d, s, "%s: %s: %s in \"%s\"", ctx, what, err.msg, text);
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

/* Evaluates and stores every attribute of a typed entry into ls. */
static int fill_attrs(struct cfg_model *m, const struct scope *sc, const config_setting_t *layer,
                      const char *type, const char *ctx, struct layer_spec *ls)
{
    const config_setting_t *t = config_setting_get_member(m->types, type);
    const config_setting_t *attrs = config_setting_get_member(t, "attrs");
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
            if (!eval_value(m, sc, s, ctx, what, &v)) {
                ok = 0;
                continue;
            }
            if (config_setting_type(s) == CONFIG_TYPE_STRING &&
                !cfg_schema_check_number(entry, v, msg, sizeof(msg))) {
                cfg_diag_at(m->d, s, "%s: '%s' %s (from \"%s\")", ctx, name, msg,
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
            cfg_diag_at(m->d, layer, "%s: internal error: attribute '%s' has no field", ctx,
                        name);
            ok = 0;
        }
    }
    return ok;
}

int config_layer_defaults(struct layer_spec *ls, enum layer_type type)
{
    int rc = DR_OK;
    config_t schema, empty;
    struct cfg_diag d = {0};
    config_init(&empty);
    TRY(cfg_schema_load(&schema));
    const char *name = layer_type_name(type);
    const config_setting_t *types =
        config_setting_get_member(config_root_setting(&schema), "layer_types");
    struct cfg_model m = {.d = &d, .types = types};
    struct scope top = {"", NULL, NULL, NULL, "input", NULL, NULL};
    ls->type = type;
    if (type == LAYER_INPUT) goto cleanup; /* the image: no attributes, not in the schema */
    if (!config_setting_get_member(types, name))
        FAIL(DR_ERR_INTERNAL, "layer type '%s' is not in the config schema", name);
    /* an entry with no attribute written: every attribute from the schema, as the
     * expansion of a config fills it */
    if (!fill_attrs(&m, &top, config_root_setting(&empty), name, name, ls) || d.count > 0)
        FAIL(DR_ERR_INTERNAL, "the schema's defaults of layer type '%s' do not apply", name);
cleanup:
    cfg_diag_free(&d);
    config_destroy(&empty);
    config_destroy(&schema);
    return rc;
}

/* Ghost batch norm cuts every training batch into `splits` equal parts. */
static void check_splits(struct cfg_model *m, const config_setting_t *layer, const char *ctx,
                         const struct layer_spec *ls)
{
    if (ls->type != LAYER_BN || ls->splits <= 1 || m->batch_size <= 0 ||
        m->batch_size % ls->splits == 0)
        return;
    const config_setting_t *s = config_setting_get_member(layer, "splits");
    cfg_diag_at(m->d, s ? s : layer, "%s: splits %d does not divide train.batch_size %d", ctx,
                ls->splits, m->batch_size);
}

/* ---- expansion ------------------------------------------------------------------------- */

static int expand_scope(struct cfg_model *m, const struct scope *sc);

static int copy_name(char *dst, const char *src, const config_setting_t *where,
                     struct cfg_model *m, const char *what)
{
    if (strlen(src) >= GRAPH_NAME_MAX) {
        cfg_diag_at(m->d, where, "%s '%s' is too long (at most %d characters)", what, src,
                    GRAPH_NAME_MAX - 1);
        return 0;
    }
    snprintf(dst, GRAPH_NAME_MAX, "%s", src);
    return 1;
}

static int expand_layer(struct cfg_model *m, const struct scope *sc, int i)
{
    const config_setting_t *layer = config_setting_get_elem(sc->list, (unsigned)i);
    char local[QNAME], qname[QNAME], ctx[QNAME + 16], inputs[GRAPH_MAX_INPUTS][QNAME];
    const char *type = NULL, *bname = NULL;
    cfg_layer_name(layer, i, local, sizeof(local));
    snprintf(qname, sizeof(qname), "%s%s", sc->prefix, local);
    snprintf(ctx, sizeof(ctx), "layer '%s'", qname);
    int n_inputs = entry_inputs(m, sc, i, inputs);
    if (config_setting_lookup_string(layer, "type", &type)) {
        struct layer_spec *ls = net_spec_append(m->spec);
        if (!ls) return DR_ERR_NOMEM;
        int t = layer_type_from_name(type);
        if (t < 0) {
            cfg_diag_at(m->d, layer, "%s: internal error: type '%s' is unknown to the graph",
                        ctx, type);
            return DR_OK;
        }
        ls->type = (enum layer_type)t;
        copy_name(ls->name, qname, layer, m, "layer name");
        ls->n_inputs = n_inputs;
        for (int k = 0; k < n_inputs; k++) copy_name(ls->inputs[k], inputs[k], layer, m, "input name");
        ls->file = cfg_files_intern(m->files, cfg_diag_file_name(m->d, layer->file));
        if (!ls->file) return DR_ERR_NOMEM;
        ls->line = (int)layer->line;
        if (fill_attrs(m, sc, layer, type, ctx, ls)) check_splits(m, layer, ctx, ls);
        return DR_OK;
    }
    if (!config_setting_lookup_string(layer, "block", &bname)) return DR_OK; /* checked */
    const config_setting_t *block = cfg_block_find(m, bname);
    const config_setting_t *args = config_setting_get_member(block, "args");
    int n_args = args ? config_setting_length(args) : 0, ok = 1;
    double *values = calloc((size_t)(n_args ? n_args : 1), sizeof(*values));
    if (!values) return DR_ERR_NOMEM;
    for (int a = 0; a < n_args; a++) {
        const char *arg = config_setting_get_string_elem(args, a);
        char what[80];
        snprintf(what, sizeof(what), "argument '%s'", arg);
        ok &= eval_value(m, sc, config_setting_get_member(layer, arg), ctx, what, &values[a]);
    }
    int rc = DR_OK;
    if (ok) {
        char prefix[QNAME + 1];
        snprintf(prefix, sizeof(prefix), "%s.", qname);
        struct scope inner = {prefix, config_setting_get_member(block, "layers"), args,
                              values, inputs[0], bname, sc->vars};
        rc = expand_scope(m, &inner);
    }
    free(values);
    return rc;
}

static int expand_scope(struct cfg_model *m, const struct scope *sc)
{
    for (int i = 0; i < config_setting_length(sc->list); i++) {
        int rc = expand_layer(m, sc, i);
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

int cfg_model_expand(struct cfg_model *m, const config_setting_t *layers)
{
    struct scope top = {"", layers, NULL, NULL, "input", NULL, m->vars};
    int before = m->d->count;
    int rc = expand_scope(m, &top);
    if (rc == DR_OK && m->d->count != before) rc = DR_ERR_CONFIG;
    return rc;
}

void cfg_model_output_name(const struct cfg_model *m, const config_setting_t *layers,
                           const char *name, char *buf, size_t n)
{
    struct scope top = {"", layers, NULL, NULL, "input", NULL, m->vars};
    resolve_ref(m, &top, name, buf, n);
}

/* Expansion of a checked model into a net_spec: block instances are replaced by their
 * layers under the prefix "<instance>.", every input name is resolved to a fully
 * qualified layer name (or "input", the image), and every attribute is evaluated (block
 * arguments first, then model.vars) and filled from the schema's defaults
 * (config_attrs.c). Layer 4 of config handling, resolution (config_resolve.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_resolve.h"
#include "config_lookup.h"
#include "base/grow.h"
#include "base/status.h"

#define QNAME 1024

/* What every step of the expansion shares. */
struct expansion {
    struct cfg_diag *d;
    const config_setting_t *types;   /* schema: layer_types */
    const config_setting_t *vars;    /* model.vars (a group) or NULL */
    const config_setting_t *blocks;  /* model.blocks (a group) or NULL */
    struct net_spec *spec;
    struct cfg_files *files;
    int batch_size;                  /* train.batch_size (0 = unknown): bn splits must
                                        divide it */
};

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

/* ---- file names ------------------------------------------------------------------------ */

const char *cfg_files_intern(struct cfg_files *f, const char *name)
{
    for (int i = 0; i < f->count; i++)
        if (strcmp(f->names[i], name) == 0) return f->names[i];
    if (grow_reserve(&f->names, &f->cap, f->count + 1, 4, sizeof(*f->names)) != DR_OK)
        return NULL;
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
static void entry_output(const struct expansion *m, const char *prefix,
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
    const config_setting_t *block = cfg_block_find(m->blocks, bname);
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
static void resolve_ref(const struct expansion *m, const struct scope *sc, const char *ref,
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
static int entry_inputs(const struct expansion *m, const struct scope *sc, int i,
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

/* ---- checks across attributes ---------------------------------------------------------- */

/* Ghost batch norm cuts every training batch into `splits` equal parts. */
static void check_splits(struct expansion *m, const config_setting_t *layer, const char *ctx,
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

static int expand_scope(struct expansion *m, const struct scope *sc);

static int copy_name(char *dst, const char *src, const config_setting_t *where,
                     struct expansion *m, const char *what)
{
    if (strlen(src) >= GRAPH_NAME_MAX) {
        cfg_diag_at(m->d, where, "%s '%s' is too long (at most %d characters)", what, src,
                    GRAPH_NAME_MAX - 1);
        return 0;
    }
    snprintf(dst, GRAPH_NAME_MAX, "%s", src);
    return 1;
}

static int expand_layer(struct expansion *m, const struct scope *sc, int i)
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
        if (cfg_attrs_fill(ls, m->d, layer, cfg_type_attrs(m->types, type), scope_lookup,
                           (void *)sc, ctx))
            check_splits(m, layer, ctx, ls);
        return DR_OK;
    }
    if (!config_setting_lookup_string(layer, "block", &bname)) return DR_OK; /* checked */
    const config_setting_t *block = cfg_block_find(m->blocks, bname);
    const config_setting_t *args = config_setting_get_member(block, "args");
    int n_args = args ? config_setting_length(args) : 0, ok = 1;
    double *values = calloc((size_t)(n_args ? n_args : 1), sizeof(*values));
    if (!values) return DR_ERR_NOMEM;
    for (int a = 0; a < n_args; a++) {
        const char *arg = config_setting_get_string_elem(args, a);
        char what[80];
        snprintf(what, sizeof(what), "argument '%s'", arg);
        ok &= cfg_value_eval(&values[a], m->d, config_setting_get_member(layer, arg),
                             scope_lookup, (void *)sc, ctx, what);
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

static int expand_scope(struct expansion *m, const struct scope *sc)
{
    for (int i = 0; i < config_setting_length(sc->list); i++) {
        int rc = expand_layer(m, sc, i);
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

/* Expands the top-level layers into m->spec; DR_ERR_CONFIG when a value was refused. */
static int expand_top(struct expansion *m, const config_setting_t *layers)
{
    struct scope top = {"", layers, NULL, NULL, "input", NULL, m->vars};
    int before = m->d->count;
    int rc = expand_scope(m, &top);
    if (rc == DR_OK && m->d->count != before) rc = DR_ERR_CONFIG;
    return rc;
}

/* The qualified name a top-level reference stands for (a block instance's name stands
 * for its output layer). */
static void output_name(const struct expansion *m, const config_setting_t *layers,
                        const char *name, char *buf, size_t n)
{
    struct scope top = {"", layers, NULL, NULL, "input", NULL, m->vars};
    resolve_ref(m, &top, name, buf, n);
}

int cfg_model_expand(struct cfg_diag *d, struct net_spec *spec, struct cfg_files *files,
                     const config_setting_t *model, const config_setting_t *schema_root)
{
    int rc = DR_OK;
    struct expansion m = {
        .d = d,
        .types = config_setting_get_member(schema_root, "layer_types"),
        .spec = spec,
        .files = files,
    };
    if (!model || !config_setting_is_group(model)) return DR_ERR_CONFIG; /* reported */
    const config_setting_t *bs = config_lookup(model->config, "train.batch_size");
    if (!bs) {
        const config_setting_t *entry = cfg_schema_entry(schema_root, "train.batch_size", NULL);
        bs = entry ? config_setting_get_member(entry, "default") : NULL;
    }
    if (bs && (config_setting_type(bs) == CONFIG_TYPE_INT ||
               config_setting_type(bs) == CONFIG_TYPE_INT64))
        m.batch_size = (int)cfg_number(bs); /* another type was reported by the schema */
    const config_setting_t *vars = config_setting_get_member(model, "vars");
    const config_setting_t *blocks = config_setting_get_member(model, "blocks");
    const config_setting_t *layers = config_setting_get_member(model, "layers");
    m.vars = vars && config_setting_is_group(vars) ? vars : NULL;
    m.blocks = blocks && config_setting_is_group(blocks) ? blocks : NULL;
    /* Expand only a sound config: values met during expansion would otherwise add
     * follow-on messages to the ones already reported. */
    if (d->count != 0 || d->nomem || !layers || !config_setting_is_list(layers))
        return DR_ERR_CONFIG;
    rc = expand_top(&m, layers);
    const char *out = NULL;
    spec->output[0] = '\0';
    if (rc == DR_OK && config_setting_lookup_string(model, "output", &out) && out[0]) {
        char qname[1024];
        output_name(&m, layers, out, qname, sizeof(qname));
        if (strlen(qname) >= sizeof(spec->output)) {
            cfg_diag_at(d, config_setting_get_member(model, "output"),
                        "model output '%s' is too long (at most %d characters)", qname,
                        (int)sizeof(spec->output) - 1);
            rc = DR_ERR_CONFIG;
        } else {
            memcpy(spec->output, qname, strlen(qname) + 1);
        }
    }
    return rc;
}

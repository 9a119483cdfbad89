/* graph_build: resolves a net_spec's names into layer ids, infers and checks every
 * output shape, lays out the parameters and counts FLOPs (engine/core/graph.h). Stops at the
 * first problem and describes it as "file:line: layer 'name': message". */
#include "graph.h"

#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"

/* Writes "file:line: layer 'name': <message>" (or "layer 'name': ..." without a file, or
 * just the message without a layer) to err; returns DR_ERR_CONFIG. */
static int build_error(char *err, size_t errlen, const struct layer_spec *ls, const char *fmt,
                       ...) __attribute__((format(printf, 4, 5)));
static int build_error(char *err, size_t errlen, const struct layer_spec *ls, const char *fmt,
                       ...)
{
    if (!err || errlen == 0) return DR_ERR_CONFIG;
    int n = 0;
    if (ls && ls->file)
        n = snprintf(err, errlen, "%s:%d: layer '%s': ", ls->file, ls->line, ls->name);
    else if (ls)
        n = snprintf(err, errlen, "layer '%s': ", ls->name);
    if (n < 0) n = 0;
    if ((size_t)n < errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return DR_ERR_CONFIG;
}

/* Index of the first spec layer before `upto` named `name`, or -1. Networks have at most
 * a few hundred layers, so a linear scan is enough. */
static int spec_find(const struct net_spec *spec, int upto, const char *name)
{
    for (int j = 0; j < upto; j++)
        if (strncmp(spec->layers[j].name, name, GRAPH_NAME_MAX) == 0) return j;
    return -1;
}

/* Rejects an empty, reserved or duplicate name for spec layer i. */
static int check_name(const struct net_spec *spec, int i, char *err, size_t errlen)
{
    const struct layer_spec *ls = &spec->layers[i];
    if (memchr(ls->name, '\0', GRAPH_NAME_MAX) == NULL)
        return build_error(err, errlen, NULL, "%s:%d: a layer name is longer than %d characters",
                           ls->file ? ls->file : "?", ls->line, GRAPH_NAME_MAX - 1);
    if (ls->name[0] == '\0') return build_error(err, errlen, ls, "the layer has no name");
    if (strcmp(ls->name, "input") == 0)
        return build_error(err, errlen, ls, "the name 'input' is reserved for the image");
    int j = spec_find(spec, i, ls->name);
    if (j >= 0) {
        const struct layer_spec *first = &spec->layers[j];
        if (first->file)
            return build_error(err, errlen, ls, "duplicate name (first defined at %s:%d)",
                               first->file, first->line);
        return build_error(err, errlen, ls, "duplicate name");
    }
    return DR_OK;
}

/* Resolves spec layer i's inputs into graph ids in l. alias[j] is the graph id that spec
 * layer j's name stands for; prev is the id of the previous spec layer (0 = the image). */
static int resolve_inputs(struct layer *l, const struct net_spec *spec, int i, const int *alias,
                          int prev, char *err, size_t errlen)
{
    const struct layer_spec *ls = &spec->layers[i];
    if (ls->n_inputs < 0 || ls->n_inputs > GRAPH_MAX_INPUTS)
        return build_error(err, errlen, ls, "has %d inputs; at most %d are supported",
                           ls->n_inputs, GRAPH_MAX_INPUTS);
    if (ls->n_inputs == 0) {
        l->n_inputs = 1;
        l->inputs[0] = prev;
        return DR_OK;
    }
    l->n_inputs = ls->n_inputs;
    for (int s = 0; s < ls->n_inputs; s++) {
        const char *name = ls->inputs[s];
        if (memchr(name, '\0', GRAPH_NAME_MAX) == NULL)
            return build_error(err, errlen, ls, "an input name is longer than %d characters",
                               GRAPH_NAME_MAX - 1);
        if (strcmp(name, "input") == 0) {
            l->inputs[s] = 0;
            continue;
        }
        int j = spec_find(spec, i, name);
        if (j >= 0) {
            l->inputs[s] = alias[j];
            continue;
        }
        if (strcmp(name, ls->name) == 0)
            return build_error(err, errlen, ls,
                               "input '%s' is the layer itself (cycles are not allowed)", name);
        if (spec_find(spec, spec->count, name) >= 0)
            return build_error(err, errlen, ls,
                               "input '%s' is defined later (cycles are not allowed)", name);
        return build_error(err, errlen, ls, "unknown input '%s'", name);
    }
    return DR_OK;
}

/* Checks the number of resolved inputs against the type's row. */
static int check_arity(const struct layer *l, const struct layer_info *info, char *err,
                       size_t errlen)
{
    const struct layer_spec *ls = &l->spec;
    const int lo = info->min_inputs, hi = info->max_inputs ? info->max_inputs : GRAPH_MAX_INPUTS;
    const int n = l->n_inputs;
    if (n >= lo && n <= hi) return DR_OK;
    if (lo == 1 && hi == 1)
        return build_error(err, errlen, ls, "%s takes exactly 1 input, got %d", info->name, n);
    if (lo == hi)
        return build_error(err, errlen, ls, "%s needs exactly %d inputs, got %d", info->name, lo,
                           n);
    if (n < lo)
        return build_error(err, errlen, ls, "%s needs at least %d inputs, got %d", info->name, lo,
                           n);
    return build_error(err, errlen, ls, "%s takes at most %d inputs, got %d", info->name, hi, n);
}

/* Looks up spec layer ls's row: the attribute rules it names, which do not depend on the
 * input shape, are checked in the order of enum layer_rule. */
static int check_attributes(const struct layer_info **info_out, const struct layer_spec *ls,
                            char *err, size_t errlen)
{
    const struct layer_info *info = layer_info(ls->type);
    *info_out = info;
    if (!info) return build_error(err, errlen, ls, "unknown layer type %d", (int)ls->type);
    if (info->kind == LAYER_KIND_INPUT)
        return build_error(err, errlen, ls,
                           "type 'input' cannot be used in a network (the image is implicit)");
    const unsigned r = info->rules;
    if ((r & LAYER_RULE_OUT) && ls->out < 1)
        return build_error(err, errlen, ls, "out must be >= 1, got %d", ls->out);
    if ((r & LAYER_RULE_K) && ls->k < 1)
        return build_error(err, errlen, ls, "k must be >= 1, got %d", ls->k);
    if ((r & LAYER_RULE_K_UPTO_7) && (ls->k < 1 || ls->k > 7))
        return build_error(err, errlen, ls, "k must be in 1..7, got %d", ls->k);
    if ((r & LAYER_RULE_PAD) && ls->pad < -1)
        return build_error(err, errlen, ls, "pad must be >= 0, got %d", ls->pad);
    if ((r & LAYER_RULE_STRIDE) && ls->stride < 1)
        return build_error(err, errlen, ls, "stride must be >= 1, got %d", ls->stride);
    if ((r & LAYER_RULE_POOL_STRIDE) && ls->stride < 0)   /* 0 means "= k" */
        return build_error(err, errlen, ls, "stride must be >= 1, got %d", ls->stride);
    if ((r & LAYER_RULE_SPLITS) && ls->splits < 0)
        return build_error(err, errlen, ls, "splits must be >= 1, got %d", ls->splits);
    if ((r & LAYER_RULE_IMAGES) && ls->whiten_images < 1)
        return build_error(err, errlen, ls, "images must be >= 1, got %d", ls->whiten_images);
    if ((r & LAYER_RULE_BIAS_EPOCHS) && ls->bias_epochs < 0)
        return build_error(err, errlen, ls, "bias_epochs must be >= 0, got %d", ls->bias_epochs);
    if ((r & LAYER_RULE_EPS) && !(ls->eps > 0.0f))
        return build_error(err, errlen, ls, "eps must be positive, got %g", (double)ls->eps);
    if ((r & LAYER_RULE_MOMENTUM) && !(ls->momentum >= 0.0f && ls->momentum <= 1.0f))
        return build_error(err, errlen, ls, "momentum must be in [0, 1], got %g",
                           (double)ls->momentum);
    if ((r & LAYER_RULE_ALPHA) && !(ls->alpha != 0.0f && isfinite(ls->alpha)))
        return build_error(err, errlen, ls, "alpha must be finite and non-zero, got %g",
                           (double)ls->alpha);
    if ((r & LAYER_RULE_SCALE) && !isfinite(ls->scale))
        return build_error(err, errlen, ls, "scale must be finite");
    if ((r & LAYER_RULE_DROP_P) && !(ls->p >= 0.0f && ls->p < 1.0f))
        return build_error(err, errlen, ls, "p (the drop probability) must be in [0, 1), got %g",
                           (double)ls->p);
    if ((r & LAYER_RULE_INIT) && !(ls->init > 0.0f && isfinite(ls->init)))
        return build_error(err, errlen, ls, "init must be finite and > 0, got %g",
                           (double)ls->init);
    return DR_OK;
}

/* "64x16x16" of layer id, for messages. */
static const char *shape_str(char *buf, size_t n, const struct layer *l)
{
    snprintf(buf, n, "%dx%dx%d", l->c, l->h, l->w);
    return buf;
}

/* Sets l's output shape (and resolves pad/stride in its spec copy) from its inputs; info
 * is the row of its (resolved) type. */
static int infer_shape(const struct graph *g, struct layer *l, const struct layer_info *info,
                       char *err, size_t errlen)
{
    struct layer_spec *ls = &l->spec;
    const struct layer *x = &g->layers[l->inputs[0]];
    char a[64], b[64];
    l->c = l->in_c;
    l->h = l->in_h;
    l->w = l->in_w;
    switch (info->kind) {
    case LAYER_KIND_WHITEN:
        if (l->inputs[0] != 0)
            return build_error(err, errlen, ls,
                               "a whiten layer must take the image ('input') as its input, "
                               "got '%s'", x->spec.name);
        if (l->in_c != 3)
            return build_error(err, errlen, ls, "needs a 3-channel image, got %d channels",
                               l->in_c);
        ls->out = 3 * ls->k * ls->k * (ls->negate ? 2 : 1);
        ls->stride = 1; /* from here on shaped like a conv (pad -1, only in a spec built
                           by hand, also means k/2) */
        /* fall through */
    case LAYER_KIND_CONV: {
        if (info->kind == LAYER_KIND_CONV && ls->dirac && l->in_c > ls->out)
            return build_error(err, errlen, ls,
                               "dirac needs no more input channels than out = %d, got %d",
                               ls->out, l->in_c);
        if (ls->pad < 0) ls->pad = ls->k / 2;
        int ph = l->in_h + 2 * ls->pad, pw = l->in_w + 2 * ls->pad;
        if (ls->k > ph || ls->k > pw)
            return build_error(err, errlen, ls,
                               "kernel %dx%d is larger than its padded input %dx%d (pad %d)",
                               ls->k, ls->k, ph, pw, ls->pad);
        l->c = ls->out;
        l->h = (ph - ls->k) / ls->stride + 1;
        l->w = (pw - ls->k) / ls->stride + 1;
        return DR_OK;
    }
    case LAYER_KIND_POOL:
        if (ls->stride == 0) ls->stride = ls->k;
        ls->pad = 0;
        if (ls->k > l->in_h || ls->k > l->in_w)
            return build_error(err, errlen, ls, "window %dx%d is larger than its %dx%d input",
                               ls->k, ls->k, l->in_h, l->in_w);
        l->h = (l->in_h - ls->k) / ls->stride + 1;
        l->w = (l->in_w - ls->k) / ls->stride + 1;
        return DR_OK;
    case LAYER_KIND_GLOBAL_POOL:
        l->h = l->w = 1;
        return DR_OK;
    case LAYER_KIND_CONCAT:
        l->c = 0;
        for (int s = 0; s < l->n_inputs; s++) {
            const struct layer *xs = &g->layers[l->inputs[s]];
            if (xs->h != x->h || xs->w != x->w)
                return build_error(err, errlen, ls,
                                   "inputs differ in spatial size: '%s' is %dx%d, '%s' is %dx%d "
                                   "(concat joins channels only)",
                                   x->spec.name, x->h, x->w, xs->spec.name, xs->h, xs->w);
            if (l->c > INT_MAX - xs->c)
                return build_error(err, errlen, ls, "too many channels");
            l->c += xs->c;
        }
        return DR_OK;
    case LAYER_KIND_ADD: {
        const struct layer *y = &g->layers[l->inputs[1]];
        if (y->c != x->c || y->h != x->h || y->w != x->w)
            return build_error(err, errlen, ls, "inputs have different shapes: '%s' is %s, '%s' is %s",
                               x->spec.name, shape_str(a, sizeof a, x), y->spec.name,
                               shape_str(b, sizeof b, y));
        return DR_OK;
    }
    case LAYER_KIND_FLATTEN: {
        int64_t n = (int64_t)l->in_c * l->in_h * l->in_w;
        if (n > INT_MAX) return build_error(err, errlen, ls, "flattened size is too large");
        l->c = (int)n;
        l->h = l->w = 1;
        return DR_OK;
    }
    case LAYER_KIND_LINEAR:
        if (l->in_h != 1 || l->in_w != 1)
            return build_error(err, errlen, ls,
                               "input '%s' has shape %s; a linear layer needs a flatten before it",
                               x->spec.name, shape_str(a, sizeof a, x));
        l->c = ls->out;
        return DR_OK;
    case LAYER_KIND_BN:
    case LAYER_KIND_ACT:
    case LAYER_KIND_SCALE:
    case LAYER_KIND_DROPOUT:
    case LAYER_KIND_TEMPERATURE:
        return DR_OK;
    case LAYER_KIND_INPUT:
    case LAYER_KIND_SHORTCUT:   /* resolved before shaping */
        break;
    }
    build_error(err, errlen, ls, "internal error: no shape rule for type %d", (int)ls->type);
    return DR_ERR_INTERNAL;
}

/* Appends one parameter of layer `id` (initialised as DEFAULT, trained every epoch);
 * capacity was reserved by graph_build. Returns it for the rarer settings. */
static struct param_desc *add_param(struct graph *g, int id, enum param_kind kind, int n, int c,
                                    int h, int w, float bound, float value, int trainable)
{
    struct param_desc *p = &g->params[g->n_params++];
    p->kind = kind;
    p->layer = id;
    p->n = n;
    p->c = c;
    p->h = h;
    p->w = w;
    p->init_bound = bound;
    p->init_value = value;
    p->init = PARAM_INIT_DEFAULT;
    p->init_std = 0.0f;
    p->trainable = trainable;
    p->train_epochs = 0;
    if (trainable) g->n_weights += (int64_t)n * c * h * w;
    return p;
}

/* Lays out layer id's parameters (conv: weight then bias; bn: weight then bias; linear:
 * weight then bias; whiten: weight then bias; temperature: its scalar at init) with
 * PyTorch's default initialisation; a frozen layer's are all untrainable, and so are
 * whitening filters. */
static void add_layer_params(struct graph *g, int id, const struct layer_info *info)
{
    struct layer *l = &g->layers[id];
    const struct layer_spec *ls = &l->spec;
    int train = !ls->frozen;
    l->param_first = g->n_params;
    switch (info->kind) {
    case LAYER_KIND_CONV: {
        float bound = (float)(1.0 / sqrt((double)l->in_c * ls->k * ls->k));
        struct param_desc *w =
            add_param(g, id, PARAM_CONV_W, ls->out, l->in_c, ls->k, ls->k, bound, 0.0f, train);
        if (ls->dirac) w->init = PARAM_INIT_DIRAC;
        if (ls->bias) add_param(g, id, PARAM_CONV_B, ls->out, 1, 1, 1, bound, 0.0f, train);
        break;
    }
    case LAYER_KIND_BN:
        add_param(g, id, PARAM_BN_W, l->c, 1, 1, 1, 0.0f, 1.0f, train && !ls->freeze_weight);
        add_param(g, id, PARAM_BN_B, l->c, 1, 1, 1, 0.0f, 0.0f, train && !ls->freeze_bias);
        break;
    case LAYER_KIND_LINEAR: {
        float bound = (float)(1.0 / sqrt((double)l->in_c));
        add_param(g, id, PARAM_LINEAR_W, ls->out, l->in_c, 1, 1, bound, 0.0f, train)->init_std =
            ls->init_std;
        if (ls->bias) add_param(g, id, PARAM_LINEAR_B, ls->out, 1, 1, 1, bound, 0.0f, train);
        break;
    }
    case LAYER_KIND_WHITEN: {
        float bound = (float)(1.0 / sqrt((double)l->in_c * ls->k * ls->k));
        add_param(g, id, PARAM_WHITEN_W, ls->out, l->in_c, ls->k, ls->k, 0.0f, 0.0f, 0)->init =
            PARAM_INIT_WHITEN;
        if (ls->bias)
            add_param(g, id, PARAM_WHITEN_B, ls->out, 1, 1, 1, bound, 0.0f, train)->train_epochs =
                ls->bias_epochs;
        break;
    }
    case LAYER_KIND_TEMPERATURE:   /* one scalar, starting at init */
        add_param(g, id, PARAM_TEMPERATURE, 1, 1, 1, 1, 0.0f, ls->init, train);
        break;
    case LAYER_KIND_INPUT:
    case LAYER_KIND_SHORTCUT:
    case LAYER_KIND_ACT:
    case LAYER_KIND_POOL:
    case LAYER_KIND_GLOBAL_POOL:
    case LAYER_KIND_CONCAT:
    case LAYER_KIND_ADD:
    case LAYER_KIND_FLATTEN:
    case LAYER_KIND_SCALE:
    case LAYER_KIND_DROPOUT:
        break;   /* no parameters */
    }
    l->param_count = g->n_params - l->param_first;
}

/* Forward FLOPs per image of one layer, by its row's rule (the convention in graph.h);
 * -1 for a rule this function does not know. */
static int64_t layer_flops(const struct layer *l, const struct layer_info *info)
{
    const struct layer_spec *ls = &l->spec;
    int64_t out = (int64_t)l->c * l->h * l->w;
    switch (info->flops) {
    case LAYER_FLOPS_NONE:
        return 0;
    case LAYER_FLOPS_CONV:
        return 2 * out * l->in_c * ls->k * ls->k + (ls->bias ? out : 0);
    case LAYER_FLOPS_LINEAR:
        return 2 * (int64_t)l->in_c * ls->out + (ls->bias ? ls->out : 0);
    case LAYER_FLOPS_PER_OUTPUT:
        return info->flops_per_output * out;
    case LAYER_FLOPS_ADD:
        return out * (l->n_inputs - 1);
    case LAYER_FLOPS_WINDOW:
        return out * ls->k * ls->k;
    case LAYER_FLOPS_PER_INPUT:
        return (int64_t)l->in_c * l->in_h * l->in_w;
    }
    return -1;
}

/* Whether layer l (resolved) is a convolution or a matrix product. */
static int is_matmul(const struct layer *l)
{
    const struct layer_info *info = layer_info(l->spec.type);
    return info && info->matmul;
}

int graph_build(struct graph *g, const struct net_spec *spec, int in_c, int in_h, int in_w,
                char *err, size_t errlen)
{
    int rc = DR_OK;
    int *alias = NULL;
    memset(g, 0, sizeof *g);
    if (err && errlen) err[0] = '\0';
    if (in_c < 1 || in_h < 1 || in_w < 1) {
        rc = build_error(err, errlen, NULL, "image shape %dx%dx%d is not positive", in_c, in_h,
                         in_w);
        goto cleanup;
    }
    int count = spec ? spec->count : 0;
    if (count < 1) {
        rc = build_error(err, errlen, NULL, "the network has no layers");
        goto cleanup;
    }
    g->layers = calloc((size_t)count + 1, sizeof *g->layers);
    g->params = calloc(2 * (size_t)count, sizeof *g->params);
    alias = calloc((size_t)count, sizeof *alias);
    if (!g->layers || !g->params || !alias) {
        rc = build_error(err, errlen, NULL, "out of memory building the graph");
        rc = DR_ERR_NOMEM;
        goto cleanup;
    }

    struct layer *img = &g->layers[0];
    img->spec.type = LAYER_INPUT;
    strcpy(img->spec.name, "input");
    img->c = in_c;
    img->h = in_h;
    img->w = in_w;
    g->count = 1;

    int prev = 0; /* what the previous spec layer's name resolves to */
    for (int i = 0; i < count; i++) {
        const struct layer_spec *ls = &spec->layers[i];
        struct layer *l = &g->layers[g->count];
        const struct layer_info *info = NULL;
        TRY(check_name(spec, i, err, errlen));
        l->spec = *ls;
        TRY(resolve_inputs(l, spec, i, alias, prev, err, errlen));
        TRY(check_attributes(&info, ls, err, errlen));
        TRY(check_arity(l, info, err, errlen));
        const struct layer *x = &g->layers[l->inputs[0]];
        l->in_c = x->c;
        l->in_h = x->h;
        l->in_w = x->w;
        if ((info->rules & LAYER_RULE_IN_CHANNELS) && ls->expect_in > 0 &&
            ls->expect_in != l->in_c) {
            rc = build_error(err, errlen, ls, "expects %d input channels, got %d", ls->expect_in,
                             l->in_c);
            goto cleanup;
        }
        if (info->kind == LAYER_KIND_SHORTCUT) {
            if (l->in_c == ls->out && ls->stride == 1) { /* identity: no layer */
                alias[i] = prev = l->inputs[0];
                memset(l, 0, sizeof *l);
                continue;
            }
            l->spec.type = LAYER_CONV;
            l->spec.k = 1;
            l->spec.pad = 0;
            l->spec.bias = 0;
            l->spec.expect_in = 0;
            info = layer_info(LAYER_CONV);
        }
        TRY(infer_shape(g, l, info, err, errlen));
        add_layer_params(g, g->count, info);
        l->flops = layer_flops(l, info);
        if (l->flops < 0) {
            build_error(err, errlen, ls, "internal error: no FLOP rule %d", (int)info->flops);
            rc = DR_ERR_INTERNAL;
            goto cleanup;
        }
        if (info->matmul)
            g->flops_forward += l->flops;
        else
            g->flops_elementwise += l->flops;
        alias[i] = prev = g->count++;
    }

    g->output = prev;
    if (spec->output[0]) {
        if (memchr(spec->output, '\0', GRAPH_NAME_MAX) == NULL) {
            rc = build_error(err, errlen, NULL, "model output: name is too long");
            goto cleanup;
        }
        int j = spec_find(spec, count, spec->output);
        if (j < 0) {
            rc = build_error(err, errlen, NULL, "model output '%s' is not a layer name",
                             spec->output);
            goto cleanup;
        }
        g->output = alias[j];
    }
    const struct layer *out = &g->layers[g->output];
    if (out->h != 1 || out->w != 1) {
        char a[64];
        rc = build_error(err, errlen, &out->spec,
                         "is the network output (the logits) but has shape %s; it must be flat "
                         "(Cx1x1)",
                         shape_str(a, sizeof a, out));
        goto cleanup;
    }

cleanup:
    free(alias);
    if (rc != DR_OK) graph_free(g);
    return rc;
}

void graph_free(struct graph *g)
{
    if (!g) return;
    free(g->layers);
    free(g->params);
    memset(g, 0, sizeof *g);
}

int64_t graph_train_flops(const struct graph *g)
{
    int64_t total = 0;
    for (int i = 1; i < g->count; i++) {
        const struct layer *l = &g->layers[i];
        if (!is_matmul(l)) {
            total += 2 * l->flops; /* forward + a backward of about the same cost */
            continue;
        }
        /* forward + weight gradient + data gradient; the image needs no gradient */
        total += (l->inputs[0] == 0) ? 2 * l->flops : 3 * l->flops;
    }
    return total;
}

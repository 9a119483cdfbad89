/* struct experiment filled from the canonical resolved tree: every key is read once from
 * there (or, for a key left out at its default, from the schema), so that what runs is
 * what the experiment's identity says. Layer 4 of config handling, resolution
 * (config_resolve.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_resolve.h"
#include "base/status.h"

#define DEFAULT_DATA_DIR "./data/cifar-10-batches-bin"

/* Every key is in the resolved tree (the schema gave defaults) except those with
 * omit_default at their default: those are read from the schema. */
struct reader {
    const config_t *res;
    const config_setting_t *schema_root;
    const char *missing; /* the first key that was not found */
};

static const config_setting_t *need(struct reader *r, const char *path)
{
    const config_setting_t *s = config_lookup(r->res, path);
    int omittable = 0;
    if (!s) {
        const config_setting_t *entry = cfg_schema_entry(r->schema_root, path, &omittable);
        if (entry && omittable) s = config_setting_get_member(entry, "default");
    }
    if (!s && !r->missing) r->missing = path;
    return s;
}

static int read_int(struct reader *r, const char *path)
{
    const config_setting_t *s = need(r, path);
    return s && cfg_is_number(s) ? (int)cfg_number(s) : 0;
}

static double read_float(struct reader *r, const char *path)
{
    const config_setting_t *s = need(r, path);
    return s && cfg_is_number(s) ? cfg_number(s) : 0.0;
}

static int read_bool(struct reader *r, const char *path)
{
    const config_setting_t *s = need(r, path);
    return s && config_setting_type(s) == CONFIG_TYPE_BOOL ? config_setting_get_bool(s) : 0;
}

static const char *read_string(struct reader *r, const char *path)
{
    const config_setting_t *s = need(r, path);
    const char *v = s ? config_setting_get_string(s) : NULL;
    if (s && !v && !r->missing) r->missing = path;
    return v ? v : "";
}

static int read_schedule(struct reader *r, const char *path, struct schedule *out)
{
    char kp[128], vp[128];
    snprintf(kp, sizeof(kp), "%s.knots", path);
    snprintf(vp, sizeof(vp), "%s.values", path);
    const config_setting_t *k = need(r, kp), *v = need(r, vp);
    if (!k || !v) return 0;
    int n = config_setting_length(k);
    if (n > SCHEDULE_MAX_KNOTS || n != config_setting_length(v)) return 0;
    out->count = n;
    for (int i = 0; i < n; i++) {
        out->knots[i] = config_setting_get_float_elem(k, i);
        out->values[i] = config_setting_get_float_elem(v, i);
    }
    return 1;
}

/* Index of s in a NULL-terminated list of names (0 when absent: the schema allows only
 * the listed values). */
static int pick(const char *s, const char *const *names)
{
    for (int i = 0; names[i]; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return 0;
}

/* train.lr_scale / train.wd_scale: one factor per parameter kind, 1 for a kind the schema
 * has no key for (the whitening filters, never trained). */
static void read_scales(struct reader *r, const char *group, double *out)
{
    char path[128];
    for (int k = 0; k < PARAM_KIND_COUNT; k++) {
        snprintf(path, sizeof(path), "%s.%s", group, param_kind_name((enum param_kind)k));
        out[k] = cfg_schema_entry(r->schema_root, path, NULL) ? read_float(r, path) : 1.0;
    }
}

/* train.groups.KIND for every kind the schema has a group for: present or not, and its
 * settings with train's as the defaults (train's momentum and nesterov already read).
 * train.muon's settings. */
static void read_groups(struct reader *r, struct experiment *e)
{
    char path[160], sub[192];
    for (int k = 0; k < PARAM_KIND_COUNT; k++) {
        struct param_group *g = &e->train.groups[k];
        const config_setting_t *s;
        snprintf(path, sizeof(path), "train.groups.%s", param_kind_name((enum param_kind)k));
        *g = (struct param_group){0, OPTIMIZER_SGD, {0}, e->train.momentum, e->train.nesterov};
        if (!config_lookup(r->res, path)) continue;
        g->own = 1;
        snprintf(sub, sizeof(sub), "%s.optimizer", path);   /* weights only; absent: sgd */
        if ((s = config_lookup(r->res, sub)) && config_setting_get_string(s) &&
            !strcmp(config_setting_get_string(s), "muon"))
            g->optimizer = OPTIMIZER_MUON;
        snprintf(sub, sizeof(sub), "%s.lr_schedule", path);
        if (config_lookup(r->res, sub) && !read_schedule(r, sub, &g->lr) && !r->missing)
            r->missing = "a group's lr_schedule";
        snprintf(sub, sizeof(sub), "%s.momentum", path);
        if ((s = config_lookup(r->res, sub)) && cfg_is_number(s)) g->momentum = cfg_number(s);
        snprintf(sub, sizeof(sub), "%s.nesterov", path);
        if ((s = config_lookup(r->res, sub)) && config_setting_type(s) == CONFIG_TYPE_BOOL)
            g->nesterov = config_setting_get_bool(s);
    }
    e->train.muon.ns_steps = read_int(r, "train.muon.ns_steps");
    const config_setting_t *c = need(r, "train.muon.ns_coefficients");
    for (int i = 0; i < 3; i++)
        e->train.muon.ns_coefficients[i] =
            c && config_setting_length(c) == 3 ? config_setting_get_float_elem(c, i) : 0.0;
    e->train.muon.ns_eps = read_float(r, "train.muon.ns_eps");
    e->train.muon.normalize = read_bool(r, "train.muon.normalize");
}

int cfg_fill_experiment(struct experiment *e, const config_t *res,
                        const config_setting_t *schema_root)
{
    /* the schema's values, in the order of enum average_kind and enum tta_kind */
    static const char *const averages[] = {"none", "ema", "lookahead", NULL};
    static const char *const ttas[] = {"none", "flip", "flip_translate", NULL};
    struct reader r = {res, schema_root, NULL};
    const char *s;
    snprintf(e->name, sizeof(e->name), "%s", read_string(&r, "name"));
    s = read_string(&r, "data.dir");
    if (!s[0]) {
        const char *env = getenv("DAWNRUN_DATA");
        s = env && env[0] ? env : DEFAULT_DATA_DIR;
    }
    if (strlen(s) >= sizeof(e->data.dir)) {
        dr_eprintf("%s: the data directory '%.60s...' is too long\n", e->path, s);
        return DR_ERR_CONFIG;
    }
    snprintf(e->data.dir, sizeof(e->data.dir), "%s", s);
    e->data.train_subset = read_int(&r, "data.train_subset");
    e->data.test_subset = read_int(&r, "data.test_subset");

    e->train.epochs = read_float(&r, "train.epochs");
    e->train.batch_size = read_int(&r, "train.batch_size");
    if (!read_schedule(&r, "train.lr_schedule", &e->train.lr) && !r.missing)
        r.missing = "train.lr_schedule";
    e->train.momentum = read_float(&r, "train.momentum");
    e->train.nesterov = read_bool(&r, "train.nesterov");
    e->train.weight_decay = read_float(&r, "train.weight_decay");
    e->train.loss = strcmp(read_string(&r, "train.loss"), "mean") == 0 ? LOSS_MEAN : LOSS_SUM;
    e->train.label_smoothing = read_float(&r, "train.label_smoothing");
    s = read_string(&r, "train.precision");
    e->train.precision = PRECISION_FP32;
    for (int p = 0; precision_name(p); p++)
        if (!strcmp(s, precision_name(p))) e->train.precision = (enum precision)p;
    read_scales(&r, "train.lr_scale", e->train.lr_scale);
    read_scales(&r, "train.wd_scale", e->train.wd_scale);
    read_groups(&r, e);
    s = read_string(&r, "train.average.kind");
    e->train.average.kind = (enum average_kind)pick(s, averages);
    e->train.average.every = read_int(&r, "train.average.every");
    e->train.average.momentum = read_float(&r, "train.average.momentum");
    e->train.average.decay = read_float(&r, "train.average.decay");

    e->augment.pad = read_int(&r, "augment.pad");
    e->augment.pad_mode =
        strcmp(read_string(&r, "augment.pad_mode"), "zero") == 0 ? PAD_ZERO : PAD_REFLECT;
    e->augment.crop = read_bool(&r, "augment.crop");
    e->augment.flip = read_bool(&r, "augment.flip");
    e->augment.cutout = read_int(&r, "augment.cutout");
    e->augment.alternate_flip = read_bool(&r, "augment.alternate_flip");

    e->eval.batch_size = read_int(&r, "eval.batch_size");
    e->eval.batch_size = experiment_eval_batch(e);   /* 0: the training batch size */
    e->eval.tta = (enum tta_kind)pick(read_string(&r, "eval.tta"), ttas);
    e->seeds = read_int(&r, "seeds");
    e->target_accuracy = read_float(&r, "target_accuracy");
    if (r.missing) {
        dr_eprintf("dawnrun: internal error: the resolved config has no valid '%s'\n",
                   r.missing);
        return DR_ERR_INTERNAL;
    }
    return DR_OK;
}

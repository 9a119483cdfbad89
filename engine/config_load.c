/* experiment_load: reads an experiment config (libconfig, @include relative to the file),
 * applies --set overrides, checks everything against the schema and the model rules,
 * reports every problem as "file:line: message", then fills struct experiment from the
 * canonical resolved tree, whose text identifies the experiment. */
#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config_internal.h"
#include "experiment.h"
#include "../base/status.h"

#define DEFAULT_DATA_DIR "./data/cifar-10-batches-bin"

/* ---- reading the resolved tree -------------------------------------------------------- */

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

/* The final struct fill, from the canonical resolved tree. */
static int fill_experiment(struct experiment *e, const config_t *res,
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
        fprintf(stderr, "%s: the data directory '%.60s...' is too long\n", e->path, s);
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
    e->train.precision = !strcmp(s, "fp16")   ? PRECISION_FP16
                         : !strcmp(s, "bf16") ? PRECISION_BF16
                                              : PRECISION_FP32;
    read_scales(&r, "train.lr_scale", e->train.lr_scale);
    read_scales(&r, "train.wd_scale", e->train.wd_scale);
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
    if (e->eval.batch_size == 0) e->eval.batch_size = e->train.batch_size;
    e->eval.tta = (enum tta_kind)pick(read_string(&r, "eval.tta"), ttas);
    e->seeds = read_int(&r, "seeds");
    e->target_accuracy = read_float(&r, "target_accuracy");
    if (r.missing) {
        fprintf(stderr, "dawnrun: internal error: the resolved config has no valid '%s'\n",
                r.missing);
        return DR_ERR_INTERNAL;
    }
    return DR_OK;
}

/* ---- checks across keys, on the filled experiment -------------------------------------- */

int experiment_steps(const struct experiment *e, int train_count, struct experiment_steps *out)
{
    memset(out, 0, sizeof(*out));
    if (train_count <= 0)
        train_count = e->data.train_subset ? e->data.train_subset : EXPERIMENT_TRAIN_IMAGES;
    if (e->train.batch_size < 1 || train_count < e->train.batch_size) return DR_ERR_CONFIG;
    out->per_epoch = train_count / e->train.batch_size;
    out->total = lround(e->train.epochs * (double)out->per_epoch);
    if (out->total < 1) out->total = 1;
    out->epochs = (int)((out->total + out->per_epoch - 1) / out->per_epoch);
    return DR_OK;
}

/* The override index a setting came from, -1 for a file or no setting. */
static int override_index(const config_setting_t *s)
{
    const struct cfg_origin *o = s ? cfg_origin_of(s) : NULL;
    return o ? o->index : -1;
}

/* What only the filled experiment shows: train.batch_size must leave an epoch at least one
 * full batch of the training images it uses. Reported at whichever of the two keys an
 * override set last, else at the batch size where the file writes it, else at the subset. */
static void check_experiment(struct cfg_diag *d, const config_t *cfg, const struct experiment *e)
{
    struct experiment_steps st;
    if (experiment_steps(e, 0, &st) == DR_OK) return;
    const config_setting_t *batch = config_lookup(cfg, "train.batch_size");
    const config_setting_t *subset = config_lookup(cfg, "data.train_subset");
    const config_setting_t *at = batch ? batch : subset;
    if (override_index(subset) > override_index(batch)) at = subset;
    if (!at) at = config_root_setting(cfg);
    cfg_diag_at(d, at,
                "'train.batch_size' %d is larger than the %d training images ('data.train_subset'): "
                "an epoch would have no step",
                e->train.batch_size,
                e->data.train_subset ? e->data.train_subset : EXPERIMENT_TRAIN_IMAGES);
}

/* ---- the resolved text ----------------------------------------------------------------- */

static int write_resolved(struct experiment *e, const config_setting_t *root,
                          const config_setting_t *schema_root, config_t *res)
{
    char *text = NULL;
    size_t len = 0;
    int rc = cfg_schema_resolve(config_root_setting(res), root, schema_root);
    if (rc != DR_OK) return rc;
    FILE *f = open_memstream(&text, &len);
    if (!f) return DR_ERR_NOMEM;
    config_write(res, f);
    if (fclose(f) != 0 || !text) {
        free(text);
        return DR_ERR_NOMEM;
    }
    e->resolved = text;
    return DR_OK;
}

/* Moves the interned file names into one owned block (e->sources) and points the layers'
 * file fields into it. */
static int pack_sources(struct experiment *e, const struct cfg_files *files)
{
    size_t total = 1;
    for (int i = 0; i < files->count; i++) total += strlen(files->names[i]) + 1;
    e->sources = malloc(total);
    if (!e->sources) return DR_ERR_NOMEM;
    size_t off = 0;
    for (int i = 0; i < files->count; i++) {
        size_t n = strlen(files->names[i]) + 1;
        memcpy(e->sources + off, files->names[i], n);
        for (int k = 0; k < e->net.count; k++)
            if (e->net.layers[k].file == files->names[i]) e->net.layers[k].file = e->sources + off;
        off += n;
    }
    e->sources[off] = '\0';
    return DR_OK;
}

/* ---- loading --------------------------------------------------------------------------- */

/* The quoted name of the @include on line `line` of file, into buf ("" when not found). */
static void include_name(const char *file, int line, char *buf, size_t n)
{
    char text[1024];
    FILE *f = fopen(file, "r");
    buf[0] = '\0';
    if (!f) return;
    for (int i = 1; fgets(text, sizeof(text), f); i++) {
        if (i < line) continue;
        const char *p = strstr(text, "@include");
        const char *q = p ? strchr(p, '"') : NULL;
        const char *end = q ? strchr(q + 1, '"') : NULL;
        if (end) snprintf(buf, n, " \"%.*s\"", (int)(end - q - 1), q + 1);
        break;
    }
    fclose(f);
}

/* libconfig reads an @include (or the main file) that names a directory with fopen, which
 * succeeds, and then its scanner calls exit() on the read error. So before parsing, every
 * @include line of `file` (shown as `shown`), and of the files it includes (up to
 * libconfig's depth limit), must name a regular file when it names anything: an
 * @include of a directory is reported "shown:line: ..." and gives DR_ERR_CONFIG. Missing
 * files are left to libconfig, which reports them. `dir` is the include directory (NULL:
 * the current one). */
static int check_includes(const char *file, const char *shown, const char *dir, int depth)
{
    int rc = DR_OK, line_no = 0;
    char *line = NULL;
    size_t cap = 0;
    FILE *f = depth <= 10 ? fopen(file, "r") : NULL;
    if (!f) return DR_OK;
    while (rc == DR_OK && getline(&line, &cap, f) >= 0) {
        line_no++;
        const char *p = line + strspn(line, " \t");
        if (strncmp(p, "@include", 8) != 0) continue;
        p += 8;
        p += strspn(p, " \t");
        if (*p != '"') continue;
        const char *end = strchr(p + 1, '"');
        size_t n = end ? (size_t)(end - p - 1) : strcspn(p + 1, "\r\n");
        char name[1024], full[2048];
        snprintf(name, sizeof(name), "%.*s", (int)n, p + 1);
        if (dir && name[0] != '/') snprintf(full, sizeof(full), "%s/%s", dir, name);
        else snprintf(full, sizeof(full), "%s", name);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (!S_ISREG(st.st_mode)) {
            fprintf(stderr, "%s:%d: cannot include \"%s\": not a regular file\n", shown,
                    line_no, name);
            rc = DR_ERR_CONFIG;
        } else {
            rc = check_includes(full, full, dir, depth + 1);
        }
    }
    free(line);
    fclose(f);
    return rc;
}

/* Prints a libconfig parse error as "file:line: message". */
static void report_parse_error(const config_t *cfg, struct cfg_diag *d)
{
    const char *text = config_error_text(cfg);
    const char *hint = "";
    char name[600];
    if (text && strstr(text, "mismatched element type"))
        hint = " (an array holds one type: write 0.0 rather than 0, or use a list ( ... ))";
    if (text && strstr(text, "cannot open include file")) {
        include_name(cfg_diag_file_name(d, config_error_file(cfg)), config_error_line(cfg), name,
                     sizeof(name));
        hint = name;
    }
    fprintf(stderr, "%s:%d: %s%s\n", cfg_diag_file_name(d, config_error_file(cfg)),
            config_error_line(cfg), text ? text : "parse error", hint);
}

int experiment_load(struct experiment *e, const char *path, const char *const *sets, int n_sets)
{
    int rc = DR_OK;
    config_t cfg, schema, res;
    struct cfg_diag d = {0};
    struct cfg_files files = {0};
    struct cfg_origin *origins = NULL;
    char *dir_buf = NULL;
    config_init(&cfg);
    config_init(&schema);
    config_init(&res);
    memset(e, 0, sizeof(*e));
    d.main_file = path;

    if (strlen(path) >= sizeof(e->path)) {
        fprintf(stderr, "%s: the path is too long\n", path);
        rc = DR_ERR_IO;
        goto cleanup;
    }
    snprintf(e->path, sizeof(e->path), "%s", path);
    FILE *probe = fopen(path, "r");
    if (!probe) { /* a config error for the user: the file named is not there */
        fprintf(stderr, "%s: cannot open the config: %s\n", path, strerror(errno));
        rc = DR_ERR_CONFIG;
        goto cleanup;
    }
    fclose(probe);
    dir_buf = strdup(path);
    CHECK_ALLOC(dir_buf, "the config path");
    const char *dir = dirname(dir_buf);
    if (strcmp(dir, ".") != 0) {
        config_set_include_dir(&cfg, dir);
        d.include_dir = dir;
    }
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        fprintf(stderr, "%s: cannot read the config: not a regular file\n", path);
        rc = DR_ERR_CONFIG;
        goto cleanup;
    }
    TRY(check_includes(path, path, d.include_dir, 1));
    if (!config_read_file(&cfg, path)) {
        report_parse_error(&cfg, &d);
        rc = config_error_type(&cfg) == CONFIG_ERR_FILE_IO ? DR_ERR_IO : DR_ERR_CONFIG;
        goto cleanup;
    }
    config_destroy(&schema);
    TRY(cfg_schema_load(&schema));
    const config_setting_t *schema_root = config_root_setting(&schema);
    config_setting_t *root = config_root_setting(&cfg);

    if (n_sets > 0) {
        origins = calloc((size_t)n_sets * 2, sizeof(*origins));
        CHECK_ALLOC(origins, "the overrides");
    }
    for (int i = 0; i < n_sets; i++) {
        int st = cfg_set_apply(&d, &cfg, i, sets[i], &origins[2 * i]);
        if (st != DR_OK && st != DR_ERR_CONFIG) TRY(st);
    }
    cfg_diag_rank_files(&d, root);
    cfg_schema_validate(&d, root, schema_root);
    TRY(cfg_schema_merge(&d, root, schema_root));
    const config_setting_t *model = config_setting_get_member(root, "model");
    if (model && config_setting_is_group(model)) {
        int st = cfg_model_build(&d, &e->net, &files, model, schema_root);
        if (st != DR_OK && st != DR_ERR_CONFIG) TRY(st);
    }
    if (d.count > 0 || d.nomem) {
        cfg_diag_flush(&d, stderr);
        rc = d.nomem ? DR_ERR_NOMEM : DR_ERR_CONFIG;
        goto cleanup;
    }
    TRY(write_resolved(e, root, schema_root, &res));
    TRY(fill_experiment(e, &res, schema_root));
    check_experiment(&d, &cfg, e);
    if (d.count > 0 || d.nomem) {
        cfg_diag_flush(&d, stderr);
        rc = d.nomem ? DR_ERR_NOMEM : DR_ERR_CONFIG;
        goto cleanup;
    }
    TRY(pack_sources(e, &files));

cleanup:
    if (rc != DR_OK) experiment_free(e);
    cfg_files_free(&files);
    cfg_diag_free(&d);
    config_destroy(&res);
    config_destroy(&schema);
    config_destroy(&cfg);
    free(origins);
    free(dir_buf);
    return rc;
}

void experiment_free(struct experiment *e)
{
    if (!e) return;
    net_spec_free(&e->net);
    free(e->resolved);
    free(e->sources);
    e->resolved = NULL;
    e->sources = NULL;
}

double schedule_at(const struct schedule *s, double t)
{
    if (s->count <= 0) return 0.0;
    if (t <= s->knots[0]) return s->values[0];
    for (int i = 1; i < s->count; i++) {
        if (t <= s->knots[i]) {
            double a = s->knots[i - 1], b = s->knots[i];
            double w = (t - a) / (b - a);
            return s->values[i - 1] + w * (s->values[i] - s->values[i - 1]);
        }
    }
    return s->values[s->count - 1];
}

/* experiment_load: the one entry of config handling. Reads an experiment config
 * (libconfig, @include relative to the file), applies --set overrides, checks everything
 * against the schema and the model rules, reports every problem as "file:line: message",
 * then expands the model and fills struct experiment from the canonical resolved tree,
 * whose text identifies the experiment. Layer 4 of config handling, resolution
 * (config_resolve.h): it runs the layers below in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_resolve.h"
#include "engine/core/experiment.h"
#include "base/status.h"

/* ---- checks across keys, on the filled experiment -------------------------------------- */

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
                e->train.batch_size, experiment_train_images(e));
}

/* ---- the resolved text ----------------------------------------------------------------- */

static int write_resolved(struct experiment *e, const config_setting_t *root,
                          const config_setting_t *schema_root, config_t *res)
{
    char *text = NULL;
    size_t len = 0;
    int rc = cfg_canonical_tree(config_root_setting(res), root, schema_root);
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

int experiment_load(struct experiment *e, const char *path, const char *const *sets, int n_sets)
{
    int rc = DR_OK;
    config_t cfg, schema, res;
    struct cfg_diag d = {0};
    struct cfg_files files = {0};
    struct cfg_origin *origins = NULL;
    config_init(&cfg);
    config_init(&schema);
    config_init(&res);
    memset(e, 0, sizeof(*e));
    d.main_file = path;

    if (strlen(path) >= sizeof(e->path)) {
        dr_eprintf("%s: the path is too long\n", path);
        rc = DR_ERR_IO;
        goto cleanup;
    }
    snprintf(e->path, sizeof(e->path), "%s", path);
    /* reading: the file, then the overrides */
    TRY(cfg_read_file(&cfg, &d, path));
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
    /* validation of the keys, model_vars merged, validation of the model, its expansion */
    cfg_schema_validate(&d, root, schema_root);
    TRY(cfg_merge_maps(&d, root, schema_root));
    const config_setting_t *model = config_setting_get_member(root, "model");
    if (model && config_setting_is_group(model)) {
        TRY(cfg_model_check(&d, model, schema_root));
        int st = cfg_model_expand(&d, &e->net, &files, model, schema_root);
        if (st != DR_OK && st != DR_ERR_CONFIG) TRY(st);
    }
    if (d.count > 0 || d.nomem) {
        cfg_diag_flush(&d, stderr);
        rc = d.nomem ? DR_ERR_NOMEM : DR_ERR_CONFIG;
        goto cleanup;
    }
    /* the canonical resolved tree, and the experiment read from it */
    TRY(write_resolved(e, root, schema_root, &res));
    TRY(cfg_fill_experiment(e, &res, schema_root));
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
    config_destroy(&res);
    config_destroy(&schema);
    config_destroy(&cfg);
    cfg_diag_free(&d);
    free(origins);
    return rc;
}

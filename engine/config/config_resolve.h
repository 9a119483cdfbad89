/* Layer 4 of config handling, resolution (the layers: engine/config/config_tree.h): a validated
 * tree turned into the experiment: model_vars merged into model.vars, blocks, variables
 * and expressions expanded into a net_spec, the schema's defaults filled, the canonical
 * resolved tree (whose text is the experiment's identity), and struct experiment filled
 * from it. experiment_load (config_load.c) runs the layers in order. Calls reading
 * (config_tree.h), lookups (config_lookup.h) and validation (config_schema.h); no layer
 * below calls it. */
#ifndef DAWNRUN_CONFIG_RESOLVE_H
#define DAWNRUN_CONFIG_RESOLVE_H

#include <libconfig.h>

#include "config_schema.h"
#include "config_tree.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"

/* ---- maps merged into another key (config_merge.c) ------------------------------------- */

/* Applies every map with merge_into onto its target (after validation): each member
 * replaces the target's member of that name, which must exist, unless the target's
 * value was written later (the files rank below the overrides, a later override above an
 * earlier one). Problems go to d. Returns DR_OK, DR_ERR_NOMEM or DR_ERR_INTERNAL. */
int cfg_merge_maps(struct cfg_diag *d, config_setting_t *root,
                   const config_setting_t *schema_root);

/* ---- the values of a layer entry (config_attrs.c) -------------------------------------- */

/* The value of a numeric setting (a number, a boolean, or a string holding an
 * expression, whose variables lookup(ctx) gives; lookup may be NULL: no variables) into
 * *v. A failed expression is recorded in d as "WHERE: WHAT: problem in \"text\"". Returns
 * 1 on success, 0 on failure. */
int cfg_value_eval(double *v, struct cfg_diag *d, const config_setting_t *s,
                   cfg_expr_lookup lookup, void *ctx, const char *where, const char *what);
/* Evaluates every attribute of a layer type (attrs: the type's schema entries, NULL for
 * none) for the entry `layer` and stores it into its field of ls: the value written
 * (expressions evaluated with lookup(ctx) and checked against the entry's limits), else
 * the entry's default, else the value of the attribute it defaults from. Problems are
 * recorded in d under `where` ("layer 'NAME'"). Returns 1 when every attribute was
 * stored, 0 otherwise. */
int cfg_attrs_fill(struct layer_spec *ls, struct cfg_diag *d, const config_setting_t *layer,
                   const config_setting_t *attrs, cfg_expr_lookup lookup, void *ctx,
                   const char *where);

/* ---- the expansion (config_expand.c) --------------------------------------------------- */

/* Stable storage for the file names the net_spec's layers point to. */
struct cfg_files {
    char **names;
    int count, cap;
};
/* Returns a stable copy of name (one per distinct name), or NULL on out of memory. */
const char *cfg_files_intern(struct cfg_files *f, const char *name);
/* Releases the names; pointers cfg_files_intern returned become invalid. */
void cfg_files_free(struct cfg_files *f);

/* Expands a checked model group (cfg_model_check) into spec: qualified names, resolved
 * inputs, every attribute evaluated, bn splits checked against train.batch_size (read
 * from the same config), the model's output. Runs only on a sound config: when d already
 * holds a message (or the model has no layer list) it expands nothing and returns
 * DR_ERR_CONFIG. Problems go to d; layers point to file names kept in files. Returns
 * DR_OK, DR_ERR_CONFIG or DR_ERR_NOMEM. spec must be empty. */
int cfg_model_expand(struct cfg_diag *d, struct net_spec *spec, struct cfg_files *files,
                     const config_setting_t *model, const config_setting_t *schema_root);

/* ---- the canonical resolved tree (config_canon.c) -------------------------------------- */

/* Builds the canonical resolved tree of a checked, merged experiment root under
 * dst_root: schema keys in schema order with defaults filled (a key with omit_default
 * left out at its default), floats as floats, merged maps dropped, maps and blocks sorted
 * by name, every layer canonical. Returns DR_OK, DR_ERR_NOMEM or DR_ERR_INTERNAL. */
int cfg_canonical_tree(config_setting_t *dst_root, const config_setting_t *root,
                       const config_setting_t *schema_root);

/* ---- struct experiment (config_fill.c) ------------------------------------------------- */

/* Fills every field of e but net, resolved and sources from the canonical resolved tree
 * res (keys left out at their default are read from the schema); data.dir "" becomes
 * $DAWNRUN_DATA or ./data/cifar-10-batches-bin. e->path names the config in messages.
 * Returns DR_OK, DR_ERR_CONFIG (the data directory is too long) or DR_ERR_INTERNAL (the
 * tree lacks a key). */
int cfg_fill_experiment(struct experiment *e, const config_t *res,
                        const config_setting_t *schema_root);

#endif

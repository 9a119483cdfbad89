/* Layer 3 of config handling, validation (the layers: engine/config/config_tree.h): the
 * experiment checked against the embedded schema (schemas/config.schema) and the rules of
 * the model section, every problem recorded with its file:line (or --set flag) and a
 * did-you-mean where a name is close to a known one. Also the expression language of
 * numeric attributes, whose syntax and variables are checked here and which resolution
 * evaluates. Calls reading (config_tree.h) and lookups (config_lookup.h), never
 * resolution. */
#ifndef DAWNRUN_CONFIG_SCHEMA_H
#define DAWNRUN_CONFIG_SCHEMA_H

#include <libconfig.h>
#include <stddef.h>

#include "config_tree.h"

/* ---- the schema and its entries (config_schema.c) -------------------------------------- */

/* Parses the embedded schema into cfg. Returns DR_OK or DR_ERR_INTERNAL. */
int cfg_schema_load(config_t *schema);
/* The string member `key` of a schema entry ("type", "merge_into", ...), or NULL (also
 * for a NULL entry). */
const char *cfg_entry_str(const config_setting_t *entry, const char *key);
/* The boolean member `key` of a schema entry ("required", "omit_default"), 0 when absent
 * (or a NULL entry). */
int cfg_entry_flag(const config_setting_t *entry, const char *key);
/* 1 when the entry's type is `type` ("int", "group", "map", ...). */
int cfg_entry_is(const config_setting_t *entry, const char *type);
/* The schema entry of an experiment key by its dotted path ("train.average.kind"), or
 * NULL. *omittable (may be NULL) is set to 1 when the entry or a group above it has
 * omit_default, i.e. when the resolved text may leave the key out. */
const config_setting_t *cfg_schema_entry(const config_setting_t *schema_root, const char *path,
                                         int *omittable);
/* 1 when setting v equals the entry's default (numbers by value, bools, strings); 0 when
 * it differs or the entry has no default. */
int cfg_schema_is_default(const config_setting_t *entry, const config_setting_t *v);
/* Checks that a number fits an int or float entry (integrality, min, max, gt). Returns 1
 * when it does; otherwise writes the complaint ("must be >= 1, got 0") into msg. */
int cfg_schema_check_number(const config_setting_t *entry, double v, char *msg, size_t n);
/* Checks a setting against an entry of scalar or array type; records "PREFIX'NAME' must
 * be ..." in d on failure. Returns 1 when valid. */
int cfg_schema_check_value(struct cfg_diag *d, const config_setting_t *s,
                           const config_setting_t *entry, const char *prefix,
                           const char *name);

/* ---- the experiment's keys (config_validate.c) ----------------------------------------- */

/* Checks every key under the experiment root against the schema's "experiment" entries,
 * recording each problem in d. Map members an override created are unknown keys. */
void cfg_schema_validate(struct cfg_diag *d, const config_setting_t *root,
                         const config_setting_t *schema_root);

/* ---- the model section (config_model.c) ------------------------------------------------ */

/* Checks the model group (after model_vars is merged into it) where values do not
 * matter: layer entries, types, attributes, blocks and their arguments, names,
 * expressions' syntax and variables, block recursion and the model's output. Every
 * definition is checked once, however often a block is used. Problems go to d. Returns
 * DR_OK (also when problems were recorded) or DR_ERR_NOMEM. */
int cfg_model_check(struct cfg_diag *d, const config_setting_t *model,
                    const config_setting_t *schema_root);

/* ---- expressions (config_expr.c) ------------------------------------------------------- */

enum cfg_expr_status { EXPR_OK, EXPR_SYNTAX, EXPR_UNKNOWN_VAR, EXPR_DIV_ZERO, EXPR_RANGE };

/* Looks a variable (name without '$') up; returns 1 and sets *value when it exists. */
typedef int (*cfg_expr_lookup)(void *ctx, const char *name, double *value);

struct cfg_expr_error {
    char name[64];     /* EXPR_UNKNOWN_VAR: the variable, without '$' */
    char msg[128];     /* EXPR_SYNTAX: what is wrong, e.g. "unexpected '*' at column 3" */
};

/* Evaluates an expression of numbers, $variables, unary + -, binary + - * / and
 * parentheses. check_only: variables' values are not needed (lookup only says whether
 * they exist) and division by zero is not an error; used to check an expression once for
 * every later use. Returns an enum cfg_expr_status; err describes a failure. */
int cfg_expr_eval(double *out, const char *text, cfg_expr_lookup lookup, void *ctx,
                  int check_only, struct cfg_expr_error *err);

/* ---- did-you-mean (config_suggest.c) --------------------------------------------------- */

/* Levenshtein edit distance of two strings (insert, delete, substitute cost 1). */
int cfg_edit_distance(const char *a, const char *b);
/* The candidate closest to word, or NULL when none is close: edit distance <= 2 (<= 1
 * for words of 1-2 characters), or else a shared prefix of >= 3 characters, or one being
 * a prefix of the other (>= 2 characters). Ties go to the earlier candidate. */
const char *cfg_suggest(const char *word, const char *const *cands, int n);
/* Same with the member names of a group (or the string elements of an array/list) as the
 * candidates, skipping settings created by an override. NULL group = no candidates. */
const char *cfg_suggest_member(const char *word, const config_setting_t *group);
/* Writes " (did you mean 'PREFIXsugg'?)" into buf, or "" when sugg is NULL; returns buf. */
const char *cfg_did_you_mean(char *buf, size_t n, const char *prefix, const char *sugg);

#endif

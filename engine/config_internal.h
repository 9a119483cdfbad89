/* Shared internals of the config loader (engine/config_*.c): the error collector, setting
 * origins for --set overrides, tree helpers, the schema, the expression evaluator, the
 * did-you-mean helper and the model expansion. Not a public interface: only the
 * config_*.c files and their tests include it. */
#ifndef DAWNRUN_CONFIG_INTERNAL_H
#define DAWNRUN_CONFIG_INTERNAL_H

#include <libconfig.h>
#include <stddef.h>
#include <stdio.h>

#include "graph.h"

/* ---- error collection (config_diag.c) ------------------------------------------------- */

/* The override a setting came from: attached as the libconfig hook of every setting a
 * --set creates or copies, so that messages about it name the flag. */
struct cfg_origin {
    const char *set;   /* the "key.path=value" text */
    int index;         /* which override (0 = the first), for the order of messages */
    int created;       /* 1: the override created this key, the file did not have it */
};

struct cfg_msg {
    int rank;          /* -1: an override; else the file's rank (first file 0) */
    int line;          /* 0 = no line */
    int seq;
    char *text;        /* the whole line, without '\n' */
};

/* Collects every problem found while loading, to print them in file order. */
struct cfg_diag {
    const char *main_file;
    const char *include_dir; /* the main file's directory, NULL for "." */
    char **shown;            /* included files' names as shown: include_dir/name */
    int n_shown;
    const char **files;  /* ranks: files[i] has rank i */
    int n_files, cap_files;
    struct cfg_msg *msgs;
    int count, cap;
    int nomem;           /* an allocation failed while recording */
};

/* The name to show for a file libconfig read: the main file as given; an included file
 * (libconfig records the name written after @include) joined to the include directory,
 * so that the path works from the current directory. Stable until cfg_diag_free. */
const char *cfg_diag_file_name(struct cfg_diag *d, const char *file);
/* Gives the files of every setting under root a rank in document order, main file 0. */
void cfg_diag_rank_files(struct cfg_diag *d, const config_setting_t *root);
/* Records "LOCATION: message" for setting s: "--set key=value: " for an override,
 * "file:line: " for a setting read from a file ("file: " for the root). */
void cfg_diag_at(struct cfg_diag *d, const config_setting_t *s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Records "--set TEXT: message" for override number index that could not be applied. */
void cfg_diag_set(struct cfg_diag *d, int index, const char *text, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prints the messages sorted by (file rank, line, order recorded), one per line, dropping
 * repeats; overrides' messages come first, in the order of the flags. Returns how many
 * were printed. */
int cfg_diag_flush(struct cfg_diag *d, FILE *f);
/* Releases the collector's memory (messages not flushed are dropped). */
void cfg_diag_free(struct cfg_diag *d);

/* ---- tree helpers (config_tree.c) ------------------------------------------------------ */

/* "an integer", "a float", "a string", "a boolean", "an array", "a list", "a group". */
const char *cfg_type_phrase(const config_setting_t *s);
/* 1 for an int, int64 or float setting. */
int cfg_is_number(const config_setting_t *s);
/* Value of a numeric setting as a double. */
double cfg_number(const config_setting_t *s);
/* Appends a deep copy of src to parent (as `name` in a group, unnamed in a list/array),
 * tagging every copied setting with hook (may be NULL). Returns the copy or NULL. */
config_setting_t *cfg_copy(config_setting_t *parent, const char *name,
                           const config_setting_t *src, void *hook);
/* The origin attached to s or to its nearest ancestor, or NULL. */
const struct cfg_origin *cfg_origin_of(const config_setting_t *s);
/* Formats a number as written in messages: integers without a fraction, else %g. */
void cfg_format_number(char *buf, size_t n, double v);
/* 1 when name is a valid identifier: [A-Za-z_][A-Za-z0-9_]*. */
int cfg_is_identifier(const char *name);

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

/* ---- the schema (config_schema.c) ------------------------------------------------------ */

/* Parses the embedded schema into cfg. Returns DR_OK or DR_ERR_INTERNAL. */
int cfg_schema_load(config_t *schema);
/* Checks every key under the experiment root against the schema's "experiment" entries,
 * recording each problem in d. Map members an override created are unknown keys. */
void cfg_schema_validate(struct cfg_diag *d, const config_setting_t *root,
                         const config_setting_t *schema_root);
/* Applies every map with merge_into onto its target (after validation): each member
 * replaces the target's member of that name, which must exist. Problems go to d. */
int cfg_schema_merge(struct cfg_diag *d, config_setting_t *root,
                     const config_setting_t *schema_root);
/* Builds the canonical resolved tree under dst_root: schema keys in schema order with
 * defaults filled, floats as floats, merged maps dropped, the model canonicalised by
 * cfg_model_canonical. Returns DR_OK or DR_ERR_NOMEM. */
int cfg_schema_resolve(config_setting_t *dst_root, const config_setting_t *root,
                       const config_setting_t *schema_root);
/* 1 when setting v equals the entry's default (numbers by value, bools, strings); 0 when
 * it differs or the entry has no default. */
int cfg_schema_is_default(const config_setting_t *entry, const config_setting_t *v);
/* The schema entry of an experiment key by its dotted path ("train.average.kind"), or
 * NULL. *omittable (may be NULL) is set to 1 when the entry or a group above it has
 * omit_default, i.e. when the resolved text may leave the key out. */
const config_setting_t *cfg_schema_entry(const config_setting_t *schema_root, const char *path,
                                         int *omittable);
/* Checks that a number fits an int or float entry (integrality, min, max, gt). Returns 1
 * when it does; otherwise writes the complaint ("must be >= 1, got 0") into msg. */
int cfg_schema_check_number(const config_setting_t *entry, double v, char *msg, size_t n);
/* Checks a setting against an entry of scalar or array type; records "PREFIX'NAME' must
 * be ..." in d on failure. Returns 1 when valid. */
int cfg_schema_check_value(struct cfg_diag *d, const config_setting_t *s,
                           const config_setting_t *entry, const char *prefix,
                           const char *name);

/* ---- the model (config_model.c, config_expand.c, config_canon.c) ---------------------- */

/* Stable storage for the file names the net_spec's layers point to. */
struct cfg_files {
    char **names;
    int count, cap;
};
/* Returns a stable copy of name (one per distinct name), or NULL on out of memory. */
const char *cfg_files_intern(struct cfg_files *f, const char *name);
/* Releases the names; pointers cfg_files_intern returned become invalid. */
void cfg_files_free(struct cfg_files *f);

/* What the model checks and the expansion share. */
struct cfg_model {
    struct cfg_diag *d;
    const config_setting_t *layer_keys;  /* schema: the keys of every layer entry */
    const config_setting_t *block_keys;  /* schema: the keys of a block */
    const config_setting_t *types;       /* schema: layer_types */
    const config_setting_t *vars;        /* model.vars (a group) or NULL */
    const config_setting_t *blocks;      /* model.blocks (a group) or NULL */
    struct net_spec *spec;
    struct cfg_files *files;
    int batch_size;                      /* train.batch_size (0 = unknown): bn splits must
                                            divide it */
};

/* The name of entry i of a layer list: its `name`, else "<type><i>" / "<block><i>". */
void cfg_layer_name(const config_setting_t *layer, int i, char *buf, size_t n);
/* Index of the entry named `name` in a layer list, or -1. */
int cfg_layer_find(const config_setting_t *list, const char *name);
/* The definition of a block by name (a group of model.blocks), or NULL. */
const config_setting_t *cfg_block_find(const struct cfg_model *m, const char *name);
/* The schema entry of attribute `attr` of a layer type, or NULL. */
const config_setting_t *cfg_type_attr(const struct cfg_model *m, const char *type,
                                      const char *attr);
/* 1 when `key` is one of the keys every layer entry has (name, type, block, input, ...). */
int cfg_is_layer_key(const struct cfg_model *m, const char *key);

/* Checks the model group (after merging model_vars) and, when it is sound, expands its
 * blocks into spec: qualified names, resolved inputs, every attribute evaluated, bn
 * splits checked against train.batch_size (read from the same config). Problems
 * go to d; returns DR_OK, DR_ERR_CONFIG or DR_ERR_NOMEM. spec must be empty. */
int cfg_model_build(struct cfg_diag *d, struct net_spec *spec, struct cfg_files *files,
                    const config_setting_t *model, const config_setting_t *schema_root);
/* The expansion of a checked model's top-level layers into m->spec (config_expand.c). */
int cfg_model_expand(struct cfg_model *m, const config_setting_t *layers);
/* The qualified name a top-level reference stands for (a block instance's name stands
 * for its output layer). */
void cfg_model_output_name(const struct cfg_model *m, const config_setting_t *layers,
                           const char *name, char *buf, size_t n);
/* Appends to dst (a list) the canonical copy of a checked layer list: each layer's name
 * (the default one when absent), type or block, inputs, then its attributes in schema
 * order with defaults filled (float attributes as floats) or its block arguments sorted
 * by name. Returns DR_OK or DR_ERR_NOMEM. */
int cfg_model_canonical_layers(config_setting_t *dst, const config_setting_t *layers,
                               const config_setting_t *schema_root);

/* ---- overrides (config_set.c) ---------------------------------------------------------- */

/* Applies one "key.path=value" override to cfg: the value is parsed as libconfig text
 * (a bare word that is not valid libconfig is taken as a string; an array whose elements
 * mix integers and floats is read as a list), missing groups on the path are created,
 * and the settings made are tagged with origins[0] (the path) and origins[1] (inside the
 * value), both filled here; index is its position among the overrides. Problems go to d. Returns DR_OK, DR_ERR_CONFIG, or
 * DR_ERR_NOMEM. */
int cfg_set_apply(struct cfg_diag *d, config_t *cfg, int index, const char *text,
                  struct cfg_origin origins[2]);

#endif

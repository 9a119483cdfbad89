/* Config handling, from the bottom up. Each layer calls only the layers below it, and
 * each file includes only its own layer's header and those below:
 *
 *   1. reading (config_tree.h): the libconfig tree as the user wrote it: the file opened
 *      and parsed with its @include directory (config_read.c), the --set overrides
 *      applied to it (config_set.c), where every setting came from, file:line or the
 *      flag, and the collector of messages at those places (config_diag.c), small helpers
 *      on settings (config_tree.c). Calls no other config layer.
 *   2. lookups (config_lookup.h, config_lookup.c): layers and blocks found by name in a
 *      model section. A leaf: calls nothing else of config.
 *   3. validation (config_schema.h): the embedded schemas/config.schema, its entries and
 *      the checks of single values (config_schema.c), the walk of the experiment's keys
 *      (config_validate.c), the checks of the model section (config_model.c), the
 *      expression language (config_expr.c), did-you-mean (config_suggest.c) and the
 *      reference printed from the schema (config_doc.c). Calls reading and lookups.
 *   4. resolution (config_resolve.h): model_vars merged into model.vars (config_merge.c),
 *      blocks expanded into a net_spec (config_expand.c) with every attribute evaluated
 *      (config_attrs.c), the schema's defaults of a layer type for networks built in
 *      code (config_defaults.c), the canonical resolved tree whose text is hashed
 *      (config_canon.c), struct experiment filled from it (config_fill.c), and
 *      experiment_load, the one entry, running all of it in order (config_load.c).
 *      Calls every layer below.
 *
 * The layers are not a public interface: engine/core/experiment.h is. Only the config_*.c
 * files and their tests include these headers.
 *
 * This header is layer 1, reading. */
#ifndef DAWNRUN_CONFIG_TREE_H
#define DAWNRUN_CONFIG_TREE_H

#include <libconfig.h>
#include <stddef.h>
#include <stdio.h>

/* ---- where a setting came from, and the messages (config_diag.c) ---------------------- */

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
    char *include_dir;       /* the main file's directory, NULL for "." (owned) */
    char **shown;            /* included files' names as shown: include_dir/name */
    int n_shown, cap_shown;
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

/* ---- reading the file (config_read.c) -------------------------------------------------- */

/* Reads the experiment file `path` into cfg (initialised by the caller), its @includes
 * relative to the file's directory, and sets d->main_file and d->include_dir for the
 * names of later messages. A file that is missing, not a regular file, includes a
 * directory or does not parse is reported to stderr as "file:line: message" (the name as
 * cfg_diag_file_name shows it). Returns DR_OK, DR_ERR_CONFIG, DR_ERR_IO (libconfig
 * could not read a file it opened) or DR_ERR_NOMEM. */
int cfg_read_file(config_t *cfg, struct cfg_diag *d, const char *path);

/* ---- overrides (config_set.c) ---------------------------------------------------------- */

/* Applies one "key.path=value" override to cfg: the value is parsed as libconfig text
 * (a bare word that is not valid libconfig is taken as a string; an array whose elements
 * mix integers and floats is read as a list), missing groups on the path are created,
 * and the settings made are tagged with origins[0] (the path) and origins[1] (inside the
 * value), both filled here; index is its position among the overrides. Problems go to d.
 * Returns DR_OK, DR_ERR_CONFIG, or DR_ERR_NOMEM. */
int cfg_set_apply(struct cfg_diag *d, config_t *cfg, int index, const char *text,
                  struct cfg_origin origins[2]);

/* ---- helpers on settings (config_tree.c) ----------------------------------------------- */

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

#endif

/* Sweeps: a grid of config variants. Each dimension is a config key and a list of values
 * ("train.batch_size=512,768", from --sweep or from an element of a config's `sweep`
 * array); every combination of one value per dimension is one experiment, the config
 * with those values applied as --set overrides after the command line's own. */
#ifndef DAWNRUN_RUNNER_SWEEP_H
#define DAWNRUN_RUNNER_SWEEP_H

#define SWEEP_MAX_DIMS 16
#define SWEEP_MAX_COMBINATIONS 4096

struct sweep_dim {
    char *key;        /* "train.batch_size" */
    char **values;    /* libconfig text of each value, e.g. "512", "[0,5,24]" */
    int n_values, cap_values;
};

struct sweep {
    struct sweep_dim dims[SWEEP_MAX_DIMS];
    int n_dims;
};

/* Adds the dimension "key.path=v1,v2,...": values are separated by commas outside
 * brackets, parentheses, braces and quotes ("x=[0,5],[0,8]" has two values), blanks
 * around them are dropped. The key is stored in its canonical spelling
 * (config_key_canonical: model_vars.x is model.vars.x), and the labels use it. A
 * dimension whose key is already there replaces it (so a
 * --sweep overrides the config's sweep of the same key). `where` names the origin in
 * messages ("--sweep", "demo.cfg: sweep[1]"). A malformed spec, an empty value, more
 * than SWEEP_MAX_DIMS dimensions or SWEEP_MAX_COMBINATIONS combinations is reported and
 * returns `bad` (the caller's status for its origin); else DR_OK or DR_ERR_NOMEM. */
int sweep_add(struct sweep *s, const char *spec, const char *where, int bad);

/* Adds the dimensions of the `sweep` array of a resolved config text (nothing when it
 * has none). config_path names the file in messages. Returns DR_OK, DR_ERR_CONFIG or
 * DR_ERR_NOMEM. */
int sweep_add_from_resolved(struct sweep *s, const char *resolved, const char *config_path);

/* Number of combinations: the product of the value counts (1 for an empty sweep). */
int sweep_count(const struct sweep *s);

/* Combination i (0 <= i < sweep_count; the first dimension varies slowest): sets[d] gets
 * "key=value" for every dimension d (s->n_dims strings), and label
 * "key=value,key=value" ("" for an empty sweep). All malloc'd: free with
 * sweep_combination_free. Returns DR_OK or DR_ERR_NOMEM. */
int sweep_combination(const struct sweep *s, int i, char ***sets, char **label);
void sweep_combination_free(const struct sweep *s, char **sets, char *label);

void sweep_free(struct sweep *s);

/* Removes the top-level `sweep` setting from a resolved config text, in place: the
 * sweep describes a family of experiments, not one of them, so an experiment's identity
 * is the same whether its values came from the config's sweep or from --sweep. */
void sweep_strip_resolved(char *resolved);

/* What a `dawnrun run` records of the grids it expanded: the axes (each swept key once,
 * with its values joined by commas; the first config's values when several configs sweep
 * the same key) and, per combination in grid order, the index of its experiment in the
 * batch (a combination identical to an earlier one points at the same experiment). */
struct sweep_log {
    char **keys, **vals;     /* n_axes each, under one capacity cap_axes */
    int n_axes, cap_axes;
    int *members;
    int n_members, cap_members;
};

/* Adds the dimensions of s whose key l does not have yet. DR_OK or DR_ERR_NOMEM. */
int sweep_log_axes(struct sweep_log *l, const struct sweep *s);
/* Appends one combination: the batch index of its experiment. DR_OK or DR_ERR_NOMEM. */
int sweep_log_member(struct sweep_log *l, int index);
void sweep_log_free(struct sweep_log *l);

/* The command line "dawnrun ARG..." with each argument shell-quoted where it needs it
 * (single quotes; an embedded ' as '\''), malloc'd into *out. argv[0] is the command's
 * name ("run"). DR_OK or DR_ERR_NOMEM. */
int sweep_command_line(char **out, int argc, char *const *argv);

/* Is v a reference to a recorded sweep ("last" or a decimal id) rather than a grid
 * "key=v1,v2"? */
int sweep_is_record_ref(const char *v);

#endif

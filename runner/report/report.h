/* The batch report: per experiment, runs done, runs reaching the target, accuracy
 * statistics and times; several experiments side by side with their differences. Used
 * by `dawnrun report` and at the end of `dawnrun run`. */
#ifndef DAWNRUN_RUNNER_REPORT_H
#define DAWNRUN_RUNNER_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "results/results.h"

enum report_format { REPORT_TABLE, REPORT_CSV, REPORT_JSON, REPORT_MARKDOWN, REPORT_HTML };

/* Parses "table" | "csv" | "json" | "markdown" | "html"; returns 0, or -1 for anything
 * else. */
int report_format_parse(enum report_format *out, const char *name);

/* Writes the report for the n experiments (in that order) to f. target: the accuracy
 * that counts as a hit; NaN = each experiment's own target_accuracy. Returns a dr_status. */
int report_print(FILE *f, struct results *db, const int64_t *experiment_ids, int n,
                 double target, enum report_format fmt);

/* report_print with one column (row, entry) per value of the params key group_by
 * instead of one per experiment: the runs of every experiment with that value pooled
 * (over every other key), in order of first appearance among the n experiments, each
 * saying how many experiments and runs went into it. An experiment without the key is
 * in the group "(none)". A key no selected experiment has is reported (the keys that
 * differ between them suggested) as DR_ERR_USAGE. */
int report_print_grouped(FILE *f, struct results *db, const int64_t *experiment_ids, int n,
                         double target, enum report_format fmt, const char *group_by);

/* The results database a command reads: `flag` (the --db value) when not NULL, else
 * $DAWNRUN_DB when set and not empty, else REPORT_DEFAULT_DB. */
#define REPORT_DEFAULT_DB "results/dawnrun.db"
const char *report_db_path(const char *flag);

/* Resolves command-line arguments to experiment ids, in order, each id once. An argument
 * that names an existing file is a config, identified as `dawnrun run` does: loaded with
 * the n_sets overrides, its sweep (its `sweep` section, then the n_sweeps "key=v1,v2"
 * specs) expanded into one experiment per combination, each matched by experiment_hash
 * of its resolved text without the sweep section, else by an identical stored text, else
 * (a sweep combination run with other overrides) by its member name "NAME:key=value,..."
 * (noted on stderr, as are combinations not found at all). Anything else is an
 * experiment id or exact name (every experiment of that name is taken), else a
 * config-hash prefix of at least 6 characters (one that matches several experiments is
 * reported with the candidates: DR_ERR_USAGE), else a name glob (fnmatch: '*', '?',
 * '[...]'), else the base name of sweep members ("NAME" takes every "NAME:..."). An
 * argument that matches nothing is reported, naming it and the database: DR_ERR_USAGE; a config that
 * does not load: DR_ERR_CONFIG (or DR_ERR_IO). *ids is malloc'd (free it); *n_configs
 * (may be NULL) counts the arguments that were configs. */
int report_find(struct results *db, int64_t **ids, int *n, int *n_configs,
                const char *const *args, int n_args, const char *const *sets, int n_sets,
                const char *const *sweeps, int n_sweeps);

#endif

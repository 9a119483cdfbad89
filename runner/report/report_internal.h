/* Private to the report: the figures of each experiment and of each comparison with the
 * first one (computed by report.c), the four text writers (report_write.c), the HTML page
 * (report_html.c) and the text grid they and the query commands print through
 * (report_grid.c). */
#ifndef DAWNRUN_RUNNER_REPORT_INTERNAL_H
#define DAWNRUN_RUNNER_REPORT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "runner/cli/cli_flags.h"
#include "report.h"
#include "results/results.h"
#include "results/stats.h"

#define REPORT_N_STATUS 6   /* enum results_run_status has six values */

/* What the report says about one experiment. Every unknown number is NaN. */
struct report_exp {
    struct results_experiment x;      /* owned */
    double target;                    /* the target used; NaN = none */
    int total;                        /* runs of any status */
    int n_status[REPORT_N_STATUS];    /* runs by enum results_run_status */
    int finished;                     /* done + diverged: the runs that have an outcome */
    int hits;                         /* done runs with final accuracy >= target; -1: no target */
    double hit_rate;                  /* hits / finished; NaN when no target or none finished */
    double hit_ci_lo, hit_ci_hi;      /* its exact (Clopper-Pearson) 95 % interval; NaN then */
    double *acc;                      /* final test accuracy of the done runs, by seed */
    double *train_time;               /* train time of the done runs, by seed */
    int n_acc, n_train_time;
    struct stats_summary acc_stats, train_time_stats, total_time_stats; /* acc_stats' CI
                                         is clamped to [0, 1] */
    int reached;                      /* done runs whose test accuracy reached the target
                                         at some epoch */
    double epochs_to_target;          /* median over those runs of the first such epoch */
    double time_to_target;            /* median of the train time up to that epoch */
    int n_members;                    /* experiments pooled into these figures (1: x alone) */
    char *group_value;                /* --group-by: the key's value of the pooled
                                         experiments (owned); NULL otherwise */
};

/* Experiment i of a report against the first one. */
struct report_cmp {
    double d_acc_mean;                /* mean accuracy(i) - mean accuracy(first) */
    double d_time_median;             /* median train time(i) - median train time(first), s */
    double d_time_rel;                /* d_time_median / median train time(first) */
    struct stats_test acc_welch, acc_mwu, time_welch, time_mwu;   /* p NaN: not computable */
    /* Minimum detectable differences with the seeds done so far, at REPORT_MDE_ALPHA and
     * REPORT_MDE_POWER (results/stats.h, power and sample size): of the mean accuracy
     * (t-test, sd pooled over the pair) and of the median train time (the Mann-Whitney U
     * test printed: exact up to STATS_MWU_EXACT_PAIRS pairs, s; _rel: over the first's
     * median). NaN: fewer than two done runs on a side, or no spread; mde_time +inf: no
     * outcome of the exact test with these runs gives p < REPORT_MDE_ALPHA. */
    double mde_acc, mde_time, mde_time_rel;
    int time_runs_min;                /* the fewest runs per side with which it can:
                                         stats_mwu_min_n(REPORT_MDE_ALPHA) */
};

/* The level and power the report's detectable differences are stated at. */
#define REPORT_MDE_ALPHA 0.05
#define REPORT_MDE_POWER 0.8

struct param_list;

/* A whole report: n experiments, cmp[0] unused (all NaN). */
struct report {
    const char *db_path;
    double target;                    /* as asked: NaN = each experiment's own */
    int n;
    struct report_exp *exps;
    struct report_cmp *cmp;
    struct param_list *params;        /* n lists (report_params_attach); NULL: none */
    char **keys;                      /* the keys that differ among them */
    int n_keys;
    const char *group_key;            /* --group-by KEY: exps are its values; NULL: not */
    int n_experiments;                /* experiments selected (pooled into the groups) */
    struct results *db;               /* the store it was computed from; NULL: none */
};

/* Reads the experiments and their runs (and the epochs of done runs, for the epochs and
 * time to the target) and computes every figure. An unknown id is DR_ERR_USAGE (reported,
 * naming the database). Free with report_free, also after a failure. */
int report_compute(struct report *r, struct results *db, const int64_t *experiment_ids, int n,
                   double target);
void report_free(struct report *r);

/* Fills e (zeroed) with the figures of the runs of the n experiments ids pooled: e->x is
 * the first one's record and e->target the target used for it; with target NaN each run
 * counts against its own experiment's target. */
int report_exp_compute(struct report_exp *e, struct results *db, const int64_t *ids, int n,
                       double target);
/* Fills r->cmp: every entry of r->exps against the first. */
int report_compare_all(struct report *r);
/* Writes r in fmt (one of the writers below), flushed; DR_ERR_IO on a write error. */
int report_write(FILE *f, const struct report *r, enum report_format fmt);

/* The writers of report_print, one per format. */
int report_write_table(FILE *f, const struct report *r);
int report_write_markdown(FILE *f, const struct report *r);
int report_write_csv(FILE *f, const struct report *r);
int report_write_json(FILE *f, const struct report *r);
/* The page (report_html.c), which also reads each experiment's runs, epochs and params
 * from db. */
int report_write_html(FILE *f, struct results *db, const struct report *r);

/* The "Sequential decision" part of r in fmt (report_decision.c): every batch run until
 * decided with a member among r's experiments; nothing when there is none, r->db is NULL
 * or r is grouped. Each writer calls it once. Returns a dr_status of the store. */
int report_decisions_write(FILE *f, const struct report *r, enum report_format fmt);

/* "p-values compare each experiment with #1 on its own, without correction for
 * multiplicity (2 comparisons)": what the report says once under its comparisons. */
void report_p_note(char *buf, size_t size, const struct report *r);

/* "target 94 %" or "target: each experiment's own". */
void report_target_note(char *buf, size_t size, const struct report *r);

/* Writes Page's sentence for e into buf: "4/5 runs reach 94 % (80 %, 95 % CI 28–99 %),
 * median 94.13 %, 161 s", or why it cannot be said yet. */
void report_sentence(char *buf, size_t size, const struct report_exp *e);

/* Number formats shared by the writers and the query commands; NaN prints as "-". */
void report_fmt_pct(char *buf, size_t size, double fraction);   /* "94.13 %" */
void report_fmt_secs(char *buf, size_t size, double seconds);   /* "161 s", "81.7 s" */
void report_fmt_target(char *buf, size_t size, double fraction);/* "94 %" */

/* Opens the database a query command reads, read-only: a missing file is reported with a
 * hint (--db, $DAWNRUN_DB, `dawnrun run` creates it) and never created. */
int report_open_db(struct results **db, const char *path);

/* ---- the experiment selection flags of report, plot and export ---------------------- */

/* What a command reads: the database, the EXPERIMENT|CONFIG arguments and the overrides
 * and sweeps applied to the configs among them. The arrays point into argv. */
struct report_selection {
    const char *db_flag;     /* --db; NULL: report_db_path's default */
    double target;           /* --target (when the command takes it); NaN: not given */
    const char **args;       /* n_args positional EXPERIMENT|CONFIG arguments */
    const char **sets;       /* n_sets --set key.path=value */
    const char **sweeps;     /* n_sweeps --sweep key.path=v1,v2 (or a recorded sweep) */
    const char **wheres;     /* n_wheres --where key=value, ANDed */
    int n_args, n_sets, n_sweeps, n_wheres;
    int cap;                 /* the room in each array */
};

/* The table callbacks of the selection flags; dst is the struct report_selection.
 * --set and --where need key.path=value, --sweep key.path=v1,v2; --target an accuracy
 * in (0, 1]. DR_OK, or DR_ERR_USAGE with the message printed. */
int report_take_set(void *dst, const char *value, const char *cmd);
int report_take_sweep(void *dst, const char *value, const char *cmd);
int report_take_where(void *dst, const char *value, const char *cmd);
int report_take_target(void *dst, const char *value, const char *cmd);

/* The selection flags as table entries (cli_flags.h) of an options struct `type` that
 * holds its struct report_selection as `member`: --db, --set, --sweep, --where, and
 * --target for the commands that take it. */
#define REPORT_FLAG_DB(type, member)                                                       \
    {.name = "db", .kind = CLI_STRING, .offset = offsetof(type, member.db_flag),           \
     .meta = "PATH", .hint = CLI_HINT_FILE,                                                \
     .help = "the results database (default: $DAWNRUN_DB, or " REPORT_DEFAULT_DB ")"}
#define REPORT_FLAG_TARGET(type, member)                                                   \
    {.name = "target", .kind = CLI_CALL, .offset = offsetof(type, member.target),          \
     .meta = "ACC", .call = report_take_target,                                            \
     .help = "the accuracy to reach, e.g. 0.94 (default: each experiment's)"}
#define REPORT_FLAG_SET(type, member)                                                      \
    {.name = "set", .kind = CLI_CALL, .offset = offsetof(type, member),                    \
     .meta = "key=value", .hint = CLI_HINT_KEY, .repeat = 1, .call = report_take_set,      \
     .help = "the CONFIG arguments' experiments with this override"}
#define REPORT_FLAG_SWEEP(type, member)                                                    \
    {.name = "sweep", .kind = CLI_CALL, .offset = offsetof(type, member),                  \
     .meta = "key=v1,v2", .hint = CLI_HINT_KEY, .repeat = 1, .call = report_take_sweep,    \
     .help = "every experiment of the CONFIG arguments swept over these values"}
#define REPORT_FLAG_WHERE(type, member)                                                    \
    {.name = "where", .kind = CLI_CALL, .offset = offsetof(type, member),                  \
     .meta = "key=value", .hint = CLI_HINT_KEY, .repeat = 1, .call = report_take_where,    \
     .help = "only the experiments whose config has this value (all must hold)"}

/* Parses argv[1..argc) against cmd's table into opts, of which sel is a member (the
 * table holds the selection flags above and the command's own): the positional
 * arguments go to sel->args. *help = 1 when --help printed the usage (nothing else to
 * do). A missing value, a bad value or an unknown flag is reported with the usage line
 * and DR_ERR_USAGE; DR_ERR_NOMEM when out of memory. Free sel with
 * report_selection_free, also after a failure. */
int report_selection_parse(struct report_selection *sel, int *help,
                           const struct cli_command *cmd, void *opts, int argc,
                           char **argv);
void report_selection_free(struct report_selection *sel);

/* Opens sel's database read-only (*db_path: its path) and resolves the selection to
 * experiment ids (every experiment when no argument was given; see report_find), then
 * keeps those matching every --where (report_filter_where).
 * --set/--sweep without a CONFIG argument is reported as "dawnrun NAME: ..." and
 * DR_ERR_USAGE. *ids is malloc'd and *db opened even after a failure: free and close. */
int report_selection_resolve(struct results **db, const char **db_path, int64_t **ids,
                             int *n_ids, const struct report_selection *sel,
                             const char *name);

/* ---- a table of text cells, printed aligned or as a GitHub table -------------------- */

struct report_grid {
    int rows, cols;
    char **cells;     /* rows * cols, row-major; NULL prints as "" */
};

/* Allocates an empty rows x cols grid. DR_OK or DR_ERR_NOMEM. */
int report_grid_init(struct report_grid *g, int rows, int cols);
/* Sets one cell from a printf format, invalid UTF-8 repaired (base/utf8.h), so that
 * every table and Markdown output is valid UTF-8. DR_OK or DR_ERR_NOMEM. */
int report_grid_set(struct report_grid *g, int row, int col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prints the columns left-aligned, two spaces apart, widths in characters (UTF-8 aware);
 * with rule != 0 a line of dashes follows row 0. */
void report_grid_print(FILE *f, const struct report_grid *g, int rule);
/* Prints a GitHub table: row 0 is the header; '|' in cells is escaped. */
void report_grid_print_markdown(FILE *f, const struct report_grid *g);
void report_grid_free(struct report_grid *g);
/* The table and Markdown formats' grid: row 0 the experiments ("#1 name"), column 0 the
 * figures' labels; rows from *first_cmp_row on (none when r->n < 2) are the comparisons
 * with the first experiment. DR_OK or DR_ERR_NOMEM; free g with report_grid_free. */
int report_grid_build(struct report_grid *g, int *first_cmp_row, const struct report *r);

/* ---- params of the selected experiments (params.c) ---------------------------------- */

struct param_list;

/* Loads the params of each experiment in ids, out[i] for ids[i], in the resolved config's
 * order: its rows of the params table, or (an experiment registered before they were
 * kept) the flattening (engine/core/experiment.h) of its stored resolved config. DR_OK,
 * DR_ERR_DB when an id is not there, DR_ERR_CONFIG for a stored text that does not parse,
 * DR_ERR_NOMEM; *out NULL after a failure. Free with report_params_free(out, n). */
int report_params_load(struct param_list **out, struct results *db, const int64_t *ids,
                       int n);
void report_params_free(struct param_list *p, int n);
/* report_params_load for display: an experiment whose stored config does not parse gets
 * an empty list (and a note on stderr) instead of failing the command. */
int report_params_load_shown(struct param_list **out, struct results *db, const int64_t *ids,
                             int n);

/* The keys whose value is not the same in all n lists (a key missing from some counts as
 * differing), `name` left out, in order of first appearance (lists[0]'s document order,
 * then keys only later lists have). One list or none: no keys. Free with
 * report_keys_free. */
int report_params_differing(char ***keys, int *n_keys, const struct param_list *lists, int n);
void report_keys_free(char **keys, int n);

/* Writes "k1=v1 k2=v2 ..." (p's values of keys; "(none)" for a key p lacks) into buf
 * (cap bytes, always terminated when cap > 0) and returns the length of the whole label,
 * which may exceed cap - 1: labels are never cut silently; a caller that must shorten one
 * can see it had to. */
size_t report_params_label(char *buf, size_t cap, const struct param_list *p,
                           char *const *keys, int n_keys);

struct param;

/* Writes p's value as a JSON value: a number for an int or float, true/false for a bool,
 * a string otherwise (a list as its text); null when p is NULL. */
void report_json_param(FILE *f, const struct param *p);
/* Writes every param of p as one JSON object {"key": value, ...}, one per line, the
 * closing brace after `indent`. */
void report_json_params(FILE *f, const struct param_list *p, const char *indent);

/* 1 when p matches `where` ("key=value"): p has the key and, when both the stored value
 * and the given one are numbers (true/false count as 1/0), the same number
 * ("train.lr=0.20" matches 0.2), else the same text. */
int report_where_matches(const struct param_list *p, const char *where);

/* Keeps, in order, those of ids[0..*n) whose params match every one of wheres (ANDed);
 * *n = how many. None left: reported ("dawnrun NAME: no experiment --where ... among the
 * N selected", and any key no selected experiment has), DR_ERR_USAGE. No wheres: no-op. */
int report_filter_where(struct results *db, int64_t *ids, int *n, const char *const *wheres,
                        int n_wheres, const char *name);

/* Resolves the EXPERIMENT arguments of a query command without configs (ids, names, hash
 * prefixes, name globs: report_find; every experiment when n_args = 0), then filters them
 * by wheres. *ids malloc'd even after a failure. */
int report_select(struct results *db, int64_t **ids, int *n, const char *const *args,
                  int n_args, const char *const *wheres, int n_wheres, const char *name);

/* rows[i] pointing into p's items (key, value, type name, num), for the results store.
 * Free *rows (not what it points to) with free(). */
int report_params_rows(struct results_param **rows, const struct param_list *p);

/* Writes the params of every experiment that has none (registered before schema version
 * 4), flattened from its config_text: what writing commands do when they open a
 * database. *filled (may be NULL) = how many experiments got them. */
int report_params_backfill(struct results *db, int *filled);

/* The differing keys of a report (report_params_differing over its experiments' params)
 * and each experiment's params: filled by report_compute, freed by report_free. */
int report_params_attach(struct report *r, struct results *db, const int64_t *ids, int n);
void report_params_detach(struct report *r);

#endif

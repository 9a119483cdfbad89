/* Private to the report: the figures of each experiment and of each comparison with the
 * first one (computed by report.c), the four text writers (report_write.c), the HTML page
 * (report_html.c) and the text grid they and the query commands print through
 * (report_grid.c). */
#ifndef DAWNRUN_RUNNER_REPORT_INTERNAL_H
#define DAWNRUN_RUNNER_REPORT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

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
    double *acc;                      /* final test accuracy of the done runs, by seed */
    double *train_time;               /* train time of the done runs, by seed */
    int n_acc, n_train_time;
    struct stats_summary acc_stats, train_time_stats, total_time_stats; /* acc_stats' CI
                                         is clamped to [0, 1] */
    int reached;                      /* done runs whose test accuracy reached the target
                                         at some epoch */
    double epochs_to_target;          /* median over those runs of the first such epoch */
    double time_to_target;            /* median of the train time up to that epoch */
};

/* Experiment i of a report against the first one. */
struct report_cmp {
    double d_acc_mean;                /* mean accuracy(i) - mean accuracy(first) */
    double d_time_median;             /* median train time(i) - median train time(first), s */
    double d_time_rel;                /* d_time_median / median train time(first) */
    struct stats_test acc_welch, acc_mwu, time_welch, time_mwu;   /* p NaN: not computable */
};

/* A whole report: n experiments, cmp[0] unused (all NaN). */
struct report {
    const char *db_path;
    double target;                    /* as asked: NaN = each experiment's own */
    int n;
    struct report_exp *exps;
    struct report_cmp *cmp;
};

/* Reads the experiments and their runs (and the epochs of done runs, for the epochs and
 * time to the target) and computes every figure. An unknown id is DR_ERR_USAGE (reported,
 * naming the database). Free with report_free, also after a failure. */
int report_compute(struct report *r, struct results *db, const int64_t *experiment_ids, int n,
                   double target);
void report_free(struct report *r);

/* The writers of report_print, one per format. */
int report_write_table(FILE *f, const struct report *r);
int report_write_markdown(FILE *f, const struct report *r);
int report_write_csv(FILE *f, const struct report *r);
int report_write_json(FILE *f, const struct report *r);
/* The page (report_html.c), which also reads each experiment's runs, epochs and params
 * from db. */
int report_write_html(FILE *f, struct results *db, const struct report *r);

/* "target 94 %" or "target: each experiment's own". */
void report_target_note(char *buf, size_t size, const struct report *r);

/* Writes Page's sentence for e into buf: "4/5 runs reach 94 %, median 94.13 %, 161 s",
 * or why it cannot be said yet. */
void report_sentence(char *buf, size_t size, const struct report_exp *e);

/* Number formats shared by the writers and the query commands; NaN prints as "-". */
void report_fmt_pct(char *buf, size_t size, double fraction);   /* "94.13 %" */
void report_fmt_secs(char *buf, size_t size, double seconds);   /* "161 s", "81.7 s" */
void report_fmt_target(char *buf, size_t size, double fraction);/* "94 %" */

/* Opens the database a query command reads, read-only: a missing file is reported with a
 * hint (--db, $DAWNRUN_DB, `dawnrun run` creates it) and never created. */
int report_open_db(struct results **db, const char *path);

/* The value of flag argv[*i] given as "--flag VALUE" or "--flag=VALUE" (advancing *i past
 * a separate value); NULL when argv[*i] is not that flag. Sets *missing = 1 when it is
 * but has no value, and leaves *missing alone otherwise. */
const char *report_flag_value(const char *flag, int argc, char **argv, int *i, int *missing);

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

/* How one command parses its command line: errors start "dawnrun NAME: ". */
struct report_cli {
    const char *name;                   /* "report", "plot", "export" */
    const char *usage;                  /* printed by --help and after an unknown flag */
    int with_target;                    /* accepts --target ACCURACY */
    const char *const *flags;           /* its own flags taking a value, NULL-terminated */
    /* Takes one of `flags` with its value: DR_OK, or DR_ERR_USAGE (message printed). */
    int (*on_flag)(void *ctx, const char *flag, const char *value);
    void *ctx;
};

/* Parses argv[1..argc) for cli: --db, --target (with_target), --set and --sweep (checked
 * for '='), cli->flags, --help/-h (usage on stdout, *help = 1, nothing else to do) and
 * the positional arguments. A missing value, a bad value or an unknown flag is reported
 * and DR_ERR_USAGE; DR_ERR_NOMEM when out of memory. Free sel with
 * report_selection_free, also after a failure. */
int report_selection_parse(struct report_selection *sel, int *help,
                           const struct report_cli *cli, int argc, char **argv);
void report_selection_free(struct report_selection *sel);

/* Opens sel's database read-only (*db_path: its path) and resolves the selection to
 * experiment ids (every experiment when no argument was given; see report_find).
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
/* Sets one cell from a printf format, invalid UTF-8 repaired (engine/utf8.h), so that
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

/* Loads the params of each experiment in ids (engine/experiment.h's flattening of its
 * stored resolved config), out[i] for ids[i]. DR_OK, DR_ERR_DB when an id is not there,
 * DR_ERR_CONFIG for a stored text that does not parse, DR_ERR_NOMEM; *out NULL after a
 * failure. Free with report_params_free(out, n). */
int report_params_load(struct param_list **out, struct results *db, const int64_t *ids,
                       int n);
void report_params_free(struct param_list *p, int n);

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

#endif

/* `dawnrun experiments`, `dawnrun runs EXPERIMENT` and `dawnrun show RUN`: listings of a
 * results database, read-only, each taking the experiment selection (ids, names, hash
 * prefixes, name globs, --where key=value). `show` prints a run's epoch table with the
 * same printer as `dawnrun train`; `experiments` shows the keys that differ among the
 * experiments it lists. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "base/status.h"
#include "output.h"
#include "runner/report/report_internal.h"

/* "2024-05-01 12:00:03" (UTC), or "-" for an unknown time. */
static void fmt_time(char *buf, size_t size, double unix_seconds)
{
    struct tm tm;
    time_t t = (time_t)unix_seconds;
    if (isnan(unix_seconds) || !gmtime_r(&t, &tm) || !strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm))
        snprintf(buf, size, "-");
}

/* What a listing reads from its command line. */
struct listing_args {
    struct report_selection sel;   /* --db and --where (its other fields unused) */
};

static const struct cli_flag listing_flags[] = {
    REPORT_FLAG_DB(struct listing_args, sel),
    REPORT_FLAG_WHERE(struct listing_args, sel),
};
#define LISTING_N_FLAGS ((int)(sizeof listing_flags / sizeof listing_flags[0]))

/* Parses cmd's flags (--db, --where, into wheres: room for argc entries, *n_wheres of
 * them) and up to `max_args` positional arguments (into args, *n_args of them). Returns
 * DR_OK, or DR_ERR_USAGE with a message (usage line printed). A --help prints the usage
 * and sets *help. */
static int parse_listing(const struct cli_command *cmd, int argc, char **argv,
                         const char **db_path, const char **args, int *n_args, int max_args,
                         const char **wheres, int *n_wheres, int *help)
{
    struct listing_args a;
    int n = 0;
    memset(&a, 0, sizeof a);
    a.sel.wheres = wheres;
    a.sel.cap = argc;
    *help = 0;
    *n_args = *n_wheres = 0;
    switch (cli_parse(cmd, &a, argc, argv, &n)) {
    case CLI_PARSED: break;
    case CLI_HELP: *help = 1; return DR_OK;
    default: return DR_ERR_USAGE;
    }
    if (n > max_args) {
        cli_usage_error(cmd, "unexpected argument '%s'", argv[1 + max_args]);
        return DR_ERR_USAGE;
    }
    for (int i = 0; i < n; i++) args[i] = argv[1 + i];
    *n_args = n;
    *n_wheres = a.sel.n_wheres;
    *db_path = report_db_path(a.sel.db_flag);
    return DR_OK;
}

/* ---- experiments ----------------------------------------------------------------------- */

const struct cli_command cli_experiments = {
    .name = "experiments",
    .args = "[EXPERIMENT ...]",
    .summary = "list the experiments of a results database, with the keys that differ",
    .flags = listing_flags,
    .n_flags = LISTING_N_FLAGS,
    .notes = "EXPERIMENT: an id, a name, a config-hash prefix or a name glob such as\n"
             "'r9-tiny:*'; none: every experiment. The keys that differ among those listed\n"
             "are shown as columns.\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_experiments,
};

/* Appends to the listing g (columns first.., rows 1..n for ids) one column per key that
 * differs among the experiments, with each one's value. */
static int grid_add_differing(struct report_grid *g, struct results *db, const int64_t *ids,
                              int n, int first)
{
    int rc = DR_OK, n_keys = 0;
    struct param_list *lists = NULL;
    char **keys = NULL;
    struct report_grid wide = {0};
    if (n < 2) return DR_OK;
    TRY(report_params_load_shown(&lists, db, ids, n));
    TRY(report_params_differing(&keys, &n_keys, lists, n));
    if (n_keys == 0) goto cleanup;
    TRY(report_grid_init(&wide, g->rows, first + n_keys));
    for (int r = 0; r < g->rows; r++)
        for (int c = 0; c < first; c++) {
            wide.cells[r * wide.cols + c] = g->cells[r * g->cols + c];
            g->cells[r * g->cols + c] = NULL;
        }
    for (int k = 0; k < n_keys; k++) {
        TRY(report_grid_set(&wide, 0, first + k, "%s", keys[k]));
        for (int i = 0; i < n; i++) {
            const struct param *v = param_list_find(&lists[i], keys[k]);
            TRY(report_grid_set(&wide, i + 1, first + k, "%s", v ? v->value : "(none)"));
        }
    }
    report_grid_free(g);
    *g = wide;
    memset(&wide, 0, sizeof wide);
cleanup:
    report_grid_free(&wide);
    report_keys_free(keys, n_keys);
    report_params_free(lists, n);
    return rc;
}

int cmd_experiments(int argc, char **argv)
{
    int rc = DR_OK, help = 0, n_args = 0, n_wheres = 0, n = 0;
    const char *path = NULL, **args = NULL, **wheres = NULL;
    struct results *db = NULL;
    struct results_experiment x = {0};
    struct results_run *runs = NULL;
    int n_runs = 0;
    int64_t *ids = NULL;
    struct report_grid g = {0};
    char created[32];
    args = calloc((size_t)argc + 1, sizeof *args);
    wheres = calloc((size_t)argc + 1, sizeof *wheres);
    CHECK_ALLOC(args && wheres ? args : NULL, "the arguments");
    TRY(parse_listing(&cli_experiments, argc, argv, &path, args, &n_args, argc, wheres, &n_wheres,
                      &help));
    if (help) goto cleanup;
    TRY(report_open_db(&db, path));
    TRY(report_select(db, &ids, &n, args, n_args, wheres, n_wheres, "experiments"));
    if (n == 0) {
        printf("%s: no experiments yet\n", path);
        goto cleanup;
    }
    TRY(report_grid_init(&g, n + 1, 6));
    TRY(report_grid_set(&g, 0, 0, "id"));
    TRY(report_grid_set(&g, 0, 1, "name"));
    TRY(report_grid_set(&g, 0, 2, "hash"));
    TRY(report_grid_set(&g, 0, 3, "engine"));
    TRY(report_grid_set(&g, 0, 4, "runs done/total"));
    TRY(report_grid_set(&g, 0, 5, "created (UTC)"));
    for (int i = 0; i < n; i++) {
        int done = 0, found = 0;
        TRY(results_experiment_get(db, &x, &found, ids[i]));
        if (!found) FAIL(DR_ERR_DB, "%s: experiment %lld vanished", path, (long long)ids[i]);
        TRY(results_runs_list(db, &runs, &n_runs, x.id));
        for (int k = 0; k < n_runs; k++) done += runs[k].status == RUN_DONE;
        fmt_time(created, sizeof created, x.created_at);
        TRY(report_grid_set(&g, i + 1, 0, "%lld", (long long)x.id));
        TRY(report_grid_set(&g, i + 1, 1, "%s", x.name));
        TRY(report_grid_set(&g, i + 1, 2, "%.12s", x.config_hash));
        TRY(report_grid_set(&g, i + 1, 3, "%s", x.engine));
        TRY(report_grid_set(&g, i + 1, 4, "%d/%d", done, n_runs));
        TRY(report_grid_set(&g, i + 1, 5, "%s", created));
        results_runs_free(runs, n_runs);
        runs = NULL;
        n_runs = 0;
        results_experiment_clear(&x);
    }
    TRY(grid_add_differing(&g, db, ids, n, 6));
    report_grid_print(stdout, &g, 1);
cleanup:
    report_grid_free(&g);
    results_runs_free(runs, n_runs);
    results_experiment_clear(&x);
    free(ids);
    free(args);
    free(wheres);
    results_close(db);
    return cli_exit_code(rc);
}

/* ---- runs ------------------------------------------------------------------------------ */

const struct cli_command cli_runs = {
    .name = "runs",
    .args = "EXPERIMENT|CONFIG ...",
    .summary = "list the runs of experiments",
    .flags = listing_flags,
    .n_flags = LISTING_N_FLAGS,
    .notes = "EXPERIMENT: an id, a name, a config-hash prefix or a name glob such as\n"
             "'r9-tiny:*'; with --where alone: every experiment that matches.\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_runs,
};

/* The runs of one experiment as a table, then the error text of those that have one. */
static int print_runs(struct results *db, const struct results_experiment *x)
{
    int rc = DR_OK;
    int n = 0;
    struct results_run *runs = NULL;
    struct report_grid g = {0};
    static const char *const header[] = {"run", "seed", "status", "attempts", "stalls", "final acc",
                                         "train time", "started (UTC)", "ended (UTC)", "host"};
    const int cols = (int)(sizeof header / sizeof header[0]);
    char acc[32], secs[32], started[32], ended[32];
    TRY(results_runs_list(db, &runs, &n, x->id));
    output_text(stdout, "experiment #%lld %s (%.12s, %s): %d run%s\n", (long long)x->id, x->name,
           x->config_hash, x->engine, n, n == 1 ? "" : "s");
    if (n == 0) goto cleanup;
    TRY(report_grid_init(&g, n + 1, cols));
    for (int c = 0; c < cols; c++) TRY(report_grid_set(&g, 0, c, "%s", header[c]));
    for (int i = 0; i < n; i++) {
        const struct results_run *r = &runs[i];
        report_fmt_pct(acc, sizeof acc, r->final_test_acc);
        report_fmt_secs(secs, sizeof secs, r->train_time);
        fmt_time(started, sizeof started, r->started_at);
        fmt_time(ended, sizeof ended, r->ended_at);
        TRY(report_grid_set(&g, i + 1, 0, "%lld", (long long)r->id));
        TRY(report_grid_set(&g, i + 1, 1, "%llu", (unsigned long long)r->seed));
        TRY(report_grid_set(&g, i + 1, 2, "%s", results_status_name(r->status)));
        TRY(report_grid_set(&g, i + 1, 3, "%d", r->attempt));
        TRY(report_grid_set(&g, i + 1, 4, "%d/%d", r->stalls, r->max_attempts));
        TRY(report_grid_set(&g, i + 1, 5, "%s", acc));
        TRY(report_grid_set(&g, i + 1, 6, "%s", secs));
        TRY(report_grid_set(&g, i + 1, 7, "%s", started));
        TRY(report_grid_set(&g, i + 1, 8, "%s", ended));
        TRY(report_grid_set(&g, i + 1, 9, "%s", r->host ? r->host : "-"));
    }
    report_grid_print(stdout, &g, 1);
    for (int i = 0; i < n; i++)
        if (runs[i].error)
            output_text(stdout, "run %lld (seed %llu, %s): %s\n", (long long)runs[i].id,
                   (unsigned long long)runs[i].seed, results_status_name(runs[i].status),
                   runs[i].error);
cleanup:
    report_grid_free(&g);
    results_runs_free(runs, n);
    return rc;
}

int cmd_runs(int argc, char **argv)
{
    int rc = DR_OK, help = 0, n_args = 0, n_wheres = 0, n_ids = 0;
    const char *path = NULL, **args = NULL, **wheres = NULL;
    struct results *db = NULL;
    struct results_experiment x = {0};
    int64_t *ids = NULL;
    args = calloc((size_t)argc + 1, sizeof *args);
    wheres = calloc((size_t)argc + 1, sizeof *wheres);
    CHECK_ALLOC(args && wheres ? args : NULL, "the arguments");
    TRY(parse_listing(&cli_runs, argc, argv, &path, args, &n_args, argc, wheres, &n_wheres,
                      &help));
    if (help) goto cleanup;
    if (n_args == 0 && n_wheres == 0) {
        cli_usage_error(&cli_runs, "EXPERIMENT or --where is missing");
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    TRY(report_open_db(&db, path));
    if (n_args > 0)
        TRY(report_find(db, &ids, &n_ids, NULL, args, n_args, NULL, 0, NULL, 0));
    else
        TRY(report_select(db, &ids, &n_ids, NULL, 0, NULL, 0, "runs"));
    TRY(report_filter_where(db, ids, &n_ids, wheres, n_wheres, "runs"));
    for (int i = 0; i < n_ids; i++) {
        int found = 0;
        if (i > 0) putchar('\n');
        TRY(results_experiment_get(db, &x, &found, ids[i]));
        if (found) TRY(print_runs(db, &x));
        results_experiment_clear(&x);
    }
cleanup:
    results_experiment_clear(&x);
    free(ids);
    free(args);
    free(wheres);
    results_close(db);
    return cli_exit_code(rc);
}

/* ---- show ------------------------------------------------------------------------------ */

const struct cli_command cli_show = {
    .name = "show",
    .args = "RUN | EXPERIMENT ...",
    .summary = "one run's epoch table (RUN: a run id from `dawnrun runs`), or every run's",
    .flags = listing_flags,
    .n_flags = LISTING_N_FLAGS,
    .notes = "With EXPERIMENT arguments or --where: every run of the experiments selected\n"
             "(a number is a run id here, so name experiments by name, config-hash prefix\n"
             "or name glob).\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_show,
};

/* The run's header lines: experiment, seed and engine as `dawnrun train` prints them,
 * then the run's state. */
static void show_header(const struct results_experiment *x, const struct results_run *r)
{
    char started[32], ended[32];
    fmt_time(started, sizeof started, r->started_at);
    fmt_time(ended, sizeof ended, r->ended_at);
    output_text(stdout, "experiment %s  seed %llu  engine %s (%s)\n", x->name, (unsigned long long)r->seed,
           x->engine, r->device ? r->device : x->device ? x->device : "-");
    printf("run %lld of experiment #%lld (%.12s): %s, attempt %d, %d stalls in a row (fails at %d)",
           (long long)r->id, (long long)x->id, x->config_hash, results_status_name(r->status),
           r->attempt, r->stalls, r->max_attempts);
    if (r->host) output_text(stdout, ", host %s pid %d", r->host, r->pid);
    printf("; started %s, ended %s (UTC)\n", started, ended);
}

/* The lines after the table: final numbers, the target, the error. */
static void show_footer(const struct results_experiment *x, const struct results_run *r,
                        int n_epochs)
{
    char target[32];
    if (!isnan(r->final_test_acc))
        printf("final test acc %.4f after %d epochs; train time %.2f s, total %.2f s\n",
               r->final_test_acc, n_epochs, r->train_time, r->total_time);
    report_fmt_target(target, sizeof target, x->target_accuracy);
    if (!isnan(x->target_accuracy) && r->target_epoch >= 0)
        printf("target %s reached at epoch %d after %.2f s of training\n", target,
               r->target_epoch, r->target_time);
    else if (!isnan(x->target_accuracy) && r->status == RUN_DONE)
        printf("target %s not reached\n", target);
    if (r->error) output_text(stdout, "%s: %s\n", results_status_name(r->status), r->error);
}

/* Prints run `id` of db: header, epoch table, footer. No such run: DR_ERR_USAGE. */
static int show_run(struct results *db, const char *path, long long id)
{
    int rc = DR_OK, found = 0, n = 0;
    struct results_run r = {0};
    struct results_experiment x = {0};
    struct results_epoch *eps = NULL;
    TRY(results_run_get(db, &r, &found, id));
    if (!found) {
        dr_eprintf("dawnrun show: no run %lld in %s\n", id, path);
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    TRY(results_experiment_get(db, &x, &found, r.experiment_id));
    if (!found) FAIL(DR_ERR_DB, "%s: run %lld has no experiment", path, id);
    TRY(results_epochs_list(db, &eps, &n, r.id));
    show_header(&x, &r);
    table_print_header(stdout);
    for (int i = 0; i < n; i++) {
        const struct results_epoch *e = &eps[i];
        struct epoch_record row = {
            .epoch = e->epoch, .lr = e->lr, .train_loss = e->train_loss,
            .train_acc = e->train_acc, .test_loss = e->test_loss, .test_acc = e->test_acc,
            .train_time = e->train_time, .test_time = e->test_time, .total_time = e->total_time,
        };
        table_print_row(stdout, &row);
    }
    show_footer(&x, &r, n);
cleanup:
    free(eps);
    results_run_clear(&r);
    results_experiment_clear(&x);
    return rc;
}

/* Shows every run of the experiments args and wheres select, a blank line between. */
static int show_selected(struct results *db, const char *path, const char *const *args,
                         int n_args, const char *const *wheres, int n_wheres)
{
    int rc = DR_OK, n_ids = 0, n_runs = 0, shown = 0;
    int64_t *ids = NULL;
    struct results_run *runs = NULL;
    TRY(report_select(db, &ids, &n_ids, args, n_args, wheres, n_wheres, "show"));
    for (int i = 0; i < n_ids; i++) {
        TRY(results_runs_list(db, &runs, &n_runs, ids[i]));
        for (int k = 0; k < n_runs; k++) {
            if (shown++) putchar('\n');
            TRY(show_run(db, path, (long long)runs[k].id));
        }
        results_runs_free(runs, n_runs);
        runs = NULL;
        n_runs = 0;
    }
    if (shown == 0) printf("%s: the selected experiments have no runs\n", path);
cleanup:
    results_runs_free(runs, n_runs);
    free(ids);
    return rc;
}

/* 1 when s is all decimal digits (a run id as `show` reads it). */
static int all_digits(const char *s)
{
    if (!*s) return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9') return 0;
    return 1;
}

int cmd_show(int argc, char **argv)
{
    int rc = DR_OK, help = 0, n_args = 0, n_wheres = 0;
    const char *path = NULL, **args = NULL, **wheres = NULL;
    struct results *db = NULL;
    char *end = NULL;
    args = calloc((size_t)argc + 1, sizeof *args);
    wheres = calloc((size_t)argc + 1, sizeof *wheres);
    CHECK_ALLOC(args && wheres ? args : NULL, "the arguments");
    TRY(parse_listing(&cli_show, argc, argv, &path, args, &n_args, argc, wheres, &n_wheres,
                      &help));
    if (help) goto cleanup;
    if (n_args == 0 && n_wheres == 0) {
        cli_usage_error(&cli_show, "RUN, EXPERIMENT or --where is missing");
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    if (n_args == 1 && n_wheres == 0 && (all_digits(args[0]) || args[0][0] == '-')) {
        errno = 0;
        long long id = strtoll(args[0], &end, 10);
        if (errno || end == args[0] || *end || id < 1) {
            dr_eprintf("dawnrun show: RUN must be a run id (a positive integer, see `dawnrun "
                       "runs EXPERIMENT`), got '%s'\n", args[0]);
            rc = DR_ERR_USAGE;
            goto cleanup;
        }
        TRY(report_open_db(&db, path));
        TRY(show_run(db, path, id));
        goto cleanup;
    }
    for (int i = 0; i < n_args; i++)
        if (all_digits(args[i])) {
            dr_eprintf("dawnrun show: '%s': with several arguments or --where, show takes "
                       "experiments by name, config-hash prefix or name glob (a number is a "
                       "run id: show one at a time)\n", args[i]);
            rc = DR_ERR_USAGE;
            goto cleanup;
        }
    TRY(report_open_db(&db, path));
    rc = show_selected(db, path, args, n_args, wheres, n_wheres);
    if (rc == DR_ERR_USAGE && n_args == 1 && n_wheres == 0)
        dr_eprintf("dawnrun show: RUN must be a run id (a positive integer, see `dawnrun "
                   "runs EXPERIMENT`) or an experiment, got '%s'\n", args[0]);
cleanup:
    free(args);
    free(wheres);
    results_close(db);
    return cli_exit_code(rc);
}

/* `dawnrun experiments`, `dawnrun runs EXPERIMENT` and `dawnrun show RUN`: listings of a
 * results database, read-only. `show` prints a run's epoch table with the same printer
 * as `dawnrun train`. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"
#include "base/status.h"
#include "output.h"
#include "report_internal.h"

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
    const char *db;          /* --db; NULL: report_db_path's default */
};

static const struct cli_flag listing_flags[] = {
    {.name = "db", .kind = CLI_STRING, .offset = offsetof(struct listing_args, db),
     .meta = "PATH",
     .help = "the results database (default: $DAWNRUN_DB, or " REPORT_DEFAULT_DB ")",
     .hint = CLI_HINT_FILE},
};
#define LISTING_N_FLAGS ((int)(sizeof listing_flags / sizeof listing_flags[0]))

/* Parses cmd's flags (--db) and exactly `n_wanted` positional arguments (into args).
 * Returns DR_OK, or DR_ERR_USAGE with a message (usage line printed). A --help prints
 * the usage and sets *help. */
static int parse_listing(const struct cli_command *cmd, int argc, char **argv,
                         const char **db_path, const char **args, int n_wanted, int *help)
{
    struct listing_args a = {NULL};
    int n_args = 0;
    *help = 0;
    switch (cli_parse(cmd, &a, argc, argv, &n_args)) {
    case CLI_PARSED: break;
    case CLI_HELP: *help = 1; return DR_OK;
    default: return DR_ERR_USAGE;
    }
    if (n_args > n_wanted) {
        cli_usage_error(cmd, "unexpected argument '%s'", argv[1 + n_wanted]);
        return DR_ERR_USAGE;
    }
    if (n_args < n_wanted) {
        cli_usage_error(cmd, "%s is missing", cmd->args);
        return DR_ERR_USAGE;
    }
    for (int i = 0; i < n_args; i++) args[i] = argv[1 + i];
    *db_path = report_db_path(a.db);
    return DR_OK;
}

/* ---- experiments ----------------------------------------------------------------------- */

const struct cli_command cli_experiments = {
    .name = "experiments",
    .args = "",
    .summary = "list the experiments of a results database",
    .flags = listing_flags,
    .n_flags = LISTING_N_FLAGS,
    .run = cmd_experiments,
};

int cmd_experiments(int argc, char **argv)
{
    int rc = DR_OK, help = 0, n = 0;
    const char *path = NULL;
    struct results *db = NULL;
    struct results_experiment *list = NULL;
    struct results_run *runs = NULL;
    int n_runs = 0;
    struct report_grid g = {0};
    char created[32];
    TRY(parse_listing(&cli_experiments, argc, argv, &path, NULL, 0, &help));
    if (help) goto cleanup;
    TRY(report_open_db(&db, path));
    TRY(results_experiments_list(db, &list, &n));
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
        int done = 0;
        TRY(results_runs_list(db, &runs, &n_runs, list[i].id));
        for (int k = 0; k < n_runs; k++) done += runs[k].status == RUN_DONE;
        fmt_time(created, sizeof created, list[i].created_at);
        TRY(report_grid_set(&g, i + 1, 0, "%lld", (long long)list[i].id));
        TRY(report_grid_set(&g, i + 1, 1, "%s", list[i].name));
        TRY(report_grid_set(&g, i + 1, 2, "%.12s", list[i].config_hash));
        TRY(report_grid_set(&g, i + 1, 3, "%s", list[i].engine));
        TRY(report_grid_set(&g, i + 1, 4, "%d/%d", done, n_runs));
        TRY(report_grid_set(&g, i + 1, 5, "%s", created));
        results_runs_free(runs, n_runs);
        runs = NULL;
        n_runs = 0;
    }
    report_grid_print(stdout, &g, 1);
cleanup:
    report_grid_free(&g);
    results_runs_free(runs, n_runs);
    results_experiments_free(list, n);
    results_close(db);
    return cli_exit_code(rc);
}

/* ---- runs ------------------------------------------------------------------------------ */

const struct cli_command cli_runs = {
    .name = "runs",
    .args = "EXPERIMENT|CONFIG",
    .summary = "list the runs of an experiment",
    .flags = listing_flags,
    .n_flags = LISTING_N_FLAGS,
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
    int rc = DR_OK, help = 0, n_ids = 0;
    const char *path = NULL, *args[1];
    struct results *db = NULL;
    struct results_experiment x = {0};
    int64_t *ids = NULL;
    TRY(parse_listing(&cli_runs, argc, argv, &path, args, 1, &help));
    if (help) goto cleanup;
    TRY(report_open_db(&db, path));
    TRY(report_find(db, &ids, &n_ids, NULL, args, 1, NULL, 0, NULL, 0));
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
    results_close(db);
    return cli_exit_code(rc);
}

/* ---- show ------------------------------------------------------------------------------ */

const struct cli_command cli_show = {
    .name = "show",
    .args = "RUN",
    .summary = "one run's epoch table (RUN: a run id from `dawnrun runs`)",
    .flags = listing_flags,
    .n_flags = LISTING_N_FLAGS,
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

int cmd_show(int argc, char **argv)
{
    int rc = DR_OK, help = 0, found = 0, n = 0;
    const char *path = NULL, *args[1];
    struct results *db = NULL;
    struct results_run r = {0};
    struct results_experiment x = {0};
    struct results_epoch *eps = NULL;
    char *end = NULL;
    TRY(parse_listing(&cli_show, argc, argv, &path, args, 1, &help));
    if (help) goto cleanup;
    errno = 0;
    long long id = strtoll(args[0], &end, 10);
    if (errno || end == args[0] || *end || id < 1) {
        dr_eprintf("dawnrun show: RUN must be a run id (a positive integer, see `dawnrun "
                   "runs EXPERIMENT`), got '%s'\n", args[0]);
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    TRY(report_open_db(&db, path));
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
    results_close(db);
    return cli_exit_code(rc);
}

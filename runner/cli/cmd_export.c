/* `dawnrun export [EXPERIMENT|CONFIG ...] --format csv|json`: every run and every epoch
 * of experiments in a results database, for other programs, read-only. JSON is one
 * nested document (experiments -> runs -> epochs, every column); CSV is one flat table:
 * the epochs with their run's seed and status (--table epochs, the default) or the runs
 * with every run column (--table runs). Both carry the config keys that differ among the
 * exported experiments (trailing CSV columns named by key; in JSON a "differing" object,
 * beside the experiment's full "params"). Unknown values: empty in CSV, null in JSON. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "engine/core/experiment.h"
#include "output.h"
#include "runner/report/report_internal.h"

enum export_format { EXPORT_CSV, EXPORT_JSON };
enum export_table { TABLE_EPOCHS, TABLE_RUNS };

/* ---- the params of the exported experiments -------------------------------------------- */

/* Every exported experiment's params and the keys that differ among them. */
struct export_params {
    struct param_list *lists;   /* n, by position in the export */
    int n;
    char **keys;
    int n_keys;
};

static int export_params_load(struct export_params *p, struct results *db, const int64_t *ids,
                              int n)
{
    int rc = DR_OK;
    memset(p, 0, sizeof *p);
    TRY(report_params_load_shown(&p->lists, db, ids, n));
    p->n = n;
    TRY(report_params_differing(&p->keys, &p->n_keys, p->lists, n));
cleanup:
    return rc;
}

static void export_params_free(struct export_params *p)
{
    report_params_free(p->lists, p->n);
    report_keys_free(p->keys, p->n_keys);
    memset(p, 0, sizeof *p);
}

/* The CSV header's trailing key columns (i < 0) or experiment i's values, each ending a
 * record whose fixed fields were written with a trailing comma; then the newline. */
static void csv_params(FILE *f, const struct export_params *p, int i)
{
    for (int k = 0; k < p->n_keys; k++) {
        const struct param *v = i < 0 ? NULL : param_list_find(&p->lists[i], p->keys[k]);
        output_csv_text(f, i < 0 ? p->keys[k] : v ? v->value : "(none)", k == p->n_keys - 1);
    }
}

/* ,"differing": {...} and ,"params": {...} of experiment i. */
static void json_params(FILE *f, const struct export_params *p, int i)
{
    fputs(",\n      \"differing\": {", f);
    for (int k = 0; k < p->n_keys; k++) {
        fputs(k ? ", " : "", f);
        output_json_string(f, p->keys[k]);
        fputs(": ", f);
        report_json_param(f, param_list_find(&p->lists[i], p->keys[k]));
    }
    fputs("},\n      \"params\": ", f);
    report_json_params(f, &p->lists[i], "      ");
}

/* ---- CSV ------------------------------------------------------------------------------- */

static const char *const epoch_columns[] = {
    "experiment_id", "experiment", "run_id", "seed", "status", "epoch", "attempt", "lr",
    "train_loss", "train_acc", "test_loss", "test_acc", "train_time", "test_time",
    "total_time", "recorded_at",
};
static const char *const run_columns[] = {
    "experiment_id", "experiment", "config_hash", "run_id", "seed", "status", "attempt",
    "max_attempts", "host", "pid", "device", "lease_expires", "heartbeat_at", "created_at",
    "started_at", "ended_at", "final_test_acc", "train_time", "total_time", "target_time",
    "target_epoch", "error", "epochs",
};
#define N_EPOCH_COLUMNS ((int)(sizeof epoch_columns / sizeof epoch_columns[0]))
#define N_RUN_COLUMNS ((int)(sizeof run_columns / sizeof run_columns[0]))

static void csv_header(FILE *f, const char *const *cols, int n, const struct export_params *p)
{
    for (int c = 0; c < n; c++) output_csv_text(f, cols[c], c == n - 1 && p->n_keys == 0);
    csv_params(f, p, -1);
}

/* An integer field; `known` = 0 writes an empty one. */
static void csv_int(FILE *f, long long v, int known, int last)
{
    if (known) fprintf(f, "%lld", v);
    fputc(last ? '\n' : ',', f);
}

static void csv_epoch_rows(FILE *f, const struct results_experiment *x,
                           const struct results_run *r, const struct results_epoch *eps, int n,
                           const struct export_params *p, int pi)
{
    for (int k = 0; k < n; k++) {
        const struct results_epoch *e = &eps[k];
        fprintf(f, "%lld,", (long long)x->id);
        output_csv_text(f, x->name, 0);
        fprintf(f, "%lld,%llu,", (long long)r->id, (unsigned long long)r->seed);
        output_csv_text(f, results_status_name(r->status), 0);
        fprintf(f, "%d,%d,", e->epoch, e->attempt);
        const double v[] = {e->lr, e->train_loss, e->train_acc, e->test_loss, e->test_acc,
                            e->train_time, e->test_time, e->total_time};
        for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) output_csv_num(f, v[i], 0);
        output_csv_num(f, e->recorded_at, p->n_keys == 0);
        csv_params(f, p, pi);
    }
}

static void csv_run_row(FILE *f, const struct results_experiment *x, const struct results_run *r,
                        int n_epochs, const struct export_params *p, int pi)
{
    fprintf(f, "%lld,", (long long)x->id);
    output_csv_text(f, x->name, 0);
    output_csv_text(f, x->config_hash, 0);
    fprintf(f, "%lld,%llu,", (long long)r->id, (unsigned long long)r->seed);
    output_csv_text(f, results_status_name(r->status), 0);
    fprintf(f, "%d,%d,", r->attempt, r->max_attempts);
    output_csv_text(f, r->host, 0);
    csv_int(f, r->pid, r->pid > 0, 0);
    output_csv_text(f, r->device, 0);
    const double v[] = {r->lease_expires, r->heartbeat_at, r->created_at, r->started_at,
                        r->ended_at, r->final_test_acc, r->train_time, r->total_time,
                        r->target_time};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) output_csv_num(f, v[i], 0);
    csv_int(f, r->target_epoch, r->target_epoch >= 0, 0);
    output_csv_text(f, r->error, 0);
    fprintf(f, "%d%c", n_epochs, p->n_keys == 0 ? '\n' : ',');
    csv_params(f, p, pi);
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* `SEP"KEY": "text"` (or null). */
static void json_str(FILE *f, const char *sep, const char *key, const char *s)
{
    fprintf(f, "%s\"%s\": ", sep, key);
    output_json_string(f, s);
}

/* `SEP"KEY": 123` (or null when not `known`). */
static void json_int(FILE *f, const char *sep, const char *key, long long v, int known)
{
    if (known) fprintf(f, "%s\"%s\": %lld", sep, key, v);
    else fprintf(f, "%s\"%s\": null", sep, key);
}

static void json_experiment_open(FILE *f, const struct results_experiment *x, int first)
{
    fprintf(f, "%s    {\n      \"id\": %lld", first ? "" : ",\n", (long long)x->id);
    json_str(f, ",\n      ", "name", x->name);
    json_str(f, ",\n      ", "config_hash", x->config_hash);
    json_str(f, ",\n      ", "dawnrun_version", x->dawnrun_version);
    json_str(f, ",\n      ", "git_rev", x->git_rev);
    json_str(f, ",\n      ", "engine", x->engine);
    json_str(f, ",\n      ", "device", x->device);
    json_str(f, ",\n      ", "platform", x->platform);
    json_str(f, ",\n      ", "host", x->host);
    output_json_num(f, ",\n      ", "target_accuracy", x->target_accuracy);
    output_json_num(f, ",\n      ", "created_at", x->created_at);
    json_str(f, ",\n      ", "notes", x->notes);
    json_str(f, ",\n      ", "config_text", x->config_text);
}

static void json_run(FILE *f, const struct results_run *r, const struct results_epoch *eps,
                     int n, int first)
{
    fprintf(f, "%s        {\"id\": %lld, \"seed\": %llu", first ? "\n" : ",\n",
            (long long)r->id, (unsigned long long)r->seed);
    json_str(f, ", ", "status", results_status_name(r->status));
    fprintf(f, ", \"attempt\": %d, \"max_attempts\": %d", r->attempt, r->max_attempts);
    json_str(f, ",\n         ", "host", r->host);
    json_int(f, ", ", "pid", r->pid, r->pid > 0);
    json_str(f, ", ", "device", r->device);
    output_json_num(f, ",\n         ", "lease_expires", r->lease_expires);
    output_json_num(f, ", ", "heartbeat_at", r->heartbeat_at);
    output_json_num(f, ",\n         ", "created_at", r->created_at);
    output_json_num(f, ", ", "started_at", r->started_at);
    output_json_num(f, ", ", "ended_at", r->ended_at);
    output_json_num(f, ",\n         ", "final_test_acc", r->final_test_acc);
    output_json_num(f, ", ", "train_time", r->train_time);
    output_json_num(f, ", ", "total_time", r->total_time);
    output_json_num(f, ",\n         ", "target_time", r->target_time);
    json_int(f, ", ", "target_epoch", r->target_epoch, r->target_epoch >= 0);
    json_str(f, ",\n         ", "error", r->error);
    fputs(",\n         \"epochs\": [", f);
    for (int k = 0; k < n; k++) {
        const struct results_epoch *e = &eps[k];
        fprintf(f, "%s\n           {\"epoch\": %d, \"attempt\": %d", k ? "," : "", e->epoch,
                e->attempt);
        output_json_num(f, ", ", "lr", e->lr);
        output_json_num(f, ", ", "train_loss", e->train_loss);
        output_json_num(f, ", ", "train_acc", e->train_acc);
        output_json_num(f, ", ", "test_loss", e->test_loss);
        output_json_num(f, ", ", "test_acc", e->test_acc);
        output_json_num(f, ", ", "train_time", e->train_time);
        output_json_num(f, ", ", "test_time", e->test_time);
        output_json_num(f, ", ", "total_time", e->total_time);
        output_json_num(f, ", ", "recorded_at", e->recorded_at);
        fputc('}', f);
    }
    fputs(n ? "\n         ]}" : "]}", f);
}

/* ---- the export ------------------------------------------------------------------------ */

/* Writes experiment `id` (its runs and their epochs) in the chosen form. */
static int export_experiment(FILE *f, struct results *db, int64_t id, enum export_format fmt,
                             enum export_table table, const struct export_params *p, int pi)
{
    int first = pi == 0;
    int rc = DR_OK;
    int found = 0, n_runs = 0, n_eps = 0;
    struct results_experiment x = {0};
    struct results_run *runs = NULL;
    struct results_epoch *eps = NULL;
    TRY(results_experiment_get(db, &x, &found, id));
    if (!found) FAIL(DR_ERR_USAGE, "%s: no experiment %lld", results_path(db), (long long)id);
    TRY(results_runs_list(db, &runs, &n_runs, id));
    if (fmt == EXPORT_JSON) {
        json_experiment_open(f, &x, first);
        json_params(f, p, pi);
        fputs(",\n      \"runs\": [", f);
    }
    for (int r = 0; r < n_runs; r++) {
        TRY(results_epochs_list(db, &eps, &n_eps, runs[r].id));
        if (fmt == EXPORT_JSON) json_run(f, &runs[r], eps, n_eps, r == 0);
        else if (table == TABLE_RUNS) csv_run_row(f, &x, &runs[r], n_eps, p, pi);
        else csv_epoch_rows(f, &x, &runs[r], eps, n_eps, p, pi);
        free(eps);
        eps = NULL;
    }
    if (fmt == EXPORT_JSON) fputs(n_runs ? "\n      ]\n    }" : "]\n    }", f);
cleanup:
    free(eps);
    results_runs_free(runs, n_runs);
    results_experiment_clear(&x);
    return rc;
}

static int export_all(FILE *f, struct results *db, const char *db_path, const int64_t *ids,
                      int n, enum export_format fmt, enum export_table table)
{
    int rc = DR_OK;
    struct export_params p;
    TRY(export_params_load(&p, db, ids, n));
    if (fmt == EXPORT_JSON) {
        fputs("{\n  \"database\": ", f);
        output_json_string(f, db_path);
        fputs(",\n  \"exported_by\": \"dawnrun " DAWNRUN_VERSION "\",\n  \"experiments\": [", f);
        fputs(n ? "\n" : "", f);
    } else if (table == TABLE_RUNS) {
        csv_header(f, run_columns, N_RUN_COLUMNS, &p);
    } else {
        csv_header(f, epoch_columns, N_EPOCH_COLUMNS, &p);
    }
    for (int i = 0; i < n; i++) TRY(export_experiment(f, db, ids[i], fmt, table, &p, i));
    if (fmt == EXPORT_JSON) fputs(n ? "\n  ]\n}\n" : "]\n}\n", f);
cleanup:
    export_params_free(&p);
    return rc;
}

/* The export's own flags and what they set. */
/* What `dawnrun export` reads from its command line. */
struct export_opts {
    struct report_selection sel;
    const char *out_path;     /* -o/--output; NULL: stdout */
    const char *format;       /* --format: csv (the default) | json */
    const char *table;        /* --table: epochs (the default) | runs; NULL: not given */
};

static const struct cli_flag export_flags[] = {
    REPORT_FLAG_DB(struct export_opts, sel),
    REPORT_FLAG_SET(struct export_opts, sel),
    REPORT_FLAG_SWEEP(struct export_opts, sel),
    REPORT_FLAG_WHERE(struct export_opts, sel),
    {.name = "format", .kind = CLI_CHOICE, .offset = offsetof(struct export_opts, format),
     .meta = "FORMAT", .help = "csv (the default) or json", .choices = "csv|json"},
    {.name = "table", .kind = CLI_CHOICE, .offset = offsetof(struct export_opts, table),
     .meta = "TABLE", .help = "the CSV table: epochs (the default) or runs",
     .choices = "epochs|runs"},
    {.name = "output", .short_name = 'o', .kind = CLI_STRING,
     .offset = offsetof(struct export_opts, out_path), .meta = "FILE",
     .help = "write to FILE (default: stdout)", .hint = CLI_HINT_FILE},
};

const struct cli_command cli_export = {
    .name = "export",
    .args = "[EXPERIMENT|CONFIG ...]",
    .summary = "every run and epoch of experiments as CSV or JSON",
    .flags = export_flags,
    .n_flags = (int)(sizeof export_flags / sizeof export_flags[0]),
    .notes =
        "No EXPERIMENT: every experiment of the database. JSON nests experiments, runs\n"
        "and epochs; CSV is one table: the epochs (with their run's seed and status) or\n"
        "the runs.\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_export,
};

int cmd_export(int argc, char **argv)
{
    int rc = DR_OK, help = 0, n_ids = 0;
    const char *db_path;
    struct export_opts o = {.format = "csv"};
    struct report_selection *selp = &o.sel;
    struct results *db = NULL;
    int64_t *ids = NULL;
    struct output_file out = {0};
    TRY(report_selection_parse(selp, &help, &cli_export, &o, argc, argv));
    if (help) goto cleanup;
    enum export_format fmt = strcmp(o.format, "json") ? EXPORT_CSV : EXPORT_JSON;
    enum export_table table = o.table && !strcmp(o.table, "runs") ? TABLE_RUNS : TABLE_EPOCHS;
    if (o.table && fmt == EXPORT_JSON) {
        cli_usage_error(&cli_export, "--table chooses a CSV table; JSON holds both");
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    TRY(report_selection_resolve(&db, &db_path, &ids, &n_ids, selp, cli_export.name));
    TRY(output_file_open(&out, o.out_path));
    TRY(export_all(out.f, db, db_path, ids, n_ids, fmt, table));
    TRY(output_file_commit(&out));
cleanup:
    output_file_abort(&out);
    results_close(db);
    free(ids);
    report_selection_free(selp);
    return cli_exit_code(rc);
}

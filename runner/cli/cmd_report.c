/* `dawnrun report [EXPERIMENT|CONFIG ...]`: the batch report of experiments in a results
 * database, read-only. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "output.h"
#include "runner/report/report_internal.h"

/* What `dawnrun report` reads from its command line. */
struct report_args {
    struct report_selection sel;
    const char *format;      /* --format: table | csv | json | markdown | html */
    const char *group_by;    /* --group-by KEY: a row per value of a config key; NULL: none */
    const char *output;      /* -o/--output PATH; NULL: stdout */
};

static const struct cli_flag report_flags[] = {
    REPORT_FLAG_DB(struct report_args, sel),
    REPORT_FLAG_TARGET(struct report_args, sel),
    REPORT_FLAG_SET(struct report_args, sel),
    REPORT_FLAG_SWEEP(struct report_args, sel),
    REPORT_FLAG_WHERE(struct report_args, sel),
    {.name = "format", .kind = CLI_CHOICE, .offset = offsetof(struct report_args, format),
     .meta = "FORMAT", .help = "table (the default), csv, json, markdown or html",
     .choices = "table|csv|json|markdown|html"},
    {.name = "group-by", .kind = CLI_STRING,
     .offset = offsetof(struct report_args, group_by), .meta = "KEY",
     .help = "one row per value of this config key, over the selected experiments",
     .hint = CLI_HINT_KEY},
    {.name = "output", .short_name = 'o', .kind = CLI_STRING,
     .offset = offsetof(struct report_args, output), .meta = "PATH",
     .help = "write the report to PATH (default: stdout)", .hint = CLI_HINT_FILE},
};

const struct cli_command cli_report = {
    .name = "report",
    .args = "[EXPERIMENT|CONFIG ...]",
    .summary = "runs reaching the target, median, mean, CI; experiments side by side",
    .flags = report_flags,
    .n_flags = (int)(sizeof report_flags / sizeof report_flags[0]),
    .notes =
        "No EXPERIMENT: every experiment of the database. An EXPERIMENT is a name, an id\n"
        "or a config hash prefix; a CONFIG names the experiment it resolves to.\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_report,
};

int cmd_report(int argc, char **argv)
{
    int rc = DR_OK, help = 0, n_ids = 0;
    enum report_format fmt = REPORT_TABLE;
    struct report_args a = {.format = "table"};
    struct report_selection *selp = &a.sel;
    struct results *db = NULL;
    struct output_file out = {0};
    const char *db_path;
    int64_t *ids = NULL;
    TRY(report_selection_parse(selp, &help, &cli_report, &a, argc, argv));
    if (help) goto cleanup;
    if (a.group_by && !*a.group_by) {
        cli_usage_error(&cli_report, "--group-by needs a params key such as train.lr");
        TRY(DR_ERR_USAGE);
    }
    if (report_format_parse(&fmt, a.format) != 0) {
        cli_usage_error(&cli_report, "--format: expected table, csv, json, markdown or html, "
                        "got '%s'", a.format);
        TRY(DR_ERR_USAGE);
    }
    if (a.group_by && fmt == REPORT_HTML) {
        cli_usage_error(&cli_report, "--group-by is not available with --format html");
        TRY(DR_ERR_USAGE);
    }
    TRY(report_selection_resolve(&db, &db_path, &ids, &n_ids, selp, cli_report.name));
    TRY(output_file_open(&out, a.output));
    if (a.group_by)
        TRY(report_print_grouped(out.f, db, ids, n_ids, selp->target, fmt, a.group_by));
    else
        TRY(report_print(out.f, db, ids, n_ids, selp->target, fmt));
    TRY(output_file_commit(&out));
cleanup:
    output_file_abort(&out);
    results_close(db);
    free(ids);
    report_selection_free(selp);
    return cli_exit_code(rc);
}

/* `dawnrun report [EXPERIMENT|CONFIG ...]`: the batch report of experiments in a results
 * database, read-only. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "output.h"
#include "report_internal.h"

#define REPORT_USAGE                                                                       \
    "usage: dawnrun report [EXPERIMENT|CONFIG ...] [--set key=value]...\n"                  \
    "                      [--sweep key=v1,v2]... [--target 0.94]\n"                         \
    "                      [--format table|csv|json|markdown|html] [-o FILE] [--db PATH]\n" \
    "       (-o defaults to standard output; -o - is standard output too)\n"

/* The report's own flags. */
struct report_opts {
    enum report_format fmt;
    const char *out_path;    /* -o / --output; NULL or "-": stdout */
};

static int report_flag(void *ctx, const char *flag, const char *value)
{
    struct report_opts *o = ctx;
    if (strcmp(flag, "--format") != 0) {
        o->out_path = value;
        return DR_OK;
    }
    if (report_format_parse(&o->fmt, value) != 0) {
        dr_eprintf("dawnrun report: --format: expected table, csv, json, markdown or html, "
                   "got '%s'\n", value);
        return DR_ERR_USAGE;
    }
    return DR_OK;
}

int cmd_report(int argc, char **argv)
{
    static const char *const flags[] = {"--format", "-o", "--output", NULL};
    int rc = DR_OK, help = 0, n_ids = 0;
    struct report_opts opts = {REPORT_TABLE, NULL};
    const struct report_cli cli = {"report", REPORT_USAGE, 1, flags, report_flag, &opts};
    struct report_selection sel;
    struct results *db = NULL;
    struct output_file out = {0};
    const char *db_path;
    int64_t *ids = NULL;
    TRY(report_selection_parse(&sel, &help, &cli, argc, argv));
    if (help) goto cleanup;
    TRY(report_selection_resolve(&db, &db_path, &ids, &n_ids, &sel, cli.name));
    TRY(output_file_open(&out, opts.out_path));
    TRY(report_print(out.f, db, ids, n_ids, sel.target, opts.fmt));
    TRY(output_file_commit(&out));
cleanup:
    output_file_abort(&out);
    results_close(db);
    free(ids);
    report_selection_free(&sel);
    return cli_exit_code(rc);
}

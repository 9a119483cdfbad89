/* `dawnrun report [EXPERIMENT|CONFIG ...]`: the batch report of experiments in a results
 * database, read-only. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "report_internal.h"

#define REPORT_USAGE                                                                       \
    "usage: dawnrun report [EXPERIMENT|CONFIG ...] [--set key=value]...\n"                  \
    "                      [--sweep key=v1,v2 | --sweep last|ID]... [--where key=value]...\n" \
    "                      [--target 0.94] [--group-by KEY]\n"                                \
    "                      [--format table|csv|json|markdown] [--db PATH]\n"

/* The report's own flags. */
struct report_flags {
    enum report_format fmt;
    const char *group_by;     /* --group-by KEY; NULL: one column per experiment */
};

/* --format and --group-by. */
static int report_flag(void *ctx, const char *flag, const char *value)
{
    struct report_flags *rf = ctx;
    if (!strcmp(flag, "--group-by")) {
        if (!*value) {
            dr_eprintf("dawnrun report: --group-by needs a params key such as train.lr\n");
            return DR_ERR_USAGE;
        }
        rf->group_by = value;
        return DR_OK;
    }
    if (report_format_parse(&rf->fmt, value) != 0) {
        dr_eprintf("dawnrun report: --format: expected table, csv, json or markdown, "
                   "got '%s'\n", value);
        return DR_ERR_USAGE;
    }
    return DR_OK;
}

int cmd_report(int argc, char **argv)
{
    static const char *const flags[] = {"--format", "--group-by", NULL};
    int rc = DR_OK, help = 0, n_ids = 0;
    struct report_flags rf = {REPORT_TABLE, NULL};
    const struct report_cli cli = {"report", REPORT_USAGE, 1, flags, report_flag, &rf};
    struct report_selection sel;
    struct results *db = NULL;
    const char *db_path;
    int64_t *ids = NULL;
    TRY(report_selection_parse(&sel, &help, &cli, argc, argv));
    if (help) goto cleanup;
    TRY(report_selection_resolve(&db, &db_path, &ids, &n_ids, &sel, cli.name));
    if (rf.group_by) TRY(report_print_grouped(stdout, db, ids, n_ids, sel.target, rf.fmt, rf.group_by));
    else TRY(report_print(stdout, db, ids, n_ids, sel.target, rf.fmt));
cleanup:
    results_close(db);
    free(ids);
    report_selection_free(&sel);
    return cli_exit_code(rc);
}

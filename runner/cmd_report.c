/* `dawnrun report [EXPERIMENT|CONFIG ...]`: the batch report of experiments in a results
 * database, read-only. */
#include <stdlib.h>

#include "cli.h"
#include "base/status.h"
#include "report_internal.h"

#define REPORT_USAGE                                                                       \
    "usage: dawnrun report [EXPERIMENT|CONFIG ...] [--set key=value]...\n"                  \
    "                      [--sweep key=v1,v2]... [--where key=value]... [--target 0.94]\n"  \
    "                      [--format table|csv|json|markdown] [--db PATH]\n"

/* --format, the report's own flag. */
static int report_flag(void *ctx, const char *flag, const char *value)
{
    (void)flag;
    if (report_format_parse(ctx, value) != 0) {
        dr_eprintf("dawnrun report: --format: expected table, csv, json or markdown, "
                   "got '%s'\n", value);
        return DR_ERR_USAGE;
    }
    return DR_OK;
}

int cmd_report(int argc, char **argv)
{
    static const char *const flags[] = {"--format", NULL};
    int rc = DR_OK, help = 0, n_ids = 0;
    enum report_format fmt = REPORT_TABLE;
    const struct report_cli cli = {"report", REPORT_USAGE, 1, flags, report_flag, &fmt};
    struct report_selection sel;
    struct results *db = NULL;
    const char *db_path;
    int64_t *ids = NULL;
    TRY(report_selection_parse(&sel, &help, &cli, argc, argv));
    if (help) goto cleanup;
    TRY(report_selection_resolve(&db, &db_path, &ids, &n_ids, &sel, cli.name));
    TRY(report_print(stdout, db, ids, n_ids, sel.target, fmt));
cleanup:
    results_close(db);
    free(ids);
    report_selection_free(&sel);
    return cli_exit_code(rc);
}

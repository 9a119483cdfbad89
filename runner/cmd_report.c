/* `dawnrun report [EXPERIMENT|CONFIG ...]`: the batch report of experiments in a results
 * database, read-only. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "engine/status.h"
#include "report_internal.h"

#define REPORT_USAGE                                                                       \
    "usage: dawnrun report [EXPERIMENT|CONFIG ...] [--set key=value]...\n"                  \
    "                      [--sweep key=v1,v2]... [--target 0.94]\n"                         \
    "                      [--format table|csv|json|markdown] [--db PATH]\n"

/* Parses --target: an accuracy in (0, 1]; -1 when bad (message printed). */
static double parse_target(const char *value)
{
    char *end = NULL;
    double v = value ? strtod(value, &end) : NAN;
    if (!value || end == value || *end || !(v > 0.0 && v <= 1.0)) {
        fprintf(stderr, "dawnrun report: --target: expected an accuracy in (0, 1], e.g. 0.94, "
                "got '%s'\n", value ? value : "");
        return -1.0;
    }
    return v;
}

int cmd_report(int argc, char **argv)
{
    int rc = DR_OK, missing = 0, n_ids = 0, n_configs = 0;
    int n_args = 0, n_sets = 0, n_sweeps = 0;
    const char *db_flag = NULL, *v;
    double target = NAN;
    enum report_format fmt = REPORT_TABLE;
    struct results *db = NULL;
    int64_t *ids = NULL;
    const char **args = calloc((size_t)argc + 1, sizeof *args);
    const char **sets = calloc((size_t)argc + 1, sizeof *sets);
    const char **sweeps = calloc((size_t)argc + 1, sizeof *sweeps);
    if (!args || !sets || !sweeps) {
        fprintf(stderr, "dawnrun report: out of memory\n");
        rc = DR_ERR_NOMEM;
        goto cleanup;
    }
    for (int i = 1; i < argc; i++) {
        missing = 0;
        if ((v = report_flag_value("--db", argc, argv, &i, &missing))) {
            db_flag = v;
        } else if ((v = report_flag_value("--format", argc, argv, &i, &missing))) {
            if (report_format_parse(&fmt, v) != 0) {
                fprintf(stderr, "dawnrun report: --format: expected table, csv, json or "
                        "markdown, got '%s'\n", v);
                rc = DR_ERR_USAGE;
                goto cleanup;
            }
        } else if ((v = report_flag_value("--target", argc, argv, &i, &missing))) {
            target = parse_target(v);
            if (target < 0) {
                rc = DR_ERR_USAGE;
                goto cleanup;
            }
        } else if ((v = report_flag_value("--set", argc, argv, &i, &missing))) {
            if (!strchr(v, '=')) {
                fprintf(stderr, "dawnrun report: --set needs key.path=value, got '%s'\n", v);
                rc = DR_ERR_USAGE;
                goto cleanup;
            }
            sets[n_sets++] = v;
        } else if ((v = report_flag_value("--sweep", argc, argv, &i, &missing))) {
            if (!strchr(v, '=')) {
                fprintf(stderr, "dawnrun report: --sweep needs key.path=value1,value2,..., "
                        "got '%s'\n", v);
                rc = DR_ERR_USAGE;
                goto cleanup;
            }
            sweeps[n_sweeps++] = v;
        } else if (missing) {
            fprintf(stderr, "dawnrun report: %s needs a value\n", argv[i]);
            rc = DR_ERR_USAGE;
            goto cleanup;
        } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            fputs(REPORT_USAGE, stdout);
            goto cleanup;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "dawnrun report: unknown flag '%s'\n" REPORT_USAGE, argv[i]);
            rc = DR_ERR_USAGE;
            goto cleanup;
        } else {
            args[n_args++] = argv[i];
        }
    }

    TRY(report_open_db(&db, report_db_path(db_flag)));
    if (n_args == 0) {
        struct results_experiment *all = NULL;
        int n_all = 0;
        TRY(results_experiments_list(db, &all, &n_all));
        ids = calloc((size_t)n_all + 1, sizeof *ids);
        for (int i = 0; ids && i < n_all; i++) ids[n_ids++] = all[i].id;
        results_experiments_free(all, n_all);
        if (!ids) FAIL(DR_ERR_NOMEM, "out of memory listing experiments");
    } else {
        TRY(report_find(db, &ids, &n_ids, &n_configs, args, n_args, sets, n_sets, sweeps,
                        n_sweeps));
    }
    if ((n_sets > 0 || n_sweeps > 0) && n_configs == 0) {
        fprintf(stderr, "dawnrun report: --set and --sweep apply to CONFIG arguments, and "
                "none was given\n");
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    TRY(report_print(stdout, db, ids, n_ids, target, fmt));
cleanup:
    results_close(db);
    free(ids);
    free(args);
    free(sets);
    free(sweeps);
    return cli_exit_code(rc);
}

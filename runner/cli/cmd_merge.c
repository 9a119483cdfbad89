/* `dawnrun merge OUT.db IN.db...`: folds results databases (e.g. one per Slurm array
 * task) into OUT, one input per transaction. Inputs are opened read-only and never
 * changed; an input that is not a readable dawnrun database is reported and skipped,
 * leaving OUT as it was, and the command then exits 1. */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "base/status.h"
#include "runner/report/report_internal.h"
#include "results/results.h"

const struct cli_command cli_merge = {
    .name = "merge",
    .args = "OUT.db IN.db...",
    .summary = "combine results databases (e.g. of a Slurm job array)",
    .notes =
        "Inputs are read-only; one that is not a dawnrun database is reported and\n"
        "skipped, OUT unchanged by it, and the command then exits 1.\n",
    .arg_hint = CLI_HINT_FILE,
    .run = cmd_merge,
};

/* Whether two paths name the same existing file. */
static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* Checks that `path` opens as a dawnrun results database, read-only. */
static int check_input(const char *path)
{
    struct results *in = NULL;
    int rc = results_open_readonly(&in, path);
    results_close(in);
    return rc;
}

int cmd_merge(int argc, char **argv)
{
    int rc = DR_OK, failed = 0, merged = 0;
    struct results *out = NULL;
    const char *out_path = NULL;
    struct results_merge_stats total = {0};
    int n_args = 0, parsed = cli_parse(&cli_merge, NULL, argc, argv, &n_args);
    if (parsed != CLI_PARSED) return parsed == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n_args < 2)
        return cli_usage_error(&cli_merge, "needs OUT.db and at least one IN.db");
    argc = 1 + n_args;
    out_path = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *in = argv[i];
        struct results_merge_stats s = {0};
        if (same_file(in, out_path)) {
            printf("%s: is %s itself; skipped\n", in, out_path);
            continue;
        }
        /* an unusable input must not even create OUT */
        if (check_input(in) != DR_OK) {
            dr_eprintf("dawnrun merge: %s: not merged; %s is unchanged by it\n", in,
                       out_path);
            failed++;
            continue;
        }
        if (!out) TRY(results_open(&out, out_path));
        if (results_merge(out, &s, in) != DR_OK) {
            dr_eprintf("dawnrun merge: %s: not merged; %s is unchanged by it\n", in,
                       out_path);
            failed++;
            continue;
        }
        printf("%s: %d experiment%s added; runs: %d added, %d replaced, %d kept; %d epochs "
               "copied\n", in, s.experiments_added, s.experiments_added == 1 ? "" : "s",
               s.runs_added, s.runs_replaced, s.runs_kept, s.epochs_copied);
        total.experiments_added += s.experiments_added;
        total.runs_added += s.runs_added;
        total.runs_replaced += s.runs_replaced;
        total.runs_kept += s.runs_kept;
        total.epochs_copied += s.epochs_copied;
        merged++;
    }
    if (merged > 1)
        printf("%s: %d inputs merged: %d experiment%s added; runs: %d added, %d replaced, %d "
               "kept; %d epochs copied\n", out_path, merged, total.experiments_added,
               total.experiments_added == 1 ? "" : "s", total.runs_added, total.runs_replaced,
               total.runs_kept, total.epochs_copied);
    if (out) TRY(report_params_backfill(out, NULL));   /* inputs from before params */
    if (out) TRY(results_check_integrity(out));
    if (failed) {
        dr_eprintf("dawnrun merge: %d of %d input%s not merged\n", failed, argc - 2,
                   argc - 2 == 1 ? "" : "s");
        rc = DR_ERR_DB;
    }
cleanup:
    results_close(out);
    return cli_exit_code(rc);
}

/* `dawnrun sweeps [--db PATH]`: the sweeps recorded in a results database, read-only: one
 * line per sweep with its id, time, members, runs done, axes and command line. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "cli.h"
#include "runner/report/report_internal.h"

/* What `dawnrun sweeps` reads from its command line. */
struct sweeps_args {
    const char *db;          /* --db; NULL: report_db_path's default */
};

static const struct cli_flag sweeps_flags[] = {
    {.name = "db", .kind = CLI_STRING, .offset = offsetof(struct sweeps_args, db),
     .meta = "PATH", .hint = CLI_HINT_FILE,
     .help = "the results database (default: $DAWNRUN_DB, or " REPORT_DEFAULT_DB ")"},
};

const struct cli_command cli_sweeps = {
    .name = "sweeps",
    .args = "",
    .summary = "the recorded sweeps: id, time, members, runs done, axes, command line",
    .flags = sweeps_flags,
    .n_flags = (int)(sizeof sweeps_flags / sizeof sweeps_flags[0]),
    .notes = "Select a sweep's members in report, plot and export with --sweep ID or\n"
             "--sweep last.\n",
    .run = cmd_sweeps,
};

/* Runs done and in all of the distinct experiments of s. */
static int count_runs(struct results *db, const struct results_sweep *s, int *done, int *total)
{
    int rc = DR_OK, n = 0;
    struct results_run *runs = NULL;
    *done = *total = 0;
    for (int m = 0; m < s->n_members; m++) {
        int seen = 0;
        for (int k = 0; k < m && !seen; k++) seen = s->members[k] == s->members[m];
        if (seen) continue;
        TRY(results_runs_list(db, &runs, &n, s->members[m]));
        for (int r = 0; r < n; r++) *done += runs[r].status == RUN_DONE;
        *total += n;
        results_runs_free(runs, n);
        runs = NULL;
        n = 0;
    }
cleanup:
    results_runs_free(runs, n);
    return rc;
}

/* "train.lr=0.2,0.4 augment.cutout=0,8" into a malloc'd *out. */
static int axes_text(char **out, const struct results_sweep *s)
{
    int rc = DR_OK;
    size_t len = 2;
    for (int a = 0; a < s->n_axes; a++) len += strlen(s->axes[a].key) + strlen(s->axes[a].vals) + 2;
    *out = malloc(len);
    CHECK_ALLOC(*out, "a sweep's axes");
    (*out)[0] = '\0';
    for (int a = 0; a < s->n_axes; a++) {
        if (a) strcat(*out, " ");
        strcat(*out, s->axes[a].key);
        strcat(*out, "=");
        strcat(*out, s->axes[a].vals);
    }
cleanup:
    return rc;
}

int cmd_sweeps(int argc, char **argv)
{
    int rc = DR_OK, n = 0, n_args = 0;
    const char *path;
    struct sweeps_args sa = {NULL};
    struct results *db = NULL;
    struct results_sweep *list = NULL;
    struct report_grid g = {0};
    char *axes = NULL;
    switch (cli_parse(&cli_sweeps, &sa, argc, argv, &n_args)) {
    case CLI_PARSED: break;
    case CLI_HELP: goto cleanup;
    default: rc = DR_ERR_USAGE; goto cleanup;
    }
    if (n_args > 0) {
        cli_usage_error(&cli_sweeps, "unexpected argument '%s'", argv[1]);
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    path = report_db_path(sa.db);
    TRY(report_open_db(&db, path));
    TRY(results_sweeps_list(db, &list, &n));
    if (n == 0) {
        printf("%s: no sweeps recorded yet\n", path);
        goto cleanup;
    }
    TRY(report_grid_init(&g, n + 1, 6));
    const char *head[] = {"id", "created (UTC)", "members", "runs done/total", "axes",
                          "command"};
    for (int k = 0; k < 6; k++) TRY(report_grid_set(&g, 0, k, "%s", head[k]));
    for (int i = 0; i < n; i++) {
        const struct results_sweep *s = &list[i];
        int done = 0, total = 0;
        char when[32];
        struct tm tm;
        time_t t = (time_t)s->created_at;
        if (isnan(s->created_at) || !gmtime_r(&t, &tm) ||
            !strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S", &tm))
            snprintf(when, sizeof when, "-");
        TRY(count_runs(db, s, &done, &total));
        free(axes);
        axes = NULL;
        TRY(axes_text(&axes, s));
        TRY(report_grid_set(&g, i + 1, 0, "%lld", (long long)s->id));
        TRY(report_grid_set(&g, i + 1, 1, "%s", when));
        TRY(report_grid_set(&g, i + 1, 2, "%d", s->n_members));
        TRY(report_grid_set(&g, i + 1, 3, "%d/%d", done, total));
        TRY(report_grid_set(&g, i + 1, 4, "%s", axes));
        TRY(report_grid_set(&g, i + 1, 5, "%s", s->command));
    }
    report_grid_print(stdout, &g, 1);
cleanup:
    free(axes);
    report_grid_free(&g);
    results_sweeps_free(list, n);
    results_close(db);
    return cli_exit_code(rc);
}

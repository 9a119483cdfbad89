/* `dawnrun plot [EXPERIMENT|CONFIG ...] -o curves.svg`: the training curves of
 * experiments in a results database (test accuracy, train loss and learning rate per
 * epoch, one line per seed) as an SVG file, read-only. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "output.h"
#include "plot_svg.h"
#include "report_internal.h"

#define PLOT_DEFAULT_OUT "curves.svg"

/* What the chart is drawn from: experiments, their runs and epochs, owned here. */
struct plot_data {
    int n;
    struct results_experiment *x;   /* n */
    struct plot_experiment *pe;     /* n, pointing into the rest */
    char **labels;                  /* n */
};

static void plot_data_free(struct plot_data *d)
{
    for (int i = 0; i < d->n; i++) {
        if (d->pe) {
            for (int r = 0; r < d->pe[i].n_runs; r++) free((void *)d->pe[i].runs[r].epochs);
            free((void *)d->pe[i].runs);
        }
        if (d->x) results_experiment_clear(&d->x[i]);
        if (d->labels) free(d->labels[i]);
    }
    free(d->x);
    free(d->pe);
    free(d->labels);
    memset(d, 0, sizeof *d);
}

/* The legend label of experiment i: its name, with "#id" when another plotted
 * experiment has the same name. */
static int make_label(struct plot_data *d, int i)
{
    int rc = DR_OK;
    const char *name = d->x[i].name ? d->x[i].name : "?";
    int twin = 0;
    for (int k = 0; k < d->n; k++)
        if (k != i && d->x[k].name && !strcmp(d->x[k].name, name)) twin = 1;
    size_t len = strlen(name) + 32;
    d->labels[i] = malloc(len);
    CHECK_ALLOC(d->labels[i], "plot label");
    if (twin) snprintf(d->labels[i], len, "%s #%lld", name, (long long)d->x[i].id);
    else snprintf(d->labels[i], len, "%s", name);
    d->pe[i].label = d->labels[i];
cleanup:
    return rc;
}

/* Reads experiment d->x[i]'s runs and their epochs into d->pe[i]. */
static int load_runs(struct results *db, struct plot_data *d, int i, double target)
{
    int rc = DR_OK;
    int n = 0;
    struct results_run *runs = NULL;
    struct plot_run *pr = NULL;
    TRY(results_runs_list(db, &runs, &n, d->x[i].id));
    pr = calloc((size_t)n + 1, sizeof *pr);
    CHECK_ALLOC(pr, "plot runs");
    d->pe[i].runs = pr;
    for (int r = 0; r < n; r++) {
        struct results_epoch *eps = NULL;
        int n_eps = 0;
        TRY(results_epochs_list(db, &eps, &n_eps, runs[r].id));
        pr[r].seed = runs[r].seed;
        pr[r].epochs = eps;
        pr[r].n_epochs = n_eps;
        d->pe[i].n_runs = r + 1;
    }
    d->pe[i].target = isnan(target) ? d->x[i].target_accuracy : target;
cleanup:
    results_runs_free(runs, n);
    return rc;
}

static int load(struct results *db, struct plot_data *d, const int64_t *ids, int n,
                double target)
{
    int rc = DR_OK;
    int found = 0;
    d->x = calloc((size_t)n + 1, sizeof *d->x);
    d->pe = calloc((size_t)n + 1, sizeof *d->pe);
    d->labels = calloc((size_t)n + 1, sizeof *d->labels);
    if (!d->x || !d->pe || !d->labels) FAIL(DR_ERR_NOMEM, "out of memory loading the plot");
    d->n = n;
    for (int i = 0; i < n; i++) {
        TRY(results_experiment_get(db, &d->x[i], &found, ids[i]));
        if (!found) FAIL(DR_ERR_USAGE, "%s: no experiment %lld", results_path(db),
                         (long long)ids[i]);
        TRY(load_runs(db, d, i, target));
    }
    for (int i = 0; i < n; i++) TRY(make_label(d, i));
cleanup:
    return rc;
}

/* "dawn-512 vs dawn-768 (results/dawnrun.db)", or "5 experiments (...)". */
static void make_title(char *buf, size_t size, const struct plot_data *d, const char *db_path)
{
    size_t len = 0;
    if (d->n == 0 || d->n > 3) {
        len = (size_t)snprintf(buf, size, "%d experiments", d->n);
    } else {
        buf[0] = '\0';
        for (int i = 0; i < d->n && len < size; i++)
            len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " vs " : "",
                                    d->labels[i]);
    }
    if (len < size) snprintf(buf + len, size - len, " (%s)", db_path);
}

/* What `dawnrun plot` reads from its command line. */
struct plot_args {
    struct report_selection sel;
    const char *output;      /* -o/--output: the SVG file, "-" for stdout */
    const char *x_axis;      /* --x: epoch (the default) | time */
    int every_seed;          /* --seeds: one line per seed */
};

static const struct cli_flag plot_flags[] = {
    REPORT_FLAG_DB(struct plot_args, sel),
    REPORT_FLAG_TARGET(struct plot_args, sel),
    REPORT_FLAG_SET(struct plot_args, sel),
    REPORT_FLAG_SWEEP(struct plot_args, sel),
    REPORT_FLAG_WHERE(struct plot_args, sel),
    {.name = "output", .short_name = 'o', .kind = CLI_STRING,
     .offset = offsetof(struct plot_args, output), .meta = "FILE.svg",
     .help = "the SVG file (default " PLOT_DEFAULT_OUT "; - is stdout)",
     .hint = CLI_HINT_FILE},
    {.name = "x", .kind = CLI_CHOICE, .offset = offsetof(struct plot_args, x_axis),
     .meta = "AXIS",
     .help = "the horizontal axis: epoch (the default) or time (train seconds)",
     .choices = "epoch|time"},
    {.name = "seeds", .kind = CLI_SWITCH,
     .offset = offsetof(struct plot_args, every_seed),
     .help = "draw one line per seed"},
};

const struct cli_command cli_plot = {
    .name = "plot",
    .args = "[EXPERIMENT|CONFIG ...]",
    .summary = "test accuracy, train loss and lr per epoch as an SVG chart",
    .flags = plot_flags,
    .n_flags = (int)(sizeof plot_flags / sizeof plot_flags[0]),
    .notes = "No EXPERIMENT: every experiment of the database.\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_plot,
};

int cmd_plot(int argc, char **argv)
{
    int rc = DR_OK, help = 0, n_ids = 0, n_lines = 0;
    struct plot_args a = {.output = PLOT_DEFAULT_OUT, .x_axis = "epoch"};
    const char *out_path, *db_path;
    struct report_selection *selp = &a.sel;
    struct results *db = NULL;
    int64_t *ids = NULL;
    struct plot_data d = {0};
    struct output_file out = {0};
    struct plot_chart chart = {0};
    char title[512];
    TRY(report_selection_parse(selp, &help, &cli_plot, &a, argc, argv));
    if (help) goto cleanup;
    out_path = a.output;
    /* flags of the table whose behaviour this build does not have: refused, not ignored */
    if (strcmp(a.x_axis, "epoch") || a.every_seed) {
        cli_usage_error(&cli_plot, "%s is not supported by this build",
                        a.every_seed ? "--seeds" : "--x time");
        TRY(DR_ERR_USAGE);
    }
    TRY(report_selection_resolve(&db, &db_path, &ids, &n_ids, selp, cli_plot.name));
    TRY(load(db, &d, ids, n_ids, selp->target));
    make_title(title, sizeof title, &d, db_path);
    chart.title = title;
    chart.exps = d.pe;
    chart.n_exps = d.n;
    TRY(output_file_open(&out, out_path));
    TRY(plot_svg_write(out.f, &chart));
    TRY(output_file_commit(&out));
    for (int i = 0; i < d.n; i++)
        for (int r = 0; r < d.pe[i].n_runs; r++) n_lines += d.pe[i].runs[r].n_epochs > 0;
    /* the summary goes to stderr when the SVG itself went to stdout */
    fprintf(strcmp(out_path, "-") ? stdout : stderr, "%s: %d experiment%s, %d run%s with "
            "epochs\n", out_path, d.n, d.n == 1 ? "" : "s", n_lines, n_lines == 1 ? "" : "s");
    if (n_lines == 0)
        dr_eprintf("dawnrun plot: note: no epochs recorded yet in %s for %s\n", db_path,
                   selp->n_args ? "these experiments" : "any experiment");
cleanup:
    output_file_abort(&out);
    plot_data_free(&d);
    results_close(db);
    free(ids);
    report_selection_free(selp);
    return cli_exit_code(rc);
}

/* `dawnrun plot [EXPERIMENT|CONFIG ...] -o curves.svg`: the training curves of
 * experiments in a results database (test accuracy, train loss and learning rate, per
 * experiment the median over its runs with the interquartile band, or with --seeds one
 * line per run; over epochs or, with --x time, cumulative train time) as an SVG file,
 * read-only. Legend labels are the settings that differ among the experiments. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "engine/core/experiment.h"
#include "output.h"
#include "runner/report/plot_lr.h"
#include "runner/report/plot_svg.h"
#include "runner/report/report_internal.h"

#define PLOT_DEFAULT_OUT "curves.svg"
#define PLOT_LABEL_MAX 160     /* a longer settings label: the legend uses names instead */
#define PLOT_CAPTION_MAX 110   /* a longer list of keys: the caption counts them */

/* What the chart is drawn from: experiments, their runs and epochs, owned here. */
struct plot_data {
    int n;
    struct results_experiment *xs;  /* n */
    struct plot_experiment *pe;     /* n, pointing into the rest */
    char **labels;                  /* n */
    char **keys;                    /* n_keys: the settings the labels show, if any */
    int n_keys;
    char *caption;
};

static void plot_data_free(struct plot_data *d)
{
    for (int i = 0; i < d->n; i++) {
        if (d->pe) {
            for (int r = 0; r < d->pe[i].n_runs; r++) free((void *)d->pe[i].runs[r].epochs);
            free((void *)d->pe[i].runs);
            free((void *)d->pe[i].lr_epoch);
            free((void *)d->pe[i].lr);
        }
        if (d->xs) results_experiment_clear(&d->xs[i]);
        if (d->labels) free(d->labels[i]);
    }
    free(d->xs);
    free(d->pe);
    free(d->labels);
    report_keys_free(d->keys, d->n_keys);
    free(d->caption);
    memset(d, 0, sizeof *d);
}

/* Whether another plotted experiment is named like experiment i. */
static int has_twin(const struct plot_data *d, int i)
{
    const char *name = d->xs[i].name ? d->xs[i].name : "?";
    for (int k = 0; k < d->n; k++)
        if (k != i && d->xs[k].name && !strcmp(d->xs[k].name, name)) return 1;
    return 0;
}

/* Experiment i's name, "#id" added when another plotted experiment has the same name,
 * into buf. */
static void name_of(char *buf, size_t size, const struct plot_data *d, int i)
{
    const char *name = d->xs[i].name ? d->xs[i].name : "?";
    if (has_twin(d, i)) snprintf(buf, size, "%s #%lld", name, (long long)d->xs[i].id);
    else snprintf(buf, size, "%s", name);
}

/* The label of experiment i: its values of the differing keys, or (no keys) its name. */
static int make_label(struct plot_data *d, int i, const struct param_list *params)
{
    int rc = DR_OK;
    size_t len = d->n_keys > 0
        ? report_params_label(NULL, 0, params, d->keys, d->n_keys) + 1
        : strlen(d->xs[i].name ? d->xs[i].name : "?") + 32;
    d->labels[i] = malloc(len);
    CHECK_ALLOC(d->labels[i], "a plot label");
    if (d->n_keys > 0) report_params_label(d->labels[i], len, params, d->keys, d->n_keys);
    else name_of(d->labels[i], len, d, i);
    d->pe[i].label = d->labels[i];
cleanup:
    return rc;
}

/* Labels that are still equal (experiments with the same settings, e.g. on different
 * engines) get " #id" (ids differ), so that no two legend entries read the same. */
static int make_unique(struct plot_data *d)
{
    int rc = DR_OK;
    char *dup = NULL;
    for (int i = 0; i < d->n; i++) {
        int same = 0;
        for (int k = 0; k < d->n; k++) same |= k != i && !strcmp(d->labels[k], d->labels[i]);
        if (!same) continue;
        size_t len = strlen(d->labels[i]) + 32;
        dup = malloc(len);
        CHECK_ALLOC(dup, "a plot label");
        snprintf(dup, len, "%s #%lld", d->labels[i], (long long)d->xs[i].id);
        free(d->labels[i]);
        d->labels[i] = dup;
        dup = NULL;
    }
    for (int i = 0; i < d->n; i++) d->pe[i].label = d->labels[i];
cleanup:
    free(dup);
    return rc;
}

/* "legend: train.lr, augment.cutout" (the keys the labels show), or their count when the
 * list is long. */
static int make_caption(struct plot_data *d)
{
    int rc = DR_OK;
    size_t len = 64;
    for (int k = 0; k < d->n_keys; k++) len += strlen(d->keys[k]) + 2;
    d->caption = malloc(len);
    CHECK_ALLOC(d->caption, "the plot caption");
    if (len - 64 > PLOT_CAPTION_MAX) {
        snprintf(d->caption, len, "legend: the %d settings that differ", d->n_keys);
    } else {
        size_t at = (size_t)snprintf(d->caption, len, "legend: ");
        for (int k = 0; k < d->n_keys; k++)
            at += (size_t)snprintf(d->caption + at, len - at, "%s%s", k ? ", " : "",
                                   d->keys[k]);
    }
cleanup:
    return rc;
}

/* Legend labels, caption and learning-rate curves from the experiments' stored configs.
 * A stored config that does not parse (reported) leaves names and the recorded lr. */
static int load_params(struct results *db, struct plot_data *d, const int64_t *ids)
{
    int rc = DR_OK;
    struct param_list *params = NULL;
    rc = report_params_load(&params, db, ids, d->n);
    if (rc == DR_ERR_CONFIG) {
        dr_eprintf("dawnrun plot: note: a stored config could not be read; the legend shows "
                   "names and the learning rate is the recorded one per epoch\n");
        rc = DR_OK;
        for (int i = 0; i < d->n; i++) TRY(make_label(d, i, NULL));
        goto cleanup;
    }
    TRY(rc);
    TRY(report_params_differing(&d->keys, &d->n_keys, params, d->n));
    for (int i = 0; i < d->n && d->n_keys > 0; i++)
        if (report_params_label(NULL, 0, &params[i], d->keys, d->n_keys) > PLOT_LABEL_MAX) {
            report_keys_free(d->keys, d->n_keys);   /* too long to read: names instead */
            d->keys = NULL;
            d->n_keys = 0;
        }
    for (int i = 0; i < d->n; i++) {
        double *at = NULL, *lr = NULL;
        int n_lr = 0;
        TRY(make_label(d, i, &params[i]));
        TRY(plot_lr_from_params(&at, &lr, &n_lr, &params[i]));
        d->pe[i].lr_epoch = at;
        d->pe[i].lr = lr;
        d->pe[i].n_lr = n_lr;
    }
    if (d->n_keys > 0) TRY(make_caption(d));
cleanup:
    report_params_free(params, d->n);
    return rc;
}

/* Reads experiment d->xs[i]'s runs and their epochs into d->pe[i]. */
static int load_runs(struct results *db, struct plot_data *d, int i, double target)
{
    int rc = DR_OK;
    int n = 0;
    struct results_run *runs = NULL;
    struct plot_run *pr = NULL;
    TRY(results_runs_list(db, &runs, &n, d->xs[i].id));
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
        pr[r].has_final = runs[r].status == RUN_DONE && !isnan(runs[r].final_test_acc);
        pr[r].final_acc = runs[r].final_test_acc;
        d->pe[i].n_runs = r + 1;
    }
    d->pe[i].target = isnan(target) ? d->xs[i].target_accuracy : target;
cleanup:
    results_runs_free(runs, n);
    return rc;
}

static int load(struct results *db, struct plot_data *d, const int64_t *ids, int n,
                double target)
{
    int rc = DR_OK;
    int found = 0;
    d->xs = calloc((size_t)n + 1, sizeof *d->xs);
    d->pe = calloc((size_t)n + 1, sizeof *d->pe);
    d->labels = calloc((size_t)n + 1, sizeof *d->labels);
    if (!d->xs || !d->pe || !d->labels) FAIL(DR_ERR_NOMEM, "out of memory loading the plot");
    d->n = n;
    for (int i = 0; i < n; i++) {
        TRY(results_experiment_get(db, &d->xs[i], &found, ids[i]));
        if (!found) FAIL(DR_ERR_USAGE, "%s: no experiment %lld", results_path(db),
                         (long long)ids[i]);
        TRY(load_runs(db, d, i, target));
    }
    TRY(load_params(db, d, ids));
    TRY(make_unique(d));
cleanup:
    return rc;
}

/* "dawn-512 vs dawn-768 (results/dawnrun.db)", or "5 experiments (...)". */
static void make_title(char *buf, size_t size, const struct plot_data *d, const char *db_path)
{
    size_t len = 0;
    char name[256];
    if (d->n == 0 || d->n > 3) {
        len = (size_t)snprintf(buf, size, "%d experiments", d->n);
    } else {
        buf[0] = '\0';
        for (int i = 0; i < d->n && len < size; i++) {
            name_of(name, sizeof name, d, i);
            len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " vs " : "", name);
        }
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
    .summary = "test accuracy, train loss and lr as an SVG chart: median and IQR over seeds",
    .flags = plot_flags,
    .n_flags = (int)(sizeof plot_flags / sizeof plot_flags[0]),
    .notes = "No EXPERIMENT: every experiment of the database. Per experiment the median\n"
             "over its runs with the interquartile band (--seeds: one line per run); the\n"
             "learning rate at every step of the schedule; legends name the differing keys.\n",
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
    TRY(report_selection_resolve(&db, &db_path, &ids, &n_ids, selp, cli_plot.name));
    TRY(load(db, &d, ids, n_ids, selp->target));
    make_title(title, sizeof title, &d, db_path);
    chart.title = title;
    chart.exps = d.pe;
    chart.n_exps = d.n;
    chart.style = a.every_seed ? PLOT_STYLE_SEEDS : PLOT_STYLE_MEDIAN;
    chart.x = strcmp(a.x_axis, "time") ? PLOT_X_EPOCH : PLOT_X_TIME;
    chart.caption = d.caption;
    TRY(output_file_open(&out, out_path));
    TRY(plot_svg_write(out.f, &chart));
    TRY(output_file_commit(&out));
    for (int i = 0; i < d.n; i++)
        for (int r = 0; r < d.pe[i].n_runs; r++) n_lines += d.pe[i].runs[r].n_epochs > 0;
    /* the summary goes to stderr when the SVG itself went to stdout */
    fprintf(strcmp(out_path, "-") ? stdout : stderr, "%s: %d experiment%s, %d run%s "
            "with epochs\n", out_path, d.n, d.n == 1 ? "" : "s", n_lines,
            n_lines == 1 ? "" : "s");
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

/* `dawnrun power EXPERIMENT...`: how many seeds per experiment a comparison needs to
 * detect a given difference in mean accuracy (two-sample t-test) and in median train
 * time (the Mann-Whitney U test the report prints, exact where it is), from the spread of
 * the done runs, and the smallest differences the runs so far detect (or that none can).
 * Each experiment is compared with the first; one experiment alone with a twin of the
 * same spread. Read-only. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "output.h"
#include "runner/report/report_internal.h"
#include "results/sequential.h"

#define POWER_SIMS 2000          /* simulated batches per figure of the sequential design */
#define POWER_SIM_SEED 20261201u /* their random stream: the same figures every time */

/* A train-time difference: seconds, or a fraction of the baseline's median. */
struct power_time_delta {
    double value;
    int relative;      /* 1: value is a fraction of #1's median train time */
};

/* What `dawnrun power` reads from its command line. */
struct power_args {
    struct report_selection sel;
    double delta;                      /* --delta: accuracy difference, a fraction */
    struct power_time_delta delta_time;/* --delta-time */
    double alpha;                      /* --alpha: two-sided level */
    double power;                      /* --power: 1 - beta */
    int round, max_seeds;              /* --round, --max-seeds: the sequential design; 0: none */
};

/* --delta: "0.1pp" (percentage points) or a fraction in (0, 1) ("0.001"). */
static int take_delta(void *dst, const char *value, const char *cmd)
{
    char *end = NULL;
    double v = strtod(value, &end);
    if (end != value && !strcmp(end, "pp")) v /= 100.0;
    else if (end == value || *end) v = NAN;
    if (!(v > 0 && v < 1)) {
        dr_eprintf("dawnrun %s: --delta: expected an accuracy difference such as 0.1pp "
                   "(percentage points) or 0.001 (a fraction), got '%s'\n", cmd, value);
        return DR_ERR_USAGE;
    }
    *(double *)dst = v;
    return DR_OK;
}

/* --delta-time: "2s" or "2" (seconds), "5%" (of the baseline's median train time). */
static int take_delta_time(void *dst, const char *value, const char *cmd)
{
    struct power_time_delta *d = dst;
    char *end = NULL;
    double v = strtod(value, &end);
    int relative = 0;
    if (end != value && !strcmp(end, "%")) {
        relative = 1;
        v /= 100.0;
    } else if (end == value || (*end && strcmp(end, "s"))) {
        v = NAN;
    }
    if (!(v > 0) || isinf(v)) {
        dr_eprintf("dawnrun %s: --delta-time: expected seconds such as 2s or a share of "
                   "the first experiment's median train time such as 5%%, got '%s'\n", cmd,
                   value);
        return DR_ERR_USAGE;
    }
    d->value = v;
    d->relative = relative;
    return DR_OK;
}

/* --alpha and --power: a probability strictly between 0 and 1. */
static int take_probability(void *dst, const char *value, const char *cmd, const char *flag)
{
    char *end = NULL;
    double v = strtod(value, &end);
    if (end == value || *end || !(v > 0 && v < 1)) {
        dr_eprintf("dawnrun %s: --%s: expected a number between 0 and 1, got '%s'\n", cmd,
                   flag, value);
        return DR_ERR_USAGE;
    }
    *(double *)dst = v;
    return DR_OK;
}

static int take_alpha(void *dst, const char *value, const char *cmd)
{
    return take_probability(dst, value, cmd, "alpha");
}

static int take_power(void *dst, const char *value, const char *cmd)
{
    return take_probability(dst, value, cmd, "power");
}

static const struct cli_flag power_flags[] = {
    REPORT_FLAG_DB(struct power_args, sel),
    REPORT_FLAG_SET(struct power_args, sel),
    REPORT_FLAG_SWEEP(struct power_args, sel),
    REPORT_FLAG_WHERE(struct power_args, sel),
    {.name = "delta", .kind = CLI_CALL, .offset = offsetof(struct power_args, delta),
     .meta = "D", .call = take_delta,
     .help = "the mean-accuracy difference to detect: 0.1pp (the default) or 0.001"},
    {.name = "delta-time", .kind = CLI_CALL, .offset = offsetof(struct power_args, delta_time),
     .meta = "T", .call = take_delta_time,
     .help = "the median-train-time difference: 2s, or 5% (the default) of #1's median"},
    {.name = "alpha", .kind = CLI_CALL, .offset = offsetof(struct power_args, alpha),
     .meta = "A", .call = take_alpha, .help = "two-sided level of each test (default 0.05)"},
    {.name = "power", .kind = CLI_CALL, .offset = offsetof(struct power_args, power),
     .meta = "P", .call = take_power,
     .help = "the chance of detecting the difference (default 0.8)"},
    {.name = "round", .kind = CLI_INT, .offset = offsetof(struct power_args, round),
     .meta = "K", .min = 1, .max = 100000,
     .help = "with --max-seeds: simulate run --until-decided with rounds of K seeds"},
    {.name = "max-seeds", .kind = CLI_INT, .offset = offsetof(struct power_args, max_seeds),
     .meta = "N", .min = 1, .max = 100000,
     .help = "with --round: the sequential design's most seeds per experiment"},
};

const struct cli_command cli_power = {
    .name = "power",
    .args = "EXPERIMENT|CONFIG...",
    .summary = "seeds needed to detect a difference; the difference the runs so far detect",
    .flags = power_flags,
    .n_flags = (int)(sizeof power_flags / sizeof power_flags[0]),
    .notes =
        "An EXPERIMENT is a name, an id or a config hash prefix; --sweep last|ID names a\n"
        "recorded sweep's experiments.\n"
        "From the spread of the done runs: each experiment against the first (one alone:\n"
        "against a twin of the same spread), then the seeds for the whole batch.\n"
        "Accuracy: two-sample t-test, sd pooled over the pair. Train time: the Mann-Whitney\n"
        "U test the report prints (exact for few runs: at alpha 0.05 it needs 4 a side).\n"
        "--round K --max-seeds N: what `dawnrun run --until-decided` with that design would\n"
        "do at the observed spread (simulated at a true difference of 0 and of --delta).\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_power,
};

/* ---- figures ---------------------------------------------------------------------------- */

/* One comparison's figures: e (column i) against the baseline, or against a twin of its
 * own spread and seeds. NaN where the runs do not allow it. */
struct power_cmp {
    double acc_sd, acc_n, acc_mde;        /* pooled sd, seeds for --delta (exact), MDE */
    double time_sd, time_n, time_mde;     /* the same for the train time, s (the
                                             Mann-Whitney test; time_mde +inf: it cannot
                                             give p < alpha with these runs) */
    int na, nb;                           /* accuracies on each side */
    int time_na, time_nb;                 /* train times on each side */
    int time_runs_min;                    /* the fewest runs per side it can with */
};

/* Fills c for e against base (base = e: the twin) at level alpha, for a's --delta and
 * --power and the train-time difference delta_time in seconds. DR_OK or DR_ERR_NOMEM. */
static int power_compare(struct power_cmp *c, const struct report_exp *e,
                         const struct report_exp *base, const struct power_args *a,
                         double delta_time, double alpha)
{
    int rc = DR_OK;
    const struct stats_summary *x = &e->acc_stats, *x0 = &base->acc_stats;
    const struct stats_summary *t = &e->train_time_stats, *t0 = &base->train_time_stats;
    c->na = x->n;
    c->nb = x0->n;
    c->acc_sd = c->acc_n = c->acc_mde = c->time_sd = c->time_n = c->time_mde = NAN;
    if (x->n >= 2 && x0->n >= 2) {
        c->acc_sd = stats_pooled_sd(x->std, x0->std);
        c->acc_n = stats_power_t_n(a->delta, c->acc_sd, alpha, a->power);
        c->acc_mde = stats_power_t_mde(c->acc_sd, x->n, x0->n, alpha, a->power);
    }
    if (t->n >= 2 && t0->n >= 2) {
        c->time_sd = stats_pooled_sd(t->std, t0->std);
        TRY(stats_power_mwu_n(&c->time_n, delta_time, c->time_sd, alpha, a->power));
        TRY(stats_power_mwu_mde(&c->time_mde, c->time_sd, t->n, t0->n, alpha, a->power));
    }
    c->time_na = t->n;
    c->time_nb = t0->n;
    c->time_runs_min = stats_mwu_min_n(alpha);
cleanup:
    return rc;
}

/* ---- printing --------------------------------------------------------------------------- */

/* An accuracy difference in percentage points: "0.25 pp", "0.0031 pp"; "-" for NaN. */
static void fmt_pp(char *buf, size_t size, double fraction)
{
    double pp = 100.0 * fraction;
    if (isnan(pp)) snprintf(buf, size, "-");
    else if (fabs(pp) >= 0.1) snprintf(buf, size, "%.2f pp", pp);
    else snprintf(buf, size, "%.2g pp", pp);
}

/* Seeds per experiment: "24 (23.41)", "24" (a whole number found by simulation),
 * "> 1e9", "-". */
static void fmt_seeds(char *buf, size_t size, double n)
{
    if (isnan(n)) snprintf(buf, size, "-");
    else if (isinf(n)) snprintf(buf, size, "> 1e9");
    else if (n == floor(n)) snprintf(buf, size, "%ld", (long)n);
    else snprintf(buf, size, "%ld (%.2f)", stats_power_seeds(n), n);
}

enum {
    ROW_NAME, ROW_DONE, ROW_ACC, ROW_TIME, ROW_VS, ROW_ACC_SD, ROW_ACC_SEEDS, ROW_ACC_MDE,
    ROW_TIME_SD, ROW_TIME_SEEDS, ROW_TIME_MDE, N_ROWS
};

/* Column i + 1 of the grid. */
static int power_column(struct report_grid *g, const struct report *r, int i,
                        const struct power_cmp *c, double time_base)
{
    int rc = DR_OK;
    const struct report_exp *e = &r->exps[i];
    const struct stats_summary *x = &e->acc_stats;
    char s1[48], s2[48];
    int col = i + 1;
    TRY(report_grid_set(g, ROW_NAME, col, "#%d %s", col, e->x.name ? e->x.name : "?"));
    TRY(report_grid_set(g, ROW_DONE, col, "%d", e->n_status[RUN_DONE]));
    if (x->n >= 2) TRY(report_grid_set(g, ROW_ACC, col, "%.2f ± %.2f %%", 100 * x->mean,
                                       100 * x->std));
    else TRY(report_grid_set(g, ROW_ACC, col, "-"));
    report_fmt_secs(s1, sizeof s1, e->train_time_stats.median);
    report_fmt_secs(s2, sizeof s2, e->train_time_stats.std);
    TRY(report_grid_set(g, ROW_TIME, col, "%s, %s", s1, s2));
    if (r->n > 1 && i == 0) {
        TRY(report_grid_set(g, ROW_VS, col, "(the baseline)"));
        for (int row = ROW_ACC_SD; row < N_ROWS; row++) TRY(report_grid_set(g, row, col, "-"));
        goto cleanup;
    }
    TRY(report_grid_set(g, ROW_VS, col, "%s", r->n > 1 ? "#1" : "a twin: same sd, same seeds"));
    fmt_pp(s1, sizeof s1, c->acc_sd);
    TRY(report_grid_set(g, ROW_ACC_SD, col, "%s", s1));
    fmt_seeds(s1, sizeof s1, c->acc_n);
    TRY(report_grid_set(g, ROW_ACC_SEEDS, col, "%s", s1));
    fmt_pp(s1, sizeof s1, c->acc_mde);
    if (isnan(c->acc_mde)) TRY(report_grid_set(g, ROW_ACC_MDE, col, "-"));
    else TRY(report_grid_set(g, ROW_ACC_MDE, col, "%s (%d, %d seeds)", s1, c->na, c->nb));
    report_fmt_secs(s1, sizeof s1, c->time_sd);
    TRY(report_grid_set(g, ROW_TIME_SD, col, "%s", s1));
    fmt_seeds(s1, sizeof s1, c->time_n);
    TRY(report_grid_set(g, ROW_TIME_SEEDS, col, "%s", s1));
    report_fmt_secs(s1, sizeof s1, c->time_mde);
    if (isnan(c->time_mde)) TRY(report_grid_set(g, ROW_TIME_MDE, col, "-"));
    else if (isinf(c->time_mde))
        TRY(report_grid_set(g, ROW_TIME_MDE, col, "not detectable with %d and %d runs (%d a "
                            "side can)", c->time_na, c->time_nb, c->time_runs_min));
    else if (time_base > 0)
        TRY(report_grid_set(g, ROW_TIME_MDE, col, "%s (%.1f %%)", s1,
                            100 * c->time_mde / time_base));
    else TRY(report_grid_set(g, ROW_TIME_MDE, col, "%s", s1));
cleanup:
    return rc;
}

/* The largest number of seeds over the comparisons (NaN when none is known, +inf when
 * one is out of reach). */
static double batch_seeds(const struct power_cmp *c, int from, int n, int time)
{
    double worst = NAN;
    for (int i = from; i < n; i++) {
        double v = time ? c[i].time_n : c[i].acc_n;
        if (!isnan(v) && !(v <= worst)) worst = v;
    }
    return worst;
}

/* "24", "> 1e9" or "-": whole seeds. */
static void fmt_whole(char *buf, size_t size, double n)
{
    if (isnan(n)) snprintf(buf, size, "-");
    else if (isinf(n)) snprintf(buf, size, "> 1e9");
    else snprintf(buf, size, "%ld", stats_power_seeds(n));
}

/* "different 0.011, equivalent 0.000, undecided 0.989; 49.9 seeds" for one true
 * difference mu of comparison i, whose paired differences have sd sigma. */
static int print_simulated(FILE *f, const struct seq_design *d, double mu, double sigma,
                           const char *what)
{
    int rc = DR_OK;
    struct seq_operating o;
    rc = seq_simulate(&o, d, mu, sigma, POWER_SIMS, POWER_SIM_SEED);
    if (rc == DR_ERR_USAGE) FAIL(DR_ERR_INTERNAL, "power: the sequential design was refused");
    TRY(rc);
    fprintf(f, "    true Δ %-8s different %.3f, equivalent %.3f, undecided %.3f; "
            "mean seeds %.1f\n", what, o.p_different, o.p_equivalent, o.p_undecided,
            o.mean_seeds);
cleanup:
    return rc;
}

/* What `dawnrun run --until-decided` with a's design would do for each comparison, at its
 * observed spread: the paired differences (by seed rank) of two independent experiments
 * have sd sqrt(sd_a^2 + sd_b^2) = sqrt 2 times the pooled sd. */
static int print_sequential(FILE *f, const struct report *r, const struct power_cmp *c,
                            const struct power_args *a, int k)
{
    int rc = DR_OK;
    char s1[48], s2[48];
    struct seq_design d = {.alpha = a->alpha, .delta = a->delta, .round = a->round,
                           .max_seeds = a->max_seeds, .n_compared = k};
    fmt_pp(s1, sizeof s1, a->delta);
    fprintf(f, "\nrun --until-decided --round %d --max-seeds %d --alpha %g --delta %g, "
            "simulated at\nthe observed spread (%d batches each; %d comparison%s, alpha %.3g "
            "each):\n", a->round, a->max_seeds, a->alpha, a->delta, POWER_SIMS, k,
            k == 1 ? "" : "s", seq_alpha_each(&d));
    for (int i = r->n > 1 ? 1 : 0; i < r->n; i++) {
        double sigma = sqrt(2.0) * c[i].acc_sd;
        const char *name = r->exps[i].x.name ? r->exps[i].x.name : "?";
        if (r->n > 1) output_text(f, "  #%d %s vs #1", i + 1, name);
        else output_text(f, "  %s vs a twin", name);
        if (!(sigma > 0)) {
            fputs(": - (fewer than two done runs on a side, or no spread)\n", f);
            continue;
        }
        fmt_pp(s2, sizeof s2, sigma);
        fprintf(f, " (sd of the differences %s):\n", s2);
        TRY(print_simulated(f, &d, 0.0, sigma, "0"));
        TRY(print_simulated(f, &d, a->delta, sigma, s1));
    }
cleanup:
    return rc;
}

static int power_print(FILE *f, struct results *db, const int64_t *ids, int n,
                       const struct power_args *a)
{
    int rc = DR_OK;
    struct report r;
    struct report_grid g = {0};
    struct power_cmp *c = NULL;
    struct power_cmp *cb = NULL;
    char s1[48], s2[48], s3[48], s4[48];
    TRY(report_compute(&r, db, ids, n, NAN));
    c = calloc((size_t)n + 1, sizeof *c);
    cb = calloc((size_t)n + 1, sizeof *cb);
    if (!c || !cb) FAIL(DR_ERR_NOMEM, "out of memory for the power figures");
    const struct report_exp *base = &r.exps[0];
    double time_base = base->train_time_stats.median;
    double delta_time = a->delta_time.relative ? a->delta_time.value * time_base
                                               : a->delta_time.value;
    int k = n > 1 ? n - 1 : 1;   /* comparisons */
    for (int i = 0; i < n; i++) {
        const struct report_exp *other = n > 1 ? base : &r.exps[i];
        TRY(power_compare(&c[i], &r.exps[i], other, a, delta_time, a->alpha));
        TRY(power_compare(&cb[i], &r.exps[i], other, a, delta_time, a->alpha / k));
    }

    fmt_pp(s1, sizeof s1, a->delta);
    report_fmt_secs(s2, sizeof s2, delta_time);
    output_text(f, "%s: %d experiment%s; two-sided alpha %g, power %g\n", r.db_path, n,
                n == 1 ? "" : "s", a->alpha, a->power);
    if (a->delta_time.relative)
        fprintf(f, "Δ to detect: %s in mean accuracy; %s in median train time (%g %% of "
                "#1's median)\n", s1, s2, 100 * a->delta_time.value);
    else
        fprintf(f, "Δ to detect: %s in mean accuracy; %s in median train time\n", s1, s2);
    fprintf(f, "accuracy: two-sample t-test, sd pooled over the pair; train time: the "
            "Mann-Whitney U test\n  the report prints (exact: simulated under a normal shift "
            "of the pooled sd; it needs\n  %d runs a side to give p < %g at all)\n\n",
            stats_mwu_min_n(a->alpha), a->alpha);

    TRY(report_grid_init(&g, N_ROWS, n + 1));
    static const char *const labels[N_ROWS] = {
        [ROW_NAME] = "experiment",
        [ROW_DONE] = "done runs",
        [ROW_ACC] = "accuracy: mean ± sd",
        [ROW_TIME] = "train time: median, sd",
        [ROW_VS] = "compared with",
        [ROW_ACC_SD] = "accuracy: pooled sd",
        [ROW_ACC_SEEDS] = "  seeds each to detect Δ",   /* then the difference */
        [ROW_ACC_MDE] = "  detectable now",
        [ROW_TIME_SD] = "train time: pooled sd",
        [ROW_TIME_SEEDS] = "  seeds each to detect Δ",
        [ROW_TIME_MDE] = "  detectable now",
    };
    for (int row = 0; row < N_ROWS; row++) TRY(report_grid_set(&g, row, 0, "%s", labels[row]));
    TRY(report_grid_set(&g, ROW_ACC_SEEDS, 0, "%s %s", labels[ROW_ACC_SEEDS], s1));
    TRY(report_grid_set(&g, ROW_TIME_SEEDS, 0, "%s %s", labels[ROW_TIME_SEEDS], s2));
    for (int i = 0; i < n; i++) TRY(power_column(&g, &r, i, &c[i], time_base));
    report_grid_print(f, &g, 1);

    fputs("\n", f);
    int from = n > 1 ? 1 : 0;
    fmt_whole(s3, sizeof s3, batch_seeds(c, from, n, 0));
    fmt_whole(s4, sizeof s4, batch_seeds(c, from, n, 1));
    if (n == 1) {
        output_text(f, "%s: %s seeds per experiment detect %s in accuracy,\n  %s seeds %s in "
                    "train time, against an experiment of the same spread\n",
                    base->x.name ? base->x.name : "?", s3, s1, s4, s2);
    } else if (k == 1) {
        fprintf(f, "batch: %s seeds per experiment give the comparison power %g for %s in "
                "accuracy;\n  %s for %s in train time\n", s3, a->power, s1, s4, s2);
    } else {
        fprintf(f, "batch: %s seeds per experiment give each of the %d comparisons power %g "
                "for %s in accuracy;\n  %s for %s in train time", s3, k, a->power, s1, s4, s2);
        fmt_whole(s3, sizeof s3, batch_seeds(cb, from, n, 0));
        fmt_whole(s4, sizeof s4, batch_seeds(cb, from, n, 1));
        fprintf(f, "; with alpha shared by the %d (Bonferroni, %.3g each):\n  %s and %s\n", k,
                a->alpha / k, s3, s4);
    }
    if (a->round > 0) TRY(print_sequential(f, &r, c, a, k));
    fputs("(seeds: the whole number needed, for the t-test with the exact root in parentheses; "
          "detectable\n now: the difference the done runs so far find with the power asked; -: "
          "fewer than two\n done runs on a side)\n", f);
    if (fflush(f) != 0 || ferror(f)) FAIL(DR_ERR_IO, "power: write error");
cleanup:
    free(c);
    free(cb);
    report_grid_free(&g);
    report_free(&r);
    return rc;
}

int cmd_power(int argc, char **argv)
{
    int rc = DR_OK, help = 0, n_ids = 0;
    struct power_args a = {.delta = 0.001, .delta_time = {0.05, 1}, .alpha = 0.05,
                           .power = 0.8};
    struct report_selection *selp = &a.sel;
    struct results *db = NULL;
    const char *db_path;
    int64_t *ids = NULL;
    TRY(report_selection_parse(selp, &help, &cli_power, &a, argc, argv));
    if (help) goto cleanup;
    if (selp->n_args == 0 && selp->n_sweeps == 0) {
        cli_usage_error(&cli_power, "name the experiments to size (the first is the baseline)");
        TRY(DR_ERR_USAGE);
    }
    if (!(a.power > a.alpha / 2)) {
        cli_usage_error(&cli_power, "--power %g is below the chance alpha/2 = %g of a false "
                        "detection", a.power, a.alpha / 2);
        TRY(DR_ERR_USAGE);
    }
    if ((a.round > 0) != (a.max_seeds > 0)) {
        cli_usage_error(&cli_power, "--round and --max-seeds go together");
        TRY(DR_ERR_USAGE);
    }
    if (a.max_seeds > 0 && a.max_seeds < a.round) {
        cli_usage_error(&cli_power, "--max-seeds %d is less than one round of %d", a.max_seeds,
                        a.round);
        TRY(DR_ERR_USAGE);
    }
    TRY(report_selection_resolve(&db, &db_path, &ids, &n_ids, selp, cli_power.name));
    TRY(power_print(stdout, db, ids, n_ids, &a));
cleanup:
    results_close(db);
    free(ids);
    report_selection_free(selp);
    return cli_exit_code(rc);
}

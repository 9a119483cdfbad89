/* The report's four output formats: an aligned table with Page's sentence per
 * experiment, a GitHub Markdown table, CSV (one row per experiment, RFC 4180 quoting)
 * and JSON (NaN as null); each shows the config keys that differ among the experiments
 * (table rows after "engine", trailing CSV columns named by key, a JSON "differing"
 * object). Accuracies are percentages in the table formats and fractions
 * in the machine-readable ones. */
#include "report_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "engine/core/experiment.h"
#include "base/utf8.h"
#include "runner/cli/output.h"

/* ---- number formats ------------------------------------------------------------------ */

void report_fmt_pct(char *buf, size_t size, double fraction)
{
    if (isnan(fraction)) snprintf(buf, size, "-");
    else snprintf(buf, size, "%.2f %%", 100.0 * fraction);
}

void report_fmt_secs(char *buf, size_t size, double seconds)
{
    double a = fabs(seconds);
    if (isnan(seconds)) snprintf(buf, size, "-");
    else if (a >= 99.95) snprintf(buf, size, "%.0f s", seconds);
    else if (a >= 9.995) snprintf(buf, size, "%.1f s", seconds);
    else snprintf(buf, size, "%.2f s", seconds);
}

void report_fmt_target(char *buf, size_t size, double fraction)
{
    if (isnan(fraction)) snprintf(buf, size, "-");
    else snprintf(buf, size, "%g %%", 100.0 * fraction);
}

/* A p-value with three significant digits ("0.104", "1.06e-06"), "-" when unknown. */
static void fmt_p(char *buf, size_t size, double p)
{
    if (isnan(p)) snprintf(buf, size, "-");
    else snprintf(buf, size, "%.3g", p);
}

/* A hit rate or one end of its interval in whole percents ("80", "28"); a value strictly
 * between 0 and 1 gets the decimals it needs not to read as 0 or 100 ("99.7"). */
static void fmt_whole_pct(char *buf, size_t size, double fraction)
{
    for (int digits = 0; digits < 4; digits++) {
        snprintf(buf, size, "%.*f", digits, 100.0 * fraction);
        double shown = atof(buf);
        if ((shown > 0 || fraction <= 0) && (shown < 100 || fraction >= 1)) return;
    }
}

/* " (80 %, 95 % CI 28–99 %)": e's hit rate and its interval, to follow "4/5"; "" when
 * there is none (no target, nothing finished). */
static void fmt_hit_rate(char *buf, size_t size, const struct report_exp *e)
{
    char rate[16], lo[16], hi[16];
    if (isnan(e->hit_rate)) {
        snprintf(buf, size, "%s", "");
        return;
    }
    fmt_whole_pct(rate, sizeof rate, e->hit_rate);
    fmt_whole_pct(lo, sizeof lo, e->hit_ci_lo);
    fmt_whole_pct(hi, sizeof hi, e->hit_ci_hi);
    snprintf(buf, size, " (%s %%, 95 %% CI %s–%s %%)", rate, lo, hi);
}

void report_sentence(char *buf, size_t size, const struct report_exp *e)
{
    char hit_rate[96];
    char target[32], median[32], secs[32];
    size_t len = 0;
    int done = e->n_status[RUN_DONE];
    if (e->finished == 0) {
        snprintf(buf, size, "no finished runs yet (%d of %d run%s done)", done, e->total,
                 e->total == 1 ? "" : "s");
        return;
    }
    report_fmt_target(target, sizeof target, e->target);
    report_fmt_pct(median, sizeof median, e->acc_stats.median);
    report_fmt_secs(secs, sizeof secs, e->train_time_stats.median);
    fmt_hit_rate(hit_rate, sizeof hit_rate, e);
    if (e->hits >= 0)
        len = (size_t)snprintf(buf, size, "%d/%d runs reach %s%s", e->hits, e->finished,
                               target, hit_rate);
    else
        len = (size_t)snprintf(buf, size, "%d run%s done", done, done == 1 ? "" : "s");
    if (len < size && e->acc_stats.n > 0)
        len += (size_t)snprintf(buf + len, size - len, ", median %s", median);
    if (len < size && e->train_time_stats.n > 0)
        snprintf(buf + len, size - len, ", %s", secs);
}

/* ---- grouped reports (--group-by): a column is a value of the key ------------------- */

/* What names entry e: its experiment's name, or "KEY=VALUE" in a grouped report.
 * malloc'd, NULL when out of memory. */
static char *entry_name(const struct report *r, const struct report_exp *e)
{
    const char *name = e->x.name ? e->x.name : "?";
    if (!r->group_key || !e->group_value) return strdup(name);
    size_t n = strlen(r->group_key) + strlen(e->group_value) + 2;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s=%s", r->group_key, e->group_value);
    return s;
}

/* ---- table and Markdown: one grid, rows = figures, columns = experiments ------------- */

enum {
    ROW_NAME, ROW_HASH, ROW_ENGINE, ROW_TARGET, ROW_RUNS, ROW_LIVE, ROW_BAD, ROW_HITS,
    ROW_MEDIAN, ROW_IQR, ROW_MEAN, ROW_CI, ROW_MINMAX, ROW_EPOCHS, ROW_TRAIN, ROW_TTT,
    ROW_TOTAL, ROW_D_ACC, ROW_P_ACC, ROW_MDE_ACC, ROW_D_TIME, ROW_P_TIME, ROW_MDE_TIME,
    N_ROWS
};

static const char *const row_labels[N_ROWS] = {
    [ROW_NAME] = "experiment",
    [ROW_HASH] = "config hash",
    [ROW_ENGINE] = "engine",
    [ROW_TARGET] = "target",
    [ROW_RUNS] = "runs done / total",
    [ROW_LIVE] = "  running, pending",
    [ROW_BAD] = "  failed, diverged, interrupted",
    [ROW_HITS] = "runs >= target",
    [ROW_MEDIAN] = "test accuracy: median",
    [ROW_IQR] = "  IQR (q1 to q3)",
    [ROW_MEAN] = "  mean ± std",
    [ROW_CI] = "  95 % CI of the mean",
    [ROW_MINMAX] = "  min, max",
    [ROW_EPOCHS] = "epochs to target (median)",
    [ROW_TRAIN] = "train time (median)",
    [ROW_TTT] = "time to target (median)",
    [ROW_TOTAL] = "total time (median)",
    [ROW_D_ACC] = "Δ mean accuracy vs #1",
    [ROW_P_ACC] = "  p: Welch t, Mann-Whitney",
    [ROW_MDE_ACC] = "  detectable (α .05, power .8)",
    [ROW_D_TIME] = "Δ median train time vs #1",
    [ROW_P_TIME] = "  p: Mann-Whitney",
    [ROW_MDE_TIME] = "  detectable (α .05, power .8)",
};

/* Column c (1-based) of the grid: experiment c - 1. */
static int fill_column(struct report_grid *g, int c, const struct report *r,
                       const struct report_exp *e, const struct report_cmp *cmp, int n)
{
    int rc = DR_OK;
    const struct stats_summary *a = &e->acc_stats;
    char s1[32], s2[32], s3[32], hit_rate[96];
    char *name = entry_name(r, e);
    CHECK_ALLOC(name, "a column name");
    TRY(report_grid_set(g, ROW_NAME, c, "#%d %s", c, name));
    if (r->group_key) TRY(report_grid_set(g, ROW_HASH, c, "%d", e->n_members));
    else TRY(report_grid_set(g, ROW_HASH, c, "%.12s", e->x.config_hash ? e->x.config_hash : "?"));
    TRY(report_grid_set(g, ROW_ENGINE, c, "%s", e->x.engine ? e->x.engine : "?"));
    report_fmt_target(s1, sizeof s1, e->target);
    TRY(report_grid_set(g, ROW_TARGET, c, "%s", s1));
    TRY(report_grid_set(g, ROW_RUNS, c, "%d/%d", e->n_status[RUN_DONE], e->total));
    TRY(report_grid_set(g, ROW_LIVE, c, "%d, %d", e->n_status[RUN_RUNNING],
                        e->n_status[RUN_PENDING]));
    TRY(report_grid_set(g, ROW_BAD, c, "%d, %d, %d", e->n_status[RUN_FAILED],
                        e->n_status[RUN_DIVERGED], e->n_status[RUN_INTERRUPTED]));
    fmt_hit_rate(hit_rate, sizeof hit_rate, e);
    if (e->hits < 0) TRY(report_grid_set(g, ROW_HITS, c, "-"));
    else TRY(report_grid_set(g, ROW_HITS, c, "%d/%d%s", e->hits, e->finished, hit_rate));
    report_fmt_pct(s1, sizeof s1, a->median);
    TRY(report_grid_set(g, ROW_MEDIAN, c, "%s", s1));
    if (a->n > 0) {
        TRY(report_grid_set(g, ROW_IQR, c, "%.2f pp (%.2f to %.2f %%)", 100 * a->iqr,
                            100 * a->q1, 100 * a->q3));
        if (a->n > 1) {
            TRY(report_grid_set(g, ROW_MEAN, c, "%.2f ± %.2f %%", 100 * a->mean, 100 * a->std));
            TRY(report_grid_set(g, ROW_CI, c, "%.2f to %.2f %%", 100 * a->ci_lo, 100 * a->ci_hi));
        } else {
            TRY(report_grid_set(g, ROW_MEAN, c, "%.2f %%", 100 * a->mean));
            TRY(report_grid_set(g, ROW_CI, c, "-"));
        }
        TRY(report_grid_set(g, ROW_MINMAX, c, "%.2f, %.2f %%", 100 * a->min, 100 * a->max));
    } else {
        for (int row = ROW_IQR; row <= ROW_MINMAX; row++) TRY(report_grid_set(g, row, c, "-"));
    }
    if (e->hits < 0) TRY(report_grid_set(g, ROW_EPOCHS, c, "-"));
    else if (e->reached == 0) TRY(report_grid_set(g, ROW_EPOCHS, c, "- (0 runs)"));
    else TRY(report_grid_set(g, ROW_EPOCHS, c, "%g (%d run%s)", e->epochs_to_target,
                             e->reached, e->reached == 1 ? "" : "s"));
    report_fmt_secs(s1, sizeof s1, e->train_time_stats.median);
    TRY(report_grid_set(g, ROW_TRAIN, c, "%s", s1));
    report_fmt_secs(s1, sizeof s1, e->time_to_target);
    TRY(report_grid_set(g, ROW_TTT, c, "%s", s1));
    report_fmt_secs(s1, sizeof s1, e->total_time_stats.median);
    TRY(report_grid_set(g, ROW_TOTAL, c, "%s", s1));
    if (n < 2) goto cleanup;
    if (c == 1) {
        for (int row = ROW_D_ACC; row <= ROW_MDE_TIME; row++) TRY(report_grid_set(g, row, c, "-"));
        goto cleanup;
    }
    if (isnan(cmp->d_acc_mean)) TRY(report_grid_set(g, ROW_D_ACC, c, "-"));
    else TRY(report_grid_set(g, ROW_D_ACC, c, "%+.2f pp", 100 * cmp->d_acc_mean));
    fmt_p(s1, sizeof s1, cmp->acc_welch.p);
    fmt_p(s2, sizeof s2, cmp->acc_mwu.p);
    TRY(report_grid_set(g, ROW_P_ACC, c, "%s, %s", s1, s2));
    if (isnan(cmp->mde_acc)) TRY(report_grid_set(g, ROW_MDE_ACC, c, "-"));
    else TRY(report_grid_set(g, ROW_MDE_ACC, c, "%.2f pp", 100 * cmp->mde_acc));
    report_fmt_secs(s1, sizeof s1, cmp->d_time_median);
    if (isnan(cmp->d_time_median)) TRY(report_grid_set(g, ROW_D_TIME, c, "-"));
    else if (isfinite(cmp->d_time_rel))
        TRY(report_grid_set(g, ROW_D_TIME, c, "%s%s (%+.1f %%)", cmp->d_time_median > 0 ? "+" : "",
                            s1, 100 * cmp->d_time_rel));
    else TRY(report_grid_set(g, ROW_D_TIME, c, "%s%s", cmp->d_time_median > 0 ? "+" : "", s1));
    fmt_p(s3, sizeof s3, cmp->time_mwu.p);
    if (isnan(cmp->time_mwu.p)) TRY(report_grid_set(g, ROW_P_TIME, c, "-"));
    else TRY(report_grid_set(g, ROW_P_TIME, c, "%s (%s)", s3,
                             cmp->time_mwu.exact ? "exact" : "normal approx."));
    report_fmt_secs(s1, sizeof s1, cmp->mde_time);
    if (isnan(cmp->mde_time)) TRY(report_grid_set(g, ROW_MDE_TIME, c, "-"));
    else if (isinf(cmp->mde_time))
        TRY(report_grid_set(g, ROW_MDE_TIME, c, "not detectable with %d and %d runs (%d a "
                            "side can)", e->train_time_stats.n,
                            r->exps[0].train_time_stats.n, cmp->time_runs_min));
    else if (isfinite(cmp->mde_time_rel))
        TRY(report_grid_set(g, ROW_MDE_TIME, c, "%s (%.1f %%)", s1, 100 * cmp->mde_time_rel));
    else TRY(report_grid_set(g, ROW_MDE_TIME, c, "%s", s1));
cleanup:
    free(name);
    return rc;
}

/* ---- the keys that differ among the experiments (r->keys, r->params) ---------------- */

/* The value experiment i has for key k of the report's differing keys; "(none)". */
static const char *param_value(const struct report *r, int i, int k)
{
    const struct param *v = param_list_find(&r->params[i], r->keys[k]);
    return v ? v->value : "(none)";
}

/* Inserts into g, after row `after`, one row per differing key: its name, then each
 * experiment's value. */
static int grid_insert_params(struct report_grid *g, const struct report *r, int after)
{
    int rc = DR_OK;
    struct report_grid wide = {0};
    if (r->n_keys == 0 || !r->params) return DR_OK;
    TRY(report_grid_init(&wide, g->rows + r->n_keys, g->cols));
    for (int row = 0; row < g->rows; row++) {
        int to = row <= after ? row : row + r->n_keys;
        for (int c = 0; c < g->cols; c++) {
            wide.cells[to * wide.cols + c] = g->cells[row * g->cols + c];
            g->cells[row * g->cols + c] = NULL;
        }
    }
    for (int k = 0; k < r->n_keys; k++) {
        TRY(report_grid_set(&wide, after + 1 + k, 0, "%s", r->keys[k]));
        for (int i = 0; i < r->n; i++)
            TRY(report_grid_set(&wide, after + 1 + k, i + 1, "%s", param_value(r, i, k)));
    }
    report_grid_free(g);
    *g = wide;
    memset(&wide, 0, sizeof wide);
cleanup:
    report_grid_free(&wide);
    return rc;
}

/* 1 when the CSV has columns for differing keys after its fixed ones. */
static int csv_has_params(const struct report *r)
{
    return r->params && r->n_keys > 0;
}

/* The trailing fields for the differing keys, after a record whose fixed fields ended
 * with a comma: each key (i < 0: the header) or experiment i's value; then the newline. */
static void csv_params(FILE *f, const struct report *r, int i)
{
    for (int k = 0; csv_has_params(r) && k < r->n_keys; k++)
        output_csv_text(f, i < 0 ? r->keys[k] : param_value(r, i, k), k == r->n_keys - 1);
}

/* `,\n      "differing": {"key": value, ...}` of experiment i (typed JSON values). */
static void json_params(FILE *f, const struct report *r, int i)
{
    if (!r->params || r->n_keys == 0) return;
    fputs(",\n      \"differing\": {", f);
    for (int k = 0; k < r->n_keys; k++) {
        const struct param *v = param_list_find(&r->params[i], r->keys[k]);
        fputs(k ? ", " : "", f);
        output_json_string(f, r->keys[k]);
        fputs(": ", f);
        report_json_param(f, v);
    }
    fputc('}', f);
}

int report_grid_build(struct report_grid *g, int *first_cmp_row, const struct report *r)
{
    int rc = DR_OK;
    int rows = r->n > 1 ? N_ROWS : ROW_D_ACC;
    *first_cmp_row = ROW_D_ACC;
    TRY(report_grid_init(g, rows, r->n + 1));
    for (int row = 0; row < rows; row++) TRY(report_grid_set(g, row, 0, "%s", row_labels[row]));
    if (r->group_key) {
        TRY(report_grid_set(g, ROW_NAME, 0, "group"));
        TRY(report_grid_set(g, ROW_HASH, 0, "experiments pooled"));
    }
    for (int i = 0; i < r->n; i++) TRY(fill_column(g, i + 1, r, &r->exps[i], &r->cmp[i], r->n));
    TRY(grid_insert_params(g, r, ROW_ENGINE));
    if (r->params) *first_cmp_row += r->n_keys;   /* the params rows come before them */
cleanup:
    return rc;
}

void report_p_note(char *buf, size_t size, const struct report *r)
{
    int k = r->n - 1;
    snprintf(buf, size, "p-values compare each %s with #1 on its own, without correction "
             "for multiplicity (%d comparison%s)", r->group_key ? "group" : "experiment", k,
             k == 1 ? "" : "s");
}

void report_target_note(char *buf, size_t size, const struct report *r)
{
    char t[32];
    report_fmt_target(t, sizeof t, r->target);
    if (isnan(r->target)) snprintf(buf, size, "target: each experiment's own");
    else snprintf(buf, size, "target %s", t);
}

int report_write_table(FILE *f, const struct report *r)
{
    int rc = DR_OK;
    struct report_grid g = {0};
    int first_cmp;
    char note[64], sentence[256], *name = NULL;
    report_target_note(note, sizeof note, r);
    if (r->group_key)
        output_text(f, "%s: %d experiment%s in %d group%s by %s; %s\n",
                    r->db_path ? r->db_path : "results", r->n_experiments,
                    r->n_experiments == 1 ? "" : "s", r->n, r->n == 1 ? "" : "s",
                    r->group_key, note);
    else
        fprintf(f, "%s: %d experiment%s; %s\n", r->db_path ? r->db_path : "results", r->n,
                r->n == 1 ? "" : "s", note);
    if (r->n == 0) goto cleanup;
    fputc('\n', f);
    TRY(report_grid_build(&g, &first_cmp, r));
    report_grid_print(f, &g, 1);
    if (r->n > 1) {
        char p_note[128];
        report_p_note(p_note, sizeof p_note, r);
        fprintf(f, "(%s)\n", p_note);
    }
    fputc('\n', f);
    for (int i = 0; i < r->n; i++) {
        report_sentence(sentence, sizeof sentence, &r->exps[i]);
        free(name);
        name = entry_name(r, &r->exps[i]);
        CHECK_ALLOC(name, "a column name");
        output_text(f, "%s: %s\n", name, sentence);
    }
    TRY(report_decisions_write(f, r, REPORT_TABLE));
cleanup:
    free(name);
    report_grid_free(&g);
    return rc;
}

int report_write_markdown(FILE *f, const struct report *r)
{
    int rc = DR_OK;
    struct report_grid g = {0};
    int first_cmp;
    char note[64], sentence[256], *name = NULL;
    report_target_note(note, sizeof note, r);
    if (r->n == 0) {
        fprintf(f, "No experiments (%s).\n", note);
        goto cleanup;
    }
    TRY(report_grid_build(&g, &first_cmp, r));
    report_grid_print_markdown(f, &g);
    if (r->group_key)
        fprintf(f, "\n%d experiments in %d groups by `%s`; %s.\n", r->n_experiments, r->n,
                r->group_key, note);
    else
        fprintf(f, "\n%s.\n", note);
    if (r->n > 1) {
        char p_note[128];
        report_p_note(p_note, sizeof p_note, r);
        fprintf(f, "%c%s.\n", toupper((unsigned char)p_note[0]), p_note + 1);
    }
    fputc('\n', f);
    for (int i = 0; i < r->n; i++) {
        report_sentence(sentence, sizeof sentence, &r->exps[i]);
        fputs("- ", f);
        free(name);
        name = entry_name(r, &r->exps[i]);
        CHECK_ALLOC(name, "a column name");
        for (const char *p = name; *p;) {
            uint32_t cp;
            int n = utf8_decode(&cp, p);
            if (n == 0) fputs(UTF8_REPLACEMENT, f);
            else if (strchr("\\`*_[]<>|#", *p)) fprintf(f, "\\%c", *p);
            else fwrite(p, 1, (size_t)n, f);
            p += n > 0 ? n : 1;
        }
        fprintf(f, ": %s\n", sentence);
    }
    TRY(report_decisions_write(f, r, REPORT_MARKDOWN));
cleanup:
    free(name);
    report_grid_free(&g);
    return rc;
}

/* ---- CSV ----------------------------------------------------------------------------- */

static const char *const csv_columns[] = {
    "experiment_id", "name", "config_hash", "engine", "target", "runs", "done", "running",
    "pending", "failed", "diverged", "interrupted", "finished", "hits", "hit_rate",
    "hit_ci95_lo", "hit_ci95_hi", "acc_n",
    "acc_median", "acc_q1", "acc_q3", "acc_iqr", "acc_mean", "acc_std", "acc_ci95_lo",
    "acc_ci95_hi", "acc_min", "acc_max", "reached_target", "epochs_to_target_median",
    "train_time_median", "time_to_target_median", "total_time_median", "vs_experiment_id",
    "d_acc_mean", "p_acc_welch", "p_acc_mannwhitney", "d_train_time_median",
    "d_train_time_rel", "p_train_time_welch", "p_train_time_mannwhitney",
    "mde_acc", "mde_train_time", "mde_train_time_rel", "mwu_min_seeds",
};
#define N_CSV_COLUMNS ((int)(sizeof csv_columns / sizeof csv_columns[0]))

int report_write_csv(FILE *f, const struct report *r)
{
    /* grouped: three columns first (the key, the value, the experiments pooled); the
     * experiment's id, hash and the id compared with are then empty */
    if (r->group_key) fputs("group_key,group_value,experiments,", f);
    for (int c = 0; c < N_CSV_COLUMNS; c++)
        output_csv_text(f, csv_columns[c], c == N_CSV_COLUMNS - 1 && !csv_has_params(r));
    csv_params(f, r, -1);
    for (int i = 0; i < r->n; i++) {
        const struct report_exp *e = &r->exps[i];
        const struct report_cmp *c = &r->cmp[i];
        const struct stats_summary *a = &e->acc_stats;
        const int *s = e->n_status;
        int grouped = r->group_key != NULL;
        if (grouped) {
            output_csv_text(f, r->group_key, 0);
            output_csv_text(f, e->group_value, 0);
            fprintf(f, "%d,,", e->n_members);
            char *name = entry_name(r, e);
            if (!name) return DR_ERR_NOMEM;
            output_csv_text(f, name, 0);
            free(name);
            fputc(',', f);
        } else {
            fprintf(f, "%lld,", (long long)e->x.id);
            output_csv_text(f, e->x.name, 0);
            output_csv_text(f, e->x.config_hash, 0);
        }
        output_csv_text(f, e->x.engine, 0);
        output_csv_num(f, e->target, 0);
        fprintf(f, "%d,%d,%d,%d,%d,%d,%d,%d,", e->total, s[RUN_DONE], s[RUN_RUNNING],
                s[RUN_PENDING], s[RUN_FAILED], s[RUN_DIVERGED], s[RUN_INTERRUPTED], e->finished);
        if (e->hits >= 0) fprintf(f, "%d,", e->hits);
        else fputc(',', f);
        output_csv_num(f, e->hit_rate, 0);
        output_csv_num(f, e->hit_ci_lo, 0);
        output_csv_num(f, e->hit_ci_hi, 0);
        fprintf(f, "%d,", a->n);
        const double acc[] = {a->median, a->q1, a->q3, a->iqr, a->mean, a->std,
                              a->ci_lo, a->ci_hi, a->min, a->max};
        for (size_t k = 0; k < sizeof acc / sizeof acc[0]; k++) output_csv_num(f, acc[k], 0);
        if (e->hits >= 0) fprintf(f, "%d,", e->reached);
        else fputc(',', f);
        output_csv_num(f, e->epochs_to_target, 0);
        output_csv_num(f, e->train_time_stats.median, 0);
        output_csv_num(f, e->time_to_target, 0);
        output_csv_num(f, e->total_time_stats.median, 0);
        if (i > 0 && !grouped) fprintf(f, "%lld,", (long long)r->exps[0].x.id);
        else fputc(',', f);
        const double cmp[] = {c->d_acc_mean, c->acc_welch.p, c->acc_mwu.p, c->d_time_median,
                              c->d_time_rel, c->time_welch.p};
        for (size_t k = 0; k < sizeof cmp / sizeof cmp[0]; k++) output_csv_num(f, cmp[k], 0);
        output_csv_num(f, c->time_mwu.p, 0);
        output_csv_num(f, c->mde_acc, 0);
        output_csv_num(f, c->mde_time, 0);
        output_csv_num(f, c->mde_time_rel, 0);
        if (i > 0 && c->time_runs_min > 0) fprintf(f, "%d", c->time_runs_min);
        fputs(csv_has_params(r) ? "," : "\n", f);
        csv_params(f, r, i);
    }
    return report_decisions_write(f, r, REPORT_CSV);
}

/* ---- JSON ---------------------------------------------------------------------------- */

static void json_test(FILE *f, const char *key, const struct stats_test *t)
{
    fprintf(f, ",\n        \"%s\": {", key);
    output_json_num(f, "", "statistic", t->statistic);
    output_json_num(f, ", ", "df", t->df);
    output_json_num(f, ", ", "p", t->p);
    fputc('}', f);
}

static void json_experiment(FILE *f, const struct report *r, int i)
{
    const struct report_exp *e = &r->exps[i];
    const struct report_cmp *c = &r->cmp[i];
    const struct stats_summary *a = &e->acc_stats;
    char sentence[256];
    if (r->group_key) {
        char *name = entry_name(r, e);
        fputs("    {\n      \"group_value\": ", f);
        output_json_string(f, e->group_value);
        fprintf(f, ",\n      \"experiments\": %d,\n      \"name\": ", e->n_members);
        output_json_string(f, name ? name : "?");
        free(name);
    } else {
        fprintf(f, "    {\n      \"id\": %lld,\n      \"name\": ", (long long)e->x.id);
        output_json_string(f, e->x.name);
        fputs(",\n      \"config_hash\": ", f);
        output_json_string(f, e->x.config_hash);
    }
    fputs(",\n      \"engine\": ", f);
    output_json_string(f, e->x.engine);
    output_json_num(f, ",\n      ", "target", e->target);
    fprintf(f, ",\n      \"runs\": {\"total\": %d", e->total);
    for (int s = 0; s < REPORT_N_STATUS; s++)
        fprintf(f, ", \"%s\": %d", results_status_name((enum results_run_status)s), e->n_status[s]);
    fprintf(f, "},\n      \"finished\": %d,\n      \"hits\": ", e->finished);
    if (e->hits >= 0) fprintf(f, "%d", e->hits);
    else fputs("null", f);
    output_json_num(f, ",\n      ", "hit_rate", e->hit_rate);
    output_json_num(f, ", ", "hit_ci95_lo", e->hit_ci_lo);
    output_json_num(f, ", ", "hit_ci95_hi", e->hit_ci_hi);
    fprintf(f, ",\n      \"accuracy\": {\"n\": %d", a->n);
    output_json_num(f, ", ", "median", a->median);
    output_json_num(f, ", ", "q1", a->q1);
    output_json_num(f, ", ", "q3", a->q3);
    output_json_num(f, ", ", "iqr", a->iqr);
    output_json_num(f, ",\n                   ", "mean", a->mean);
    output_json_num(f, ", ", "std", a->std);
    output_json_num(f, ", ", "ci95_lo", a->ci_lo);
    output_json_num(f, ", ", "ci95_hi", a->ci_hi);
    output_json_num(f, ", ", "min", a->min);
    output_json_num(f, ", ", "max", a->max);
    fputs("},\n      \"reached_target\": ", f);
    if (e->hits >= 0) fprintf(f, "%d", e->reached);
    else fputs("null", f);
    output_json_num(f, ",\n      ", "epochs_to_target_median", e->epochs_to_target);
    output_json_num(f, ",\n      ", "train_time_median", e->train_time_stats.median);
    output_json_num(f, ",\n      ", "time_to_target_median", e->time_to_target);
    output_json_num(f, ",\n      ", "total_time_median", e->total_time_stats.median);
    json_params(f, r, i);
    report_sentence(sentence, sizeof sentence, e);
    fputs(",\n      \"sentence\": ", f);
    output_json_string(f, sentence);
    fputs(",\n      \"vs_first\": ", f);
    if (i == 0) {
        fputs("null\n    }", f);
        return;
    }
    if (r->group_key) {
        fputs("{\n        \"group_value\": ", f);
        output_json_string(f, r->exps[0].group_value);
    } else {
        fprintf(f, "{\n        \"experiment_id\": %lld", (long long)r->exps[0].x.id);
    }
    output_json_num(f, ",\n        ", "d_acc_mean", c->d_acc_mean);
    json_test(f, "acc_welch", &c->acc_welch);
    json_test(f, "acc_mannwhitney", &c->acc_mwu);
    output_json_num(f, ",\n        ", "d_train_time_median", c->d_time_median);
    output_json_num(f, ",\n        ", "d_train_time_rel", c->d_time_rel);
    json_test(f, "train_time_welch", &c->time_welch);
    json_test(f, "train_time_mannwhitney", &c->time_mwu);
    output_json_num(f, ",\n        ", "mde_acc", c->mde_acc);
    output_json_num(f, ",\n        ", "mde_train_time", c->mde_time);
    output_json_num(f, ",\n        ", "mde_train_time_rel", c->mde_time_rel);
    fprintf(f, ",\n        \"mwu_min_seeds\": %d", c->time_runs_min);
    output_json_num(f, ",\n        ", "mde_alpha", REPORT_MDE_ALPHA);
    output_json_num(f, ",\n        ", "mde_power", REPORT_MDE_POWER);
    fputs("\n      }\n    }", f);
}

int report_write_json(FILE *f, const struct report *r)
{
    fputs("{\n  \"database\": ", f);
    output_json_string(f, r->db_path);
    output_json_num(f, ",\n  ", "target", r->target);
    if (r->group_key) {
        fputs(",\n  \"group_by\": ", f);
        output_json_string(f, r->group_key);
        fprintf(f, ",\n  \"experiments_selected\": %d,\n  \"groups\": [", r->n_experiments);
    } else {
        fputs(",\n  \"experiments\": [", f);
    }
    for (int i = 0; i < r->n; i++) {
        fputs(i ? ",\n" : "\n", f);
        json_experiment(f, r, i);
    }
    fputs(r->n ? "\n  ]" : "]", f);
    int rc = report_decisions_write(f, r, REPORT_JSON);
    fputs("\n}\n", f);
    return rc;
}

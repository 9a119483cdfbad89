/* The report as one self-contained HTML page (`dawnrun report --format html`): the
 * summary table and Page's sentence per experiment, the comparisons with the first
 * experiment, the params that differ between the experiments, the training curves as
 * the inline SVG `dawnrun plot` writes, and each run's epoch table in a <details>
 * element. One inline <style>, no script, no external resource: the file opens offline,
 * on a desktop or a phone. All text from the database is escaped. */
#include "report_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/status.h"
#include "engine/core/experiment.h"
#include "base/utf8.h"
#include "plot_svg.h"

/* ---- escaping ------------------------------------------------------------------------ */

/* Writes s (NULL as "") as HTML text or attribute value: & < > " ' as character
 * references, invalid UTF-8 and control characters other than tab and line feed as
 * U+FFFD. */
static void html_text(FILE *f, const char *s)
{
    for (const char *p = s ? s : ""; *p;) {
        uint32_t cp;
        int n = utf8_decode(&cp, p);
        if (n == 0 || (cp < 0x20 && cp != '\t' && cp != '\n') || (cp >= 0x7f && cp < 0xa0)) {
            fputs(UTF8_REPLACEMENT, f);
        } else if (cp == '&') fputs("&amp;", f);
        else if (cp == '<') fputs("&lt;", f);
        else if (cp == '>') fputs("&gt;", f);
        else if (cp == '"') fputs("&quot;", f);
        else if (cp == '\'') fputs("&#39;", f);
        else fwrite(p, 1, (size_t)n, f);
        p += n > 0 ? n : 1;
    }
}

/* ---- what the page reads besides the report: runs and epochs --------------------------- */

struct html_exp {
    struct results_run *runs;          /* n_runs, by seed */
    struct results_epoch **epochs;     /* n_runs arrays of n_epochs[r] */
    int *n_epochs;
    struct plot_run *plot_runs;        /* n_runs, pointing into epochs */
    char *label;                       /* the legend label */
    int n_runs;
};

static void html_exps_free(struct html_exp *h, int n)
{
    for (int i = 0; h && i < n; i++) {
        for (int r = 0; h[i].epochs && r < h[i].n_runs; r++) free(h[i].epochs[r]);
        results_runs_free(h[i].runs, h[i].n_runs);
        free(h[i].epochs);
        free(h[i].n_epochs);
        free(h[i].plot_runs);
        free(h[i].label);
    }
    free(h);
}

/* The legend label of experiment i: its name, with "#id" when another experiment of the
 * page has the same name (as `dawnrun plot` labels them). */
static int make_label(struct html_exp *h, const struct report *r, int i)
{
    int rc = DR_OK;
    const char *name = r->exps[i].x.name ? r->exps[i].x.name : "?";
    int twin = 0;
    for (int k = 0; k < r->n; k++)
        if (k != i && r->exps[k].x.name && !strcmp(r->exps[k].x.name, name)) twin = 1;
    size_t len = strlen(name) + 32;
    h->label = malloc(len);
    CHECK_ALLOC(h->label, "a plot label");
    if (twin) snprintf(h->label, len, "%s #%lld", name, (long long)r->exps[i].x.id);
    else snprintf(h->label, len, "%s", name);
cleanup:
    return rc;
}

static int load_exp(struct html_exp *h, struct results *db, const struct report *r, int i)
{
    int rc = DR_OK;
    TRY(results_runs_list(db, &h->runs, &h->n_runs, r->exps[i].x.id));
    h->epochs = calloc((size_t)h->n_runs + 1, sizeof *h->epochs);
    h->n_epochs = calloc((size_t)h->n_runs + 1, sizeof *h->n_epochs);
    h->plot_runs = calloc((size_t)h->n_runs + 1, sizeof *h->plot_runs);
    if (!h->epochs || !h->n_epochs || !h->plot_runs)
        FAIL(DR_ERR_NOMEM, "out of memory reading the epochs of experiment %lld",
             (long long)r->exps[i].x.id);
    for (int k = 0; k < h->n_runs; k++) {
        TRY(results_epochs_list(db, &h->epochs[k], &h->n_epochs[k], h->runs[k].id));
        h->plot_runs[k].seed = h->runs[k].seed;
        h->plot_runs[k].epochs = h->epochs[k];
        h->plot_runs[k].n_epochs = h->n_epochs[k];
        h->plot_runs[k].has_final =
            h->runs[k].status == RUN_DONE && !isnan(h->runs[k].final_test_acc);
        h->plot_runs[k].final_acc = h->runs[k].final_test_acc;
    }
    TRY(make_label(h, r, i));
cleanup:
    return rc;
}

/* ---- sections ------------------------------------------------------------------------ */

static const char html_style[] =
    ":root{color-scheme:light}"
    "*{box-sizing:border-box}"
    "body{margin:0 auto;max-width:75rem;padding:1rem;font:15px/1.45 system-ui,-apple-system,"
    "'Segoe UI',Roboto,'DejaVu Sans',Helvetica,Arial,sans-serif;color:#222;background:#fff;"
    "overflow-wrap:anywhere}"
    "h1{font-size:1.5rem;margin:.2rem 0}"
    "h2{font-size:1.2rem;margin:1.6rem 0 .5rem;border-bottom:2px solid #e4e4e4}"
    "h3{font-size:1rem;margin:1rem 0 .3rem}"
    ".meta{color:#555;margin:.2rem 0}"
    "code{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:.9em}"
    ".scroll{overflow-x:auto;max-width:100%;margin:.4rem 0}"
    "table{border-collapse:collapse;font-size:.88rem;font-variant-numeric:tabular-nums}"
    "th,td{padding:.22rem .6rem;border-bottom:1px solid #e4e4e4;text-align:right;"
    "white-space:nowrap;overflow-wrap:normal;vertical-align:top}"
    "th:first-child,td:first-child{text-align:left}"
    "thead th{background:#f4f4f4}"
    "tbody th{font-weight:normal;color:#444;background:#fff}"
    "th:first-child{position:sticky;left:0}"
    "td.param{text-align:left;white-space:pre}"
    "ul.sentences{padding-left:1.2rem}"
    "li.sentence{margin:.15rem 0}"
    "figure{margin:.5rem 0}"
    "figure svg{display:block;max-width:100%;height:auto}"
    "details{margin:.2rem 0;border:1px solid #e4e4e4;border-radius:4px;padding:.2rem .6rem}"
    "summary{cursor:pointer}"
    ".note{color:#555}";

static void html_head(FILE *f, const struct report *r)
{
    char date[64] = "";
    time_t now = time(NULL);
    struct tm tm;
    if (gmtime_r(&now, &tm)) strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &tm);
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>dawnrun report: ", f);
    html_text(f, r->db_path);
    fprintf(f, "</title>\n<style>%s</style>\n</head>\n<body>\n<header>\n"
            "<h1>dawnrun results</h1>\n<p class=\"meta\">database <code id=\"database\">",
            html_style);
    html_text(f, r->db_path);
    fprintf(f, "</code> · generated <span id=\"generated\">%s</span> · dawnrun "
            "<span id=\"version\">%s</span></p>\n</header>\n<main>\n", date, DAWNRUN_VERSION);
}

/* Rows [from, to) of g as a table; only the columns with keep[c] (the label column 0
 * always). Row 0 (the experiments) is the head. */
static void html_grid(FILE *f, const struct report_grid *g, int from, int to, const int *keep,
                      const char *cls)
{
    fprintf(f, "<div class=\"scroll\"><table class=\"%s\">\n<thead><tr>", cls);
    for (int c = 0; c < g->cols; c++) {
        if (c > 0 && !keep[c]) continue;
        fputs(c ? "<th scope=\"col\" class=\"experiment\">" : "<th scope=\"col\">", f);
        html_text(f, g->cells[c]);
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int row = from; row < to; row++) {
        fputs("<tr><th scope=\"row\">", f);
        html_text(f, g->cells[row * g->cols]);
        fputs("</th>", f);
        for (int c = 1; c < g->cols; c++) {
            if (!keep[c]) continue;
            fputs("<td>", f);
            html_text(f, g->cells[row * g->cols + c]);
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
}

/* The summary (the table format's figures and sentences) and the comparisons. */
static int html_summary(FILE *f, const struct report *r)
{
    int rc = DR_OK, first_cmp = 0;
    struct report_grid g = {0};
    int *keep = NULL;
    char note[64], sentence[256];
    report_target_note(note, sizeof note, r);
    fprintf(f, "<section id=\"summary\">\n<h2>Summary</h2>\n<p>%d experiment%s; ", r->n,
            r->n == 1 ? "" : "s");
    html_text(f, note);
    fputs(".</p>\n", f);
    if (r->n == 0) {
        fputs("</section>\n", f);
        goto cleanup;
    }
    fputs("<ul class=\"sentences\">\n", f);
    for (int i = 0; i < r->n; i++) {
        report_sentence(sentence, sizeof sentence, &r->exps[i]);
        fprintf(f, "<li class=\"sentence\" data-experiment=\"%d\"><strong>", i + 1);
        html_text(f, r->exps[i].x.name ? r->exps[i].x.name : "?");
        fputs("</strong>: ", f);
        html_text(f, sentence);
        fputs("</li>\n", f);
    }
    fputs("</ul>\n<p class=\"note\">The share of finished runs that reach the target, with "
          "its exact (Clopper–Pearson) 95 % interval.</p>\n", f);
    TRY(report_grid_build(&g, &first_cmp, r));
    keep = malloc(sizeof *keep * (size_t)g.cols);
    CHECK_ALLOC(keep, "the report columns");
    for (int c = 0; c < g.cols; c++) keep[c] = 1;
    html_grid(f, &g, 1, first_cmp, keep, "summary");
    fputs("</section>\n<section id=\"comparisons\">\n<h2>Comparisons with #1</h2>\n", f);
    if (first_cmp >= g.rows) {
        fputs("<p class=\"note\">One experiment: nothing to compare.</p>\n</section>\n", f);
        goto cleanup;
    }
    fputs("<p class=\"note\">Each experiment against the first one: differences, the "
          "two-sided p-values of Welch's t-test (of the mean accuracy) and the Mann-Whitney "
          "U test, and the smallest difference the runs so far detect with power 0.8 at "
          "alpha 0.05 (t-test for the mean accuracy, the Mann-Whitney U test printed for the "
          "median train time).</p>\n", f);
    char p_note[128];
    report_p_note(p_note, sizeof p_note, r);
    fprintf(f, "<p class=\"note\" id=\"p-note\">%c%s.</p>\n",
            toupper((unsigned char)p_note[0]), p_note + 1);
    keep[1] = 0;
    html_grid(f, &g, first_cmp, g.rows, keep, "comparisons");
    fputs("</section>\n", f);
cleanup:
    free(keep);
    report_grid_free(&g);
    return rc;
}

/* The table of the params whose values differ between the experiments, one column
 * each, or a note saying why there is none. */
static int html_params_body(FILE *f, struct results *db, const struct report *r,
                            const int64_t *ids)
{
    int rc = DR_OK, n_keys = 0;
    struct param_list *lists = NULL;
    char **keys = NULL;
    if (r->n < 2) {
        fputs("<p class=\"note\">Fewer than two experiments: nothing to compare.</p>\n", f);
        goto cleanup;
    }
    rc = report_params_load(&lists, db, ids, r->n);
    if (rc == DR_ERR_CONFIG) {
        /* a stored config that no longer parses (said on stderr): the page goes on */
        fputs("<p class=\"note\">The stored configs could not be read as params.</p>\n", f);
        rc = DR_OK;
        goto cleanup;
    }
    TRY(rc);
    TRY(report_params_differing(&keys, &n_keys, lists, r->n));
    if (n_keys == 0) {
        fputs("<p class=\"note\">The experiments' resolved configs agree on every param "
              "but the name.</p>\n", f);
        goto cleanup;
    }
    fputs("<div class=\"scroll\"><table class=\"params\">\n<thead><tr><th scope=\"col\">"
          "param</th>", f);
    for (int i = 0; i < r->n; i++) {
        fprintf(f, "<th scope=\"col\" class=\"experiment\">#%d ", i + 1);
        html_text(f, r->exps[i].x.name ? r->exps[i].x.name : "?");
        fputs("</th>", f);
    }
    fputs("</tr></thead>\n<tbody>\n", f);
    for (int k = 0; k < n_keys; k++) {
        fputs("<tr><th scope=\"row\"><code>", f);
        html_text(f, keys[k]);
        fputs("</code></th>", f);
        for (int i = 0; i < r->n; i++) {
            const struct param *p = param_list_find(&lists[i], keys[k]);
            fputs("<td class=\"param\">", f);
            html_text(f, p ? p->value : "(none)");
            fputs("</td>", f);
        }
        fputs("</tr>\n", f);
    }
    fputs("</tbody></table></div>\n", f);
cleanup:
    report_keys_free(keys, n_keys);
    report_params_free(lists, r->n);
    return rc;
}

static int html_params(FILE *f, struct results *db, const struct report *r)
{
    int rc = DR_OK;
    int64_t *ids = calloc((size_t)r->n + 1, sizeof *ids);
    CHECK_ALLOC(ids, "the experiment ids");
    for (int i = 0; i < r->n; i++) ids[i] = r->exps[i].x.id;
    fputs("<section id=\"params\">\n<h2>Differing params</h2>\n", f);
    TRY(html_params_body(f, db, r, ids));
    fputs("</section>\n", f);
cleanup:
    free(ids);
    return rc;
}

/* The training curves: the chart `dawnrun plot` draws, written into memory and inlined
 * without its XML prolog and namespace attribute (HTML puts <svg> in the SVG namespace
 * itself, and the page names no URL). */
static int html_plot(FILE *f, const struct report *r, const struct html_exp *h)
{
    static const char xmlns[] = " xmlns=\"http://www.w3.org/2000/svg\"";
    int rc = DR_OK;
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = NULL;
    struct plot_chart chart = {0};
    struct plot_experiment *pe = calloc((size_t)r->n + 1, sizeof *pe);
    CHECK_ALLOC(pe, "the chart");
    for (int i = 0; i < r->n; i++) {
        pe[i].label = h[i].label;
        pe[i].target = r->exps[i].target;
        pe[i].runs = h[i].plot_runs;
        pe[i].n_runs = h[i].n_runs;
    }
    chart.exps = pe;
    chart.n_exps = r->n;
    mem = open_memstream(&buf, &len);
    if (!mem) FAIL(DR_ERR_NOMEM, "report: out of memory drawing the plot");
    TRY(plot_svg_write(mem, &chart));
    if (fclose(mem) != 0) {
        mem = NULL;
        FAIL(DR_ERR_NOMEM, "report: out of memory drawing the plot");
    }
    mem = NULL;
    const char *svg = buf ? strstr(buf, "<svg") : NULL;
    if (!svg) FAIL(DR_ERR_INTERNAL, "report: the plot is not an SVG document");
    const char *ns = strstr(svg, xmlns);
    fputs("<section id=\"plots\">\n<h2>Training curves</h2>\n<figure class=\"plot\">\n", f);
    if (ns) {
        fwrite(svg, 1, (size_t)(ns - svg), f);
        fputs(ns + sizeof xmlns - 1, f);
    } else {
        fputs(svg, f);
    }
    fputs("</figure>\n</section>\n", f);
cleanup:
    if (mem) fclose(mem);
    free(buf);
    free(pe);
    return rc;
}

/* One number of an epoch table: fixed decimals; NaN and infinities as words. */
static void html_cell(FILE *f, int prec, double v)
{
    if (isnan(v)) fputs("<td>nan</td>", f);
    else if (isinf(v)) fputs(v > 0 ? "<td>inf</td>" : "<td>-inf</td>", f);
    else fprintf(f, "<td>%.*f</td>", prec, v);
}

/* Each run of each experiment: a <details> holding its epoch table (the columns of
 * `dawnrun show`). */
static void html_runs(FILE *f, const struct report *r, const struct html_exp *h)
{
    char acc[32], secs[32];
    fputs("<section id=\"runs\">\n<h2>Runs</h2>\n", f);
    for (int i = 0; i < r->n; i++) {
        fprintf(f, "<h3>#%d ", i + 1);
        html_text(f, r->exps[i].x.name ? r->exps[i].x.name : "?");
        fprintf(f, " <span class=\"note\">(%d run%s)</span></h3>\n", h[i].n_runs,
                h[i].n_runs == 1 ? "" : "s");
        if (r->exps[i].x.notes && r->exps[i].x.notes[0]) {
            fputs("<p class=\"note\">", f);
            html_text(f, r->exps[i].x.notes);
            fputs("</p>\n", f);
        }
        for (int k = 0; k < h[i].n_runs; k++) {
            const struct results_run *run = &h[i].runs[k];
            report_fmt_pct(acc, sizeof acc, run->final_test_acc);
            report_fmt_secs(secs, sizeof secs, run->train_time);
            fprintf(f, "<details class=\"run\" data-run=\"%lld\"><summary>seed %llu: %s, "
                    "%d epoch%s, test accuracy ", (long long)run->id,
                    (unsigned long long)run->seed, results_status_name(run->status),
                    h[i].n_epochs[k], h[i].n_epochs[k] == 1 ? "" : "s");
            html_text(f, acc);
            fputs(", train time ", f);
            html_text(f, secs);
            fputs("</summary>\n", f);
            if (run->error && run->error[0]) {
                fputs("<p class=\"note\">", f);
                html_text(f, run->error);
                fputs("</p>\n", f);
            }
            if (h[i].n_epochs[k] == 0) {
                fputs("<p class=\"note\">No epochs recorded.</p>\n</details>\n", f);
                continue;
            }
            fputs("<div class=\"scroll\"><table class=\"epochs\">\n<thead><tr><th>epoch</th>"
                  "<th>lr</th><th>train time</th><th>train loss</th><th>train acc</th>"
                  "<th>test time</th><th>test loss</th><th>test acc</th><th>total time</th>"
                  "</tr></thead>\n<tbody>\n", f);
            for (int e = 0; e < h[i].n_epochs[k]; e++) {
                const struct results_epoch *ep = &h[i].epochs[k][e];
                fprintf(f, "<tr><td>%d</td>", ep->epoch);
                html_cell(f, ep->lr < 1e4 ? 4 : 0, ep->lr);
                html_cell(f, 2, ep->train_time);
                html_cell(f, 4, ep->train_loss);
                html_cell(f, 4, ep->train_acc);
                html_cell(f, 2, ep->test_time);
                html_cell(f, 4, ep->test_loss);
                html_cell(f, 4, ep->test_acc);
                html_cell(f, 2, ep->total_time);
                fputs("</tr>\n", f);
            }
            fputs("</tbody></table></div>\n</details>\n", f);
        }
    }
    fputs("</section>\n", f);
}

int report_write_html(FILE *f, struct results *db, const struct report *r)
{
    int rc = DR_OK;
    struct html_exp *h = calloc((size_t)r->n + 1, sizeof *h);
    CHECK_ALLOC(h, "the page");
    for (int i = 0; i < r->n; i++) TRY(load_exp(&h[i], db, r, i));
    html_head(f, r);
    TRY(html_summary(f, r));
    TRY(report_decisions_write(f, r, REPORT_HTML));
    TRY(html_params(f, db, r));
    if (r->n > 0) TRY(html_plot(f, r, h));
    html_runs(f, r, h);
    fputs("</main>\n</body>\n</html>\n", f);
cleanup:
    html_exps_free(h, r->n);
    return rc;
}

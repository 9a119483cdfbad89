/* Training curves as SVG (see plot_svg.h): layout, axes with "nice" ticks fitted to what
 * is drawn, the lines and bands of each panel (their points from plot_series.c), the
 * strip of every run's final accuracy under them, the legend with its labels wrapped,
 * and XML escaping of every piece of user text. */
#include "plot_svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "base/utf8.h"
#include "plot_series.h"

/* ---- layout (SVG user units = CSS pixels) --------------------------------------------- */

#define WIDTH 1000
#define MARGIN_LEFT 78         /* y tick labels and the rotated axis title */
#define PLOT_W 590
#define PLOT_TOP 60            /* below the title and the caption */
#define PANEL_H 190
#define PANEL_GAP 26
#define MARGIN_BOTTOM 50       /* x tick labels and the x axis title */
#define LEGEND_X (MARGIN_LEFT + PLOT_W + 30)
#define LEGEND_ROW 20          /* between legend entries */
#define LEGEND_LINE 15         /* between the lines of one entry */
#define LEGEND_CHARS 40        /* characters per legend line: longer labels wrap */
#define MARKER_MAX_POINTS 40   /* lines of at most this many points get a dot per point */
#define TITLE_CHARS 90         /* the visible title (the full one is the document's) */
#define STRIP_GAP 24           /* between the curves' x axis title and the strip's title */
#define STRIP_HEAD 22          /* the strip's title above its frame */
#define STRIP_ROW 26           /* one experiment's row of points */
#define STRIP_REACH_W 96       /* right of the frame: "4/5 >= 94 %" */

static const char *const palette[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};
#define N_COLOURS ((int)(sizeof palette / sizeof palette[0]))

static const char *const panel_key[PLOT_N_PANELS] = {"acc", "loss", "lr"};
static const char *const panel_title[PLOT_N_PANELS] = {
    "test accuracy (%)", "train loss", "learning rate",
};

static double panel_top(int p)
{
    return PLOT_TOP + p * (PANEL_H + PANEL_GAP);
}

/* ---- XML text -------------------------------------------------------------------------- */

/* Length of the valid UTF-8 sequence at s (utf8_decode) that encodes a character XML
 * allows, or 0. */
static int utf8_char(const unsigned char *s)
{
    uint32_t cp;
    int n = utf8_decode(&cp, (const char *)s);
    if (n == 0) return 0;
    if (cp < 0x20) return (cp == '\t' || cp == '\n' || cp == '\r') ? 1 : 0;
    if (cp == 0xfffe || cp == 0xffff) return 0;
    return n;
}

/* Writes the first len bytes of s as XML character data or attribute text: markup
 * characters escaped, control characters and line breaks as spaces, invalid UTF-8 as
 * U+FFFD; at most max_chars characters (0 = all), a cut marked with an ellipsis. */
static void xml_text_n(FILE *f, const char *str, size_t len, int max_chars)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    const unsigned char *end = s + (str ? len : 0);
    for (int count = 0; s < end; count++) {
        if (max_chars > 0 && count == max_chars) {
            fputs("\xe2\x80\xa6", f);
            return;
        }
        int n = utf8_char(s);
        if (n == 0 || s + n > end) {
            fputs(*s < 0x20 ? " " : UTF8_REPLACEMENT, f);
            s++;
            continue;
        }
        switch (*s) {
        case '&': fputs("&amp;", f); break;
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&apos;", f); break;
        case '\t': case '\n': case '\r': fputc(' ', f); break;
        default: fwrite(s, 1, (size_t)n, f);
        }
        s += n;
    }
}

static void xml_text(FILE *f, const char *str, int max_chars)
{
    xml_text_n(f, str, str ? strlen(str) : 0, max_chars);
}

/* The byte length of the next legend line of s (len bytes left): at most LEGEND_CHARS
 * characters, broken after the last space that fits (the space kept at the end of the
 * line), preferring one between two settings ("k1=v1 k2=v2") to one after a comma inside
 * a list value unless that leaves the line less than half full, or at LEGEND_CHARS
 * characters when no space fits; the whole rest when it fits. The lines together are s,
 * byte for byte. */
static size_t wrap_line(const char *str, size_t len)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t at = 0, after_space = 0, after_pair = 0;
    for (int count = 0; at < len; count++) {
        if (count == LEGEND_CHARS) {
            if (after_pair && 2 * after_pair >= after_space) return after_pair;
            return after_space ? after_space : at;
        }
        int n = utf8_char(s + at);
        at += n > 0 ? (size_t)n : 1;
        if (s[at - 1] == ' ') {
            after_space = at;
            if (at >= 2 && s[at - 2] != ',') after_pair = at;
        }
    }
    return len;
}

/* ---- axes ------------------------------------------------------------------------------- */

struct axis {
    double lo, hi, step;
    int decimals;          /* of the tick labels */
};

/* Fits a range with round ticks around [lo, hi] (about `ticks` of them); whole steps
 * when `integer`. An empty or degenerate range is widened. */
static void axis_fit(struct axis *a, double lo, double hi, int ticks, int integer)
{
    if (!(lo <= hi) || !isfinite(lo) || !isfinite(hi)) {
        lo = 0.0;
        hi = 1.0;
    }
    if (hi - lo < 1e-12 * (fabs(lo) + fabs(hi)) || hi == lo) {
        double pad = lo != 0.0 ? 0.05 * fabs(lo) : 0.5;
        lo -= pad;
        hi += pad;
    }
    double raw = (hi - lo) / ticks;
    double mag = pow(10.0, floor(log10(raw)));
    double norm = raw / mag, mult;
    if (norm <= 1.0) mult = 1.0;
    else if (norm <= 2.0) mult = 2.0;
    else if (norm <= 2.5) mult = 2.5;
    else if (norm <= 5.0) mult = 5.0;
    else mult = 10.0;
    a->step = mult * mag;
    if (integer && a->step < 1.0) a->step = 1.0;
    if (integer) a->step = round(a->step);
    a->lo = floor(lo / a->step + 1e-9) * a->step;
    a->hi = ceil(hi / a->step - 1e-9) * a->step;
    if (a->hi <= a->lo) a->hi = a->lo + a->step;
    int d = (int)-floor(log10(a->step) + 1e-9);
    if (mult == 2.5 && !integer) d++;
    a->decimals = d > 0 ? d : 0;
}

static double axis_frac(const struct axis *a, double v)
{
    return (v - a->lo) / (a->hi - a->lo);
}

static double px(const struct axis *x, double v)
{
    return MARGIN_LEFT + axis_frac(x, v) * PLOT_W;
}

static double py(const struct axis *y, int panel, double v)
{
    return panel_top(panel) + PANEL_H - axis_frac(y, v) * PANEL_H;
}

/* ---- the lines of a panel ------------------------------------------------------------- */

enum series_kind { SERIES_RUN, SERIES_MEDIAN, SERIES_SCHEDULE };

/* Called for each line drawn in a panel, with its points (n >= 1). */
typedef int (*series_fn)(void *ctx, const struct plot_chart *c, int exp, int run,
                         enum series_kind kind, int panel, const struct plot_point *pts,
                         int n);

/* Calls fn for every line of panel p, experiment by experiment: the schedule in the LR
 * panel of an experiment that has one, else the median or each run (by c->style); a line
 * without a point is skipped. */
static int each_series(const struct plot_chart *c, int p, series_fn fn, void *ctx)
{
    int rc = DR_OK, n = 0;
    struct plot_point *pts = NULL;
    for (int i = 0; i < c->n_exps; i++) {
        const struct plot_experiment *e = &c->exps[i];
        if (p == PLOT_LR && e->n_lr > 0) {
            TRY(plot_series_schedule(&pts, &n, e, c->x));
            if (n > 0) TRY(fn(ctx, c, i, -1, SERIES_SCHEDULE, p, pts, n));
        } else if (c->style == PLOT_STYLE_MEDIAN) {
            TRY(plot_series_median(&pts, &n, e, (enum plot_panel)p, c->x));
            if (n > 0) TRY(fn(ctx, c, i, -1, SERIES_MEDIAN, p, pts, n));
        } else {
            for (int r = 0; r < e->n_runs; r++) {
                TRY(plot_series_run(&pts, &n, &e->runs[r], (enum plot_panel)p, c->x));
                if (n > 0) TRY(fn(ctx, c, i, r, SERIES_RUN, p, pts, n));
                free(pts);
                pts = NULL;
            }
        }
        free(pts);
        pts = NULL;
    }
cleanup:
    free(pts);
    return rc;
}

/* The data ranges of every panel and of the x axis. */
struct ranges {
    double x_hi;
    double lo[PLOT_N_PANELS], hi[PLOT_N_PANELS];
};

static int range_of(void *ctx, const struct plot_chart *c, int exp, int run,
                    enum series_kind kind, int panel, const struct plot_point *pts, int n)
{
    struct ranges *g = ctx;
    (void)c, (void)exp, (void)run, (void)kind;
    for (int k = 0; k < n; k++) {
        g->x_hi = fmax(g->x_hi, pts[k].x);
        g->lo[panel] = fmin(g->lo[panel], fmin(pts[k].y, pts[k].lo));
        g->hi[panel] = fmax(g->hi[panel], fmax(pts[k].y, pts[k].hi));
    }
    return DR_OK;
}

/* Fits the axes to everything drawn (and, for accuracy, the targets). */
static int fit_axes(struct axis *x, struct axis *y, const struct plot_chart *c)
{
    int rc = DR_OK;
    struct ranges g;
    g.x_hi = c->x == PLOT_X_TIME ? 0.0 : 1.0;
    for (int p = 0; p < PLOT_N_PANELS; p++) {
        g.lo[p] = INFINITY;
        g.hi[p] = -INFINITY;
    }
    for (int p = 0; p < PLOT_N_PANELS; p++) TRY(each_series(c, p, range_of, &g));
    for (int i = 0; i < c->n_exps; i++)
        if (isfinite(c->exps[i].target)) {
            g.lo[PLOT_ACC] = fmin(g.lo[PLOT_ACC], 100.0 * c->exps[i].target);
            g.hi[PLOT_ACC] = fmax(g.hi[PLOT_ACC], 100.0 * c->exps[i].target);
        }
    if (c->x == PLOT_X_TIME) axis_fit(x, 0.0, g.x_hi > 0.0 ? g.x_hi : 1.0, 10, 0);
    else axis_fit(x, 0.0, ceil(g.x_hi), 10, 1);
    for (int p = 0; p < PLOT_N_PANELS; p++) {
        if (!isfinite(g.lo[p])) {   /* nothing to draw: a plain default range */
            g.lo[p] = 0.0;
            g.hi[p] = p == PLOT_ACC ? 100.0 : 1.0;
        }
        if (p != PLOT_ACC && g.lo[p] > 0.0) g.lo[p] = 0.0;   /* loss, lr: from zero */
        axis_fit(&y[p], g.lo[p], g.hi[p], 5, 0);
    }
cleanup:
    return rc;
}

/* Grid lines, tick labels and the axis title of one panel, and the frame. */
static void write_axes(FILE *f, const struct plot_chart *c, int p, const struct axis *x,
                       const struct axis *y, int bottom)
{
    double top = panel_top(p), base = top + PANEL_H;
    fprintf(f, "<g class=\"axes\">\n");
    for (double v = y->lo; v <= y->hi + 1e-9 * y->step; v += y->step) {
        double yy = py(y, p, v);
        fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#e3e3e3\"/>\n",
                MARGIN_LEFT, yy, MARGIN_LEFT + PLOT_W, yy);
        fprintf(f, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\">%.*f</text>\n",
                MARGIN_LEFT - 6, yy + 4, y->decimals, fabs(v) < 1e-12 * y->step ? 0.0 : v);
    }
    for (double v = x->lo; v <= x->hi + 1e-9 * x->step; v += x->step) {
        double xx = px(x, v);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e3e3e3\"/>\n",
                xx, top, xx, base);
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#444444\"/>\n",
                xx, base, xx, base + 4);
        if (bottom)
            fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%.*f</text>\n", xx,
                    base + 18, x->decimals, v);
    }
    fprintf(f, "<text transform=\"translate(18 %.2f) rotate(-90)\" text-anchor=\"middle\">"
            "%s</text>\n", top + PANEL_H / 2.0, panel_title[p]);
    if (bottom)
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%s</text>\n",
                MARGIN_LEFT + PLOT_W / 2.0, base + 38,
                c->x == PLOT_X_TIME ? "train time (s)" : "epoch");
    fprintf(f, "<rect class=\"frame\" x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%d\" "
            "fill=\"none\" stroke=\"#444444\"/>\n</g>\n", MARGIN_LEFT, top, PLOT_W, PANEL_H);
}

/* Runs of e with at least one epoch row. */
static int runs_with_epochs(const struct plot_experiment *e)
{
    int n = 0;
    for (int r = 0; r < e->n_runs; r++) n += e->runs[r].n_epochs > 0;
    return n;
}

/* What the line writers need besides the chart. */
struct draw {
    FILE *f;
    const struct axis *x, *y;
    int bands;   /* 1: this pass draws the bands, 0: the lines */
};

/* The interquartile band of a median line: the upper quartile left to right, then the
 * lower one back. */
static void write_band(FILE *f, const struct draw *d, int exp, int panel,
                       const struct plot_point *pts, int n)
{
    fprintf(f, "<polygon class=\"band\" data-experiment=\"%d\" data-panel=\"%s\" fill=\"%s\" "
            "fill-opacity=\"0.2\" stroke=\"none\" points=\"", exp, panel_key[panel],
            palette[exp % N_COLOURS]);
    for (int k = 0; k < n; k++)
        fprintf(f, "%s%.2f,%.2f", k ? " " : "", px(d->x, pts[k].x), py(d->y, panel, pts[k].hi));
    for (int k = n - 1; k >= 0; k--)
        fprintf(f, " %.2f,%.2f", px(d->x, pts[k].x), py(d->y, panel, pts[k].lo));
    fputs("\"/>\n", f);
}

static int write_series(void *ctx, const struct plot_chart *c, int exp, int run,
                        enum series_kind kind, int panel, const struct plot_point *pts, int n)
{
    const struct draw *d = ctx;
    FILE *f = d->f;
    const struct plot_experiment *e = &c->exps[exp];
    const char *colour = palette[exp % N_COLOURS];
    if (d->bands) {
        if (kind == SERIES_MEDIAN) write_band(f, d, exp, panel, pts, n);
        return DR_OK;
    }
    if (kind == SERIES_RUN)
        fprintf(f, "<polyline class=\"run\" data-experiment=\"%d\" data-seed=\"%llu\" ", exp,
                (unsigned long long)e->runs[run].seed);
    else if (kind == SERIES_MEDIAN)
        fprintf(f, "<polyline class=\"median\" data-experiment=\"%d\" data-runs=\"%d\" "
                "stroke-width=\"2\" ", exp, runs_with_epochs(e));
    else
        fprintf(f, "<polyline class=\"schedule\" data-experiment=\"%d\" ", exp);
    fprintf(f, "data-panel=\"%s\" stroke=\"%s\" points=\"", panel_key[panel], colour);
    for (int k = 0; k < n; k++)
        fprintf(f, "%s%.2f,%.2f", k ? " " : "", px(d->x, pts[k].x), py(d->y, panel, pts[k].y));
    fputs("\"><title>", f);
    xml_text(f, e->label, 0);
    if (kind == SERIES_RUN)
        fprintf(f, ", seed %llu", (unsigned long long)e->runs[run].seed);
    else if (kind == SERIES_MEDIAN)
        fprintf(f, ", median of %d run%s", runs_with_epochs(e),
                runs_with_epochs(e) == 1 ? "" : "s");
    else
        fputs(", learning rate per step", f);
    fputs("</title></polyline>\n", f);
    if (kind == SERIES_SCHEDULE || n > MARKER_MAX_POINTS) return DR_OK;
    for (int k = 0; k < n; k++)
        fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2\" fill=\"%s\" stroke=\"none\"/>\n",
                px(d->x, pts[k].x), py(d->y, panel, pts[k].y), colour);
    return DR_OK;
}

/* The bands, then the lines (and dots) of panel p. */
static int write_lines(FILE *f, const struct plot_chart *c, int p, const struct axis *x,
                       const struct axis *y)
{
    int rc = DR_OK;
    struct draw d = {f, x, y, 1};
    if (c->style == PLOT_STYLE_MEDIAN) {
        fputs("<g class=\"bands\">\n", f);
        TRY(each_series(c, p, write_series, &d));
        fputs("</g>\n", f);
    }
    d.bands = 0;
    fprintf(f, "<g class=\"runs\" fill=\"none\" stroke-width=\"1.5\" stroke-opacity=\"0.8\">\n");
    TRY(each_series(c, p, write_series, &d));
    fputs("</g>\n", f);
cleanup:
    return rc;
}

/* Whether experiment i's target was already drawn by an earlier experiment. */
static int target_seen(const struct plot_chart *c, int i)
{
    for (int k = 0; k < i; k++)
        if (c->exps[k].target == c->exps[i].target) return 1;
    return 0;
}

/* The dashed target lines of the accuracy panel, labelled (side by side, right to left,
 * so that close targets do not print over each other). */
static void write_targets(FILE *f, const struct plot_chart *c, const struct axis *y)
{
    for (int i = 0, k = 0; i < c->n_exps; i++) {
        double t = c->exps[i].target;
        if (!isfinite(t) || target_seen(c, i)) continue;
        double yy = py(y, PLOT_ACC, 100.0 * t);
        fprintf(f, "<line class=\"target\" x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" "
                "stroke=\"#000000\" stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>\n",
                MARGIN_LEFT, yy, MARGIN_LEFT + PLOT_W, yy);
        /* the label above the line, or below it when the line runs along the top */
        double ty = yy - 4 < panel_top(PLOT_ACC) + 12 ? yy + 13 : yy - 4;
        fprintf(f, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" font-size=\"11\">"
                "target %g %%</text>\n", MARGIN_LEFT + PLOT_W - 4 - 80 * (k++ % 6), ty,
                100.0 * t);
    }
}

/* ---- the legend ------------------------------------------------------------------------- */

/* "(5 runs)" for e. */
static void runs_text(char *buf, size_t size, const struct plot_experiment *e)
{
    int n = runs_with_epochs(e);
    snprintf(buf, size, "%d run%s", n, n == 1 ? "" : "s");
}

/* The legend text of e, "LABEL (N runs)", malloc'd; NULL when out of memory. */
static char *entry_text(const struct plot_experiment *e)
{
    char runs[32];
    runs_text(runs, sizeof runs, e);
    const char *label = e->label ? e->label : "";
    size_t len = strlen(label) + strlen(runs) + 4;
    char *s = malloc(len);
    if (s) snprintf(s, len, "%s (%s)", label, runs);
    return s;
}

/* The number of legend lines of text s. */
static int entry_lines(const char *s)
{
    int lines = 0;
    for (size_t left = strlen(s); left > 0 || lines == 0; lines++) {
        size_t n = wrap_line(s, left);
        s += n;
        left -= n;
        if (n == 0) break;
    }
    return lines;
}

/* The notes under the entries: how to read the lines. */
static int legend_notes(const char **notes, const struct plot_chart *c)
{
    int n = 0, schedule = 0;
    for (int i = 0; i < c->n_exps; i++) schedule |= c->exps[i].n_lr > 0;
    if (c->style == PLOT_STYLE_MEDIAN) {
        notes[n++] = "line: median over the runs";
        notes[n++] = "band: 25th to 75th percentile";
    } else {
        notes[n++] = "one line per seed";
    }
    if (schedule) notes[n++] = "learning rate: at every step";
    return n;
}

/* The legend's height below PLOT_TOP, for the document's height. */
static int legend_height(double *h, const struct plot_chart *c)
{
    int rc = DR_OK;
    const char *notes[4];
    char *text = NULL;
    *h = 12.0;
    for (int i = 0; i < c->n_exps; i++) {
        text = entry_text(&c->exps[i]);
        CHECK_ALLOC(text, "a legend entry");
        *h += LEGEND_ROW + (entry_lines(text) - 1) * LEGEND_LINE;
        free(text);
        text = NULL;
    }
    *h += (2 + legend_notes(notes, c)) * LEGEND_ROW;
cleanup:
    free(text);
    return rc;
}

/* One entry: the swatch, then the text in lines of at most LEGEND_CHARS characters. */
static int write_entry(FILE *f, const struct plot_chart *c, int i, double *y)
{
    int rc = DR_OK;
    char *text = entry_text(&c->exps[i]);
    CHECK_ALLOC(text, "a legend entry");
    fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"%s\" "
            "stroke-width=\"3\"/>\n", LEGEND_X, *y - 4, LEGEND_X + 22, *y - 4,
            palette[i % N_COLOURS]);
    if (c->style == PLOT_STYLE_MEDIAN)
        fprintf(f, "<rect x=\"%d\" y=\"%.2f\" width=\"22\" height=\"10\" fill=\"%s\" "
                "fill-opacity=\"0.2\"/>\n", LEGEND_X, *y - 9, palette[i % N_COLOURS]);
    fprintf(f, "<text class=\"label\" data-experiment=\"%d\" x=\"%d\" y=\"%.2f\">", i,
            LEGEND_X + 28, *y);
    const char *s = text;
    size_t left = strlen(text);
    for (int line = 0; left > 0; line++) {
        size_t n = wrap_line(s, left);
        fprintf(f, "<tspan x=\"%d\" dy=\"%d\">", LEGEND_X + 28, line ? LEGEND_LINE : 0);
        xml_text_n(f, s, n, 0);
        fputs("</tspan>", f);
        s += n;
        left -= n;
        if (line) *y += LEGEND_LINE;
    }
    fputs("</text>\n", f);
    *y += LEGEND_ROW;
cleanup:
    free(text);
    return rc;
}

/* The legend: a colour swatch and the label of each experiment, the target, the notes. */
static int write_legend(FILE *f, const struct plot_chart *c)
{
    int rc = DR_OK, any_target = 0;
    double y = PLOT_TOP + 12;
    const char *notes[4];
    fprintf(f, "<g class=\"legend\">\n");
    for (int i = 0; i < c->n_exps; i++) {
        any_target |= isfinite(c->exps[i].target);
        TRY(write_entry(f, c, i, &y));
    }
    if (any_target) {
        fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#000000\" "
                "stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>\n", LEGEND_X, y - 4,
                LEGEND_X + 22, y - 4);
        fprintf(f, "<text x=\"%d\" y=\"%.2f\">target accuracy</text>\n", LEGEND_X + 28, y);
        y += LEGEND_ROW;
    }
    int n = legend_notes(notes, c);
    for (int k = 0; k < n; k++, y += LEGEND_LINE)
        fprintf(f, "<text x=\"%d\" y=\"%.2f\" fill=\"#555555\">%s</text>\n", LEGEND_X, y,
                notes[k]);
    fputs("</g>\n", f);
cleanup:
    return rc;
}

/* ---- the strip of final accuracies ------------------------------------------------------ */

/* 1 when some run of c has a final accuracy. */
static int any_final(const struct plot_chart *c)
{
    for (int i = 0; i < c->n_exps; i++)
        for (int r = 0; r < c->exps[i].n_runs; r++)
            if (c->exps[i].runs[r].has_final && isfinite(c->exps[i].runs[r].final_acc))
                return 1;
    return 0;
}

/* The top of the strip's frame and its height. */
static double strip_top(void)
{
    return panel_top(PLOT_N_PANELS - 1) + PANEL_H + MARGIN_BOTTOM + STRIP_GAP + STRIP_HEAD;
}

static double strip_height(const struct plot_chart *c)
{
    return STRIP_ROW * (c->n_exps > 0 ? c->n_exps : 1) + 8;
}

/* The whole height the strip adds under the curves (0 without final accuracies). */
static double strip_extent(const struct plot_chart *c)
{
    if (!any_final(c)) return 0.0;
    return STRIP_GAP + STRIP_HEAD + strip_height(c) + MARGIN_BOTTOM;
}

/* Every run's final accuracy per experiment as points on an accuracy axis, one row per
 * experiment in its colour, with its target and how many runs reach it: what "4 of 5
 * reach 94 %" looks like. */
static void write_strip(FILE *f, const struct plot_chart *c)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < c->n_exps; i++) {
        const struct plot_experiment *e = &c->exps[i];
        for (int r = 0; r < e->n_runs; r++)
            if (e->runs[r].has_final && isfinite(e->runs[r].final_acc)) {
                lo = fmin(lo, 100.0 * e->runs[r].final_acc);
                hi = fmax(hi, 100.0 * e->runs[r].final_acc);
            }
        if (isfinite(e->target)) {
            lo = fmin(lo, 100.0 * e->target);
            hi = fmax(hi, 100.0 * e->target);
        }
    }
    struct axis x;
    axis_fit(&x, lo, hi, 6, 0);
    double top = strip_top(), h = strip_height(c), base = top + h;
    int width = PLOT_W - STRIP_REACH_W;
    fprintf(f, "<g class=\"panel\" id=\"panel-final\" data-x-lo=\"%.17g\" "
            "data-x-hi=\"%.17g\">\n", x.lo, x.hi);
    fprintf(f, "<text x=\"%d\" y=\"%.2f\" font-weight=\"bold\">final test accuracy of each "
            "run (%%)</text>\n", MARGIN_LEFT, top - 8);
    for (double v = x.lo; v <= x.hi + 1e-9 * x.step; v += x.step) {
        double xx = MARGIN_LEFT + axis_frac(&x, v) * width;
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e3e3e3\"/>\n",
                xx, top, xx, base);
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%.*f</text>\n", xx,
                base + 18, x.decimals, v);
    }
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">test accuracy (%%)</text>\n",
            MARGIN_LEFT + width / 2.0, base + 38);
    fprintf(f, "<rect class=\"frame\" x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%.0f\" "
            "fill=\"none\" stroke=\"#444444\"/>\n", MARGIN_LEFT, top, width, h);
    for (int i = 0; i < c->n_exps; i++) {
        const struct plot_experiment *e = &c->exps[i];
        const char *colour = palette[i % N_COLOURS];
        double row = top + 4 + STRIP_ROW * i, mid = row + STRIP_ROW / 2.0;
        int drawn = 0, reach = 0;
        for (int r = 0; r < e->n_runs; r++) {
            if (!e->runs[r].has_final || !isfinite(e->runs[r].final_acc)) continue;
            drawn++;
            reach += isfinite(e->target) && e->runs[r].final_acc >= e->target;
        }
        fprintf(f, "<g class=\"strip\" data-experiment=\"%d\" data-reach=\"%d/%d\">\n", i,
                reach, drawn);
        fprintf(f, "<text x=\"%d\" y=\"%.2f\" text-anchor=\"end\" fill=\"%s\">#%d</text>\n",
                MARGIN_LEFT - 6, mid + 4, colour, i + 1);
        if (isfinite(e->target)) {
            double tx = MARGIN_LEFT + axis_frac(&x, 100.0 * e->target) * width;
            fprintf(f, "<line class=\"strip-target\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" "
                    "y2=\"%.2f\" stroke=\"#000000\" stroke-width=\"1.2\" "
                    "stroke-dasharray=\"4 3\"/>\n", tx, row + 1, tx, row + STRIP_ROW - 1);
        }
        for (int r = 0, k = 0; r < e->n_runs; r++) {
            const struct plot_run *run = &e->runs[r];
            if (!run->has_final || !isfinite(run->final_acc)) continue;
            /* a small fixed vertical offset per point, so that equal values stay apart */
            double cx = MARGIN_LEFT + axis_frac(&x, 100.0 * run->final_acc) * width;
            double cy = mid + 3.0 * ((k++ % 5) - 2);
            char acc[32];
            for (int digits = 15; digits <= 17; digits++) {   /* the shortest exact text */
                snprintf(acc, sizeof acc, "%.*g", digits, run->final_acc);
                if (strtod(acc, NULL) == run->final_acc) break;
            }
            fprintf(f, "<circle class=\"final\" data-experiment=\"%d\" data-seed=\"%llu\" "
                    "data-acc=\"%s\" cx=\"%.2f\" cy=\"%.2f\" r=\"3.5\" fill=\"%s\" "
                    "fill-opacity=\"0.75\" stroke=\"%s\"><title>seed %llu: %.2f %%</title>"
                    "</circle>\n", i, (unsigned long long)run->seed, acc, cx, cy, colour,
                    colour, (unsigned long long)run->seed, 100.0 * run->final_acc);
        }
        char target[32];
        if (isfinite(e->target)) snprintf(target, sizeof target, " ≥ %g %%", 100.0 * e->target);
        else target[0] = '\0';
        if (isfinite(e->target))
            fprintf(f, "<text x=\"%d\" y=\"%.2f\">%d/%d%s</text>\n", MARGIN_LEFT + width + 8,
                    mid + 4, reach, drawn, target);
        else
            fprintf(f, "<text x=\"%d\" y=\"%.2f\">%d run%s</text>\n", MARGIN_LEFT + width + 8,
                    mid + 4, drawn, drawn == 1 ? "" : "s");
        fputs("</g>\n", f);
    }
    fputs("</g>\n", f);
}

/* ---- the document ----------------------------------------------------------------------- */

/* DR_OK when every count and array of c is usable; *any = 1 when a run has epochs. */
static int check_chart(const struct plot_chart *c, int *any)
{
    int rc = DR_OK;
    *any = 0;
    if (!c || c->n_exps < 0 || (c->n_exps > 0 && !c->exps))
        FAIL(DR_ERR_INTERNAL, "plot: malformed chart");
    if ((c->style != PLOT_STYLE_SEEDS && c->style != PLOT_STYLE_MEDIAN) ||
        (c->x != PLOT_X_EPOCH && c->x != PLOT_X_TIME))
        FAIL(DR_ERR_INTERNAL, "plot: unknown style %d or x axis %d", (int)c->style, (int)c->x);
    for (int i = 0; i < c->n_exps; i++) {
        const struct plot_experiment *e = &c->exps[i];
        if (e->n_runs < 0 || (e->n_runs > 0 && !e->runs) || e->n_lr < 0 ||
            (e->n_lr > 0 && (!e->lr_epoch || !e->lr)))
            FAIL(DR_ERR_INTERNAL, "plot: malformed experiment %d", i);
        for (int r = 0; r < e->n_runs; r++) {
            const struct plot_run *run = &e->runs[r];
            if (run->n_epochs < 0 || (run->n_epochs > 0 && !run->epochs))
                FAIL(DR_ERR_INTERNAL, "plot: malformed run %d of experiment %d", r, i);
            *any |= run->n_epochs > 0;
        }
    }
cleanup:
    return rc;
}

int plot_svg_write(FILE *f, const struct plot_chart *c)
{
    int rc = DR_OK;
    struct axis x, y[PLOT_N_PANELS];
    int any = 0;
    double legend_h;
    const char *title = c && c->title ? c->title : "dawnrun training curves";
    TRY(check_chart(c, &any));
    TRY(fit_axes(&x, y, c));
    /* the legend may be taller than the panels */
    TRY(legend_height(&legend_h, c));
    double panels_h = panel_top(PLOT_N_PANELS - 1) + PANEL_H + MARGIN_BOTTOM + strip_extent(c);
    int height = (int)ceil(fmax(panels_h, PLOT_TOP + legend_h + 10));

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, "
            "sans-serif\" font-size=\"12\" fill=\"#222222\">\n", WIDTH, height, WIDTH, height);
    fputs("<title>", f);
    xml_text(f, title, 0);
    fputs("</title>\n", f);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", WIDTH,
            height);
    fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"15\" font-weight=\"bold\">", MARGIN_LEFT);
    xml_text(f, title, TITLE_CHARS);
    fputs("</text>\n", f);
    if (c->caption) {
        fprintf(f, "<text class=\"caption\" x=\"%d\" y=\"46\" fill=\"#555555\">", MARGIN_LEFT);
        xml_text(f, c->caption, 0);
        fputs("</text>\n", f);
    }
    for (int p = 0; p < PLOT_N_PANELS; p++) {
        fprintf(f, "<g class=\"panel\" id=\"panel-%s\" data-x-lo=\"%.17g\" data-x-hi=\"%.17g\" "
                "data-y-lo=\"%.17g\" data-y-hi=\"%.17g\">\n", panel_key[p], x.lo, x.hi,
                y[p].lo, y[p].hi);
        write_axes(f, c, p, &x, &y[p], p == PLOT_N_PANELS - 1);
        TRY(write_lines(f, c, p, &x, &y[p]));
        if (p == PLOT_ACC) write_targets(f, c, &y[p]);
        if (p == PLOT_ACC && !any)
            fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" fill=\"#555555\">"
                    "no epochs recorded yet</text>\n", MARGIN_LEFT + PLOT_W / 2.0,
                    panel_top(p) + PANEL_H / 2.0);
        fputs("</g>\n", f);
    }
    if (any_final(c)) write_strip(f, c);
    TRY(write_legend(f, c));
    fputs("</svg>\n", f);
cleanup:
    return rc;
}

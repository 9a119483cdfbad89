/* Training curves as SVG (see plot_svg.h): layout, axes with "nice" ticks, one polyline
 * per run and panel, the legend, and XML escaping of every piece of user text. */
#include "plot_svg.h"

#include <math.h>
#include <string.h>

#include "base/status.h"
#include "engine/utf8.h"

/* ---- layout (SVG user units = CSS pixels) --------------------------------------------- */

#define WIDTH 1000
#define MARGIN_LEFT 78         /* y tick labels and the rotated axis title */
#define PLOT_W 590
#define PLOT_TOP 52            /* below the title */
#define PANEL_H 190
#define PANEL_GAP 26
#define MARGIN_BOTTOM 50       /* x tick labels and "epoch" */
#define LEGEND_X (MARGIN_LEFT + PLOT_W + 30)
#define LEGEND_ROW 20
#define LEGEND_CHARS 30        /* a longer label is cut (the full one is its tooltip) */
#define MARKER_MAX_POINTS 40   /* runs with at most this many epochs get a dot per epoch */

static const char *const palette[] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
    "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf",
};
#define N_COLOURS ((int)(sizeof palette / sizeof palette[0]))

static const char *const panel_key[PLOT_N_PANELS] = {"acc", "loss", "lr"};
static const char *const panel_title[PLOT_N_PANELS] = {
    "test accuracy (%)", "train loss", "learning rate",
};

/* The value a panel plots for one epoch row (accuracy in percent). */
static double panel_value(enum plot_panel p, const struct results_epoch *e)
{
    switch (p) {
    case PLOT_ACC: return 100.0 * e->test_acc;
    case PLOT_LOSS: return e->train_loss;
    case PLOT_LR: return e->lr;
    default: return NAN;
    }
}

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

/* Writes s as XML character data or attribute text: markup characters escaped, control
 * characters and line breaks as spaces, invalid UTF-8 as U+FFFD; at most max_chars
 * characters (0 = all), a cut marked with an ellipsis. */
static void xml_text(FILE *f, const char *str, int max_chars)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    for (int count = 0; *s; count++) {
        if (max_chars > 0 && count == max_chars) {
            fputs("\xe2\x80\xa6", f);
            return;
        }
        int n = utf8_char(s);
        if (n == 0) {
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

/* Number of characters (code points, invalid bytes counted singly) of s. */
static int text_chars(const char *str)
{
    int count = 0;
    for (const unsigned char *s = (const unsigned char *)(str ? str : ""); *s; count++) {
        int n = utf8_char(s);
        s += n > 0 ? n : 1;
    }
    return count;
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

/* The data range of a panel over every finite value (and, for accuracy, the targets). */
static void panel_range(const struct plot_chart *c, enum plot_panel p, double *lo, double *hi)
{
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int i = 0; i < c->n_exps; i++) {
        const struct plot_experiment *x = &c->exps[i];
        if (p == PLOT_ACC && isfinite(x->target)) {
            *lo = fmin(*lo, 100.0 * x->target);
            *hi = fmax(*hi, 100.0 * x->target);
        }
        for (int r = 0; r < x->n_runs; r++)
            for (int k = 0; k < x->runs[r].n_epochs; k++) {
                double v = panel_value(p, &x->runs[r].epochs[k]);
                if (!isfinite(v)) continue;
                *lo = fmin(*lo, v);
                *hi = fmax(*hi, v);
            }
    }
    if (!isfinite(*lo)) {   /* nothing to draw: a plain default range */
        *lo = 0.0;
        *hi = p == PLOT_ACC ? 100.0 : 1.0;
    }
    if (p != PLOT_ACC && *lo > 0.0) *lo = 0.0;   /* loss, lr: from zero */
}

static int max_epoch(const struct plot_chart *c)
{
    int m = 1;
    for (int i = 0; i < c->n_exps; i++)
        for (int r = 0; r < c->exps[i].n_runs; r++)
            for (int k = 0; k < c->exps[i].runs[r].n_epochs; k++)
                if (c->exps[i].runs[r].epochs[k].epoch > m) m = c->exps[i].runs[r].epochs[k].epoch;
    return m;
}

/* Grid lines, tick labels and the axis title of one panel, and the frame. */
static void write_axes(FILE *f, int p, const struct axis *x, const struct axis *y, int bottom)
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
            fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%.0f</text>\n", xx,
                    base + 18, v);
    }
    fprintf(f, "<text transform=\"translate(18 %.2f) rotate(-90)\" text-anchor=\"middle\">"
            "%s</text>\n", top + PANEL_H / 2.0, panel_title[p]);
    if (bottom)
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">epoch</text>\n",
                MARGIN_LEFT + PLOT_W / 2.0, base + 38);
    fprintf(f, "<rect x=\"%d\" y=\"%.2f\" width=\"%d\" height=\"%d\" fill=\"none\" "
            "stroke=\"#444444\"/>\n</g>\n", MARGIN_LEFT, top, PLOT_W, PANEL_H);
}

/* How many points of run r are finite in panel p. */
static int finite_points(const struct plot_run *r, enum plot_panel p)
{
    int n = 0;
    for (int k = 0; k < r->n_epochs; k++) n += isfinite(panel_value(p, &r->epochs[k]));
    return n;
}

/* The lines (and dots) of every run in panel p. */
static void write_runs(FILE *f, const struct plot_chart *c, int p, const struct axis *x,
                       const struct axis *y)
{
    fprintf(f, "<g class=\"runs\" fill=\"none\" stroke-width=\"1.5\" stroke-opacity=\"0.8\">\n");
    for (int i = 0; i < c->n_exps; i++) {
        const struct plot_experiment *e = &c->exps[i];
        const char *colour = palette[i % N_COLOURS];
        for (int r = 0; r < e->n_runs; r++) {
            const struct plot_run *run = &e->runs[r];
            int n = finite_points(run, (enum plot_panel)p);
            if (n == 0) continue;
            fprintf(f, "<polyline class=\"run\" data-experiment=\"%d\" data-seed=\"%llu\" "
                    "data-panel=\"%s\" stroke=\"%s\" points=\"", i,
                    (unsigned long long)run->seed, panel_key[p], colour);
            int first = 1;
            for (int k = 0; k < run->n_epochs; k++) {
                double v = panel_value((enum plot_panel)p, &run->epochs[k]);
                if (!isfinite(v)) continue;
                fprintf(f, "%s%.2f,%.2f", first ? "" : " ", px(x, run->epochs[k].epoch),
                        py(y, p, v));
                first = 0;
            }
            fputs("\"><title>", f);
            xml_text(f, e->label, 0);
            fprintf(f, ", seed %llu</title></polyline>\n", (unsigned long long)run->seed);
            if (run->n_epochs > MARKER_MAX_POINTS) continue;
            for (int k = 0; k < run->n_epochs; k++) {
                double v = panel_value((enum plot_panel)p, &run->epochs[k]);
                if (isfinite(v))
                    fprintf(f, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"2\" fill=\"%s\" "
                            "stroke=\"none\"/>\n", px(x, run->epochs[k].epoch), py(y, p, v),
                            colour);
            }
        }
    }
    fputs("</g>\n", f);
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

/* Runs of e with at least one epoch row. */
static int runs_with_epochs(const struct plot_experiment *e)
{
    int n = 0;
    for (int r = 0; r < e->n_runs; r++) n += e->runs[r].n_epochs > 0;
    return n;
}

/* The legend: a colour swatch and label per experiment, then the target and a note. */
static void write_legend(FILE *f, const struct plot_chart *c)
{
    double y = PLOT_TOP + 12;
    int any_target = 0;
    fprintf(f, "<g class=\"legend\">\n");
    for (int i = 0; i < c->n_exps; i++, y += LEGEND_ROW) {
        const struct plot_experiment *e = &c->exps[i];
        int n = runs_with_epochs(e);
        any_target |= isfinite(e->target);
        fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"%s\" "
                "stroke-width=\"3\"/>\n", LEGEND_X, y - 4, LEGEND_X + 22, y - 4,
                palette[i % N_COLOURS]);
        fprintf(f, "<text x=\"%d\" y=\"%.2f\">", LEGEND_X + 28, y);
        if (text_chars(e->label) > LEGEND_CHARS) {
            fputs("<title>", f);
            xml_text(f, e->label, 0);
            fputs("</title>", f);
        }
        xml_text(f, e->label, LEGEND_CHARS);
        fprintf(f, " (%d run%s)</text>\n", n, n == 1 ? "" : "s");
    }
    if (any_target) {
        fprintf(f, "<line x1=\"%d\" y1=\"%.2f\" x2=\"%d\" y2=\"%.2f\" stroke=\"#000000\" "
                "stroke-width=\"1.2\" stroke-dasharray=\"6 4\"/>\n", LEGEND_X, y - 4,
                LEGEND_X + 22, y - 4);
        fprintf(f, "<text x=\"%d\" y=\"%.2f\">target accuracy</text>\n", LEGEND_X + 28, y);
        y += LEGEND_ROW;
    }
    fprintf(f, "<text x=\"%d\" y=\"%.2f\" fill=\"#555555\">one line per seed</text>\n",
            LEGEND_X, y);
    fputs("</g>\n", f);
}

int plot_svg_write(FILE *f, const struct plot_chart *c)
{
    int rc = DR_OK;
    struct axis x, y[PLOT_N_PANELS];
    int any = 0;
    if (!c || c->n_exps < 0 || (c->n_exps > 0 && !c->exps))
        FAIL(DR_ERR_INTERNAL, "plot: malformed chart");
    for (int i = 0; i < c->n_exps; i++) {
        if (c->exps[i].n_runs < 0 || (c->exps[i].n_runs > 0 && !c->exps[i].runs))
            FAIL(DR_ERR_INTERNAL, "plot: malformed experiment %d", i);
        for (int r = 0; r < c->exps[i].n_runs; r++) {
            const struct plot_run *run = &c->exps[i].runs[r];
            if (run->n_epochs < 0 || (run->n_epochs > 0 && !run->epochs))
                FAIL(DR_ERR_INTERNAL, "plot: malformed run %d of experiment %d", r, i);
            any |= run->n_epochs > 0;
        }
    }

    axis_fit(&x, 0.0, max_epoch(c), 10, 1);
    for (int p = 0; p < PLOT_N_PANELS; p++) {
        double lo, hi;
        panel_range(c, (enum plot_panel)p, &lo, &hi);
        axis_fit(&y[p], lo, hi, 5, 0);
    }
    /* the legend may be taller than the panels */
    double panels_h = panel_top(PLOT_N_PANELS - 1) + PANEL_H + MARGIN_BOTTOM;
    double legend_h = PLOT_TOP + 12 + (c->n_exps + 2) * LEGEND_ROW + 10;
    int height = (int)ceil(fmax(panels_h, legend_h));

    fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"DejaVu Sans, Helvetica, Arial, "
            "sans-serif\" font-size=\"12\" fill=\"#222222\">\n", WIDTH, height, WIDTH, height);
    fputs("<title>", f);
    xml_text(f, c->title ? c->title : "dawnrun training curves", 0);
    fputs("</title>\n", f);
    fprintf(f, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>\n", WIDTH,
            height);
    fprintf(f, "<text x=\"%d\" y=\"30\" font-size=\"15\" font-weight=\"bold\">", MARGIN_LEFT);
    xml_text(f, c->title ? c->title : "dawnrun training curves", 90);
    fputs("</text>\n", f);
    for (int p = 0; p < PLOT_N_PANELS; p++) {
        fprintf(f, "<g class=\"panel\" id=\"panel-%s\">\n", panel_key[p]);
        write_axes(f, p, &x, &y[p], p == PLOT_N_PANELS - 1);
        write_runs(f, c, p, &x, &y[p]);
        if (p == PLOT_ACC) write_targets(f, c, &y[p]);
        if (p == PLOT_ACC && !any)
            fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" fill=\"#555555\">"
                    "no epochs recorded yet</text>\n", MARGIN_LEFT + PLOT_W / 2.0,
                    panel_top(p) + PANEL_H / 2.0);
        fputs("</g>\n", f);
    }
    write_legend(f, c);
    fputs("</svg>\n", f);
cleanup:
    return rc;
}

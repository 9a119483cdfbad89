/* Tests of the SVG training curves (runner/report/plot_svg.c) and of `dawnrun plot`. A fixture
 * database is built through the results API: two experiments whose names need escaping
 * (markup characters, a control character, a byte that is not UTF-8, a name too long for
 * the legend), done, diverged, failed and pending runs, NaN values and a seed of 2^64 - 1.
 * The chart is rendered and checked with a small XML well-formedness checker written
 * here: balanced tags, quoted attributes, known entities, valid UTF-8, one root; then
 * one polyline per (experiment, seed, panel) that has a finite value, with NaN points
 * left out, one dashed line per distinct target, and every name escaped. Given the
 * dawnrun executable as argv[1] it checks the command: every experiment or some, by
 * name, id or config, --target, -o, and its error paths. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support.h"
#include "engine/core/experiment.h"
#include "engine/core/train.h"
#include "results/results.h"
#include "runner/report/plot_lr.h"
#include "runner/report/plot_svg.h"

/* ---- a small XML well-formedness checker ------------------------------------------------ */

/* Length of a valid UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s)
{
    if (s[0] < 0x80) return 1;
    int n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (n == 0 || s[0] > 0xf4) return 0;
    for (int k = 1; k < n; k++)
        if ((s[k] & 0xc0) != 0x80) return 0;
    if (s[0] == 0xe0 && s[1] < 0xa0) return 0;
    if (s[0] == 0xed && s[1] > 0x9f) return 0;
    if (s[0] == 0xf0 && s[1] < 0x90) return 0;
    if (s[0] == 0xf4 && s[1] > 0x8f) return 0;
    return n;
}

static int name_start(int c)
{
    return isalpha(c) || c == '_' || c == ':';
}

static int name_char(int c)
{
    return isalnum(c) || c == '_' || c == ':' || c == '-' || c == '.';
}

/* Checks character data or an attribute value from s up to (not including) `stop`:
 * entities must be known or numeric, no '<', no control characters. Returns the end or
 * NULL. */
static const char *xml_chars(const char *s, char stop, const char **err)
{
    static const char *const ents[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    while (*s && *s != stop) {
        unsigned char c = (unsigned char)*s;
        if (c == '<') { *err = "'<' in text or attribute"; return NULL; }
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') {
            *err = "control character";
            return NULL;
        }
        if (c == '&') {
            size_t k, n = 0;
            for (k = 0; k < 5; k++) {
                n = strlen(ents[k]);
                if (!strncmp(s, ents[k], n)) break;
            }
            if (k == 5) {
                const char *p = s + 1;
                if (*p++ != '#') { *err = "unknown entity"; return NULL; }
                int hex = *p == 'x';
                if (hex) p++;
                const char *digits = p;
                while (hex ? isxdigit((unsigned char)*p) : isdigit((unsigned char)*p)) p++;
                if (p == digits || *p != ';') { *err = "bad character reference"; return NULL; }
                n = (size_t)(p + 1 - s);
            }
            s += n;
            continue;
        }
        int n = utf8_len((const unsigned char *)s);
        if (n == 0) { *err = "invalid UTF-8"; return NULL; }
        s += n;
    }
    return s;
}

/* Well-formedness of a whole document: optional <?xml ...?> prolog, comments, one root
 * element, every start tag closed by a matching end tag, attributes name="value" or
 * name='value' and unique per tag. Returns NULL when well-formed, else what is wrong;
 * *elements counts the elements. */
static const char *xml_check(const char *doc, int *elements)
{
    const char *stack[256];
    size_t stack_len[256];
    int depth = 0, roots = 0;
    const char *s = doc, *err = NULL;
    *elements = 0;
    if (!strncmp(s, "<?xml", 5)) {
        s = strstr(s, "?>");
        if (!s) return "unterminated prolog";
        s += 2;
    }
    while (*s) {
        if (*s != '<') {
            if (depth == 0) {
                if (!isspace((unsigned char)*s)) return "text outside the root element";
                s++;
                continue;
            }
            s = xml_chars(s, '<', &err);
            if (!s) return err;
            continue;
        }
        if (!strncmp(s, "<!--", 4)) {
            s = strstr(s + 4, "-->");
            if (!s) return "unterminated comment";
            s += 3;
            continue;
        }
        if (s[1] == '/') {
            const char *name = s + 2, *p = name;
            while (name_char((unsigned char)*p)) p++;
            if (depth == 0) return "end tag without a start tag";
            depth--;
            if ((size_t)(p - name) != stack_len[depth] ||
                strncmp(name, stack[depth], stack_len[depth]))
                return "mismatched end tag";
            while (isspace((unsigned char)*p)) p++;
            if (*p != '>') return "malformed end tag";
            s = p + 1;
            continue;
        }
        const char *name = s + 1, *p = name;
        if (!name_start((unsigned char)*p)) return "bad element name";
        while (name_char((unsigned char)*p)) p++;
        size_t name_len = (size_t)(p - name);
        const char *attrs[64];
        size_t attr_len[64];
        int n_attrs = 0;
        for (;;) {
            int space = 0;
            while (isspace((unsigned char)*p)) { p++; space = 1; }
            if (*p == '>' || (p[0] == '/' && p[1] == '>')) break;
            if (!space || !name_start((unsigned char)*p)) return "malformed attribute";
            const char *an = p;
            while (name_char((unsigned char)*p)) p++;
            for (int k = 0; k < n_attrs; k++)
                if (attr_len[k] == (size_t)(p - an) && !strncmp(attrs[k], an, attr_len[k]))
                    return "duplicate attribute";
            if (n_attrs < 64) {
                attrs[n_attrs] = an;
                attr_len[n_attrs++] = (size_t)(p - an);
            }
            while (isspace((unsigned char)*p)) p++;
            if (*p++ != '=') return "attribute without '='";
            while (isspace((unsigned char)*p)) p++;
            char q = *p++;
            if (q != '"' && q != '\'') return "unquoted attribute value";
            p = xml_chars(p, q, &err);
            if (!p) return err;
            if (*p++ != q) return "unterminated attribute value";
        }
        (*elements)++;
        if (depth == 0) {
            if (++roots > 1) return "more than one root element";
        }
        if (*p == '/') {
            s = p + 2;
            continue;
        }
        if (depth == 256) return "nested too deeply";
        stack[depth] = name;
        stack_len[depth++] = name_len;
        s = p + 1;
    }
    if (depth != 0) return "unclosed element";
    if (roots != 1) return "no root element";
    return NULL;
}

/* The value of attribute `name` of the tag starting at `tag` (up to its '>') into buf;
 * returns buf or NULL. */
static const char *attr(const char *tag, const char *name, char *buf, size_t size)
{
    char pat[64];
    snprintf(pat, sizeof pat, " %s=\"", name);
    const char *end = strchr(tag, '>');
    const char *a = strstr(tag, pat);
    if (!a || !end || a > end) return NULL;
    a += strlen(pat);
    const char *q = strchr(a, '"');
    if (!q || q > end || (size_t)(q - a) >= size) return NULL;
    memcpy(buf, a, (size_t)(q - a));
    buf[q - a] = '\0';
    return buf;
}

static int count_of(const char *s, const char *needle)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Polylines with these data attributes (seed NULL: any). */
static int lines_of(const char *svg, int exp, const char *seed, const char *panel)
{
    int n = 0;
    char e[32], v[64];
    snprintf(e, sizeof e, "%d", exp);
    for (const char *p = svg; (p = strstr(p, "<polyline")); p++) {
        if (!attr(p, "data-experiment", v, sizeof v) || strcmp(v, e)) continue;
        if (seed && (!attr(p, "data-seed", v, sizeof v) || strcmp(v, seed))) continue;
        if (panel && (!attr(p, "data-panel", v, sizeof v) || strcmp(v, panel))) continue;
        n++;
    }
    return n;
}

/* Number of points of the polyline with these attributes (-1: none). */
static int points_of(const char *svg, int exp, const char *seed, const char *panel)
{
    char e[32], v[4096];
    snprintf(e, sizeof e, "%d", exp);
    for (const char *p = svg; (p = strstr(p, "<polyline")); p++) {
        if (!attr(p, "data-experiment", v, sizeof v) || strcmp(v, e)) continue;
        if (!attr(p, "data-seed", v, sizeof v) || strcmp(v, seed)) continue;
        if (!attr(p, "data-panel", v, sizeof v) || strcmp(v, panel)) continue;
        if (!attr(p, "points", v, sizeof v)) return -1;
        return count_of(v, ",");
    }
    return -1;
}

/* The text of experiment exp's legend entry: its <tspan> lines joined, as written (XML
 * escapes kept), into buf; NULL when there is none. */
static const char *legend_text(char *buf, size_t size, const char *svg, int exp)
{
    char pat[64];
    snprintf(pat, sizeof pat, "<text class=\"label\" data-experiment=\"%d\"", exp);
    const char *p = strstr(svg, pat), *end = p ? strstr(p, "</text>") : NULL;
    size_t len = 0;
    if (!p || !end) return NULL;
    buf[0] = '\0';
    while ((p = strstr(p, "<tspan")) && p < end) {
        p = strchr(p, '>') + 1;
        const char *q = strstr(p, "</tspan>");
        if (!q || len + (size_t)(q - p) >= size) return NULL;
        memcpy(buf + len, p, (size_t)(q - p));
        len += (size_t)(q - p);
        buf[len] = '\0';
        p = q;
    }
    return buf;
}

/* The number of lines of experiment exp's legend entry. */
static int legend_lines(const char *svg, int exp)
{
    char pat[64];
    snprintf(pat, sizeof pat, "<text class=\"label\" data-experiment=\"%d\"", exp);
    const char *p = strstr(svg, pat), *end = p ? strstr(p, "</text>") : NULL;
    int n = 0;
    while (p && (p = strstr(p, "<tspan")) && p < end) {
        n++;
        p++;
    }
    return n;
}

/* ---- reading values back from the SVG ---------------------------------------------- */

/* A panel's plotting area in user units and the ranges of its axes. */
struct frame {
    double x, y, w, h;
    double x_lo, x_hi, y_lo, y_hi;
};

static double attr_num(const char *tag, const char *name)
{
    char v[64];
    return attr(tag, name, v, sizeof v) ? strtod(v, NULL) : NAN;
}

/* The frame of panel "acc", "loss" or "lr"; 0 when it is not there. */
static int frame_of(struct frame *f, const char *svg, const char *panel)
{
    char pat[64];
    snprintf(pat, sizeof pat, "<g class=\"panel\" id=\"panel-%s\"", panel);
    const char *g = strstr(svg, pat);
    const char *r = g ? strstr(g, "<rect class=\"frame\"") : NULL;
    if (!g || !r) return 0;
    f->x_lo = attr_num(g, "data-x-lo");
    f->x_hi = attr_num(g, "data-x-hi");
    f->y_lo = attr_num(g, "data-y-lo");
    f->y_hi = attr_num(g, "data-y-hi");
    f->x = attr_num(r, "x");
    f->y = attr_num(r, "y");
    f->w = attr_num(r, "width");
    f->h = attr_num(r, "height");
    return f->x_hi > f->x_lo && f->y_hi > f->y_lo && f->w > 0 && f->h > 0;
}

static double px_of(const struct frame *f, double v)
{
    return f->x + (v - f->x_lo) / (f->x_hi - f->x_lo) * f->w;
}

static double py_of(const struct frame *f, double v)
{
    return f->y + f->h - (v - f->y_lo) / (f->y_hi - f->y_lo) * f->h;
}

/* The value at user unit x / y. */
static double vx_of(const struct frame *f, double px)
{
    return f->x_lo + (px - f->x) / f->w * (f->x_hi - f->x_lo);
}

static double vy_of(const struct frame *f, double py)
{
    return f->y_lo + (f->y + f->h - py) / f->h * (f->y_hi - f->y_lo);
}

/* The tag <ELEMENT class="CLASS" ...> with data-experiment = exp and data-panel = panel
 * (NULL: any), or NULL. */
static const char *find_tag(const char *svg, const char *element, const char *cls, int exp,
                            const char *panel)
{
    char pat[64], e[32], v[64];
    snprintf(pat, sizeof pat, "<%s class=\"%s\"", element, cls);
    snprintf(e, sizeof e, "%d", exp);
    for (const char *p = svg; (p = strstr(p, pat)); p++) {
        if (!attr(p, "data-experiment", v, sizeof v) || strcmp(v, e)) continue;
        if (panel && (!attr(p, "data-panel", v, sizeof v) || strcmp(v, panel))) continue;
        return p;
    }
    return NULL;
}

static int count_tags(const char *svg, const char *element, const char *cls)
{
    char pat[64];
    snprintf(pat, sizeof pat, "<%s class=\"%s\"", element, cls);
    return count_of(svg, pat);
}

#define MAX_POINTS 512

/* The points attribute of tag as n (x, y) pairs into xy (2 * MAX_POINTS); -1: none. */
static int points(double *xy, const char *tag)
{
    static char v[32768];
    if (!tag || !attr(tag, "points", v, sizeof v)) return -1;
    int n = 0;
    for (char *p = v; *p && n < MAX_POINTS;) {
        char *end;
        xy[2 * n] = strtod(p, &end);
        if (end == p || *end != ',') return -1;
        xy[2 * n + 1] = strtod(end + 1, &p);
        n++;
        while (*p == ' ') p++;
    }
    return n;
}

/* Whether user units a and b agree to the two decimals the writer prints. */
static int near_px(double a, double b)
{
    return fabs(a - b) <= 0.011;
}

/* ---- the fixture ------------------------------------------------------------------------- */

static const char A_NAME[] = "a<b & \"c\", 'd'";
static const char A_ESCAPED[] = "a&lt;b &amp; &quot;c&quot;, &apos;d&apos;";
/* a non-ASCII letter, a control character, a byte that is not UTF-8; too long for the
 * legend */
static const char B_NAME[] = "ResNet-9 \xc3\xbc" "ber einen langen Namen\x01 mit \xff Ende";
#define BIG_SEED UINT64_MAX

/* The two experiments' configs: tests/e2e/tiny.cfg (2,560 images, batch 128: 20 steps
 * per epoch, 4 epochs) with a warm-up to a knot between two steps (1.525 epochs = step
 * 30.5), A with a summed loss, B with a mean loss and a peak of 0.45: their labels
 * share a 34-character prefix. */
static const char *const A_SETS[] = {"train.lr_schedule.knots=[0, 1.525, 4]", "train.loss=\"sum\""};
static const char *const B_SETS[] = {"train.lr_schedule.knots=[0, 1.525, 4]",
                                     "train.lr_schedule.values=(0.0, 0.45, 0.0)",
                                     "train.loss=\"mean\""};
#define A_LABEL "train.lr_schedule.values=[0.0, 0.4, 0.0] train.loss=sum"
#define B_LABEL "train.lr_schedule.values=[0.0, 0.45, 0.0] train.loss=mean"
#define STEPS_PER_EPOCH 20
#define KNOT 1.525

/* Whether path can be opened for reading. */
static int fopen_ok(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f) fclose(f);
    return f != NULL;
}

/* Loads tiny.cfg with sets into e (CHECKed). */
static int load_config(struct experiment *e, const char *const *sets, int n)
{
    char path[4096];
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/e2e/tiny.cfg", src ? src : ".");
    memset(e, 0, sizeof *e);
    int ok = experiment_load(e, path, sets, n) == DR_OK;
    CHECK(ok);
    return ok;
}

/* The lr the trainer records for epoch k (1-based) of e: train_step_hparams' schedule
 * value at the epoch's last step, as train.c's epoch loop does. */
static double recorded_lr(const struct experiment *e, int k)
{
    struct experiment_steps st;
    float lr, wd, gs;
    double sched = NAN;
    if (experiment_steps(e, 0, &st) != DR_OK) return NAN;
    long last = (long)k * st.per_epoch;
    if (last > st.total) last = st.total;
    train_step_hparams(e, last - 1, (int)st.per_epoch, &lr, &wd, &gs, &sched);
    return sched;
}

/* The test's own value of the tiny schedule (knots 0, KNOT, 4; values 0, peak, 0) at
 * global step s of STEPS_PER_EPOCH-step epochs. */
static double expected_lr(double peak, long s)
{
    double t = (double)s / STEPS_PER_EPOCH;
    if (t <= KNOT) return peak * t / KNOT;
    if (t >= 4.0) return 0.0;
    return peak + (t - KNOT) / (4.0 - KNOT) * (0.0 - peak);
}

/* Accuracy, loss and time differ by seed so that median, quartiles and mean differ. */
static struct results_epoch epoch_row(int k, uint64_t seed, double lr)
{
    struct results_epoch e;
    memset(&e, 0, sizeof e);
    e.epoch = k;
    e.lr = lr;
    e.train_loss = 2.0 / k + 0.1 * (double)(seed % 7);
    e.train_acc = 0.4 + 0.1 * k;
    e.test_loss = 1.8 / k;
    e.test_acc = 0.5 + 0.05 * k + 0.02 * (double)(seed % 7) * (double)(seed % 7);
    e.train_time = 10.0 + (double)(seed % 7);
    e.test_time = 1.0;
    e.total_time = 11.0 * k;
    return e;
}

static struct results_lease claim_seed(struct results *db, int64_t exp, uint64_t seed)
{
    struct results_claim req;
    struct results_lease l;
    results_claim_init(&req);
    req.experiment_ids = &exp;
    req.n_experiments = 1;
    req.seeds = &seed;
    req.n_seeds = 1;
    memset(&l, 0, sizeof l);
    CHECK(results_claim_run(db, &l, &req) == DR_OK && l.run_id > 0);
    return l;
}

/* Records epochs 1..n (the epochs listed in `nan_from` onwards with NaN accuracy and
 * loss) and ends the run with `status`. */
static void run_epochs(struct results *db, int64_t exp, const struct experiment *x,
                       uint64_t seed, int n, int nan_from, enum results_run_status status,
                       const char *error)
{
    struct results_lease l = claim_seed(db, exp, seed);
    double acc = NAN;
    for (int k = 1; k <= n; k++) {
        struct results_epoch e = epoch_row(k, seed, recorded_lr(x, k));
        if (nan_from > 0 && k >= nan_from) e.test_acc = e.train_loss = e.test_loss = NAN;
        CHECK(results_epoch_record(db, &l, &e) == DR_OK);
        acc = e.test_acc;
    }
    struct results_outcome o = {status, status == RUN_DONE ? acc : NAN, 40.0, 44.0, -1, -1,
                                error};
    CHECK(results_run_finish(db, &l, &o) == DR_OK);
}

struct fixture {
    int64_t a, b;
};

/* A: seeds 0-2 done, 4 epochs, target 0.94. B (target 0.93): seed 0 done; seed 1
 * diverged in epoch 2 (epoch 1 finite); seed 2 pending; seed 2^64 - 1 failed after one
 * epoch whose accuracy and loss are NaN (only its lr is a number). Their stored configs
 * are A_SETS and B_SETS on tiny.cfg; each epoch row's lr is the one the trainer records. */
static void build_fixture(const char *path, struct fixture *fx)
{
    struct results *db = NULL;
    struct experiment ea, eb;
    if (!load_config(&ea, A_SETS, 2) || !load_config(&eb, B_SETS, 3)) return;
    CHECK(results_open(&db, path) == DR_OK);
    if (!db) return;
    struct results_experiment xa = {0}, xb = {0};
    xa.name = A_NAME;
    xa.config_hash = "hash-a-0123456789";
    xa.config_text = ea.resolved;
    xa.dawnrun_version = "test";
    xa.engine = "cpu";
    xa.target_accuracy = 0.94;
    xb = xa;
    xb.name = B_NAME;
    xb.config_hash = "hash-b-0123456789";
    xb.config_text = eb.resolved;
    xb.target_accuracy = 0.93;
    CHECK(results_experiment_register(db, &fx->a, NULL, &xa) == DR_OK);
    CHECK(results_experiment_register(db, &fx->b, NULL, &xb) == DR_OK);
    const uint64_t sa[] = {0, 1, 2}, sb[] = {0, 1, 2, BIG_SEED};
    CHECK(results_runs_ensure(db, NULL, fx->a, sa, 3, 3) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, fx->b, sb, 4, 3) == DR_OK);
    for (int s = 0; s < 3; s++)
        run_epochs(db, fx->a, &ea, (uint64_t)s, 4, 0, RUN_DONE, NULL);
    run_epochs(db, fx->b, &eb, 0, 4, 0, RUN_DONE, NULL);
    run_epochs(db, fx->b, &eb, 1, 2, 2, RUN_DIVERGED, "loss became NaN at epoch 2");
    run_epochs(db, fx->b, &eb, BIG_SEED, 1, 1, RUN_FAILED, "out of memory");
    results_close(db);
    experiment_free(&ea);
    experiment_free(&eb);
}

/* The chart of experiments ids[0..n) from the results API, labelled by name; with_lr:
 * with each experiment's learning rate per step from its stored config (plot_lr.h).
 * Free with free_chart. */
static struct plot_chart load_chart(struct results *db, const int64_t *ids, int n, double target,
                                    int with_lr)
{
    struct plot_chart c = {.title = "test chart",
                          .exps = calloc((size_t)n, sizeof(struct plot_experiment)), .n_exps = n};
    struct plot_experiment *pe = (struct plot_experiment *)c.exps;
    for (int i = 0; pe && i < n; i++) {
        struct results_experiment x;
        struct results_run *runs = NULL;
        int found = 0, n_runs = 0;
        CHECK(results_experiment_get(db, &x, &found, ids[i]) == DR_OK && found);
        CHECK(results_runs_list(db, &runs, &n_runs, ids[i]) == DR_OK);
        struct plot_run *pr = calloc((size_t)n_runs + 1, sizeof *pr);
        for (int r = 0; pr && r < n_runs; r++) {
            struct results_epoch *eps = NULL;
            int n_eps = 0;
            CHECK(results_epochs_list(db, &eps, &n_eps, runs[r].id) == DR_OK);
            pr[r].seed = runs[r].seed;
            pr[r].epochs = eps;
            pr[r].n_epochs = n_eps;
        }
        pe[i].label = x.name ? strdup(x.name) : NULL;
        pe[i].target = isnan(target) ? x.target_accuracy : target;
        pe[i].runs = pr;
        pe[i].n_runs = pr ? n_runs : 0;
        if (with_lr) {
            struct param_list params = {0};
            double *at = NULL, *lr = NULL;
            CHECK(experiment_params_from_text(&params, x.config_text) == DR_OK);
            CHECK(plot_lr_from_params(&at, &lr, &pe[i].n_lr, &params) == DR_OK);
            CHECK(pe[i].n_lr > 0);
            pe[i].lr_epoch = at;
            pe[i].lr = lr;
            param_list_free(&params);
        }
        results_experiment_clear(&x);
        results_runs_free(runs, n_runs);
    }
    return c;
}

static void free_chart(struct plot_chart *c)
{
    for (int i = 0; i < c->n_exps; i++) {
        for (int r = 0; r < c->exps[i].n_runs; r++) free((void *)c->exps[i].runs[r].epochs);
        free((void *)c->exps[i].runs);
        free((void *)c->exps[i].label);
        free((void *)c->exps[i].lr_epoch);
        free((void *)c->exps[i].lr);
    }
    free((void *)c->exps);
}

/* Renders into a malloc'd string. */
static char *render(const struct plot_chart *c, int *rc)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    *rc = plot_svg_write(f, c);
    fclose(f);
    return buf;
}

/* The names of the fixture escaped wherever they are written. */
static void check_names(const char *svg)
{
    CHECK(strstr(svg, A_ESCAPED) != NULL);
    CHECK(strstr(svg, "a<b") == NULL && strstr(svg, "\"c\"") == NULL);
    CHECK(strstr(svg, "ResNet-9 \xc3\xbc" "ber einen langen Namen  mit \xef\xbf\xbd Ende") != NULL);
    CHECK(strstr(svg, "\x01") == NULL && strstr(svg, "\xff") == NULL);
}

/* Checks the SVG of the whole fixture (experiment 0 = A, 1 = B). `targets`: the distinct
 * dashed lines expected. */
static void check_fixture_svg(const char *svg, int targets)
{
    int elements = 0;
    const char *err = svg ? xml_check(svg, &elements) : "no SVG";
    if (err) fprintf(stderr, "  not well-formed: %s\n", err);
    CHECK(err == NULL);
    CHECK(elements > 50);
    CHECK(svg && strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\"") != NULL);
    if (!svg) return;

    /* one polyline per (experiment, seed, panel) with a finite value */
    static const char *const panels[] = {"acc", "loss", "lr"};
    static const char *const seeds[] = {"0", "1", "2"};
    for (int p = 0; p < 3; p++) {
        for (int s = 0; s < 3; s++) CHECK(lines_of(svg, 0, seeds[s], panels[p]) == 1);
        CHECK(lines_of(svg, 1, "0", panels[p]) == 1);
        CHECK(lines_of(svg, 1, "1", panels[p]) == 1);   /* epoch 1 is finite */
        CHECK(lines_of(svg, 1, "2", panels[p]) == 0);   /* pending: no epochs */
    }
    CHECK(lines_of(svg, 1, "18446744073709551615", "lr") == 1);
    CHECK(lines_of(svg, 1, "18446744073709551615", "acc") == 0);   /* NaN only */
    CHECK(lines_of(svg, 1, "18446744073709551615", "loss") == 0);
    CHECK(count_of(svg, "<polyline") == 9 + 3 + 3 + 1);
    /* NaN points are left out of the line, the others kept */
    CHECK(points_of(svg, 0, "2", "acc") == 4);
    CHECK(points_of(svg, 1, "1", "acc") == 1);
    CHECK(points_of(svg, 1, "1", "lr") == 2);

    /* the dashed target lines */
    CHECK(count_of(svg, "<line class=\"target\"") == targets);
    const char *t = strstr(svg, "<line class=\"target\"");
    char v[64];
    CHECK(t && attr(t, "stroke-dasharray", v, sizeof v) != NULL);

    check_names(svg);
    /* B's long name wrapped over lines in the legend, whole, not cut */
    char legend[512];
    CHECK(legend_text(legend, sizeof legend, svg, 1) &&
          !strcmp(legend, "ResNet-9 \xc3\xbc" "ber einen langen Namen  mit \xef\xbf\xbd Ende (3 runs)"));
    CHECK(legend_lines(svg, 1) == 2 && legend_lines(svg, 0) == 1);
    CHECK(strstr(svg, "(3 runs)") != NULL);
    CHECK(strstr(svg, ">train loss<") && strstr(svg, ">learning rate<") &&
          strstr(svg, ">test accuracy (%)<") && strstr(svg, ">epoch<"));
}

static void test_render(const char *db_path, const struct fixture *fx)
{
    struct results *db = NULL;
    int rc = -1;
    CHECK(results_open_readonly(&db, db_path) == DR_OK);
    int64_t ids[2] = {fx->a, fx->b};

    struct plot_chart c = load_chart(db, ids, 2, NAN, 0);
    char *svg = render(&c, &rc);
    CHECK(rc == DR_OK);
    check_fixture_svg(svg, 2);
    FILE *f = fopen(support_path("inprocess.svg"), "w");   /* kept on failure, to look at */
    if (f && svg) fputs(svg, f);
    if (f) fclose(f);
    free(svg);
    free_chart(&c);

    /* one target for all: one dashed line, at 90 % */
    c = load_chart(db, ids, 2, 0.90, 0);
    svg = render(&c, &rc);
    CHECK(rc == DR_OK && svg && count_of(svg, "<line class=\"target\"") == 1);
    CHECK(svg && strstr(svg, ">target 90 %<") != NULL);
    free(svg);
    free_chart(&c);

    /* nothing to draw: still a well-formed chart, saying so */
    struct plot_chart empty = {.title = NULL};
    int elements = 0;
    svg = render(&empty, &rc);
    CHECK(rc == DR_OK && svg && xml_check(svg, &elements) == NULL);
    CHECK(svg && strstr(svg, "no epochs recorded yet") && !strstr(svg, "<polyline"));
    free(svg);

    /* a malformed chart is refused */
    struct plot_experiment bad = {.label = "bad", .target = NAN, .n_runs = 3};
    struct plot_chart badc = {.title = "x", .exps = &bad, .n_exps = 1};
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        fflush(stderr);
        CHECK(plot_svg_write(null, &badc) == DR_ERR_INTERNAL);
        fclose(null);
    }
    results_close(db);
}

/* ---- median and quartiles, the time axis, the learning rate, the legend ------------- */

/* The test's own order statistics: insertion sort, then linear interpolation between
 * closest ranks (h = (n - 1) q), so that the median of an even count is the mean of the
 * two middle values. */
static double order_stat(double *v, int n, double q)
{
    for (int i = 1; i < n; i++)
        for (int k = i; k > 0 && v[k - 1] > v[k]; k--) {
            double t = v[k];
            v[k] = v[k - 1];
            v[k - 1] = t;
        }
    double h = (n - 1) * q;
    int lo = (int)h;
    return lo + 1 < n ? v[lo] + (h - lo) * (v[lo + 1] - v[lo]) : v[n - 1];
}

/* The values of panel "acc" / "loss" of e's runs at epoch k that are finite (returns how
 * many), and in t (*n_t) the cumulative train times there of every run with a row for
 * epoch k, the way the test reads them. */
static int values_at(double *v, double *t, int *n_t, const struct plot_experiment *e, int acc,
                     int k)
{
    int n = 0;
    *n_t = 0;
    for (int r = 0; r < e->n_runs; r++) {
        const struct plot_run *run = &e->runs[r];
        double time = 0.0;
        for (int i = 0; i < run->n_epochs; i++) {
            time += run->epochs[i].train_time;
            if (run->epochs[i].epoch != k) continue;
            t[(*n_t)++] = time;
            double val = acc ? 100.0 * run->epochs[i].test_acc : run->epochs[i].train_loss;
            if (isfinite(val)) v[n++] = val;
        }
    }
    return n;
}

/* The median lines and bands of the fixture drawn with style MEDIAN against the test's
 * own medians and quartiles, on the epoch axis. */
static void test_median(struct results *db, const struct fixture *fx)
{
    int64_t ids[2] = {fx->a, fx->b};
    int rc = -1;
    struct plot_chart c = load_chart(db, ids, 2, NAN, 1);
    c.style = PLOT_STYLE_MEDIAN;
    char *svg = render(&c, &rc);
    int elements = 0;
    CHECK(rc == DR_OK && svg && xml_check(svg, &elements) == NULL);
    if (!svg) return;
    /* no run lines; a median and a band per experiment in acc and loss, the schedule in lr */
    CHECK(count_of(svg, "class=\"run\"") == 0);
    CHECK(count_tags(svg, "polyline", "median") == 4 && count_tags(svg, "polygon", "band") == 4);
    CHECK(count_tags(svg, "polyline", "schedule") == 2);
    CHECK(strstr(svg, ">band: 25th to 75th percentile<") != NULL);
    static const char *const panels[] = {"acc", "loss"};
    double xy[2 * MAX_POINTS], band[2 * MAX_POINTS], v[8], t[8];
    for (int i = 0; i < 2; i++) {
        const struct plot_experiment *e = &c.exps[i];
        const char *med = find_tag(svg, "polyline", "median", i, "acc");
        CHECK(med && attr_num(med, "data-runs") == 3);
        for (int p = 0; p < 2; p++) {
            struct frame f;
            CHECK(frame_of(&f, svg, panels[p]));
            int n = points(xy, find_tag(svg, "polyline", "median", i, panels[p]));
            int nb = points(band, find_tag(svg, "polygon", "band", i, panels[p]));
            CHECK(n == 4 && nb == 2 * n);
            if (n != 4 || nb != 2 * n) continue;
            for (int k = 1; k <= 4; k++) {
                int n_t = 0, m = values_at(v, t, &n_t, e, p == 0, k);
                double q1 = order_stat(v, m, 0.25), q3 = order_stat(v, m, 0.75);
                double mid = order_stat(v, m, 0.5);
                if (!(near_px(xy[2 * (k - 1)], px_of(&f, k)) &&
                      near_px(xy[2 * (k - 1) + 1], py_of(&f, mid))))
                    fprintf(stderr, "  exp %d %s epoch %d: median at %.2f,%.2f, expected "
                            "%.2f,%.2f\n", i, panels[p], k, xy[2 * (k - 1)],
                            xy[2 * (k - 1) + 1], px_of(&f, k), py_of(&f, mid));
                CHECK(near_px(xy[2 * (k - 1)], px_of(&f, k)));
                CHECK(near_px(xy[2 * (k - 1) + 1], py_of(&f, mid)));
                /* the band: upper quartile left to right, lower quartile back */
                CHECK(near_px(band[2 * (k - 1)], px_of(&f, k)));
                CHECK(near_px(band[2 * (k - 1) + 1], py_of(&f, q3)));
                CHECK(near_px(band[2 * (2 * n - k)], px_of(&f, k)));
                CHECK(near_px(band[2 * (2 * n - k) + 1], py_of(&f, q1)));
            }
        }
    }
    /* the figures that tell the median from the mean and the runs apart: A at epoch 1
     * (accuracies 55 %, 57 %, 63 %: median 57, mean 58.33, quartiles 56 and 60); B at
     * epoch 1 has two finite runs (55 %, 57 %: the median is their mean, 56 %), from
     * epoch 2 one (seed 1 diverged) */
    struct frame f;
    CHECK(frame_of(&f, svg, "acc"));
    CHECK(points(xy, find_tag(svg, "polyline", "median", 0, "acc")) == 4);
    CHECK(fabs(vy_of(&f, xy[1]) - 57.0) < 0.01);
    CHECK(points(band, find_tag(svg, "polygon", "band", 0, "acc")) == 8);
    CHECK(fabs(vy_of(&f, band[1]) - 60.0) < 0.01 && fabs(vy_of(&f, band[15]) - 56.0) < 0.01);
    CHECK(points(xy, find_tag(svg, "polyline", "median", 1, "acc")) == 4);
    CHECK(fabs(vy_of(&f, xy[1]) - 56.0) < 0.01);
    CHECK(points(band, find_tag(svg, "polygon", "band", 1, "acc")) == 8);
    CHECK(fabs(vy_of(&f, band[3]) - vy_of(&f, band[13])) < 0.01);   /* epoch 2: one run */
    free(svg);

    /* the time axis: each epoch at the median cumulative train time of the runs that have
     * it (A: 10, 11 and 12 s per epoch: 11 k s), ascending; seeds at their own times */
    c.x = PLOT_X_TIME;
    svg = render(&c, &rc);
    CHECK(rc == DR_OK && svg && strstr(svg, ">train time (s)<") && !strstr(svg, ">epoch<"));
    CHECK(svg && frame_of(&f, svg, "acc"));
    for (int i = 0; svg && i < 2; i++) {
        int n = points(xy, find_tag(svg, "polyline", "median", i, "acc"));
        CHECK(n == 4);
        for (int k = 1; k <= n; k++) {
            int n_t = 0;
            values_at(v, t, &n_t, &c.exps[i], 1, k);
            double time = order_stat(t, n_t, 0.5);
            CHECK(near_px(xy[2 * (k - 1)], px_of(&f, time)));
            if (k > 1) CHECK(xy[2 * (k - 1)] > xy[2 * (k - 2)]);
        }
        if (i == 0) CHECK(n == 4 && fabs(vx_of(&f, xy[6]) - 44.0) < 0.02);
    }
    free(svg);
    c.style = PLOT_STYLE_SEEDS;
    svg = render(&c, &rc);
    CHECK(svg && frame_of(&f, svg, "acc"));
    for (const char *p = svg; svg && (p = strstr(p, "<polyline class=\"run\" data-experiment=\"0\" "
                                                       "data-seed=\"2\" data-panel=\"acc\""));
         p++) {
        CHECK(points(xy, p) == 4);
        for (int k = 1; k <= 4; k++) CHECK(near_px(xy[2 * (k - 1)], px_of(&f, 12.0 * k)));
    }
    CHECK(svg && count_of(svg, "<polyline class=\"run\"") == 5 + 5);   /* acc + loss */
    free(svg);
    free_chart(&c);
}

/* Linear interpolation of the points (at, lr) at x; NaN outside them. */
static double curve_at(const double *at, const double *lr, int n, double x)
{
    for (int i = 0; i + 1 < n; i++)
        if (at[i] <= x && x <= at[i + 1])
            return lr[i] + (x - at[i]) / (at[i + 1] - at[i]) * (lr[i + 1] - lr[i]);
    return n > 0 && x == at[n - 1] ? lr[n - 1] : NAN;
}

/* The learning rate per step: every step's value on the curve (the warm-up and the knot
 * between two steps included), the epoch ends equal to the lr the trainer records, the
 * drawn line through the same points, and no curve without a schedule. */
static void test_lr(struct results *db, const struct fixture *fx)
{
    int64_t ids[2] = {fx->a, fx->b};
    const double peak[2] = {0.4, 0.45};
    for (int i = 0; i < 2; i++) {
        struct results_experiment x;
        struct results_run *runs = NULL;
        struct results_epoch *eps = NULL;
        struct param_list params = {0};
        double *at = NULL, *lr = NULL;
        int found = 0, n = 0, n_runs = 0, n_eps = 0;
        CHECK(results_experiment_get(db, &x, &found, ids[i]) == DR_OK && found);
        if (!found) return;
        CHECK(experiment_params_from_text(&params, x.config_text) == DR_OK);
        CHECK(plot_lr_from_params(&at, &lr, &n, &params) == DR_OK);
        /* a few points per epoch, not one per step */
        CHECK(n > 8 && n < 4 * STEPS_PER_EPOCH);
        for (int k = 1; k < n; k++) CHECK(at[k] > at[k - 1]);
        /* every step, at its end, lies on the curve */
        double max_expected = 0.0, max_drawn = 0.0;
        for (long s = 0; s < 4 * STEPS_PER_EPOCH; s++) {
            double want = expected_lr(peak[i], s);
            double got = curve_at(at, lr, n, (double)(s + 1) / STEPS_PER_EPOCH);
            if (!(fabs(got - want) < 1e-12))
                fprintf(stderr, "  exp %d step %ld: lr %.17g on the curve, %.17g expected\n",
                        i, s, got, want);
            CHECK(fabs(got - want) < 1e-12);
            max_expected = fmax(max_expected, want);
        }
        for (int k = 0; k < n; k++) max_drawn = fmax(max_drawn, lr[k]);
        CHECK(max_drawn == max_expected && max_expected < peak[i]);   /* the knot is between steps */
        CHECK(at[0] == 1.0 / STEPS_PER_EPOCH && lr[0] == 0.0);       /* the warm-up's first step */
        /* the epoch ends: the lr column of the epoch rows (as the trainer records it) */
        CHECK(results_runs_list(db, &runs, &n_runs, ids[i]) == DR_OK && n_runs > 0);
        int first = 0;   /* the run with seed 0, which did all 4 epochs */
        while (first < n_runs - 1 && runs[first].seed != 0) first++;
        if (n_runs > 0) CHECK(results_epochs_list(db, &eps, &n_eps, runs[first].id) == DR_OK);
        CHECK(n_eps == 4);
        for (int r = 0; r < n_eps; r++) {
            int k = 0;
            while (k < n && at[k] != eps[r].epoch) k++;
            CHECK(k < n && lr[k] == eps[r].lr);
        }
        free(eps);
        results_runs_free(runs, n_runs);
        free(at);
        free(lr);
        param_list_free(&params);
        results_experiment_clear(&x);
    }

    /* the drawn line goes through the curve's points */
    struct plot_chart c = load_chart(db, ids, 2, NAN, 1);
    int rc = -1;
    char *svg = render(&c, &rc);
    struct frame f;
    double xy[2 * MAX_POINTS];
    CHECK(rc == DR_OK && svg && frame_of(&f, svg, "lr"));
    for (int i = 0; svg && i < 2; i++) {
        int n = points(xy, find_tag(svg, "polyline", "schedule", i, "lr"));
        CHECK(n == c.exps[i].n_lr);
        for (int k = 0; k < n && k < c.exps[i].n_lr; k++) {
            CHECK(near_px(xy[2 * k], px_of(&f, c.exps[i].lr_epoch[k])));
            CHECK(near_px(xy[2 * k + 1], py_of(&f, c.exps[i].lr[k])));
        }
        CHECK(lines_of(svg, i, NULL, "lr") == 1);   /* the schedule, not one line per run */
    }
    CHECK(svg && strstr(svg, ">learning rate: at every step<") != NULL);
    free(svg);
    free_chart(&c);

    /* params without a schedule: no curve (the recorded lr is drawn instead) */
    struct param_list bare = {0};
    double *at = NULL, *lr = NULL;
    int n = -1;
    CHECK(experiment_params_from_text(&bare, "name = \"x\";\ntrain = { epochs = 4; };\n") == DR_OK);
    CHECK(plot_lr_from_params(&at, &lr, &n, &bare) == DR_OK && n == 0 && !at && !lr);
    param_list_free(&bare);
}

/* Two labels sharing a 40-character prefix, one of 100 characters without a space, one
 * whose first line can end between two settings or after a comma in a list: each legend
 * entry reads its whole label, on as many lines as it takes, breaking between settings. */
static void test_legend(void)
{
    static const char L0[] = "train.lr_schedule.values=(0.0, 0.4, 0.0) augment.cutout=8";
    static const char L1[] = "train.lr_schedule.values=(0.0, 0.4, 0.0) augment.cutout=12";
    char l2[101];
    memset(l2, 'x', 100);
    l2[100] = '\0';
    struct results_epoch rows[2] = {epoch_row(1, 0, 0.1), epoch_row(2, 0, 0.2)};
    struct plot_run run = {.seed = 0, .epochs = rows, .n_epochs = 2};
    static const char L3[] = "model.vars.width=16 train.lr=(0.0, 0.4, 0.0)";
    struct plot_experiment e[4] = {
        {.label = L0, .target = NAN, .runs = &run, .n_runs = 1},
        {.label = L1, .target = NAN, .runs = &run, .n_runs = 1},
        {.label = l2, .target = NAN, .runs = &run, .n_runs = 1},
        {.label = L3, .target = NAN, .runs = &run, .n_runs = 1},
    };
    struct plot_chart c = {.title = "legend", .exps = e, .n_exps = 4};
    int rc = -1, elements = 0;
    char *svg = render(&c, &rc), text[256], want[256];
    CHECK(rc == DR_OK && svg && xml_check(svg, &elements) == NULL);
    for (int i = 0; svg && i < 4; i++) {
        snprintf(want, sizeof want, "%s (1 run)", e[i].label);
        CHECK(legend_text(text, sizeof text, svg, i) && !strcmp(text, want));
    }
    CHECK(svg && legend_lines(svg, 0) == 2 && legend_lines(svg, 2) == 3);
    const char *l3 = svg ? strstr(svg, "<text class=\"label\" data-experiment=\"3\"") : NULL;
    CHECK(l3 && strstr(l3, ">model.vars.width=16 </tspan>") != NULL);
    free(svg);
}

/* The strip of final accuracies under the curves: one point per run that has a final
 * accuracy, at that accuracy, in its experiment's row; the target across the row and
 * "k/n >= T %" at its end; none of it when no run has a final accuracy. */
static void test_strip(void)
{
    struct results_epoch rows[2] = {epoch_row(1, 0, 0.5), epoch_row(2, 0, 0.9)};
    static const double finals[5] = {0.9413, 0.9402, 0.9395, 0.9421, 0.9407};
    struct plot_run a[6], b[3];
    for (int r = 0; r < 6; r++)
        a[r] = (struct plot_run){.seed = (uint64_t)r, .epochs = rows, .n_epochs = 2,
                                 .has_final = r < 5, .final_acc = r < 5 ? finals[r] : 0.1};
    for (int r = 0; r < 3; r++)
        b[r] = (struct plot_run){.seed = (uint64_t)r, .epochs = rows, .n_epochs = 2,
                                 .has_final = 1, .final_acc = 0.93 + 0.001 * r};
    struct plot_experiment e[2] = {
        {.label = "a", .target = 0.94, .runs = a, .n_runs = 6},
        {.label = "b", .target = NAN, .runs = b, .n_runs = 3},
    };
    struct plot_chart c = {.title = "strip", .exps = e, .n_exps = 2};
    int rc = -1, elements = 0;
    char *svg = render(&c, &rc);
    CHECK(rc == DR_OK && svg && xml_check(svg, &elements) == NULL);
    if (!svg) return;
    CHECK(count_of(svg, "id=\"panel-final\"") == 1);
    CHECK(count_of(svg, "<circle class=\"final\" data-experiment=\"0\"") == 5);
    CHECK(count_of(svg, "<circle class=\"final\" data-experiment=\"1\"") == 3);
    CHECK(strstr(svg, "data-seed=\"5\" data-acc") == NULL);   /* no final accuracy */
    CHECK(strstr(svg, "data-experiment=\"0\" data-seed=\"3\" data-acc=\"0.9421\"") != NULL);
    CHECK(strstr(svg, "<title>seed 3: 94.21 %</title>") != NULL);
    /* 0.9413, 0.9402, 0.9421 and 0.9407 reach 94 %; 0.9395 does not */
    CHECK(strstr(svg, "<g class=\"strip\" data-experiment=\"0\" data-reach=\"4/5\">") != NULL);
    CHECK(strstr(svg, ">4/5 ≥ 94 %</text>") != NULL);
    CHECK(strstr(svg, ">3 runs</text>") != NULL);   /* no target */
    const char *strip = strstr(svg, "id=\"panel-final\"");
    CHECK(strip && count_of(strip, "<line class=\"strip-target\"") == 1);
    /* every point inside the strip's frame: its x range holds the accuracies */
    double lo = NAN, hi = NAN;
    CHECK(strip && sscanf(strip, "id=\"panel-final\" data-x-lo=\"%lf\" data-x-hi=\"%lf\"",
                          &lo, &hi) == 2);
    CHECK(lo <= 93.0 && hi >= 94.21);
    free(svg);
    /* without final accuracies: no strip */
    for (int r = 0; r < 6; r++) a[r].has_final = 0;
    for (int r = 0; r < 3; r++) b[r].has_final = 0;
    svg = render(&c, &rc);
    CHECK(rc == DR_OK && svg && strstr(svg, "panel-final") == NULL);
    free(svg);
}

/* The checker itself rejects what it must. */
static void test_checker(void)
{
    int n = 0;
    CHECK(xml_check("<a><b x=\"1\"/></a>", &n) == NULL && n == 2);
    CHECK(xml_check("<a><b></a></b>", &n) != NULL);
    CHECK(xml_check("<a x=1/>", &n) != NULL);
    CHECK(xml_check("<a x=\"1\" x=\"2\"/>", &n) != NULL);
    CHECK(xml_check("<a>&nbsp;</a>", &n) != NULL);
    CHECK(xml_check("<a>1 < 2</a>", &n) != NULL);
    CHECK(xml_check("<a/><b/>", &n) != NULL);
    CHECK(xml_check("<a>\xff</a>", &n) != NULL);
    CHECK(xml_check("<a>&amp;&#233;&#xe9;</a>", &n) == NULL);
    CHECK(xml_check("<a>", &n) != NULL);
}

/* ---- the command ------------------------------------------------------------------------- */

/* The SVG `dawnrun plot` draws of the whole fixture by default: medians and bands, the
 * schedules, legends from the differing settings, the names in the title. */
static void check_command_svg(const char *svg)
{
    int elements = 0;
    char text[256];
    const char *err = svg ? xml_check(svg, &elements) : "no SVG";
    if (err) fprintf(stderr, "  not well-formed: %s\n", err);
    CHECK(err == NULL);
    if (!svg) return;
    CHECK(count_tags(svg, "polyline", "median") == 4 && count_tags(svg, "polygon", "band") == 4);
    CHECK(count_tags(svg, "polyline", "schedule") == 2 && count_of(svg, "class=\"run\"") == 0);
    CHECK(count_of(svg, "<line class=\"target\"") == 2);
    CHECK(legend_text(text, sizeof text, svg, 0) && !strcmp(text, A_LABEL " (3 runs)"));
    CHECK(legend_text(text, sizeof text, svg, 1) && !strcmp(text, B_LABEL " (3 runs)"));
    CHECK(strstr(svg, ">legend: train.lr_schedule.values, train.loss<") != NULL);
    check_names(svg);
}

/* A database whose experiment's stored config does not parse: the chart is drawn with
 * the name and the recorded lr, and the command says why. */
static void test_unreadable_config(void)
{
    const char *path = support_path("unreadable.db");
    struct results *db = NULL;
    struct results_experiment x = {0};
    struct experiment e;
    int64_t id = 0;
    if (!load_config(&e, A_SETS, 2)) return;
    CHECK(results_open(&db, path) == DR_OK);
    if (!db) return;
    x.name = "old-one";
    x.config_hash = "hash-c-0123456789";
    x.config_text = "this is { not a config";
    x.dawnrun_version = "test";
    x.engine = "cpu";
    x.target_accuracy = NAN;
    CHECK(results_experiment_register(db, &id, NULL, &x) == DR_OK);
    const uint64_t seeds[] = {0};
    CHECK(results_runs_ensure(db, NULL, id, seeds, 1, 3) == DR_OK);
    run_epochs(db, id, &e, 0, 2, 0, RUN_DONE, NULL);
    results_close(db);
    experiment_free(&e);
    CHECK(support_run("plot --db %s -o %s", path, support_path("unreadable.svg")) == 0);
    CHECK(strstr(support_run_err(), "could not be read") != NULL);
    char *svg = support_read_file(support_path("unreadable.svg"), NULL), text[128];
    CHECK(svg && legend_text(text, sizeof text, svg, 0) && !strcmp(text, "old-one (1 run)"));
    CHECK(svg && count_tags(svg, "polyline", "median") == 3 &&
          count_tags(svg, "polyline", "schedule") == 0);
    free(svg);
}

/* With CIFAR-10 at hand ($DAWNRUN_DATA): a real two-epoch run of tiny.cfg whose warm-up
 * ends between two steps; the plotted learning rate at each epoch end is the lr column
 * the trainer recorded. */
static void test_real_run(void)
{
    const char *data = getenv("DAWNRUN_DATA"), *src = getenv("DAWNRUN_SOURCE_DIR");
    char probe[4096];
    snprintf(probe, sizeof probe, "%s/data_batch_1.bin", data ? data : "");
    if (!data || !src || !support_exists(probe)) {
        fprintf(stderr, "  (no CIFAR-10 in $DAWNRUN_DATA: the real-run lr check is skipped)\n");
        return;
    }
    const char *db_path = support_path("real.db"), *svg_path = support_path("real.svg");
    CHECK(support_run("run %s/tests/e2e/tiny.cfg --engine cpu --seeds 1 --set train.epochs=2 "
                      "--set 'train.lr_schedule.knots=[0, 1.525, 2]' --db %s", src,
                      db_path) == 0);
    CHECK(support_run("plot --db %s -o %s", db_path, svg_path) == 0);
    struct results *db = NULL;
    struct results_experiment *xs = NULL;
    struct results_run *runs = NULL;
    struct results_epoch *eps = NULL;
    int n_x = 0, n_runs = 0, n_eps = 0;
    CHECK(results_open_readonly(&db, db_path) == DR_OK);
    if (db) CHECK(results_experiments_list(db, &xs, &n_x) == DR_OK && n_x == 1);
    if (n_x == 1) CHECK(results_runs_list(db, &runs, &n_runs, xs[0].id) == DR_OK && n_runs == 1);
    if (n_runs == 1) CHECK(results_epochs_list(db, &eps, &n_eps, runs[0].id) == DR_OK);
    CHECK(n_eps == 2);
    char *svg = support_read_file(svg_path, NULL);
    struct frame f;
    double xy[2 * MAX_POINTS];
    CHECK(svg && frame_of(&f, svg, "lr"));
    int n = svg ? points(xy, find_tag(svg, "polyline", "schedule", 0, "lr")) : -1;
    CHECK(n > 4);
    for (int r = 0; r < n_eps; r++) {
        int k = 0;
        while (k < n && !near_px(xy[2 * k], px_of(&f, eps[r].epoch))) k++;
        CHECK(k < n);
        if (k < n) {
            double drawn = vy_of(&f, xy[2 * k + 1]);
            if (!(fabs(drawn - eps[r].lr) < 2e-4))
                fprintf(stderr, "  epoch %d: lr drawn %.6f, recorded %.6f\n", eps[r].epoch,
                        drawn, eps[r].lr);
            CHECK(fabs(drawn - eps[r].lr) < 2e-4);
        }
    }
    CHECK(n_eps == 2 && eps[0].lr > 0.2 && eps[1].lr > 0.0 && eps[1].lr < eps[0].lr);
    free(svg);
    free(eps);
    results_runs_free(runs, n_runs);
    results_experiments_free(xs, n_x);
    results_close(db);
}

static void test_command(const char *db, const struct fixture *fx)
{
    const char *err_text = support_run_err();   /* rewritten by each support_run */
    const char *svg_path = support_path("all.svg"), *x_svg = support_path("x.svg");
    char text[256];

    /* every experiment: medians by default */
    CHECK(support_run("plot --db %s -o %s", db, svg_path) == 0);
    char *svg = support_read_file(svg_path, NULL);
    check_command_svg(svg);
    free(svg);
    char *out = support_read_file(support_path("out.txt"), NULL);
    CHECK(out && strstr(out, "2 experiments, 6 runs with epochs") != NULL);
    free(out);

    /* --seeds: every run as its own line, the schedule in the LR panel */
    CHECK(support_run("plot --seeds --db %s -o %s", db, svg_path) == 0);
    svg = support_read_file(svg_path, NULL);
    static const char *const seeds[] = {"0", "1", "2"};
    for (int p = 0; svg && p < 2; p++) {
        const char *panel = p ? "loss" : "acc";
        for (int s = 0; s < 3; s++) CHECK(lines_of(svg, 0, seeds[s], panel) == 1);
        CHECK(lines_of(svg, 1, "0", panel) == 1 && lines_of(svg, 1, "1", panel) == 1);
        CHECK(lines_of(svg, 1, "2", panel) == 0);
        CHECK(lines_of(svg, 1, "18446744073709551615", panel) == 0);
    }
    CHECK(svg && count_of(svg, "<polyline") == 10 + 2 && count_tags(svg, "polyline", "schedule") == 2);
    CHECK(svg && count_tags(svg, "polyline", "median") == 0 && strstr(svg, ">one line per seed<"));
    CHECK(svg && legend_text(text, sizeof text, svg, 1) && !strcmp(text, B_LABEL " (3 runs)"));
    free(svg);

    /* --x time, also with --seeds, and --x epoch */
    CHECK(support_run("plot --x time --db %s -o %s", db, svg_path) == 0);
    svg = support_read_file(svg_path, NULL);
    CHECK(svg && strstr(svg, ">train time (s)<") && count_tags(svg, "polyline", "median") == 4);
    free(svg);
    CHECK(support_run("plot --seeds --x=time --db %s -o %s", db, svg_path) == 0);
    svg = support_read_file(svg_path, NULL);
    CHECK(svg && strstr(svg, ">train time (s)<") && count_of(svg, "class=\"run\"") == 10);
    free(svg);
    CHECK(support_run("plot --x epoch --db %s -o %s", db, svg_path) == 0);

    /* one experiment by id, one by hash prefix; --target; output to stdout */
    CHECK(support_run("plot %lld hash-b-01 --target 0.9 --db %s -o -", (long long)fx->a, db) == 0);
    svg = support_read_file(support_path("out.txt"), NULL);
    int n = 0;
    CHECK(svg && xml_check(svg, &n) == NULL);
    CHECK(svg && count_of(svg, "<polyline") == 6 && count_of(svg, "class=\"target\"") == 1);
    free(svg);
    CHECK(strstr(err_text, "-: 2 experiments") != NULL);
    /* one experiment: labelled by its name */
    CHECK(support_run("plot hash-b-01 --db %s -o %s", db, support_path("b.svg")) == 0);
    svg = support_read_file(support_path("b.svg"), NULL);
    CHECK(svg && count_of(svg, "<polyline") == 3 && lines_of(svg, 0, NULL, NULL) == 3);
    CHECK(svg && legend_text(text, sizeof text, svg, 0) &&
          !strcmp(text, "ResNet-9 \xc3\xbc" "ber einen langen Namen  mit \xef\xbf\xbd Ende (3 runs)"));
    CHECK(svg && !strstr(svg, "class=\"caption\""));
    free(svg);

    /* errors: nothing written */
    CHECK(support_run("plot nosuch --db %s -o %s", db, x_svg) == 2);
    CHECK(strstr(err_text, "no experiment 'nosuch'") != NULL && !support_exists(x_svg));
    CHECK(support_run("plot --db %s -o %s", support_path("missing.db"), x_svg) == 1);
    CHECK(strstr(err_text, "missing.db") != NULL && !support_exists(x_svg));
    CHECK(support_run("plot --db %s -o %s/no/such/dir/x.svg", db, support_tmpdir()) == 1);
    CHECK(strstr(err_text, "no/such/dir/x.svg") != NULL);
    CHECK(support_run("plot --db %s --target 94 -o %s", db, x_svg) == 2);
    CHECK(strstr(err_text, "--target") != NULL && !support_exists(x_svg));
    CHECK(support_run("plot --db %s --x steps -o %s", db, x_svg) == 2);
    CHECK(strstr(err_text, "--x: expected epoch or time, got 'steps'") != NULL);
    CHECK(!support_exists(x_svg));
    CHECK(support_run("plot --db %s -o %s --x", db, x_svg) == 2);
    CHECK(strstr(err_text, "--x needs a value") != NULL && !support_exists(x_svg));
    CHECK(support_run("plot --db %s --seeds=3 -o %s", db, x_svg) == 2);
    CHECK(strstr(err_text, "--seeds takes no value") != NULL && !support_exists(x_svg));
    CHECK(support_run("plot --db %s --frobnicate", db) == 2);
    CHECK(support_run("plot --db %s -o", db) == 2);
    CHECK(support_run("plot --db %s --set train.epochs=2 -o %s", db, x_svg) == 2);
    CHECK(!support_exists(x_svg));
    CHECK(support_run("plot --help") == 0);
    CHECK(strstr(support_run_out(), "--seeds") && strstr(support_run_out(), "--x epoch|time"));

    /* a config that is not in the database */
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    if (src) {
        CHECK(support_run("plot %s/tests/e2e/tiny.cfg --db %s -o %s", src, db, x_svg) == 2);
        CHECK(strstr(err_text, "tiny.cfg") != NULL && !support_exists(x_svg));
    }
    /* the file written before is replaced whole, and no temporary is left behind */
    CHECK(support_run("plot %lld --db %s -o %s", (long long)fx->a, db, svg_path) == 0);
    svg = support_read_file(svg_path, NULL);
    CHECK(svg && count_of(svg, "<polyline") == 3);
    free(svg);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q tmp", support_tmpdir());
    CHECK(system(cmd) != 0);

    test_unreadable_config();
    test_real_run();
}

int main(int argc, char **argv)
{
    struct fixture fx = {0, 0};
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "%s/tests/e2e/tiny.cfg", src ? src : "");
    if (!src || !fopen_ok(cfg)) {
        fprintf(stderr, "test_plot: skipped: the fixture needs $DAWNRUN_SOURCE_DIR/tests/e2e/"
                "tiny.cfg (ctest sets it)\n");
        return 77;
    }
    if (support_tmpdir_make("/tmp/dawnrun-test-plot-XXXXXX") != 0) return 1;
    const char *db = support_path("fixture.db");
    build_fixture(db, &fx);
    if (argc > 1) {
        support_run_program(argv[1], 0);
        test_command(db, &fx);
    } else {
        struct results *rdb = NULL;
        test_checker();
        test_render(db, &fx);
        test_legend();
        test_strip();
        CHECK(results_open_readonly(&rdb, db) == DR_OK);
        if (rdb) {
            test_median(rdb, &fx);
            test_lr(rdb, &fx);
        }
        results_close(rdb);
    }
    return support_tmpdir_finish(check_finish(argc > 1 ? "test_plot (command)" : "test_plot"));
}

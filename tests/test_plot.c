/* Tests of the SVG training curves (runner/plot_svg.c) and of `dawnrun plot`. A fixture
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
#include "results/results.h"
#include "runner/plot_svg.h"

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

/* ---- the fixture ------------------------------------------------------------------------- */

static const char A_NAME[] = "a<b & \"c\", 'd'";
static const char A_ESCAPED[] = "a&lt;b &amp; &quot;c&quot;, &apos;d&apos;";
/* a non-ASCII letter, a control character, a byte that is not UTF-8; too long for the
 * legend */
static const char B_NAME[] = "ResNet-9 \xc3\xbc" "ber einen langen Namen\x01 mit \xff Ende";
#define BIG_SEED UINT64_MAX

static struct results_epoch epoch_row(int k, uint64_t seed)
{
    struct results_epoch e;
    memset(&e, 0, sizeof e);
    e.epoch = k;
    e.lr = 0.1 * k;
    e.train_loss = 2.0 / k + 0.01 * (double)(seed % 7);
    e.train_acc = 0.4 + 0.1 * k;
    e.test_loss = 1.8 / k;
    e.test_acc = 0.5 + 0.11 * k + 0.001 * (double)(seed % 7);
    e.train_time = 10.0;
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
static void run_epochs(struct results *db, int64_t exp, uint64_t seed, int n, int nan_from,
                       enum results_run_status status, const char *error)
{
    struct results_lease l = claim_seed(db, exp, seed);
    double acc = NAN;
    for (int k = 1; k <= n; k++) {
        struct results_epoch e = epoch_row(k, seed);
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
 * epoch whose accuracy and loss are NaN (only its lr is a number). */
static void build_fixture(const char *path, struct fixture *fx)
{
    struct results *db = NULL;
    CHECK(results_open(&db, path) == DR_OK);
    if (!db) return;
    struct results_experiment xa = {0}, xb = {0};
    xa.name = A_NAME;
    xa.config_hash = "hash-a-0123456789";
    xa.config_text = "a";
    xa.dawnrun_version = "test";
    xa.engine = "cpu";
    xa.target_accuracy = 0.94;
    xb = xa;
    xb.name = B_NAME;
    xb.config_hash = "hash-b-0123456789";
    xb.config_text = "b";
    xb.target_accuracy = 0.93;
    CHECK(results_experiment_register(db, &fx->a, NULL, &xa) == DR_OK);
    CHECK(results_experiment_register(db, &fx->b, NULL, &xb) == DR_OK);
    const uint64_t sa[] = {0, 1, 2}, sb[] = {0, 1, 2, BIG_SEED};
    CHECK(results_runs_ensure(db, NULL, fx->a, sa, 3, 3) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, fx->b, sb, 4, 3) == DR_OK);
    for (int s = 0; s < 3; s++) run_epochs(db, fx->a, (uint64_t)s, 4, 0, RUN_DONE, NULL);
    run_epochs(db, fx->b, 0, 4, 0, RUN_DONE, NULL);
    run_epochs(db, fx->b, 1, 2, 2, RUN_DIVERGED, "loss became NaN at epoch 2");
    run_epochs(db, fx->b, BIG_SEED, 1, 1, RUN_FAILED, "out of memory");
    results_close(db);
}

/* The chart of experiments ids[0..n) as `dawnrun plot` draws it, from the results API.
 * Free with free_chart. */
static struct plot_chart load_chart(struct results *db, const int64_t *ids, int n, double target)
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

    /* names escaped, cut in the legend, whole in the tooltips */
    CHECK(strstr(svg, A_ESCAPED) != NULL);
    CHECK(strstr(svg, "a<b") == NULL && strstr(svg, "\"c\"") == NULL);
    CHECK(strstr(svg, "ResNet-9 \xc3\xbc" "ber einen langen Namen  mit \xef\xbf\xbd Ende") != NULL);
    CHECK(strstr(svg, "\x01") == NULL && strstr(svg, "\xff") == NULL);
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

    struct plot_chart c = load_chart(db, ids, 2, NAN);
    char *svg = render(&c, &rc);
    CHECK(rc == DR_OK);
    check_fixture_svg(svg, 2);
    FILE *f = fopen(support_path("inprocess.svg"), "w");   /* kept on failure, to look at */
    if (f && svg) fputs(svg, f);
    if (f) fclose(f);
    free(svg);
    free_chart(&c);

    /* one target for all: one dashed line, at 90 % */
    c = load_chart(db, ids, 2, 0.90);
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

static void test_command(const char *db, const struct fixture *fx)
{
    const char *err_text = support_run_err();   /* rewritten by each support_run */
    const char *svg_path = support_path("all.svg"), *x_svg = support_path("x.svg");

    /* every experiment */
    CHECK(support_run("plot --db %s -o %s", db, svg_path) == 0);
    char *svg = support_read_file(svg_path, NULL);
    check_fixture_svg(svg, 2);
    free(svg);
    char *out = support_read_file(support_path("out.txt"), NULL);
    CHECK(out && strstr(out, "2 experiments, 6 runs with epochs") != NULL);
    free(out);

    /* one experiment by id, one by hash prefix; --target; output to stdout */
    CHECK(support_run("plot %lld hash-b-01 --target 0.9 --db %s -o -", (long long)fx->a, db) == 0);
    svg = support_read_file(support_path("out.txt"), NULL);
    int n = 0;
    CHECK(svg && xml_check(svg, &n) == NULL);
    CHECK(svg && count_of(svg, "<polyline") == 16 && count_of(svg, "class=\"target\"") == 1);
    free(svg);
    CHECK(strstr(err_text, "-: 2 experiments") != NULL);
    CHECK(support_run("plot hash-b-01 --db %s -o %s", db, support_path("b.svg")) == 0);
    svg = support_read_file(support_path("b.svg"), NULL);
    CHECK(svg && count_of(svg, "<polyline") == 7 && lines_of(svg, 0, NULL, NULL) == 7);
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
    CHECK(support_run("plot --db %s --frobnicate", db) == 2);
    CHECK(support_run("plot --db %s -o", db) == 2);
    CHECK(support_run("plot --db %s --set train.epochs=2 -o %s", db, x_svg) == 2);
    CHECK(!support_exists(x_svg));
    CHECK(support_run("plot --help") == 0);

    /* a config that is not in the database */
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    if (src) {
        CHECK(support_run("plot %s/tests/e2e/tiny.cfg --db %s -o %s", src, db, x_svg) == 2);
        CHECK(strstr(err_text, "tiny.cfg") != NULL && !support_exists(x_svg));
    }
    /* the file written before is replaced whole, and no temporary is left behind */
    CHECK(support_run("plot %lld --db %s -o %s", (long long)fx->a, db, svg_path) == 0);
    svg = support_read_file(svg_path, NULL);
    CHECK(svg && count_of(svg, "<polyline") == 9);
    free(svg);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q tmp", support_tmpdir());
    CHECK(system(cmd) != 0);
}

int main(int argc, char **argv)
{
    struct fixture fx = {0, 0};
    if (support_tmpdir_make("/tmp/dawnrun-test-plot-XXXXXX") != 0) return 1;
    const char *db = support_path("fixture.db");
    build_fixture(db, &fx);
    if (argc > 1) {
        support_run_program(argv[1], 0);
        test_command(db, &fx);
    } else {
        test_checker();
        test_render(db, &fx);
    }
    return support_tmpdir_finish(check_finish(argc > 1 ? "test_plot (command)" : "test_plot"));
}

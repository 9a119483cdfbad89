/* Tests of the results page, `dawnrun report --format html`. A fixture database is built
 * through the results API: three experiments from tests/e2e/tiny.cfg with one override
 * each (so their params differ), one named with markup and '&', one with notes and a
 * run error holding markup; done, diverged and pending runs with epochs. The page is
 * written by the command and checked as text: one self-contained document (one inline
 * style, no script, no URL, no external resource), every user text escaped, each
 * experiment's sentence as the table format prints it, one inline SVG with the plot's
 * lines, the differing params, one <details> per run with its epoch rows. `-o` is checked
 * for the other formats against their standard output.
 *
 * Without arguments the page is written by report_print in this process; given the
 * dawnrun executable as argv[1] the command writes it (and -o and the errors are
 * checked); `test_report_html --make-db PATH` only builds the fixture database at PATH,
 * for tests/report_html_browser.sh. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support.h"
#include "engine/core/experiment.h"
#include "results/results.h"
#include "runner/report/report.h"

/* A plain name, one that needs escaping in HTML, and a long one with no break (which
 * must wrap, not widen the page on a phone). */
static const char *const NAMES[3] = {
    "tiny-base", "<script>alert(\"x\")</script> & co",
    "cutout_0_'ünï'_with_a_name_longer_than_a_phone_screen_is_wide_and_no_break_in_it",
};
static const char *const SETS[3] = {NULL, "train.batch_size=256", "augment.cutout=0"};
#define NOTES "tried <b>half</b> the batch & more"
#define RUN_ERROR "loss became NaN <at> epoch 2 & stopped"
#define N_EPOCHS 4
#define N_RUNS 9   /* 3 done, 3 done, and 1 done, 1 diverged, 1 pending */

static int load_tiny(struct experiment *e, const char *set)
{
    char path[1024];
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/e2e/tiny.cfg", src ? src : ".");
    const char *sets[1] = {set};
    return experiment_load(e, path, sets, set ? 1 : 0);
}

static struct results_lease claim(struct results *db, int64_t exp)
{
    struct results_claim req;
    struct results_lease l;
    results_claim_init(&req);
    req.experiment_ids = &exp;
    req.n_experiments = 1;
    memset(&l, 0, sizeof l);
    CHECK(results_claim_run(db, &l, &req) == DR_OK);
    return l;
}

/* A done run: accuracy climbing to `acc` over N_EPOCHS epochs. */
static void finish_done(struct results *db, const struct results_lease *l, double acc)
{
    const double train = 40.0;
    struct results_outcome o = {RUN_DONE, acc, N_EPOCHS * train, N_EPOCHS * (train + 2.5),
                                -1, -1, NULL};
    for (int k = 1; k <= N_EPOCHS; k++) {
        struct results_epoch e;
        memset(&e, 0, sizeof e);
        e.epoch = k;
        e.lr = 0.4 * (N_EPOCHS - k + 1) / N_EPOCHS;
        e.train_loss = 1.5 / k;
        e.train_acc = 0.5 + 0.1 * k;
        e.test_loss = 1.2 / k;
        e.test_acc = acc - 0.05 * (N_EPOCHS - k);
        e.train_time = train;
        e.test_time = 2.5;
        e.total_time = k * (train + 2.5);
        CHECK(results_epoch_record(db, l, &e) == DR_OK);
        if (o.target_epoch < 0 && e.test_acc >= 0.94) {
            o.target_epoch = k;
            o.target_time = k * train;
        }
    }
    CHECK(results_run_finish(db, l, &o) == DR_OK);
}

static void build_fixture(const char *path)
{
    struct results *db = NULL;
    const uint64_t seeds[3] = {0, 1, 2};
    int64_t ids[3];
    CHECK(results_open(&db, path) == DR_OK);
    if (!db) return;
    for (int i = 0; i < 3; i++) {
        struct experiment e;
        char hash[65];
        CHECK(load_tiny(&e, SETS[i]) == DR_OK);
        experiment_hash(&e, hash);
        struct results_experiment x;
        memset(&x, 0, sizeof x);
        x.name = NAMES[i];
        x.config_hash = hash;
        x.config_text = e.resolved;
        x.dawnrun_version = "0.1.0";
        x.engine = "cpu";
        x.host = "testhost";
        x.target_accuracy = 0.94;
        x.notes = i == 1 ? NOTES : NULL;
        CHECK(results_experiment_register(db, &ids[i], NULL, &x) == DR_OK);
        CHECK(results_runs_ensure(db, NULL, ids[i], seeds, 3, 3) == DR_OK);
        experiment_free(&e);
    }
    for (int i = 0; i < 2; i++)
        for (int s = 0; s < 3; s++) {
            struct results_lease l = claim(db, ids[i]);
            finish_done(db, &l, 0.935 + 0.004 * s + 0.002 * i);
        }
    struct results_lease l = claim(db, ids[2]);
    finish_done(db, &l, 0.9405);
    l = claim(db, ids[2]);
    struct results_epoch e1;
    memset(&e1, 0, sizeof e1);
    e1.epoch = 1;
    e1.lr = 0.1;
    e1.train_loss = NAN;
    e1.train_acc = 0.1;
    e1.test_loss = INFINITY;
    e1.test_acc = 0.1;
    e1.train_time = 40.0;
    e1.test_time = 2.5;
    e1.total_time = 42.5;
    CHECK(results_epoch_record(db, &l, &e1) == DR_OK);
    struct results_outcome div = {RUN_DIVERGED, NAN, NAN, NAN, -1, -1, RUN_ERROR};
    CHECK(results_run_finish(db, &l, &div) == DR_OK);
    results_close(db);
}

/* ---- text helpers ---------------------------------------------------------------------- */

/* s escaped as the page escapes text, in a static buffer. */
static const char *esc(const char *s)
{
    static char buf[4096];
    size_t n = 0;
    for (; *s && n + 8 < sizeof buf; s++) {
        const char *r = *s == '&' ? "&amp;" : *s == '<' ? "&lt;" : *s == '>' ? "&gt;"
                      : *s == '"' ? "&quot;" : *s == '\'' ? "&#39;" : NULL;
        if (r) {
            memcpy(buf + n, r, strlen(r));
            n += strlen(r);
        } else {
            buf[n++] = *s;
        }
    }
    buf[n] = '\0';
    return buf;
}

static int count(const char *hay, const char *needle)
{
    int n = 0;
    for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

/* Whether hay holds needle, ignoring ASCII case. */
static int has_ci(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (const char *p = hay; *p; p++) {
        size_t k = 0;
        while (k < n && p[k] && tolower((unsigned char)p[k]) == tolower((unsigned char)needle[k]))
            k++;
        if (k == n) return 1;
    }
    return 0;
}

/* ---- the page -------------------------------------------------------------------------- */

/* Checks the page html of the fixture at db, whose table format is `table`. */
static void check_page(const char *html, const char *table, const char *db)
{

    /* one self-contained HTML5 document */
    CHECK(!strncmp(html, "<!DOCTYPE html>\n<html lang=\"en\">", 31));
    CHECK(strstr(html, "<meta charset=\"utf-8\">") != NULL);
    CHECK(strstr(html, "<meta name=\"viewport\"") != NULL);
    CHECK(count(html, "<style") == 1);
    CHECK(strstr(html, "</html>\n") != NULL);
    /* no script and nothing fetched: the user text of this fixture holds none of these
     * words, so the whole file may be searched */
    CHECK(!has_ci(html, "<script"));
    CHECK(!has_ci(html, "http"));
    CHECK(!has_ci(html, "src="));
    CHECK(!has_ci(html, "href="));
    CHECK(!has_ci(html, "@import"));
    CHECK(!has_ci(html, "url("));
    CHECK(!has_ci(html, "<link"));
    CHECK(!has_ci(html, "<?xml"));

    /* every user text escaped: the names, the notes, a run's error, the db path */
    for (int i = 0; i < 3; i++) CHECK(strstr(html, esc(NAMES[i])) != NULL);
    CHECK(strstr(html, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; co") != NULL);
    CHECK(strstr(html, esc(NOTES)) != NULL && !strstr(html, "<b>half"));
    CHECK(strstr(html, esc(RUN_ERROR)) != NULL && !strstr(html, "<at>"));
    CHECK(strstr(html, esc(db)) != NULL);
    CHECK(strstr(html, "dawnrun <span id=\"version\">" DAWNRUN_VERSION "</span>") != NULL);

    /* the sections, in order */
    const char *sec[] = {"id=\"summary\"", "id=\"comparisons\"", "id=\"params\"",
                         "id=\"plots\"", "id=\"runs\""};
    const char *prev = html;
    for (size_t k = 0; k < sizeof sec / sizeof sec[0]; k++) {
        const char *at = strstr(html, sec[k]);
        CHECK(at != NULL && at >= prev);
        if (at) prev = at;
    }

    /* the sentences are the table format's: its last lines read "NAME: SENTENCE" */
    int n_sentences = 0;
    for (int i = 0; i < 3; i++) {
        char want[1024], line_start[512];
        snprintf(line_start, sizeof line_start, "\n%s: ", NAMES[i]);
        const char *line = strstr(table, line_start);
        CHECK(line != NULL);
        if (!line) continue;
        line += strlen(line_start);
        char sentence[512];
        size_t len = strcspn(line, "\n");
        snprintf(sentence, sizeof sentence, "%.*s", (int)len, line);
        int m = snprintf(want, sizeof want, "<strong>%s</strong>: ", esc(NAMES[i]));
        snprintf(want + m, sizeof want - (size_t)m, "%s</li>", esc(sentence));
        CHECK(strstr(html, want) != NULL);
        n_sentences += strstr(html, want) != NULL;
    }
    CHECK(n_sentences == 3 && count(html, "class=\"sentence\"") == 3);
    CHECK(strstr(html, "2/3 runs reach 94 % (67 %, 95 % CI 9–99 %)") != NULL);
    CHECK(strstr(html, "exact (Clopper–Pearson) 95 % interval") != NULL);
    CHECK(strstr(html, "1/2 runs reach 94 % (50 %, 95 % CI 1–99 %)") != NULL);
    CHECK(strstr(html, "<th scope=\"row\">runs &gt;= target</th>"
                       "<td>1/3 (33 %, 95 % CI 1–91 %)</td>"
                       "<td>2/3 (67 %, 95 % CI 9–99 %)</td>") != NULL);
    /* the summary's figures and the comparisons' rows */
    CHECK(strstr(html, "<th scope=\"row\">runs done / total</th><td>3/3</td><td>3/3</td>"
                       "<td>1/3</td></tr>") != NULL);
    CHECK(strstr(html, "<th scope=\"row\">Δ mean accuracy vs #1</th><td>+0.20 pp</td>") != NULL);
    CHECK(count(html, "<table class=\"comparisons\">") == 1);
    /* the smallest detectable differences: a row for the accuracy and one for the time */
    CHECK(count(html, "<th scope=\"row\">  detectable (α .05, power .8)</th>") == 2);

    /* one inline SVG: lines for every run with epochs in each of the three panels */
    CHECK(count(html, "<svg") == 1 && count(html, "</svg>") == 1);
    CHECK(strstr(html, "viewBox=\"") != NULL);
    CHECK(count(html, "<polyline class=\"run\"") >= 3 * 7);

    /* the differing params: the two overridden keys, each experiment's value */
    CHECK(count(html, "<table class=\"params\">") == 1);
    const char *params = strstr(html, "<table class=\"params\">");
    CHECK(params && strstr(params, "<code>train.batch_size</code></th><td class=\"param\">128"
                                   "</td><td class=\"param\">256</td><td class=\"param\">128"
                                   "</td>"));
    CHECK(params && strstr(params, "<code>augment.cutout</code></th><td class=\"param\">8"
                                   "</td><td class=\"param\">8</td><td class=\"param\">0"
                                   "</td>"));
    CHECK(params && !strstr(params, "<code>name</code>"));

    /* each run in a <details>, with its epoch rows; NaN and inf as words */
    CHECK(count(html, "<details class=\"run\"") == N_RUNS);
    CHECK(count(html, "<table class=\"epochs\">") == 8);
    CHECK(count(html, "<tr><td>4</td>") == 7);
    CHECK(strstr(html, "<td>nan</td>") != NULL && strstr(html, "<td>inf</td>") != NULL);
    CHECK(strstr(html, "seed 2: pending, 0 epochs") != NULL);
}

/* The report of every experiment of db in format fmt, written by report_print into
 * memory; NULL on failure. */
static char *print_report(const char *db_path, enum report_format fmt)
{
    struct results *db = NULL;
    const int64_t ids[3] = {1, 2, 3};
    char *buf = NULL;
    size_t len = 0;
    CHECK(results_open_readonly(&db, db_path) == DR_OK);
    FILE *mem = open_memstream(&buf, &len);
    CHECK(mem != NULL);
    if (db && mem) CHECK(report_print(mem, db, ids, 3, NAN, fmt) == DR_OK);
    if (mem) fclose(mem);
    results_close(db);
    return buf;
}

static void test_page(const char *db)
{
    char *html = print_report(db, REPORT_HTML), *table = print_report(db, REPORT_TABLE);
    CHECK(html && table);
    if (html && table) check_page(html, table, db);
    free(html);
    free(table);
}

/* The command writes the same page to the file -o names, and nothing to stdout. */
static void test_command_page(const char *db)
{
    const char *page = support_path("page.html");
    CHECK(support_run("report --db %s --format html -o %s", db, page) == 0);
    CHECK(support_run_out()[0] == '\0');
    char *html = support_read_file(page, NULL);
    CHECK(support_run("report --db %s", db) == 0);
    char *table = strdup(support_run_out());
    CHECK(html && table);
    if (html && table) check_page(html, table, db);
    free(html);
    free(table);
}

/* -o writes the other formats as they go to standard output; errors name html. */
static void test_output_flag(const char *db)
{
    const char *fmts[] = {"table", "csv", "json", "markdown"};
    for (size_t k = 0; k < sizeof fmts / sizeof fmts[0]; k++) {
        const char *file = support_path(fmts[k]);
        CHECK(support_run("report --db %s --format %s", db, fmts[k]) == 0);
        char *want = strdup(support_run_out());
        CHECK(support_run("report --db %s --format=%s --output %s", db, fmts[k], file) == 0);
        CHECK(support_run_out()[0] == '\0');
        char *got = support_read_file(file, NULL);
        CHECK(want && got && !strcmp(want, got));
        free(want);
        free(got);
    }
    CHECK(support_run("report --db %s --format xml -o %s", db, support_path("x.html")) == 2);
    CHECK(strstr(support_run_err(), "markdown or html") != NULL);
    CHECK(!support_exists(support_path("x.html")));
    CHECK(support_run("report --db %s -o", db) == 2);
    /* an experiment that does not exist leaves no file behind */
    CHECK(support_run("report --db %s nosuch --format html -o %s", db,
                      support_path("y.html")) == 2);
    CHECK(!support_exists(support_path("y.html")));
    /* -o - is standard output */
    CHECK(support_run("report --db %s --format html -o -", db) == 0);
    CHECK(!strncmp(support_run_out(), "<!DOCTYPE html>", 15));
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--make-db")) {
        build_fixture(argv[2]);
        return check_finish("test_report_html (fixture)");
    }
    if (support_tmpdir_make("/tmp/dawnrun-test-html-XXXXXX") != 0) return 1;
    const char *db = support_path("fixture.db");
    build_fixture(db);
    if (argc > 1) {
        support_run_program(argv[1], 0);
        test_command_page(db);
        test_output_flag(db);
    } else {
        test_page(db);
    }
    return support_tmpdir_finish(check_finish(argc > 1 ? "test_report_html (command)"
                                                       : "test_report_html"));
}

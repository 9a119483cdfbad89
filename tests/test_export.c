/* Tests of `dawnrun export` and of the writers it shares with the report
 * (runner/cli/output.c). In process: exact decimals, CSV fields and JSON strings parsed back
 * with the strict readers of tests/report_check.c, and the all-or-nothing output file.
 * Given the dawnrun executable as argv[1]: a fixture database built through the results
 * API (a name with a comma, quotes and a line break; notes; done, diverged, failed and
 * pending runs; NaN values; the seed 2^64 - 1) is exported as CSV (the epochs table and
 * the runs table) and JSON, each parsed back and compared value for value with what was
 * recorded; then selection by id and hash prefix, -o, a version-1 database, and the
 * error paths. Invalid UTF-8 in a name comes out of every text writer (export CSV and
 * JSON, report table, CSV, JSON and Markdown, the SVG plot) as U+FFFD: python3 reads each
 * output back strictly, JSON with json.load. */
#include <math.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support.h"
#include "report_check.h"
#include "results/results.h"
#include "base/utf8.h"
#include "runner/cli/output.h"

extern const char schema_results_v1_sql[];   /* the frozen version-1 schema */

/* ---- the shared writers, in process ------------------------------------------------------ */

/* A name with invalid UTF-8: a stray byte pair, a sequence cut short by a space, an
 * overlong '/', a surrogate; and how every writer must spell it. */
static const char BAD_NAME[] = "caf\xc3\xa9 \xff\xfe half \xe2\x82 end \xc0\xaf \xed\xa0\x80";
#define R UTF8_REPLACEMENT
static const char BAD_FIXED[] = "caf\xc3\xa9 " R R " half " R R " end " R R " " R R R;

static void test_utf8(void)
{
    uint32_t cp = 0;
    CHECK(utf8_decode(&cp, "A") == 1 && cp == 'A');
    CHECK(utf8_decode(&cp, "\xc3\xbc") == 2 && cp == 0xfc);
    CHECK(utf8_decode(&cp, "\xe2\x82\xac") == 3 && cp == 0x20ac);
    CHECK(utf8_decode(&cp, "\xf0\x9f\x98\x80") == 4 && cp == 0x1f600);
    CHECK(utf8_decode(&cp, "\xf4\x8f\xbf\xbf") == 4 && cp == 0x10ffff);
    static const char *const bad[] = {"\x80", "\xbf", "\xc0\xaf", "\xc1\xbf", "\xe0\x80\xaf",
                                      "\xed\xa0\x80", "\xf0\x80\x80\xaf", "\xf4\x90\x80\x80",
                                      "\xf5\x80\x80\x80", "\xff", "\xe2\x82", "\xe2\x82 ",
                                      "\xc3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(utf8_decode(&cp, bad[i]) == 0);
    CHECK(utf8_valid("caf\xc3\xa9 \xe2\x82\xac") && utf8_valid(NULL) && !utf8_valid(BAD_NAME));
    char *fixed = utf8_repair(BAD_NAME);
    CHECK(fixed && strcmp(fixed, BAD_FIXED) == 0 && utf8_valid(fixed));
    free(fixed);

    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    utf8_fputs(f, BAD_NAME);
    fputc('|', f);
    output_json_string(f, BAD_NAME);
    fputc('|', f);
    output_csv_text(f, BAD_NAME, 1);
    output_text(f, "<%s>", BAD_NAME);
    fclose(f);
    char want[512];
    snprintf(want, sizeof want, "%s|\"%s\"|%s\n<%s>", BAD_FIXED, BAD_FIXED, BAD_FIXED, BAD_FIXED);
    CHECK(text && strcmp(text, want) == 0);
    free(text);
}

static void test_writers(void)
{
    char buf[64];
    const double values[] = {0.1, 1.0 / 3.0, 1e-300, 161.2, -2.5, 0.9413, 1796023371.200998};
    for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
        output_exact(buf, sizeof buf, values[i]);
        CHECK(strtod(buf, NULL) == values[i]);
    }
    output_exact(buf, sizeof buf, 0.1);
    CHECK(strcmp(buf, "0.1") == 0);
    output_exact(buf, sizeof buf, NAN);
    CHECK(buf[0] == '\0');
    output_exact(buf, sizeof buf, INFINITY);
    CHECK(buf[0] == '\0');

    /* CSV fields that need quoting, parsed back */
    static const char *const fields[] = {"plain", "a,b", "say \"hi\"", "two\nlines", " edge",
                                         "", "\xc3\xbc"};
    const int n = (int)(sizeof fields / sizeof fields[0]);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    for (int i = 0; i < n; i++) output_csv_text(f, fields[i], 0);
    output_csv_text(f, NULL, 0);
    output_csv_num(f, 0.25, 0);
    output_csv_num(f, NAN, 1);
    fclose(f);
    struct csv c;
    const char *err = NULL;
    CHECK(csv_parse(&c, text, &err) == 0);
    CHECK(c.n_records == 1 && c.n_fields[0] == n + 3);
    if (c.n_records == 1 && c.n_fields[0] == n + 3) {
        for (int i = 0; i < n; i++) CHECK(strcmp(c.fields[0][i], fields[i]) == 0);
        CHECK(strcmp(c.fields[0][n], "") == 0 && strcmp(c.fields[0][n + 1], "0.25") == 0 &&
              strcmp(c.fields[0][n + 2], "") == 0);
    }
    csv_free(&c);
    free(text);

    /* JSON strings and numbers, parsed back */
    const char *tricky = "q\"b\\s\n\t\x01 \xc3\xbc";
    f = open_memstream(&text, &len);
    fputs("{\"s\": ", f);
    output_json_string(f, tricky);
    fputs(", \"z\": ", f);
    output_json_string(f, NULL);
    output_json_num(f, ", ", "x", 0.1);
    output_json_num(f, ", ", "nan", NAN);
    fputc('}', f);
    fclose(f);
    struct json j;
    CHECK(json_parse(&j, text, &err) == 0);
    const struct json *s = json_get(&j, "s");
    CHECK(s && s->type == JSON_STRING && strcmp(s->string, tricky) == 0);
    CHECK(json_get(&j, "z") && json_get(&j, "z")->type == JSON_NULL);
    CHECK(json_number(json_get(&j, "x")) == 0.1);
    CHECK(json_get(&j, "nan") && json_get(&j, "nan")->type == JSON_NULL);
    json_free(&j);
    free(text);

    /* the output file: replaced whole on commit, untouched on abort or failure */
    struct output_file o;
    const char *p = support_path("out.csv");
    CHECK(output_file_open(&o, p) == DR_OK);
    fputs("first\n", o.f);
    CHECK(!support_exists(p));   /* not before the commit */
    CHECK(output_file_commit(&o) == DR_OK);
    text = support_read_file(p, NULL);
    CHECK(text && strcmp(text, "first\n") == 0);
    free(text);
    CHECK(output_file_open(&o, p) == DR_OK);
    fputs("second, half written", o.f);
    output_file_abort(&o);
    text = support_read_file(p, NULL);
    CHECK(text && strcmp(text, "first\n") == 0);
    free(text);
    output_file_abort(&o);   /* twice is harmless */
    fflush(stderr);
    CHECK(output_file_open(&o, support_path("no/such/dir/x.csv")) == DR_ERR_IO);
    CHECK(o.f == NULL && o.tmp == NULL);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q tmp", support_tmpdir());
    CHECK(system(cmd) != 0);   /* no temporary left behind */
}

/* ---- the fixture --------------------------------------------------------------------------- */

static const char A_NAME[] = "dawn, \"quoted\"\nsecond line";
static const char A_NOTES[] = "baseline, before the cutout fix";
static const char FAIL_TEXT[] = "out of memory, at step 3\nretry later";
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
    e.train_time = 10.0 + 1.0 / 3.0;
    e.test_time = 1.0;
    e.total_time = 11.0 * k;
    return e;
}

static void run_epochs(struct results *db, int64_t exp, uint64_t seed, int n, int nan_from,
                       enum results_run_status status, const char *error)
{
    struct results_claim req;
    struct results_lease l;
    results_claim_init(&req);
    req.experiment_ids = &exp;
    req.n_experiments = 1;
    req.seeds = &seed;
    req.n_seeds = 1;
    CHECK(results_claim_run(db, &l, &req) == DR_OK && l.run_id > 0);
    double acc = NAN;
    for (int k = 1; k <= n; k++) {
        struct results_epoch e = epoch_row(k, seed);
        if (nan_from > 0 && k >= nan_from) e.test_acc = e.train_loss = e.test_loss = NAN;
        CHECK(results_epoch_record(db, &l, &e) == DR_OK);
        acc = e.test_acc;
    }
    struct results_outcome o = {status, status == RUN_DONE ? acc : NAN, 40.5, 44.25,
                                status == RUN_DONE ? 30.0 : -1, status == RUN_DONE ? 3 : -1,
                                error};
    CHECK(results_run_finish(db, &l, &o) == DR_OK);
}

struct fixture {
    int64_t a, b;
};

/* A (notes set): seeds 0-2 done, 4 epochs. B: seed 0 done; seed 1 diverged in epoch 2;
 * seed 2 pending; seed 2^64 - 1 failed after one epoch with NaN accuracy and loss. */
static void build_fixture(const char *path, struct fixture *fx)
{
    struct results *db = NULL;
    CHECK(results_open(&db, path) == DR_OK);
    if (!db) return;
    struct results_experiment xa = {0}, xb;
    xa.name = A_NAME;
    xa.config_hash = "hash-a-0123456789";
    xa.config_text = "train { epochs = 4; }\n";
    xa.dawnrun_version = "test";
    xa.engine = "cpu";
    xa.host = "node1";
    xa.target_accuracy = 0.94;
    xb = xa;
    xb.name = "b-exp";
    xb.config_hash = "hash-b-0123456789";
    xb.config_text = "b";
    xb.target_accuracy = NAN;
    xb.host = NULL;
    CHECK(results_experiment_register(db, &fx->a, NULL, &xa) == DR_OK);
    CHECK(results_experiment_register(db, &fx->b, NULL, &xb) == DR_OK);
    CHECK(results_experiment_set_notes(db, fx->a, A_NOTES) == DR_OK);
    const uint64_t sa[] = {0, 1, 2}, sb[] = {0, 1, 2, BIG_SEED};
    CHECK(results_runs_ensure(db, NULL, fx->a, sa, 3, 3) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, fx->b, sb, 4, 3) == DR_OK);
    for (int s = 0; s < 3; s++) run_epochs(db, fx->a, (uint64_t)s, 4, 0, RUN_DONE, NULL);
    run_epochs(db, fx->b, 0, 4, 0, RUN_DONE, NULL);
    run_epochs(db, fx->b, 1, 2, 2, RUN_DIVERGED, "loss became NaN at epoch 2");
    run_epochs(db, fx->b, BIG_SEED, 1, 1, RUN_FAILED, FAIL_TEXT);
    results_close(db);
}

/* ---- the command -------------------------------------------------------------------------- */

/* Record r's field `col` of c (NULL when missing). */
static const char *field(const struct csv *c, int r, const char *col)
{
    int k = csv_column(c, col);
    if (k < 0 || r >= c->n_records || k >= c->n_fields[r]) return NULL;
    return c->fields[r][k];
}

static int field_is(const struct csv *c, int r, const char *col, const char *want)
{
    const char *v = field(c, r, col);
    return v && strcmp(v, want) == 0;
}

/* The field read back is exactly the double v. */
static int field_num(const struct csv *c, int r, const char *col, double v)
{
    const char *s = field(c, r, col);
    return s && *s && strtod(s, NULL) == v;
}

/* The record of the epochs table with this seed and epoch, in experiment `name`. */
static int epoch_record(const struct csv *c, const char *name, const char *seed, int epoch)
{
    char ep[16];
    snprintf(ep, sizeof ep, "%d", epoch);
    for (int r = 1; r < c->n_records; r++)
        if (field_is(c, r, "experiment", name) && field_is(c, r, "seed", seed) &&
            field_is(c, r, "epoch", ep))
            return r;
    return -1;
}

static int run_record(const struct csv *c, const char *name, const char *seed)
{
    for (int r = 1; r < c->n_records; r++)
        if (field_is(c, r, "experiment", name) && field_is(c, r, "seed", seed)) return r;
    return -1;
}

static void check_csv_epochs(const char *text)
{
    struct csv c;
    const char *err = NULL;
    CHECK(text && csv_parse(&c, text, &err) == 0);
    if (!text || err) return;
    static const char *const cols[] = {
        "experiment_id", "experiment", "run_id", "seed", "status", "epoch", "attempt", "lr",
        "train_loss", "train_acc", "test_loss", "test_acc", "train_time", "test_time",
        "total_time", "recorded_at"};
    const int n_cols = (int)(sizeof cols / sizeof cols[0]);
    CHECK(c.n_records == 1 + 12 + 4 + 2 + 1);
    CHECK(c.n_fields[0] == n_cols);
    for (int k = 0; k < n_cols && k < c.n_fields[0]; k++)
        CHECK(strcmp(c.fields[0][k], cols[k]) == 0);
    for (int r = 1; r < c.n_records; r++) CHECK(c.n_fields[r] == n_cols);

    int r = epoch_record(&c, A_NAME, "1", 3);
    struct results_epoch e = epoch_row(3, 1);
    CHECK(r > 0);
    CHECK(field_is(&c, r, "status", "done") && field_is(&c, r, "attempt", "1"));
    CHECK(field_num(&c, r, "lr", e.lr) && field_num(&c, r, "train_loss", e.train_loss));
    CHECK(field_num(&c, r, "train_acc", e.train_acc) &&
          field_num(&c, r, "test_loss", e.test_loss));
    CHECK(field_num(&c, r, "test_acc", e.test_acc) &&
          field_num(&c, r, "train_time", e.train_time));
    CHECK(field_num(&c, r, "test_time", e.test_time) &&
          field_num(&c, r, "total_time", e.total_time));
    const char *rec = field(&c, r, "recorded_at");
    CHECK(rec && strtod(rec, NULL) > 1.6e9);

    r = epoch_record(&c, "b-exp", "18446744073709551615", 1);
    CHECK(r > 0 && field_is(&c, r, "status", "failed"));
    CHECK(field_is(&c, r, "test_acc", "") && field_is(&c, r, "train_loss", "") &&
          field_num(&c, r, "lr", 0.1));
    r = epoch_record(&c, "b-exp", "1", 2);
    CHECK(r > 0 && field_is(&c, r, "status", "diverged") && field_is(&c, r, "test_acc", ""));
    CHECK(run_record(&c, "b-exp", "2") < 0);   /* the pending run has no epochs */
    csv_free(&c);
}

static void check_csv_runs(const char *text)
{
    struct csv c;
    const char *err = NULL;
    CHECK(text && csv_parse(&c, text, &err) == 0);
    if (!text || err) return;
    CHECK(c.n_records == 1 + 7);
    CHECK(c.n_fields[0] == 23 && csv_column(&c, "error") >= 0 && csv_column(&c, "epochs") >= 0);
    int r = run_record(&c, A_NAME, "2");
    struct results_epoch last = epoch_row(4, 2);
    CHECK(r > 0 && field_is(&c, r, "status", "done") && field_is(&c, r, "epochs", "4"));
    CHECK(field_num(&c, r, "final_test_acc", last.test_acc) &&
          field_num(&c, r, "train_time", 40.5) && field_num(&c, r, "total_time", 44.25) &&
          field_num(&c, r, "target_time", 30.0) && field_is(&c, r, "target_epoch", "3"));
    CHECK(field_is(&c, r, "config_hash", "hash-a-0123456789") && field_is(&c, r, "error", ""));
    CHECK(field_is(&c, r, "lease_expires", "") && field(&c, r, "pid") && *field(&c, r, "pid"));
    r = run_record(&c, "b-exp", "2");
    CHECK(r > 0 && field_is(&c, r, "status", "pending") && field_is(&c, r, "pid", "") &&
          field_is(&c, r, "started_at", "") && field_is(&c, r, "host", "") &&
          field_is(&c, r, "epochs", "0") && field_is(&c, r, "attempt", "0") &&
          field_is(&c, r, "target_epoch", ""));
    r = run_record(&c, "b-exp", "18446744073709551615");
    CHECK(r > 0 && field_is(&c, r, "error", FAIL_TEXT) && field_is(&c, r, "final_test_acc", ""));
    csv_free(&c);
}

static void check_json(const char *text, const struct fixture *fx)
{
    struct json j;
    const char *err = NULL;
    CHECK(text && json_parse(&j, text, &err) == 0);
    if (!text || err) return;
    const struct json *xs = json_get(&j, "experiments");
    CHECK(xs && xs->type == JSON_ARRAY && xs->n == 2);
    const struct json *a = json_at(xs, 0), *b = json_at(xs, 1);
    CHECK(json_number(json_get(a, "id")) == (double)fx->a);
    CHECK(json_get(a, "name") && strcmp(json_get(a, "name")->string, A_NAME) == 0);
    CHECK(json_get(a, "notes") && strcmp(json_get(a, "notes")->string, A_NOTES) == 0);
    CHECK(json_get(a, "config_text") &&
          strcmp(json_get(a, "config_text")->string, "train { epochs = 4; }\n") == 0);
    CHECK(json_number(json_get(a, "target_accuracy")) == 0.94);
    CHECK(json_get(b, "target_accuracy") && json_get(b, "target_accuracy")->type == JSON_NULL);
    CHECK(json_get(b, "notes") && json_get(b, "notes")->type == JSON_NULL);
    CHECK(json_get(b, "host") && json_get(b, "host")->type == JSON_NULL);
    const struct json *ra = json_get(a, "runs"), *rb = json_get(b, "runs");
    CHECK(ra && ra->n == 3 && rb && rb->n == 4);
    int epochs = 0;
    for (int i = 0; ra && i < ra->n; i++) {
        const struct json *eps = json_get(json_at(ra, i), "epochs");
        CHECK(eps && eps->n == 4);
        epochs += eps ? eps->n : 0;
        for (int k = 0; eps && k < eps->n; k++) {
            struct results_epoch want = epoch_row(k + 1, (uint64_t)i);
            const struct json *e = json_at(eps, k);
            CHECK(json_number(json_get(e, "epoch")) == k + 1);
            CHECK(json_number(json_get(e, "test_acc")) == want.test_acc &&
                  json_number(json_get(e, "train_loss")) == want.train_loss &&
                  json_number(json_get(e, "train_time")) == want.train_time);
        }
    }
    CHECK(epochs == 12);
    /* B, by seed order as stored: the pending run, the failed one with its NaN epoch */
    for (int i = 0; rb && i < rb->n; i++) {
        const struct json *r = json_at(rb, i);
        const struct json *st = json_get(r, "status");
        const struct json *eps = json_get(r, "epochs");
        CHECK(st && st->type == JSON_STRING && eps && eps->type == JSON_ARRAY);
        if (!st || !eps) continue;
        if (!strcmp(st->string, "pending"))
            CHECK(eps->n == 0 && json_get(r, "pid")->type == JSON_NULL &&
                  json_get(r, "started_at")->type == JSON_NULL);
        if (!strcmp(st->string, "failed")) {
            CHECK(eps->n == 1 && json_get(json_at(eps, 0), "test_acc")->type == JSON_NULL);
            CHECK(json_get(r, "error") && strcmp(json_get(r, "error")->string, FAIL_TEXT) == 0);
            CHECK(json_get(r, "target_epoch")->type == JSON_NULL);
        }
    }
    CHECK(strstr(text, "\"seed\": 18446744073709551615") != NULL);   /* exact, not rounded */
    json_free(&j);
}

/* A version-1 database (as dawnrun 0.1 wrote it) with one experiment and run. */
static void make_v1(const char *path)
{
    int rc = support_sql_exec(path, schema_results_v1_sql);
    if (rc == SQLITE_OK)
        rc = support_sql_exec(path,
            "INSERT INTO experiments(id, name, config_hash, config_text, dawnrun_version,"
            " engine, created_at) VALUES (1, 'old', 'hash-old-0123', 't', '0.1.0', 'cpu', 1);"
            "INSERT INTO runs(experiment_id, seed, status, created_at)"
            " VALUES (1, 5, 'pending', 1);");
    CHECK(rc == SQLITE_OK);
}

static void test_command(const char *db, const struct fixture *fx)
{
    const char *err_text = support_run_err();   /* rewritten by each support_run */
    char *text;

    CHECK(support_run("export --db %s --format csv", db) == 0);
    text = support_read_file(support_path("out.txt"), NULL);
    check_csv_epochs(text);
    free(text);
    CHECK(support_run("export --db %s", db) == 0);   /* csv, epochs: the default */
    text = support_read_file(support_path("out.txt"), NULL);
    check_csv_epochs(text);
    free(text);

    CHECK(support_run("export --db %s --format csv --table runs", db) == 0);
    text = support_read_file(support_path("out.txt"), NULL);
    check_csv_runs(text);
    free(text);

    CHECK(support_run("export --db %s --format json -o %s", db, support_path("all.json")) == 0);
    text = support_read_file(support_path("all.json"), NULL);
    check_json(text, fx);
    free(text);
    text = support_read_file(support_path("out.txt"), NULL);
    CHECK(text && text[0] == '\0');   /* -o: nothing on stdout */
    free(text);

    /* selection: by id, by hash prefix */
    CHECK(support_run("export %lld --db %s --format json", (long long)fx->b, db) == 0);
    text = support_read_file(support_path("out.txt"), NULL);
    struct json j;
    const char *err = NULL;
    CHECK(text && json_parse(&j, text, &err) == 0);
    if (text && !err) {
        const struct json *xs = json_get(&j, "experiments");
        CHECK(xs && xs->n == 1 && json_number(json_get(json_at(xs, 0), "id")) == (double)fx->b);
        json_free(&j);
    }
    free(text);
    CHECK(support_run("export hash-a-01 --db %s --table runs", db) == 0);
    text = support_read_file(support_path("out.txt"), NULL);
    struct csv c;
    CHECK(text && csv_parse(&c, text, &err) == 0);
    if (text && !err) {
        CHECK(c.n_records == 4);
        csv_free(&c);
    }
    free(text);

    /* a version-1 database is read as it is (no notes), and not changed */
    const char *old = support_path("v1.db");
    make_v1(old);
    CHECK(support_run("export --db %s --format json", old) == 0);
    text = support_read_file(support_path("out.txt"), NULL);
    CHECK(text && json_parse(&j, text, &err) == 0);
    if (text && !err) {
        const struct json *x = json_at(json_get(&j, "experiments"), 0);
        CHECK(x && json_get(x, "notes") && json_get(x, "notes")->type == JSON_NULL);
        CHECK(json_get(x, "runs") && json_get(x, "runs")->n == 1);
        json_free(&j);
    }
    free(text);

    /* errors: exit codes, messages, and nothing written over an existing file */
    FILE *f = fopen(support_path("keep.csv"), "w");
    if (f) {
        fputs("keep me\n", f);
        fclose(f);
    }
    CHECK(support_run("export nosuch --db %s -o %s", db, support_path("keep.csv")) == 2);
    CHECK(strstr(err_text, "no experiment 'nosuch'") != NULL);
    text = support_read_file(support_path("keep.csv"), NULL);
    CHECK(text && strcmp(text, "keep me\n") == 0);
    free(text);
    CHECK(support_run("export --db %s --format xml", db) == 2);
    CHECK(strstr(err_text, "--format") != NULL);
    CHECK(support_run("export --db %s --format json --table runs", db) == 2);
    CHECK(support_run("export --db %s --table seeds", db) == 2);
    CHECK(support_run("export --db %s -o %s/no/such/dir/x.csv", db, support_tmpdir()) == 1);
    CHECK(strstr(err_text, "no/such/dir/x.csv") != NULL);
    CHECK(support_run("export --db %s", support_path("missing.db")) == 1);
    CHECK(strstr(err_text, "missing.db") != NULL && !support_exists(support_path("missing.db")));
    CHECK(support_run("export --help") == 0);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "ls '%s' | grep -q tmp", support_tmpdir());
    CHECK(system(cmd) != 0);   /* no temporary left behind */
}

/* python3 reads `path` strictly as UTF-8 (as JSON with json.load when `json`) and, when
 * `want` is not NULL, finds that text in it. 1 when all of that holds. */
static int python_reads(const char *path, int json, const char *want)
{
    char cmd[2048];
    FILE *w = fopen(support_path("want.txt"), "wb");
    if (!w) return 0;
    fputs(want ? want : "", w);
    fclose(w);
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json, sys\n"
             "text = open(sys.argv[1], encoding=\"utf-8\", errors=\"strict\").read()\n"
             "want = open(sys.argv[2], encoding=\"utf-8\").read()\n"
             "if %s: json.loads(text)\n"
             "assert want in text, \"missing: \" + ascii(want)\n' '%s' '%s'",
             json ? "True" : "False", path, support_path("want.txt"));
    int rc = system(cmd);
    if (rc != 0) printf("python3 could not read %s as %s\n", path, json ? "JSON" : "UTF-8");
    return rc == 0;
}

/* An experiment whose name holds invalid UTF-8, through every command that writes text. */
static void test_bad_utf8(void)
{
    const char *db_path = support_path("bad-utf8.db");
    struct results *db = NULL;
    CHECK(results_open(&db, db_path) == DR_OK);
    if (!db) return;
    struct results_experiment x = {0};
    int64_t id = 0;
    const uint64_t seeds[] = {0, 1};
    x.name = BAD_NAME;
    x.config_hash = "hash-utf8-0123456";
    x.config_text = "name = \"x\";\n";
    x.dawnrun_version = "test";
    x.engine = "cpu";
    x.target_accuracy = 0.94;
    CHECK(results_experiment_register(db, &id, NULL, &x) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, id, seeds, 2, 3) == DR_OK);
    run_epochs(db, id, 0, 3, 0, RUN_DONE, NULL);
    run_epochs(db, id, 1, 3, 0, RUN_DONE, NULL);
    results_close(db);

    /* the name as JSON writes it: its valid parts and U+FFFD, nothing else */
    char json_name[256];
    snprintf(json_name, sizeof json_name, "\"%s\"", BAD_FIXED);
    const struct {
        const char *args;
        int json;
        const char *want;
    } outputs[] = {
        {"export --format json", 1, json_name},
        {"export --format csv", 0, BAD_FIXED},
        {"export --format csv --table runs", 0, BAD_FIXED},
        {"report --format json", 1, json_name},
        {"report --format csv", 0, BAD_FIXED},
        {"report --format markdown", 0, "caf\xc3\xa9 " R R " half"},
        {"report --format table", 0, BAD_FIXED},
        {"experiments", 0, BAD_FIXED},
        {"runs hash-utf8", 0, BAD_FIXED},
    };
    for (size_t i = 0; i < sizeof outputs / sizeof outputs[0]; i++) {
        CHECK(support_run("%s --db %s", outputs[i].args, db_path) == 0);
        int ok = python_reads(support_path("out.txt"), outputs[i].json, outputs[i].want);
        if (!ok) printf("  from: dawnrun %s\n", outputs[i].args);
        CHECK(ok);
    }
    const char *svg = support_path("utf8.svg");
    CHECK(support_run("plot --db %s -o %s", db_path, svg) == 0);
    CHECK(python_reads(svg, 0, "caf\xc3\xa9 " R R " half"));
}

int main(int argc, char **argv)
{
    struct fixture fx = {0, 0};
    if (support_tmpdir_make("/tmp/dawnrun-test-export-XXXXXX") != 0) return 1;
    if (argc > 1) {
        const char *db = support_path("fixture.db");
        build_fixture(db, &fx);
        support_run_program(argv[1], 0);
        test_command(db, &fx);
        test_bad_utf8();
    } else {
        test_writers();
        test_utf8();
    }
    return support_tmpdir_finish(check_finish(argc > 1 ? "test_export (command)" : "test_export"));
}

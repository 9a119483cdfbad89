/* The experiment selection at the command line and what tells experiments apart: a
 * database is built through the results API (four experiments of tests/e2e/tiny.cfg
 * with overrides, registered with their params and overrides as `dawnrun run` registers
 * them, two of them sweep members and two sharing a name) and read with SQL; given the
 * dawnrun executable as argv[1], it is run on it: selection by id, exact name, hash
 * prefix, ambiguous prefix, name glob, a sweep's base name, --where (numeric, text,
 * boolean, ANDed, no match, unknown key) in experiments, runs, show, report and export;
 * `dawnrun diff` (differing keys, --all, overrides, identical, not found, usage); the
 * differing-keys rows and columns of report (table, csv, json, markdown), export (csv,
 * json) and experiments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support.h"
#include "engine/core/experiment.h"
#include "report_check.h"
#include "results/results.h"
#include "runner/report/report_internal.h"

#define H1 "abcdef0111111111111111111111111111111111111111111111111111111111"
#define H2 "abcdef0222222222222222222222222222222222222222222222222222222222"
#define H3 "1234567333333333333333333333333333333333333333333333333333333333"
#define H4 "fedcba9444444444444444444444444444444444444444444444444444444444"

/* Registers tiny.cfg loaded with `sets` under name and hash, as the scheduler does:
 * its params flattened from the resolved text, the sets as its overrides, one done run. */
static void add(struct results *db, const char *name, const char *hash,
                const char *const *sets, int n_sets, double acc)
{
    char path[1024];
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    struct experiment e;
    struct param_list p;
    struct results_param *rows = NULL;
    int64_t id = 0;
    const uint64_t seed = 0;
    snprintf(path, sizeof path, "%s/tests/e2e/tiny.cfg", src ? src : ".");
    CHECK(experiment_load(&e, path, sets, n_sets) == DR_OK);
    CHECK(experiment_params_from_text(&p, e.resolved) == DR_OK);
    CHECK(report_params_rows(&rows, &p) == DR_OK);
    struct results_experiment x;
    memset(&x, 0, sizeof x);
    x.name = name;
    x.config_hash = hash;
    x.config_text = e.resolved;
    x.dawnrun_version = "0.1.0";
    x.engine = "cpu";
    x.target_accuracy = 0.94;
    struct results_experiment_extras extras = {rows, p.n, sets, n_sets};
    CHECK(results_experiment_register_with(db, &id, NULL, &x, &extras) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, id, &seed, 1, 3) == DR_OK);
    struct results_claim req;
    struct results_lease l;
    results_claim_init(&req);
    req.experiment_ids = &id;
    req.n_experiments = 1;
    CHECK(results_claim_run(db, &l, &req) == DR_OK && l.run_id > 0);
    struct results_epoch ep = {1, 0.4, 1.0, 0.5, 1.0, acc, 1.0, 0.1, 1.1, 0, 0};
    CHECK(results_epoch_record(db, &l, &ep) == DR_OK);
    struct results_outcome o = {RUN_DONE, acc, 1.0, 1.1, -1, -1, NULL};
    CHECK(results_run_finish(db, &l, &o) == DR_OK);
    free(rows);
    param_list_free(&p);
    experiment_free(&e);
}

static void build(const char *path)
{
    struct results *db = NULL;
    const char *s1[] = {"train.epochs=1", "augment.cutout=0"};
    const char *s2[] = {"train.epochs=1", "augment.cutout=8"};
    const char *s3[] = {"train.epochs=2"};
    const char *s4[] = {"train.epochs=1", "train.nesterov=false"};
    CHECK(results_open(&db, path) == DR_OK);
    if (!db) return;
    add(db, "r9-tiny:augment.cutout=0", H1, s1, 2, 0.50);   /* #1 */
    add(db, "r9-tiny:augment.cutout=8", H2, s2, 2, 0.52);   /* #2 */
    add(db, "dawn-tiny", H3, s3, 1, 0.60);                  /* #3 */
    add(db, "dawn-tiny", H4, s4, 2, 0.58);                  /* #4 */
    results_close(db);
}

/* The ids listed by `experiments` in its output (first column), as "1,3,". */
static const char *listed(const char *out)
{
    static char ids[256];
    ids[0] = '\0';
    const char *line = strchr(out, '\n');   /* past the header */
    while (line && line[1]) {
        line++;
        long id = strtol(line, NULL, 10);
        if (id > 0) snprintf(ids + strlen(ids), sizeof ids - strlen(ids), "%ld,", id);
        line = strchr(line, '\n');
    }
    return ids;
}

static void test_selection(const char *db)
{
    const char *out = support_run_out(), *err = support_run_err();
    CHECK(support_run("experiments --db %s", db) == 0 && !strcmp(listed(out), "1,2,3,4,"));
    CHECK(support_run("experiments 2 --db %s", db) == 0 && !strcmp(listed(out), "2,"));
    CHECK(support_run("experiments dawn-tiny --db %s", db) == 0 && !strcmp(listed(out), "3,4,"));
    CHECK(support_run("experiments 123456 --db %s", db) == 0 && !strcmp(listed(out), "3,"));
    CHECK(support_run("experiments fedcba9 --db %s", db) == 0 && !strcmp(listed(out), "4,"));
    /* a prefix two hashes share: the candidates are listed */
    CHECK(support_run("experiments abcdef --db %s", db) == 2);
    CHECK(strstr(err, "ambiguous") && strstr(err, "#1 r9-tiny:augment.cutout=0") &&
          strstr(err, "#2 r9-tiny:augment.cutout=8"));
    CHECK(support_run("experiments abcdef02 --db %s", db) == 0 && !strcmp(listed(out), "2,"));
    /* globs and a sweep's base name */
    CHECK(support_run("experiments 'r9-tiny:*' --db %s", db) == 0 && !strcmp(listed(out), "1,2,"));
    CHECK(support_run("experiments 'r9-tiny:augment.cutout=[8]' --db %s", db) == 0 &&
          !strcmp(listed(out), "2,"));
    CHECK(support_run("experiments '*-tiny' --db %s", db) == 0 && !strcmp(listed(out), "3,4,"));
    CHECK(support_run("experiments '?9-tiny*' 3 --db %s", db) == 0 &&
          !strcmp(listed(out), "1,2,3,"));
    CHECK(support_run("runs r9-tiny --db %s", db) == 0 && strstr(out, "#1 r9-tiny") &&
          strstr(out, "#2 r9-tiny"));
    CHECK(support_run("experiments 'x*' --db %s", db) == 2 && strstr(err, "'x*'") &&
          strstr(err, "matches"));
    CHECK(support_run("runs nosuch --db %s", db) == 2 && strstr(err, "'nosuch'"));

    /* --where: numbers as numbers, booleans, text, ANDed, filtering the arguments */
    CHECK(support_run("experiments --where train.epochs=1 --db %s", db) == 0 &&
          !strcmp(listed(out), "1,2,4,"));
    CHECK(support_run("experiments --where train.epochs=2.00 --db %s", db) == 0 &&
          !strcmp(listed(out), "3,"));
    CHECK(support_run("experiments --where=augment.cutout=8 --db %s", db) == 0 &&
          !strcmp(listed(out), "2,3,4,"));
    CHECK(support_run("experiments --where train.nesterov=false --db %s", db) == 0 &&
          !strcmp(listed(out), "4,"));
    CHECK(support_run("experiments --where train.epochs=1 --where augment.cutout=8 --db %s",
                      db) == 0 && !strcmp(listed(out), "2,4,"));
    /* name is the config's own name (the stored experiment name may add a sweep label) */
    CHECK(support_run("experiments --where name=e2e-tiny --where train.epochs=1 --db %s",
                      db) == 0 && !strcmp(listed(out), "1,2,4,"));
    CHECK(support_run("experiments 'r9-tiny:*' --where augment.cutout=0 --db %s", db) == 0 &&
          !strcmp(listed(out), "1,"));
    CHECK(support_run("experiments --where train.epochs=3 --db %s", db) == 2 &&
          strstr(err, "--where train.epochs=3") && strstr(err, "among the 4 selected"));
    CHECK(support_run("experiments --where train.epoch=1 --db %s", db) == 2 &&
          strstr(err, "no selected experiment has a param 'train.epoch'"));
    CHECK(support_run("experiments --where train.epochs --db %s", db) == 2);
    CHECK(support_run("runs --where augment.cutout=0 --db %s", db) == 0 &&
          strstr(out, "#1 r9-tiny") && !strstr(out, "#2 "));
    CHECK(support_run("show 'r9-tiny:*' --where augment.cutout=8 --db %s", db) == 0 &&
          strstr(out, "experiment r9-tiny:augment.cutout=8") &&
          !strstr(out, "augment.cutout=0"));
    CHECK(support_run("report --where train.nesterov=false --format csv --db %s", db) == 0);
    struct csv c;
    const char *perr = NULL;
    CHECK(csv_parse(&c, out, &perr) == 0 && c.n_records == 2);   /* header + #4 */
    csv_free(&c);
    CHECK(support_run("export dawn-tiny --where train.epochs=2 --format csv --db %s", db) == 0);
    CHECK(csv_parse(&c, out, &perr) == 0 && c.n_records == 2 && c.n_fields[1] > 1 &&
          !strcmp(c.fields[1][1], "dawn-tiny"));
    csv_free(&c);
    CHECK(support_run("report --where augment.cutout=3 --db %s", db) == 2);
}

static int column(const struct csv *c, const char *name)
{
    return csv_column(c, name);
}

static void test_differing(const char *db)
{
    const char *out = support_run_out(), *perr = NULL;
    struct csv c;
    struct json j;
    /* report: the keys that differ among the selected, and only those */
    CHECK(support_run("report 1 2 --db %s", db) == 0);
    CHECK(strstr(out, "\naugment.cutout ") && !strstr(out, "train.epochs") &&
          !strstr(out, "train.nesterov"));
    CHECK(support_run("report --format csv --db %s", db) == 0 && csv_parse(&c, out, &perr) == 0);
    int cut = column(&c, "augment.cutout"), ep = column(&c, "train.epochs"),
        nest = column(&c, "train.nesterov");
    CHECK(cut > 0 && ep > 0 && nest > 0 && column(&c, "train.batch_size") < 0 &&
          column(&c, "name") == 1);
    if (cut > 0 && ep > 0 && nest > 0 && c.n_records == 5) {
        CHECK(!strcmp(c.fields[1][cut], "0") && !strcmp(c.fields[2][cut], "8"));
        CHECK(!strcmp(c.fields[3][ep], "2.0") && !strcmp(c.fields[4][nest], "false"));
    } else {
        CHECK(!"the differing keys' columns in the report's CSV");
    }
    csv_free(&c);
    CHECK(support_run("report 3 --format csv --db %s", db) == 0 && csv_parse(&c, out, &perr) == 0);
    CHECK(column(&c, "train.epochs") < 0 && column(&c, "augment.cutout") < 0);   /* one: none */
    csv_free(&c);
    CHECK(support_run("report 3 4 --format json --db %s", db) == 0);
    CHECK(json_parse(&j, out, &perr) == 0);
    const struct json *x = json_at(json_get(&j, "experiments"), 1);
    const struct json *d = json_get(x, "differing");
    CHECK(json_get(d, "train.epochs") && json_number(json_get(d, "train.epochs")) == 1.0);
    CHECK(json_get(d, "train.nesterov") && json_get(d, "train.nesterov")->type == JSON_BOOL &&
          json_get(d, "train.nesterov")->number == 0.0);
    CHECK(!json_get(d, "augment.cutout"));
    json_free(&j);
    CHECK(support_run("report 1 2 --format markdown --db %s", db) == 0 &&
          strstr(out, "| augment.cutout | 0 | 8 |"));

    /* export: the same columns in CSV, and in JSON the full params as well */
    CHECK(support_run("export 1 2 --table runs --db %s", db) == 0 && csv_parse(&c, out, &perr) == 0);
    cut = column(&c, "augment.cutout");
    CHECK(cut > 0 && cut == c.n_fields[0] - 1 && c.n_records == 3 &&
          cut < c.n_fields[2] && !strcmp(c.fields[2][cut], "8"));
    csv_free(&c);
    CHECK(support_run("export 1 2 --db %s", db) == 0 && csv_parse(&c, out, &perr) == 0 &&
          column(&c, "augment.cutout") == c.n_fields[0] - 1);
    csv_free(&c);
    CHECK(support_run("export 1 4 --format json --db %s", db) == 0);
    CHECK(json_parse(&j, out, &perr) == 0);
    x = json_at(json_get(&j, "experiments"), 1);
    d = json_get(x, "differing");
    CHECK(json_get(d, "augment.cutout") && json_number(json_get(d, "augment.cutout")) == 8.0);
    CHECK(json_get(d, "train.nesterov") && !json_get(d, "train.epochs"));
    const struct json *all = json_get(x, "params");
    CHECK(json_get(all, "train.batch_size") && json_number(json_get(all, "train.batch_size")) == 128.0);
    CHECK(json_get(all, "model.layers.prep.conv.out") != NULL ||
          json_get(all, "train.lr_schedule.values") != NULL);
    json_free(&j);

    /* experiments: the differing keys as trailing columns */
    CHECK(support_run("experiments 'r9-tiny:*' --db %s", db) == 0);
    CHECK(strstr(out, "augment.cutout") && !strstr(out, "train.epochs"));
    CHECK(support_run("experiments 3 --db %s", db) == 0 && !strstr(out, "train.epochs"));
}

static void test_diff(const char *db)
{
    const char *out = support_run_out(), *err = support_run_err();
    CHECK(support_run("diff 1 3 --db %s", db) == 0);
    CHECK(strstr(out, "2 differing keys") != NULL);
    CHECK(strstr(out, "augment.cutout  0") && strstr(out, "train.epochs    1.0"));
    CHECK(strstr(out, "overrides of #1 r9-tiny:augment.cutout=0: train.epochs=1 augment.cutout=0\n"));
    CHECK(strstr(out, "overrides of #3 dawn-tiny: train.epochs=2\n"));
    CHECK(!strstr(out, "train.batch_size"));
    CHECK(support_run("diff 3 4 --db %s", db) == 0 && strstr(out, "train.nesterov") &&
          strstr(out, "train.epochs"));
    CHECK(support_run("diff 1 3 --all --db %s", db) == 0 && strstr(out, "train.batch_size") &&
          strstr(out, "differs"));
    CHECK(support_run("diff 2 abcdef02 --db %s", db) == 0 &&
          strstr(out, "no differing keys") && !strstr(out, "\nkey "));
    CHECK(support_run("diff 1 nosuch --db %s", db) == 2 && strstr(err, "'nosuch'"));
    CHECK(support_run("diff dawn-tiny 1 --db %s", db) == 2 && strstr(err, "matches 2"));
    CHECK(support_run("diff 1 --db %s", db) == 2 && strstr(err, "usage"));
    CHECK(support_run("diff 1 2 3 --db %s", db) == 2);
    CHECK(support_run("diff 1 2 --bogus --db %s", db) == 2);
    CHECK(support_run("diff 1 2 --db %s", support_path("absent.db")) == 1 &&
          !support_exists(support_path("absent.db")));
}

/* In process, without the executable: the fixture's params as SQL sees them. */
static void test_fixture_sql(const char *db)
{
    CHECK(support_sql_int(db, "SELECT count(*) FROM experiment_params"
                              " WHERE key = 'train.epochs' AND num = 1") == 3);
    CHECK(support_sql_int(db, "SELECT experiment_id FROM experiment_params"
                              " WHERE key = 'train.nesterov' AND num = 0") == 4);
    CHECK(support_sql_int(db, "SELECT count(*) FROM experiment_overrides"
                              " WHERE overrides = 'train.epochs=1 augment.cutout=8'") == 1);
}

int main(int argc, char **argv)
{
    if (support_tmpdir_make("/tmp/dawnrun-test-selection-XXXXXX")) return 1;
    const char *db = support_path("sel.db");
    build(db);
    test_fixture_sql(db);
    if (argc >= 2) {   /* the command-line checks need the executable */
        support_run_program(argv[1], 1);
        test_selection(db);
        test_differing(db);
        test_diff(db);
    }
    return support_tmpdir_finish(check_finish("selection"));
}

/* The params and overrides tables (results/results_params.c) and the runner's back-fill
 * (runner/report/params.c): an experiment registered with its params and overrides reads them
 * back; re-registering its hash changes nothing; one registered without them is listed
 * as lacking them and filled once; a merge copies them (and fills an experiment that has
 * none, keeps one's own otherwise); a version-3 database migrated to version 4 gets its
 * experiments' params flattened from config_text by the back-fill; the views
 * experiment_params and experiment_overrides answer the queries docs/results.md shows. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support.h"
#include "engine/core/experiment.h"
#include "results/results.h"
#include "runner/report/report_internal.h"

extern const char schema_results_v3_sql[];

static const char TEXT_A[] =
    "name = \"a\";\ntrain : { lr = 0.2; epochs = 24; nesterov = true; loss = \"sum\"; };\n"
    "augment : { cutout = 8; };\n";
static const char TEXT_B[] =
    "name = \"b\";\ntrain : { lr = 0.4; epochs = 24; nesterov = false; loss = \"sum\"; };\n"
    "augment : { cutout = 0; };\n";

static struct results_experiment row(const char *name, const char *hash, const char *text)
{
    struct results_experiment e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.config_hash = hash;
    e.config_text = text;
    e.dawnrun_version = "0.1.0";
    e.engine = "cpu";
    e.target_accuracy = 0.94;
    return e;
}

/* Registers name/hash/text with text's flattened params and the given overrides. */
static int64_t register_flat(struct results *db, int *created, const char *name,
                             const char *hash, const char *text, const char *const *o, int n_o)
{
    struct param_list p;
    struct results_param *rows = NULL;
    int64_t id = 0;
    CHECK(experiment_params_from_text(&p, text) == DR_OK);
    CHECK(report_params_rows(&rows, &p) == DR_OK);
    struct results_experiment e = row(name, hash, text);
    struct results_experiment_extras x = {rows, p.n, o, n_o};
    CHECK(results_experiment_register_with(db, &id, created, &e, &x) == DR_OK);
    free(rows);
    param_list_free(&p);
    return id;
}

static const struct results_param *find(const struct results_param *p, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(p[i].key, key)) return &p[i];
    return NULL;
}

static void test_store_and_read(void)
{
    const char *path = support_path("store.db");
    struct results *db = NULL;
    struct results_param *p = NULL;
    char **o = NULL;
    int n = 0, n_o = 0, created = -1;
    const char *sets[] = {"train.lr=0.2", "augment.cutout=8"};
    CHECK(results_open(&db, path) == DR_OK);
    int64_t a = register_flat(db, &created, "a", "aaaaaaaaaaaa1", TEXT_A, sets, 2);
    CHECK(created == 1);
    CHECK(results_params_get(db, &p, &n, a) == DR_OK);
    CHECK(n == 6);   /* name, 4 train keys, augment.cutout */
    static const char *const order[] = {"name", "train.lr", "train.epochs", "train.nesterov",
                                        "train.loss", "augment.cutout"};
    for (int i = 0; i < n && i < 6; i++) CHECK(!strcmp(p[i].key, order[i]));   /* as written */
    const struct results_param *lr = find(p, n, "train.lr");
    CHECK(lr && !strcmp(lr->value, "0.2") && !strcmp(lr->type, "float") && lr->num == 0.2);
    const struct results_param *nest = find(p, n, "train.nesterov");
    CHECK(nest && !strcmp(nest->type, "bool") && nest->num == 1.0);
    const struct results_param *loss = find(p, n, "train.loss");
    CHECK(loss && !strcmp(loss->value, "sum") && isnan(loss->num));
    results_params_free(p, n);
    CHECK(results_overrides_get(db, &o, &n_o, a) == DR_OK);
    CHECK(n_o == 2 && !strcmp(o[0], "train.lr=0.2") && !strcmp(o[1], "augment.cutout=8"));
    results_overrides_free(o, n_o);

    /* re-registering the same hash (other params, other overrides) changes nothing */
    const char *other[] = {"train.lr=0.9"};
    struct results_param bogus = {"train.lr", "0.9", "float", 0.9};
    struct results_experiment e = row("a", "aaaaaaaaaaaa1", TEXT_A);
    struct results_experiment_extras x = {&bogus, 1, other, 1};
    int64_t again = 0;
    CHECK(results_experiment_register_with(db, &again, &created, &e, &x) == DR_OK);
    CHECK(again == a && created == 0);
    CHECK(support_sql_int(path, "SELECT count(*) FROM params") == 6);
    CHECK(support_sql_int(path, "SELECT count(*) FROM params WHERE key = 'train.lr'"
                                " AND value = '0.2'") == 1);
    CHECK(support_sql_int(path, "SELECT count(*) FROM overrides") == 2);

    /* registered without params: listed as lacking them, filled once */
    struct results_experiment plain = row("b", "bbbbbbbbbbbb1", TEXT_B);
    int64_t b = 0, *ids = NULL;
    int n_ids = 0, written = -1;
    CHECK(results_experiment_register(db, &b, NULL, &plain) == DR_OK);
    CHECK(results_experiments_without_params(db, &ids, &n_ids) == DR_OK);
    CHECK(n_ids == 1 && ids && ids[0] == b);
    free(ids);
    struct results_param one = {"train.lr", "0.4", "float", 0.4};
    CHECK(results_params_fill(db, &written, b, &one, 1) == DR_OK && written == 1);
    CHECK(results_params_fill(db, &written, b, &bogus, 1) == DR_OK && written == 0);
    CHECK(support_sql_int(path, "SELECT count(*) FROM params WHERE experiment_id = 2") == 1);
    CHECK(support_sql_int(path, "SELECT num = 0.4 FROM params WHERE experiment_id = 2") == 1);
    CHECK(results_params_fill(db, &written, 99, &one, 1) == DR_ERR_DB);

    /* the views */
    CHECK(support_sql_int(path, "SELECT experiment_id FROM experiment_params"
                                " WHERE key = 'train.lr' AND num = 0.2") == a);
    CHECK(support_sql_int(path, "SELECT count(*) FROM experiment_params"
                                " WHERE key = 'train.lr' AND num = 0.20") == 1);
    CHECK(support_sql_int(path, "SELECT n_overrides FROM experiment_overrides"
                                " WHERE overrides = 'train.lr=0.2 augment.cutout=8'") == 2);
    CHECK(support_sql_int(path, "SELECT overrides IS NULL FROM experiment_overrides"
                                " WHERE experiment_id = 2") == 1);
    results_close(db);
}

static void test_merge(void)
{
    const char *src = support_path("merge-src.db");
    const char *dst = support_path("merge-dst.db");
    struct results *s = NULL, *d = NULL;
    const char *sets[] = {"train.lr=0.4"};
    struct results_merge_stats st;
    CHECK(results_open(&s, src) == DR_OK);
    register_flat(s, NULL, "a", "aaaaaaaaaaaa1", TEXT_A, NULL, 0);
    register_flat(s, NULL, "b", "bbbbbbbbbbbb1", TEXT_B, sets, 1);
    results_close(s);

    CHECK(results_open(&d, dst) == DR_OK);
    /* ours: a with params of its own (one row), b without any */
    struct results_param mine = {"train.lr", "0.2", "float", 0.2};
    struct results_experiment ea = row("a", "aaaaaaaaaaaa1", TEXT_A);
    struct results_experiment eb = row("b", "bbbbbbbbbbbb1", TEXT_B);
    struct results_experiment_extras x = {&mine, 1, NULL, 0};
    int64_t id = 0;
    CHECK(results_experiment_register_with(d, &id, NULL, &ea, &x) == DR_OK);
    CHECK(results_experiment_register(d, &id, NULL, &eb) == DR_OK);
    CHECK(results_merge(d, &st, src) == DR_OK);
    results_close(d);
    CHECK(support_sql_int(dst, "SELECT count(*) FROM params p JOIN experiments e"
                               " ON e.id = p.experiment_id WHERE e.name = 'a'") == 1);
    CHECK(support_sql_int(dst, "SELECT count(*) FROM params p JOIN experiments e"
                               " ON e.id = p.experiment_id WHERE e.name = 'b'") == 6);
    CHECK(support_sql_int(dst, "SELECT count(*) FROM overrides o JOIN experiments e"
                               " ON e.id = o.experiment_id WHERE e.name = 'b'"
                               " AND o.text = 'train.lr=0.4'") == 1);

    /* into a fresh database: everything comes, and a second merge adds nothing */
    const char *fresh = support_path("merge-fresh.db");
    CHECK(results_open(&d, fresh) == DR_OK);
    CHECK(results_merge(d, &st, src) == DR_OK && st.experiments_added == 2);
    CHECK(results_merge(d, &st, src) == DR_OK && st.experiments_added == 0);
    results_close(d);
    CHECK(support_sql_int(fresh, "SELECT count(*) FROM params") == 12);
    CHECK(support_sql_int(fresh, "SELECT count(*) FROM overrides") == 1);
}

static void test_migration_backfill(void)
{
    const char *path = support_path("v3.db");
    struct results *db = NULL;
    struct results_param *p = NULL;
    int n = -1, filled = -1;
    char sql[1024];
    CHECK(support_sql_exec(path, schema_results_v3_sql) == SQLITE_OK);
    snprintf(sql, sizeof sql,
             "INSERT INTO experiments(name, config_hash, config_text, dawnrun_version, engine,"
             " created_at) VALUES ('old', 'cccccccccccc1', '%s', '0.0.9', 'cpu', 0);"
             "INSERT INTO experiments(name, config_hash, config_text, dawnrun_version, engine,"
             " created_at) VALUES ('junk', 'dddddddddddd1', 'not a config', '0.0.9', 'cpu', 0);",
             "train : { lr = 0.2; epochs = 2; };");
    CHECK(support_sql_exec(path, sql) == SQLITE_OK);

    /* read-only, the version-3 file has no params: none are read, nothing fails */
    CHECK(results_open_readonly(&db, path) == DR_OK);
    CHECK(results_params_get(db, &p, &n, 1) == DR_OK && n == 0 && p == NULL);
    struct param_list *lists = NULL;
    const int64_t ids[1] = {1};
    CHECK(report_params_load(&lists, db, ids, 1) == DR_OK);   /* from config_text */
    CHECK(lists && lists[0].n == 2 && param_list_find(&lists[0], "train.lr"));
    report_params_free(lists, 1);
    results_close(db);

    CHECK(results_open(&db, path) == DR_OK);   /* migrates to version 4 */
    CHECK(support_sql_int(path, "SELECT count(*) FROM params") == 0);
    support_capture_begin();
    CHECK(report_params_backfill(db, &filled) == DR_OK);
    const char *err = support_capture_end();
    CHECK(filled == 1);
    CHECK(strstr(err, "junk") != NULL);   /* the unparsable one is named, and skipped */
    CHECK(support_sql_int(path, "SELECT count(*) FROM params WHERE experiment_id = 1") == 2);
    CHECK(support_sql_int(path, "SELECT experiment_id FROM experiment_params"
                                " WHERE key = 'train.epochs' AND num = 2") == 1);
    CHECK(report_params_backfill(db, &filled) == DR_OK && filled == 0);   /* idempotent */
    CHECK(results_params_get(db, &p, &n, 1) == DR_OK && n == 2);
    CHECK(!strcmp(p[1].key, "train.epochs") && !strcmp(p[1].type, "int"));
    results_params_free(p, n);

    /* report_params_load reads the table once it has rows: edit a row, see the edit */
    CHECK(support_sql_exec(path, "UPDATE params SET value = '0.3', num = 0.3"
                                 " WHERE key = 'train.lr'") == SQLITE_OK);
    CHECK(report_params_load(&lists, db, ids, 1) == DR_OK);
    const struct param *lr = lists ? param_list_find(&lists[0], "train.lr") : NULL;
    CHECK(lr && !strcmp(lr->value, "0.3") && lr->type == PARAM_FLOAT);
    CHECK(report_where_matches(&lists[0], "train.lr=0.30"));
    CHECK(!report_where_matches(&lists[0], "train.lr=0.2"));
    report_params_free(lists, 1);
    results_close(db);
}

static void test_where(void)
{
    struct param_list p;
    CHECK(experiment_params_from_text(&p, TEXT_A) == DR_OK);
    CHECK(report_where_matches(&p, "train.lr=0.2"));
    CHECK(report_where_matches(&p, "train.lr=0.20"));
    CHECK(report_where_matches(&p, "train.lr=2e-1"));
    CHECK(!report_where_matches(&p, "train.lr=0.21"));
    CHECK(report_where_matches(&p, "train.epochs=24.0"));
    CHECK(report_where_matches(&p, "train.nesterov=true"));
    CHECK(!report_where_matches(&p, "train.nesterov=false"));
    CHECK(report_where_matches(&p, "train.loss=sum"));
    CHECK(!report_where_matches(&p, "train.loss=mean"));
    CHECK(!report_where_matches(&p, "train.nosuch=1"));
    CHECK(report_where_matches(&p, "name=a"));
    param_list_free(&p);
}

int main(void)
{
    if (support_tmpdir_make("/tmp/dawnrun-test-results-params-XXXXXX")) return 1;
    test_store_and_read();
    test_merge();
    test_migration_backfill();
    test_where();
    return support_tmpdir_finish(check_finish("results_params"));
}

/* Schema versioning of the results store: a version-1 database, built from the frozen
 * version-1 schema text (tests/fixtures/schemas/results-v1.sql) with data in it, is read as
 * it is by a read-only opener, then migrated by results_open to the current version: every
 * row survives, the new columns and views are in place and match a database created fresh
 * (columns, indexes, view columns and the experiment_summary rows for the same data); a
 * version-2 database (tests/fixtures/schemas/results-v2.sql) is migrated to the same shape,
 * its runs starting with no recorded progress and no stalls, and its stale run is
 * claimable; a version-4 one (tests/fixtures/schemas/results-v4.sql) gets the hit-rate
 * intervals of its finished counts, and a run finishing afterwards adds those of its new
 * count; reopening changes nothing, five processes opening one old file at once migrate it
 * exactly once, a migration that fails changes nothing, and a file from a newer dawnrun is
 * refused with a message naming it. */
#include <errno.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "support.h"
#include "results/results.h"

/* The frozen version-1 schema and the current one, embedded by the build. */
extern const char schema_results_v1_sql[];
extern const char schema_results_v2_sql[];
extern const char schema_results_v3_sql[];
extern const char schema_results_v4_sql[];
extern const char schema_results_sql[];

/* ---- raw SQL helpers ----------------------------------------------------------------- */

/* Every row of a query as text ("a|b|NULL\n" per row), malloc'd; NULL on error. */
static char *sql_dump(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    int ok = out && sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
             sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK;
    if (out) out[0] = '\0';
    while (ok && sqlite3_step(st) == SQLITE_ROW) {
        for (int c = 0; c < sqlite3_column_count(st); c++) {
            const char *t = (const char *)sqlite3_column_text(st, c);
            size_t need = len + (t ? strlen(t) : 4) + 2;
            if (need >= cap) {
                while (need >= cap) cap *= 2;
                char *grown = realloc(out, cap);
                if (!grown) {
                    ok = 0;
                    break;
                }
                out = grown;
            }
            len += (size_t)sprintf(out + len, "%s%c", t ? t : "NULL",
                                   c + 1 < sqlite3_column_count(st) ? '|' : '\n');
        }
    }
    if (!ok) fprintf(stderr, "  dump failed: %s: %s\n", sql, db ? sqlite3_errmsg(db) : "?");
    sqlite3_finalize(st);
    sqlite3_close(db);
    if (!ok) {
        free(out);
        return NULL;
    }
    return out;
}

static int same_text(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* ---- fixtures -------------------------------------------------------------------------- */

/* Rows as a version-1 dawnrun wrote them. Experiment 1 (target 0.94): seeds 0-2 done
 * (accuracies 0.95, 0.93, 0.96; train times 10, 12, 11; target reached after 8 and 7 s
 * by seeds 0 and 2), seed 3 diverged, seed 4 pending. Experiment 2: no target, one
 * running run with one epoch. The seed 2^64 - 1 is stored as -1. */
static const char v1_rows[] =
    "INSERT INTO experiments(id, name, config_hash, config_text, dawnrun_version, git_rev,"
    "  engine, device, platform, host, target_accuracy, created_at) VALUES"
    " (1, 'dawn \"v1\", old', 'hash-one', 'train { epochs = 3; }', '0.1.0', 'abc', 'cpu',"
    "  'x86', 'Linux', 'node1', 0.94, 1700000000.5),"
    " (2, 'second', 'hash-two', 'train { epochs = 1; }', '0.1.0', NULL, 'cuda', NULL, NULL,"
    "  NULL, NULL, 1700000100.25);"
    "INSERT INTO runs(id, experiment_id, seed, status, attempt, max_attempts, host, pid,"
    "  device, lease_expires, heartbeat_at, created_at, started_at, ended_at, final_test_acc,"
    "  train_time, total_time, target_time, target_epoch, error) VALUES"
    " (1, 1, 0, 'done', 1, 3, 'node1', 11, 'cpu', NULL, 1700000010, 1700000000.5,"
    "  1700000001, 1700000012, 0.95, 10, 12, 8, 2, NULL),"
    " (2, 1, 1, 'done', 2, 3, 'node1', 12, 'cpu', NULL, 1700000030, 1700000000.5,"
    "  1700000020, 1700000033, 0.93, 12, 13, NULL, NULL, 'abandoned: worker gone'),"
    " (3, 1, 2, 'done', 1, 3, 'node2', 13, 'cpu', NULL, 1700000040, 1700000000.5,"
    "  1700000035, 1700000047, 0.96, 11, 12.5, 7, 2, NULL),"
    " (4, 1, 3, 'diverged', 1, 3, 'node2', 14, 'cpu', NULL, 1700000050, 1700000000.5,"
    "  1700000048, 1700000051, NULL, NULL, NULL, NULL, NULL, 'loss became NaN at epoch 1'),"
    " (5, 1, 4, 'pending', 0, 3, NULL, NULL, NULL, NULL, NULL, 1700000000.5,"
    "  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),"
    " (6, 2, -1, 'running', 1, 3, 'node3', 99, 'gpu0', 1700000200, 1700000150, 1700000100.25,"
    "  1700000101, NULL, NULL, NULL, NULL, NULL, NULL, NULL);"
    "INSERT INTO epochs(run_id, epoch, attempt, lr, train_loss, train_acc, test_loss, test_acc,"
    "  train_time, test_time, total_time, recorded_at) VALUES"
    " (1, 1, 1, 0.4, 1.5, 0.5, 1.2, 0.8, 5, 1, 6, 1700000006),"
    " (1, 2, 1, 0.1, 0.5, 0.9, 0.4, 0.95, 5, 1, 12, 1700000012),"
    " (2, 1, 2, 0.4, 1.6, 0.5, 1.3, 0.7, 6, 0.5, 6.5, 1700000026),"
    " (2, 2, 2, 0.1, 0.6, 0.8, 0.5, 0.93, 6, 0.5, 13, 1700000033),"
    " (3, 1, 1, 0.4, 1.4, 0.6, 1.1, 0.85, 5.5, 0.75, 6.25, 1700000041),"
    " (3, 2, 1, 0.1, 0.4, 0.9, 0.3, 0.96, 5.5, 0.75, 12.5, 1700000047),"
    " (4, 1, 1, 0.4, NULL, NULL, NULL, NULL, 2, NULL, 2, 1700000051),"
    " (6, 1, 1, 0.2, 2.0, 0.3, 1.9, 0.35, 3, 1, 4, 1700000150);";

/* Creates a results database at path from a frozen schema text, as that version of
 * dawnrun did (WAL, the schema in one transaction), with v1_rows in it. */
static int make_old(const char *path, const char *schema)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "PRAGMA journal_mode=WAL", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, schema, NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    if (rc == SQLITE_OK) rc = sqlite3_exec(db, v1_rows, NULL, NULL, NULL);
    if (rc != SQLITE_OK) fprintf(stderr, "make_old: %s\n", sqlite3_errmsg(db));
    sqlite3_close(db);
    return rc;
}

static int make_v1(const char *path)
{
    return make_old(path, schema_results_v1_sql);
}

/* The data a version-1 file holds, column by column, in a stable order. */
static const char *const v1_queries[] = {
    "SELECT id, name, config_hash, config_text, dawnrun_version, git_rev, engine, device,"
    " platform, host, target_accuracy, created_at FROM experiments ORDER BY id",
    "SELECT id, experiment_id, seed, status, attempt, max_attempts, host, pid, device,"
    " lease_expires, heartbeat_at, created_at, started_at, ended_at, final_test_acc,"
    " train_time, total_time, target_time, target_epoch, error FROM runs ORDER BY id",
    "SELECT run_id, epoch, attempt, lr, train_loss, train_acc, test_loss, test_acc,"
    " train_time, test_time, total_time, recorded_at FROM epochs ORDER BY run_id, epoch",
    "SELECT * FROM run_summary ORDER BY run_id",
};
#define N_V1_QUERIES ((int)(sizeof v1_queries / sizeof v1_queries[0]))

/* The schema as SQLite describes it: every table's and view's columns, every index's
 * columns, and the text of each view (views are created from the same text by the
 * schema and the migration). Table texts differ by construction (ALTER TABLE appends),
 * so they are compared through their columns. */
static char *schema_shape(const char *path)
{
    return sql_dump(path,
        "SELECT m.type, m.name, p.cid, p.name, p.type, p.\"notnull\", p.dflt_value, p.pk"
        " FROM sqlite_schema m, pragma_table_info(m.name) p"
        " WHERE m.type IN ('table', 'view') AND m.name NOT LIKE 'sqlite_%'"
        " UNION ALL"
        " SELECT m.type, m.name, i.seqno, i.name, m.tbl_name, NULL, NULL, NULL"
        " FROM sqlite_schema m, pragma_index_info(m.name) i WHERE m.type = 'index'"
        " UNION ALL"
        " SELECT m.type, m.name, -1, m.sql, NULL, NULL, NULL, NULL"
        " FROM sqlite_schema m WHERE m.type IN ('view', 'trigger')"
        " ORDER BY 1, 2, 3");
}

/* ---- tests ----------------------------------------------------------------------------- */

/* The version-1 text really is version 1 and the current one is RESULTS_SCHEMA_VERSION. */
static void test_texts(void)
{
    CHECK(strstr(schema_results_v1_sql, "PRAGMA user_version = 1;") != NULL);
    char want[64];
    snprintf(want, sizeof want, "PRAGMA user_version = %d;", RESULTS_SCHEMA_VERSION);
    CHECK(strstr(schema_results_sql, want) != NULL);
    CHECK(strstr(schema_results_v2_sql, "PRAGMA user_version = 2;") != NULL);
    CHECK(strstr(schema_results_v3_sql, "PRAGMA user_version = 3;") != NULL);
    CHECK(strstr(schema_results_v4_sql, "PRAGMA user_version = 4;") != NULL);
    CHECK(RESULTS_SCHEMA_VERSION == 5);
}

static void test_migrate(void)
{
    const char *old = support_path("old.db");
    const char *fresh = support_path("fresh.db");
    char *before[N_V1_QUERIES];
    struct results *db = NULL;
    long len = 0;

    CHECK(make_v1(old) == SQLITE_OK);
    CHECK(support_sql_int(old, "PRAGMA user_version") == 1);
    for (int q = 0; q < N_V1_QUERIES; q++) {
        before[q] = sql_dump(old, v1_queries[q]);
        CHECK(before[q] != NULL && before[q][0] != '\0');
    }
    /* the README query on the version-1 file, for comparison below */
    CHECK(support_sql_int(old, "SELECT count(*) FROM pragma_table_info('experiment_summary')")
          == 11);

    /* read-only: the old file is read as it is, and not changed */
    CHECK(support_sql_exec(old, "PRAGMA wal_checkpoint(TRUNCATE)") == SQLITE_OK);
    char *bytes = support_read_file(old, &len);
    CHECK(results_open_readonly(&db, old) == DR_OK);
    struct results_experiment *xs = NULL;
    int n = 0;
    CHECK(results_experiments_list(db, &xs, &n) == DR_OK && n == 2);
    if (n == 2) {
        CHECK(strcmp(xs[0].name, "dawn \"v1\", old") == 0 && xs[0].notes == NULL);
        CHECK(xs[1].git_rev == NULL && isnan(xs[1].target_accuracy) && xs[1].notes == NULL);
    }
    results_experiments_free(xs, n);
    struct results_run *runs = NULL;
    CHECK(results_runs_list(db, &runs, &n, 2) == DR_OK && n == 1);
    if (n == 1) CHECK(runs[0].seed == UINT64_MAX && runs[0].status == RUN_RUNNING);
    results_runs_free(runs, n);
    results_close(db);
    db = NULL;
    CHECK(support_file_unchanged(old, bytes, len));
    CHECK(support_sql_int(old, "PRAGMA user_version") == 1);
    free(bytes);

    /* read-write: migrated */
    CHECK(results_open(&db, old) == DR_OK);
    CHECK(db && results_check_integrity(db) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_int(old, "PRAGMA user_version") == RESULTS_SCHEMA_VERSION);
    CHECK(support_sql_int(old, "PRAGMA application_id") == 0x44524e52);
    for (int q = 0; q < N_V1_QUERIES; q++) {
        char *after = sql_dump(old, v1_queries[q]);
        CHECK(same_text(before[q], after));
        free(after);
    }
    CHECK(support_sql_int(old, "SELECT count(*) FROM experiments WHERE notes IS NULL") == 2);

    /* the new experiment_summary, against hand-computed figures */
    char *summary = sql_dump(old,
        "SELECT experiment_id, runs, done, finished, hits, median_acc, median_train_time,"
        " median_time_to_target, notes FROM experiment_summary ORDER BY experiment_id");
    CHECK(same_text(summary, "1|5|3|4|2|0.95|11.0|7.5|NULL\n2|1|0|0|0|NULL|NULL|NULL|NULL\n"));
    free(summary);

    /* the same as a database created by this version, holding the same rows */
    CHECK(results_open(&db, fresh) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_exec(fresh, v1_rows) == SQLITE_OK);
    /* rows written past the API: the next writing open adds their intervals */
    CHECK(support_sql_int(fresh, "SELECT count(*) FROM binomial_ci") == 0);
    CHECK(results_open(&db, fresh) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_int(fresh, "SELECT count(*) FROM binomial_ci") == 5);
    char *shape_old = schema_shape(old), *shape_fresh = schema_shape(fresh);
    CHECK(shape_old && strstr(shape_old, "|notes|TEXT|") != NULL);
    CHECK(same_text(shape_old, shape_fresh));
    if (!same_text(shape_old, shape_fresh))
        fprintf(stderr, "migrated:\n%s\nfresh:\n%s\n", shape_old, shape_fresh);
    free(shape_old);
    free(shape_fresh);
    char *sum_old = sql_dump(old, "SELECT * FROM experiment_summary ORDER BY experiment_id");
    char *sum_fresh = sql_dump(fresh, "SELECT * FROM experiment_summary ORDER BY experiment_id");
    CHECK(sum_old && sum_fresh && same_text(sum_old, sum_fresh));
    free(sum_old);
    free(sum_fresh);

    /* notes: set through the API, shown by the summary, cleared with "" */
    CHECK(results_open(&db, old) == DR_OK);
    CHECK(results_experiment_set_notes(db, 1, "baseline, before the cutout fix") == DR_OK);
    support_capture_begin();
    CHECK(results_experiment_set_notes(db, 77, "x") == DR_ERR_USAGE);
    const char *msg = support_capture_end();
    CHECK(strstr(msg, old) != NULL && strstr(msg, "77") != NULL);
    struct results_experiment x;
    int found = 0;
    CHECK(results_experiment_get(db, &x, &found, 1) == DR_OK && found);
    CHECK(x.notes && strcmp(x.notes, "baseline, before the cutout fix") == 0);
    results_experiment_clear(&x);
    CHECK(results_experiment_set_notes(db, 2, "") == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_int(old, "SELECT count(*) FROM experiment_summary"
                               " WHERE notes LIKE 'baseline%'") == 1);
    CHECK(support_sql_int(old, "SELECT count(*) FROM experiments"
                               " WHERE id = 2 AND notes IS NULL") == 1);

    /* reopening changes nothing: same schema cookie, same rows */
    long long cookie = support_sql_int(old, "PRAGMA schema_version");
    char *rows = sql_dump(old, v1_queries[1]);
    CHECK(results_open(&db, old) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_int(old, "PRAGMA schema_version") == cookie);
    char *rows2 = sql_dump(old, v1_queries[1]);
    CHECK(same_text(rows, rows2));
    free(rows);
    free(rows2);
    for (int q = 0; q < N_V1_QUERIES; q++) free(before[q]);
}

/* A version-2 file is migrated to the shape of a fresh one; its rows survive, its runs
 * start with no recorded progress and no stalls, and the claim reads the new columns:
 * the expired run, which recorded an epoch, is reclaimed without a stall. */
static void test_migrate_v2(void)
{
    const char *old = support_path("old2.db");
    const char *fresh = support_path("fresh2.db");
    struct results *db = NULL;
    char *before[N_V1_QUERIES];
    CHECK(make_old(old, schema_results_v2_sql) == SQLITE_OK);
    CHECK(support_sql_exec(old, "UPDATE experiments SET notes = 'kept' WHERE id = 2") == SQLITE_OK);
    CHECK(support_sql_int(old, "PRAGMA user_version") == 2);
    for (int q = 0; q < N_V1_QUERIES; q++) before[q] = sql_dump(old, v1_queries[q]);
    CHECK(results_open(&db, old) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_int(old, "PRAGMA user_version") == RESULTS_SCHEMA_VERSION);
    for (int q = 0; q < N_V1_QUERIES; q++) {
        char *after = sql_dump(old, v1_queries[q]);
        CHECK(same_text(before[q], after));
        free(after);
        free(before[q]);
    }
    CHECK(support_sql_int(old, "SELECT count(*) FROM experiments WHERE notes = 'kept'") == 1);
    CHECK(support_sql_int(old, "SELECT count(*) FROM runs WHERE checkpoint_epoch = 0 AND"
                               " claim_progress = 0 AND stalls = 0 AND at_epoch IS NULL"
                               " AND at_step IS NULL") == 6);

    CHECK(results_open(&db, fresh) == DR_OK);
    results_close(db);
    db = NULL;
    char *shape_old = schema_shape(old), *shape_fresh = schema_shape(fresh);
    CHECK(shape_old && strstr(shape_old, "|stalls|INTEGER|1|0|0") != NULL);
    CHECK(same_text(shape_old, shape_fresh));
    if (!same_text(shape_old, shape_fresh))
        fprintf(stderr, "migrated:\n%s\nfresh:\n%s\n", shape_old, shape_fresh);
    free(shape_old);
    free(shape_fresh);

    /* run 6 (experiment 2) is running under an expired lease with one epoch recorded */
    struct results_claim req;
    struct results_lease lease;
    const int64_t ids[] = {2};
    results_claim_init(&req);
    req.experiment_ids = ids;
    req.n_experiments = 1;
    CHECK(results_open(&db, old) == DR_OK);
    CHECK(results_claim_run(db, &lease, &req) == DR_OK && lease.run_id == 6);
    CHECK(lease.attempt == 2);
    results_close(db);
    CHECK(support_sql_int(old, "SELECT stalls * 100 + claim_progress FROM runs WHERE id = 6")
          == 1);
}

/* Experiment 1 of v1_rows: 2 of its 4 finished runs reach 0.94, the Clopper-Pearson
 * interval of 2/4 (scipy.stats.binomtest(2, 4).proportion_ci()) in the summary;
 * experiment 2 has no target and nothing finished: NULLs. */
static void check_hit_rates(const char *path)
{
    CHECK(support_sql_int(path,
        "SELECT count(*) FROM experiment_summary WHERE experiment_id = 1 AND hits = 2"
        " AND finished = 4 AND hit_rate = 0.5 AND abs(hit_ci_lo - 0.06758598648854298) < 1e-12"
        " AND abs(hit_ci_hi - 0.932414013511457) < 1e-12") == 1);
    CHECK(support_sql_int(path,
        "SELECT count(*) FROM experiment_summary WHERE experiment_id = 2"
        " AND hit_rate IS NULL AND hit_ci_lo IS NULL AND hit_ci_hi IS NULL") == 1);
    /* the rows of n = 4 (k = 0..4) and nothing else: experiment 2 finished none */
    CHECK(support_sql_int(path, "SELECT count(*) * 100 + min(n) * 10 + max(k) FROM binomial_ci")
          == 544);
}

/* A version-4 file (tests/fixtures/schemas/results-v4.sql) is migrated to the shape of a
 * fresh one, its rows kept; binomial_ci gets the intervals of the finished counts it holds
 * as the migrating open ends; a run finishing later adds those of its new count (in its own
 * transaction, without another open) and leaves the rows already there as they were. */
static void test_migrate_v4(void)
{
    const char *old = support_path("old4.db");
    const char *fresh = support_path("fresh4.db");
    struct results *db = NULL;
    char *before[N_V1_QUERIES];
    CHECK(make_old(old, schema_results_v4_sql) == SQLITE_OK);
    CHECK(support_sql_exec(old,
        "INSERT INTO params(experiment_id, key, position, value, type, num)"
        " VALUES (1, 'train.epochs', 0, '3', 'int', 3);"
        "INSERT INTO overrides(experiment_id, position, text) VALUES (1, 0, 'train.epochs=3')")
          == SQLITE_OK);
    CHECK(support_sql_int(old, "PRAGMA user_version") == 4);
    for (int q = 0; q < N_V1_QUERIES; q++) before[q] = sql_dump(old, v1_queries[q]);
    char *params_before = sql_dump(old, "SELECT * FROM params");

    /* read-only: read as it is, without the new columns */
    CHECK(results_open_readonly(&db, old) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_int(old, "PRAGMA user_version") == 4);

    CHECK(results_open(&db, old) == DR_OK);
    CHECK(db && results_check_integrity(db) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_int(old, "PRAGMA user_version") == 5);
    for (int q = 0; q < N_V1_QUERIES; q++) {
        char *after = sql_dump(old, v1_queries[q]);
        CHECK(same_text(before[q], after));
        free(after);
        free(before[q]);
    }
    char *params_after = sql_dump(old, "SELECT * FROM params");
    CHECK(same_text(params_before, params_after));
    free(params_before);
    free(params_after);
    check_hit_rates(old);

    /* against a fresh version-5 database holding the same rows */
    CHECK(results_open(&db, fresh) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_exec(fresh, v1_rows) == SQLITE_OK);
    CHECK(results_open(&db, fresh) == DR_OK);
    results_close(db);
    db = NULL;
    char *shape_old = schema_shape(old), *shape_fresh = schema_shape(fresh);
    CHECK(shape_old && strstr(shape_old, "binomial_ci|") != NULL &&
          strstr(shape_old, "|hit_ci_hi|") != NULL);
    CHECK(same_text(shape_old, shape_fresh));
    if (!same_text(shape_old, shape_fresh))
        fprintf(stderr, "migrated:\n%s\nfresh:\n%s\n", shape_old, shape_fresh);
    free(shape_old);
    free(shape_fresh);
    char *master_old = sql_dump(old, "SELECT type, name, tbl_name, sql FROM sqlite_schema"
                                     " WHERE name IN ('binomial_ci', 'experiment_summary')"
                                     " ORDER BY name");
    char *master_fresh = sql_dump(fresh, "SELECT type, name, tbl_name, sql FROM sqlite_schema"
                                         " WHERE name IN ('binomial_ci', 'experiment_summary')"
                                         " ORDER BY name");
    CHECK(master_old && strstr(master_old, "CREATE TABLE binomial_ci") != NULL);
    CHECK(same_text(master_old, master_fresh));
    free(master_old);
    free(master_fresh);
    check_hit_rates(fresh);
    const char *all = "SELECT * FROM experiment_summary ORDER BY experiment_id";
    char *sum_old = sql_dump(old, all), *sum_fresh = sql_dump(fresh, all);
    CHECK(sum_old && sum_fresh && same_text(sum_old, sum_fresh));
    free(sum_old);
    free(sum_fresh);
    const char *ci = "SELECT n, k, lo, hi FROM binomial_ci ORDER BY n, k";
    char *ci_old = sql_dump(old, ci), *ci_fresh = sql_dump(fresh, ci);
    CHECK(ci_old && ci_old[0] && same_text(ci_old, ci_fresh));
    free(ci_fresh);

    /* run 5 (experiment 1, pending) finishes at 0.95: 3 of 5 reach the target */
    struct results_claim req;
    struct results_lease lease;
    struct results_outcome out;
    const int64_t ids[] = {1};
    results_claim_init(&req);
    req.experiment_ids = ids;
    req.n_experiments = 1;
    CHECK(results_open(&db, old) == DR_OK);
    CHECK(results_claim_run(db, &lease, &req) == DR_OK && lease.run_id == 5);
    memset(&out, 0, sizeof out);
    out.status = RUN_DONE;
    out.final_test_acc = 0.95;
    out.train_time = 10;
    out.total_time = 11;
    out.target_time = 9;
    out.target_epoch = 2;
    CHECK(results_run_finish(db, &lease, &out) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_int(old,
        "SELECT count(*) FROM experiment_summary WHERE experiment_id = 1 AND hits = 3"
        " AND finished = 5 AND abs(hit_rate - 0.6) < 1e-15"
        " AND abs(hit_ci_lo - 0.14663279963467254) < 1e-12"
        " AND abs(hit_ci_hi - 0.9472550494736843) < 1e-12") == 1);
    CHECK(support_sql_int(old, "SELECT count(*) FROM binomial_ci WHERE n = 5") == 6);
    char *ci_later = sql_dump(old, "SELECT n, k, lo, hi FROM binomial_ci WHERE n = 4"
                                   " ORDER BY n, k");
    CHECK(same_text(ci_old, ci_later));   /* the rows of n = 4, untouched */
    free(ci_old);
    free(ci_later);
}

/* Five processes released at once on one version-1 file: all open it, it is migrated
 * once (a second ALTER TABLE would fail), and no row is lost. */
static void test_concurrent(void)
{
    const char *p = support_path("race.db");
    int gate[2];
    pid_t pids[5];
    CHECK(make_v1(p) == SQLITE_OK);
    CHECK(pipe(gate) == 0);
    fflush(NULL);
    for (int i = 0; i < 5; i++) {
        pids[i] = fork();
        if (pids[i] == 0) {
            char c;
            close(gate[1]);
            while (read(gate[0], &c, 1) < 0 && errno == EINTR) {}
            struct results *db = NULL;
            int code = results_open(&db, p) == DR_OK ? 0 : 1;
            if (code == 0 && results_check_integrity(db) != DR_OK) code = 2;
            results_close(db);
            _exit(code);
        }
    }
    close(gate[0]);
    close(gate[1]);   /* EOF: every child starts now */
    for (int i = 0; i < 5; i++) {
        int status = -1;
        waitpid(pids[i], &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    CHECK(support_sql_int(p, "PRAGMA user_version") == RESULTS_SCHEMA_VERSION);
    CHECK(support_sql_int(p, "SELECT count(*) FROM pragma_table_info('experiments')"
                             " WHERE name = 'notes'") == 1);
    CHECK(support_sql_int(p, "SELECT (SELECT count(*) FROM experiments) * 10000"
                             " + (SELECT count(*) FROM runs) * 100 + (SELECT count(*) FROM epochs)")
          == 20608);
}

/* A migration that cannot complete (here: a column the user added by hand under the
 * new column's name) fails naming the file and leaves the database as it was. */
static void test_failed_migration(void)
{
    const char *p = support_path("clash.db");
    struct results *db = NULL;
    CHECK(make_v1(p) == SQLITE_OK);
    CHECK(support_sql_exec(p, "ALTER TABLE experiments ADD COLUMN notes INTEGER") == SQLITE_OK);
    char *view = sql_dump(p, "SELECT sql FROM sqlite_schema WHERE name = 'experiment_summary'");
    support_capture_begin();
    CHECK(results_open(&db, p) == DR_ERR_DB && db == NULL);
    const char *msg = support_capture_end();
    CHECK(strstr(msg, p) != NULL && strstr(msg, "notes") != NULL &&
          strstr(msg, "from version 1 to 2 failed") != NULL);
    CHECK(support_sql_int(p, "PRAGMA user_version") == 1);
    char *view2 = sql_dump(p, "SELECT sql FROM sqlite_schema WHERE name = 'experiment_summary'");
    CHECK(same_text(view, view2));   /* the view was not dropped: all or nothing */
    CHECK(support_sql_int(p, "SELECT count(*) FROM runs") == 6);
    char *check = sql_dump(p, "PRAGMA integrity_check");
    CHECK(same_text(check, "ok\n"));
    free(check);
    free(view);
    free(view2);
}

/* A database from a newer dawnrun is refused, read-write and read-only, naming the file
 * and both versions, and left byte for byte as it was. */
static void test_newer(void)
{
    const char *p = support_path("newer.db");
    struct results *db = NULL;
    long len = 0;
    char want[64];
    CHECK(results_open(&db, p) == DR_OK);
    results_close(db);
    db = NULL;
    snprintf(want, sizeof want, "PRAGMA user_version = %d", RESULTS_SCHEMA_VERSION + 1);
    CHECK(support_sql_exec(p, want) == SQLITE_OK);
    CHECK(support_sql_exec(p, "PRAGMA wal_checkpoint(TRUNCATE)") == SQLITE_OK);
    char *bytes = support_read_file(p, &len);
    support_capture_begin();
    CHECK(results_open(&db, p) == DR_ERR_DB && db == NULL);
    const char *msg = support_capture_end();
    snprintf(want, sizeof want, "version %d", RESULTS_SCHEMA_VERSION + 1);
    CHECK(strstr(msg, p) != NULL && strstr(msg, "newer dawnrun") != NULL &&
          strstr(msg, want) != NULL);
    support_capture_begin();
    CHECK(results_open_readonly(&db, p) == DR_ERR_DB && db == NULL);
    support_capture_end();
    CHECK(support_file_unchanged(p, bytes, len));
    free(bytes);
}

/* A negative schema version (a damaged or foreign file) is refused like any file that is
 * not ours, read-write and read-only, and left as it was; it used to index the migration
 * table out of bounds. */
static void test_negative_version(void)
{
    const char *p = support_path("negative.db");
    struct results *db = NULL;
    long len = 0;
    CHECK(results_open(&db, p) == DR_OK);
    results_close(db);
    db = NULL;
    CHECK(support_sql_exec(p, "PRAGMA user_version = -134217726") == SQLITE_OK);
    CHECK(support_sql_exec(p, "PRAGMA wal_checkpoint(TRUNCATE)") == SQLITE_OK);
    char *bytes = support_read_file(p, &len);
    support_capture_begin();
    CHECK(results_open(&db, p) == DR_ERR_DB && db == NULL);
    const char *msg = support_capture_end();
    CHECK(strstr(msg, p) != NULL && strstr(msg, "not a dawnrun results database") != NULL);
    support_capture_begin();
    CHECK(results_open_readonly(&db, p) == DR_ERR_DB && db == NULL);
    support_capture_end();
    CHECK(support_file_unchanged(p, bytes, len));
    free(bytes);
}

/* The README's query through the sqlite3 shell, when there is one. */
static void test_readme_query(void)
{
    const char *p = support_path("old.db");
    char cmd[1024];
    if (system("command -v sqlite3 >/dev/null 2>&1") != 0) {
        printf("sqlite3 shell not found: README query not run\n");
        return;
    }
    snprintf(cmd, sizeof cmd, "sqlite3 -header '%s' 'select * from experiment_summary' >'%s'",
             p, support_path("readme.txt"));
    CHECK(system(cmd) == 0);
    long len = 0;
    char *out = support_read_file(support_path("readme.txt"), &len);
    CHECK(out && len > 0);
    if (out) {
        out[len] = '\0';
        CHECK(strstr(out, "experiment_id|name|hash|engine|target|runs|done|finished|hits|"
                          "median_acc|median_train_time|median_time_to_target|created|notes|"
                          "hit_rate|hit_ci_lo|hit_ci_hi\n") != NULL);
        CHECK(strstr(out, "1|dawn \"v1\", old|hash-one|cpu|0.94|5|3|4|2|0.95|11.0|7.5|") != NULL);
    }
    free(out);
}

int main(void)
{
    if (support_tmpdir_make("/tmp/dawnrun-test-migrate-XXXXXX") != 0) return 1;
    test_texts();
    test_migrate();
    test_migrate_v2();
    test_migrate_v4();
    test_concurrent();
    test_failed_migration();
    test_newer();
    test_negative_version();
    test_readme_query();
    return support_tmpdir_finish(check_finish("test_results_migrate"));
}

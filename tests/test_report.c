/* Tests of the batch report and the query commands. A fixture database is built through
 * the results API (three experiments; done, running, pending, failed and diverged runs
 * with known accuracies, times and epochs) and the report's figures are checked against
 * values computed independently; each output format is parsed back (CSV and JSON with
 * the strict readers of tests/report_check.c). Given the dawnrun executable as argv[1]
 * it also checks the commands: experiments, runs, show (its table against the train
 * printer), report with configs (overrides, sweeps), ids and names, merge (idempotence,
 * inputs unchanged), and every error path: unknown experiment, missing database, bad
 * --format, bad --target, bad merge inputs, a locked output. */
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support.h"
#include "engine/core/experiment.h"
#include "report_check.h"
#include "results/results.h"
#include "runner/cli/cli.h"
#include "runner/report/report.h"
#include "runner/report/report_internal.h"

/* ---- the fixture ------------------------------------------------------------------------ */

/* The accuracies of the example, at target 0.94: 4/5 reach it, median 0.9413. */
static const double A_ACC[5] = {0.9413, 0.9390, 0.9421, 0.9405, 0.9418};
static const double A_TIME[5] = {161.2, 160.5, 162.0, 161.0, 163.4};
/* Test accuracy after epochs 1..3 (epoch 4 is the final one): seeds 0, 2, 3, 4 first
 * reach 0.94 at epochs 3, 4, 4, 2; seed 1 never does. */
static const double A_EARLY[5][3] = {
    {0.80, 0.90, 0.9402}, {0.80, 0.90, 0.9350}, {0.80, 0.90, 0.9380},
    {0.80, 0.90, 0.9360}, {0.80, 0.9410, 0.9400},
};
static const double B_ACC[5] = {0.9380, 0.9402, 0.9395, 0.9411, 0.9388};
static const double B_TIME[5] = {150.1, 149.8, 151.0, 150.4, 149.5};
#define N_EPOCHS 4
#define TEST_TIME 2.5   /* seconds of evaluation per epoch */

static const char C_NAME[] = "res|net9 \"wide\", v2";   /* quoting in every format */

/* The epoch rows of a done run: train time spread evenly over the epochs. */
/* sqrt of the mean of the two sample variances of a[0..4] and b[0..4]. */
static double pooled_sd5(const double *a, const double *b)
{
    double ma = 0.0, mb = 0.0, va = 0.0, vb = 0.0;
    for (int i = 0; i < 5; i++) {
        ma += a[i] / 5;
        mb += b[i] / 5;
    }
    for (int i = 0; i < 5; i++) {
        va += (a[i] - ma) * (a[i] - ma) / 4;
        vb += (b[i] - mb) * (b[i] - mb) / 4;
    }
    return sqrt(0.5 * (va + vb));
}

/* The train time's detectable difference of dawn-768 against dawn-512: the exact
 * Mann-Whitney test's at 5 and 5 runs and the pooled sd of their times. */
static double expected_time_mde(void)
{
    double mde = NAN;
    CHECK(stats_power_mwu_mde(&mde, pooled_sd5(A_TIME, B_TIME), 5, 5, 0.05, 0.8) == DR_OK);
    return mde;
}

static struct results_epoch epoch_of(int epoch, double test_acc, double train_time)
{
    struct results_epoch e;
    memset(&e, 0, sizeof e);
    e.epoch = epoch;
    e.lr = 0.1 * epoch;
    e.train_loss = 1.0 / epoch;
    e.train_acc = 0.5 + 0.1 * epoch;
    e.test_loss = 0.9 / epoch;
    e.test_acc = test_acc;
    e.train_time = train_time / N_EPOCHS;
    e.test_time = TEST_TIME;
    e.total_time = epoch * (train_time / N_EPOCHS + TEST_TIME);
    return e;
}

/* Claims the next run of experiment `exp` (it must be seed `seed`). */
static struct results_lease claim(struct results *db, int64_t exp, uint64_t seed)
{
    struct results_claim req;
    struct results_lease l;
    results_claim_init(&req);
    req.experiment_ids = &exp;
    req.n_experiments = 1;
    memset(&l, 0, sizeof l);
    CHECK(results_claim_run(db, &l, &req) == DR_OK);
    CHECK(l.run_id > 0 && l.seed == seed);
    return l;
}

/* Records a done run under lease l: epochs with `early` accuracies then `acc`. The
 * stored target epoch/time are those for 0.94, as the scheduler would compute them. */
static void finish_done(struct results *db, const struct results_lease *l, const double *early,
                        double acc, double train_time)
{
    struct results_outcome o = {RUN_DONE, acc, train_time, train_time + N_EPOCHS * TEST_TIME,
                                -1, -1, NULL};
    for (int k = 1; k <= N_EPOCHS; k++) {
        double a = k < N_EPOCHS ? early[k - 1] : acc;
        struct results_epoch e = epoch_of(k, a, train_time);
        CHECK(results_epoch_record(db, l, &e) == DR_OK);
        if (o.target_epoch < 0 && a >= 0.94) {
            o.target_epoch = k;
            o.target_time = k * (train_time / N_EPOCHS);
        }
    }
    CHECK(results_run_finish(db, l, &o) == DR_OK);
}

static struct results_experiment experiment_row(const char *name, const char *hash,
                                                const char *text)
{
    struct results_experiment e;
    memset(&e, 0, sizeof e);
    e.name = name;
    e.config_hash = hash;
    e.config_text = text;
    e.dawnrun_version = "0.1.0";
    e.engine = "cpu";
    e.host = "testhost";
    e.target_accuracy = 0.94;
    return e;
}

/* Loads tests/e2e/tiny.cfg with one override (or none) for its hash and text. */
static int load_tiny(struct experiment *e, const char *set)
{
    char path[1024];
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/e2e/tiny.cfg", src ? src : ".");
    const char *sets[1] = {set};
    return experiment_load(e, path, sets, set ? 1 : 0);
}

struct fixture {
    int64_t a, b, c;          /* experiment ids */
    int64_t a_seed0_run;      /* run id of A's seed 0 */
};

/* A: tiny.cfg as is ("dawn-512"), seeds 0-4 done, 5 running, 6 pending.
 * B: tiny.cfg with train.batch_size=256 ("dawn-768"), seeds 0-4 done, 5 diverged, 6 failed.
 * C: tiny.cfg with train.epochs=2 under a hash that is not experiment_hash (as if the
 *    engine had been folded in), seeds 0-1 pending.
 * `reverse`: A's done runs finish in the opposite order (claimed 0..4, finished 4..0). */
static void build_fixture(const char *path, struct fixture *fx, int reverse)
{
    struct results *db = NULL;
    struct experiment ea, eb, ec;
    char ha[65], hb[65];
    const uint64_t seeds[7] = {0, 1, 2, 3, 4, 5, 6};
    struct results_lease l[7];
    CHECK(load_tiny(&ea, NULL) == DR_OK);
    CHECK(load_tiny(&eb, "train.batch_size=256") == DR_OK);
    CHECK(load_tiny(&ec, "train.epochs=2") == DR_OK);
    experiment_hash(&ea, ha);
    experiment_hash(&eb, hb);
    CHECK(results_open(&db, path) == DR_OK);
    if (!db) return;

    struct results_experiment xa = experiment_row("dawn-512", ha, ea.resolved);
    struct results_experiment xb = experiment_row("dawn-768", hb, eb.resolved);
    struct results_experiment xc = experiment_row(C_NAME, "c0ffee0123456789c0ffee0123456789"
                                                  "c0ffee0123456789c0ffee0123456789", ec.resolved);
    CHECK(results_experiment_register(db, &fx->a, NULL, &xa) == DR_OK);
    CHECK(results_experiment_register(db, &fx->b, NULL, &xb) == DR_OK);
    CHECK(results_experiment_register(db, &fx->c, NULL, &xc) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, fx->a, seeds, 7, 3) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, fx->b, seeds, 7, 3) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, fx->c, seeds, 2, 3) == DR_OK);

    for (int s = 0; s < 5; s++) l[s] = claim(db, fx->a, (uint64_t)s);
    for (int k = 0; k < 5; k++) {
        int s = reverse ? 4 - k : k;
        finish_done(db, &l[s], A_EARLY[s], A_ACC[s], A_TIME[s]);
    }
    fx->a_seed0_run = l[0].run_id;
    l[5] = claim(db, fx->a, 5);   /* left running */

    for (int s = 0; s < 5; s++) {
        const double early[3] = {0.80, 0.90, B_ACC[s] - 0.004};
        l[s] = claim(db, fx->b, (uint64_t)s);
        finish_done(db, &l[s], early, B_ACC[s], B_TIME[s]);
    }
    struct results_epoch e1 = epoch_of(1, 0.5, 150.0);
    l[5] = claim(db, fx->b, 5);
    CHECK(results_epoch_record(db, &l[5], &e1) == DR_OK);
    struct results_outcome div = {RUN_DIVERGED, NAN, NAN, NAN, -1, -1,
                                  "loss became NaN at epoch 2"};
    CHECK(results_run_finish(db, &l[5], &div) == DR_OK);
    l[6] = claim(db, fx->b, 6);
    struct results_outcome oom = {RUN_FAILED, NAN, NAN, NAN, -1, -1, "out of device memory"};
    CHECK(results_run_finish(db, &l[6], &oom) == DR_OK);

    results_close(db);
    experiment_free(&ea);
    experiment_free(&eb);
    experiment_free(&ec);
}

/* ---- report figures -------------------------------------------------------------------- */

/* The expected values below were computed independently in Python (statistics.mean /
 * stdev; numpy-style linear quantiles written out by hand; the t quantile, Welch's
 * p-value and the t CDF with mpmath's regularized incomplete beta at 30 digits; the
 * exact Mann-Whitney p-value by enumerating all 252 splits of the 10 ranks, two-sided as
 * 2 min(P(U <= u), P(U >= u)); the detectable differences with scipy 1.17: brentq over
 * delta of scipy.stats.nct.sf(t.ppf(0.975, df), df, delta / (sd sqrt(1/na + 1/nb))) = 0.8,
 * sd pooled over the pair, na = nb = 5 for the accuracy and 5 * 3 / pi for the time). */
static void test_figures(const char *db_path, const struct fixture *fx)
{
    struct results *db = NULL;
    struct report r;
    const int64_t ids[3] = {fx->a, fx->b, fx->c};
    CHECK(results_open_readonly(&db, db_path) == DR_OK);
    CHECK(report_compute(&r, db, ids, 3, NAN) == DR_OK);
    CHECK(r.n == 3);
    if (r.n != 3) goto done;

    const struct report_exp *a = &r.exps[0], *b = &r.exps[1], *c = &r.exps[2];
    CHECK(a->total == 7 && a->n_status[RUN_DONE] == 5 && a->n_status[RUN_RUNNING] == 1 &&
          a->n_status[RUN_PENDING] == 1);
    CHECK(a->finished == 5 && a->hits == 4);
    /* scipy.stats.binomtest(4, 5).proportion_ci(): the exact interval */
    CHECK_NEAR(a->hit_rate, 0.8, 1e-15);
    CHECK_NEAR(a->hit_ci_lo, 0.28358206388191054, 1e-9);
    CHECK_NEAR(a->hit_ci_hi, 0.9949492366205319, 1e-9);
    CHECK_NEAR(a->target, 0.94, 0);
    CHECK(a->acc_stats.n == 5);
    CHECK_NEAR(a->acc_stats.median, 0.9413, 1e-12);
    CHECK_NEAR(a->acc_stats.q1, 0.9405, 1e-12);
    CHECK_NEAR(a->acc_stats.q3, 0.9418, 1e-12);
    CHECK_NEAR(a->acc_stats.iqr, 0.0013, 1e-12);
    CHECK_NEAR(a->acc_stats.mean, 0.94094, 1e-12);
    CHECK_NEAR(a->acc_stats.std, 0.0012421755109484618, 1e-12);
    CHECK_NEAR(a->acc_stats.ci_lo, 0.9393976353886049, 1e-10);
    CHECK_NEAR(a->acc_stats.ci_hi, 0.9424823646113951, 1e-10);
    CHECK_NEAR(a->acc_stats.min, 0.9390, 1e-12);
    CHECK_NEAR(a->acc_stats.max, 0.9421, 1e-12);
    CHECK(a->reached == 4);
    CHECK_NEAR(a->epochs_to_target, 3.5, 1e-12);           /* median of 3, 4, 4, 2 */
    CHECK_NEAR(a->time_to_target, 140.95, 1e-9);           /* of 120.9, 162.0, 161.0, 81.7 */
    CHECK_NEAR(a->train_time_stats.median, 161.2, 1e-9);
    CHECK_NEAR(a->total_time_stats.median, 171.2, 1e-9);

    CHECK(b->total == 7 && b->n_status[RUN_DONE] == 5 && b->n_status[RUN_DIVERGED] == 1 &&
          b->n_status[RUN_FAILED] == 1);
    CHECK(b->finished == 6 && b->hits == 2);               /* the diverged run counts */
    CHECK_NEAR(b->hit_rate, 2.0 / 6, 1e-15);
    CHECK_NEAR(b->hit_ci_lo, 0.043271868292889565, 1e-9);  /* binomtest(2, 6) */
    CHECK_NEAR(b->hit_ci_hi, 0.7772219044964505, 1e-9);
    CHECK_NEAR(b->acc_stats.mean, 0.93952, 1e-12);
    CHECK_NEAR(b->acc_stats.std, 0.0012029131306956888, 1e-12);
    CHECK_NEAR(b->acc_stats.median, 0.9395, 1e-12);
    CHECK(b->reached == 2);
    CHECK_NEAR(b->epochs_to_target, 4, 0);
    CHECK_NEAR(b->time_to_target, 150.1, 1e-9);            /* of 149.8 and 150.4 */
    CHECK_NEAR(b->train_time_stats.median, 150.1, 1e-9);

    CHECK(c->total == 2 && c->n_status[RUN_PENDING] == 2 && c->finished == 0 && c->hits == 0);
    CHECK(isnan(c->hit_rate) && isnan(c->hit_ci_lo) && isnan(c->hit_ci_hi));   /* 0 of 0 */
    CHECK(c->acc_stats.n == 0 && isnan(c->acc_stats.mean) && isnan(c->train_time_stats.median));
    CHECK(c->reached == 0 && isnan(c->epochs_to_target));

    const struct report_cmp *cb = &r.cmp[1], *cc = &r.cmp[2];
    CHECK_NEAR(cb->d_acc_mean, -0.00142, 1e-12);
    CHECK_NEAR(cb->acc_welch.statistic, -1.836275130397061, 1e-9);
    CHECK_NEAR(cb->acc_welch.df, 7.991761605020992, 1e-9);
    CHECK_NEAR(cb->acc_welch.p, 0.103673905834884, 1e-9);
    CHECK_NEAR(cb->acc_mwu.statistic, 4, 0);
    CHECK_NEAR(cb->acc_mwu.p, 0.09523809523809523, 1e-12);  /* 12/126 */
    CHECK_NEAR(cb->d_time_median, -11.1, 1e-9);
    CHECK_NEAR(cb->d_time_rel, -11.1 / 161.2, 1e-12);
    CHECK_NEAR(cb->time_welch.p, 1.0580132567317616e-06, 1e-12);
    CHECK_NEAR(cb->time_mwu.p, 0.007936507936507936, 1e-12); /* 2/252 */
    CHECK_NEAR(cb->mde_acc, 0.002475287882219388, 1e-12);
    /* the time's detectable difference is that of the exact Mann-Whitney test printed
     * (tests/test_stats_power.c checks stats_power_mwu_mde), at the pooled sd of the
     * times: 1.88 s by the t-test's 3/pi rule before, more for the exact test at 5, 5 */
    CHECK_NEAR(cb->mde_time, expected_time_mde(), 1e-12);
    CHECK(cb->mde_time > 1.8781147104785774);
    CHECK_NEAR(cb->mde_time_rel, expected_time_mde() / 161.2, 1e-12);
    CHECK(cb->time_runs_min == 4);
    CHECK(isnan(cc->mde_acc) && isnan(cc->mde_time) && isnan(r.cmp[0].mde_acc));
    CHECK(isnan(cc->d_acc_mean) && isnan(cc->acc_welch.p) && isnan(cc->acc_mwu.p));
    CHECK(isnan(r.cmp[0].d_acc_mean) && isnan(r.cmp[0].acc_welch.p));
    report_free(&r);

    /* another target: only 0.9421 reaches 0.942, at its last epoch */
    CHECK(report_compute(&r, db, ids, 1, 0.942) == DR_OK);
    if (r.n == 1) {
        CHECK(r.exps[0].hits == 1 && r.exps[0].finished == 5 && r.exps[0].reached == 1);
        /* the interval follows --target, not the stored one: binomtest(1, 5) */
        CHECK_NEAR(r.exps[0].hit_ci_lo, 0.005050763379468115, 1e-9);
        CHECK_NEAR(r.exps[0].hit_ci_hi, 0.7164179361180895, 1e-9);
        CHECK_NEAR(r.exps[0].epochs_to_target, 4, 0);
        CHECK_NEAR(r.exps[0].time_to_target, 162.0, 1e-9);
    }
    report_free(&r);

    /* an unknown id is an error, not an empty column */
    const int64_t bad[1] = {999};
    CHECK(report_compute(&r, db, bad, 1, NAN) == DR_ERR_USAGE);
    report_free(&r);
done:
    results_close(db);
}

/* ---- formats --------------------------------------------------------------------------- */

/* report_print into a malloc'd string (NULL on failure). */
static char *print_report(struct results *db, const int64_t *ids, int n, double target,
                          enum report_format fmt)
{
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    if (!f) return NULL;
    int rc = report_print(f, db, ids, n, target, fmt);
    fclose(f);
    if (rc != DR_OK) {
        free(text);
        return NULL;
    }
    return text;
}

static double csv_number(const struct csv *c, int record, const char *column)
{
    int k = csv_column(c, column);
    if (k < 0 || record >= c->n_records || k >= c->n_fields[record]) return -999;
    const char *s = c->fields[record][k];
    char *end = NULL;
    double v = strtod(s, &end);
    return *s && !*end ? v : NAN;
}

static const char *csv_field(const struct csv *c, int record, const char *column)
{
    int k = csv_column(c, column);
    if (k < 0 || record >= c->n_records || k >= c->n_fields[record]) return "(missing)";
    return c->fields[record][k];
}

/* Checks a CSV report of the fixture's experiments A, B, C. */
static void check_csv(const char *text)
{
    struct csv c;
    const char *err = NULL;
    CHECK(text && csv_parse(&c, text, &err) == 0);
    if (!text || err) {
        fprintf(stderr, "bad CSV at: %.40s\n", err ? err : "(none)");
        return;
    }
    CHECK(c.n_records == 4);
    for (int r = 1; r < c.n_records; r++) CHECK(c.n_fields[r] == c.n_fields[0]);
    if (c.n_records == 4) {
        CHECK(!strcmp(csv_field(&c, 1, "name"), "dawn-512"));
        CHECK(!strcmp(csv_field(&c, 3, "name"), C_NAME));   /* quoting round-trips */
        CHECK(csv_number(&c, 1, "acc_median") == 0.9413);   /* exact: shortest round-trip */
        CHECK(csv_number(&c, 1, "hits") == 4 && csv_number(&c, 1, "finished") == 5);
        CHECK(csv_column(&c, "hit_rate") == csv_column(&c, "hits") + 1);
        CHECK(csv_column(&c, "hit_ci95_lo") == csv_column(&c, "hits") + 2);
        CHECK(csv_column(&c, "hit_ci95_hi") == csv_column(&c, "hits") + 3);
        CHECK(csv_number(&c, 1, "hit_rate") == 0.8);
        CHECK_NEAR(csv_number(&c, 1, "hit_ci95_lo"), 0.28358206388191054, 1e-12);
        CHECK_NEAR(csv_number(&c, 1, "hit_ci95_hi"), 0.9949492366205319, 1e-12);
        CHECK_NEAR(csv_number(&c, 2, "hit_ci95_lo"), 0.043271868292889565, 1e-12);
        CHECK(!strcmp(csv_field(&c, 3, "hit_rate"), "") &&
              !strcmp(csv_field(&c, 3, "hit_ci95_hi"), ""));   /* nothing finished */
        CHECK(csv_number(&c, 1, "runs") == 7 && csv_number(&c, 1, "running") == 1);
        CHECK_NEAR(csv_number(&c, 1, "acc_std"), 0.0012421755109484618, 1e-15);
        CHECK(isnan(csv_number(&c, 1, "p_acc_welch")));      /* empty for the first */
        CHECK(csv_number(&c, 2, "diverged") == 1 && csv_number(&c, 2, "failed") == 1);
        CHECK_NEAR(csv_number(&c, 2, "p_acc_welch"), 0.103673905834884, 1e-9);
        CHECK_NEAR(csv_number(&c, 2, "d_train_time_median"), -11.1, 1e-9);
        CHECK_NEAR(csv_number(&c, 2, "mde_acc"), 0.002475287882219388, 1e-12);
        CHECK_NEAR(csv_number(&c, 2, "mde_train_time"), expected_time_mde(), 1e-12);
        CHECK(csv_number(&c, 2, "mwu_min_seeds") == 4);
        CHECK(!strcmp(csv_field(&c, 1, "mwu_min_seeds"), ""));
        CHECK(isnan(csv_number(&c, 1, "mde_acc")) && isnan(csv_number(&c, 3, "mde_acc")));
        CHECK(csv_number(&c, 2, "vs_experiment_id") == csv_number(&c, 1, "experiment_id"));
        CHECK(isnan(csv_number(&c, 3, "acc_mean")));         /* unknown: empty */
        CHECK(!strcmp(csv_field(&c, 3, "acc_mean"), ""));
    }
    csv_free(&c);
}

/* Checks a JSON report of the fixture's experiments A, B, C. */
static void check_json(const char *text)
{
    struct json j;
    const char *err = NULL;
    CHECK(text && json_parse(&j, text, &err) == 0);
    if (!text || err) {
        fprintf(stderr, "bad JSON at: %.40s\n", err ? err : "(none)");
        return;
    }
    const struct json *xs = json_get(&j, "experiments");
    const struct json *a = json_at(xs, 0), *b = json_at(xs, 1), *c = json_at(xs, 2);
    CHECK(xs && xs->n == 3 && a && b && c);
    CHECK(json_get(&j, "target") && json_get(&j, "target")->type == JSON_NULL);
    CHECK(json_number(json_get(json_get(a, "accuracy"), "median")) == 0.9413);
    CHECK(json_number(json_get(json_get(a, "runs"), "running")) == 1);
    CHECK(json_number(json_get(a, "hits")) == 4 && json_number(json_get(a, "finished")) == 5);
    CHECK(json_number(json_get(a, "hit_rate")) == 0.8);
    CHECK_NEAR(json_number(json_get(a, "hit_ci95_lo")), 0.28358206388191054, 1e-12);
    CHECK_NEAR(json_number(json_get(a, "hit_ci95_hi")), 0.9949492366205319, 1e-12);
    CHECK(json_get(c, "hit_rate") && json_get(c, "hit_rate")->type == JSON_NULL);
    CHECK(json_get(c, "hit_ci95_lo") && json_get(c, "hit_ci95_lo")->type == JSON_NULL);
    CHECK(json_number(json_get(a, "epochs_to_target_median")) == 3.5);
    const struct json *s = json_get(a, "sentence");
    CHECK(s && s->type == JSON_STRING &&
          !strcmp(s->string, "4/5 runs reach 94 % (80 %, 95 % CI 28–99 %), median 94.13 %, "
                             "161 s"));
    CHECK(json_get(a, "vs_first") && json_get(a, "vs_first")->type == JSON_NULL);
    const struct json *vs = json_get(b, "vs_first");
    CHECK_NEAR(json_number(json_get(json_get(vs, "acc_welch"), "p")), 0.103673905834884, 1e-9);
    CHECK_NEAR(json_number(json_get(json_get(vs, "train_time_mannwhitney"), "p")),
               0.007936507936507936, 1e-12);
    CHECK(json_number(json_get(json_get(b, "runs"), "diverged")) == 1);
    CHECK_NEAR(json_number(json_get(vs, "mde_acc")), 0.002475287882219388, 1e-12);
    CHECK_NEAR(json_number(json_get(vs, "mde_train_time_rel")), expected_time_mde() / 161.2,
               1e-12);
    CHECK(json_number(json_get(vs, "mwu_min_seeds")) == 4);
    CHECK(json_number(json_get(vs, "mde_power")) == 0.8 &&
          json_number(json_get(vs, "mde_alpha")) == 0.05);
    const struct json *name = json_get(c, "name");
    CHECK(name && name->type == JSON_STRING && !strcmp(name->string, C_NAME));
    const struct json *mean = json_get(json_get(c, "accuracy"), "mean");
    CHECK(mean && mean->type == JSON_NULL);                  /* NaN -> null */
    const struct json *p = json_get(json_get(json_get(c, "vs_first"), "acc_welch"), "p");
    CHECK(p && p->type == JSON_NULL);
    json_free(&j);
}

/* Checks a GitHub table: a header, the separator, then rows, all with the same number of
 * unescaped cell separators. */
static void check_markdown(const char *text)
{
    int line = 0, bars0 = -1, rows = 0;
    CHECK(text != NULL);
    if (!text) return;
    for (const char *p = text; *p && *p == '|'; line++) {
        int bars = 0;
        const char *end = strchr(p, '\n');
        if (!end) end = p + strlen(p);
        for (const char *q = p; q < end; q++)
            if (*q == '|' && (q == p || q[-1] != '\\')) bars++;
        if (bars0 < 0) bars0 = bars;
        CHECK(bars == bars0);
        if (line == 1) CHECK(!strncmp(p, "|---|---:|", 10));
        rows++;
        p = *end ? end + 1 : end;
    }
    CHECK(bars0 == 5);   /* label + 3 experiments */
    CHECK(rows > 10);
    CHECK(strstr(text, "res\\|net9") != NULL);
    CHECK(strstr(text, "- dawn-512: 4/5 runs reach 94 % (80 %, 95 % CI 28–99 %), "
                       "median 94.13 %, 161 s") != NULL);
}

static void test_formats(const char *db_path, const struct fixture *fx)
{
    struct results *db = NULL;
    const int64_t ids[3] = {fx->a, fx->b, fx->c};
    enum report_format fmt;
    CHECK(report_format_parse(&fmt, "table") == 0 && fmt == REPORT_TABLE);
    CHECK(report_format_parse(&fmt, "csv") == 0 && fmt == REPORT_CSV);
    CHECK(report_format_parse(&fmt, "json") == 0 && fmt == REPORT_JSON);
    CHECK(report_format_parse(&fmt, "markdown") == 0 && fmt == REPORT_MARKDOWN);
    CHECK(report_format_parse(&fmt, "xml") == -1 && report_format_parse(&fmt, "") == -1);
    CHECK(report_format_parse(&fmt, "CSV") == -1 && report_format_parse(&fmt, NULL) == -1);

    CHECK(results_open_readonly(&db, db_path) == DR_OK);
    char *table = print_report(db, ids, 3, NAN, REPORT_TABLE);
    CHECK(table != NULL);
    if (table) {
        fputs(table, stdout);
        CHECK(strstr(table, "dawn-512: 4/5 runs reach 94 % (80 %, 95 % CI 28–99 %), "
                            "median 94.13 %, 161 s\n") != NULL);
        CHECK(strstr(table, "dawn-768: 2/6 runs reach 94 % (33 %, 95 % CI 4–78 %), "
                            "median 93.95 %, 150 s\n") != NULL);
        CHECK(strstr(table, "no finished runs yet (0 of 2 runs done)") != NULL);
        CHECK(strstr(table, "94.09 ± 0.12 %") != NULL);
        CHECK(strstr(table, "  95 % CI of the mean            93.94 to 94.25 %") != NULL);
        CHECK(strstr(table, "  IQR (q1 to q3)                 0.13 pp (94.05 to 94.18 %)") !=
              NULL);
        CHECK(strstr(table, "3.5 (4 runs)") != NULL);
        CHECK(strstr(table, "-0.14 pp") != NULL);
        CHECK(strstr(table, "0.104, 0.0952") != NULL);
        CHECK(strstr(table, "-11.1 s (-6.9 %)") != NULL);
        CHECK(strstr(table, "1.06e-06, 0.00794") == NULL);   /* no mean test on a median */
        CHECK(strstr(table, "\n  p: Mann-Whitney  ") != NULL);
        CHECK(strstr(table, "  0.00794 (exact)  ") != NULL);
        CHECK(strstr(table, "(p-values compare each experiment with #1 on its own, without "
                            "correction for multiplicity (2 comparisons))\n") != NULL);
        CHECK(strstr(table, "\n  detectable (α .05, power .8)   -                     "
                            "       0.25 pp ") != NULL);
        char mde[64];
        snprintf(mde, sizeof mde, "%.2f s (%.1f %%)", expected_time_mde(),
                 100 * expected_time_mde() / 161.2);
        CHECK(strstr(table, mde) != NULL);
        CHECK(strstr(table, "target: each experiment's own") != NULL);
    }
    free(table);

    char *csv = print_report(db, ids, 3, NAN, REPORT_CSV);
    check_csv(csv);
    free(csv);
    char *json = print_report(db, ids, 3, NAN, REPORT_JSON);
    check_json(json);
    free(json);
    char *md = print_report(db, ids, 3, NAN, REPORT_MARKDOWN);
    if (md) fputs(md, stdout);
    check_markdown(md);
    free(md);

    /* one experiment: no comparison rows; an empty list is still valid output */
    char *one = print_report(db, ids, 1, 0.942, REPORT_TABLE);
    CHECK(one && strstr(one, "1/5 runs reach 94.2 % (20 %, 95 % CI 1–72 %)") &&
          !strstr(one, "vs #1"));
    CHECK(one && strstr(one, "runs >= target                   1/5 (20 %, 95 % CI 1–72 %)"));
    free(one);
    char *none = print_report(db, ids, 0, NAN, REPORT_JSON);
    struct json j;
    const char *err = NULL;
    CHECK(none && json_parse(&j, none, &err) == 0 && json_get(&j, "experiments") &&
          json_get(&j, "experiments")->n == 0);
    if (none && !err) json_free(&j);
    free(none);
    char *none_csv = print_report(db, ids, 0, NAN, REPORT_CSV);
    struct csv c;
    CHECK(none_csv && csv_parse(&c, none_csv, &err) == 0 && c.n_records == 1);
    if (none_csv && !err) csv_free(&c);
    free(none_csv);
    results_close(db);
}

/* The figures must not depend on the order in which runs finished. */
static void test_order_independence(const char *db_path)
{
    struct fixture fx;
    struct results *d1 = NULL, *d2 = NULL;
    const char *rev = support_path("reverse.db");
    build_fixture(rev, &fx, 1);
    const int64_t ids[3] = {fx.a, fx.b, fx.c};
    CHECK(results_open_readonly(&d1, db_path) == DR_OK);
    CHECK(results_open_readonly(&d2, rev) == DR_OK);
    char *t1 = print_report(d1, ids, 3, NAN, REPORT_CSV);
    char *t2 = print_report(d2, ids, 3, NAN, REPORT_CSV);
    CHECK(t1 && t2 && !strcmp(t1, t2));
    free(t1);
    free(t2);
    results_close(d1);
    results_close(d2);
}

/* Experiments without a target, with one done run, and runs without epoch rows. */
/* The sentence's whole percents: a rate or bound strictly between 0 and 1 keeps the
 * decimals it needs not to read as 0 % or 100 % (scipy: 1/200 -> 0.0127-2.754 %,
 * 0/1000 -> 0-0.368 %, 199/200 -> 97.25-99.987 %). */
static void test_sentence_rounding(void)
{
    static const struct {
        int k, n;
        const char *want;
    } cases[] = {
        {1, 200, "1/200 runs reach 94 % (0.5 %, 95 % CI 0.01–3 %), median 94.00 %"},
        {0, 1000, "0/1000 runs reach 94 % (0 %, 95 % CI 0–0.4 %), median 94.00 %"},
        {199, 200, "199/200 runs reach 94 % (99.5 %, 95 % CI 97–99.99 %), median 94.00 %"},
        {5, 5, "5/5 runs reach 94 % (100 %, 95 % CI 48–100 %), median 94.00 %"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct report_exp e;
        char buf[256];
        memset(&e, 0, sizeof e);
        e.target = 0.94;
        e.hits = cases[i].k;
        e.finished = e.total = e.n_status[RUN_DONE] = cases[i].n;
        e.hit_rate = (double)cases[i].k / cases[i].n;
        CHECK(stats_binomial_ci(&e.hit_ci_lo, &e.hit_ci_hi, cases[i].k, cases[i].n, 0.95) ==
              DR_OK);
        e.acc_stats.n = 1;
        e.acc_stats.median = 0.94;
        report_sentence(buf, sizeof buf, &e);
        CHECK(strcmp(buf, cases[i].want) == 0);
        if (strcmp(buf, cases[i].want) != 0) printf("  got: %s\n", buf);
    }
}

static void test_edge_cases(void)
{
    struct results *db = NULL;
    struct report r;
    int64_t ids[2];
    const uint64_t seeds[2] = {0, 1};
    struct results_experiment x1 = experiment_row("no-target", "aaaaaaaaaaaa", "a = 1;");
    struct results_experiment x2 = experiment_row("one-run", "bbbbbbbbbbbb", "b = 1;");
    x1.target_accuracy = NAN;
    CHECK(results_open(&db, support_path("edge.db")) == DR_OK);
    if (!db) return;
    CHECK(results_experiment_register(db, &ids[0], NULL, &x1) == DR_OK);
    CHECK(results_experiment_register(db, &ids[1], NULL, &x2) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, ids[0], seeds, 2, 3) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, ids[1], seeds, 1, 3) == DR_OK);
    for (int s = 0; s < 2; s++) {   /* done, but no epoch rows */
        struct results_lease l = claim(db, ids[0], (uint64_t)s);
        struct results_outcome o = {RUN_DONE, 0.93 + 0.01 * s, 100.0 + s, 110.0 + s, -1, -1, NULL};
        CHECK(results_run_finish(db, &l, &o) == DR_OK);
    }
    struct results_lease l = claim(db, ids[1], 0);
    struct results_outcome o = {RUN_DONE, 0.945, 50.0, 55.0, 20.0, 7, NULL};
    CHECK(results_run_finish(db, &l, &o) == DR_OK);

    CHECK(report_compute(&r, db, ids, 2, NAN) == DR_OK);
    if (r.n == 2) {
        const struct report_exp *a = &r.exps[0], *b = &r.exps[1];
        char sentence[256];
        CHECK(a->hits == -1 && a->reached == 0 && isnan(a->epochs_to_target));
        report_sentence(sentence, sizeof sentence, a);
        CHECK(!strcmp(sentence, "2 runs done, median 93.50 %, 100 s"));
        /* no epoch rows: the stored epoch and time count for the experiment's own target */
        CHECK(b->hits == 1 && b->reached == 1);
        CHECK_NEAR(b->epochs_to_target, 7, 0);
        CHECK_NEAR(b->time_to_target, 20.0, 0);
        CHECK(b->acc_stats.n == 1 && isnan(b->acc_stats.std) && isnan(b->acc_stats.ci_lo));
        /* one run against two: Mann-Whitney is defined, Welch's t is not */
        CHECK(isnan(r.cmp[1].acc_welch.p) && !isnan(r.cmp[1].acc_mwu.p));
        CHECK(isnan(r.cmp[1].mde_acc) && isnan(r.cmp[1].mde_time));   /* needs two a side */
        CHECK_NEAR(r.cmp[1].d_acc_mean, 0.945 - 0.935, 1e-12);
    }
    report_free(&r);
    /* ... but not for another target */
    CHECK(report_compute(&r, db, ids + 1, 1, 0.9) == DR_OK);
    CHECK(r.n == 1 && r.exps[0].hits == 1 && r.exps[0].reached == 0);
    report_free(&r);

    char *json = print_report(db, ids, 2, NAN, REPORT_JSON);
    struct json j;
    const char *err = NULL;
    CHECK(json && json_parse(&j, json, &err) == 0);
    if (json && !err) {
        const struct json *a = json_at(json_get(&j, "experiments"), 0);
        CHECK(json_get(a, "hits") && json_get(a, "hits")->type == JSON_NULL);
        CHECK(json_get(a, "hit_rate") && json_get(a, "hit_rate")->type == JSON_NULL);
        CHECK(json_get(a, "hit_ci95_hi") && json_get(a, "hit_ci95_hi")->type == JSON_NULL);
        CHECK(json_get(a, "target") && json_get(a, "target")->type == JSON_NULL);
        json_free(&j);
    }
    free(json);
    char *table = print_report(db, ids, 2, NAN, REPORT_TABLE);
    CHECK(table && strstr(table, "one-run: 1/1 runs reach 94 % (100 %, 95 % CI 3–100 %), "
                                 "median 94.50 %, 50.0 s"));
    CHECK(table && strstr(table, "-, 0.667"));   /* Welch undefined, Mann-Whitney U = 2 of 2 */
    free(table);
    results_close(db);
}

/* Two runs far apart: the t interval of the mean, 0.3 -+ 12.706 * 0.2, reaches past both
 * ends of [0, 1]; the report clamps it there, in every format, and writes ranges with
 * "to" (never a hyphen that reads as a minus sign). */
static void test_ci_clamped(void)
{
    struct results *db = NULL;
    struct report r;
    int64_t id;
    const uint64_t seeds[2] = {0, 1};
    struct results_experiment x = experiment_row("wide", "cccccccccccc", "c = 1;");
    CHECK(results_open(&db, support_path("wide.db")) == DR_OK);
    if (!db) return;
    CHECK(results_experiment_register(db, &id, NULL, &x) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, id, seeds, 2, 3) == DR_OK);
    for (int s = 0; s < 2; s++) {
        struct results_lease l = claim(db, id, (uint64_t)s);
        struct results_outcome o = {RUN_DONE, s ? 0.50 : 0.10, 100.0, 110.0, -1, -1, NULL};
        CHECK(results_run_finish(db, &l, &o) == DR_OK);
    }
    CHECK(report_compute(&r, db, &id, 1, NAN) == DR_OK);
    if (r.n == 1) {
        CHECK_NEAR(r.exps[0].acc_stats.mean, 0.3, 1e-12);
        CHECK(r.exps[0].acc_stats.ci_lo == 0.0 && r.exps[0].acc_stats.ci_hi == 1.0);
    }
    report_free(&r);
    char *table = print_report(db, &id, 1, NAN, REPORT_TABLE);
    CHECK(table && strstr(table, "  95 % CI of the mean            0.00 to 100.00 %\n"));
    CHECK(table && strstr(table, "  IQR (q1 to q3)                 20.00 pp (20.00 to 40.00 %)"));
    /* nothing unclamped, below the first line (it names the database, whose temporary
     * directory's random name may hold any characters) */
    const char *body = table ? strchr(table, '\n') : NULL;
    CHECK(body && !strstr(body, "-2") && !strstr(body, "284"));
    CHECK(body && !strstr(body, support_path("")));   /* the path is on the first line only */
    free(table);
    char *md = print_report(db, &id, 1, NAN, REPORT_MARKDOWN);
    CHECK(md && strstr(md, "| 0.00 to 100.00 % |") && strstr(md, "(20.00 to 40.00 %)"));
    free(md);
    char *csv = print_report(db, &id, 1, NAN, REPORT_CSV);
    struct csv c;
    const char *err = NULL;
    CHECK(csv && csv_parse(&c, csv, &err) == 0);
    if (csv && !err) {
        CHECK(c.n_records == 2);
        for (int k = 0; k < c.n_fields[0] && c.n_records == 2; k++) {
            if (!strcmp(c.fields[0][k], "acc_ci95_lo")) CHECK(!strcmp(c.fields[1][k], "0"));
            if (!strcmp(c.fields[0][k], "acc_ci95_hi")) CHECK(!strcmp(c.fields[1][k], "1"));
        }
        csv_free(&c);
    }
    free(csv);
    char *json = print_report(db, &id, 1, NAN, REPORT_JSON);
    struct json j;
    CHECK(json && json_parse(&j, json, &err) == 0);
    if (json && !err) {
        const struct json *a = json_get(json_at(json_get(&j, "experiments"), 0), "accuracy");
        CHECK(json_number(json_get(a, "ci95_lo")) == 0.0);
        CHECK(json_number(json_get(a, "ci95_hi")) == 1.0);
        json_free(&j);
    }
    free(json);
    results_close(db);
}

/* ---- the commands ---------------------------------------------------------------------- */

static void test_cli_queries(const char *db, const struct fixture *fx)
{
    const char *out_text = support_run_out(), *err_text = support_run_err();   /* per run */
    long len = 0;
    char *before = support_read_file(db, &len);

    CHECK(support_run("experiments --db %s", db) == 0);
    CHECK(strstr(out_text, "dawn-512") && strstr(out_text, "5/7") && strstr(out_text, "0/2"));
    CHECK(strstr(out_text, "runs done/total") && strstr(out_text, "created (UTC)"));

    CHECK(support_run("runs dawn-768 --db %s", db) == 0);
    CHECK(strstr(out_text, "diverged") && strstr(out_text, "failed") &&
          strstr(out_text, "94.02 %") && strstr(out_text, "loss became NaN at epoch 2"));
    CHECK(support_run("runs nosuch --db %s", db) == 2);
    CHECK(strstr(err_text, "no experiment 'nosuch'") != NULL);

    /* show: the epoch table as `dawnrun train` prints it, row for row */
    CHECK(support_run("show %lld --db %s", (long long)fx->a_seed0_run, db) == 0);
    {
        char *expect = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&expect, &size);
        table_print_header(f);
        for (int k = 1; k <= N_EPOCHS; k++) {
            double acc = k < N_EPOCHS ? A_EARLY[0][k - 1] : A_ACC[0];
            struct results_epoch e = epoch_of(k, acc, A_TIME[0]);
            struct epoch_record r = {e.epoch, e.lr, e.train_loss, e.train_acc, e.test_loss,
                                     e.test_acc, e.train_time, e.test_time, e.total_time};
            table_print_row(f, &r);
        }
        fclose(f);
        CHECK(expect && strstr(out_text, expect) != NULL);
        free(expect);
    }
    CHECK(strstr(out_text, "experiment dawn-512  seed 0  engine cpu") != NULL);
    CHECK(strstr(out_text, "final test acc 0.9413 after 4 epochs") != NULL);
    CHECK(strstr(out_text, "target 94 % reached at epoch 3") != NULL);
    CHECK(support_run("show 9999 --db %s", db) == 2 && strstr(err_text, "no run 9999"));
    CHECK(support_run("show abc --db %s", db) == 2 && strstr(err_text, "RUN must be a run id"));
    CHECK(support_run("show --db %s", db) == 2);

    /* report: everything, by name, by id, by hash prefix, by config (+ --set) */
    CHECK(support_run("report --db %s", db) == 0);
    CHECK(strstr(out_text, "dawn-512: 4/5 runs reach 94 % (80 %, 95 % CI 28–99 %), "
                           "median 94.13 %, 161 s") != NULL);
    CHECK(strstr(out_text, "dawn-768: 2/6 runs reach 94 % (33 %, 95 % CI 4–78 %)") != NULL);
    CHECK(support_run("report dawn-512 %lld --format csv --db %s", (long long)fx->b, db) == 0);
    {
        struct csv c;
        const char *err = NULL;
        CHECK(csv_parse(&c, out_text, &err) == 0 && c.n_records == 3);
        if (!err) {
            CHECK(!strcmp(csv_field(&c, 1, "name"), "dawn-512"));
            CHECK(!strcmp(csv_field(&c, 2, "name"), "dawn-768"));
            csv_free(&c);
        }
    }
    CHECK(support_run("report c0ffee01 --format markdown --db %s", db) == 0);
    CHECK(strstr(out_text, "| #1 res\\|net9") != NULL);
    char cfg[1024];
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    snprintf(cfg, sizeof cfg, "%s/tests/e2e/tiny.cfg", src ? src : ".");
    CHECK(support_run("report %s --db %s", cfg, db) == 0 && strstr(out_text, "#1 dawn-512") &&
          !strstr(out_text, "dawn-768"));
    CHECK(support_run("report %s --set train.batch_size=256 --db %s", cfg, db) == 0 &&
          strstr(out_text, "#1 dawn-768"));
    /* C is registered under another hash: found by its resolved text */
    CHECK(support_run("report %s --set train.epochs=2 --db %s", cfg, db) == 0 &&
          strstr(out_text, "#1 res|net9"));
    CHECK(support_run("report %s --set train.epochs=3 --db %s", cfg, db) == 2 &&
          strstr(err_text, "no experiment in") && strstr(err_text, "tiny.cfg"));
    CHECK(support_run("report %s --set train.nosuchkey=3 --db %s", cfg, db) == 3);
    /* a sweep, as `dawnrun run` expands it: one experiment per combination */
    CHECK(support_run("report %s --sweep train.batch_size=128,256 --db %s", cfg, db) == 0 &&
          strstr(out_text, "#1 dawn-512") && strstr(out_text, "#2 dawn-768"));
    CHECK(support_run("report %s --sweep train.batch_size=256,512 --db %s", cfg, db) == 0 &&
          strstr(out_text, "#1 dawn-768") && !strstr(out_text, "dawn-512") &&
          strstr(err_text, "train.batch_size=512: not in"));
    CHECK(support_run("report %s --sweep train.batch_size=998,999 --db %s", cfg, db) == 2 &&
          strstr(err_text, "none of its 2 sweep combinations"));
    {   /* the config's own sweep section */
        long n = 0;
        char *text = support_read_file(cfg, &n);
        FILE *f = fopen(support_path("swept.cfg"), "w");
        if (f && text) fprintf(f, "%s\nsweep = [\"train.batch_size=256,128\"];\n", text);
        if (f) fclose(f);
        free(text);
        CHECK(support_run("report %s --db %s", support_path("swept.cfg"), db) == 0 &&
              strstr(out_text, "#1 dawn-768") && strstr(out_text, "#2 dawn-512"));
    }

    /* the default database comes from $DAWNRUN_DB */
    setenv("DAWNRUN_DB", db, 1);
    CHECK(support_run("report --format json --target 0.942") == 0);
    unsetenv("DAWNRUN_DB");
    {
        struct json j;
        const char *err = NULL;
        CHECK(json_parse(&j, out_text, &err) == 0);
        if (!err) {
            const struct json *a = json_at(json_get(&j, "experiments"), 0);
            CHECK(json_number(json_get(&j, "target")) == 0.942);
            CHECK(json_number(json_get(a, "hits")) == 1);
            CHECK(json_get(&j, "experiments")->n == 3);
            json_free(&j);
        }
    }

    /* error paths: each a clear message and exit 2, or 1 for the database */
    CHECK(support_run("report nosuch --db %s", db) == 2);
    CHECK(strstr(err_text, "no experiment 'nosuch'") && strstr(err_text, db));
    CHECK(support_run("report --format xml --db %s", db) == 2 && strstr(err_text, "--format"));
    CHECK(support_run("report --target 94 --db %s", db) == 2 && strstr(err_text, "--target"));
    CHECK(support_run("report --target abc --db %s", db) == 2 && strstr(err_text, "--target"));
    CHECK(support_run("report --target 0 --db %s", db) == 2 && strstr(err_text, "--target"));
    CHECK(support_run("report --db %s --target", db) == 2 && strstr(err_text, "needs a value"));
    CHECK(support_run("report --db %s --frobnicate", db) == 2 && strstr(err_text, "unknown flag"));
    CHECK(support_run("report dawn-512 --set train.epochs=2 --db %s", db) == 2 &&
          strstr(err_text, "--set and --sweep apply to CONFIG"));
    CHECK(support_run("report --sweep train.epochs=2,3 --db %s", db) == 2 &&
          strstr(err_text, "--set and --sweep apply to CONFIG"));
    CHECK(support_run("report %s --sweep train.epochs --db %s", cfg, db) == 2 &&
          strstr(err_text, "--sweep needs"));
    const char *missing = support_path("no-such.db");
    CHECK(support_run("report --db %s", missing) == 1 && strstr(err_text, missing));
    CHECK(!support_exists(missing));
    CHECK(support_run("experiments --db %s", missing) == 1 && !support_exists(missing));
    CHECK(support_run("runs dawn-512 --db %s", missing) == 1 && !support_exists(missing));
    CHECK(support_run("show 1 --db %s", missing) == 1 && !support_exists(missing));

    /* none of the above wrote to the database */
    CHECK(support_file_unchanged(db, before, len));
    free(before);
}

/* A one-seed database of experiment A as a Slurm array task would write it. */
static void build_task(const char *path, uint64_t seed, double acc, double t)
{
    struct results *db = NULL;
    struct experiment ea;
    char ha[65];
    int64_t id = 0;
    CHECK(load_tiny(&ea, NULL) == DR_OK);
    experiment_hash(&ea, ha);
    CHECK(results_open(&db, path) == DR_OK);
    struct results_experiment xa = experiment_row("dawn-512", ha, ea.resolved);
    CHECK(results_experiment_register(db, &id, NULL, &xa) == DR_OK);
    CHECK(results_runs_ensure(db, NULL, id, &seed, 1, 3) == DR_OK);
    struct results_lease l = claim(db, id, seed);
    const double early[3] = {0.8, 0.9, 0.93};
    finish_done(db, &l, early, acc, t);
    results_close(db);
    experiment_free(&ea);
}

static void test_cli_merge(const char *fixture_db)
{
    const char *out_text = support_run_out(), *err_text = support_run_err();   /* per run */
    const char *t1 = support_path("task-7.db"), *t2 = support_path("task-8.db");
    const char *out = support_path("merged.db");
    long l1, l2, l3, lo;
    build_task(t1, 7, 0.9412, 160.0);
    build_task(t2, 8, 0.9391, 161.0);
    char *b1 = support_read_file(t1, &l1), *b2 = support_read_file(t2, &l2);
    char *b3 = support_read_file(fixture_db, &l3);

    CHECK(support_run("merge %s %s %s %s", out, fixture_db, t1, t2) == 0);
    CHECK(strstr(out_text, "3 experiments added; runs: 16 added, 0 replaced, 0 kept") != NULL);
    CHECK(strstr(out_text, "0 experiments added; runs: 1 added, 0 replaced, 0 kept; 4 epochs") !=
          NULL);
    CHECK(support_sql_int_readonly(out, "SELECT count(*) FROM experiments") == 3);
    CHECK(support_sql_int_readonly(out, "SELECT count(*) FROM runs") == 18);
    CHECK(support_sql_int_readonly(out, "SELECT count(*) FROM runs WHERE status = 'done'") == 12);
    /* the running run of the fixture arrives as interrupted: its lease stayed behind */
    CHECK(support_sql_int_readonly(out, "SELECT count(*) FROM runs"
                                        " WHERE status = 'interrupted'") == 1);
    long long epochs = support_sql_int_readonly(out, "SELECT count(*) FROM epochs");

    /* twice: nothing changes */
    CHECK(support_run("merge %s %s %s %s", out, fixture_db, t1, t2) == 0);
    CHECK(strstr(out_text, "0 experiments added; runs: 0 added, 0 replaced, 16 kept") != NULL);
    CHECK(strstr(out_text, "3 inputs merged: 0 experiments added; runs: 0 added, 0 replaced, "
                           "18 kept; 0 epochs copied") != NULL);
    CHECK(support_sql_int_readonly(out, "SELECT count(*) FROM runs") == 18);
    CHECK(support_sql_int_readonly(out, "SELECT count(*) FROM epochs") == epochs);
    CHECK(support_file_unchanged(t1, b1, l1) && support_file_unchanged(t2, b2, l2) &&
          support_file_unchanged(fixture_db, b3, l3));

    /* the merged database reports the new seeds */
    CHECK(support_run("report dawn-512 --db %s", out) == 0);
    CHECK(strstr(out_text, "runs done / total") && strstr(out_text, "7/9"));

    /* a file into itself is skipped */
    CHECK(support_run("merge %s %s", out, out) == 0 && strstr(out_text, "itself"));

    /* bad inputs: named, exit 1, the output untouched (or not even created) */
    char *bo = support_read_file(out, &lo);
    const char *junk = support_path("junk.db"), *foreign = support_path("foreign.db");
    FILE *f = fopen(junk, "w");
    if (f) {
        fputs("this is not a database\n", f);
        fclose(f);
    }
    CHECK(support_sql_exec(foreign, "CREATE TABLE t(x); INSERT INTO t VALUES (1)") == SQLITE_OK);
    CHECK(support_run("merge %s %s", out, junk) == 1 && strstr(err_text, junk) &&
          strstr(err_text, "not merged"));
    CHECK(support_run("merge %s %s", out, foreign) == 1 && strstr(err_text, foreign));
    CHECK(support_run("merge %s %s", out, support_path("absent.db")) == 1 &&
          strstr(err_text, "absent.db"));
    CHECK(support_file_unchanged(out, bo, lo));
    const char *fresh = support_path("fresh.db");
    CHECK(support_run("merge %s %s", fresh, junk) == 1 && !support_exists(fresh));
    /* a bad input among good ones: the good ones are merged, the exit code says 1 */
    CHECK(support_run("merge %s %s %s", fresh, junk, t1) == 1 && support_exists(fresh));
    CHECK(support_sql_int_readonly(fresh, "SELECT count(*) FROM runs") == 1);
    /* an output that is not ours */
    CHECK(support_run("merge %s %s", foreign, t1) == 1 && strstr(err_text, foreign));
    CHECK(support_run("merge %s", out) == 2 && strstr(err_text, "usage"));
    CHECK(support_run("merge --bogus %s %s", out, t1) == 2);

    /* a locked output: merge waits the busy timeout, then fails clearly, nothing merged */
    sqlite3 *lock = NULL;
    CHECK(sqlite3_open(out, &lock) == SQLITE_OK &&
          sqlite3_exec(lock, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
    /* absent: fails at once */
    CHECK(support_run("merge %s %s", out, support_path("task-9.db")) == 1);
    build_task(support_path("task-9.db"), 9, 0.95, 150.0);
    CHECK(support_run("merge %s %s", out, support_path("task-9.db")) == 1);
    CHECK(strstr(err_text, "locked") && strstr(err_text, out) && strstr(err_text, "not merged"));
    sqlite3_exec(lock, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(lock);
    CHECK(support_sql_int_readonly(out, "SELECT count(*) FROM runs") == 18);

    free(b1);
    free(b2);
    free(b3);
    free(bo);
}

/* Three runs a side: no outcome of the exact Mann-Whitney test reaches p < 0.05 (its
 * smallest p is 0.1), so the report says the time difference is not detectable with
 * these runs and how many a side can detect one, instead of a number. In memory, through
 * the table writer. */
static void test_few_runs(void)
{
    static double acc[2][3] = {{0.9400, 0.9410, 0.9390}, {0.9380, 0.9420, 0.9405}};
    static double times[2][3] = {{10.0, 10.2, 10.1}, {9.0, 9.1, 9.2}};
    static const char *const names[2] = {"few-a", "few-b"};
    struct report_exp e[2];
    struct report_cmp c[2];
    struct report r;
    memset(e, 0, sizeof e);
    memset(c, 0, sizeof c);
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 2; i++) {
        e[i].x.name = names[i];
        e[i].x.config_hash = "0123456789ab";
        e[i].x.engine = "cpu";
        e[i].target = NAN;
        e[i].hits = -1;
        e[i].hit_rate = e[i].hit_ci_lo = e[i].hit_ci_hi = NAN;
        e[i].total = e[i].finished = e[i].n_status[RUN_DONE] = 3;
        e[i].acc = acc[i];
        e[i].train_time = times[i];
        e[i].n_acc = e[i].n_train_time = 3;
        CHECK(stats_summarize(&e[i].acc_stats, acc[i], 3) == DR_OK);
        CHECK(stats_summarize(&e[i].train_time_stats, times[i], 3) == DR_OK);
        CHECK(stats_summarize(&e[i].total_time_stats, times[i], 3) == DR_OK);
        e[i].epochs_to_target = e[i].time_to_target = NAN;
    }
    r.n = 2;
    r.exps = e;
    r.cmp = c;
    r.target = NAN;
    r.db_path = "memory";
    CHECK(report_compare_all(&r) == DR_OK);
    CHECK(isinf(c[1].mde_time) && c[1].time_runs_min == 4);
    CHECK(c[1].time_mwu.exact && fabs(c[1].time_mwu.p - 0.1) < 1e-12);   /* 2 / C(6, 3) */
    CHECK(isfinite(c[1].mde_acc));   /* the t-test can reject with 3 and 3 */
    char *text = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&text, &size);
    CHECK(f != NULL);
    if (!f) return;
    CHECK(report_write_table(f, &r) == DR_OK);
    fclose(f);
    CHECK(strstr(text, "  not detectable with 3 and 3 runs (4 a side can)\n") != NULL);
    CHECK(strstr(text, "0.1 (exact)") != NULL);
    free(text);
}

int main(int argc, char **argv)
{
    struct fixture fx;
    if (support_tmpdir_make("/tmp/dawnrun-test-report-XXXXXX") != 0) return 1;
    const char *db = support_path("fixture.db");
    build_fixture(db, &fx, 0);
    if (argc > 1) {
        support_run_program(argv[1], 1);
        test_cli_queries(db, &fx);
        test_cli_merge(db);
    } else {
        test_figures(db, &fx);
        test_formats(db, &fx);
        test_order_independence(db);
        test_edge_cases();
        test_sentence_rounding();
        test_ci_clamped();
        test_few_runs();
    }
    return support_tmpdir_finish(check_finish(argc > 1 ? "test_report (commands)" : "test_report"));
}

/* `dawnrun run CONFIG...`: a multi-seed batch. Loads every experiment (sweeps expanded),
 * checks the data and the engine, registers the experiments and their runs in the results
 * store, works the queue (in this process, or in one forked worker per device; with
 * --until-decided in rounds of seeds until the comparison is decided, decide.c), and
 * prints the report of the batch. Everything that can be wrong with the input is found
 * before anything is registered. */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "cli.h"
#include "runner/sched/decide.h"
#include "engine/core/data.h"
#include "engine/core/run_plan.h"
#include "base/sha256.h"
#include "base/grow.h"
#include "base/status.h"
#include "load.h"
#include "runner/report/report.h"
#include "results/results.h"
#include "run_dry.h"
#include "runner/sched/scheduler.h"
#include "runner/sched/sweep.h"
#include "runner/sched/workers.h"

#ifndef DAWNRUN_GIT_REV
#define DAWNRUN_GIT_REV "unknown"
#endif

#define RUN_MAX_ARGS 256
#define RUN_MAX_SEEDS 10000
#define RUN_DEFAULT_DB "results/dawnrun.db"

struct run_args {
    struct cli_common c;
    const char *configs[RUN_MAX_ARGS];
    int n_configs;
    const char *sweeps[SWEEP_MAX_DIMS]; /* --sweep values, checked as they are read */
    int n_sweeps;
    uint64_t seed_list[RUN_MAX_SEEDS];
    int n_seed_list;                    /* 0: --seed-list not given */
    long n_seeds;                       /* --seeds, 0 = not given */
    const char *db;
    int devices[WORKERS_MAX];
    int n_devices;
    long workers;                       /* 0 = not given */
    int retry_failed, keep_checkpoints;
    int dry_run;                        /* --dry-run: list the grid, train nothing, write nothing */
    const char *experiment;
    double lease;
    int until_decided;                  /* --until-decided: rounds of seeds until decided */
    double alpha, delta;                /* its design (NaN: not given) */
    int round, max_seeds;               /* 0: not given */
};

/* ---- flags ----------------------------------------------------------------------------- */

/* Parses "0,3,7" into a->seed_list (duplicates dropped). */
static int parse_seed_list(struct run_args *a, const char *v)
{
    const char *p = v;
    if (!v || !*v) {
        dr_eprintf("dawnrun run: --seed-list needs a value such as 0,3,7\n");
        return -1;
    }
    while (*p) {
        char *end = NULL;
        errno = 0;
        unsigned long long s = strtoull(p, &end, 10);
        if (*p == '-' || *p == '+' || end == p || errno || (*end && *end != ',')) {
            dr_eprintf("dawnrun run: --seed-list: expected seeds like 0,3,7, got '%s'\n", v);
            return -1;
        }
        int dup = 0;
        for (int i = 0; i < a->n_seed_list; i++) dup |= a->seed_list[i] == s;
        if (!dup) {
            if (a->n_seed_list == RUN_MAX_SEEDS) {
                dr_eprintf("dawnrun run: --seed-list: more than %d seeds\n", RUN_MAX_SEEDS);
                return -1;
            }
            a->seed_list[a->n_seed_list++] = (uint64_t)s;
        }
        p = *end ? end + 1 : end;
        if (*end && !*p) {
            dr_eprintf("dawnrun run: --seed-list: expected seeds like 0,3,7, got '%s'\n", v);
            return -1;
        }
    }
    return 0;
}

static int parse_devices(struct run_args *a, const char *v)
{
    const char *p = v;
    if (!v || !*v) {
        dr_eprintf("dawnrun run: --devices needs a value such as 0,1\n");
        return -1;
    }
    a->n_devices = 0;
    while (*p) {
        char *end = NULL;
        errno = 0;
        long d = strtol(p, &end, 10);
        if (end == p || errno || d < 0 || d > 1024 || (*end && *end != ',') ||
            a->n_devices == WORKERS_MAX) {
            dr_eprintf("dawnrun run: --devices: expected device numbers like 0,1, got '%s'\n",
                       v);
            return -1;
        }
        a->devices[a->n_devices++] = (int)d;
        p = *end ? end + 1 : end;
    }
    return 0;
}

static int take_seed_list(void *dst, const char *v, const char *cmd)
{
    (void)cmd;
    return parse_seed_list(dst, v) == 0 ? DR_OK : DR_ERR_USAGE;
}

static int take_devices(void *dst, const char *v, const char *cmd)
{
    (void)cmd;
    return parse_devices(dst, v) == 0 ? DR_OK : DR_ERR_USAGE;
}

/* --sweep key.path=v1,v2: checked as it is read. */
static int take_sweep(void *dst, const char *v, const char *cmd)
{
    struct run_args *a = dst;
    (void)cmd;
    if (a->n_sweeps == SWEEP_MAX_DIMS) {
        dr_eprintf("dawnrun run: more than %d --sweep flags\n", SWEEP_MAX_DIMS);
        return DR_ERR_USAGE;
    }
    struct sweep check = {0};
    int bad = sweep_add(&check, v, "--sweep", DR_ERR_USAGE) != DR_OK;
    sweep_free(&check);
    if (bad) return DR_ERR_USAGE;
    a->sweeps[a->n_sweeps++] = v;
    return DR_OK;
}

static int take_experiment(void *dst, const char *v, const char *cmd)
{
    (void)cmd;
    if (!*v || strlen(v) > 200) {
        dr_eprintf("dawnrun run: --experiment needs a name (1 to 200 characters)\n");
        return DR_ERR_USAGE;
    }
    *(const char **)dst = v;
    return DR_OK;
}

static int take_lease(void *dst, const char *v, const char *cmd)
{
    char *end = NULL;
    double lease = strtod(v, &end);
    (void)cmd;
    if (end == v || *end || !(lease >= 1.0 && lease <= 86400.0)) {
        dr_eprintf("dawnrun run: --lease: expected seconds in [1, 86400], got '%s'\n", v);
        return DR_ERR_USAGE;
    }
    *(double *)dst = lease;
    return DR_OK;
}

/* --alpha: the error level of a batch run until decided, in (0, 1). */
static int take_alpha(void *dst, const char *v, const char *cmd)
{
    char *end = NULL;
    double x = strtod(v, &end);
    (void)cmd;
    if (end == v || *end || !(x > 0.0 && x < 1.0)) {
        dr_eprintf("dawnrun run: --alpha: expected an error level in (0, 1) such as 0.05, "
                   "got '%s'\n", v);
        return DR_ERR_USAGE;
    }
    *(double *)dst = x;
    return DR_OK;
}

/* --delta: the equivalence margin, "0.1pp" (percentage points) or a fraction (0.001). */
static int take_delta(void *dst, const char *v, const char *cmd)
{
    char *end = NULL;
    double x = strtod(v, &end);
    (void)cmd;
    int pp = end != v && !strcmp(end, "pp");
    if (end == v || (*end && !pp) || !(x >= 0.0 && x < (pp ? 100.0 : 1.0))) {
        dr_eprintf("dawnrun run: --delta: expected an accuracy margin such as 0.1pp or "
                   "0.001, got '%s'\n", v);
        return DR_ERR_USAGE;
    }
    *(double *)dst = pp ? x / 100.0 : x;
    return DR_OK;
}

static const struct cli_flag run_flags[] = {
    {.name = "seeds", .kind = CLI_LONG, .offset = offsetof(struct run_args, n_seeds),
     .meta = "N", .help = "run seeds 0..N-1 (default: the config's train.seeds)",
     .min = 1, .max = RUN_MAX_SEEDS},
    /* the callbacks without an offset take the whole struct run_args */
    {.name = "seed-list", .kind = CLI_CALL, .meta = "LIST",
     .help = "run these seeds, e.g. 0,3,7 (not with --seeds)", .call = take_seed_list},
    CLI_FLAG_SET(struct run_args, c),
    {.name = "sweep", .kind = CLI_CALL, .meta = "key=v1,v2",
     .help = "run every value of a config key (several: every combination)",
     .hint = CLI_HINT_KEY, .repeat = 1, .call = take_sweep},
    {.name = "db", .kind = CLI_STRING, .offset = offsetof(struct run_args, db),
     .meta = "PATH",
     .help = "the results database (default: $DAWNRUN_DB, or " RUN_DEFAULT_DB ")",
     .hint = CLI_HINT_FILE},
    CLI_FLAG_ENGINE(struct run_args, c),
    CLI_FLAG_THREADS(struct run_args, c),
    CLI_FLAG_DEVICE(struct run_args, c),
    {.name = "devices", .kind = CLI_CALL, .meta = "LIST",
     .help = "a worker process per CUDA device, e.g. 0,1 (not with --workers)",
     .call = take_devices},
    {.name = "workers", .kind = CLI_LONG, .offset = offsetof(struct run_args, workers),
     .meta = "N", .help = "N worker processes sharing the batch", .min = 1,
     .max = WORKERS_MAX},
    {.name = "retry-failed", .kind = CLI_SWITCH,
     .offset = offsetof(struct run_args, retry_failed),
     .help = "run the failed runs again, with a fresh budget of attempts"},
    {.name = "keep-checkpoints", .kind = CLI_SWITCH,
     .offset = offsetof(struct run_args, keep_checkpoints),
     .help = "keep each run's checkpoints after it finishes"},
    {.name = "experiment", .kind = CLI_CALL,
     .offset = offsetof(struct run_args, experiment), .meta = "NAME",
     .help = "record the runs under this experiment name (one CONFIG)",
     .call = take_experiment},
    {.name = "lease", .kind = CLI_CALL, .offset = offsetof(struct run_args, lease),
     .meta = "SECONDS",
     .help = "how long a claimed run stays claimed without a sign of life",
     .call = take_lease},
    {.name = "dry-run", .kind = CLI_SWITCH, .offset = offsetof(struct run_args, dry_run),
     .help = "print the experiments and runs; register and train nothing"},
    {.name = "until-decided", .kind = CLI_SWITCH,
     .offset = offsetof(struct run_args, until_decided),
     .help = "add seeds in rounds until each CONFIG's comparison with the first is decided"},
    {.name = "alpha", .kind = CLI_CALL, .offset = offsetof(struct run_args, alpha),
     .meta = "P", .help = "--until-decided: the error level of the batch (default 0.05)",
     .call = take_alpha},
    {.name = "delta", .kind = CLI_CALL, .offset = offsetof(struct run_args, delta),
     .meta = "MARGIN",
     .help = "--until-decided: the equivalence margin, e.g. 0.1pp or 0.001 (default 0.1pp)",
     .call = take_delta},
    {.name = "round", .kind = CLI_INT, .offset = offsetof(struct run_args, round),
     .meta = "K", .help = "--until-decided: seeds added to every experiment per round "
     "(default 5)", .min = 1, .max = RUN_MAX_SEEDS / 2},
    {.name = "max-seeds", .kind = CLI_INT, .offset = offsetof(struct run_args, max_seeds),
     .meta = "N", .help = "--until-decided: the cap on each experiment's seeds (default 50)",
     .min = 1, .max = RUN_MAX_SEEDS / 2},
};

const struct cli_command cli_run = {
    .name = "run",
    .args = "CONFIG...",
    .summary = "run a multi-seed batch into the results database, then report",
    .flags = run_flags,
    .n_flags = (int)(sizeof run_flags / sizeof run_flags[0]),
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_run,
};

/* Checks the --until-decided flags and fills in their defaults; 0 or -1 (printed). */
static int parse_decide(struct run_args *a)
{
    int given = !isnan(a->alpha) || !isnan(a->delta) || a->round || a->max_seeds;
    if (!a->until_decided) {
        if (given) {
            cli_usage_error(&cli_run, "--alpha, --delta, --round and --max-seeds belong to "
                            "--until-decided");
            return -1;
        }
        return 0;
    }
    if (a->n_seeds || a->n_seed_list) {
        cli_usage_error(&cli_run, "--until-decided chooses the seeds (0, 1, ... in rounds): "
                        "not with --seeds or --seed-list (--round and --max-seeds size it)");
        return -1;
    }
    if (isnan(a->alpha)) a->alpha = DECIDE_DEFAULT_ALPHA;
    if (isnan(a->delta)) a->delta = DECIDE_DEFAULT_DELTA;
    if (!a->round) a->round = DECIDE_DEFAULT_ROUND;
    if (!a->max_seeds) a->max_seeds = a->round > DECIDE_DEFAULT_MAX_SEEDS ? a->round
                                                                          : DECIDE_DEFAULT_MAX_SEEDS;
    if (a->max_seeds < a->round) {
        cli_usage_error(&cli_run, "--max-seeds must be at least --round");
        return -1;
    }
    return 0;
}

/* Fills a from argv; returns 0, 1 after --help printed the usage, or -1 after printing
 * the problem and the usage line. */
static int parse_args(struct run_args *a, int argc, char **argv)
{
    int n_args = 0, parsed = cli_parse(&cli_run, a, argc, argv, &n_args);
    if (parsed == CLI_HELP) return 1;
    if (parsed != CLI_PARSED) return -1;
    if (n_args > RUN_MAX_ARGS) {
        cli_usage_error(&cli_run, "too many configs");
        return -1;
    }
    for (int i = 0; i < n_args; i++) a->configs[a->n_configs++] = argv[1 + i];
    if (a->n_configs == 0) {
        cli_usage_error(&cli_run, "CONFIG is missing");
        return -1;
    }
    if (a->n_seeds && a->n_seed_list) {
        cli_usage_error(&cli_run, "--seeds and --seed-list exclude each other");
        return -1;
    }
    if (a->n_devices && a->workers) {
        cli_usage_error(&cli_run, "--devices and --workers exclude each other (--devices "
                        "starts one worker per device; repeat a device for two)");
        return -1;
    }
    if (a->n_devices && !strcmp(a->c.engine, "cpu")) {
        cli_usage_error(&cli_run, "--devices needs the cuda engine; for CPU worker "
                        "processes use --workers N");
        return -1;
    }
    if (a->experiment && a->n_configs > 1) {
        cli_usage_error(&cli_run, "--experiment names one experiment: give one CONFIG");
        return -1;
    }
    return parse_decide(a);
}

/* ---- the batch: configs x sweep combinations ------------------------------------------- */

/* Appends one loaded experiment to b, naming it and computing its identity, with the
 * overrides it was loaded with (copied); takes ownership of e and g. A duplicate (same
 * identity) is dropped. *index gets the experiment's place in b (the earlier one's for a
 * duplicate). */
static int batch_add(struct sched_batch *b, int *cap, int *index, struct experiment *e,
                     struct graph *g, const char *label, const struct run_args *a,
                     const char *const *sets, int n_sets)
{
    int rc = DR_OK;
    struct sched_experiment x;
    memset(&x, 0, sizeof(x));
    x.e = *e;
    x.g = *g;
    x.overrides = calloc((size_t)n_sets + 1, sizeof(*x.overrides));
    CHECK_ALLOC(x.overrides, "an override list");
    for (; x.n_overrides < n_sets; x.n_overrides++) {
        x.overrides[x.n_overrides] = strdup(sets[x.n_overrides]);
        CHECK_ALLOC(x.overrides[x.n_overrides], "an override");
    }
    sweep_strip_resolved(x.e.resolved);
    experiment_hash(&x.e, x.config_hash);
    const char *base = a->experiment ? a->experiment : x.e.name;
    if (label[0]) snprintf(x.name, sizeof(x.name), "%s:%s", base, label);
    else snprintf(x.name, sizeof(x.name), "%s", base);
    if (a->experiment) {
        char key[SCHED_LABEL_MAX + 32];
        int n = snprintf(key, sizeof(key), "dawnrun experiment name\n%s", x.name);
        sha256_hex(x.identity, key, (size_t)n);
    } else {
        memcpy(x.identity, x.config_hash, sizeof(x.identity));
    }
    for (int i = 0; i < b->n; i++)
        if (!strcmp(b->x[i].identity, x.identity)) {
            printf("note: %s%s%s is the same experiment as %s: run once\n", x.e.path,
                   label[0] ? " with " : "", label, b->x[i].name);
            *index = i;
            graph_free(&x.g);
            experiment_free(&x.e);
            goto cleanup;
        }
    /* seeds: the flags', else the config's count */
    int n = a->n_seed_list ? a->n_seed_list : (int)(a->n_seeds ? a->n_seeds : x.e.seeds);
    x.seeds = malloc((size_t)n * sizeof(*x.seeds));
    CHECK_ALLOC(x.seeds, "a seed list");
    for (int i = 0; i < n; i++) x.seeds[i] = a->n_seed_list ? a->seed_list[i] : (uint64_t)i;
    x.n_seeds = n;
    if (grow_reserve(&b->x, cap, b->n + 1, 8, sizeof(*b->x)) != DR_OK)
        FAIL(DR_ERR_NOMEM, "out of memory allocating the batch");
    *index = b->n;
    b->x[b->n++] = x;
    x.seeds = NULL;
    x.overrides = NULL;
    x.n_overrides = 0;
cleanup:
    for (int k = 0; k < x.n_overrides; k++) free(x.overrides[k]);
    free(x.overrides);
    if (rc != DR_OK) {
        free(x.seeds);
        graph_free(&x.g);
        experiment_free(&x.e);
    }
    return rc;
}

/* Loads CONFIG (with the --set flags) and expands its sweep (its own `sweep` section, then
 * --sweep) into b; a sweep's axes and combinations go to log. */
static int batch_load_config(struct sched_batch *b, int *cap, struct sweep_log *log,
                             const char *config, const struct run_args *a)
{
    int rc = DR_OK, index = 0;
    struct experiment e;
    struct graph g;
    struct sweep s = {0};
    char **combo = NULL, *label = NULL;
    const char *sets[CLI_MAX_SETS + SWEEP_MAX_DIMS];
    TRY(runner_load(&e, &g, config, a->c.sets, a->c.n_sets));
    rc = sweep_add_from_resolved(&s, e.resolved, config);
    /* a --sweep of a key the config sweeps too replaces the config's values */
    for (int d = 0; rc == DR_OK && d < a->n_sweeps; d++)
        rc = sweep_add(&s, a->sweeps[d], "--sweep", DR_ERR_USAGE);
    if (rc != DR_OK || s.n_dims == 0) {
        if (rc == DR_OK) rc = batch_add(b, cap, &index, &e, &g, "", a, a->c.sets, a->c.n_sets);
        else {
            graph_free(&g);
            experiment_free(&e);
        }
        goto cleanup;
    }
    graph_free(&g);
    experiment_free(&e);
    TRY(sweep_log_axes(log, &s));
    for (int i = 0; i < sweep_count(&s); i++) {
        TRY(sweep_combination(&s, i, &combo, &label));
        int n = 0;
        for (int k = 0; k < a->c.n_sets; k++) sets[n++] = a->c.sets[k];
        for (int d = 0; d < s.n_dims; d++) sets[n++] = combo[d];
        rc = runner_load(&e, &g, config, sets, n);
        if (rc != DR_OK) {
            dr_eprintf("dawnrun run: (in the sweep combination %s of %s)\n", label, config);
            goto cleanup;
        }
        TRY(batch_add(b, cap, &index, &e, &g, label, a, sets, n));
        TRY(sweep_log_member(log, index));
        sweep_combination_free(&s, combo, label);
        combo = NULL;
        label = NULL;
    }
cleanup:
    sweep_combination_free(&s, combo, label);
    sweep_free(&s);
    return rc;
}

/* ---- data ------------------------------------------------------------------------------ */

/* The datasets of a batch: one load per data directory, as many images as the largest
 * subset asks for; each experiment gets a view of its first train_subset/test_subset. */
struct batch_data {
    struct dataset train[RUN_MAX_ARGS], test[RUN_MAX_ARGS];
    const char *dir[RUN_MAX_ARGS];
    int n;
    struct dataset *views;              /* 2 per experiment: train, test */
};

static int subset_max(int a, int b)
{
    return (a == 0 || b == 0) ? 0 : (a > b ? a : b);
}

static int data_load(struct batch_data *d, struct sched_batch *b)
{
    int rc = DR_OK;
    d->views = calloc((size_t)b->n * 2 + 1, sizeof(*d->views));
    CHECK_ALLOC(d->views, "the dataset views");
    for (int i = 0; i < b->n; i++) {
        const char *dir = cifar10_default_dir(b->x[i].e.data.dir);
        int seen = 0;
        for (int k = 0; k < d->n && !seen; k++) seen = !strcmp(d->dir[k], dir);
        if (seen) continue;
        if (d->n == RUN_MAX_ARGS) FAIL(DR_ERR_USAGE, "too many data directories");
        int tr = -1, te = -1;
        for (int j = 0; j < b->n; j++) {
            if (strcmp(cifar10_default_dir(b->x[j].e.data.dir), dir)) continue;
            tr = tr < 0 ? b->x[j].e.data.train_subset : subset_max(tr, b->x[j].e.data.train_subset);
            te = te < 0 ? b->x[j].e.data.test_subset : subset_max(te, b->x[j].e.data.test_subset);
        }
        d->dir[d->n] = dir;
        TRY(cifar10_load(&d->train[d->n], &d->test[d->n], dir, tr, te));
        d->n++;
    }
    for (int i = 0; i < b->n; i++) {
        struct sched_experiment *x = &b->x[i];
        const char *dir = cifar10_default_dir(x->e.data.dir);
        int k = 0;
        while (strcmp(d->dir[k], dir)) k++;
        struct dataset *tr = &d->views[2 * i], *te = &d->views[2 * i + 1];
        *tr = d->train[k];
        *te = d->test[k];
        if (x->e.data.train_subset) tr->count = x->e.data.train_subset;
        if (x->e.data.test_subset) te->count = x->e.data.test_subset;
        struct run_plan plan;   /* refuses a data set smaller than a batch, before any run */
        TRY(experiment_plan(&plan, &x->e, tr->count, te->count));
        x->train = tr;
        x->test = te;
    }
cleanup:
    return rc;
}

static void data_free(struct batch_data *d)
{
    for (int k = 0; k < d->n; k++) {
        dataset_free(&d->train[k]);
        dataset_free(&d->test[k]);
    }
    free(d->views);
    d->views = NULL;
    d->n = 0;
}

/* ---- provenance and places ------------------------------------------------------------- */

static void platform_string(char *buf, size_t n)
{
    struct utsname u;
    const char *compiler =
#if defined(__clang__)
        "clang " __clang_version__;
#elif defined(__GNUC__)
        "gcc " __VERSION__;
#else
        "unknown compiler";
#endif
    if (uname(&u) == 0)
        snprintf(buf, n, "%s %s %s; %s", u.sysname, u.release, u.machine, compiler);
    else
        snprintf(buf, n, "%s", compiler);
}

/* Creates the directory part of path when it is missing (one level, as for the default
 * results/ directory). */
static int ensure_parent_dir(const char *path)
{
    char dir[EXPERIMENT_PATH_MAX];
    snprintf(dir, sizeof(dir), "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash || slash == dir) return DR_OK;
    *slash = '\0';
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) return DR_OK;
    dr_eprintf("dawnrun: cannot create the directory %s for the results database: %s\n",
               dir, strerror(errno));
    return DR_ERR_IO;
}

/* Says what is left of the batch once its workers have stopped: returns the count of
 * runs neither finished nor running elsewhere (failed, or left to run), after saying
 * which; -1 when the store cannot tell. */
static int batch_left(const char *db_path, const struct sched_batch *b)
{
    struct results *db = NULL;
    struct results_census c;
    int left = -1;
    if (results_open(&db, db_path) == DR_OK && scheduler_census(db, &c, NULL, b, 0) == DR_OK) {
        left = c.failed + c.to_run;
        if (left > 0)
            dr_eprintf("dawnrun: the batch ends with %d of its %d run%s unfinished (%d "
                       "failed, %d not run)%s\n", left, c.total, c.total == 1 ? "" : "s",
                       c.failed, c.to_run,
                       c.failed ? "; --retry-failed runs the failed ones again" : "");
    }
    results_close(db);
    return left;
}

static int print_report(const char *db_path, const struct sched_batch *b)
{
    int rc = DR_OK;
    struct results *db = NULL;
    int64_t *ids = malloc((size_t)(b->n ? b->n : 1) * sizeof(*ids));
    CHECK_ALLOC(ids, "the experiment list");
    for (int i = 0; i < b->n; i++) ids[i] = b->x[i].id;
    TRY(results_open_readonly(&db, db_path));
    printf("\n");
    TRY(report_print(stdout, db, ids, b->n, NAN, REPORT_TABLE));
cleanup:
    results_close(db);
    free(ids);
    fflush(stdout);
    return rc;
}

/* Records the sweep this command expanded (nothing when no config had a sweep): its
 * command line, host, axes and members, the batch being registered. */
static int record_sweep(int64_t *id_out, struct results *db, const struct sweep_log *log,
                        const struct sched_batch *b, const char *host, int argc, char **argv)
{
    int rc = DR_OK;
    int64_t id = 0;
    *id_out = 0;
    char *command = NULL;
    struct results_sweep s = {0};
    if (log->n_members == 0) return DR_OK;
    TRY(sweep_command_line(&command, argc, argv));
    s.axes = calloc((size_t)log->n_axes + 1, sizeof *s.axes);
    s.members = calloc((size_t)log->n_members, sizeof *s.members);
    CHECK_ALLOC(s.axes, "the sweep axes");
    CHECK_ALLOC(s.members, "the sweep members");
    for (int k = 0; k < log->n_axes; k++)
        s.axes[k] = (struct results_sweep_axis){log->keys[k], log->vals[k]};
    for (int m = 0; m < log->n_members; m++) s.members[m] = b->x[log->members[m]].id;
    s.n_axes = log->n_axes;
    s.n_members = log->n_members;
    s.command = command;
    s.host = host;
    TRY(results_sweep_record(db, &id, &s));
    *id_out = id;
    printf("sweep %lld: %d combination%s recorded (report them with --sweep %lld or "
           "--sweep last)\n", (long long)id, s.n_members, s.n_members == 1 ? "" : "s",
           (long long)id);
cleanup:
    free(command);
    free(s.axes);
    free(s.members);
    return rc;
}

/* ---- the command ----------------------------------------------------------------------- */

/* What working the queue once needs (decide_work_fn's context). */
struct work_ctx {
    struct sched_batch *b;
    const struct run_args *a;
    struct sched_engine *eng;
    const char *engine;                 /* resolved: "cpu" | "cuda" */
    const struct sched_options *o;
    int forked;
};

/* Works the queue of the batch until no run of it is claimable, in this process or in
 * forked workers; returns the exit code (0, 1 when a run failed, a signal's, ...). */
static int work_queue(void *ctx)
{
    struct work_ctx *c = ctx;
    int code = EXIT_OK;
    if (c->forked) {
        struct workers_spec w = {c->a->n_devices ? c->a->n_devices : (int)c->a->workers,
                                 c->a->n_devices ? c->a->devices : NULL, c->eng->common};
        if (!strcmp(c->engine, "cpu") && w.common.threads == 0) {
            long cores = sysconf(_SC_NPROCESSORS_ONLN);
            w.common.threads = cores > w.n ? (int)(cores / w.n) : 1;
        }
        if (workers_run(&code, c->b, &w, c->o) != DR_OK && code == EXIT_OK)
            code = EXIT_FAILURE_OTHER;
        return code;
    }
    struct sched_tally tally;
    return scheduler_exit_code(scheduler_work(&tally, c->b, c->eng, c->o), &tally);
}

int cmd_run(int argc, char **argv)
{
    static struct run_args a;
    struct sched_batch b = {0};
    struct batch_data data;
    struct sched_engine eng;
    struct results *db = NULL;
    char engine[32] = "", device[256] = "", platform[512], host[256] = "";
    char ckpt_dir[EXPERIMENT_PATH_MAX + 32];
    struct sweep_log log = {0};
    int rc = DR_OK, code = EXIT_OK, cap = 0;

    memset(&a, 0, sizeof(a));
    memset(&data, 0, sizeof(data));
    memset(&eng, 0, sizeof(eng));
    a.c.engine = "auto";
    a.lease = RESULTS_DEFAULT_LEASE_S;
    a.alpha = a.delta = NAN;
    /* the command line as given, for the sweep record: the parser reorders argv */
    char **given = calloc((size_t)argc + 1, sizeof *given);
    if (!given) {
        dr_eprintf("dawnrun run: out of memory\n");
        return EXIT_FAILURE_OTHER;
    }
    memcpy(given, argv, (size_t)argc * sizeof *given);
    int parsed = parse_args(&a, argc, argv);
    if (parsed != 0) {
        free(given);
        return parsed > 0 ? EXIT_OK : EXIT_USAGE;
    }
    if (!a.db) a.db = getenv("DAWNRUN_DB");
    if (!a.db || !*a.db) a.db = RUN_DEFAULT_DB;
    cli_signals_install();

    /* everything that can be wrong with the input, before anything is registered */
    for (int i = 0; i < a.n_configs; i++)
        TRY(batch_load_config(&b, &cap, &log, a.configs[i], &a));
    if (a.until_decided) {
        if (b.n < 2) {
            cli_usage_error(&cli_run, "--until-decided compares experiments with the first: "
                            "give two CONFIGs or more, or a sweep");
            rc = DR_ERR_USAGE;
            goto cleanup;
        }
        struct decide_design design = {a.alpha, a.delta, a.round, a.max_seeds};
        TRY(decide_first_seeds(&b, &design));
        int ended = 0;
        if (!a.dry_run) TRY(decide_ended(&ended, a.db, &b, &design));
        if (ended) goto cleanup;
        if (a.dry_run)
            printf("until decided: %d comparison%s with %s, alpha %g, delta %.2f pp, rounds of "
                   "%d seeds, cap %d; the first round:\n", b.n - 1, b.n == 2 ? "" : "s",
                   b.x[0].name, a.alpha, 100.0 * a.delta, a.round, a.max_seeds);
    }
    if (a.dry_run) {
        rc = run_dry(stdout, a.db, &b, a.retry_failed);
        goto cleanup;
    }
    TRY(data_load(&data, &b));
    int forked = a.n_devices > 1 || a.workers > 1;
    int precision = (int)b.x[0].e.train.precision;
    eng.common = a.c;
    if (a.n_devices) eng.common.device = a.devices[0];
    if (forked) {
        /* the engine is made in a child: this process stays free of CUDA and OpenMP */
        TRY(workers_probe(engine, sizeof(engine), device, sizeof(device), &eng.common, precision));
    } else {
        TRY(cli_backend(&eng.common, precision, &eng.be));
        eng.precision = precision;
        snprintf(engine, sizeof(engine), "%s", eng.be.ops->name);
        snprintf(device, sizeof(device), "%s", eng.be.ops->device_name(eng.be.ctx));
    }
    eng.common.engine = engine;      /* "auto" is decided once for the whole batch */
    if (cli_stop_requested(NULL)) TRY(DR_ERR_INTERRUPTED);

    /* register */
    platform_string(platform, sizeof(platform));
    if (gethostname(host, sizeof(host) - 1) != 0) strcpy(host, "unknown-host");
    struct sched_provenance prov = {engine, device, platform, host, DAWNRUN_GIT_REV};
    TRY(ensure_parent_dir(a.db));
    TRY(results_open(&db, a.db));
    TRY(scheduler_register(db, &b, &prov, RESULTS_DEFAULT_MAX_ATTEMPTS));
    int64_t sweep_id = 0;
    TRY(record_sweep(&sweep_id, db, &log, &b, host, argc, given));
    snprintf(ckpt_dir, sizeof(ckpt_dir), "%s-checkpoints", a.db);
    TRY(scheduler_tidy(db, &b, ckpt_dir, a.keep_checkpoints));
    /* the line counts what this command will do: --retry-failed requeues the failed runs
     * first (a fresh budget), and runs live workers hold elsewhere are not "to run" */
    struct results_census census;
    int requeued = 0;
    TRY(scheduler_census(db, &census, &requeued, &b, a.retry_failed));
    printf("batch: %d experiment%s, %d run%s in %s: %d finished, ", b.n, b.n == 1 ? "" : "s",
           census.total, census.total == 1 ? "" : "s", a.db, census.finished);
    if (requeued) printf("%d failed (requeued by --retry-failed), ", census.failed + requeued);
    else printf("%d failed%s, ", census.failed,
                census.failed && !a.retry_failed ? " (rerun with --retry-failed)" : "");
    if (census.running_elsewhere) printf("%d running elsewhere, ", census.running_elsewhere);
    printf("%d to run\n", census.to_run);
    fflush(stdout);

    /* work the queue */
    struct sched_options o = {
        .db_path = a.db,
        .checkpoint_dir = ckpt_dir,
        .lease_s = a.lease,
        .keep_checkpoints = a.keep_checkpoints,
        .device = engine,
        .prefix = "",
        .progress = isatty(STDOUT_FILENO),
    };
    char claim_device[48];
    if (!forked && !strcmp(engine, "cuda")) {
        snprintf(claim_device, sizeof(claim_device), "cuda:%d", eng.common.device);
        o.device = claim_device;
    }
    if (forked && a.n_devices && !strcmp(engine, "cpu"))
        printf("note: no CUDA device: %d CPU workers instead of the devices asked for\n",
               a.n_devices);
    results_close(db);   /* no connection crosses fork(); the workers open their own */
    db = NULL;
    struct work_ctx wc = {&b, &a, &eng, engine, &o, forked};
    if (a.until_decided) {
        struct decide_spec spec = {
            .db_path = a.db,
            .design = {a.alpha, a.delta, a.round, a.max_seeds},
            .sweep_id = sweep_id,
            .host = host,
            .max_attempts = RESULTS_DEFAULT_MAX_ATTEMPTS,
        };
        char *command = NULL;
        rc = sweep_command_line(&command, argc, given);
        spec.command = command;
        if (rc == DR_OK) rc = decide_run(&code, &b, &spec, work_queue, &wc);
        free(command);
        if (rc != DR_OK) code = cli_exit_code(rc);
        rc = DR_OK;      /* the report still comes */
    } else {
        code = work_queue(&wc);
    /* runs of the batch left neither finished nor running elsewhere make the exit non-zero
     * (a signal's code stands) */
    if (code == EXIT_OK && batch_left(a.db, &b) != 0) code = EXIT_FAILURE_OTHER;
    else if (code == EXIT_FAILURE_OTHER)
        dr_eprintf("dawnrun: the batch did not end cleanly (see above); failed runs keep "
                   "their error in the results store, and --retry-failed runs them again\n");
    }

    /* the report of the batch (also after a failure or an interruption: what is done is done) */
    if (print_report(a.db, &b) != DR_OK)
        dr_eprintf("dawnrun: the report could not be printed (the results are in %s)\n",
                   a.db);
cleanup:
    results_close(db);
    backend_destroy(&eng.be);
    data_free(&data);
    sched_batch_free(&b);
    sweep_log_free(&log);
    free(given);
    if (rc != DR_OK) return cli_exit_code(rc);
    return code;
}

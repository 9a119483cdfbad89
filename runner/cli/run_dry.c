/* `dawnrun run --dry-run` (see run_dry.h): the grid of a batch and, per experiment, what
 * the database holds of its seeds, read through a read-only connection. */
#include "run_dry.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"
#include "engine/core/experiment.h"
#include "runner/report/report_internal.h"

/* The store's id of x (registered under its identity), 0 when it is not there. */
static int registered_id(struct results *db, int64_t *id, const struct sched_experiment *x)
{
    int rc = DR_OK, n = 0;
    struct results_experiment *found = NULL;
    *id = 0;
    if (!db) return DR_OK;
    TRY(results_experiments_find(db, &found, &n, x->identity));
    for (int i = 0; i < n && *id == 0; i++)
        if (found[i].config_hash && !strcmp(found[i].config_hash, x->identity))
            *id = found[i].id;
cleanup:
    results_experiments_free(found, n);
    return rc;
}

/* What the store says of x's seeds. */
struct dry_count {
    int done, running, failed, to_run;
};

static int count_seeds(struct dry_count *c, struct results *db,
                       const struct sched_experiment *x, int retry_failed)
{
    int rc = DR_OK;
    int64_t id = 0;
    struct results_claim req;
    struct results_census census;
    memset(c, 0, sizeof *c);
    TRY(registered_id(db, &id, x));
    if (id == 0) {
        c->to_run = x->n_seeds;
        return DR_OK;
    }
    results_claim_init(&req);
    req.experiment_ids = &id;
    req.n_experiments = 1;
    req.seeds = x->seeds;
    req.n_seeds = x->n_seeds;
    TRY(results_claim_census(db, &census, &req));
    c->done = census.finished;
    c->running = census.running_elsewhere;
    c->failed = retry_failed ? 0 : census.failed;
    c->to_run = census.to_run + (retry_failed ? census.failed : 0) + (x->n_seeds - census.total);
cleanup:
    return rc;
}

int run_dry(FILE *f, const char *db_path, const struct sched_batch *b, int retry_failed)
{
    int rc = DR_OK, n_keys = 0;
    struct results *db = NULL;
    struct param_list *params = NULL;
    char **keys = NULL, *label = NULL;
    struct report_grid g = {0};
    struct dry_count total = {0}, c;
    struct stat sb;
    int exists = stat(db_path, &sb) == 0;
    if (exists) TRY(results_open_readonly(&db, db_path));
    params = calloc((size_t)b->n + 1, sizeof *params);
    CHECK_ALLOC(params, "the params");
    for (int i = 0; i < b->n; i++) TRY(experiment_params_from_text(&params[i], b->x[i].e.resolved));
    TRY(report_params_differing(&keys, &n_keys, params, b->n));
    TRY(report_grid_init(&g, b->n + 1, 9));
    const char *head[] = {"#", "experiment", "hash", "values", "seeds", "done", "running",
                          "failed", "to run"};
    for (int k = 0; k < 9; k++) TRY(report_grid_set(&g, 0, k, "%s", head[k]));
    for (int i = 0; i < b->n; i++) {
        const struct sched_experiment *x = &b->x[i];
        size_t len = report_params_label(NULL, 0, &params[i], keys, n_keys);
        free(label);
        label = malloc(len + 1);
        CHECK_ALLOC(label, "a label");
        report_params_label(label, len + 1, &params[i], keys, n_keys);
        TRY(count_seeds(&c, db, x, retry_failed));
        total.done += c.done;
        total.running += c.running;
        total.failed += c.failed;
        total.to_run += c.to_run;
        TRY(report_grid_set(&g, i + 1, 0, "%d", i + 1));
        TRY(report_grid_set(&g, i + 1, 1, "%s", x->name));
        TRY(report_grid_set(&g, i + 1, 2, "%.12s", x->identity));
        TRY(report_grid_set(&g, i + 1, 3, "%s", n_keys ? label : "-"));
        TRY(report_grid_set(&g, i + 1, 4, "%d", x->n_seeds));
        TRY(report_grid_set(&g, i + 1, 5, "%d", c.done));
        TRY(report_grid_set(&g, i + 1, 6, "%d", c.running));
        TRY(report_grid_set(&g, i + 1, 7, "%d", c.failed));
        TRY(report_grid_set(&g, i + 1, 8, "%d", c.to_run));
    }
    fprintf(f, "dry run: %d experiment%s in %s%s; nothing is trained or written\n\n", b->n,
            b->n == 1 ? "" : "s", db_path, exists ? "" : " (no such file yet)");
    report_grid_print(f, &g, 1);
    fprintf(f, "\nseeds: %d done, %d running elsewhere, %d failed%s, %d to run\n", total.done,
            total.running, total.failed,
            total.failed ? " (--retry-failed runs them again)" : "", total.to_run);
cleanup:
    report_grid_free(&g);
    free(label);
    report_keys_free(keys, n_keys);
    report_params_free(params, b->n);
    results_close(db);
    return rc;
}

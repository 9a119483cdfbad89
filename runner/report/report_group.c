/* `dawnrun report --group-by KEY`: the selected experiments grouped by the value of one
 * params key, the runs of each group pooled into one column of the usual report (see
 * report_print_grouped in report.h). */
#include "report_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "engine/core/experiment.h"

#define GROUP_NONE "(none)"

/* The groups: distinct values in order of first appearance, and per experiment its
 * group's index. */
struct groups {
    char **values;
    int n;
    int *of;        /* of[i]: the group of experiment i */
};

static void groups_free(struct groups *g)
{
    for (int k = 0; k < g->n; k++) free(g->values[k]);
    free(g->values);
    free(g->of);
    memset(g, 0, sizeof *g);
}

static int groups_build(struct groups *g, const struct param_list *lists, int n,
                        const char *key)
{
    int rc = DR_OK;
    g->values = calloc((size_t)n + 1, sizeof *g->values);
    g->of = calloc((size_t)n + 1, sizeof *g->of);
    CHECK_ALLOC(g->values, "the groups");
    CHECK_ALLOC(g->of, "the groups");
    for (int i = 0; i < n; i++) {
        const struct param *p = param_list_find(&lists[i], key);
        const char *v = p ? p->value : GROUP_NONE;
        int k = 0;
        while (k < g->n && strcmp(g->values[k], v)) k++;
        if (k == g->n) {
            g->values[k] = strdup(v);
            CHECK_ALLOC(g->values[k], "a group value");
            g->n++;
        }
        g->of[i] = k;
    }
cleanup:
    return rc;
}

/* Reports that key is not a params key of the selection, suggesting the differing keys. */
static int unknown_key(const struct param_list *lists, int n, const char *key)
{
    int rc = DR_OK, n_keys = 0;
    char **keys = NULL, *hint = NULL;
    size_t len = 0;
    TRY(report_params_differing(&keys, &n_keys, lists, n));
    FILE *h = open_memstream(&hint, &len);
    CHECK_ALLOC(h, "a message");
    if (n_keys > 0) fputs("; the keys that differ between them:", h);
    for (int k = 0; k < n_keys; k++) fprintf(h, " %s", keys[k]);
    fclose(h);
    dr_eprintf("dawnrun report: --group-by %s: not a params key of the %d selected "
               "experiment%s%s\n", key, n, n == 1 ? "" : "s", hint ? hint : "");
    rc = DR_ERR_USAGE;
cleanup:
    free(hint);
    report_keys_free(keys, n_keys);
    return rc;
}

int report_print_grouped(FILE *f, struct results *db, const int64_t *experiment_ids, int n,
                         double target, enum report_format fmt, const char *group_by)
{
    int rc = DR_OK, known = 0;
    struct param_list *lists = NULL;
    struct groups g = {0};
    struct report r;
    int64_t *members = NULL;
    memset(&r, 0, sizeof r);
    TRY(report_params_load(&lists, db, experiment_ids, n));
    for (int i = 0; i < n && !known; i++) known = param_list_find(&lists[i], group_by) != NULL;
    if (!known) TRY(unknown_key(lists, n, group_by));
    TRY(groups_build(&g, lists, n, group_by));
    r.db_path = results_path(db);
    r.target = target;
    r.group_key = group_by;
    r.n_experiments = n;
    r.exps = calloc((size_t)g.n + 1, sizeof *r.exps);
    r.cmp = calloc((size_t)g.n + 1, sizeof *r.cmp);
    members = calloc((size_t)n + 1, sizeof *members);
    CHECK_ALLOC(r.exps, "the report");
    CHECK_ALLOC(r.cmp, "the report");
    CHECK_ALLOC(members, "a group's experiments");
    for (int k = 0; k < g.n; k++) {
        int m = 0;
        for (int i = 0; i < n; i++)
            if (g.of[i] == k) members[m++] = experiment_ids[i];
        r.n = k + 1;
        TRY(report_exp_compute(&r.exps[k], db, members, m, target));
        r.exps[k].group_value = strdup(g.values[k]);
        CHECK_ALLOC(r.exps[k].group_value, "a group value");
    }
    TRY(report_compare_all(&r));
    TRY(report_write(f, &r, fmt));
cleanup:
    free(members);
    report_free(&r);
    groups_free(&g);
    report_params_free(lists, n);
    return rc;
}

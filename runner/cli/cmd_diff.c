/* `dawnrun diff A B [--all] [--db PATH]`: what tells two experiments apart: the params
 * (resolved config keys) whose values differ, then the command-line overrides each was
 * registered with. Read-only. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "cli.h"
#include "diff_args.h"
#include "engine/core/experiment.h"
#include "output.h"
#include "runner/report/report_internal.h"

/* The one experiment `arg` selects; several or none is reported, DR_ERR_USAGE. */
static int diff_one(struct results *db, struct results_experiment *x, const char *arg)
{
    int rc = DR_OK, n = 0, found = 0;
    int64_t *ids = NULL;
    const char *args[1] = {arg};
    TRY(report_find(db, &ids, &n, NULL, args, 1, NULL, 0, NULL, 0));
    if (n != 1) {
        dr_eprintf("dawnrun diff: '%s' matches %d experiments in %s:", arg, n, results_path(db));
        for (int i = 0; i < n; i++) dr_eprintf(" #%lld", (long long)ids[i]);
        dr_eprintf("; give one (an id or a config-hash prefix)\n");
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    TRY(results_experiment_get(db, x, &found, ids[0]));
    if (!found) FAIL(DR_ERR_DB, "%s: experiment %lld vanished", results_path(db), (long long)ids[0]);
cleanup:
    free(ids);
    return rc;
}

/* "overrides of #1 NAME: a=1 b=2" or ": (none)". */
static int print_overrides(struct results *db, const struct results_experiment *x)
{
    int rc = DR_OK, n = 0;
    char **o = NULL;
    TRY(results_overrides_get(db, &o, &n, x->id));
    output_text(stdout, "overrides of #%lld %s:", (long long)x->id, x->name);
    for (int i = 0; i < n; i++) output_text(stdout, " %s", o[i]);
    printf("%s\n", n ? "" : " (none)");
cleanup:
    results_overrides_free(o, n);
    return rc;
}

/* The keys to print: the differing ones, or with all every key of either (a's order, then
 * b's own). */
static int diff_keys(char ***keys, int *n_keys, const struct param_list *l, int all)
{
    int rc = DR_OK;
    if (!all) return report_params_differing(keys, n_keys, l, 2);
    *keys = calloc((size_t)(l[0].n + l[1].n) + 1, sizeof **keys);
    *n_keys = 0;
    CHECK_ALLOC(*keys, "the keys");
    for (int s = 0; s < 2; s++)
        for (int k = 0; k < l[s].n; k++) {
            const char *key = l[s].items[k].key;
            if (s == 1 && param_list_find(&l[0], key)) continue;
            (*keys)[*n_keys] = strdup(key);
            CHECK_ALLOC((*keys)[*n_keys], "a key");
            (*n_keys)++;
        }
cleanup:
    return rc;
}

/* The table of keys with A's and B's values; with all, a column marks the differing. */
static int print_table(const struct param_list *l, const struct results_experiment *x,
                       char **keys, int n_keys, int all)
{
    int rc = DR_OK;
    struct report_grid g = {0};
    TRY(report_grid_init(&g, n_keys + 1, all ? 4 : 3));
    TRY(report_grid_set(&g, 0, 0, "key"));
    for (int s = 0; s < 2; s++)
        TRY(report_grid_set(&g, 0, s + 1, "#%lld %s", (long long)x[s].id, x[s].name));
    if (all) TRY(report_grid_set(&g, 0, 3, "differs"));
    for (int k = 0; k < n_keys; k++) {
        const struct param *v[2] = {param_list_find(&l[0], keys[k]),
                                    param_list_find(&l[1], keys[k])};
        TRY(report_grid_set(&g, k + 1, 0, "%s", keys[k]));
        for (int s = 0; s < 2; s++)
            TRY(report_grid_set(&g, k + 1, s + 1, "%s", v[s] ? v[s]->value : "(none)"));
        if (all) {
            int same = v[0] && v[1] && v[0]->type == v[1]->type && !strcmp(v[0]->value, v[1]->value);
            TRY(report_grid_set(&g, k + 1, 3, "%s", same ? "" : "*"));
        }
    }
    report_grid_print(stdout, &g, 1);
cleanup:
    report_grid_free(&g);
    return rc;
}

const struct cli_command cli_diff = {
    .name = "diff",
    .args = "A B",
    .summary = "compare two experiments: the config keys that differ, then their overrides",
    .flags = diff_flags,
    .n_flags = DIFF_N_FLAGS,
    .notes = "A and B: one experiment each: an id, a name, a config-hash prefix or a name\n"
             "glob. Prints the config keys whose values differ, then the overrides each was\n"
             "registered with; --all prints every key.\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_diff,
};

int cmd_diff(int argc, char **argv)
{
    int rc = DR_OK, n_keys = 0, n_diff = 0;
    const char *args[2], *path;
    struct diff_args da;
    struct results *db = NULL;
    struct results_experiment x[2];
    struct param_list *lists = NULL;
    char **keys = NULL, **differing = NULL;
    int64_t ids[2];
    memset(x, 0, sizeof x);
    switch (diff_args_parse(&da, &cli_diff, argc, argv)) {
    case CLI_PARSED: break;
    case CLI_HELP: return EXIT_OK;
    default: return EXIT_USAGE;
    }
    args[0] = da.a;
    args[1] = da.b;
    const int all = da.all;
    path = report_db_path(da.db);
    TRY(report_open_db(&db, path));
    for (int s = 0; s < 2; s++) {
        TRY(diff_one(db, &x[s], args[s]));
        ids[s] = x[s].id;
    }
    TRY(report_params_load_shown(&lists, db, ids, 2));
    TRY(report_params_differing(&differing, &n_diff, lists, 2));
    TRY(diff_keys(&keys, &n_keys, lists, all));
    output_text(stdout, "#%lld %s (%.12s) vs #%lld %s (%.12s): ", (long long)x[0].id, x[0].name,
                x[0].config_hash, (long long)x[1].id, x[1].name, x[1].config_hash);
    if (n_diff == 0) printf("no differing keys%s\n", x[0].id == x[1].id ? " (the same experiment)" : "");
    else printf("%d differing key%s\n", n_diff, n_diff == 1 ? "" : "s");
    if (n_keys > 0) {
        putchar('\n');
        TRY(print_table(lists, x, keys, n_keys, all));
    }
    putchar('\n');
    TRY(print_overrides(db, &x[0]));
    TRY(print_overrides(db, &x[1]));
cleanup:
    report_keys_free(keys, n_keys);
    report_keys_free(differing, n_diff);
    report_params_free(lists, 2);
    results_experiment_clear(&x[0]);
    results_experiment_clear(&x[1]);
    results_close(db);
    return cli_exit_code(rc);
}

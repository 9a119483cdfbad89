/* The experiment selection flags shared by `dawnrun report`, `plot` and `export` (--db,
 * --target, --set, --sweep, --where, EXPERIMENT|CONFIG arguments) in each command's
 * table beside its own flags, and the selection resolved to experiment ids. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "report_internal.h"
#include "runner/sched/sweep.h"
#include "sweep_select.h"

/* Appends v to list (n entries, room for cap); DR_ERR_USAGE if full (cannot happen when
 * cap counts the arguments, kept as a guard). */
static int push(const char **list, int *n, int cap, const char *v, const char *name)
{
    if (*n >= cap) {
        dr_eprintf("dawnrun %s: too many arguments\n", name);
        return DR_ERR_USAGE;
    }
    list[(*n)++] = v;
    return DR_OK;
}

int report_take_target(void *dst, const char *value, const char *cmd)
{
    char *end = NULL;
    double v = strtod(value, &end);
    if (end == value || *end || !(v > 0.0 && v <= 1.0)) {
        dr_eprintf("dawnrun %s: --target: expected an accuracy in (0, 1], e.g. 0.94, "
                   "got '%s'\n", cmd, value);
        return DR_ERR_USAGE;
    }
    *(double *)dst = v;
    return DR_OK;
}

int report_take_set(void *dst, const char *value, const char *cmd)
{
    struct report_selection *sel = dst;
    if (!strchr(value, '=')) {
        dr_eprintf("dawnrun %s: --set needs key.path=value, got '%s'\n", cmd, value);
        return DR_ERR_USAGE;
    }
    return push(sel->sets, &sel->n_sets, sel->cap, value, cmd);
}

int report_take_sweep(void *dst, const char *value, const char *cmd)
{
    struct report_selection *sel = dst;
    if (!strchr(value, '=') && !sweep_is_record_ref(value)) {
        dr_eprintf("dawnrun %s: --sweep needs key.path=value1,value2,..., last or a "
                   "recorded sweep's id, got '%s'\n", cmd, value);
        return DR_ERR_USAGE;
    }
    return push(sel->sweeps, &sel->n_sweeps, sel->cap, value, cmd);
}

int report_take_where(void *dst, const char *value, const char *cmd)
{
    struct report_selection *sel = dst;
    if (!strchr(value, '=')) {
        dr_eprintf("dawnrun %s: --where needs key.path=value, got '%s'\n", cmd, value);
        return DR_ERR_USAGE;
    }
    return push(sel->wheres, &sel->n_wheres, sel->cap, value, cmd);
}

int report_selection_parse(struct report_selection *sel, int *help,
                           const struct cli_command *cmd, void *opts, int argc,
                           char **argv)
{
    int rc = DR_OK, n_args = 0;
    const char *name = cmd->name;
    memset(sel, 0, sizeof *sel);
    sel->target = NAN;
    *help = 0;
    sel->cap = argc > 0 ? argc : 0;
    sel->args = calloc((size_t)sel->cap + 1, sizeof *sel->args);
    sel->sets = calloc((size_t)sel->cap + 1, sizeof *sel->sets);
    sel->sweeps = calloc((size_t)sel->cap + 1, sizeof *sel->sweeps);
    sel->wheres = calloc((size_t)sel->cap + 1, sizeof *sel->wheres);
    if (!sel->args || !sel->sets || !sel->sweeps || !sel->wheres) {
        dr_eprintf("dawnrun %s: out of memory\n", name);
        return DR_ERR_NOMEM;
    }
    switch (cli_parse(cmd, opts, argc, argv, &n_args)) {
    case CLI_PARSED: break;
    case CLI_HELP: *help = 1; return DR_OK;
    default: return DR_ERR_USAGE;
    }
    for (int i = 0; i < n_args && rc == DR_OK; i++)
        rc = push(sel->args, &sel->n_args, sel->cap, argv[1 + i], name);
    return rc;
}

void report_selection_free(struct report_selection *sel)
{
    free(sel->args);
    free(sel->sets);
    free(sel->sweeps);
    free(sel->wheres);
    memset(sel, 0, sizeof *sel);
}

int report_selection_resolve(struct results **db, const char **db_path, int64_t **ids,
                             int *n_ids, const struct report_selection *sel,
                             const char *name)
{
    int rc = DR_OK, n_configs = 0, n_all = 0, n_grid = 0, n_recorded = 0;
    struct results_experiment *all = NULL;
    const char **grid = NULL;
    int64_t *recorded = NULL;
    *db = NULL;
    *ids = NULL;
    *n_ids = 0;
    *db_path = report_db_path(sel->db_flag);
    TRY(report_open_db(db, *db_path));
    /* --sweep last|ID selects a recorded sweep's members; --sweep key=v1,v2 is a grid */
    TRY(sweep_select_split(&recorded, &n_recorded, &grid, &n_grid, *db, sel->sweeps,
                           sel->n_sweeps, name));
    if (sel->n_args == 0 && n_recorded > 0) {
        TRY(sweep_select_join(ids, n_ids, recorded, n_recorded));
    } else if (sel->n_args == 0) {
        TRY(results_experiments_list(*db, &all, &n_all));
        *ids = calloc((size_t)n_all + 1, sizeof **ids);
        CHECK_ALLOC(*ids, "experiment ids");
        for (int i = 0; i < n_all; i++) (*ids)[(*n_ids)++] = all[i].id;
    } else {
        TRY(report_find(*db, ids, n_ids, &n_configs, sel->args, sel->n_args, sel->sets,
                        sel->n_sets, grid, n_grid));
        TRY(sweep_select_join(ids, n_ids, recorded, n_recorded));
    }
    if ((sel->n_sets > 0 || n_grid > 0) && n_configs == 0) {
        dr_eprintf("dawnrun %s: --set and --sweep apply to CONFIG arguments, and none "
                   "was given\n", name);
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    TRY(report_filter_where(*db, *ids, n_ids, sel->wheres, sel->n_wheres, name));
cleanup:
    results_experiments_free(all, n_all);
    free(grid);
    free(recorded);
    return rc;
}

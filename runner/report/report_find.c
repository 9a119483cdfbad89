/* Which database and which experiments a query command means: the --db / $DAWNRUN_DB
 * default, flag values, and command-line arguments (config files, ids, names, hash
 * prefixes, name globs) resolved to experiment ids. */
#include "report_internal.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "engine/core/experiment.h"
#include "base/grow.h"
#include "base/status.h"
#include "runner/sched/sweep.h"

const char *report_db_path(const char *flag)
{
    const char *env = getenv("DAWNRUN_DB");
    if (flag) return flag;
    if (env && *env) return env;
    return REPORT_DEFAULT_DB;
}

int report_open_db(struct results **db, const char *path)
{
    struct stat sb;
    *db = NULL;
    if (stat(path, &sb) != 0) {
        dr_eprintf("dawnrun: %s: no such results database (give one with --db PATH or "
                   "$DAWNRUN_DB; `dawnrun run CONFIG` creates it)\n", path);
        return DR_ERR_DB;
    }
    return results_open_readonly(db, path);
}

/* A list of experiment ids without duplicates. */
struct id_list {
    int64_t *ids;
    int n, cap;
};

static int add_id(struct id_list *l, int64_t id)
{
    int rc = DR_OK;
    for (int k = 0; k < l->n; k++)
        if (l->ids[k] == id) return DR_OK;
    if (grow_reserve(&l->ids, &l->cap, l->n + 1, 8, sizeof *l->ids) != DR_OK)
        FAIL(DR_ERR_NOMEM, "out of memory allocating experiment ids");
    l->ids[l->n++] = id;
cleanup:
    return rc;
}

/* Adds the experiments of `all` that are e, as `dawnrun run` identifies it: the hash of
 * its resolved text without the sweep section, else (a run that folded something else
 * into its identity, such as --experiment) the identical stored text. *matched = how
 * many. Strips e->resolved in place. */
static int match_experiment(struct id_list *l, int *matched, struct experiment *e,
                            const struct results_experiment *all, int n_all)
{
    int rc = DR_OK;
    char hash[65];
    *matched = 0;
    if (!e->resolved) return DR_OK;
    sweep_strip_resolved(e->resolved);
    experiment_hash(e, hash);
    for (int i = 0; i < n_all; i++) {
        if (!all[i].config_hash || strcmp(all[i].config_hash, hash)) continue;
        TRY(add_id(l, all[i].id));
        (*matched)++;
    }
    for (int i = 0; *matched == 0 && i < n_all; i++) {
        if (!all[i].config_text || strcmp(all[i].config_text, e->resolved)) continue;
        TRY(add_id(l, all[i].id));
        (*matched)++;
    }
cleanup:
    return rc;
}

/* Adds the experiments of `all` named `name` exactly (a sweep member as `dawnrun run`
 * names it: "NAME:key=value,..."); *matched = how many. */
static int match_name(struct id_list *l, int *matched, const char *name,
                      const struct results_experiment *all, int n_all)
{
    int rc = DR_OK;
    *matched = 0;
    for (int i = 0; i < n_all; i++) {
        if (!all[i].name || strcmp(all[i].name, name)) continue;
        TRY(add_id(l, all[i].id));
        (*matched)++;
    }
cleanup:
    return rc;
}

/* The experiments of a config file loaded with `sets`: one, or one per combination of
 * its sweep (its own `sweep` section, then `sweeps`), as `dawnrun run` expands it. A
 * combination whose config is not in the database is looked up by its member name (the
 * run may have had other --set overrides), and noted when that finds it or when nothing
 * does; no combination found at all is DR_ERR_USAGE, saying how to select what is
 * there. */
static int find_config(struct results *db, struct id_list *l, const char *path,
                       const char *const *sets, int n_sets, const char *const *sweeps,
                       int n_sweeps)
{
    int rc = DR_OK;
    int loaded = 0, n_all = 0, matched = 0, missing = 0;
    struct experiment e;
    struct sweep s;
    struct results_experiment *all = NULL;
    char **combo = NULL, *label = NULL, hash[65];
    const char **all_sets = NULL;
    memset(&s, 0, sizeof s);
    TRY(experiment_load(&e, path, sets, n_sets));
    loaded = 1;
    TRY(sweep_add_from_resolved(&s, e.resolved, path));
    for (int d = 0; d < n_sweeps; d++) TRY(sweep_add(&s, sweeps[d], "--sweep", DR_ERR_USAGE));
    TRY(results_experiments_list(db, &all, &n_all));
    if (s.n_dims == 0) {
        TRY(match_experiment(l, &matched, &e, all, n_all));
        if (matched == 0) {
            experiment_hash(&e, hash);
            dr_eprintf("dawnrun: %s: no experiment in %s has this config (hash %.12s%s); "
                       "run it first with `dawnrun run %s`\n", path, results_path(db), hash,
                       n_sets ? ", with the --set overrides given" : "", path);
            rc = DR_ERR_USAGE;
        }
        goto cleanup;
    }
    experiment_free(&e);
    loaded = 0;
    all_sets = calloc((size_t)(n_sets + s.n_dims) + 1, sizeof *all_sets);
    CHECK_ALLOC(all_sets, "override list");
    for (int k = 0; k < n_sets; k++) all_sets[k] = sets[k];
    for (int i = 0; i < sweep_count(&s); i++) {
        TRY(sweep_combination(&s, i, &combo, &label));
        for (int d = 0; d < s.n_dims; d++) all_sets[n_sets + d] = combo[d];
        TRY(experiment_load(&e, path, all_sets, n_sets + s.n_dims));
        loaded = 1;
        TRY(match_experiment(l, &matched, &e, all, n_all));
        if (matched == 0) {
            char member[1024];
            snprintf(member, sizeof member, "%s:%s", e.name, label);
            TRY(match_name(l, &matched, member, all, n_all));
            if (matched > 0)
                dr_eprintf("dawnrun: note: %s with %s: its config as given here is not in "
                           "%s; taking the experiment named '%s' (run with other "
                           "overrides)\n", path, label, results_path(db), member);
        }
        if (matched == 0) {
            dr_eprintf("dawnrun: note: %s with %s: not in %s\n", path, label,
                       results_path(db));
            missing++;
        }
        experiment_free(&e);
        loaded = 0;
        sweep_combination_free(&s, combo, label);
        combo = NULL;
        label = NULL;
    }
    if (missing == sweep_count(&s)) {
        dr_eprintf("dawnrun: %s: none of its %d sweep combinations is in %s, by config "
                   "or by member name; select what is there with --sweep last (the newest "
                   "recorded sweep) or --sweep ID (`dawnrun sweeps --db %s` lists them), or "
                   "name the experiments (`dawnrun experiments --db %s` lists them)\n",
                   path, missing, results_path(db), results_path(db), results_path(db));
        rc = DR_ERR_USAGE;
    }
cleanup:
    sweep_combination_free(&s, combo, label);
    sweep_free(&s);
    free(all_sets);
    results_experiments_free(all, n_all);
    if (loaded) experiment_free(&e);
    return rc;
}

/* 1 when key is a decimal id of experiment x, or its exact name. */
static int exact_match(const struct results_experiment *x, const char *key)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", (long long)x->id);
    return !strcmp(x->name, key) || !strcmp(id, key);
}

/* Adds the experiments `key` names (see report_find), or reports why none (or which
 * ones, for an ambiguous hash prefix) and returns DR_ERR_USAGE. */
static int find_key(struct results *db, struct id_list *l, const char *key)
{
    int rc = DR_OK, count = 0, n_all = 0, exact = 0, taken = 0;
    size_t klen = strlen(key);
    struct results_experiment *found = NULL, *all = NULL;
    TRY(results_experiments_find(db, &found, &count, key));
    for (int k = 0; k < count; k++) exact += exact_match(&found[k], key);
    if (exact > 0) {
        for (int k = 0; k < count; k++)
            if (exact_match(&found[k], key)) TRY(add_id(l, found[k].id));
        goto cleanup;
    }
    if (count > 1) {
        dr_eprintf("dawnrun: config-hash prefix '%s' is ambiguous in %s: it matches %d "
                   "experiments; give more digits or an id:\n", key, results_path(db), count);
        for (int k = 0; k < count; k++)
            dr_eprintf("  #%lld %s %.16s\n", (long long)found[k].id, found[k].name,
                       found[k].config_hash);
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    if (count == 1) {
        TRY(add_id(l, found[0].id));
        goto cleanup;
    }
    /* a name glob, or the base name of a sweep's members ("NAME:key=value") */
    TRY(results_experiments_list(db, &all, &n_all));
    for (int k = 0; k < n_all; k++) {
        const char *name = all[k].name;
        int hit = strpbrk(key, "*?[") ? fnmatch(key, name, 0) == 0
                                      : !strncmp(name, key, klen) && name[klen] == ':';
        if (hit) {
            TRY(add_id(l, all[k].id));
            taken++;
        }
    }
    if (taken == 0) {
        if (strpbrk(key, "*?["))
            dr_eprintf("dawnrun: no experiment name in %s matches '%s' (`dawnrun experiments "
                       "--db %s` lists them)\n", results_path(db), key, results_path(db));
        else
            dr_eprintf("dawnrun: no experiment '%s' in %s (give an id, a name, a name glob "
                       "such as 'NAME:*', a config-hash prefix of at least 6 characters or a "
                       "config file; `dawnrun experiments --db %s` lists them)\n", key,
                       results_path(db), results_path(db));
        rc = DR_ERR_USAGE;
    }
cleanup:
    results_experiments_free(found, count);
    results_experiments_free(all, n_all);
    return rc;
}

int report_find(struct results *db, int64_t **ids, int *n, int *n_configs,
                const char *const *args, int n_args, const char *const *sets, int n_sets,
                const char *const *sweeps, int n_sweeps)
{
    int rc = DR_OK;
    struct id_list l = {0};
    struct stat sb;
    *ids = NULL;
    *n = 0;
    if (n_configs) *n_configs = 0;
    for (int i = 0; i < n_args; i++) {
        if (stat(args[i], &sb) == 0 && S_ISREG(sb.st_mode)) {
            TRY(find_config(db, &l, args[i], sets, n_sets, sweeps, n_sweeps));
            if (n_configs) (*n_configs)++;
            continue;
        }
        TRY(find_key(db, &l, args[i]));
    }
    *ids = l.ids;
    *n = l.n;
    l.ids = NULL;
cleanup:
    free(l.ids);
    return rc;
}

int report_select(struct results *db, int64_t **ids, int *n, const char *const *args,
                  int n_args, const char *const *wheres, int n_wheres, const char *name)
{
    int rc = DR_OK, n_all = 0;
    struct results_experiment *all = NULL;
    *ids = NULL;
    *n = 0;
    if (n_args > 0) {
        TRY(report_find(db, ids, n, NULL, args, n_args, NULL, 0, NULL, 0));
    } else {
        TRY(results_experiments_list(db, &all, &n_all));
        *ids = calloc((size_t)n_all + 1, sizeof **ids);
        CHECK_ALLOC(*ids, "experiment ids");
        for (int i = 0; i < n_all; i++) (*ids)[(*n)++] = all[i].id;
    }
    TRY(report_filter_where(db, *ids, n, wheres, n_wheres, name));
cleanup:
    results_experiments_free(all, n_all);
    return rc;
}

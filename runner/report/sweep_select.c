/* Recorded sweeps as a selection (see sweep_select.h). */
#include "sweep_select.h"

#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "runner/sched/sweep.h"

int sweep_select_join(int64_t **ids, int *n, const int64_t *add, int n_add)
{
    int rc = DR_OK;
    if (n_add <= 0) return DR_OK;
    /* room for every id of add at once: one allocation per call, not one per id */
    int64_t *grown = realloc(*ids, ((size_t)*n + (size_t)n_add) * sizeof *grown);
    CHECK_ALLOC(grown, "experiment ids");
    *ids = grown;
    for (int i = 0; i < n_add; i++) {
        int seen = 0;
        for (int k = 0; k < *n && !seen; k++) seen = (*ids)[k] == add[i];
        if (!seen) (*ids)[(*n)++] = add[i];
    }
cleanup:
    return rc;
}

/* The recorded sweep `ref` names ("last" or an id), its members appended to *members. */
static int add_recorded(int64_t **members, int *n, struct results *db, const char *ref,
                        const char *name)
{
    int rc = DR_OK, found = 0;
    struct results_sweep s;
    int64_t id = 0;
    if (strcmp(ref, "last") != 0) {
        char *end = NULL;
        long long v = strtoll(ref, &end, 10);
        if (*end || v < 1) {
            dr_eprintf("dawnrun %s: --sweep %s: expected last, a sweep id or "
                       "key.path=value1,value2,...\n", name, ref);
            return DR_ERR_USAGE;
        }
        id = v;
    }
    TRY(results_sweep_get(db, &s, &found, id));
    if (!found) {
        if (id == 0)
            dr_eprintf("dawnrun %s: --sweep last: no sweep is recorded in %s (a `dawnrun "
                       "run` with --sweep, or of a config with a sweep section, records "
                       "one)\n", name, results_path(db));
        else
            dr_eprintf("dawnrun %s: --sweep %s: no sweep %s in %s (`dawnrun sweeps --db %s` "
                       "lists them)\n", name, ref, ref, results_path(db), results_path(db));
        rc = DR_ERR_USAGE;
        goto cleanup;
    }
    TRY(sweep_select_join(members, n, s.members, s.n_members));
cleanup:
    results_sweep_clear(&s);
    return rc;
}

int sweep_select_split(int64_t **members, int *n_members, const char ***grid, int *n_grid,
                       struct results *db, const char *const *sweeps, int n,
                       const char *name)
{
    int rc = DR_OK;
    *members = NULL;
    *n_members = 0;
    *n_grid = 0;
    *grid = calloc((size_t)n + 1, sizeof **grid);
    CHECK_ALLOC(*grid, "the sweep list");
    for (int i = 0; i < n; i++) {
        if (sweep_is_record_ref(sweeps[i])) TRY(add_recorded(members, n_members, db, sweeps[i], name));
        else (*grid)[(*n_grid)++] = sweeps[i];
    }
cleanup:
    return rc;
}

/* `--sweep last|ID` of report, plot and export: a recorded sweep's members as a selection. */
#ifndef DAWNRUN_RUNNER_SWEEP_SELECT_H
#define DAWNRUN_RUNNER_SWEEP_SELECT_H

#include <stdint.h>

#include "results/results.h"

/* Splits the n --sweep values into references to recorded sweeps ("last": the newest one
 * in db; a decimal id) and grids ("key=v1,v2", which apply to CONFIG arguments): *grid
 * (malloc'd, pointing into sweeps) gets the grids, *members (malloc'd) the members of
 * the referenced sweeps in grid order, each experiment once. A reference to no recorded
 * sweep is reported as "dawnrun NAME: ..." and DR_ERR_USAGE. Free both, also after a
 * failure. */
int sweep_select_split(int64_t **members, int *n_members, const char ***grid, int *n_grid,
                       struct results *db, const char *const *sweeps, int n,
                       const char *name);

/* Appends the ids of add that *ids (n of them, malloc'd or NULL) lacks, each once, growing
 * it by one allocation for the whole of add. DR_OK or DR_ERR_NOMEM (then *ids and *n are
 * as they were, or *ids is the same ids in a larger block). */
int sweep_select_join(int64_t **ids, int *n, const int64_t *add, int n_add);

#endif

/* `dawnrun run --dry-run`: the batch a run would work, listed without training or writing
 * anything. */
#ifndef DAWNRUN_RUNNER_RUN_DRY_H
#define DAWNRUN_RUNNER_RUN_DRY_H

#include <stdio.h>

#include "runner/sched/scheduler.h"

/* Prints to f one line per experiment of b (resolved, its sweep expanded): its name, the
 * first 12 characters of its identity, the values of the keys that differ between b's
 * experiments, its seeds, and how many of them are done, running elsewhere, failed and to
 * run according to the database at db_path, which is opened read-only (a missing file
 * is not created: every seed is then to run). With retry_failed, failed runs count as to
 * run, as `run --retry-failed` would requeue them. Returns a dr_status. */
int run_dry(FILE *f, const char *db_path, const struct sched_batch *b, int retry_failed);

#endif

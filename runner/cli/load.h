/* Loading an experiment and its network for a command: config + graph, with the
 * messages and status a command needs. */
#ifndef DAWNRUN_RUNNER_LOAD_H
#define DAWNRUN_RUNNER_LOAD_H

#include "engine/core/experiment.h"
#include "engine/core/graph.h"

/* experiment_load then graph_build for 3×32×32 images; prints every error. Returns a
 * dr_status; on failure nothing needs freeing. */
int runner_load(struct experiment *e, struct graph *g, const char *path, const char *const *sets,
                int n_sets);

#endif

/* Loads an experiment and builds its graph for a command (see load.h). */
#include "load.h"

#include <stdio.h>
#include <string.h>

#include "base/status.h"

int runner_load(struct experiment *e, struct graph *g, const char *path, const char *const *sets,
                int n_sets)
{
    char err[1024] = "";
    memset(g, 0, sizeof(*g));
    int rc = experiment_load(e, path, sets, n_sets);
    if (rc != DR_OK) return rc;
    rc = graph_build(g, &e->net, 3, 32, 32, err, sizeof(err));
    if (rc != DR_OK) {
        dr_eprintf("%s\n", err);
        experiment_free(e);
        return rc;
    }
    return DR_OK;
}

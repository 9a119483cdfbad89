/* Worker processes of `dawnrun run --devices 0,1,...` / `--workers N`: one forked
 * process per slot, each with its own backend and its own connection to the results
 * store, all claiming from the same queue. The parent never initialises an engine (CUDA
 * and OpenMP do not survive fork) and holds no database connection while it forks; it
 * waits for the workers and passes SIGINT/SIGTERM on to them. */
#ifndef DAWNRUN_RUNNER_WORKERS_H
#define DAWNRUN_RUNNER_WORKERS_H

#include <stddef.h>

#include "runner/cli/cli.h"
#include "scheduler.h"

#define WORKERS_MAX 256

struct workers_spec {
    int n;                          /* worker processes */
    const int *devices;             /* the device of each worker, or NULL (all common.device) */
    struct cli_common common;       /* engine (resolved), device, threads per worker */
};

/* Makes the backend c asks for (precision as for cli_backend) in a short-lived child
 * process and reports what it got: the engine's name ("cpu" | "cuda") and its device
 * name. The caller's process touches no engine. Returns DR_OK or the child's failure
 * (DR_ERR_NODEVICE, DR_ERR_DEVICE, ...; the child prints why). */
int workers_probe(char *engine, size_t engine_len, char *device, size_t device_len,
                  const struct cli_common *c, int precision);

/* Forks w->n workers, each running scheduler_work on b with o (its lines prefixed with
 * "[cuda:N] " or "[wN] "), and waits for all of them. A SIGINT/SIGTERM received by the
 * parent is sent on to every worker still running. *exit_code gets the batch's exit
 * code: the signal's (130/143) when one stopped it, else the first worker's non-zero
 * code, else 0. Returns DR_OK, or DR_ERR_INTERNAL when fork itself failed (workers
 * already started are still waited for). */
int workers_run(int *exit_code, const struct sched_batch *b, const struct workers_spec *w,
                const struct sched_options *o);

#endif

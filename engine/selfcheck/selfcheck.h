/* The selfcheck harness: runs the table of cases (engine/selfcheck/selfcheck_case.h) on a reference
 * engine and an engine under test, compares their outputs case by case, and reports one
 * line per case and a count per precision. `dawnrun selfcheck` (runner/cli/cmd_selfcheck.c)
 * runs it with the CPU engine as the reference and the CUDA engine under test, once per
 * precision; docs/testing.md describes the cases, metrics and tolerances.
 *
 * Output, per precision (what scripts/gpu-call.sh and the tests read):
 *   == precision fp32 on DEVICE
 *   GROUP HEADING
 *     NAME   err 1.23e-07 OUTPUT  (METRIC, tol T)  ok|FAIL
 *     NAME   ERROR: MESSAGE  FAIL                    (the case could not run)
 *   == precision fp32: N checks, M failed */
#ifndef DAWNRUN_SELFCHECK_H
#define DAWNRUN_SELFCHECK_H

#include <stdio.h>

#include "kernels/backend.h"

struct sc_table;

/* The table and the cases chosen from it. */
struct selfcheck {
    struct sc_table *table;
    unsigned char *chosen;      /* (table count) 1: runs */
    int chosen_count;
};

/* Builds the table and chooses the cases only names: a comma-separated list of items,
 * each choosing the case of that name if there is one, else the cases whose name starts
 * with it or whose group it names (conv, ops, augment, train, toolbox, plan); NULL chooses
 * every case. DR_ERR_USAGE, with the reason in
 * why, when an item chooses nothing or the list is empty; DR_ERR_NOMEM. */
int selfcheck_open(struct selfcheck *sc, const char *only, char *why, size_t whylen);

/* Releases sc. Safe on a zeroed struct. */
void selfcheck_close(struct selfcheck *sc);

/* Prints the chosen cases' names, one a line, with group, metric and outputs. */
void selfcheck_list(FILE *out, const struct selfcheck *sc);

/* Runs the chosen cases with ref as the reference and test under test, test computing in
 * precision (enum precision), printing to out as above. Both engines are first asked for
 * results that do not vary from run to run (backend_ops.set_deterministic, where they
 * have it: the cases compare runs bit for bit), so call it before either has run a
 * convolution. *checks and *failures get the number of cases run and of those that failed
 * or could not run. Returns DR_OK (a failed case is counted, not returned), DR_ERR_USAGE
 * for an unknown precision, or the error of an engine that cannot be made
 * deterministic. */
int selfcheck_run(FILE *out, const struct selfcheck *sc, struct backend *ref,
                  struct backend *test, int precision, int *checks, int *failures);

/* "fp32", "fp16", "bf16" for an enum precision; NULL outside it. */
const char *selfcheck_precision_name(int precision);

#endif

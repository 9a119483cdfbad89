/* Test-only crash points: named places on the paths that must survive a kill (inside a
 * checkpoint write, inside and after an epoch's commit, after a run's end is recorded),
 * where a test can have the process SIGKILL itself at an exact instant. Inert unless the
 * environment variable DAWNRUN_TEST_CRASH is set; documented in docs/runner.md (Testing
 * crash safety). Never set it outside tests. */
#ifndef DAWNRUN_CRASHPOINT_H
#define DAWNRUN_CRASHPOINT_H

/* Counts a pass through the point `name`; with DAWNRUN_TEST_CRASH = "NAME:N" (N >= 1,
 * NAME = name), the N-th pass in this process sends SIGKILL to the process itself and
 * never returns. Any other value, or none, does nothing. */
void crashpoint(const char *name);

#endif

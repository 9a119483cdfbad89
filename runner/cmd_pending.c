/* Weak placeholders for commands whose implementation is linked from their own
 * cmd_*.c file; a build without one reports the command as unavailable. */
#include <stdio.h>

#include "cli.h"

static int pending(const char *name)
{
    fprintf(stderr, "dawnrun: '%s' is not available in this build\n", name);
    return EXIT_FAILURE_OTHER;
}

#define PENDING(fn, name)                                                                  \
    __attribute__((weak)) int fn(int argc, char **argv)                                    \
    {                                                                                      \
        (void)argc;                                                                        \
        (void)argv;                                                                        \
        return pending(name);                                                              \
    }

PENDING(cmd_run, "run")
PENDING(cmd_report, "report")
PENDING(cmd_experiments, "experiments")
PENDING(cmd_runs, "runs")
PENDING(cmd_show, "show")
PENDING(cmd_merge, "merge")
PENDING(cmd_plot, "plot")
PENDING(cmd_export, "export")

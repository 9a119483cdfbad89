/* The command line of `dawnrun diff A B [--db PATH] [--all]`: its table and its parse,
 * ready for the command that compares two experiments' configs and results. */
#ifndef DAWNRUN_RUNNER_DIFF_ARGS_H
#define DAWNRUN_RUNNER_DIFF_ARGS_H

#include "cli_flags.h"

struct diff_args {
    const char *a, *b;     /* the two EXPERIMENT|CONFIG arguments */
    const char *db;        /* --db PATH; NULL: report_db_path's default */
    int all;               /* --all: every config key, not only those that differ */
};

/* The flags of `dawnrun diff` (--db, --all), DIFF_N_FLAGS of them, for its table cli_diff
 * (runner/cli/cmd_diff.c). */
#define DIFF_N_FLAGS 2
extern const struct cli_flag diff_flags[DIFF_N_FLAGS];
extern const struct cli_command cli_diff;

/* Parses argv[1..argc) (argv[0] "diff") against cmd (cli_diff, or a table with
 * diff_flags) into a: exactly two positional arguments.
 * Returns enum cli_parsed: CLI_HELP after --help printed the usage, CLI_BAD after a
 * usage error was reported. */
int diff_args_parse(struct diff_args *a, const struct cli_command *cmd, int argc, char **argv);

#endif

/* The command line of `dawnrun diff`: its flags (cli_flags.h) and the check of its two
 * positional arguments. The command's table, cli_diff, is in cmd_diff.c. */
#include "diff_args.h"

#include <string.h>

const struct cli_flag diff_flags[] = {
    {.name = "db", .kind = CLI_STRING, .offset = offsetof(struct diff_args, db),
     .meta = "PATH", .hint = CLI_HINT_FILE,
     .help = "the results database (default: $DAWNRUN_DB, or results/dawnrun.db)"},
    {.name = "all", .kind = CLI_SWITCH, .offset = offsetof(struct diff_args, all),
     .help = "show every config key, not only those whose values differ"},
};

_Static_assert(sizeof diff_flags / sizeof diff_flags[0] == DIFF_N_FLAGS,
               "DIFF_N_FLAGS (diff_args.h) counts the flags of diff_flags");

int diff_args_parse(struct diff_args *a, const struct cli_command *cmd, int argc, char **argv)
{
    int n_args = 0;
    memset(a, 0, sizeof *a);
    int parsed = cli_parse(cmd, a, argc, argv, &n_args);
    if (parsed != CLI_PARSED) return parsed;
    if (n_args < 2) {
        cli_usage_error(cmd, "needs two experiments, A and B");
        return CLI_BAD;
    }
    if (n_args > 2) {
        cli_usage_error(cmd, "unexpected argument '%s'", argv[3]);
        return CLI_BAD;
    }
    a->a = argv[1];
    a->b = argv[2];
    return CLI_PARSED;
}

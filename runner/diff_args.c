/* The command line of `dawnrun diff`: its table (cli_flags.h) and the check of its two
 * positional arguments. */
#include "diff_args.h"

#include <string.h>

static const struct cli_flag diff_flags[] = {
    {.name = "db", .kind = CLI_STRING, .offset = offsetof(struct diff_args, db),
     .meta = "PATH", .hint = CLI_HINT_FILE,
     .help = "the results database (default: $DAWNRUN_DB, or results/dawnrun.db)"},
    {.name = "all", .kind = CLI_SWITCH, .offset = offsetof(struct diff_args, all),
     .help = "show every config key, not only those whose values differ"},
};

const struct cli_command cli_diff = {
    .name = "diff",
    .args = "A B",
    .summary = "compare two experiments: the config keys that differ and the results",
    .flags = diff_flags,
    .n_flags = (int)(sizeof diff_flags / sizeof diff_flags[0]),
    .notes = "A and B: experiments (a name, an id or a config hash prefix) or CONFIGs.\n",
    .arg_hint = CLI_HINT_CONFIG,
};

int diff_args_parse(struct diff_args *a, int argc, char **argv)
{
    int n_args = 0;
    memset(a, 0, sizeof *a);
    int parsed = cli_parse(&cli_diff, a, argc, argv, &n_args);
    if (parsed != CLI_PARSED) return parsed;
    if (n_args < 2) {
        cli_usage_error(&cli_diff, "needs two experiments, A and B");
        return CLI_BAD;
    }
    if (n_args > 2) {
        cli_usage_error(&cli_diff, "unexpected argument '%s'", argv[3]);
        return CLI_BAD;
    }
    a->a = argv[1];
    a->b = argv[2];
    return CLI_PARSED;
}

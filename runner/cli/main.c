/* dawnrun command-line entry point: the list of commands (each with its table of flags,
 * cli.h) and the dispatch to one of them, with stdout line-buffered for all; `dawnrun
 * --help`, `--version`, `--man`, and the small commands help, version, config-doc and
 * completion. */
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "cli.h"
#include "cli_doc.h"
#include "diff_args.h"
#include "engine/core/experiment.h"
#include "progress.h"

/* Every command, in the order `dawnrun --help` lists them. */
static const struct cli_command *const commands[] = {
    &cli_run,      &cli_report,    &cli_power,       &cli_experiments, &cli_runs,
    &cli_show,     &cli_sweeps,    &cli_diff,        &cli_plot,        &cli_export,
    &cli_merge,    &cli_train,     &cli_validate,    &cli_bench,       &cli_selfcheck,
    &cli_config_doc, &cli_completion, &cli_help,     &cli_version,
};
#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

/* The command of that name, or NULL. */
static const struct cli_command *find_command(const char *name)
{
    for (int i = 0; i < N_COMMANDS; i++)
        if (!strcmp(commands[i]->name, name)) return commands[i];
    return NULL;
}

/* ---- config-doc ------------------------------------------------------------------------ */

struct config_doc_args {
    int keys;
};

static const struct cli_flag config_doc_flags[] = {
    {.name = "keys", .kind = CLI_SWITCH, .offset = offsetof(struct config_doc_args, keys),
     .help = "print only the keys, one dotted path a line"},
};

const struct cli_command cli_config_doc = {
    .name = "config-doc",
    .args = "",
    .summary = "print the reference of every config key (Markdown)",
    .flags = config_doc_flags,
    .n_flags = 1,
    .run = cmd_config_doc,
};

int cmd_config_doc(int argc, char **argv)
{
    struct config_doc_args a = {0};
    int n = 0, r = cli_parse(&cli_config_doc, &a, argc, argv, &n);
    if (r != CLI_PARSED) return r == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n > 0) return cli_usage_error(&cli_config_doc, "unexpected argument '%s'", argv[1]);
    if (a.keys) config_schema_print_keys(stdout);
    else config_schema_print(stdout);
    return EXIT_OK;
}

/* ---- completion -------------------------------------------------------------------------- */

const struct cli_command cli_completion = {
    .name = "completion",
    .args = "bash",
    .summary = "print the bash completion script (scripts/dawnrun-completion.bash)",
    .notes =
        "Install: dawnrun completion bash > /usr/share/bash-completion/completions/dawnrun\n",
    .run = cmd_completion,
};

int cmd_completion(int argc, char **argv)
{
    int n = 0, r = cli_parse(&cli_completion, NULL, argc, argv, &n);
    if (r != CLI_PARSED) return r == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n != 1 || strcmp(argv[1], "bash"))
        return cli_usage_error(&cli_completion, "the one shell completed is bash");
    cli_print_completion(stdout, commands, N_COMMANDS);
    return EXIT_OK;
}

/* ---- help and version -------------------------------------------------------------------- */

static int cmd_help(int argc, char **argv)
{
    int n = 0, r = cli_parse(&cli_help, NULL, argc, argv, &n);
    if (r != CLI_PARSED) return r == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n == 0) {
        cli_print_commands(stdout, commands, N_COMMANDS);
        return EXIT_OK;
    }
    const struct cli_command *c = find_command(argv[1]);
    if (n > 1 || !c) {
        dr_eprintf("dawnrun help: unknown command '%s'\n", argv[1]);
        cli_print_commands(stderr, commands, N_COMMANDS);
        return EXIT_USAGE;
    }
    cli_print_usage(stdout, c);
    return EXIT_OK;
}

const struct cli_command cli_help = {
    .name = "help",
    .args = "[COMMAND]",
    .summary = "list the commands, or print the flags of one",
    .run = cmd_help,
};

static int cmd_version(int argc, char **argv)
{
    int n = 0, r = cli_parse(&cli_version, NULL, argc, argv, &n);
    if (r != CLI_PARSED) return r == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n > 0) return cli_usage_error(&cli_version, "unexpected argument '%s'", argv[1]);
    printf("dawnrun %s\n", DAWNRUN_VERSION);
    return EXIT_OK;
}

const struct cli_command cli_version = {
    .name = "version",
    .args = "",
    .summary = "print the version",
    .run = cmd_version,
};

int main(int argc, char **argv)
{
    /* every line out as soon as it is complete, whatever stdout is (a file, a pipe), so
     * that a command killed by a signal it does not catch (SIGKILL; SIGTERM where no
     * handler prints first) leaves every line it finished */
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc < 2) {
        cli_print_commands(stderr, commands, N_COMMANDS);
        return EXIT_USAGE;
    }
    progress_install();
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version")) return cmd_version(argc - 1, argv + 1);
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) return cmd_help(argc - 1, argv + 1);
    if (!strcmp(cmd, "--man") && argc == 2) {
        cli_print_man(stdout, commands, N_COMMANDS);
        return EXIT_OK;
    }
    const struct cli_command *c = find_command(cmd);
    if (c) return c->run(argc - 1, argv + 1);
    if (cmd[0] == '-') dr_eprintf("dawnrun: unknown flag '%s' (flags follow the command)\n", cmd);
    else dr_eprintf("dawnrun: unknown command '%s'\n", cmd);
    cli_print_commands(stderr, commands, N_COMMANDS);
    return EXIT_USAGE;
}

/* What is printed from all the command tables together: `dawnrun --help`, the man page
 * and the bash completion script (cli_doc.c). Each takes the executable's commands, in
 * the order they are listed. */
#ifndef DAWNRUN_CLI_DOC_H
#define DAWNRUN_CLI_DOC_H

#include <stdio.h>

#include "cli_flags.h"

/* `dawnrun --help`: every command with its one line, how to get a command's flags, the
 * exit codes. */
void cli_print_commands(FILE *f, const struct cli_command *const *cmds, int n);
/* `dawnrun --man`: the man page in roff (docs/dawnrun.1 is its output). */
void cli_print_man(FILE *f, const struct cli_command *const *cmds, int n);
/* `dawnrun completion bash`: the bash completion script, with the config keys of the
 * schema (scripts/dawnrun-completion.bash is its output). */
void cli_print_completion(FILE *f, const struct cli_command *const *cmds, int n);

#endif

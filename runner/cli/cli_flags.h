/* The command-line tables of dawnrun: a command describes its positional arguments and
 * its flags in a struct cli_command; the parser (getopt_long underneath, cli_flags.c),
 * the usage text and --help, the man page and the bash completion (cli_doc.c) all read
 * that one table, so that none of them can drift from the others. Every flag is spelled
 * `--name value` or `--name=value`; -h/--help prints the usage and exits 0; `--` ends the
 * flags. A leaf of the runner: it includes nothing of dawnrun's. */
#ifndef DAWNRUN_CLI_FLAGS_H
#define DAWNRUN_CLI_FLAGS_H

#include <stddef.h>
#include <stdio.h>

#define CLI_EXIT_USAGE 2   /* the exit code of a usage error (EXIT_USAGE of cli.h) */

enum cli_kind {
    CLI_SWITCH,  /* no value: *(int *)dst = 1 */
    CLI_STRING,  /* *(const char **)dst = the value, which must not be empty */
    CLI_LONG,    /* *(long *)dst = an integer in [min, max] */
    CLI_INT,     /* *(int *)dst = an integer in [min, max] */
    CLI_CHOICE,  /* *(const char **)dst = the value, one of `choices` */
    CLI_CALL     /* call(dst, value, command name): DR_OK or DR_ERR_USAGE, message printed */
};

/* What the completion offers for a value or a positional argument. */
enum cli_hint {
    CLI_HINT_NONE,    /* nothing (a number, a name) */
    CLI_HINT_FILE,    /* any file */
    CLI_HINT_CONFIG,  /* a config file (*.cfg) */
    CLI_HINT_KEY      /* a config key, followed by '=' */
};

struct cli_flag {
    const char *name;       /* long name without the dashes: "seeds" */
    char short_name;        /* 'o' for -o, or 0 */
    enum cli_kind kind;
    size_t offset;          /* the destination's offset in the command's options struct */
    const char *meta;       /* the value's placeholder in the usage ("N"); NULL: a switch */
    const char *help;       /* one line */
    const char *choices;    /* CLI_CHOICE, or a CLI_CALL with fixed values: "cpu|cuda|auto" */
    enum cli_hint hint;     /* what completion offers as the value (choices come first) */
    long min, max;          /* CLI_LONG and CLI_INT */
    int repeat;             /* may be given more than once: "[--set key=value]..." */
    int (*call)(void *dst, const char *value, const char *cmd);
};

struct cli_command {
    const char *name;             /* "run" */
    const char *args;             /* positional synopsis: "CONFIG...", "" for none */
    const char *summary;          /* one line, for `dawnrun --help` and the man page */
    const struct cli_flag *flags;
    int n_flags;
    const char *notes;            /* lines printed after the flags in --help, or NULL */
    enum cli_hint arg_hint;       /* what completion offers as a positional argument */
    int (*run)(int argc, char **argv);  /* argv[0] is the command's name */
};

/* The result of cli_parse. */
enum cli_parsed {
    CLI_PARSED = 0,  /* flags stored; go on */
    CLI_HELP,        /* --help (or --list-flags) printed on stdout: exit 0 */
    CLI_BAD          /* a usage error, printed with the usage line: exit 2 */
};

/* Parses argv[1..argc) against cmd's flags, storing each into opts (the command's
 * options struct, which the table's offsets point into; NULL for a table without
 * flags). The positional arguments are moved, in their order, to argv[1..1 + *n_args)
 * (the flags may come before, between or after them; every argument after `--` is
 * positional). -h/--help prints the full usage on stdout; the hidden --list-flags prints
 * every spelling the parser accepts, one a line (for the completion and the tests).
 * Errors read "dawnrun CMD: ..." on stderr, followed by the usage line. Returns enum
 * cli_parsed. */
int cli_parse(const struct cli_command *cmd, void *opts, int argc, char **argv, int *n_args);

/* Reports a usage error of cmd found after parsing: "dawnrun CMD: MESSAGE" and the
 * usage line on stderr. Returns CLI_EXIT_USAGE. */
int cli_usage_error(const struct cli_command *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The usage line(s) of cmd: "usage: dawnrun CMD ARGS [--flag VALUE]..." wrapped. */
void cli_print_synopsis(FILE *f, const struct cli_command *cmd);
/* The full usage: the synopsis, the summary, one line per flag, the notes. */
void cli_print_usage(FILE *f, const struct cli_command *cmd);

/* How a flag's value is shown: its choices ("cpu|cuda|auto") when it has them, else its
 * placeholder; NULL for a switch. */
const char *cli_flag_value_text(const struct cli_flag *f);
/* "--seeds N", "-o, --output PATH": the flag as its help line shows it. */
void cli_flag_label(char *buf, size_t size, const struct cli_flag *f);

#endif

/* Shared pieces of the dawnrun commands: the flag tables and their parser, exit codes,
 * engine selection, signal handling and the epoch table printer. */
#ifndef DAWNRUN_CLI_H
#define DAWNRUN_CLI_H

#include <stddef.h>
#include <stdio.h>

#include "cli_flags.h"
#include "kernels/backend.h"
#include "engine/core/train.h"

/* Exit codes of the dawnrun executable (documented in the README). */
enum cli_exit {
    EXIT_OK = 0,
    EXIT_FAILURE_OTHER = 1,  /* internal or i/o error */
    EXIT_USAGE = CLI_EXIT_USAGE, /* bad command-line flag */
    EXIT_CONFIG = 3,         /* bad experiment config */
    EXIT_DATA = 4,           /* missing or malformed data */
    EXIT_DIVERGED = 5,       /* loss became NaN/inf */
    EXIT_DEVICE = 6,         /* no usable device for the engine asked for, or a device error */
    EXIT_SIGINT = 130,
    EXIT_SIGTERM = 143
};

/* Maps a dr_status to the exit code above (interrupted: by the signal received). */
int cli_exit_code(int status);

#define CLI_MAX_SETS 256

/* Options common to commands that load an experiment. */
struct cli_common {
    const char *config;          /* positional CONFIG */
    const char *sets[CLI_MAX_SETS]; /* --set values, in order */
    int n_sets;
    const char *engine;          /* cpu | cuda | auto */
    int device;
    int threads;                 /* 0 = all cores */
};

/* The flags of struct cli_common as table entries, for an options struct `type` that
 * holds one as `member`. */
#define CLI_FLAG_SET(type, member)                                                         \
    {.name = "set", .kind = CLI_CALL, .offset = offsetof(type, member),                    \
     .meta = "key=value", .help = "override a config key (value in config syntax)",         \
     .hint = CLI_HINT_KEY, .repeat = 1, .call = cli_take_set}
#define CLI_FLAG_ENGINE(type, member)                                                      \
    {.name = "engine", .kind = CLI_CHOICE, .offset = offsetof(type, member.engine),        \
     .meta = "cpu|cuda|auto", .choices = "cpu|cuda|auto",                                  \
     .help = "auto (the default): cuda when a GPU is usable, else cpu"}
#define CLI_FLAG_THREADS(type, member)                                                     \
    {.name = "threads", .kind = CLI_INT, .offset = offsetof(type, member.threads),         \
     .meta = "N", .help = "CPU threads of the cpu engine (0, the default: all cores)",      \
     .max = 1024}
#define CLI_FLAG_DEVICE(type, member)                                                      \
    {.name = "device", .kind = CLI_INT, .offset = offsetof(type, member.device),           \
     .meta = "N", .help = "the CUDA device number (default 0)", .max = 1024}

/* CLI_CALL for --set: appends the value (which must hold '=') to the struct cli_common
 * at dst. */
int cli_take_set(void *dst, const char *value, const char *cmd);

/* Creates the backend named by c->engine ("auto": CUDA if a device works, else CPU);
 * precision is the experiment's train.precision; the CPU engine computes in fp32 only and
 * refuses another precision (DR_ERR_CONFIG, with a message) rather than ignore it. */
int cli_backend(const struct cli_common *c, int precision, struct backend *be);

/* SIGINT and SIGTERM are kept blocked and let in only where cli_stop_requested polls
 * (between training steps). A handler that ran at an arbitrary instant would push its
 * frame below the stack pointer of whatever code is running, and oneDNN's JIT sgemm
 * kernels point the stack pointer into heap memory: the frame would land on the heap.
 * cli_signals_install sets a flag-only handler and blocks both signals in the calling
 * thread: call it before the process's first OpenMP region (before a backend is made),
 * so that every thread inherits the mask; forked children inherit it too.
 * cli_stop_requested lets a pending signal in and says whether one was received;
 * cli_stop_signal tells which (0 if none). */
void cli_signals_install(void);
int cli_stop_requested(void *unused);
int cli_stop_signal(void);

/* The epoch table (Page's columns), one printer for train, run and show. */
void table_print_header(FILE *f);
void table_print_row(FILE *f, const struct epoch_record *r);

/* Commands. Each returns the process exit code; each has its table. */
int cmd_train(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_power(int argc, char **argv);
int cmd_experiments(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_sweeps(int argc, char **argv);
int cmd_selfcheck(int argc, char **argv);
int cmd_config_doc(int argc, char **argv);
int cmd_completion(int argc, char **argv);

extern const struct cli_command cli_train, cli_validate, cli_bench, cli_run, cli_report,
    cli_experiments, cli_runs, cli_show, cli_merge, cli_plot, cli_export, cli_selfcheck,
    cli_config_doc, cli_completion, cli_version, cli_help, cli_sweeps, cli_power;

#endif

/* Shared pieces of the dawnrun commands: flag parsing helpers, exit codes, engine
 * selection, signal handling and the epoch table printer. */
#ifndef DAWNRUN_CLI_H
#define DAWNRUN_CLI_H

#include <stdio.h>

#include "kernels/backend.h"
#include "engine/train.h"

/* Exit codes of the dawnrun executable (documented in the README). */
enum cli_exit {
    EXIT_OK = 0,
    EXIT_FAILURE_OTHER = 1,  /* internal or i/o error */
    EXIT_USAGE = 2,          /* bad command-line flag */
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

/* Consumes argv[*i] (and its value) if it is a common flag; returns 1 if consumed, 0 if
 * not, -1 on a bad value (message printed). */
int cli_common_flag(struct cli_common *c, int argc, char **argv, int *i);

/* An integer flag of one command: `--name N` stored in *dst, checked against [min, max]. */
struct cli_int_flag {
    const char *name;
    long *dst;
    long min, max;
};

/* Parses `CMD CONFIG [common flags] [int flags]` (argv[0] is the command name): exactly
 * one positional CONFIG. Prints what is wrong (or `usage` when CONFIG is missing) and
 * returns -1 on any problem, else 0. */
int cli_parse(struct cli_common *c, int argc, char **argv, const char *usage,
              const struct cli_int_flag *flags, int n_flags);

/* Parses a non-negative integer flag value; prints "--flag: ..." and returns -1 if bad. */
long cli_parse_long(const char *flag, const char *value, long min, long max);

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

/* Commands. Each returns the process exit code. */
int cmd_train(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_experiments(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_merge(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_sweeps(int argc, char **argv);
int cmd_selfcheck(int argc, char **argv);

#endif

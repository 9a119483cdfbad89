/* Exit-code mapping, engine selection, signal flags and the epoch table shared by the
 * dawnrun commands (flag parsing: cli_flags.c). */
#include "cli.h"

#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/experiment.h"
#include "base/status.h"
#include "kernels/precision.h"

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

static void stop_signals(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
}

void cli_signals_install(void)
{
    struct sigaction sa;
    sigset_t set;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    stop_signals(&set);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
}

int cli_stop_requested(void *unused)
{
    sigset_t set, pending;
    (void)unused;
    stop_signals(&set);
    if (sigpending(&pending) == 0 &&
        (sigismember(&pending, SIGINT) == 1 || sigismember(&pending, SIGTERM) == 1)) {
        /* let it in here, in plain C on this thread's own stack: the handler runs during
         * the unblock and sets the flag */
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
        pthread_sigmask(SIG_BLOCK, &set, NULL);
    }
    return stop_signal != 0;
}

int cli_stop_signal(void)
{
    return stop_signal;
}

int cli_take_set(void *dst, const char *value, const char *cmd)
{
    struct cli_common *c = dst;
    if (!strchr(value, '=')) {
        dr_eprintf("dawnrun %s: --set needs key.path=value, got '%s'\n", cmd, value);
        return DR_ERR_USAGE;
    }
    if (c->n_sets >= CLI_MAX_SETS - 1) {
        dr_eprintf("dawnrun %s: too many --set flags (at most %d)\n", cmd, CLI_MAX_SETS - 1);
        return DR_ERR_USAGE;
    }
    c->sets[c->n_sets++] = value;
    return DR_OK;
}

int cli_exit_code(int status)
{
    switch (status) {
    case DR_OK: return EXIT_OK;
    case DR_ERR_USAGE: return EXIT_USAGE;
    case DR_ERR_CONFIG: return EXIT_CONFIG;
    case DR_ERR_DATA: return EXIT_DATA;
    case DR_ERR_DIVERGED: return EXIT_DIVERGED;
    case DR_ERR_DEVICE:
    case DR_ERR_NODEVICE: return EXIT_DEVICE;
    case DR_ERR_INTERRUPTED: return stop_signal == SIGTERM ? EXIT_SIGTERM : EXIT_SIGINT;
    default: return EXIT_FAILURE_OTHER;
    }
}

/* The CPU engine computes in fp32 only: a half-precision experiment is refused there
 * rather than trained in fp32 under a config that says otherwise. */
static int cpu_backend(const struct cli_common *c, int precision, struct backend *be)
{
    if (precision != PRECISION_FP32) {
        dr_eprintf("dawnrun: train.precision = \"%s\": the cpu engine computes in fp32 only; "
                   "use --engine cuda, or --set train.precision='\"fp32\"' (another "
                   "experiment)\n",
                   precision_name(precision));
        return DR_ERR_CONFIG;
    }
    return backend_cpu_create(be, c->threads);
}

int cli_backend(const struct cli_common *c, int precision, struct backend *be)
{
    const char *engine = c->engine ? c->engine : "auto";
    memset(be, 0, sizeof(*be));
    if (!strcmp(engine, "cpu")) return cpu_backend(c, precision, be);
    if (!strcmp(engine, "cuda")) return backend_cuda_create(be, c->device, precision);
    char why[256];
    if (backend_cuda_probe(c->device, why, sizeof(why)) == DR_OK)
        return backend_cuda_create(be, c->device, precision);
    dr_eprintf("dawnrun: engine auto: using the CPU engine (%s)\n", why);
    return cpu_backend(c, precision, be);
}

void table_print_header(FILE *f)
{
    fprintf(f, "%5s %9s %10s %10s %9s %9s %9s %9s %10s\n", "epoch", "lr", "train time",
            "train loss", "train acc", "test time", "test loss", "test acc", "total time");
}

/* One number right-aligned in `width` columns with `prec` decimals; NaN and infinities
 * print as "nan", "inf", "-inf" (a diverged run's losses). */
static void table_cell(FILE *f, int width, int prec, double v)
{
    if (isnan(v))
        fprintf(f, " %*s", width, "nan");
    else if (isinf(v))
        fprintf(f, " %*s", width, v > 0 ? "inf" : "-inf");
    else
        fprintf(f, " %*.*f", width, prec, v);
}

void table_print_row(FILE *f, const struct epoch_record *r)
{
    fprintf(f, "%5d", r->epoch);
    table_cell(f, 9, r->lr < 1e4 ? 4 : 0, r->lr);
    table_cell(f, 10, 2, r->train_time);
    table_cell(f, 10, 4, r->train_loss);
    table_cell(f, 9, 4, r->train_acc);
    table_cell(f, 9, 2, r->test_time);
    table_cell(f, 9, 4, r->test_loss);
    table_cell(f, 9, 4, r->test_acc);
    table_cell(f, 10, 2, r->total_time);
    fputc('\n', f);
    fflush(f);
}

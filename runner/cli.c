/* Flag parsing helpers, exit-code mapping, engine selection and signal flags shared by
 * the dawnrun commands. */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "engine/experiment.h"
#include "base/status.h"

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

long cli_parse_long(const char *flag, const char *value, long min, long max)
{
    char *end = NULL;
    if (!value) {
        dr_eprintf("dawnrun: %s needs a value\n", flag);
        return -1;
    }
    errno = 0;
    long v = strtol(value, &end, 10);
    if (errno || end == value || *end || v < min || v > max) {
        dr_eprintf("dawnrun: %s: expected an integer in [%ld, %ld], got '%s'\n", flag, min,
                   max, value);
        return -1;
    }
    return v;
}

int cli_common_flag(struct cli_common *c, int argc, char **argv, int *i)
{
    const char *a = argv[*i];
    const char *val = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(a, "--set") || !strncmp(a, "--set=", 6)) {
        const char *kv = a[5] == '=' ? a + 6 : val;
        if (!kv || !strchr(kv, '=')) {
            dr_eprintf("dawnrun: --set needs key.path=value\n");
            return -1;
        }
        if (c->n_sets >= CLI_MAX_SETS - 1) {
            dr_eprintf("dawnrun: too many --set flags (at most %d)\n", CLI_MAX_SETS - 1);
            return -1;
        }
        c->sets[c->n_sets++] = kv;
        if (kv == val) (*i)++;
        return 1;
    }
    if (!strcmp(a, "--engine")) {
        if (!val || (strcmp(val, "cpu") && strcmp(val, "cuda") && strcmp(val, "auto"))) {
            dr_eprintf("dawnrun: --engine: expected cpu, cuda or auto, got '%s'\n",
                       val ? val : "");
            return -1;
        }
        c->engine = val;
        (*i)++;
        return 1;
    }
    if (!strcmp(a, "--threads")) {
        long v = cli_parse_long("--threads", val, 0, 1024);
        if (v < 0) return -1;
        c->threads = (int)v;
        (*i)++;
        return 1;
    }
    if (!strcmp(a, "--device")) {
        long v = cli_parse_long("--device", val, 0, 1024);
        if (v < 0) return -1;
        c->device = (int)v;
        (*i)++;
        return 1;
    }
    return 0;
}

int cli_parse(struct cli_common *c, int argc, char **argv, const char *usage,
              const struct cli_int_flag *flags, int n_flags)
{
    for (int i = 1; i < argc; i++) {
        int k = cli_common_flag(c, argc, argv, &i);
        if (k < 0) return -1;
        if (k > 0) continue;
        const char *a = argv[i];
        int matched = 0;
        for (int f = 0; f < n_flags && !matched; f++) {
            if (strcmp(a, flags[f].name)) continue;
            long v = cli_parse_long(a, i + 1 < argc ? argv[i + 1] : NULL, flags[f].min,
                                    flags[f].max);
            if (v < 0) return -1;
            *flags[f].dst = v;
            i++;
            matched = 1;
        }
        if (matched) continue;
        if (a[0] == '-' && a[1]) {
            dr_eprintf("dawnrun %s: unknown flag '%s'\n", argv[0], a);
            return -1;
        }
        if (c->config) {
            dr_eprintf("dawnrun %s: one CONFIG only (got '%s' too)\n", argv[0], a);
            return -1;
        }
        c->config = a;
    }
    if (!c->config) {
        dr_eprintf("%s\n", usage);
        return -1;
    }
    return 0;
}

/* The CPU engine computes in fp32 only: a half-precision experiment is refused there
 * rather than trained in fp32 under a config that says otherwise. */
static int cpu_backend(const struct cli_common *c, int precision, struct backend *be)
{
    if (precision != PRECISION_FP32) {
        dr_eprintf("dawnrun: train.precision = \"%s\": the cpu engine computes in fp32 only; "
                   "use --engine cuda, or --set train.precision='\"fp32\"' (another "
                   "experiment)\n",
                   precision == PRECISION_FP16 ? "fp16" : "bf16");
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

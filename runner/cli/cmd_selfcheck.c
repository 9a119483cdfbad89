/* `dawnrun selfcheck [--engine cuda] [--device N] [--precision P] [--threads N]
 * [--only LIST] [--list]`: checks the CUDA engine against the CPU reference engine on
 * this machine, case by case, with the harness and table of engine/selfcheck/selfcheck.h (every op
 * of kernels/plan.h forward and backward, the augmentation, short training runs;
 * docs/testing.md lists them). --only chooses cases by name, prefix or group, --list
 * prints the chosen cases' names without running them.
 * Exit status: 0 all passed, 1 a check failed, 2 a bad flag, 6 a device error, 77 no
 * usable device. Entry point: cmd_selfcheck (runner/cli/cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "engine/selfcheck/selfcheck.h"
#include "kernels/backend.h"
#include "kernels/precision.h"

/* CLI_CALL for --only: any text (selfcheck_open says what it names), "" too. */
static int selfcheck_take_only(void *dst, const char *value, const char *cmd)
{
    (void)cmd;
    *(const char **)dst = value;
    return DR_OK;
}

/* One precision's cases on a fresh CUDA engine: its failures, or -1 when the engine
 * could not be created. */
static int run_precision(const struct selfcheck *sc, struct backend *cpu, int device,
                         int precision)
{
    struct backend gpu = {0};
    int checks = 0, failures = 0;
    if (backend_cuda_create(&gpu, device, precision) != DR_OK) return -1;
    if (selfcheck_run(stdout, sc, cpu, &gpu, precision, &checks, &failures) != DR_OK)
        failures++;
    backend_destroy(&gpu);
    return failures;
}

struct selfcheck_args {
    const char *engine;      /* only "cuda" */
    int device, threads, list;
    const char *precision;   /* fp32 | fp16 | bf16 | all */
    const char *only;        /* case names, prefixes or groups; NULL: all */
};

static const struct cli_flag selfcheck_flags[] = {
    {.name = "engine", .kind = CLI_CHOICE,
     .offset = offsetof(struct selfcheck_args, engine), .meta = "cuda",
     .help = "the engine checked against the CPU engine: only cuda",
     .choices = "cuda"},
    {.name = "device", .kind = CLI_INT, .offset = offsetof(struct selfcheck_args, device),
     .meta = "N", .help = "the CUDA device number", .max = 1024},
    {.name = "precision", .kind = CLI_CHOICE,
     .offset = offsetof(struct selfcheck_args, precision), .meta = "P",
     .help = "check in fp32, fp16, bf16 or all of them (the default)",
     .choices = PRECISION_CHOICES "all"},
    {.name = "threads", .kind = CLI_INT,
     .offset = offsetof(struct selfcheck_args, threads), .meta = "N",
     .help = "CPU threads of the reference engine (0: all cores)", .max = 1024},
    {.name = "only", .kind = CLI_CALL, .offset = offsetof(struct selfcheck_args, only),
     .meta = "CASES",
     .help = "only these cases: names, prefixes or groups, comma-separated",
     .call = selfcheck_take_only},
    {.name = "list", .kind = CLI_SWITCH, .offset = offsetof(struct selfcheck_args, list),
     .help = "print the chosen cases' names and exit (needs no device)"},
};

const struct cli_command cli_selfcheck = {
    .name = "selfcheck",
    .args = "",
    .summary = "compare every CUDA op with its CPU twin (exit 77 without a GPU)",
    .flags = selfcheck_flags,
    .n_flags = (int)(sizeof selfcheck_flags / sizeof selfcheck_flags[0]),
    .notes =
        "Exit status: 0 all passed, 1 a check failed, 2 a bad flag, 6 a device error, 77 no\n"
        "usable device.\n",
    .run = cmd_selfcheck,
};

int cmd_selfcheck(int argc, char **argv)
{
    int first = 0, last = 2, failures = 0, rc, n_args = 0;
    struct selfcheck_args a = {0};
    char why[256] = "";
    struct backend cpu = {0};
    struct selfcheck sc = {0};
    int parsed = cli_parse(&cli_selfcheck, &a, argc, argv, &n_args);
    if (parsed != CLI_PARSED) return parsed == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n_args > 0) return cli_usage_error(&cli_selfcheck, "unexpected argument '%s'", argv[1]);
    /* The reference side convolves by im2col + sgemm, the CPU engine's reference
     * convolution (one fixed order of the sums per output), unless DAWNRUN_CPU_CONV asks
     * for another: the training cases follow 20 steps, over which a different but equally
     * exact order of the sums (oneDNN's direct kernels) drifts by 3e-3, past what the
     * fp32 bounds allow for the kernels compared. test_conv_cpu compares the two CPU
     * convolutions with each other. */
    setenv("DAWNRUN_CPU_CONV", "im2col", 0);
    int device = a.device, threads = a.threads, list = a.list;
    const char *only = a.only;
    if (a.precision && strcmp(a.precision, "all"))
        for (int j = 0; selfcheck_precision_name(j); j++)
            if (!strcmp(a.precision, selfcheck_precision_name(j))) first = last = j;
    rc = selfcheck_open(&sc, only, why, sizeof(why));
    if (rc == DR_ERR_USAGE) {
        dr_eprintf("dawnrun selfcheck: --only: %s\n", why);
        return EXIT_USAGE;
    }
    if (rc != DR_OK) return EXIT_FAILURE_OTHER;
    if (list) {
        selfcheck_list(stdout, &sc);
        selfcheck_close(&sc);
        return EXIT_OK;
    }
    if (backend_cuda_probe(device, why, sizeof(why)) != DR_OK) {
        printf("dawnrun selfcheck: skipped, no usable CUDA device: %s\n", why);
        selfcheck_close(&sc);
        return 77;
    }
    if (backend_cpu_create(&cpu, threads) != DR_OK) {
        selfcheck_close(&sc);
        return EXIT_FAILURE_OTHER;
    }
    printf("dawnrun selfcheck: CUDA engine against the CPU engine (%s), %d cases\n\n",
           cpu.ops->device_name(cpu.ctx), sc.chosen_count);
    for (int p = first; p <= last; p++) {
        int f = run_precision(&sc, &cpu, device, p);
        if (f < 0) {
            backend_destroy(&cpu);
            selfcheck_close(&sc);
            printf("dawnrun selfcheck: FAILED: the CUDA engine could not be created\n");
            return EXIT_DEVICE;
        }
        failures += f;
    }
    backend_destroy(&cpu);
    selfcheck_close(&sc);
    printf("dawnrun selfcheck: %s (%d failed)\n", failures ? "FAILED" : "all passed", failures);
    return failures ? EXIT_FAILURE_OTHER : EXIT_OK;
}

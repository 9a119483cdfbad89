/* `dawnrun selfcheck [--engine cuda] [--device N] [--precision P] [--threads N]
 * [--only LIST] [--list]`: checks the CUDA engine against the CPU reference engine on
 * this machine, case by case, with the harness and table of engine/selfcheck.h (every op
 * of the backend table forward and backward, the augmentation, short training runs;
 * docs/testing.md lists them). --only chooses cases by name, prefix or group, --list
 * prints the chosen cases' names without running them.
 * Exit status: 0 all passed, 1 a check failed, 2 a bad flag, 6 a device error, 77 no
 * usable device. Entry point: cmd_selfcheck (runner/cli.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "engine/selfcheck.h"
#include "kernels/backend.h"

#define USAGE "usage: dawnrun selfcheck [--engine cuda] [--device N] " \
              "[--precision fp32|fp16|bf16|all] [--threads N] [--only CASES] [--list]\n"

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

int cmd_selfcheck(int argc, char **argv)
{
    int device = 0, threads = 0, first = 0, last = 2, list = 0, failures = 0, rc;
    const char *only = NULL;
    char why[256] = "";
    struct backend cpu = {0};
    struct selfcheck sc = {0};
    for (int i = 1; i < argc; i++) {
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(argv[i], "--engine")) {
            if (!val || strcmp(val, "cuda")) {
                dr_eprintf("dawnrun selfcheck: --engine: only cuda is checked (against "
                           "the CPU engine)\n");
                return EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(argv[i], "--device") || !strcmp(argv[i], "--threads")) {
            long v = cli_parse_long(argv[i], val, 0, 1024);
            if (v < 0) return EXIT_USAGE;
            if (!strcmp(argv[i], "--device")) device = (int)v;
            else threads = (int)v;
            i++;
        } else if (!strcmp(argv[i], "--precision")) {
            int k = -1;
            for (int j = 0; selfcheck_precision_name(j) && val; j++)
                if (!strcmp(val, selfcheck_precision_name(j))) k = j;
            if (val && !strcmp(val, "all")) {
                first = 0;
                last = 2;
            } else if (k >= 0) {
                first = last = k;
            } else {
                dr_eprintf("dawnrun selfcheck: --precision: expected fp32, fp16, bf16 or "
                           "all, got '%s'\n", val ? val : "");
                return EXIT_USAGE;
            }
            i++;
        } else if (!strcmp(argv[i], "--only")) {
            only = val ? val : "";
            i++;
        } else if (!strcmp(argv[i], "--list")) {
            list = 1;
        } else {
            dr_eprintf(USAGE);
            return EXIT_USAGE;
        }
    }
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

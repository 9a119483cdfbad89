/* dawnrun command-line entry point: dispatches to one command per verb. */
#include <stdio.h>
#include <string.h>

#include "base/status.h"
#include "cli.h"
#include "engine/experiment.h"
#include "progress.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: dawnrun COMMAND [ARGS]\n"
            "\n"
            "commands:\n"
            "  train CONFIG [--seed N] [--set key=value]... [--engine cpu|cuda|auto]\n"
            "               [--threads N] [--device N]\n"
            "        train one run and print its epoch table\n"
            "  validate CONFIG [--set key=value]...\n"
            "        check a config; print the resolved experiment and the network\n"
            "  bench CONFIG [--batch N] [--steps N] [--warmup N] [--engine ...] [--set ...]\n"
            "        time training steps and evaluation\n"
            "  run CONFIG... [--seeds N | --seed-list 0,3,7] [--sweep key=v1,v2]... [--db PATH]\n"
            "        [--engine ...] [--devices 0,1] [--workers N] [--retry-failed]\n"
            "        run a multi-seed batch into the results database, then report\n"
            "  report [EXPERIMENT|CONFIG ...] [--target 0.94] [-o FILE]\n"
            "        [--format table|csv|json|markdown|html]\n"
            "        runs reaching the target, median, mean, CI; experiments side by side\n"
            "  experiments | runs EXPERIMENT | show RUN      [--db PATH]\n"
            "        list experiments, the runs of one, one run's epoch table\n"
            "  plot EXPERIMENT... -o curves.svg [--db PATH]\n"
            "        test accuracy, train loss and lr per epoch as an SVG chart\n"
            "  export EXPERIMENT --format csv|json [--db PATH]\n"
            "        every run and epoch of an experiment\n"
            "  merge OUT.db IN.db...\n"
            "        combine results databases (e.g. of a Slurm job array)\n"
            "  selfcheck [--engine cuda] [--device N]\n"
            "        compare every CUDA op with its CPU twin (exit 77 without a GPU)\n"
            "  config-doc\n"
            "        print the reference of every config key (Markdown)\n"
            "  version\n"
            "\n"
            "exit codes: 0 ok, 1 other error, 2 bad flag, 3 config error, 4 data error,\n"
            "            5 diverged, 6 device error, 130/143 interrupted (SIGINT/SIGTERM)\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return EXIT_USAGE;
    }
    progress_install();
    const char *cmd = argv[1];
    if (!strcmp(cmd, "train")) return cmd_train(argc - 1, argv + 1);
    if (!strcmp(cmd, "validate")) return cmd_validate(argc - 1, argv + 1);
    if (!strcmp(cmd, "bench")) return cmd_bench(argc - 1, argv + 1);
    if (!strcmp(cmd, "run")) return cmd_run(argc - 1, argv + 1);
    if (!strcmp(cmd, "report")) return cmd_report(argc - 1, argv + 1);
    if (!strcmp(cmd, "experiments")) return cmd_experiments(argc - 1, argv + 1);
    if (!strcmp(cmd, "runs")) return cmd_runs(argc - 1, argv + 1);
    if (!strcmp(cmd, "show")) return cmd_show(argc - 1, argv + 1);
    if (!strcmp(cmd, "merge")) return cmd_merge(argc - 1, argv + 1);
    if (!strcmp(cmd, "plot")) return cmd_plot(argc - 1, argv + 1);
    if (!strcmp(cmd, "export")) return cmd_export(argc - 1, argv + 1);
    if (!strcmp(cmd, "selfcheck")) return cmd_selfcheck(argc - 1, argv + 1);
    if (!strcmp(cmd, "config-doc")) {
        config_schema_print(stdout);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "version") || !strcmp(cmd, "--version")) {
        printf("dawnrun %s\n", DAWNRUN_VERSION);
        return EXIT_OK;
    }
    if (!strcmp(cmd, "help") || !strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
        usage(stdout);
        return EXIT_OK;
    }
    dr_eprintf("dawnrun: unknown command '%s'\n", cmd);
    usage(stderr);
    return EXIT_USAGE;
}

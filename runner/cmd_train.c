/* `dawnrun train CONFIG`: one run on one engine, printing Page's epoch table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine/data.h"
#include "base/status.h"
#include "engine/train.h"
#include "load.h"
#include "progress.h"

struct train_view {
    int tty;
};

static void progress(void *user, int epoch, int step, int steps)
{
    struct train_view *v = user;
    if (v->tty) progress_draw(epoch, step, steps);
}

static int on_epoch(void *user, const struct epoch_record *r, const struct train_progress *p)
{
    (void)user;
    (void)p;
    progress_epoch_end(r->epoch, r->train_loss);
    table_print_row(stdout, r);
    return DR_OK;
}

int cmd_train(int argc, char **argv)
{
    struct cli_common c = {.engine = "auto"};
    long seed = 0;
    const struct cli_int_flag flags[] = {{"--seed", &seed, 0, 0x7fffffffL}};
    if (cli_parse(&c, argc, argv,
                  "usage: dawnrun train CONFIG [--seed N] [--set key=value]... "
                  "[--engine cpu|cuda|auto] [--threads N] [--device N]",
                  flags, 1) != 0)
        return EXIT_USAGE;

    struct experiment e;
    struct graph g;
    struct dataset train = {0}, test = {0};
    struct backend be = {0};
    struct trainer t = {0};
    struct train_progress prog;
    cli_signals_install(); /* before any OpenMP region: see cli.h */
    int rc = runner_load(&e, &g, c.config, c.sets, c.n_sets);
    if (rc != DR_OK) return cli_exit_code(rc);
    TRY(cli_backend(&c, (int)e.train.precision, &be)); /* no device: fail before loading */
    const char *dir = cifar10_default_dir(e.data.dir);
    TRY(cifar10_load(&train, &test, dir, e.data.train_subset, e.data.test_subset));
    TRY(trainer_create(&t, &e, &g, &be, &train, &test, (uint64_t)seed));
    printf("experiment %s  seed %ld  engine %s (%s)\n", e.name, seed, be.ops->name,
           be.ops->device_name(be.ctx));
    printf("data %s: %d train, %d test images; %d steps/epoch of %d; %d epochs; %lld parameters\n",
           dir, t.plan.train_count, t.plan.test_count, t.plan.steps_per_epoch, t.plan.batch,
           t.plan.epochs, (long long)g.n_weights);
    table_print_header(stdout);
    struct train_view view = {isatty(STDOUT_FILENO)};
    struct train_hooks hooks = {on_epoch, NULL, progress, cli_stop_requested, &view};
    train_progress_start(&prog);
    progress_run_begin(t.plan.epochs, t.plan.batch);
    rc = trainer_run(&t, &hooks, &prog);
    progress_clear();   /* a run stopped mid-epoch leaves its line drawn */
    if (prog.epoch > 0)
        printf("final test acc %.4f after %d epochs; train time %.2f s, total %.2f s%s\n",
               prog.last_test_acc, prog.epoch, prog.train_time, prog.total_time,
               rc == DR_ERR_DIVERGED ? " (diverged)" : "");
    if (rc == DR_ERR_DIVERGED) dr_eprintf("dawnrun: the loss diverged (NaN or inf)\n");
cleanup:
    trainer_free(&t);
    backend_destroy(&be);
    dataset_free(&train);
    dataset_free(&test);
    graph_free(&g);
    experiment_free(&e);
    return cli_exit_code(rc);
}

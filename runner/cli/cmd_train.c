/* `dawnrun train CONFIG`: one run on one engine, printing Page's epoch table, and after
 * it, on an engine that counts its work (CUDA), the run's first-use line (first_use.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "engine/core/data.h"
#include "base/status.h"
#include "engine/core/train.h"
#include "first_use.h"
#include "load.h"
#include "progress.h"

struct train_view {
    int tty;
    struct first_use_epochs first;   /* the first epochs' train times */
};

static void progress(void *user, int epoch, int step, int steps)
{
    struct train_view *v = user;
    if (v->tty) progress_draw(epoch, step, steps);
}

static int on_epoch(void *user, const struct epoch_record *r, const struct train_progress *p)
{
    struct train_view *v = user;
    (void)p;
    first_use_epoch_seen(&v->first, r->epoch, r->train_time);
    progress_epoch_end(r->epoch, r->train_loss);
    table_print_row(stdout, r);
    return DR_OK;
}

struct train_args {
    struct cli_common c;
    long seed;
};

static const struct cli_flag train_flags[] = {
    {.name = "seed", .kind = CLI_LONG, .offset = offsetof(struct train_args, seed),
     .meta = "N",
     .help = "the seed of the run (default 0)",
     .max = 0x7fffffffL},
    CLI_FLAG_SET(struct train_args, c),
    CLI_FLAG_ENGINE(struct train_args, c),
    CLI_FLAG_THREADS(struct train_args, c),
    CLI_FLAG_DEVICE(struct train_args, c),
};

const struct cli_command cli_train = {
    .name = "train",
    .args = "CONFIG",
    .summary = "train one run and print its epoch table (nothing is recorded)",
    .flags = train_flags,
    .n_flags = (int)(sizeof train_flags / sizeof train_flags[0]),
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_train,
};

int cmd_train(int argc, char **argv)
{
    struct train_args a = {.c = {.engine = "auto"}};
    int n_args = 0, parsed = cli_parse(&cli_train, &a, argc, argv, &n_args);
    if (parsed != CLI_PARSED) return parsed == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n_args != 1)
        return n_args ? cli_usage_error(&cli_train, "one CONFIG only (got '%s' too)", argv[2])
                      : cli_usage_error(&cli_train, "CONFIG is missing");
    struct cli_common c = a.c;
    long seed = a.seed;
    c.config = argv[1];

    struct experiment e;
    struct graph g;
    struct dataset train = {0}, test = {0};
    struct backend be = {0};
    struct trainer t = {0};
    struct train_progress prog;
    struct backend_counters before = {0};
    char first[512] = "";
    cli_signals_install(); /* before any OpenMP region: see cli.h */
    int rc = runner_load(&e, &g, c.config, c.sets, c.n_sets);
    if (rc != DR_OK) return cli_exit_code(rc);
    TRY(cli_backend(&c, (int)e.train.precision, &be)); /* no device: fail before loading */
    const char *dir = cifar10_default_dir(e.data.dir);
    TRY(cifar10_load(&train, &test, dir, e.data.train_subset, e.data.test_subset));
    if (be.ops->counters) TRY(be.ops->counters(be.ctx, &before));
    TRY(trainer_create(&t, &e, &g, &be, &train, &test, (uint64_t)seed));
    printf("experiment %s  seed %ld  engine %s (%s)\n", e.name, seed, be.ops->name,
           be.ops->device_name(be.ctx));
    printf("data %s: %d train, %d test images; %d steps/epoch of %d; %d epochs; %lld parameters\n",
           dir, t.plan.train_count, t.plan.test_count, t.plan.steps_per_epoch, t.plan.batch,
           t.plan.epochs, (long long)g.n_weights);
    table_print_header(stdout);
    struct train_view view = {isatty(STDOUT_FILENO), {{0, 0}, {0.0, 0.0}}};
    struct train_hooks hooks = {on_epoch, NULL, progress, cli_stop_requested, &view};
    train_progress_start(&prog);
    progress_run_begin(t.plan.epochs, t.plan.batch);
    rc = trainer_run(&t, &hooks, &prog);
    progress_clear();   /* a run stopped mid-epoch leaves its line drawn */
    /* the table is done: what first use cost (nothing said where nothing is counted) */
    if (first_use_run_line(first, sizeof(first), &be, &before, &view.first))
        printf("%s\n", first);
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

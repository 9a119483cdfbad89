/* `dawnrun validate CONFIG`: check a config and print the resolved experiment and the
 * expanded network with shapes, parameters and FLOPs. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "base/status.h"
#include "engine/core/run_plan.h"
#include "engine/core/train.h"
#include "kernels/muon.h"
#include "load.h"

/* Prints n with thousands separators. */
static void print_grouped(FILE *f, long long n)
{
    char buf[32], out[48];
    int len = snprintf(buf, sizeof(buf), "%lld", n), o = 0;
    for (int i = 0; i < len; i++) {
        if (i > 0 && buf[i - 1] != '-' && (len - i) % 3 == 0) out[o++] = ',';
        out[o++] = buf[i];
    }
    out[o] = 0;
    fputs(out, f);
}

static long long layer_params(const struct graph *g, const struct layer *l)
{
    long long n = 0;
    for (int k = l->param_first; k < l->param_first + l->param_count; k++) {
        const struct param_desc *d = &g->params[k];
        if (d->trainable) n += (long long)d->n * d->c * d->h * d->w;
    }
    return n;
}

/* The matrix products of one training step's Muon updates: every trainable parameter of
 * a kind whose group's optimiser is Muon, as the matrix (n, c h w); 0 without Muon. */
static double muon_flops_per_step(const struct experiment *e, const struct graph *g)
{
    double flops = 0;
    for (int k = 0; k < g->n_params; k++) {
        const struct param_desc *d = &g->params[k];
        const struct param_group *gr = &e->train.groups[d->kind];
        if (!d->trainable || !gr->own || gr->optimizer != OPTIMIZER_MUON) continue;
        flops += muon_ns_flops(d->n, d->c * d->h * d->w, e->train.muon.ns_steps);
    }
    return flops;
}

static int print_network(const struct experiment *e, const struct graph *g)
{
    printf("# network: %d layers, input 3x32x32, output '%s' (%d logits)\n", g->count - 1,
           g->layers[g->output].spec.name, g->layers[g->output].c);
    printf("%4s  %-28s %-8s %-24s %-12s %10s %10s\n", "id", "name", "type", "inputs", "output",
           "params", "MFLOP/img");
    for (int i = 1; i < g->count; i++) {
        const struct layer *l = &g->layers[i];
        char inputs[128] = "", shape[32];
        for (int s = 0; s < l->n_inputs; s++) {
            size_t len = strlen(inputs);
            snprintf(inputs + len, sizeof(inputs) - len, "%s%s", s ? "," : "",
                     g->layers[l->inputs[s]].spec.name);
        }
        snprintf(shape, sizeof(shape), "%dx%dx%d", l->c, l->h, l->w);
        printf("%4d  %-28s %-8s %-24s %-12s %10lld %10.3f\n", i, l->spec.name,
               layer_type_name(l->spec.type), inputs, shape, layer_params(g, l),
               (double)l->flops / 1e6);
    }
    struct run_plan plan;
    /* the loader checked that a batch fits the images the config asks for */
    if (experiment_plan(&plan, e, RUN_PLAN_CONFIG_IMAGES, RUN_PLAN_CONFIG_IMAGES) != DR_OK)
        return DR_ERR_CONFIG;
    int test_count = plan.test_count;
    long steps = plan.total_steps, epochs = plan.epochs;
    double train_flops = (double)graph_train_flops(g) * (double)plan.batch * (double)steps;
    int views = train_tta_views(NULL, NULL, e->eval.tta);
    double eval_flops =
        (double)g->flops_forward * (double)test_count * (double)epochs * (double)views;
    long long fixed = 0;
    for (int k = 0; k < g->n_params; k++)
        if (!g->params[k].trainable)
            fixed += (long long)g->params[k].n * g->params[k].c * g->params[k].h * g->params[k].w;
    printf("# totals\n");
    printf("trainable parameters  ");
    print_grouped(stdout, (long long)g->n_weights);
    if (fixed > 0) {
        printf("\nfixed parameters      ");
        print_grouped(stdout, fixed);
        printf(" (frozen layers, frozen BN weights/biases, whitening filters)");
    }
    printf("\nforward FLOPs/image   %.4f GFLOP\n", (double)g->flops_forward / 1e9);
    printf("train FLOPs/image     %.4f GFLOP (forward + backward)\n",
           (double)graph_train_flops(g) / 1e9);
    const double muon = muon_flops_per_step(e, g);
    if (muon > 0) {
        printf("optimiser FLOPs/step  %.4f GFLOP (Muon's Newton-Schulz products)\n", muon / 1e9);
        train_flops += muon * (double)steps;
    }
    printf("run                   %ld steps x %d images: %.2f PFLOP training + %.3f PFLOP "
           "evaluation (%d test images x %ld epochs",
           steps, plan.batch, train_flops / 1e15, eval_flops / 1e15, test_count, epochs);
    if (views > 1) printf(" x %d test-time views", views);
    printf(")\n");
    char hash[65];
    experiment_hash(e, hash);
    printf("experiment hash       %s\n", hash);
    return DR_OK;
}

struct validate_args {
    struct cli_common c;
};

static const struct cli_flag validate_flags[] = {
    CLI_FLAG_SET(struct validate_args, c),
    CLI_FLAG_ENGINE(struct validate_args, c),
    CLI_FLAG_THREADS(struct validate_args, c),
    CLI_FLAG_DEVICE(struct validate_args, c),
};

const struct cli_command cli_validate = {
    .name = "validate",
    .args = "CONFIG",
    .summary = "check a config; print the resolved experiment and the network",
    .flags = validate_flags,
    .n_flags = (int)(sizeof validate_flags / sizeof validate_flags[0]),
    .notes = "--engine, --threads and --device are taken so that the flags of a train or run\n"
             "command line validate as they are; validate itself trains nothing.\n",
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_validate,
};

int cmd_validate(int argc, char **argv)
{
    struct validate_args a = {{0}};
    int n_args = 0, parsed = cli_parse(&cli_validate, &a, argc, argv, &n_args);
    if (parsed != CLI_PARSED) return parsed == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n_args != 1)
        return n_args ? cli_usage_error(&cli_validate, "one CONFIG only (got '%s' too)", argv[2])
                      : cli_usage_error(&cli_validate, "CONFIG is missing");
    struct cli_common c = a.c;
    c.config = argv[1];
    struct experiment e;
    struct graph g;
    int rc = runner_load(&e, &g, c.config, c.sets, c.n_sets);
    if (rc != DR_OK) return cli_exit_code(rc);
    printf("# experiment '%s' from %s (resolved)\n", e.name, c.config);
    fputs(e.resolved ? e.resolved : "", stdout);
    rc = print_network(&e, &g);
    graph_free(&g);
    experiment_free(&e);
    return cli_exit_code(rc);
}

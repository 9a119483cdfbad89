/* `dawnrun bench CONFIG`: times training steps and evaluation after warm-up on
 * synthetic images (speed does not depend on pixel values), and reports images/s,
 * ms per step, achieved GFLOP/s from the graph's FLOP count, and the time split by
 * layer type; on the CPU engine also the instruction set its own kernels use. On an
 * engine that counts its work (CUDA), a first-use line after the warm-up and at the end
 * says what building fused graphs and searching convolution algorithms cost.
 *
 * Stopped by SIGTERM or SIGINT (a `timeout`, Ctrl-C), it prints what it has so far before
 * it exits with 128 + the signal: which part it was in, the warm-up and timed steps done
 * with their ms/step, and the first-use line. The signals are blocked in every thread and
 * taken by a thread of their own (sigwait), so that the line is said at once, even while
 * the main thread waits inside cuDNN or the device, and nothing runs on another thread's
 * stack at an arbitrary instant (cli.h says why that matters). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "engine/core/data.h"
#include "first_use.h"
#include "kernels/rng.h"
#include "base/status.h"
#include "engine/core/run_plan.h"
#include "engine/core/train.h"
#include "kernels/counters.h"
#include "kernels/cpu/cpu_isa.h"
#include "load.h"

static double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ---- what a signal handler can say --------------------------------------------------- */

/* The parts of a bench, in order, as the stop line names them. */
enum bench_part { PART_SETUP, PART_WARMUP, PART_TIMED, PART_EVAL, PART_PROFILE, PART_COUNT };

static const char *const part_names[PART_COUNT] = {
    "while setting up", "during the warm-up steps", "during the timed steps",
    "during the evaluation", "during the profiled steps"};

/* The bench's progress, written by the main thread between steps and read by the
 * watching thread: the part under way, and per step loop (warm-up, timed) the steps asked
 * for and done, when it began and when its latest step was done (CLOCK_MONOTONIC
 * seconds); and the engine, whose counters are read when it counts (CUDA), under lock
 * (the main thread clears it, under the lock, before destroying the engine). */
static struct {
    pthread_mutex_t lock;
    const struct backend *be;
    _Atomic int part;
    _Atomic int asked[2], done[2];
    _Atomic double began[2], last[2];
} live = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The part after the last: the bench is ending, a signal now says nothing. */
#define PART_DONE PART_COUNT

/* Appends "warm-up 2 of 3 steps in 25.3 s (12650.0 ms/step)" for loop i (0 warm-up,
 * 1 timed), and how long its next step has run when one is under way. */
static void stop_loop_text(char *buf, size_t cap, int i, double now)
{
    const int done = live.done[i], asked = live.asked[i];
    const double spent = live.last[i] - live.began[i];
    first_use_cat(buf, cap, i == 0 ? "warm-up " : "timed ");
    first_use_cat_u64(buf, cap, (uint64_t)done);
    first_use_cat(buf, cap, " of ");
    first_use_cat_u64(buf, cap, (uint64_t)asked);
    first_use_cat(buf, cap, i == 0 ? " steps in " : " steps issued in ");
    first_use_cat_fixed(buf, cap, spent, 1);
    first_use_cat(buf, cap, " s");
    if (done > 0) {
        first_use_cat(buf, cap, " (");
        first_use_cat_fixed(buf, cap, 1e3 * spent / done, 1);
        first_use_cat(buf, cap, " ms/step)");
    }
    if (live.part == (i == 0 ? PART_WARMUP : PART_TIMED) && done < asked) {
        first_use_cat(buf, cap, ", step ");
        first_use_cat_u64(buf, cap, (uint64_t)done + 1);
        first_use_cat(buf, cap, " under way for ");
        first_use_cat_fixed(buf, cap, now - live.last[i], 1);
        first_use_cat(buf, cap, " s");
    }
}

/* Says that signal sig stopped the bench: one line with the part and the steps so far,
 * the first-use line when the engine counts; nothing once the bench is ending. */
static void bench_say_stop(int sig)
{
    static char line[1024];
    struct backend_counters d;
    const double now = bench_now();
    const int part = live.part;
    if (part >= PART_DONE) return;
    line[0] = '\0';
    first_use_cat(line, sizeof(line), "bench stopped by ");
    first_use_cat(line, sizeof(line), sig == SIGTERM ? "SIGTERM " : "SIGINT ");
    first_use_cat(line, sizeof(line), part_names[part]);
    if (part >= PART_WARMUP) {
        first_use_cat(line, sizeof(line), ": ");
        stop_loop_text(line, sizeof(line), 0, now);
    }
    if (part >= PART_TIMED) {
        first_use_cat(line, sizeof(line), "; ");
        stop_loop_text(line, sizeof(line), 1, now);
    }
    size_t len = first_use_cat(line, sizeof(line), "\n");
    pthread_mutex_lock(&live.lock);
    if (live.be && live.be->ops->counters && live.be->ops->counters(live.be->ctx, &d) == DR_OK) {
        first_use_text(line + len, sizeof(line) - len, &d);
        len = first_use_cat(line, sizeof(line), " so far\n");
    }
    pthread_mutex_unlock(&live.lock);
    for (size_t at = 0; at < len;) {
        const ssize_t n = write(STDOUT_FILENO, line + at, len - at);
        if (n <= 0) break;
        at += (size_t)n;
    }
}

/* The watching thread: waits for SIGTERM or SIGINT (set), says what the bench had, and
 * ends the process with 128 + the signal. */
static void *bench_watch(void *set)
{
    int sig = 0;
    if (sigwait((const sigset_t *)set, &sig) != 0) return NULL;
    bench_say_stop(sig);
    _exit(128 + sig);
}

/* Blocks SIGTERM and SIGINT in the calling thread, and so in every thread made after it
 * (call it before the engine and OpenMP make theirs), and starts the thread that takes
 * them. */
static void bench_signals_install(void)
{
    static sigset_t set;
    pthread_t watcher;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    if (pthread_create(&watcher, NULL, bench_watch, &set) == 0) pthread_detach(watcher);
}

/* Enters part p; for a step loop (PART_WARMUP, PART_TIMED) of `asked` steps, starts its
 * count and clock. */
static void live_enter(enum bench_part p, long asked)
{
    const int i = p == PART_WARMUP ? 0 : p == PART_TIMED ? 1 : -1;
    if (i >= 0) {
        live.asked[i] = (int)asked;
        live.done[i] = 0;
        live.began[i] = live.last[i] = bench_now();
    }
    live.part = p;
}

/* A dataset of `count` pseudo-random images (RNG stream unused by training). */
static int synthetic_dataset(struct dataset *d, int count)
{
    d->count = count;
    d->images = malloc((size_t)count * 3072);
    d->labels = malloc((size_t)count);
    if (!d->images || !d->labels) return DR_ERR_NOMEM;
    for (int i = 0; i < count; i++) {
        for (int j = 0; j < 3072; j += 4) {
            struct rng4 r = rng_draw(0xbe4c4u, 99, 0, (uint32_t)i, (uint32_t)j);
            for (int k = 0; k < 4; k++) d->images[(size_t)i * 3072 + j + k] = (uint8_t)r.v[k];
        }
        d->labels[i] = (uint8_t)(i % 10);
    }
    return DR_OK;
}

/* Batches in the synthetic training set, at most: each run of steps starts an epoch of
 * the step plan and takes a fresh one every this many steps. */
#define BENCH_EPOCH_STEPS 16

/* The engine's counters now, or zeros and 0 when it counts nothing (the CPU engine). */
static int read_counters(const struct backend *be, struct backend_counters *out, int *have)
{
    memset(out, 0, sizeof(*out));
    *have = be->ops->counters != NULL;
    return *have ? be->ops->counters(be->ctx, out) : DR_OK;
}

/* out += the counts between before and after. */
static void add_counts(struct backend_counters *out, const struct backend_counters *after,
                       const struct backend_counters *before)
{
    struct backend_counters d;
    backend_counters_diff(&d, after, before);
    uint64_t *po = (uint64_t *)out;
    const uint64_t *pd = (const uint64_t *)&d;
    for (unsigned i = 0; i < sizeof(*out) / sizeof(uint64_t); i++) po[i] += pd[i];
}

/* `steps` training steps as a run takes them: the step plan, then the weight average
 * (part of a step's cost). They start at epoch 0's first batch and step 0 of the
 * learning-rate table, and begin a fresh epoch (its permutation and cursor written)
 * whenever the synthetic set's batches or the table run out; counts gets the engine's
 * counts of the steps alone, the epochs' writes left out, as in a real epoch's steps. */
static int run_steps(struct trainer *t, int steps, struct backend_counters *counts)
{
    int rc = DR_OK, have = 0;
    long per_epoch = t->plan.steps_per_epoch;
    if (per_epoch > t->plan.total_steps) per_epoch = t->plan.total_steps;
    struct backend_counters before, after;
    memset(counts, 0, sizeof(*counts));
    for (int s = 0; s < steps; s++) {
        if (s % per_epoch == 0) {
            if (s > 0) {
                TRY(read_counters(t->be, &after, &have));
                add_counts(counts, &after, &before);
            }
            t->step = 0;
            TRY(trainer_epoch_begin(t, 0));
            TRY(read_counters(t->be, &before, &have));
        }
        TRY(trainer_step(t));
        TRY(trainer_after_step(t));
        if (live.part == PART_WARMUP || live.part == PART_TIMED) {
            const int i = live.part == PART_TIMED;
            live.last[i] = bench_now();
            live.done[i]++;
        }
    }
    TRY(read_counters(t->be, &after, &have));
    if (steps > 0) add_counts(counts, &after, &before);
    TRY(t->be->ops->synchronize(t->be->ctx));
cleanup:
    return rc;
}


/* "4.1 kB" style, decimal units. */
static void bench_bytes(char *out, size_t size, double bytes)
{
    const char *unit[] = {"B", "kB", "MB", "GB", "TB"};
    int u = 0;
    while (bytes >= 1000.0 && u < 4) {
        bytes /= 1000.0;
        u++;
    }
    snprintf(out, size, u == 0 ? "%.0f %s" : "%.2f %s", bytes, unit[u]);
}

/* One line of counts between before and after, divided by per (steps or batches). */
static void print_counts(const char *what, const struct backend_counters *after,
                         const struct backend_counters *before, double per)
{
    struct backend_counters d;
    char rw[32], h2d[32], d2h[32], d2d[32], grw[32], gd2d[32];
    backend_counters_diff(&d, after, before);
    bench_bytes(rw, sizeof(rw), (double)(d.kernel_bytes_read + d.kernel_bytes_written) / per);
    bench_bytes(grw, sizeof(grw),
                (double)(d.graph_kernel_bytes_read + d.graph_kernel_bytes_written) / per);
    bench_bytes(gd2d, sizeof(gd2d), (double)d.graph_d2d_bytes / per);
    bench_bytes(h2d, sizeof(h2d), (double)d.h2d_bytes / per);
    bench_bytes(d2h, sizeof(d2h), (double)d.d2h_bytes / per);
    bench_bytes(d2d, sizeof(d2d), (double)d.d2d_bytes / per);
    printf("%s: %.4g kernel launches, %.4g graph launches, %.4g cuDNN calls, %.4g cuBLAS "
           "calls, own kernels %s read+written, %.4g H2D copies (%s), %.4g D2H (%s), "
           "%.4g D2D (%s), %.4g memsets, %.4g synchronisations, %.4g allocations, %.4g frees; "
           "replayed by the graph launches: %.4g graph kernels (%s read+written), %.4g graph "
           "cuDNN calls, %.4g graph cuBLAS calls, %.4g graph memsets, %.4g graph D2D (%s); "
           "%.4g graph captures\n",
           what, (double)d.kernel_launches / per, (double)d.graph_launches / per,
           (double)d.cudnn_calls / per, (double)d.cublas_calls / per, rw,
           (double)d.h2d_copies / per, h2d, (double)d.d2h_copies / per, d2h,
           (double)d.d2d_copies / per, d2d, (double)d.memsets / per, (double)d.syncs / per,
           (double)d.allocs / per, (double)d.frees / per, (double)d.graph_kernels / per, grw,
           (double)d.graph_cudnn_calls / per, (double)d.graph_cublas_calls / per,
           (double)d.graph_memsets / per, (double)d.graph_d2d_copies / per, gd2d,
           (double)d.graph_captures / per);
}

/* The first-use line (first_use.h) of the engine's counts since it was created, when it
 * counts, with what the step loops took; nothing on an engine that counts nothing. */
static int print_first_use(const struct backend *be, long warmup, double warmup_s, long steps,
                           double steps_s)
{
    int rc = DR_OK, counted = 0;
    struct backend_counters now;
    char text[512] = "";
    TRY(read_counters(be, &now, &counted));
    if (!counted) goto cleanup;
    first_use_text(text, sizeof(text), &now);
    printf("%s; warm-up %ld steps %.1f s", text, warmup, warmup_s);
    if (steps > 0) printf("; timed %ld steps %.2f s", steps, steps_s);
    printf("\n");
cleanup:
    return rc;
}

static void print_split(const struct model_profile *p, double total)
{
    double by_type[LAYER_TYPE_COUNT];
    for (int k = 0; k < LAYER_TYPE_COUNT; k++) by_type[k] = p->forward_s[k] + p->backward_s[k];
    printf("time split by layer type (forward + backward; a fused node counts as its "
           "batch norm's):\n");
    for (int k = 0; k < LAYER_TYPE_COUNT; k++) {
        if (by_type[k] <= 0.0) continue;
        printf("  %-9s %6.1f %%  (fwd %.1f ms, bwd %.1f ms per step)\n",
               layer_type_name((enum layer_type)k), 100.0 * by_type[k] / total,
               1e3 * p->forward_s[k], 1e3 * p->backward_s[k]);
    }
    printf("  %-9s %6.1f %%\n  %-9s %6.1f %%\n  %-9s %6.1f %%\n", "loss", 100.0 * p->loss_s / total,
           "optimizer", 100.0 * p->optimizer_s / total, "augment", 100.0 * p->augment_s / total);
}

struct bench_args {
    struct cli_common c;
    long batch, steps, warmup;
};

static const struct cli_flag bench_flags[] = {
    {.name = "batch", .kind = CLI_LONG, .offset = offsetof(struct bench_args, batch),
     .meta = "N", .help = "the batch size (train.batch_size; default: the config's)",
     .min = 1, .max = 65536},
    {.name = "steps", .kind = CLI_LONG, .offset = offsetof(struct bench_args, steps),
     .meta = "N", .help = "timed training steps (default 50 on cuda, 3 on cpu)",
     .min = 1, .max = 100000},
    {.name = "warmup", .kind = CLI_LONG, .offset = offsetof(struct bench_args, warmup),
     .meta = "N", .help = "untimed warm-up steps first (default 1)", .max = 100000},
    CLI_FLAG_SET(struct bench_args, c),
    CLI_FLAG_ENGINE(struct bench_args, c),
    CLI_FLAG_THREADS(struct bench_args, c),
    CLI_FLAG_DEVICE(struct bench_args, c),
};

const struct cli_command cli_bench = {
    .name = "bench",
    .args = "CONFIG",
    .summary = "time training steps and evaluation on synthetic images",
    .flags = bench_flags,
    .n_flags = (int)(sizeof bench_flags / sizeof bench_flags[0]),
    .arg_hint = CLI_HINT_CONFIG,
    .run = cmd_bench,
};

int cmd_bench(int argc, char **argv)
{
    char batch_set[64];
    struct bench_args a = {.c = {.engine = "auto"}, .warmup = 1};
    int n_args = 0, parsed = cli_parse(&cli_bench, &a, argc, argv, &n_args);
    if (parsed != CLI_PARSED) return parsed == CLI_HELP ? EXIT_OK : EXIT_USAGE;
    if (n_args != 1)
        return n_args ? cli_usage_error(&cli_bench, "one CONFIG only (got '%s' too)", argv[2])
                      : cli_usage_error(&cli_bench, "CONFIG is missing");
    struct cli_common c = a.c;
    long batch = a.batch, steps = a.steps, warmup = a.warmup;
    c.config = argv[1];
    if (batch > 0) {
        if (c.n_sets >= CLI_MAX_SETS) return EXIT_USAGE;
        snprintf(batch_set, sizeof(batch_set), "train.batch_size=%ld", batch);
        c.sets[c.n_sets++] = batch_set;
    }

    struct experiment e;
    struct graph g;
    struct dataset train = {0}, test = {0};
    struct backend be = {0};
    struct trainer t = {0};
    struct model_profile prof;
    struct backend_counters train_counts, prof_counts, eval0, eval1, zero = {0};
    int counted = 0;
    live_enter(PART_SETUP, 0);
    bench_signals_install();
    int rc = runner_load(&e, &g, c.config, c.sets, c.n_sets);
    if (rc != DR_OK) return cli_exit_code(rc);
    struct run_plan full;   /* the run the config describes, on the images it asks for */
    TRY(experiment_plan(&full, &e, RUN_PLAN_CONFIG_IMAGES, RUN_PLAN_CONFIG_IMAGES));
    int b = full.batch, eb = full.eval_batch;
    TRY(cli_backend(&c, (int)e.train.precision, &be));
    pthread_mutex_lock(&live.lock);
    live.be = &be;
    pthread_mutex_unlock(&live.lock);
    if (steps == 0) steps = strcmp(be.ops->name, "cpu") ? 50 : 3;
    /* as many batches as one run of steps takes, up to BENCH_EPOCH_STEPS */
    long epoch_steps = warmup > steps ? warmup : steps;
    if (epoch_steps > BENCH_EPOCH_STEPS) epoch_steps = BENCH_EPOCH_STEPS;
    TRY(synthetic_dataset(&train, b * (int)epoch_steps));
    TRY(synthetic_dataset(&test, eb));
    TRY(trainer_create(&t, &e, &g, &be, &train, &test, 0));

    struct utsname u;
    uname(&u);
    time_t now = time(NULL);
    char date[32];
    strftime(date, sizeof(date), "%Y-%m-%d", gmtime(&now));
    printf("bench %s  engine %s (%s)  host %s  %s\n", e.name, be.ops->name,
           be.ops->device_name(be.ctx), u.nodename, date);
    if (!strcmp(be.ops->name, "cpu")) {
        const char *cap = getenv("DNNL_MAX_CPU_ISA");
        printf("cpu kernels: %s; oneDNN: %s\n", cpu_isa_name(cpu_isa_active()),
               cap && *cap ? cap : "its own choice (DNNL_MAX_CPU_ISA unset)");
    }
    printf("batch %d, %ld warm-up + %ld timed steps; train %.3f GFLOP/image, eval %.3f "
           "GFLOP/image\n", b, warmup, steps, (double)graph_train_flops(&g) / 1e9,
           (double)g.flops_forward / 1e9);

    live_enter(PART_WARMUP, warmup);
    double t0 = bench_now();
    TRY(run_steps(&t, (int)warmup, &prof_counts));
    live.last[0] = bench_now();   /* the wait for the device included */
    const double warmup_s = live.last[0] - t0;
    /* the timed part begins before the warm-up is said, so that a signal after the
     * warm-up line is said to have come during the timed steps */
    live_enter(PART_TIMED, steps);
    /* said before the timed steps, so that a bench stopped during them keeps it */
    printf("warm-up: %ld steps in %.1f s", warmup, warmup_s);
    if (warmup > 0) printf(" (%.1f ms/step)", 1e3 * warmup_s / (double)warmup);
    printf("\n");
    TRY(print_first_use(&be, warmup, warmup_s, 0, 0.0));
    t0 = bench_now();
    TRY(run_steps(&t, (int)steps, &train_counts));
    live.last[1] = bench_now();
    const double steps_s = live.last[1] - t0;
    double step_s = steps_s / (double)steps;
    double gflops = (double)graph_train_flops(&g) * b / step_s / 1e9;
    printf("train: %.1f ms/step, %.1f images/s, %.1f GFLOP/s achieved\n", 1e3 * step_s,
           b / step_s, gflops);

    double loss, acc;
    live_enter(PART_EVAL, 0);
    TRY(trainer_evaluate(&t, &loss, &acc));
    TRY(read_counters(&be, &eval0, &counted));
    t0 = bench_now();
    int eval_reps = strcmp(be.ops->name, "cpu") ? 10 : 1;
    for (int r = 0; r < eval_reps; r++) TRY(trainer_evaluate(&t, &loss, &acc));
    double eval_s = (bench_now() - t0) / eval_reps;
    TRY(read_counters(&be, &eval1, &counted));
    printf("eval:  %.1f ms per %d images, %.1f images/s\n", 1e3 * eval_s, eb, eb / eval_s);

    double epochs = e.train.epochs;
    printf("projected run (%d train / %d test images, %.4g epochs): %.1f s training + "
           "%.1f s evaluation\n", full.train_count, full.test_count, epochs,
           epochs * full.steps_per_epoch * step_s,
           epochs * (double)full.test_count / eb * eval_s);

    memset(&prof, 0, sizeof(prof));
    live_enter(PART_PROFILE, 0);
    t.model.prof = &prof;
    t0 = bench_now();
    TRY(run_steps(&t, (int)steps, &prof_counts));
    double prof_total = bench_now() - t0;
    t.model.prof = NULL;
    for (int k = 0; k < LAYER_TYPE_COUNT; k++) {
        prof.forward_s[k] /= (double)steps;
        prof.backward_s[k] /= (double)steps;
    }
    prof.loss_s /= (double)steps;
    prof.optimizer_s /= (double)steps;
    prof.augment_s /= (double)steps;
    print_split(&prof, prof_total / (double)steps);
    if (counted) {
        print_counts("per training step", &train_counts, &zero, (double)steps);
        print_counts("per eval batch", &eval1, &eval0,
                     (double)eval_reps * (double)((test.count + eb - 1) / eb));
    }
    TRY(print_first_use(&be, warmup, warmup_s, steps, steps_s));
cleanup:
    pthread_mutex_lock(&live.lock);   /* the watcher no longer reads the engine */
    live.be = NULL;
    live.part = PART_DONE;
    pthread_mutex_unlock(&live.lock);
    trainer_free(&t);
    backend_destroy(&be);
    dataset_free(&train);
    dataset_free(&test);
    graph_free(&g);
    experiment_free(&e);
    return cli_exit_code(rc);
}

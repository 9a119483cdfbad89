/* The selfcheck harness (engine/selfcheck/selfcheck.h) and its table, without a GPU: the table's
 * rows are well formed (unique names that --only can give, every activation kind, the
 * conv group of 14 cases the algorithm tests count on); --only chooses by prefix and
 * group and refuses what chooses nothing; the metrics say what they promise; the CPU
 * engine against itself passes every case; and against a CPU engine with one op made
 * wrong (an output off by 1e-2, an SGD weight off by one ulp, a wrong label, an op that
 * returns an error) exactly the cases of that op fail, each named with FAIL. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/status.h"
#include "engine/selfcheck/selfcheck.h"
#include "engine/selfcheck/selfcheck_case.h"
#include "../kernels/backend.h"
#include "check.h"

static const struct backend_ops *real;     /* the CPU engine's table */

/* ------------------------------------------------------------------ wrong ops */

/* The op made wrong: its nodes run through the real runner, then made wrong. */
enum wrong { WRONG_NONE, WRONG_ACT_FWD, WRONG_SGD_ONE, WRONG_BATCH_LABEL, WRONG_LINEAR_FWD };
static enum wrong wrong_op;

/* Adds delta to value `at` of fp32 tensor t (read, changed, written back). */
static int nudge(void *ctx, struct tensor *t, size_t at, int ulp, float delta)
{
    size_t n = tensor_count(t);
    float *h = malloc(n * sizeof(float));
    int rc = h ? real->tensor_read(ctx, h, t) : DR_ERR_NOMEM;
    if (rc == DR_OK) {
        h[at] = ulp ? nextafterf(h[at], INFINITY) : h[at] + delta;
        rc = real->tensor_write(ctx, t, h);
    }
    free(h);
    return rc;
}

/* backend_ops.run_node with wrong_op made wrong: an act_forward output value 1e-2 too
 * large; the first weight of an SGD node of one item (the sgd_update cases) one ulp away,
 * within any tolerance but not exact bits; the first label of a batch changed; a
 * linear_forward that fails. */
static int run_node_wrong(void *ctx, const struct plan_node *n)
{
    if (wrong_op == WRONG_LINEAR_FWD && n->op == PLAN_LINEAR_FWD) return DR_ERR_DEVICE;
    int rc = real->run_node(ctx, n);
    if (rc != DR_OK) return rc;
    if (wrong_op == WRONG_ACT_FWD && n->op == PLAN_ACT_FWD)
        return nudge(ctx, n->dst[PLAN_Y], tensor_count(n->dst[PLAN_Y]) / 2, 0, 1e-2f);
    if (wrong_op == WRONG_SGD_ONE && n->op == PLAN_SGD && n->par.sgd.count == 1)
        return nudge(ctx, n->par.sgd.items[0].w, 0, 1, 0.0f);
    if (wrong_op == WRONG_BATCH_LABEL && n->op == PLAN_BATCH) {
        struct tensor *labels = n->dst[PLAN_BATCH_LABELS];
        int32_t *h = malloc(tensor_count(labels) * sizeof(int32_t));
        rc = h ? real->tensor_read(ctx, h, labels) : DR_ERR_NOMEM;
        if (rc == DR_OK) {
            h[0] = (h[0] + 1) % 10;
            rc = real->tensor_write(ctx, labels, h);
        }
        free(h);
    }
    return rc;
}

/* ------------------------------------------------------------------ running */

/* Runs the cases only chooses, ref against test in fp32; the output into log. */
static int run_cases(const char *only, struct backend *ref, struct backend *test, int *checks,
                     int *failures, char *log, size_t loglen)
{
    struct selfcheck sc;
    char why[256];
    int rc = selfcheck_open(&sc, only, why, sizeof(why));
    FILE *out = tmpfile();
    log[0] = '\0';
    *checks = *failures = -1;
    if (rc != DR_OK || !out) {
        if (out) fclose(out);
        return rc != DR_OK ? rc : DR_ERR_IO;
    }
    rc = selfcheck_run(out, &sc, ref, test, 0, checks, failures);
    rewind(out);
    size_t len = fread(log, 1, loglen - 1, out);
    log[len] = '\0';
    fclose(out);
    selfcheck_close(&sc);
    return rc;
}

/* Whether log has a line naming case with its verdict word (ok, FAIL). */
static int line_says(const char *log, const char *name, const char *verdict)
{
    size_t len = strlen(name);
    for (const char *p = log; (p = strstr(p, name)) != NULL; p += len) {
        const char *end = strchr(p, '\n');
        size_t vl = strlen(verdict);
        if (p[len] == ' ' && end && (size_t)(end - p) > vl && !strncmp(end - vl, verdict, vl))
            return 1;
    }
    return 0;
}

/* ------------------------------------------------------------------ the tests */

static void test_table(void)
{
    struct selfcheck sc;
    char why[256];
    CHECK(selfcheck_open(&sc, NULL, why, sizeof(why)) == DR_OK);
    if (!sc.table) return;
    CHECK(sc.chosen_count == sc.table->count && sc.table->count > 0);
    int conv = 0;
    for (int i = 0; i < sc.table->count; i++) {
        const struct sc_case *c = &sc.table->cases[i];
        CHECK(c->name[0] && strchr(c->name, '/') && !strpbrk(c->name, " ,\t"));
        CHECK(strlen(c->name) < SC_NAME_MAX - 1);   /* not cut short */
        for (int j = 0; j < i; j++) CHECK(strcmp(c->name, sc.table->cases[j].name) != 0);
        CHECK(c->build && c->run && c->n_outputs >= 1 && c->n_outputs <= SC_OUTPUTS);
        for (int k = 0; k < c->n_outputs; k++) CHECK(c->outputs[k] >= 0 && c->outputs[k] < SC_SLOTS);
        for (int p = 0; p < SC_PRECISIONS; p++) CHECK(c->tol[p] >= 0.0 && c->tol[p] < 1.0);
        CHECK(c->metric >= 0 && c->metric < SC_METRIC_COUNT);
        int groups = 0;
        for (const char *g = "conv\0ops\0augment\0train\0toolbox\0plan\0"; *g; g += strlen(g) + 1)
            groups += !strcmp(c->group, g);
        CHECK(groups == 1);
        conv += !strcmp(c->group, "conv");
    }
    CHECK(conv == 14);
    /* every activation kind, forward, backward and backward accumulating */
    for (int kind = 0; kind < ACT_KIND_COUNT; kind++) {
        const char *ops[] = {"act_forward/", "act_backward/", "act_backward_acc/"};
        for (int o = 0; o < 3; o++) {
            char prefix[64];
            int hits = 0;
            snprintf(prefix, sizeof(prefix), "%s%s_", ops[o], act_kind_name((enum act_kind)kind));
            for (int i = 0; i < sc.table->count; i++)
                hits += !strncmp(sc.table->cases[i].name, prefix, strlen(prefix));
            CHECK(hits == 1);
        }
    }
    selfcheck_close(&sc);
}

static void test_select(void)
{
    struct selfcheck sc;
    char why[256] = "";
    CHECK(selfcheck_open(&sc, "conv", why, sizeof(why)) == DR_OK);
    CHECK(sc.chosen_count == 14);
    for (int i = 0; sc.table && i < sc.table->count; i++)
        CHECK(sc.chosen[i] == !strcmp(sc.table->cases[i].group, "conv"));
    selfcheck_close(&sc);

    CHECK(selfcheck_open(&sc, "ops", why, sizeof(why)) == DR_OK);
    for (int i = 0; sc.table && i < sc.table->count; i++)
        CHECK(sc.chosen[i] == !strcmp(sc.table->cases[i].group, "ops"));
    selfcheck_close(&sc);

    /* a prefix: bn_backward and bn_backward_acc of the four shapes */
    CHECK(selfcheck_open(&sc, "bn_backward", why, sizeof(why)) == DR_OK);
    CHECK(sc.chosen_count == 8);
    selfcheck_close(&sc);

    /* a full name (only that case, though it starts another's name), and a union */
    CHECK(selfcheck_open(&sc, "sgd_update/10x512,augment,train", why, sizeof(why)) == DR_OK);
    /* augment: 8 augment and 3 augment_step cases; train: small_net, preact_net and
     * preact_net_step1 */
    CHECK(sc.chosen_count == 1 + 11 + 3);
    selfcheck_close(&sc);

    CHECK(selfcheck_open(&sc, "conv,nonsense", why, sizeof(why)) == DR_ERR_USAGE);
    CHECK(strstr(why, "'nonsense' names no case") != NULL);
    CHECK(sc.table == NULL && sc.chosen == NULL);
    CHECK(selfcheck_open(&sc, "", why, sizeof(why)) == DR_ERR_USAGE);
    CHECK(selfcheck_open(&sc, "conv,,ops", why, sizeof(why)) == DR_ERR_USAGE);
}

static void test_metrics(void)
{
    const float ref[3] = {1.0f, -2.0f, 4.0f}, test[3] = {1.0f, -2.0f, 4.004f};
    CHECK_NEAR(sc_error(SC_MAX_REL, test, ref, 3), 0.004 / 4.0, 1e-7);
    CHECK_NEAR(sc_error(SC_ELEM_REL, test, ref, 3), 0.001, 1e-6);
    CHECK(sc_error(SC_EXACT_BITS, test, ref, 3) == 1.0);
    CHECK(sc_error(SC_MAX_REL, ref, ref, 3) == 0.0 && sc_error(SC_EXACT_BITS, ref, ref, 3) == 0.0);
    /* a small value off by its own size: small next to the output, not next to itself */
    const float r2[2] = {1e-3f, 2.0f}, t2[2] = {2e-3f, 2.0f};
    CHECK(sc_error(SC_MAX_REL, t2, r2, 2) < 1e-3);
    CHECK(sc_error(SC_ELEM_REL, t2, r2, 2) > 0.9);
    /* signed zeros are equal values but different bits; NaN is never within tolerance */
    const float z[1] = {0.0f}, nz[1] = {-0.0f}, nan[1] = {NAN};
    CHECK(sc_error(SC_MAX_REL, nz, z, 1) == 0.0 && sc_error(SC_EXACT_BITS, nz, z, 1) == 1.0);
    CHECK(isinf(sc_error(SC_MAX_REL, nan, z, 1)) && isinf(sc_error(SC_ELEM_REL, nan, z, 1)));
    CHECK(sc_error(SC_EXACT_BITS, nan, z, 1) == 1.0);
}

static void test_against(struct backend *ref, struct backend *cpu)
{
    static char log[1 << 18];
    int checks, failures;
    struct backend_ops ops = *real;
    struct backend wrong = {&ops, cpu->ctx};
    ops.run_node = run_node_wrong;

    /* the CPU engine against itself: every case passes */
    CHECK(run_cases(NULL, ref, cpu, &checks, &failures, log, sizeof(log)) == DR_OK);
    CHECK(checks > 100 && failures == 0);
    CHECK(strstr(log, "== precision fp32 on ") != NULL);
    CHECK(strstr(log, "checks, 0 failed") != NULL && !strstr(log, "FAIL"));
    CHECK(line_says(log, "sgd_update/10x512_nesterov", "ok"));
    if (failures) fputs(log, stdout);

    /* one value of act_forward off by 1e-2: its cases fail, the backward ones pass */
    wrong_op = WRONG_ACT_FWD;
    CHECK(run_cases("act", ref, &wrong, &checks, &failures, log, sizeof(log)) == DR_OK);
    CHECK(checks == 3 * ACT_KIND_COUNT && failures == ACT_KIND_COUNT);
    for (int kind = 0; kind < ACT_KIND_COUNT; kind++) {
        char name[64];
        snprintf(name, sizeof(name), "act_forward/%s_8x64x16x16", act_kind_name((enum act_kind)kind));
        CHECK(line_says(log, name, "FAIL"));
        snprintf(name, sizeof(name), "act_backward/%s_8x64x16x16", act_kind_name((enum act_kind)kind));
        CHECK(line_says(log, name, "ok"));
    }
    char summary[64];
    snprintf(summary, sizeof(summary), "== precision fp32: %d checks, %d failed", 3 * ACT_KIND_COUNT,
             ACT_KIND_COUNT);
    CHECK(strstr(log, summary) != NULL);

    /* one ulp in an SGD node of one item: the exact sgd_update cases fail, the linear
     * forwards after it pass */
    wrong_op = WRONG_SGD_ONE;
    CHECK(run_cases("sgd", ref, &wrong, &checks, &failures, log, sizeof(log)) == DR_OK);
    CHECK(checks == 8 && failures == 2);   /* and sgd_multi (its own cases), unaffected */
    CHECK(line_says(log, "sgd_update/10x512_nesterov", "FAIL"));
    CHECK(line_says(log, "sgd_update/10x512", "FAIL"));
    CHECK(line_says(log, "sgd_linear/10x512", "ok"));

    /* a wrong label: every augmentation case fails on its labels (augment_step's 3 too:
     * every case is a BATCH node) */
    wrong_op = WRONG_BATCH_LABEL;
    CHECK(run_cases("augment", ref, &wrong, &checks, &failures, log, sizeof(log)) == DR_OK);
    CHECK(checks == 11 && failures == 11);
    CHECK(strstr(log, " inf labels ") != NULL);

    /* an op that returns an error: its cases say so and fail */
    wrong_op = WRONG_LINEAR_FWD;
    CHECK(run_cases("linear_forward", ref, &wrong, &checks, &failures, log, sizeof(log)) == DR_OK);
    CHECK(checks == 2 && failures == 2);
    CHECK(strstr(log, "ERROR: ") != NULL && line_says(log, "linear_forward/512-10_n16_bias", "FAIL"));
    wrong_op = WRONG_NONE;
}

int main(void)
{
    struct backend ref = {0}, cpu = {0};
    test_table();
    test_select();
    test_metrics();
    CHECK(backend_cpu_create(&ref, 0) == DR_OK);
    CHECK(backend_cpu_create(&cpu, 0) == DR_OK);
    if (ref.ops && cpu.ops) {
        real = cpu.ops;
        test_against(&ref, &cpu);
    }
    backend_destroy(&cpu);
    backend_destroy(&ref);
    return check_finish("selfcheck harness");
}

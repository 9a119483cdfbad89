/* The selfcheck harness (engine/selfcheck/selfcheck.h): builds the table of cases, chooses
 * from it, and runs each chosen case on the reference engine and on the engine under test,
 * comparing the outputs the case names by its metric against its tolerance. The cases
 * themselves are in engine/selfcheck/selfcheck_cases_*.c, the tools they use in
 * selfcheck_case.c. */
#include "selfcheck.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "kernels/precision.h"
#include "selfcheck_case.h"

_Static_assert(SC_PRECISIONS == PRECISION_COUNT, "a tolerance per precision of precision.h");

/* The groups --only knows (the old parts of the check), each with its heading. */
static const struct {
    const char *name, *heading;
} GROUPS[] = {
    {"conv", "convolutions, forward and backward"},
    {"ops", "every other op of the plan's op table, forward and backward"},
    {"augment", "augmentation: each value of the batch against the reference's"},
    {"train", "training: a small network from the same weights on both engines, then an "
              "evaluation"},
    {"toolbox", "training with the speed-training options, then an evaluation with views"},
    {"plan", "plans: small steps run whole (an engine may fuse nodes) and node by node"},
};
#define GROUP_COUNT ((int)(sizeof(GROUPS) / sizeof(GROUPS[0])))

const char *selfcheck_precision_name(int precision)
{
    return precision_name(precision);
}

/* FNV-1a of the name: the key of a case's input stream. */
static uint32_t name_key(const char *name)
{
    uint32_t h = 2166136261u;
    for (; *name; name++) h = (h ^ (uint8_t)*name) * 16777619u;
    return h;
}

/* ------------------------------------------------------------------ the table */

static int table_build(struct sc_table *t)
{
    int rc = DR_OK;
    TRY(sc_cases_conv(t));
    TRY(sc_cases_ops(t));
    TRY(sc_cases_optim(t));
    TRY(sc_cases_muon(t));
    TRY(sc_cases_train(t));
    TRY(sc_cases_plan(t));
cleanup:
    return rc;
}

/* Whether s is the item of len bytes. */
static int is_item(const char *s, const char *item, size_t len)
{
    return strlen(s) == len && !strncmp(s, item, len);
}

int selfcheck_open(struct selfcheck *sc, const char *only, char *why, size_t whylen)
{
    int rc = DR_OK;
    memset(sc, 0, sizeof(*sc));
    sc->table = calloc(1, sizeof(*sc->table));
    CHECK_ALLOC(sc->table, "the selfcheck table");
    TRY(table_build(sc->table));
    sc->chosen = calloc((size_t)sc->table->count + 1, 1);
    CHECK_ALLOC(sc->chosen, "the selfcheck table");
    if (only && !*only) {
        snprintf(why, whylen, "expected a comma-separated list of case names, their prefixes "
                              "or groups (conv, ops, augment, train, toolbox, plan), got ''");
        rc = DR_ERR_USAGE;
    }
    for (const char *p = only; rc == DR_OK && p && *p;) {
        size_t len = strcspn(p, ",");
        int hits = 0, exact = 0;
        for (int i = 0; i < sc->table->count && len; i++)
            exact |= is_item(sc->table->cases[i].name, p, len);
        for (int i = 0; i < sc->table->count && len; i++) {
            const struct sc_case *c = &sc->table->cases[i];
            if (exact ? is_item(c->name, p, len)
                      : !strncmp(c->name, p, len) || is_item(c->group, p, len)) {
                hits++;
                sc->chosen[i] = 1;
            }
        }
        if (!hits) {
            snprintf(why, whylen, "'%.*s' names no case: give a case name or its prefix (see "
                                  "--list), or a group (conv, ops, augment, train, toolbox, plan)",
                     (int)len, p);
            rc = DR_ERR_USAGE;
        }
        p += len;
        if (*p == ',') p++;
    }
    for (int i = 0; i < sc->table->count; i++) {
        if (!only) sc->chosen[i] = 1;
        sc->chosen_count += sc->chosen[i];
    }
cleanup:
    if (rc != DR_OK) selfcheck_close(sc);
    return rc;
}

void selfcheck_close(struct selfcheck *sc)
{
    if (sc->table) free(sc->table->cases);
    free(sc->table);
    free(sc->chosen);
    memset(sc, 0, sizeof(*sc));
}

void selfcheck_list(FILE *out, const struct selfcheck *sc)
{
    for (int i = 0; i < sc->table->count; i++) {
        const struct sc_case *c = &sc->table->cases[i];
        if (!sc->chosen[i]) continue;
        fprintf(out, "%-48s %-8s %s\n", c->name, c->group, sc_metric_name(c->metric));
    }
}

/* ------------------------------------------------------------------ running a case */

/* A slot's values on one side as floats (integer tensors converted) into *vals. */
static int side_values(float **vals, size_t *count, const struct sc_side *s, int slot)
{
    int rc = DR_OK;
    const struct tensor *t = &s->t[slot];
    void *raw = NULL;
    size_t n;
    *vals = NULL;
    if (s->host[slot]) {
        n = s->host_n[slot];
        *vals = malloc((n ? n : 1) * sizeof(float));
        CHECK_ALLOC(*vals, "selfcheck output");
        memcpy(*vals, s->host[slot], n * sizeof(float));
        *count = n;
        return DR_OK;
    }
    EXPECT(t->data, "selfcheck: output slot %d was not allocated", slot);
    n = tensor_count(t);
    *count = n;
    *vals = malloc((n ? n : 1) * sizeof(float));
    raw = malloc((n ? n : 1) * sizeof(int32_t));
    CHECK_ALLOC(*vals, "selfcheck output");
    CHECK_ALLOC(raw, "selfcheck output");
    TRY(s->be->ops->tensor_read(s->be->ctx, t->kind == TENSOR_I32 || t->kind == TENSOR_U8
                                                ? raw : (void *)*vals, t));
    if (t->kind == TENSOR_I32)
        for (size_t i = 0; i < n; i++) (*vals)[i] = (float)((int32_t *)raw)[i];
    if (t->kind == TENSOR_U8)
        for (size_t i = 0; i < n; i++) (*vals)[i] = (float)((uint8_t *)raw)[i];
cleanup:
    free(raw);
    if (rc != DR_OK) {
        free(*vals);
        *vals = NULL;
    }
    return rc;
}

/* Folds output slot's error into *err / *worst. */
static int compare_output(const struct sc_env *e, const struct sc_case *c, int slot,
                          double *err, const char **worst)
{
    int rc = DR_OK;
    float *ref = NULL, *test = NULL;
    size_t nr = 0, nt = 0;
    double d;
    TRY(side_values(&ref, &nr, &e->side[0], slot));
    TRY(side_values(&test, &nt, &e->side[1], slot));
    EXPECT(nr == nt, "selfcheck: output %s has %zu values on one engine, %zu on the other",
           e->slot_name[slot], nr, nt);
    const struct tensor *t = &e->side[0].t[slot];
    if (!e->side[0].host[slot] && (t->kind == TENSOR_I32 || t->kind == TENSOR_U8))
        d = sc_error(SC_EXACT_BITS, test, ref, nr) ? INFINITY : 0.0;
    else
        d = sc_error(c->metric, test, ref, nr);
    if (!(d <= *err)) {
        *err = isnan(d) ? INFINITY : d;
        *worst = e->slot_name[slot];
    }
cleanup:
    free(ref);
    free(test);
    return rc;
}

/* Prints each value of c's host slots, reference against test. */
static void show_values(FILE *out, const struct sc_env *e)
{
    for (int slot = 0; slot < SC_SLOTS; slot++) {
        const float *r = e->side[0].host[slot], *t = e->side[1].host[slot];
        size_t n = e->side[0].host_n[slot];
        for (size_t i = 0; r && t && i < n; i++) {
            char label[48];
            if (n > 1) snprintf(label, sizeof(label), "%s[%zu]", e->slot_name[slot], i);
            else snprintf(label, sizeof(label), "%s", e->slot_name[slot]);
            double d = fabs((double)t[i] - (double)r[i]) / fmax(fabs((double)r[i]), 1e-6);
            fprintf(out, "    %-12s ref %.6f  test %.6f  rel diff %.2e\n", label, r[i], t[i], d);
        }
    }
}

/* Runs c on both sides; its worst error and output into *err / *worst. */
static int case_run(FILE *out, struct sc_env *e, const struct sc_case *c, double *err,
                    const char **worst)
{
    int rc = DR_OK;
    *err = 0.0;
    *worst = NULL;
    e->key = name_key(c->name);
    e->draws = 0;
    TRY(c->build(e, c));
    for (int s = 0; s < 2; s++) TRY(c->run(&e->side[s], c));
    for (int i = 0; i < c->n_outputs; i++)
        TRY(compare_output(e, c, c->outputs[i], err, worst));
    if (!*worst && c->n_outputs) *worst = e->slot_name[c->outputs[0]];   /* all equal */
    if (c->show) show_values(out, e);
cleanup:
    sc_env_clear(e);
    return rc;
}

int selfcheck_run(FILE *out, const struct selfcheck *sc, struct backend *ref,
                  struct backend *test, int precision, int *checks, int *failures)
{
    struct sc_env e;
    const char *pname = selfcheck_precision_name(precision);
    const char *group = NULL;
    memset(&e, 0, sizeof(e));
    e.side[0].be = ref;
    e.side[1].be = test;
    e.side[0].precision = e.side[1].precision = e.precision = precision;
    *checks = *failures = 0;
    if (!pname) return DR_ERR_USAGE;
    /* cases compare runs of the engine under test bit for bit (fused with node by node,
     * replayed with eager): it must give the same bits for the same inputs every run */
    for (int s = 0; s < 2; s++) {
        const struct backend *b = s ? test : ref;
        const int rc = b->ops->set_deterministic ? b->ops->set_deterministic(b->ctx, 1) : DR_OK;
        if (rc != DR_OK) return rc;
    }
    fprintf(out, "== precision %s on %s\n", pname, test->ops->device_name(test->ctx));
    for (int i = 0; i < sc->table->count; i++) {
        const struct sc_case *c = &sc->table->cases[i];
        double err;
        const char *worst;
        if (!sc->chosen[i]) continue;
        if (!group || strcmp(group, c->group)) {
            group = c->group;
            for (int g = 0; g < GROUP_COUNT; g++)
                if (!strcmp(GROUPS[g].name, group)) fprintf(out, "%s\n", GROUPS[g].heading);
        }
        int rc = case_run(out, &e, c, &err, &worst);
        (*checks)++;
        if (rc != DR_OK) {
            (*failures)++;
            fprintf(out, "  %-48s ERROR: %s  FAIL\n", c->name, dr_status_str(rc));
        } else {
            double tol = c->tol[precision];
            int ok = err <= tol;
            if (!ok) (*failures)++;
            fprintf(out, "  %-48s err %9.2e %-7s (%s, tol %.2g)  %s\n", c->name, err,
                    worst ? worst : "", sc_metric_name(c->metric), tol, ok ? "ok" : "FAIL");
        }
        fflush(out);
    }
    fprintf(out, "== precision %s: %d checks, %d failed\n\n", pname, *checks,
            *failures);
    fflush(out);
    return DR_OK;
}

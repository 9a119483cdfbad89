/* The tools of the selfcheck's cases (engine/selfcheck/selfcheck_case.h): the table, tensors in
 * slots on both engines, identical inputs, host outputs, and the comparison metrics. */
#include "selfcheck_case.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "kernels/precision.h"
#include "kernels/rng.h"

#define SC_SEED 20240611u

/* ------------------------------------------------------------------ the table */

int sc_table_add(struct sc_table *t, const struct sc_case *c)
{
    if (grow_reserve(&t->cases, &t->cap, t->count + 1, 64, sizeof(*t->cases)) != DR_OK)
        return DR_ERR_NOMEM;
    t->cases[t->count++] = *c;
    return DR_OK;
}

void sc_name(struct sc_case *c, const char *op, const char *fmt, ...)
{
    va_list ap;
    int len = snprintf(c->name, sizeof(c->name), "%s/", op);
    va_start(ap, fmt);
    if (len > 0 && (size_t)len < sizeof(c->name))
        vsnprintf(c->name + len, sizeof(c->name) - (size_t)len, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ metrics */

const char *sc_metric_name(enum sc_metric m)
{
    static const char *const names[] = {"maxrel", "elemrel", "bits"};
    _Static_assert(sizeof(names) / sizeof(names[0]) == SC_METRIC_COUNT, "a name per metric");
    return (unsigned)m < SC_METRIC_COUNT ? names[m] : "?";
}

double sc_error(enum sc_metric m, const float *test, const float *ref, size_t count)
{
    double worst = 0.0, scale = 1e-6;
    for (size_t i = 0; i < count; i++) {
        double d = fabs((double)test[i] - (double)ref[i]);
        switch (m) {
        case SC_MAX_REL:
            if (fabs((double)ref[i]) > scale) scale = fabs((double)ref[i]);
            break;
        case SC_ELEM_REL:
            d = test[i] == ref[i] ? 0.0 : d / fmax(fabs((double)ref[i]), 1e-6);
            break;
        case SC_EXACT_BITS:
        case SC_METRIC_COUNT:
            d = memcmp(&test[i], &ref[i], sizeof(float)) != 0;
            worst += d;
            continue;
        }
        if (!(d <= worst)) worst = isnan(d) ? INFINITY : d;
    }
    return m == SC_MAX_REL ? worst / scale : worst;
}

/* ------------------------------------------------------------------ tensors */

int sc_tensor(struct sc_env *e, int slot, const char *name, enum tensor_kind kind, int n, int c,
              int h, int w)
{
    int rc = DR_OK;
    EXPECT(slot >= 0 && slot < SC_SLOTS && !e->side[0].t[slot].data && !e->side[0].host[slot],
           "selfcheck: slot %d allocated twice", slot);
    e->slot_name[slot] = name;
    for (int s = 0; s < 2; s++) {
        struct sc_side *side = &e->side[s];
        side->t[slot] = (struct tensor){NULL, kind, n, c, h, w};
        TRY(side->be->ops->tensor_alloc(side->be->ctx, &side->t[slot]));
    }
cleanup:
    return rc;
}

void sc_set_n(struct sc_env *e, int slot, int n)
{
    e->side[0].t[slot].n = n;
    e->side[1].t[slot].n = n;
}

void sc_uniform(struct sc_env *e, float *x, size_t count, float lo, float hi)
{
    for (size_t i = 0; i < count; i += 4) {
        struct rng4 r = rng_draw(SC_SEED, SC_RNG_STREAM, e->key, e->draws++, 0);
        for (size_t j = 0; j < 4 && i + j < count; j++)
            x[i + j] = lo + (hi - lo) * rng_unit(r.v[j]);
    }
}

/* x rounded to the nearest value of the precision's type (ties to even). */
static float round_to(float x, int precision)
{
    int bits = precision == PRECISION_FP16 ? 11 : precision == PRECISION_BF16 ? 8 : 0;
    int e;
    if (bits == 0 || x == 0.0f || !isfinite(x)) return x;
    if (precision == PRECISION_FP16 && fabsf(x) < ldexpf(1.0f, -14))   /* fp16 subnormal */
        return ldexpf(rintf(ldexpf(x, 24)), -24);
    float m = frexpf(x, &e);
    return ldexpf(rintf(ldexpf(m, bits)), e - bits);
}

int sc_write(struct sc_env *e, int slot, float *host)
{
    int rc = DR_OK;
    struct sc_side *ref = &e->side[0], *test = &e->side[1];
    struct tensor *tr = &ref->t[slot], *tt = &test->t[slot];
    size_t n = tensor_count(tr);
    EXPECT(tr->data && tt->data, "selfcheck: slot %d written before allocation", slot);
    if (tr->kind == TENSOR_PARAM)
        for (size_t i = 0; i < n; i++) host[i] = round_to(host[i], e->precision);
    TRY(test->be->ops->tensor_write(test->be->ctx, tt, host));
    if (tr->kind == TENSOR_ACT) TRY(test->be->ops->tensor_read(test->be->ctx, host, tt));
    TRY(ref->be->ops->tensor_write(ref->be->ctx, tr, host));
cleanup:
    return rc;
}

int sc_random(struct sc_env *e, int slot, float lo, float hi)
{
    int rc = DR_OK;
    size_t n = tensor_count(&e->side[0].t[slot]);
    float *host = malloc((n ? n : 1) * sizeof(float));
    CHECK_ALLOC(host, "selfcheck input");
    sc_uniform(e, host, n, lo, hi);
    TRY(sc_write(e, slot, host));
cleanup:
    free(host);
    return rc;
}

int sc_write_raw(struct sc_env *e, int slot, const void *host)
{
    int rc = DR_OK;
    for (int s = 1; s >= 0; s--) {
        struct sc_side *side = &e->side[s];
        EXPECT(side->t[slot].data, "selfcheck: slot %d written before allocation", slot);
        TRY(side->be->ops->tensor_write(side->be->ctx, &side->t[slot], host));
    }
cleanup:
    return rc;
}

int sc_host(struct sc_env *e, int slot, const char *name, size_t count)
{
    int rc = DR_OK;
    EXPECT(slot >= 0 && slot < SC_SLOTS && !e->side[0].t[slot].data && !e->side[0].host[slot],
           "selfcheck: slot %d allocated twice", slot);
    e->slot_name[slot] = name;
    for (int s = 0; s < 2; s++) {
        e->side[s].host[slot] = calloc(count ? count : 1, sizeof(float));
        CHECK_ALLOC(e->side[s].host[slot], "selfcheck output");
        e->side[s].host_n[slot] = count;
    }
cleanup:
    return rc;
}

void sc_env_clear(struct sc_env *e)
{
    for (int s = 0; s < 2; s++) {
        struct sc_side *side = &e->side[s];
        for (int i = 0; i < SC_SLOTS; i++) {
            if (side->t[i].data) side->be->ops->tensor_free(side->be->ctx, &side->t[i]);
            side->t[i] = (struct tensor){0};
            free(side->host[i]);
            side->host[i] = NULL;
            side->host_n[i] = 0;
        }
    }
    for (int i = 0; i < SC_SLOTS; i++) e->slot_name[i] = NULL;
}

/* ------------------------------------------------------------------ networks */

struct layer_spec *sc_layer(struct net_spec *spec, const char *name, enum layer_type type,
                            const char *in1, const char *in2)
{
    struct layer_spec *l = net_spec_add(spec, type);
    if (!l) return NULL;
    snprintf(l->name, sizeof(l->name), "%s", name);
    if (in1[0]) snprintf(l->inputs[l->n_inputs++], GRAPH_NAME_MAX, "%s", in1);
    if (in2[0]) snprintf(l->inputs[l->n_inputs++], GRAPH_NAME_MAX, "%s", in2);
    return l;
}

/* Instantiates a graph on a backend (see model.h): its tensors, their initialisation,
 * and the weight average; the passes themselves are built as plans in model_plan.c. */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/alloc.h"
#include "init.h"
#include "base/status.h"
#include "whiten.h"

static double model_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Time an op only when profiling; synchronises so device time is attributed. */
static double prof_start(struct model *m)
{
    if (!m->prof) return 0.0;
    m->be->ops->synchronize(m->be->ctx);
    return model_now();
}

static double prof_stop(struct model *m, double t0)
{
    if (!m->prof) return 0.0;
    m->be->ops->synchronize(m->be->ctx);
    return model_now() - t0;
}

static int tensor_new(struct model *m, struct tensor *t, enum tensor_kind kind, int n, int c,
                      int h, int w)
{
    t->kind = kind;
    t->n = n;
    t->c = c;
    t->h = h;
    t->w = w;
    t->data = NULL;
    return m->be->ops->tensor_alloc(m->be->ctx, t);
}

static void tensor_del(struct model *m, struct tensor *t)
{
    if (t && t->data) m->be->ops->tensor_free(m->be->ctx, t);
    if (t) t->data = NULL;
}

/* Marks layers from which the output is reachable, and for every (layer, input slot)
 * whether its gradient adds to one already written by a later consumer. Without its
 * scratch table it cannot tell a first write from a later one: DR_ERR_NOMEM. */
static int model_plan_backward(struct model *m)
{
    int rc = DR_OK;
    const struct graph *g = m->g;
    unsigned char *written = dr_calloc((size_t)g->count, 1);
    CHECK_ALLOC(written, "the backward plan");
    memset(m->live, 0, (size_t)g->count);
    m->live[g->output] = 1;
    for (int i = g->count - 1; i > 0; i--) {
        if (!m->live[i]) continue;
        for (int s = 0; s < g->layers[i].n_inputs; s++) m->live[g->layers[i].inputs[s]] = 1;
    }
    for (int i = g->count - 1; i > 0; i--) {
        if (!m->live[i]) continue;
        for (int s = 0; s < g->layers[i].n_inputs; s++) {
            int j = g->layers[i].inputs[s];
            m->accum[i * GRAPH_MAX_INPUTS + s] = written[j];
            written[j] = 1;
        }
    }
cleanup:
    free(written);
    return rc;
}

int model_create(struct model *m, const struct graph *g, struct backend *be, int batch_cap)
{
    int rc = DR_OK;
    memset(m, 0, sizeof(*m));
    m->g = g;
    m->be = be;
    m->batch_cap = batch_cap;
    size_t nl = (size_t)g->count, np = (size_t)(g->n_params ? g->n_params : 1);
    m->y = dr_calloc(nl, sizeof(*m->y));
    m->dy = dr_calloc(nl, sizeof(*m->dy));
    m->bn_mean = dr_calloc(nl, sizeof(*m->bn_mean));
    m->bn_invstd = dr_calloc(nl, sizeof(*m->bn_invstd));
    m->bn_rmean = dr_calloc(nl, sizeof(*m->bn_rmean));
    m->bn_rvar = dr_calloc(nl, sizeof(*m->bn_rvar));
    m->bn_coef = dr_calloc(nl, sizeof(*m->bn_coef));
    m->bn_vec = dr_calloc(nl, sizeof(*m->bn_vec));
    m->p = dr_calloc(np, sizeof(*m->p));
    m->dp = dr_calloc(np, sizeof(*m->dp));
    m->v = dr_calloc(np, sizeof(*m->v));
    m->live = dr_calloc(nl, 1);
    m->accum = dr_calloc(nl * GRAPH_MAX_INPUTS, 1);
    if (!m->y || !m->dy || !m->bn_mean || !m->bn_invstd || !m->bn_rmean || !m->bn_rvar ||
        !m->bn_coef || !m->bn_vec || !m->p || !m->dp || !m->v || !m->live || !m->accum)
        FAIL(DR_ERR_NOMEM, "out of memory allocating the model tables");
    TRY(model_plan_backward(m));

    for (int i = 0; i < g->count; i++) {
        const struct layer *l = &g->layers[i];
        TRY(tensor_new(m, &m->y[i], TENSOR_ACT, batch_cap, l->c, l->h, l->w));
        if (i > 0 && m->live[i]) TRY(tensor_new(m, &m->dy[i], TENSOR_ACT, batch_cap, l->c, l->h, l->w));
        if (l->spec.type == LAYER_BN) {
            int parts = l->spec.splits > 1 ? l->spec.splits : 1;
            TRY(tensor_new(m, &m->bn_mean[i], TENSOR_F32, parts * l->c, 1, 1, 1));
            TRY(tensor_new(m, &m->bn_invstd[i], TENSOR_F32, parts * l->c, 1, 1, 1));
            TRY(tensor_new(m, &m->bn_rmean[i], TENSOR_F32, l->c, 1, 1, 1));
            TRY(tensor_new(m, &m->bn_rvar[i], TENSOR_F32, l->c, 1, 1, 1));
            TRY(tensor_new(m, &m->bn_coef[i], TENSOR_F32,
                           PLAN_BN_COEF_PER_CHANNEL * parts * l->c, 1, 1, 1));
            TRY(tensor_new(m, &m->bn_vec[i], TENSOR_F32,
                           PLAN_BNV_COUNT * (int)plan_bn_vec_stride(l->c), 1, 1, 1));
        }
    }
    for (int k = 0; k < g->n_params; k++) {
        const struct param_desc *d = &g->params[k];
        TRY(tensor_new(m, &m->p[k], TENSOR_PARAM, d->n, d->c, d->h, d->w));
        TRY(tensor_new(m, &m->dp[k], TENSOR_PARAM, d->n, d->c, d->h, d->w));
        TRY(tensor_new(m, &m->v[k], TENSOR_PARAM, d->n, d->c, d->h, d->w));
    }
    const struct layer *out = &g->layers[g->output];
    TRY(tensor_new(m, &m->probs, TENSOR_ACT, batch_cap, out->c, out->h, out->w));
    TRY(tensor_new(m, &m->labels, TENSOR_I32, batch_cap, 1, 1, 1));
    TRY(tensor_new(m, &m->stats, TENSOR_F32, 2, 1, 1, 1));
cleanup:
    if (rc != DR_OK) model_free(m);
    return rc;
}

/* Releases tensor i of a per-layer or per-parameter table that may be missing (a
 * model_create that ran out of memory half-way). */
static void table_del(struct model *m, struct tensor *table, int i)
{
    if (table) tensor_del(m, &table[i]);
}

void model_free(struct model *m)
{
    if (!m->g) return;
    for (int i = 0; i < m->g->count; i++) {
        table_del(m, m->y, i);
        table_del(m, m->dy, i);
        table_del(m, m->bn_mean, i);
        table_del(m, m->bn_invstd, i);
        table_del(m, m->bn_rmean, i);
        table_del(m, m->bn_rvar, i);
        table_del(m, m->bn_coef, i);
        table_del(m, m->bn_vec, i);
        table_del(m, m->avg_rmean, i);
        table_del(m, m->avg_rvar, i);
    }
    for (int k = 0; k < m->g->n_params; k++) {
        table_del(m, m->p, k);
        table_del(m, m->dp, k);
        table_del(m, m->v, k);
        table_del(m, m->avg, k);
    }
    tensor_del(m, &m->probs);
    tensor_del(m, &m->labels);
    tensor_del(m, &m->stats);
    free(m->y);
    free(m->dy);
    free(m->bn_mean);
    free(m->bn_invstd);
    free(m->bn_rmean);
    free(m->bn_rvar);
    free(m->bn_coef);
    free(m->bn_vec);
    free(m->p);
    free(m->dp);
    free(m->v);
    free(m->avg);
    free(m->avg_rmean);
    free(m->avg_rvar);
    free(m->live);
    free(m->accum);
    free(m->sgd_items);
    free(m->lerp_items);
    memset(m, 0, sizeof(*m));
}

int model_init_params(struct model *m, uint64_t seed)
{
    int rc = DR_OK;
    float *host = NULL;
    size_t cap = 0;
    const struct graph *g = m->g;
    for (int k = 0; k < g->n_params; k++) {
        const struct param_desc *d = &g->params[k];
        size_t count = tensor_count(&m->p[k]);
        if (count > cap) {
            free(host);
            host = dr_malloc(count * sizeof(float));
            CHECK_ALLOC(host, "parameter initialisation buffer");
            cap = count;
        }
        if (d->init == PARAM_INIT_WHITEN) {
            memset(host, 0, count * sizeof(float));   /* model_init_whiten fills it */
        } else if (d->init_bound > 0.0f) {
            init_uniform(host, count, seed, k, d->init_bound);
        } else {
            for (size_t i = 0; i < count; i++) host[i] = d->init_value;
        }
        if (d->init == PARAM_INIT_DIRAC) init_dirac(host, d->n, d->c, d->h);
        if (d->init_std > 0.0f) init_rescale_std(host, count, d->init_std);
        TRY(m->be->ops->tensor_write(m->be->ctx, &m->p[k], host));
        TRY(m->be->ops->tensor_zero(m->be->ctx, &m->v[k]));
    }
    for (int i = 0; i < g->count; i++) {
        if (g->layers[i].spec.type != LAYER_BN) continue;
        size_t c = (size_t)g->layers[i].c;
        if (c > cap) {
            free(host);
            host = dr_malloc(c * sizeof(float));
            CHECK_ALLOC(host, "BN statistics buffer");
            cap = c;
        }
        for (size_t j = 0; j < c; j++) host[j] = 1.0f;
        TRY(m->be->ops->tensor_write(m->be->ctx, &m->bn_rvar[i], host));
        TRY(m->be->ops->tensor_zero(m->be->ctx, &m->bn_rmean[i]));
    }
cleanup:
    free(host);
    return rc;
}

int model_init_whiten(struct model *m, const struct dataset *train)
{
    int rc = DR_OK;
    float *host = NULL;
    const struct graph *g = m->g;
    for (int k = 0; k < g->n_params; k++) {
        const struct param_desc *d = &g->params[k];
        if (d->init != PARAM_INIT_WHITEN) continue;
        const struct layer_spec *ls = &g->layers[d->layer].spec;
        int count = ls->whiten_images < train->count ? ls->whiten_images : train->count;
        if (count < 1)
            FAIL(DR_ERR_CONFIG, "layer '%s': no training images to compute the whitening from",
                 ls->name);
        if (count < ls->whiten_images)
            dr_eprintf("dawnrun: note: layer '%s' computes its whitening from the %d training "
                       "images there are (images = %d)\n",
                       ls->name, count, ls->whiten_images);
        host = dr_malloc(tensor_count(&m->p[k]) * sizeof(float));
        CHECK_ALLOC(host, "the whitening filters");
        TRY(whiten_filters(host, train->images, count, ls->k, ls->eps, ls->negate));
        TRY(m->be->ops->tensor_write(m->be->ctx, &m->p[k], host));
        free(host);
        host = NULL;
    }
cleanup:
    free(host);
    return rc;
}

/* Lists every averaged tensor with its live twin, parameters then BN statistics, into
 * m->lerp_items (once). */
static int average_items(struct model *m)
{
    int rc = DR_OK;
    const struct graph *g = m->g;
    if (m->lerp_items) return DR_OK;
    size_t cap = (size_t)g->n_params + 2 * (size_t)g->count + 1;
    struct lerp_item *items = dr_calloc(cap, sizeof(*items));
    int n = 0;
    CHECK_ALLOC(items, "the weight-average list");
    for (int k = 0; k < g->n_params; k++) items[n++] = (struct lerp_item){&m->avg[k], &m->p[k]};
    for (int i = 0; i < g->count; i++) {
        if (g->layers[i].spec.type != LAYER_BN) continue;
        items[n++] = (struct lerp_item){&m->avg_rmean[i], &m->bn_rmean[i]};
        items[n++] = (struct lerp_item){&m->avg_rvar[i], &m->bn_rvar[i]};
    }
    m->lerp_items = items;
    m->lerp_count = n;
cleanup:
    return rc;
}

/* Every averaged tensor: one LERP node over the list, run alone (plan_run_op refuses it,
 * naming the engine, where the engine does not run LERP nodes). */
static int average_each(struct model *m, float t, int copy_back)
{
    const union plan_params par = {.lerp = {m->lerp_items, m->lerp_count, t, copy_back}};
    return plan_run_op(m->be, PLAN_LERP, NULL, 0, NULL, 0, 0, &par);
}

/* Releases the averaged copies and their tables (a start that ran out of memory). */
static void average_drop(struct model *m)
{
    for (int i = 0; i < m->g->count; i++) {
        table_del(m, m->avg_rmean, i);
        table_del(m, m->avg_rvar, i);
    }
    for (int k = 0; k < m->g->n_params; k++) table_del(m, m->avg, k);
    free(m->avg);
    free(m->avg_rmean);
    free(m->avg_rvar);
    free(m->lerp_items);
    m->avg = m->avg_rmean = m->avg_rvar = NULL;
    m->lerp_items = NULL;
    m->lerp_count = 0;
}

int model_average_start(struct model *m)
{
    int rc = DR_OK;
    const struct graph *g = m->g;
    if (!m->avg) {
        size_t nl = (size_t)g->count, np = (size_t)(g->n_params ? g->n_params : 1);
        m->avg = dr_calloc(np, sizeof(*m->avg));
        m->avg_rmean = dr_calloc(nl, sizeof(*m->avg_rmean));
        m->avg_rvar = dr_calloc(nl, sizeof(*m->avg_rvar));
        if (!m->avg || !m->avg_rmean || !m->avg_rvar)
            FAIL(DR_ERR_NOMEM, "out of memory allocating the weight-average tables");
        for (int k = 0; k < g->n_params; k++) {
            const struct tensor *p = &m->p[k];
            TRY(tensor_new(m, &m->avg[k], TENSOR_PARAM, p->n, p->c, p->h, p->w));
        }
        for (int i = 0; i < g->count; i++) {
            if (g->layers[i].spec.type != LAYER_BN) continue;
            TRY(tensor_new(m, &m->avg_rmean[i], TENSOR_F32, g->layers[i].c, 1, 1, 1));
            TRY(tensor_new(m, &m->avg_rvar[i], TENSOR_F32, g->layers[i].c, 1, 1, 1));
        }
    }
    TRY(average_items(m));
    TRY(average_each(m, 1.0f, 0));
cleanup:
    if (rc == DR_ERR_NOMEM) average_drop(m);   /* all or nothing: a later start retries */
    return rc;
}

int model_average_update(struct model *m, float t, int copy_back)
{
    if (!m->avg)
        return dr_report(DR_ERR_INTERNAL, __FILE__, __LINE__, NULL,
                         "weight averaging used before model_average_start");
    double t0 = prof_start(m);
    int rc = average_each(m, t, copy_back);
    if (m->prof) m->prof->optimizer_s += prof_stop(m, t0);   /* part of the update */
    return rc;
}

void model_average_swap(struct model *m)
{
    if (!m->avg) return;
    for (int k = 0; k < m->g->n_params; k++) {
        struct tensor t = m->p[k];
        m->p[k] = m->avg[k];
        m->avg[k] = t;
    }
    for (int i = 0; i < m->g->count; i++) {
        if (m->g->layers[i].spec.type != LAYER_BN) continue;
        struct tensor a = m->bn_rmean[i], b = m->bn_rvar[i];
        m->bn_rmean[i] = m->avg_rmean[i];
        m->avg_rmean[i] = a;
        m->bn_rvar[i] = m->avg_rvar[i];
        m->avg_rvar[i] = b;
    }
}

int model_set_batch(struct model *m, int n)
{
    if (n < 1 || n > m->batch_cap)
        return dr_report(DR_ERR_INTERNAL, __FILE__, __LINE__, NULL,
                         "a batch of %d images for a model allocated for 1 to %d", n,
                         m->batch_cap);
    for (int i = 0; i < m->g->count; i++) {
        m->y[i].n = n;
        m->dy[i].n = n;
    }
    m->probs.n = n;
    m->labels.n = n;
    return DR_OK;
}

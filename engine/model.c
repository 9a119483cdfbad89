/* Instantiates a graph on a backend and runs forward, loss, backward and SGD through
 * the backend table (see model.h). */
#include "model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../base/alloc.h"
#include "init.h"
#include "../base/status.h"
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
    m->p = dr_calloc(np, sizeof(*m->p));
    m->dp = dr_calloc(np, sizeof(*m->dp));
    m->v = dr_calloc(np, sizeof(*m->v));
    m->live = dr_calloc(nl, 1);
    m->accum = dr_calloc(nl * GRAPH_MAX_INPUTS, 1);
    if (!m->y || !m->dy || !m->bn_mean || !m->bn_invstd || !m->bn_rmean || !m->bn_rvar ||
        !m->p || !m->dp || !m->v || !m->live || !m->accum)
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
    free(m->p);
    free(m->dp);
    free(m->v);
    free(m->avg);
    free(m->avg_rmean);
    free(m->avg_rvar);
    free(m->live);
    free(m->accum);
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

/* Visits every averaged tensor with its live twin: parameters, then BN statistics. */
static int average_each(struct model *m, float t, int copy_back)
{
    int rc = DR_OK;
    const struct backend_ops *ops = m->be->ops;
    for (int k = 0; k < m->g->n_params; k++)
        TRY(ops->param_lerp(m->be->ctx, &m->avg[k], &m->p[k], t, copy_back));
    for (int i = 0; i < m->g->count; i++) {
        if (m->g->layers[i].spec.type != LAYER_BN) continue;
        TRY(ops->param_lerp(m->be->ctx, &m->avg_rmean[i], &m->bn_rmean[i], t, copy_back));
        TRY(ops->param_lerp(m->be->ctx, &m->avg_rvar[i], &m->bn_rvar[i], t, copy_back));
    }
cleanup:
    return rc;
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
    m->avg = m->avg_rmean = m->avg_rvar = NULL;
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

/* The optional bias parameter of a conv/linear layer, or NULL. */
static struct tensor *layer_bias(const struct layer *l, struct tensor *set)
{
    return (l->spec.bias && l->param_count > 1) ? &set[l->param_first + 1] : NULL;
}

static int layer_forward(struct model *m, int i, int train)
{
    const struct backend_ops *ops = m->be->ops;
    void *ctx = m->be->ctx;
    const struct layer *l = &m->g->layers[i];
    const struct layer_info *info = layer_info(l->spec.type);
    struct tensor *y = &m->y[i];
    const struct tensor *x = &m->y[l->inputs[0]];
    struct tensor *p = &m->p[l->param_first];
    switch (info ? info->kind : LAYER_KIND_INPUT) {
    case LAYER_KIND_CONV:
    case LAYER_KIND_WHITEN: {
        struct conv_attr a = {l->spec.k, l->spec.stride, l->spec.pad};
        return ops->conv_forward(ctx, y, x, p, layer_bias(l, m->p), &a);
    }
    case LAYER_KIND_BN: {
        struct bn_attr a = {l->spec.eps, l->spec.momentum, l->spec.splits};
        if (train)
            return ops->bn_forward_train(ctx, y, &m->bn_mean[i], &m->bn_invstd[i], &m->bn_rmean[i],
                                         &m->bn_rvar[i], x, &p[0], &p[1], &a);
        return ops->bn_forward_eval(ctx, y, x, &p[0], &p[1], &m->bn_rmean[i], &m->bn_rvar[i], &a);
    }
    case LAYER_KIND_ACT: return ops->act_forward(ctx, y, x, info->act, l->spec.alpha);
    case LAYER_KIND_POOL: {
        struct pool_attr a = {info->pool, l->spec.k, l->spec.k, l->spec.stride, l->spec.stride};
        return ops->pool_forward(ctx, y, x, &a);
    }
    case LAYER_KIND_GLOBAL_POOL: {
        struct pool_attr a = {info->pool, l->in_h, l->in_w, l->in_h, l->in_w};
        return ops->pool_forward(ctx, y, x, &a);
    }
    case LAYER_KIND_CONCAT: {
        const struct tensor *xs[GRAPH_MAX_INPUTS];
        for (int s = 0; s < l->n_inputs; s++) xs[s] = &m->y[l->inputs[s]];
        return ops->concat_forward(ctx, y, xs, l->n_inputs);
    }
    case LAYER_KIND_ADD: return ops->add_forward(ctx, y, x, &m->y[l->inputs[1]]);
    case LAYER_KIND_FLATTEN: return ops->flatten_forward(ctx, y, x);
    case LAYER_KIND_LINEAR: return ops->linear_forward(ctx, y, x, p, layer_bias(l, m->p));
    case LAYER_KIND_SCALE: return ops->scale_forward(ctx, y, x, l->spec.scale);
    case LAYER_KIND_INPUT:
    case LAYER_KIND_SHORTCUT:   /* graph_build resolves it */
        break;
    }
    return dr_report(DR_ERR_INTERNAL, __FILE__, __LINE__, NULL, "layer '%s': no forward for type %d",
                     l->spec.name, (int)l->spec.type);
}

int model_forward(struct model *m, int train)
{
    int rc = DR_OK;
    for (int i = 1; i < m->g->count; i++) {
        if (!m->live[i]) continue;
        double t0 = prof_start(m);
        TRY(layer_forward(m, i, train));
        if (m->prof) m->prof->forward_s[m->g->layers[i].spec.type] += prof_stop(m, t0);
    }
cleanup:
    return rc;
}

int model_loss(struct model *m, float smoothing)
{
    double t0 = prof_start(m);
    int rc = m->be->ops->xent_forward(m->be->ctx, &m->stats, &m->probs, model_logits(m),
                                      &m->labels, smoothing);
    if (m->prof) m->prof->loss_s += prof_stop(m, t0);
    return rc;
}

/* Gradient tensor for input slot s of layer l, or NULL when the input is the image. */
static struct tensor *input_grad(struct model *m, const struct layer *l, int s)
{
    return l->inputs[s] == 0 ? NULL : &m->dy[l->inputs[s]];
}

static int layer_backward(struct model *m, int i)
{
    const struct backend_ops *ops = m->be->ops;
    void *ctx = m->be->ctx;
    const struct layer *l = &m->g->layers[i];
    const struct layer_info *info = layer_info(l->spec.type);
    const unsigned char *acc = &m->accum[i * GRAPH_MAX_INPUTS];
    const struct tensor *dy = &m->dy[i];
    const struct tensor *x = &m->y[l->inputs[0]];
    struct tensor *dx = input_grad(m, l, 0);
    struct tensor *p = &m->p[l->param_first], *dp = &m->dp[l->param_first];
    switch (info ? info->kind : LAYER_KIND_INPUT) {
    case LAYER_KIND_CONV:
    case LAYER_KIND_WHITEN: {
        struct conv_attr a = {l->spec.k, l->spec.stride, l->spec.pad};
        return ops->conv_backward(ctx, dx, dp, layer_bias(l, m->dp), dy, x, p, &a, acc[0]);
    }
    case LAYER_KIND_BN: /* dx may be NULL: the parameter gradients are still needed */
        return ops->bn_backward(ctx, dx, &dp[0], &dp[1], dy, x, &p[0], &m->bn_mean[i],
                                &m->bn_invstd[i], acc[0]);
    case LAYER_KIND_ACT:
        if (!dx) return DR_OK;
        return ops->act_backward(ctx, dx, dy, x, info->act, l->spec.alpha, acc[0]);
    case LAYER_KIND_POOL: {
        if (!dx) return DR_OK;
        struct pool_attr a = {info->pool, l->spec.k, l->spec.k, l->spec.stride, l->spec.stride};
        return ops->pool_backward(ctx, dx, dy, x, &m->y[i], &a, acc[0]);
    }
    case LAYER_KIND_GLOBAL_POOL: {
        if (!dx) return DR_OK;
        struct pool_attr a = {info->pool, l->in_h, l->in_w, l->in_h, l->in_w};
        return ops->pool_backward(ctx, dx, dy, x, &m->y[i], &a, acc[0]);
    }
    case LAYER_KIND_CONCAT: {
        struct tensor *dxs[GRAPH_MAX_INPUTS];
        int accs[GRAPH_MAX_INPUTS];
        for (int s = 0; s < l->n_inputs; s++) {
            dxs[s] = input_grad(m, l, s);
            accs[s] = acc[s];
        }
        return ops->concat_backward(ctx, dxs, dy, l->n_inputs, accs);
    }
    case LAYER_KIND_ADD: {
        int rc = DR_OK;
        for (int s = 0; s < 2 && rc == DR_OK; s++) {
            struct tensor *d = input_grad(m, l, s);
            if (d) rc = ops->scaled_copy(ctx, d, dy, 1.0f, acc[s]);
        }
        return rc;
    }
    case LAYER_KIND_FLATTEN:
        return dx ? ops->flatten_backward(ctx, dx, dy, acc[0]) : DR_OK;
    case LAYER_KIND_LINEAR:
        return ops->linear_backward(ctx, dx, dp, layer_bias(l, m->dp), dy, x, p, acc[0]);
    case LAYER_KIND_SCALE:
        return dx ? ops->scaled_copy(ctx, dx, dy, l->spec.scale, acc[0]) : DR_OK;
    case LAYER_KIND_INPUT:
    case LAYER_KIND_SHORTCUT:   /* graph_build resolves it */
        break;
    }
    return dr_report(DR_ERR_INTERNAL, __FILE__, __LINE__, NULL, "layer '%s': no backward for type %d",
                     l->spec.name, (int)l->spec.type);
}

int model_backward(struct model *m, float smoothing, float scale)
{
    int rc = DR_OK;
    double t0 = prof_start(m);
    TRY(m->be->ops->xent_backward(m->be->ctx, &m->dy[m->g->output], &m->probs, &m->labels,
                                  smoothing, scale));
    if (m->prof) m->prof->loss_s += prof_stop(m, t0);
    for (int i = m->g->count - 1; i > 0; i--) {
        if (!m->live[i]) continue;
        t0 = prof_start(m);
        TRY(layer_backward(m, i));
        if (m->prof) m->prof->backward_s[m->g->layers[i].spec.type] += prof_stop(m, t0);
    }
cleanup:
    return rc;
}

int model_sgd(struct model *m, float lr, float wd, float momentum, int nesterov,
              const double *lr_scale, const double *wd_scale, int epoch)
{
    int rc = DR_OK;
    double t0 = prof_start(m);
    for (int k = 0; k < m->g->n_params; k++) {
        const struct param_desc *d = &m->g->params[k];
        if (!d->trainable || (d->train_epochs > 0 && epoch >= d->train_epochs)) continue;
        float lk = lr_scale ? (float)((double)lr * lr_scale[d->kind]) : lr;
        float wk = wd_scale ? (float)((double)wd * wd_scale[d->kind]) : wd;
        TRY(m->be->ops->sgd_update(m->be->ctx, &m->p[k], &m->v[k], &m->dp[k], lk, wk, momentum,
                                   nesterov));
    }
    if (m->prof) m->prof->optimizer_s += prof_stop(m, t0);
cleanup:
    return rc;
}

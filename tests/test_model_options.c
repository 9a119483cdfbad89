/* The training options of the speed-training recipes on the CPU engine, each checked
 * against a direct computation on the host: per-kind learning-rate and weight-decay
 * scales, parameters trained for the first epochs only, the weight average (start,
 * update, copy back, swap), the EMA and Lookahead schedules of trainer_after_step,
 * evaluation with the averaged weights, test-time augmentation over views, and the
 * dirac and whitening starts of model_init_params / model_init_whiten. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/backend.h"
#include "engine/core/data.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "engine/core/model.h"
#include "kernels/rng.h"
#include "base/status.h"
#include "engine/core/train.h"
#include "engine/core/whiten.h"
#include "kernels/augment.h"
#include "kernels/optimizer.h"

#define S AUGMENT_IMAGE
#define PLANE (S * S)
#define IMG (3 * PLANE)

static struct layer_spec *add(struct net_spec *s, const char *name, enum layer_type t)
{
    struct layer_spec *l = net_spec_add(s, t);
    if (!l) return NULL;
    snprintf(l->name, sizeof(l->name), "%s", name);
    return l;
}

/* Ends s with linear(10, bias), builds it for 3x32x32 images and frees s. ok = 0: an
 * earlier add failed (out of memory). */
static int linear_head(struct net_spec *s, struct graph *g, int ok)
{
    char err[256];
    int rc = DR_ERR_NOMEM;
    struct layer_spec *l = ok ? add(s, "linear", LAYER_LINEAR) : NULL;
    if (l) {
        l->out = 10;
        l->bias = 1;
        rc = graph_build(g, s, 3, 32, 32, err, sizeof(err));
        if (rc != DR_OK) printf("graph_build: %s\n", err);
    }
    net_spec_free(s);
    return rc;
}

/* conv(4, bias) -> bn -> relu -> global avg pool -> flatten -> linear(10, bias) */
static int small_net(struct graph *g)
{
    struct net_spec s = {0};
    struct layer_spec *l = add(&s, "conv", LAYER_CONV);
    if (l) {
        l->out = 4;
        l->bias = 1;
    }
    int ok = l && add(&s, "bn", LAYER_BN) && add(&s, "relu", LAYER_RELU) &&
             add(&s, "pool", LAYER_GAVGPOOL) && add(&s, "flat", LAYER_FLATTEN);
    return linear_head(&s, g, ok);
}

/* flatten -> linear(10, bias): logits linear in the image, for the TTA check */
static int linear_net(struct graph *g)
{
    struct net_spec s = {0};
    return linear_head(&s, g, add(&s, "flat", LAYER_FLATTEN) != NULL);
}

static float *read_all(struct backend *be, const struct tensor *t)
{
    float *h = malloc(tensor_count(t) * sizeof(float));
    if (h && be->ops->tensor_read(be->ctx, h, t) != DR_OK) {
        free(h);
        h = NULL;
    }
    return h;
}

static int same(const float *a, const float *b, size_t n)
{
    return memcmp(a, b, n * sizeof(float)) == 0;
}

/* Random input, forward, loss and backward so that every parameter has a gradient. */
static int make_gradients(struct model *m, struct backend *be, int n)
{
    float *x = malloc(tensor_count(&m->y[0]) * sizeof(float));
    int32_t lab[64];
    int rc = DR_ERR_NOMEM;
    if (!x) return rc;
    rc = model_set_batch(m, n);
    if (rc != DR_OK) {
        free(x);
        return rc;
    }
    for (size_t i = 0; i < (size_t)n * IMG; i++) {
        struct rng4 r = rng_draw(7, 99, 0, (uint32_t)i, 0);
        x[i] = 2.0f * rng_unit(r.v[0]) - 1.0f;
    }
    for (int i = 0; i < n; i++) lab[i] = i % 10;
    rc = be->ops->tensor_write(be->ctx, &m->y[0], x);
    if (rc == DR_OK) rc = be->ops->tensor_write(be->ctx, &m->labels, lab);
    if (rc == DR_OK) rc = model_forward(m, 1);
    if (rc == DR_OK) rc = model_loss(m, 0.0f);
    if (rc == DR_OK) rc = model_backward(m, 0.0f, 1.0f);
    free(x);
    return rc;
}

/* model_sgd applies lr * lr_scale[kind] and wd * wd_scale[kind], skips parameters that
 * are not trainable and those past their train_epochs. */
static void test_param_groups(struct backend *be)
{
    struct graph g;
    struct model m;
    CHECK(small_net(&g) == DR_OK);
    /* conv weight, conv bias, bn weight, bn bias, linear weight, linear bias */
    CHECK(g.n_params == 6);
    if (g.n_params != 6) return;
    g.params[0].train_epochs = 2;    /* conv weight: trained in epochs 0 and 1 only */
    g.params[2].trainable = 0;       /* bn weight: frozen */
    CHECK(model_create(&m, &g, be, 8) == DR_OK);
    CHECK(model_init_params(&m, 11) == DR_OK);
    double lr_scale[PARAM_KIND_COUNT], wd_scale[PARAM_KIND_COUNT];
    for (int k = 0; k < PARAM_KIND_COUNT; k++) lr_scale[k] = wd_scale[k] = 1.0;
    lr_scale[PARAM_BN_B] = 64.0;
    wd_scale[PARAM_BN_B] = 1.0 / 64.0;
    lr_scale[PARAM_LINEAR_W] = 0.5;
    for (int epoch = 1; epoch <= 2; epoch++) {
        CHECK(make_gradients(&m, be, 8) == DR_OK);
        float *w0[6], *v0[6], *g0[6];
        for (int k = 0; k < 6; k++) {
            w0[k] = read_all(be, &m.p[k]);
            v0[k] = read_all(be, &m.v[k]);
            g0[k] = read_all(be, &m.dp[k]);
        }
        const float lr = 0.01f, wd = 0.05f;
        CHECK(model_sgd(&m, lr, wd, 0.9f, 1, lr_scale, wd_scale, epoch) == DR_OK);
        for (int k = 0; k < 6; k++) {
            const struct param_desc *d = &g.params[k];
            size_t n = tensor_count(&m.p[k]);
            int updated = d->trainable && !(d->train_epochs > 0 && epoch >= d->train_epochs);
            if (updated)
                sgd_update_cpu(w0[k], v0[k], g0[k], (float)(lr * lr_scale[d->kind]),
                               (float)(wd * wd_scale[d->kind]), 0.9f, 1, n);
            float *w1 = read_all(be, &m.p[k]);
            CHECK(w1 && same(w1, w0[k], n));
            free(w1);
            free(w0[k]);
            free(v0[k]);
            free(g0[k]);
        }
    }
    /* NULL scales: every trainable parameter with lr and wd as given */
    CHECK(make_gradients(&m, be, 8) == DR_OK);
    float *w = read_all(be, &m.p[3]), *v = read_all(be, &m.v[3]), *gr = read_all(be, &m.dp[3]);
    CHECK(model_sgd(&m, 0.01f, 0.05f, 0.9f, 0, NULL, NULL, 0) == DR_OK);
    sgd_update_cpu(w, v, gr, 0.01f, 0.05f, 0.9f, 0, tensor_count(&m.p[3]));
    float *w1 = read_all(be, &m.p[3]);
    CHECK(w1 && same(w1, w, tensor_count(&m.p[3])));
    free(w1);
    free(w);
    free(v);
    free(gr);
    model_free(&m);
    graph_free(&g);
}

/* avg = (1 - t) avg + t w over parameters and BN statistics; copy_back; swap. */
static void test_average(struct backend *be)
{
    struct graph g;
    struct model m;
    CHECK(small_net(&g) == DR_OK);
    CHECK(model_create(&m, &g, be, 8) == DR_OK);
    CHECK(model_init_params(&m, 3) == DR_OK);
    CHECK(model_average_update(&m, 0.5f, 0) != DR_OK);   /* not started */
    CHECK(model_average_start(&m) == DR_OK);
    int bn = 2;
    CHECK(g.layers[bn].spec.type == LAYER_BN);
    for (int k = 0; k < g.n_params; k++) {
        float *a = read_all(be, &m.avg[k]), *w = read_all(be, &m.p[k]);
        CHECK(a && w && same(a, w, tensor_count(&m.p[k])));
        free(a);
        free(w);
    }
    /* move the weights and the running statistics: a training step */
    CHECK(make_gradients(&m, be, 8) == DR_OK);
    CHECK(model_sgd(&m, 0.1f, 0.0f, 0.0f, 0, NULL, NULL, 0) == DR_OK);
    float *a0 = read_all(be, &m.avg[0]), *w0 = read_all(be, &m.p[0]);
    float *ra0 = read_all(be, &m.avg_rvar[bn]), *r0 = read_all(be, &m.bn_rvar[bn]);
    size_t n = tensor_count(&m.p[0]), c = tensor_count(&m.bn_rvar[bn]);
    CHECK(a0 && w0 && ra0 && r0 && !same(a0, w0, n) && !same(ra0, r0, c));
    CHECK(model_average_update(&m, 0.25f, 0) == DR_OK);
    float *a1 = read_all(be, &m.avg[0]), *w1 = read_all(be, &m.p[0]);
    float *ra1 = read_all(be, &m.avg_rvar[bn]);
    int ok = 1;
    for (size_t i = 0; i < n; i++) ok &= a1[i] == 0.75f * a0[i] + 0.25f * w0[i];
    for (size_t i = 0; i < c; i++) ok &= ra1[i] == 0.75f * ra0[i] + 0.25f * r0[i];
    CHECK(ok);
    CHECK(same(w1, w0, n));                                  /* w untouched */
    /* swap twice = identity; once = the averages in place of the weights */
    model_average_swap(&m);
    float *s = read_all(be, &m.p[0]), *sr = read_all(be, &m.bn_rvar[bn]);
    CHECK(same(s, a1, n) && same(sr, ra1, c));
    model_average_swap(&m);
    free(s);
    s = read_all(be, &m.p[0]);
    CHECK(same(s, w0, n));
    /* copy back: w = avg afterwards */
    CHECK(model_average_update(&m, 0.5f, 1) == DR_OK);
    float *a2 = read_all(be, &m.avg[0]), *w2 = read_all(be, &m.p[0]);
    ok = 1;
    for (size_t i = 0; i < n; i++) ok &= a2[i] == 0.5f * a1[i] + 0.5f * w0[i];
    CHECK(ok);
    CHECK(same(w2, a2, n));
    free(a0), free(w0), free(ra0), free(r0), free(a1), free(w1), free(ra1), free(s), free(sr);
    free(a2), free(w2);
    model_free(&m);
    graph_free(&g);
}

/* trainer_after_step: EMA and Lookahead updates at multiples of `every`, with their rho,
 * and Lookahead's final copy; the weights are moved by hand between steps. */
static void test_schedules(struct backend *be)
{
    for (int kind = AVERAGE_EMA; kind <= AVERAGE_LOOKAHEAD; kind++) {
        struct graph g;
        struct experiment e;
        struct trainer t;
        memset(&e, 0, sizeof(e));
        memset(&t, 0, sizeof(t));
        e.train.average.kind = (enum average_kind)kind;
        e.train.average.every = kind == AVERAGE_EMA ? 3 : 2;
        e.train.average.momentum = 0.9;
        e.train.average.decay = 0.95;
        CHECK(small_net(&g) == DR_OK);
        t.e = &e;
        t.g = &g;
        t.be = be;
        t.plan.total_steps = 7;
        CHECK(model_create(&t.model, &g, be, 4) == DR_OK);
        CHECK(model_init_params(&t.model, 5) == DR_OK);
        CHECK(model_average_start(&t.model) == DR_OK);
        size_t n = tensor_count(&t.model.p[4]);   /* the linear weight */
        float *w = read_all(be, &t.model.p[4]);
        float *avg = malloc(n * sizeof(float));
        memcpy(avg, w, n * sizeof(float));
        int ok = 1;
        for (long step = 1; step <= t.plan.total_steps; step++) {
            for (size_t i = 0; i < n; i++) w[i] += 0.01f * (float)step * (float)((i % 7) + 1);
            CHECK(be->ops->tensor_write(be->ctx, &t.model.p[4], w) == DR_OK);
            CHECK(trainer_after_step(&t) == DR_OK);
            ok &= t.step == step;
            int every = e.train.average.every;
            if (step % every == 0) {
                double rho = kind == AVERAGE_EMA
                                 ? pow(0.9, every)
                                 : pow(0.95, every) * pow((double)step / 7.0, 3.0);
                float tt = (float)(1.0 - rho);
                for (size_t i = 0; i < n; i++) {
                    avg[i] = (1.0f - tt) * avg[i] + tt * w[i];
                    if (kind == AVERAGE_LOOKAHEAD) w[i] = avg[i];
                }
            }
            if (kind == AVERAGE_LOOKAHEAD && step == t.plan.total_steps)
                memcpy(w, avg, n * sizeof(float));
            float *ga = read_all(be, &t.model.avg[4]), *gw = read_all(be, &t.model.p[4]);
            ok &= ga && gw;
            for (size_t i = 0; ok && i < n; i++)
                ok &= fabsf(ga[i] - avg[i]) <= 1e-6f * (1.0f + fabsf(avg[i])) &&
                      fabsf(gw[i] - w[i]) <= 1e-6f * (1.0f + fabsf(w[i]));
            free(ga);
            free(gw);
        }
        CHECK(ok);
        free(w);
        free(avg);
        model_free(&t.model);
        graph_free(&g);
    }
}

/* A dataset of pseudo-random images with labels i % 10. */
static int random_dataset(struct dataset *d, int count, uint32_t stream)
{
    d->count = count;
    d->images = malloc((size_t)count * IMG);
    d->labels = malloc((size_t)count);
    if (!d->images || !d->labels) return DR_ERR_NOMEM;
    for (int i = 0; i < count; i++) {
        for (int j = 0; j < IMG; j += 4) {
            struct rng4 r = rng_draw(0x7e57u, stream, 0, (uint32_t)i, (uint32_t)j);
            for (int k = 0; k < 4; k++) d->images[(size_t)i * IMG + j + k] = (uint8_t)r.v[k];
        }
        d->labels[i] = (uint8_t)(i % 10);
    }
    return DR_OK;
}

static int reflect(int i)
{
    return i < 0 ? -i : i > S - 1 ? 2 * (S - 1) - i : i;
}

/* Normalised pixel of a view: shifted by (dx, dy) with reflection, mirrored when f. */
static double view_pixel(const uint8_t *img, int c, int y, int x, int dx, int dy, int f)
{
    static const float mean[3] = {AUGMENT_MEAN_R, AUGMENT_MEAN_G, AUGMENT_MEAN_B};
    static const float stdv[3] = {AUGMENT_STD_R, AUGMENT_STD_G, AUGMENT_STD_B};
    int ox = f ? S - 1 - x : x;
    uint8_t v = img[c * PLANE + reflect(y + dy) * S + reflect(ox + dx)];
    return ((double)v - mean[c]) / stdv[c];
}

/* Mean loss and accuracy of the linear net (weights w (10, 3072), bias b) over the test
 * set, with the logits a weighted mean over the views of `tta`, in double. */
static void host_evaluate(double *loss, double *acc, const float *w, const float *b,
                          const struct dataset *test, enum tta_kind tta)
{
    static const int shift[3][2] = {{0, 0}, {-1, -1}, {1, 1}};
    double ls = 0.0, cs = 0.0, *x = malloc(IMG * sizeof(double));
    for (int i = 0; i < test->count; i++) {
        const uint8_t *img = test->images + (size_t)i * IMG;
        int nshift = tta == TTA_FLIP_TRANSLATE ? 3 : 1, nflip = tta == TTA_NONE ? 1 : 2;
        memset(x, 0, IMG * sizeof(double));
        for (int s = 0; s < nshift; s++)
            for (int f = 0; f < nflip; f++) {
                double wv = tta == TTA_NONE ? 1.0 : tta == TTA_FLIP ? 0.5 : s == 0 ? 0.25 : 0.125;
                for (int c = 0; c < 3; c++)
                    for (int y = 0; y < S; y++)
                        for (int xx = 0; xx < S; xx++)
                            x[c * PLANE + y * S + xx] +=
                                wv * view_pixel(img, c, y, xx, shift[s][0], shift[s][1], f);
            }
        double logits[10], mx = -1e300;
        int best = 0;
        for (int o = 0; o < 10; o++) {
            double z = b[o];
            for (int j = 0; j < IMG; j++) z += (double)w[(size_t)o * IMG + j] * x[j];
            logits[o] = z;
            if (z > mx) {
                mx = z;
                best = o;
            }
        }
        double se = 0.0;
        for (int o = 0; o < 10; o++) se += exp(logits[o] - mx);
        ls += mx + log(se) - logits[test->labels[i]];
        cs += best == test->labels[i];
    }
    free(x);
    *loss = ls / test->count;
    *acc = cs / test->count;
}

/* trainer_evaluate with each TTA kind, and with the EMA weights, against the host. */
static void test_tta_and_ema_eval(struct backend *be)
{
    struct dataset train = {0}, test = {0};
    struct graph g;
    CHECK(random_dataset(&train, 64, 1) == DR_OK);
    CHECK(random_dataset(&test, 37, 2) == DR_OK);
    CHECK(linear_net(&g) == DR_OK);
    for (int tta = TTA_NONE; tta <= TTA_FLIP_TRANSLATE; tta++)
        for (int ema = 0; ema < 2; ema++) {
            struct experiment e;
            struct trainer t;
            memset(&e, 0, sizeof(e));
            snprintf(e.path, sizeof(e.path), "(test)");
            e.train.epochs = 1;
            e.train.batch_size = 16;
            e.eval.batch_size = 10;            /* a partial last batch */
            e.eval.tta = (enum tta_kind)tta;
            e.train.average.kind = ema ? AVERAGE_EMA : AVERAGE_NONE;
            e.train.average.every = 1;
            e.train.average.momentum = 0.5;
            if (trainer_create(&t, &e, &g, be, &train, &test, 9) != DR_OK) {
                CHECK(0);
                continue;
            }
            if (ema) {
                /* the average keeps the initial weights; the live ones move */
                float *w = read_all(be, &t.model.p[0]);
                for (size_t i = 0; i < tensor_count(&t.model.p[0]); i++) w[i] *= -0.5f;
                CHECK(be->ops->tensor_write(be->ctx, &t.model.p[0], w) == DR_OK);
                free(w);
            }
            struct tensor *pw = ema ? &t.model.avg[0] : &t.model.p[0];
            struct tensor *pb = ema ? &t.model.avg[1] : &t.model.p[1];
            float *w = read_all(be, pw), *b = read_all(be, pb);
            float *before = read_all(be, &t.model.p[0]);
            double loss, acc, hl, ha;
            CHECK(trainer_evaluate(&t, &loss, &acc) == DR_OK);
            host_evaluate(&hl, &ha, w, b, &test, (enum tta_kind)tta);
            printf("tta %d ema %d: loss %.6f (host %.6f) acc %.4f (host %.4f)\n", tta, ema, loss,
                   hl, acc, ha);
            CHECK_NEAR(loss, hl, 1e-4 * (1.0 + fabs(hl)));
            CHECK(acc == ha);
            /* evaluation leaves the live weights and the average where they were */
            float *after = read_all(be, &t.model.p[0]);
            CHECK(after && before && same(after, before, tensor_count(pw)));
            if (ema) {
                float *avg = read_all(be, &t.model.avg[0]);
                CHECK(avg && same(avg, w, tensor_count(pw)));
                free(avg);
            }
            free(after);
            free(before);
            free(w);
            free(b);
            trainer_free(&t);
        }
    graph_free(&g);
    dataset_free(&train);
    dataset_free(&test);
}

/* model_init_params: dirac filters; model_init_whiten: whiten_filters of the first images. */
static void test_dirac_and_whiten_init(struct backend *be)
{
    struct net_spec s = {0};
    struct graph g;
    struct model m;
    struct dataset train = {0};
    char err[256];
    struct layer_spec *l = add(&s, "whiten", LAYER_WHITEN);
    CHECK(l != NULL);
    if (!l) return;
    l->k = 2;
    l->pad = 0;
    l->eps = 5e-4f;
    l->negate = 1;
    l->bias = 1;
    l->bias_epochs = 3;
    l->whiten_images = 40;
    l = add(&s, "conv", LAYER_CONV);
    l->out = 32;
    l->dirac = 1;
    add(&s, "pool", LAYER_GMAXPOOL);
    add(&s, "flat", LAYER_FLATTEN);
    l = add(&s, "linear", LAYER_LINEAR);
    l->out = 10;
    l->bias = 0;
    int rc = graph_build(&g, &s, 3, 32, 32, err, sizeof(err));
    if (rc != DR_OK) printf("graph_build: %s\n", err);
    CHECK(rc == DR_OK);
    net_spec_free(&s);
    if (rc != DR_OK) return;
    CHECK(g.layers[1].c == 24 && g.layers[1].h == 31);
    CHECK(g.params[0].kind == PARAM_WHITEN_W && !g.params[0].trainable);
    CHECK(g.params[1].kind == PARAM_WHITEN_B && g.params[1].trainable &&
          g.params[1].train_epochs == 3);
    CHECK(g.params[2].init == PARAM_INIT_DIRAC);
    CHECK(random_dataset(&train, 100, 3) == DR_OK);
    CHECK(model_create(&m, &g, be, 4) == DR_OK);
    CHECK(model_init_params(&m, 21) == DR_OK);
    CHECK(model_init_whiten(&m, &train) == DR_OK);
    float *ww = read_all(be, &m.p[0]), *want = malloc(24 * 12 * sizeof(float));
    CHECK(whiten_filters(want, train.images, 40, 2, 5e-4f, 1) == DR_OK);
    CHECK(ww && same(ww, want, 24 * 12));
    float *cw = read_all(be, &m.p[2]);
    int ident = 1, rest = 0;
    for (int o = 0; o < 32; o++)
        for (int i = 0; i < 24; i++)
            for (int k = 0; k < 9; k++) {
                float v = cw[((size_t)o * 24 + i) * 9 + k];
                if (o < 24) ident &= v == ((o == i && k == 4) ? 1.0f : 0.0f);
                else rest += v != 0.0f;
            }
    CHECK(ident);
    CHECK(rest > 24 * 9 * 8 - 10);   /* filters 24..31 keep their random start */
    free(ww);
    free(want);
    free(cw);
    model_free(&m);
    graph_free(&g);
    dataset_free(&train);
}

int main(void)
{
    struct backend be = {0};
    if (backend_cpu_create(&be, 2) != DR_OK) {
        CHECK(0);
        return check_finish("test_model_options");
    }
    test_param_groups(&be);
    test_average(&be);
    test_schedules(&be);
    test_tta_and_ema_eval(&be);
    test_dirac_and_whiten_init(&be);
    backend_destroy(&be);
    return check_finish("test_model_options");
}

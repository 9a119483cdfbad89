/* The CPU engine's backend table: thin wrappers from struct tensor to the CPU kernels.
 * Activations (TENSOR_ACT) live in host memory as fp32 (C, N, H, W) using the tensor's
 * current n, so an activation (n, f, 1, 1) is exactly the features-major (f, n) matrix
 * the linear and loss kernels take. Parameters and vectors are stored in their canonical
 * form. Threads: one OpenMP team size for every op, set when the backend is created.
 * Shape mismatches are engine bugs and come back as DR_ERR_INTERNAL with file:line. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/alloc.h"
#include "../backend.h"
#include "../backend_check.h"
#include "../../base/status.h"
#include "../activation.h"
#include "../augment.h"
#include "../batchnorm.h"
#include "../conv2d.h"
#include "../linear.h"
#include "../loss.h"
#include "../optimizer.h"
#include "../pool.h"
#include "../tensor_ops.h"
#include "conv2d_impl.h"
#include "cpu_isa.h"
#include "muon_cpu.h"
#include "plan_cpu.h"

#define CPU_ALIGN 64

struct cpu_ctx {
    int threads;
    char name[192];
    struct cpu_plan_cache *plans;   /* plan_cpu.c's analyses */
};

/* Makes every op run on the backend's team size, even when another caller changed it. */
static void cpu_enter(void *ctx)
{
    const struct cpu_ctx *c = ctx;
    if (omp_get_max_threads() != c->threads) omp_set_num_threads(c->threads);
}

/* fp32 contents of an optional tensor: NULL for an absent tensor or one without data. */
static float *fdata(const struct tensor *t)
{
    return t ? (float *)t->data : NULL;
}

static size_t cpu_elem_size(enum tensor_kind kind)
{
    return kind == TENSOR_U8 ? 1 : 4;
}

/* ------------------------------------------------------------------ lifetime, memory */

static void cpu_destroy(void *ctx)
{
    if (ctx) cpu_plan_cache_free(((struct cpu_ctx *)ctx)->plans);
    conv2d_dnnl_release(); /* the cached convolution primitives and their work buffer */
    free(ctx);
}

static const char *cpu_device_name(void *ctx)
{
    return ((struct cpu_ctx *)ctx)->name;
}

static int cpu_tensor_alloc(void *ctx, struct tensor *t)
{
    int rc = DR_OK;
    (void)ctx;
    EXPECT(t->n >= 0 && t->c >= 0 && t->h >= 0 && t->w >= 0,
           "negative tensor shape (%d, %d, %d, %d)", t->n, t->c, t->h, t->w);
    size_t bytes = tensor_count(t) * cpu_elem_size(t->kind);
    bytes = (bytes + CPU_ALIGN - 1) / CPU_ALIGN * CPU_ALIGN;
    if (bytes == 0) bytes = CPU_ALIGN;
    t->data = dr_aligned_alloc(CPU_ALIGN, bytes);
    if (!t->data)
        FAIL(DR_ERR_NOMEM, "out of memory allocating a tensor (%d, %d, %d, %d), %zu bytes",
             t->n, t->c, t->h, t->w, bytes);
    memset(t->data, 0, bytes);
cleanup:
    return rc;
}

static void cpu_tensor_free(void *ctx, struct tensor *t)
{
    (void)ctx;
    if (!t) return;
    free(t->data);
    t->data = NULL;
}

static int cpu_tensor_zero(void *ctx, struct tensor *t)
{
    (void)ctx;
    if (t->data) memset(t->data, 0, tensor_count(t) * cpu_elem_size(t->kind));
    return DR_OK;
}

static int cpu_tensor_write(void *ctx, struct tensor *t, const void *host)
{
    (void)ctx;
    if (t->kind != TENSOR_ACT) {
        memcpy(t->data, host, tensor_count(t) * cpu_elem_size(t->kind));
        return DR_OK;
    }
    /* NCHW -> CNHW */
    const size_t hw = (size_t)t->h * t->w;
    const float *src = host;
    float *dst = t->data;
    for (int i = 0; i < t->n; i++)
        for (int c = 0; c < t->c; c++)
            memcpy(dst + ((size_t)c * t->n + i) * hw, src + ((size_t)i * t->c + c) * hw,
                   sizeof(float) * hw);
    return DR_OK;
}

static int cpu_tensor_read(void *ctx, void *host, const struct tensor *t)
{
    (void)ctx;
    if (t->kind != TENSOR_ACT) {
        memcpy(host, t->data, tensor_count(t) * cpu_elem_size(t->kind));
        return DR_OK;
    }
    /* CNHW -> NCHW */
    const size_t hw = (size_t)t->h * t->w;
    const float *src = t->data;
    float *dst = host;
    for (int i = 0; i < t->n; i++)
        for (int c = 0; c < t->c; c++)
            memcpy(dst + ((size_t)i * t->c + c) * hw, src + ((size_t)c * t->n + i) * hw,
                   sizeof(float) * hw);
    return DR_OK;
}

static int cpu_synchronize(void *ctx)
{
    (void)ctx;
    return DR_OK;
}

/* ------------------------------------------------------------------ data */

static int cpu_augment(void *ctx, struct tensor *x, struct tensor *labels,
                       const struct tensor *images, const struct tensor *image_labels,
                       const struct tensor *rows, const struct augment_params *aug,
                       uint64_t seed, int epoch)
{
    int rc = DR_OK;
    size_t dataset_rows = 0;
    cpu_enter(ctx);
    TRY(backend_check_augment(&dataset_rows, x, labels, images, image_labels, rows, aug));
    const int32_t *r = rows->data;
    for (int i = 0; i < x->n; i++)
        if (r[i] < 0 || (size_t)r[i] >= dataset_rows)
            FAIL(DR_ERR_DATA, "augment: row %d of the batch is image %d of a %zu-image dataset",
                 i, (int)r[i], dataset_rows);
    augment_batch_cpu(x->data, labels->data, images->data, image_labels->data, r, x->n, aug,
                      seed, epoch);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ convolution */

/* Fills d from x (n, c, h, w), w (co, c, k, k) and the attributes, and checks y. */
static int cpu_conv_dims(struct conv2d_dims *d, const struct tensor *y, const struct tensor *x,
                         const struct tensor *w, const struct tensor *b,
                         const struct conv_attr *a)
{
    int rc = DR_OK;
    EXPECT(w->c == x->c && w->h == a->k && w->w == a->k && a->stride >= 1 && a->pad >= 0,
           "conv: weight (%d, %d, %d, %d) does not fit input channels %d, k %d, stride %d, "
           "pad %d", w->n, w->c, w->h, w->w, x->c, a->k, a->stride, a->pad);
    *d = (struct conv2d_dims){x->n, x->c, x->h, x->w, w->n, a->k, a->stride, a->pad, 0, 0};
    conv2d_dims_finish(d);
    EXPECT(d->ho >= 1 && d->wo >= 1, "conv: %dx%d input too small for k %d pad %d", x->h, x->w,
           a->k, a->pad);
    EXPECT(y->n == x->n && y->c == d->co && y->h == d->ho && y->w == d->wo,
           "conv: output (%d, %d, %d, %d), expected (%d, %d, %d, %d)", y->n, y->c, y->h, y->w,
           x->n, d->co, d->ho, d->wo);
    EXPECT(!b || !b->data || tensor_count(b) == (size_t)d->co, "conv: bias of %zu for %d outputs",
           tensor_count(b), d->co);
cleanup:
    return rc;
}

static int cpu_conv_forward(void *ctx, struct tensor *y, const struct tensor *x,
                            const struct tensor *w, const struct tensor *b,
                            const struct conv_attr *a)
{
    int rc = DR_OK;
    struct conv2d_dims d;
    cpu_enter(ctx);
    TRY(cpu_conv_dims(&d, y, x, w, b, a));
    rc = conv2d_forward_cpu(y->data, x->data, w->data, fdata(b), &d);
    if (rc != DR_OK)
        FAIL(rc, "conv forward (%d→%d channels, %dx%d, batch %d): %s", d.c, d.co, d.h, d.w,
             d.n, dr_status_str(rc));
cleanup:
    return rc;
}

static int cpu_conv_backward(void *ctx, struct tensor *dx, struct tensor *dw, struct tensor *db,
                             const struct tensor *dy, const struct tensor *x,
                             const struct tensor *w, const struct conv_attr *a, int accumulate)
{
    int rc = DR_OK;
    struct conv2d_dims d;
    cpu_enter(ctx);
    TRY(cpu_conv_dims(&d, dy, x, w, db, a));
    EXPECT(!fdata(dx) || tensor_same_shape(dx, x), "conv backward: dx (%d, %d, %d, %d) unlike x",
           dx->n, dx->c, dx->h, dx->w);
    EXPECT(!fdata(dw) || tensor_count(dw) == tensor_count(w), "conv backward: dw unlike w");
    rc = conv2d_backward_cpu(fdata(dx), fdata(dw), fdata(db), dy->data, x->data, w->data, &d,
                             accumulate);
    if (rc != DR_OK)
        FAIL(rc, "conv backward (%d→%d channels, %dx%d, batch %d): %s", d.c, d.co, d.h, d.w,
             d.n, dr_status_str(rc));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ batch norm */

static int bn_vec_ok(const struct tensor *t, int c)
{
    return t && t->data && tensor_count(t) == (size_t)c;
}

static int cpu_bn_forward_train(void *ctx, struct tensor *y, struct tensor *save_mean,
                                struct tensor *save_invstd, struct tensor *running_mean,
                                struct tensor *running_var, const struct tensor *x,
                                const struct tensor *gamma, const struct tensor *beta,
                                const struct bn_attr *a)
{
    int rc = DR_OK, parts = 1;
    cpu_enter(ctx);
    EXPECT(tensor_same_shape(y, x), "bn: output (%d, %d, %d, %d) unlike input", y->n, y->c, y->h, y->w);
    TRY(backend_check_bn_parts(&parts, x, save_mean, save_invstd, a));
    EXPECT(bn_vec_ok(running_mean, x->c) && bn_vec_ok(running_var, x->c) &&
               bn_vec_ok(gamma, x->c) && bn_vec_ok(beta, x->c),
           "bn: a statistics or parameter vector is not of %d channels", x->c);
    batchnorm_forward_train_cpu(y->data, save_mean->data, save_invstd->data, running_mean->data,
                                running_var->data, x->data, gamma->data, beta->data, x->c, x->n,
                                x->h * x->w, parts, a->eps, a->momentum);
cleanup:
    return rc;
}

static int cpu_bn_forward_eval(void *ctx, struct tensor *y, const struct tensor *x,
                               const struct tensor *gamma, const struct tensor *beta,
                               const struct tensor *running_mean,
                               const struct tensor *running_var, const struct bn_attr *a)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    EXPECT(tensor_same_shape(y, x), "bn: output (%d, %d, %d, %d) unlike input", y->n, y->c, y->h, y->w);
    EXPECT(bn_vec_ok(running_mean, x->c) && bn_vec_ok(running_var, x->c) &&
               bn_vec_ok(gamma, x->c) && bn_vec_ok(beta, x->c),
           "bn: a statistics or parameter vector is not of %d channels", x->c);
    batchnorm_forward_eval_cpu(y->data, x->data, gamma->data, beta->data, running_mean->data,
                               running_var->data, x->c, x->n, x->h * x->w, a->eps);
cleanup:
    return rc;
}

static int cpu_bn_backward(void *ctx, struct tensor *dx, struct tensor *dgamma,
                           struct tensor *dbeta, const struct tensor *dy, const struct tensor *x,
                           const struct tensor *gamma, const struct tensor *save_mean,
                           const struct tensor *save_invstd, int accumulate)
{
    int rc = DR_OK, parts = 1;
    cpu_enter(ctx);
    EXPECT(tensor_same_shape(dy, x) && (!fdata(dx) || tensor_same_shape(dx, x)),
           "bn backward: dy or dx unlike x (%d, %d, %d, %d)", x->n, x->c, x->h, x->w);
    TRY(backend_check_bn_parts(&parts, x, save_mean, save_invstd, NULL));
    EXPECT(bn_vec_ok(gamma, x->c) && (!fdata(dgamma) || bn_vec_ok(dgamma, x->c)) &&
               (!fdata(dbeta) || bn_vec_ok(dbeta, x->c)),
           "bn backward: a statistics or parameter vector is not of %d channels", x->c);
    batchnorm_backward_cpu(fdata(dx), fdata(dgamma), fdata(dbeta), dy->data, x->data, gamma->data,
                           save_mean->data, save_invstd->data, x->c, x->n, x->h * x->w, parts,
                           accumulate);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ activations */

static int cpu_act_forward(void *ctx, struct tensor *y, const struct tensor *x, enum act_kind kind,
                           float alpha)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    EXPECT(tensor_count(y) == tensor_count(x), "activation: %zu outputs for %zu inputs",
           tensor_count(y), tensor_count(x));
    EXPECT(activation_forward_cpu(y->data, x->data, kind, alpha, tensor_count(x)) == DR_OK,
           "activation: no CPU kernel for kind %d", (int)kind);
cleanup:
    return rc;
}

static int cpu_act_backward(void *ctx, struct tensor *dx, const struct tensor *dy,
                            const struct tensor *x, enum act_kind kind, float alpha,
                            int accumulate)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    if (!fdata(dx)) return DR_OK;
    EXPECT(tensor_count(dx) == tensor_count(x) && tensor_count(dy) == tensor_count(x),
           "activation backward: sizes differ");
    EXPECT(activation_backward_cpu(dx->data, dy->data, x->data, kind, alpha, tensor_count(x),
                                   accumulate) == DR_OK,
           "activation backward: no CPU kernel for kind %d", (int)kind);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ pooling */

/* The kernel's dims for a pool of x into y (or dy), after the shared contract check. */
static int cpu_pool_dims(struct pool_dims *d, const struct tensor *y, const struct tensor *x,
                         const struct pool_attr *a)
{
    int ho = 0, wo = 0;
    int rc = backend_check_pool(&ho, &wo, y, x, a);
    *d = (struct pool_dims){x->c * x->n, x->h, x->w, a->kh, a->kw, a->sh, a->sw, ho, wo};
    return rc;
}

static int cpu_pool_forward(void *ctx, struct tensor *y, const struct tensor *x,
                            const struct pool_attr *a)
{
    int rc = DR_OK;
    struct pool_dims d;
    cpu_enter(ctx);
    TRY(cpu_pool_dims(&d, y, x, a));
    pool_forward_cpu(y->data, x->data, a->kind, &d);
cleanup:
    return rc;
}

static int cpu_pool_backward(void *ctx, struct tensor *dx, const struct tensor *dy,
                             const struct tensor *x, const struct tensor *y,
                             const struct pool_attr *a, int accumulate)
{
    int rc = DR_OK;
    struct pool_dims d;
    cpu_enter(ctx);
    if (!fdata(dx)) return DR_OK;
    TRY(cpu_pool_dims(&d, dy, x, a));
    EXPECT(tensor_same_shape(dx, x), "pool backward: dx unlike x");
    pool_backward_cpu(dx->data, dy->data, x->data, fdata(y), a->kind, &d, accumulate);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ structural ops */

static int cpu_concat_forward(void *ctx, struct tensor *y, const struct tensor *const *xs,
                              int count)
{
    int rc = DR_OK;
    const float **ptrs = NULL;
    int *cs = NULL, total = 0;
    cpu_enter(ctx);
    EXPECT(count >= 1, "concat of %d inputs", count);
    ptrs = malloc(sizeof(*ptrs) * (size_t)count);
    cs = malloc(sizeof(*cs) * (size_t)count);
    CHECK_ALLOC(ptrs, "concat pointers");
    CHECK_ALLOC(cs, "concat channels");
    for (int i = 0; i < count; i++) {
        EXPECT(xs[i]->n == y->n && xs[i]->h == y->h && xs[i]->w == y->w,
               "concat: input %d is (%d, %d, %d, %d), output (%d, %d, %d, %d)", i, xs[i]->n,
               xs[i]->c, xs[i]->h, xs[i]->w, y->n, y->c, y->h, y->w);
        ptrs[i] = xs[i]->data;
        cs[i] = xs[i]->c;
        total += cs[i];
    }
    EXPECT(total == y->c, "concat: inputs have %d channels, output %d", total, y->c);
    concat_forward_cpu(y->data, ptrs, cs, count, (size_t)y->n * y->h * y->w);
cleanup:
    free(ptrs);
    free(cs);
    return rc;
}

/* A NULL entry of dxs (an input that needs no gradient) is skipped; its channel count is
 * inferred from dy when it is the only such entry. */
static int cpu_concat_backward(void *ctx, struct tensor *const *dxs, const struct tensor *dy,
                               int count, const int *accumulate)
{
    int rc = DR_OK;
    float **ptrs = NULL;
    int *cs = NULL, missing = -1, missing_c = 0;
    cpu_enter(ctx);
    TRY(backend_check_concat_grads(&missing, &missing_c, dxs, dy, count));
    ptrs = malloc(sizeof(*ptrs) * (size_t)count);
    cs = malloc(sizeof(*cs) * (size_t)count);
    CHECK_ALLOC(ptrs, "concat pointers");
    CHECK_ALLOC(cs, "concat channels");
    for (int i = 0; i < count; i++) {
        ptrs[i] = dxs[i] ? dxs[i]->data : NULL;
        cs[i] = dxs[i] ? dxs[i]->c : missing_c;
    }
    concat_backward_cpu(ptrs, dy->data, cs, count, (size_t)dy->n * dy->h * dy->w, accumulate);
cleanup:
    free(ptrs);
    free(cs);
    return rc;
}

static int cpu_add_forward(void *ctx, struct tensor *y, const struct tensor *a,
                           const struct tensor *b)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    EXPECT(tensor_same_shape(y, a) && tensor_same_shape(y, b), "add: shapes differ");
    add_forward_cpu(y->data, a->data, b->data, tensor_count(y));
cleanup:
    return rc;
}

static int cpu_scale_forward(void *ctx, struct tensor *y, const struct tensor *x, float s)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    EXPECT(tensor_count(y) == tensor_count(x), "scale: sizes differ");
    scale_forward_cpu(y->data, x->data, s, tensor_count(x));
cleanup:
    return rc;
}

static int cpu_scaled_copy(void *ctx, struct tensor *dx, const struct tensor *dy, float s,
                           int accumulate)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    if (!fdata(dx)) return DR_OK;
    EXPECT(tensor_count(dx) == tensor_count(dy), "scaled copy: %zu from %zu elements",
           tensor_count(dx), tensor_count(dy));
    scaled_copy_cpu(dx->data, dy->data, s, tensor_count(dy), accumulate);
cleanup:
    return rc;
}

static int cpu_flatten_forward(void *ctx, struct tensor *y, const struct tensor *x)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    EXPECT(y->n == x->n && y->c == x->c * x->h * x->w && y->h == 1 && y->w == 1,
           "flatten: output (%d, %d, %d, %d) for input (%d, %d, %d, %d)", y->n, y->c, y->h, y->w,
           x->n, x->c, x->h, x->w);
    flatten_forward_cpu(y->data, x->data, x->c, x->n, x->h * x->w);
cleanup:
    return rc;
}

static int cpu_flatten_backward(void *ctx, struct tensor *dx, const struct tensor *dy,
                                int accumulate)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    if (!fdata(dx)) return DR_OK;
    EXPECT(dy->n == dx->n && dy->c == dx->c * dx->h * dx->w && dy->h == 1 && dy->w == 1,
           "flatten backward: dy (%d, %d, %d, %d) for dx (%d, %d, %d, %d)", dy->n, dy->c, dy->h,
           dy->w, dx->n, dx->c, dx->h, dx->w);
    flatten_backward_cpu(dx->data, dy->data, dx->c, dx->n, dx->h * dx->w, accumulate);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ linear, loss, optimiser */

static int cpu_linear_forward(void *ctx, struct tensor *y, const struct tensor *x,
                              const struct tensor *w, const struct tensor *b)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    TRY(backend_check_linear(y, x, w, b));
    linear_forward_cpu(y->data, x->data, w->data, fdata(b), y->c, x->c, x->n);
cleanup:
    return rc;
}

static int cpu_linear_backward(void *ctx, struct tensor *dx, struct tensor *dw,
                               struct tensor *db, const struct tensor *dy,
                               const struct tensor *x, const struct tensor *w, int accumulate)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    TRY(backend_check_linear(dy, x, w, db));
    EXPECT(!fdata(dx) || tensor_same_shape(dx, x), "linear backward: dx unlike x");
    EXPECT(!fdata(dw) || tensor_count(dw) == tensor_count(w), "linear backward: dw unlike w");
    linear_backward_cpu(fdata(dx), fdata(dw), fdata(db), dy->data, x->data, w->data, dy->c, x->c,
                        x->n, accumulate);
cleanup:
    return rc;
}

/* Labels must be class indices: a bad one is a data error, not a silent wrong loss. */
static int cpu_check_labels(const struct tensor *labels, int n, int k)
{
    int rc = DR_OK;
    EXPECT(tensor_count(labels) >= (size_t)n, "loss: %zu labels for %d examples",
           tensor_count(labels), n);
    const int32_t *l = labels->data;
    for (int i = 0; i < n; i++)
        if (l[i] < 0 || l[i] >= k)
            FAIL(DR_ERR_DATA, "loss: label %d of example %d is outside 0..%d", (int)l[i], i, k - 1);
cleanup:
    return rc;
}

static int cpu_xent_forward(void *ctx, struct tensor *stats, struct tensor *probs,
                            const struct tensor *logits, const struct tensor *labels,
                            float smoothing)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    EXPECT(logits->h == 1 && logits->w == 1 && tensor_same_shape(probs, logits),
           "loss: logits (%d, %d, %d, %d) are not (n, k, 1, 1) or unlike probs", logits->n,
           logits->c, logits->h, logits->w);
    EXPECT(tensor_count(stats) >= 2, "loss: statistics vector of %zu", tensor_count(stats));
    TRY(cpu_check_labels(labels, logits->n, logits->c));
    xent_forward_cpu(stats->data, probs->data, logits->data, labels->data, logits->c, logits->n,
                     smoothing);
cleanup:
    return rc;
}

static int cpu_xent_backward(void *ctx, struct tensor *dlogits, const struct tensor *probs,
                             const struct tensor *labels, float smoothing, float scale)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    EXPECT(tensor_same_shape(dlogits, probs) && probs->h == 1 && probs->w == 1,
           "loss backward: dlogits unlike probs (%d, %d, %d, %d)", probs->n, probs->c, probs->h,
           probs->w);
    TRY(cpu_check_labels(labels, probs->n, probs->c));
    xent_backward_cpu(dlogits->data, probs->data, labels->data, probs->c, probs->n, smoothing,
                      scale);
cleanup:
    return rc;
}

static int cpu_sgd_update(void *ctx, struct tensor *w, struct tensor *v, struct tensor *dw,
                          float lr, float wd, float momentum, int nesterov)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    EXPECT(tensor_count(v) == tensor_count(w) && tensor_count(dw) == tensor_count(w),
           "sgd: w, v and dw sizes differ (%zu, %zu, %zu)", tensor_count(w), tensor_count(v),
           tensor_count(dw));
    sgd_update_cpu(w->data, v->data, dw->data, lr, wd, momentum, nesterov, tensor_count(w));
cleanup:
    return rc;
}

static int cpu_param_lerp(void *ctx, struct tensor *avg, struct tensor *w, float t,
                          int copy_back)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    TRY(backend_check_lerp(avg, w));
    param_lerp_cpu(avg->data, w->data, t, copy_back, tensor_count(avg));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the plan's own ops */

static int cpu_augment_step(void *ctx, struct tensor *x, struct tensor *labels,
                            const struct tensor *images, const struct tensor *image_labels,
                            const struct tensor *rows, const struct tensor *cursor, int stride,
                            const struct augment_params *aug, uint64_t seed)
{
    int rc = DR_OK;
    TRY(backend_check_augment_step(x, rows, cursor, stride));
    const int32_t *cur = cursor->data;
    long first = (long)cur[CURSOR_INDEX] * stride;
    EXPECT(cur[CURSOR_INDEX] >= 0 && first + x->n <= (long)tensor_count(rows),
           "augment_step: batch %d of stride %d needs rows up to %ld of %zu",
           (int)cur[CURSOR_INDEX], stride, first + x->n, tensor_count(rows));
    struct tensor window = *rows;
    window.data = (int32_t *)rows->data + first;
    window.n = x->n;
    window.c = window.h = window.w = 1;
    TRY(cpu_augment(ctx, x, labels, images, image_labels, &window, aug, seed,
                    (int)cur[CURSOR_EPOCH]));
cleanup:
    return rc;
}

static int cpu_sgd_multi(void *ctx, const struct sgd_item *items, int count,
                         const struct tensor *lr_table, const struct tensor *cursor,
                         float momentum, int nesterov)
{
    int rc = DR_OK;
    TRY(backend_check_sgd_multi(items, count, lr_table, cursor));
    const int32_t *cur = cursor->data;
    EXPECT(cur[CURSOR_STEP] >= 0 && (size_t)cur[CURSOR_STEP] < tensor_count(lr_table),
           "sgd_multi: step %d outside the learning-rate table", (int)cur[CURSOR_STEP]);
    float lr = ((const float *)lr_table->data)[cur[CURSOR_STEP]];
    for (int k = 0; k < count; k++) {
        const struct sgd_item *it = &items[k];
        if (it->train_epochs > 0 && cur[CURSOR_EPOCH] >= it->train_epochs) continue;
        TRY(cpu_sgd_update(ctx, it->w, it->v, it->dw, (float)((double)lr * it->lr_scale), it->wd,
                           momentum, nesterov));
    }
cleanup:
    return rc;
}

static int cpu_lerp_multi(void *ctx, const struct lerp_item *items, int count, float t,
                          int copy_back)
{
    int rc = DR_OK;
    TRY(backend_check_lerp_multi(items, count));
    for (int k = 0; k < count; k++) TRY(cpu_param_lerp(ctx, items[k].avg, items[k].w, t, copy_back));
cleanup:
    return rc;
}

static int cpu_cursor_advance(void *ctx, struct tensor *cursor)
{
    int rc = DR_OK;
    cpu_enter(ctx);
    TRY(backend_check_cursor(cursor, "cursor_advance"));
    ((int32_t *)cursor->data)[CURSOR_STEP]++;
    ((int32_t *)cursor->data)[CURSOR_INDEX]++;
cleanup:
    return rc;
}

static const struct backend_ops cpu_ops;

/* The plan with the batch-norm patterns of plan_cpu.c fused. */
static int cpu_plan_compute(void *ctx, const struct plan *p)
{
    struct cpu_ctx *c = ctx;
    const struct backend b = {&cpu_ops, c};
    cpu_enter(ctx);
    return cpu_plan_run(&c->plans, &b, p);
}

/* backend_ops.plan_forget: plan p's analysis goes (p is being freed). */
static void cpu_plan_forget_op(void *ctx, const struct plan *p)
{
    cpu_plan_forget(((struct cpu_ctx *)ctx)->plans, p);
}

/* backend_ops.muon_multi: Muon's multi-tensor step (kernels/cpu/muon.c). */
static int cpu_muon_multi(void *ctx, const struct sgd_item *items, int count,
                          const struct tensor *lr_table, const struct tensor *cursor,
                          float momentum, int nesterov, const struct muon_ns *ns)
{
    cpu_enter(ctx);
    return muon_multi_cpu(items, count, lr_table, cursor, momentum, nesterov, ns);
}

/* ------------------------------------------------------------------ the table */

static const struct backend_ops cpu_ops = {
    .name = "cpu",
    .destroy = cpu_destroy,
    .device_name = cpu_device_name,
    .tensor_alloc = cpu_tensor_alloc,
    .tensor_free = cpu_tensor_free,
    .tensor_zero = cpu_tensor_zero,
    .tensor_write = cpu_tensor_write,
    .tensor_read = cpu_tensor_read,
    .synchronize = cpu_synchronize,
    .augment = cpu_augment,
    .conv_forward = cpu_conv_forward,
    .conv_backward = cpu_conv_backward,
    .bn_forward_train = cpu_bn_forward_train,
    .bn_forward_eval = cpu_bn_forward_eval,
    .bn_backward = cpu_bn_backward,
    .act_forward = cpu_act_forward,
    .act_backward = cpu_act_backward,
    .pool_forward = cpu_pool_forward,
    .pool_backward = cpu_pool_backward,
    .concat_forward = cpu_concat_forward,
    .concat_backward = cpu_concat_backward,
    .add_forward = cpu_add_forward,
    .scale_forward = cpu_scale_forward,
    .scaled_copy = cpu_scaled_copy,
    .flatten_forward = cpu_flatten_forward,
    .flatten_backward = cpu_flatten_backward,
    .linear_forward = cpu_linear_forward,
    .linear_backward = cpu_linear_backward,
    .xent_forward = cpu_xent_forward,
    .xent_backward = cpu_xent_backward,
    .sgd_update = cpu_sgd_update,
    .param_lerp = cpu_param_lerp,
    .augment_step = cpu_augment_step,
    .sgd_multi = cpu_sgd_multi,
    .lerp_multi = cpu_lerp_multi,
    .cursor_advance = cpu_cursor_advance,
    .plan_compute = cpu_plan_compute,
    .plan_forget = cpu_plan_forget_op,
    .counters = NULL,   /* the CPU engine counts nothing */
    .counters_reset = NULL,
    .muon_multi = cpu_muon_multi,
};

/* Processor model from /proc/cpuinfo ("model name"), or "" when it cannot be read. */
static void cpu_model_name(char *out, size_t size)
{
    char line[256];
    FILE *f = fopen("/proc/cpuinfo", "r");
    out[0] = '\0';
    if (!f) return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon) continue;
        colon++;
        while (*colon == ' ' || *colon == '\t') colon++;
        colon[strcspn(colon, "\n")] = '\0';
        snprintf(out, size, "%s", colon);
        break;
    }
    fclose(f);
}

int backend_cpu_create(struct backend *b, int threads)
{
    int rc = DR_OK;
    struct cpu_ctx *c = NULL;
    char model[128];
    b->ops = NULL;
    b->ctx = NULL;
    if (threads < 0) FAIL(DR_ERR_USAGE, "threads must be 0 (all cores) or more, not %d", threads);
    c = calloc(1, sizeof *c);
    CHECK_ALLOC(c, "the CPU backend");
    c->threads = threads > 0 ? threads : omp_get_max_threads();
    omp_set_num_threads(c->threads);
    (void)cpu_isa_active();   /* the kernels' instruction set, chosen now from one thread */
    cpu_model_name(model, sizeof model);
#if defined(__x86_64__)
    const char *arch = "x86-64 CPU";
#elif defined(__aarch64__)
    const char *arch = "AArch64 CPU";
#else
    const char *arch = "CPU";
#endif
    if (model[0])
        snprintf(c->name, sizeof c->name, "%s (%s), %d thread%s", arch, model, c->threads,
                 c->threads == 1 ? "" : "s");
    else
        snprintf(c->name, sizeof c->name, "%s, %d thread%s", arch, c->threads,
                 c->threads == 1 ? "" : "s");
    b->ops = &cpu_ops;
    b->ctx = c;
    c = NULL;
cleanup:
    free(c);
    return rc;
}

/* The backend contract's argument checks, shared by every engine (see backend_check.h). */
#include "backend_check.h"

#include "../base/status.h"

int backend_check_pool(int *ho, int *wo, const struct tensor *y, const struct tensor *x,
                       const struct pool_attr *a)
{
    int rc = DR_OK;
    /* the kernels branch on max and treat anything else as average: an unknown kind must
     * not get that far */
    EXPECT(a->kind == POOL_MAX || a->kind == POOL_AVG, "pool: unknown kind %d", (int)a->kind);
    EXPECT(a->kh >= 1 && a->kw >= 1 && a->sh >= 1 && a->sw >= 1 && a->kh <= x->h &&
               a->kw <= x->w,
           "pool: window %dx%d stride %dx%d on a %dx%d plane", a->kh, a->kw, a->sh, a->sw, x->h,
           x->w);
    *ho = (x->h - a->kh) / a->sh + 1;
    *wo = (x->w - a->kw) / a->sw + 1;
    EXPECT(y->n == x->n && y->c == x->c && y->h == *ho && y->w == *wo,
           "pool: output (%d, %d, %d, %d), expected (%d, %d, %d, %d)", y->n, y->c, y->h, y->w,
           x->n, x->c, *ho, *wo);
cleanup:
    return rc;
}

int backend_check_linear(const struct tensor *y, const struct tensor *x, const struct tensor *w,
                         const struct tensor *b)
{
    int rc = DR_OK;
    EXPECT(x->h == 1 && x->w == 1 && y->h == 1 && y->w == 1 && y->n == x->n,
           "linear: input (%d, %d, %d, %d) / output (%d, %d, %d, %d) are not (n, f, 1, 1)", x->n,
           x->c, x->h, x->w, y->n, y->c, y->h, y->w);
    EXPECT(w->n == y->c && w->c == x->c && w->h == 1 && w->w == 1,
           "linear: weight (%d, %d, %d, %d) for %d -> %d features", w->n, w->c, w->h, w->w, x->c,
           y->c);
    EXPECT(!b || !b->data || tensor_count(b) == (size_t)y->c, "linear: bias of %zu for %d outputs",
           b ? tensor_count(b) : (size_t)0, y->c);
cleanup:
    return rc;
}

int backend_check_concat_grads(int *missing, int *missing_c, struct tensor *const *dxs,
                               const struct tensor *dy, int count)
{
    int rc = DR_OK, known = 0;
    *missing = -1;
    *missing_c = 0;
    EXPECT(count >= 1, "concat backward of %d inputs", count);
    for (int i = 0; i < count; i++) {
        if (!dxs[i]) {
            EXPECT(*missing < 0, "concat backward: more than one input without a gradient tensor");
            *missing = i;
            continue;
        }
        EXPECT(dxs[i]->n == dy->n && dxs[i]->h == dy->h && dxs[i]->w == dy->w,
               "concat backward: gradient %d is (%d, %d, %d, %d), dy (%d, %d, %d, %d)", i,
               dxs[i]->n, dxs[i]->c, dxs[i]->h, dxs[i]->w, dy->n, dy->c, dy->h, dy->w);
        known += dxs[i]->c;
    }
    EXPECT(known <= dy->c && (*missing >= 0 || known == dy->c),
           "concat backward: gradients have %d channels, dy %d", known, dy->c);
    if (*missing >= 0) *missing_c = dy->c - known;
cleanup:
    return rc;
}

int backend_check_bn_parts(int *parts, const struct tensor *x, const struct tensor *save_mean,
                           const struct tensor *save_invstd, const struct bn_attr *a)
{
    int rc = DR_OK;
    const char *op = a ? "bn" : "bn backward";
    const size_t c = (size_t)x->c, saved = save_mean ? tensor_count(save_mean) : 0;
    *parts = 1;
    if (a) {
        EXPECT(a->splits >= 0, "%s: ghost batch norm with %d splits", op, a->splits);
        *parts = a->splits > 1 ? a->splits : 1;
    } else if (c > 0) {
        EXPECT(saved >= c && saved % c == 0, "%s: %zu saved statistics for %zu channels", op,
               saved, c);
        *parts = (int)(saved / c);
    }
    EXPECT(x->n % *parts == 0, "%s: a batch of %d images does not split into %d equal parts",
           op, x->n, *parts);
    EXPECT(save_mean && save_mean->data && save_invstd && save_invstd->data &&
               saved == (size_t)*parts * c && tensor_count(save_invstd) == saved,
           "%s: saved statistics of %zu and %zu values for %d parts of %zu channels", op,
           saved, save_invstd ? tensor_count(save_invstd) : (size_t)0, *parts, c);
cleanup:
    return rc;
}

static const char *kind_name(enum tensor_kind k)
{
    static const char *const names[] = {"ACT", "PARAM", "F32", "I32", "U8"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "unknown";
}

int backend_check_augment(size_t *dataset_rows, const struct tensor *x,
                          const struct tensor *labels, const struct tensor *images,
                          const struct tensor *image_labels, const struct tensor *rows,
                          const struct augment_params *aug)
{
    int rc = DR_OK;
    const size_t image_bytes = (size_t)AUGMENT_CHANNELS * AUGMENT_IMAGE * AUGMENT_IMAGE;
    *dataset_rows = tensor_count(images) / image_bytes;
    EXPECT(x->c == AUGMENT_CHANNELS && x->h == AUGMENT_IMAGE && x->w == AUGMENT_IMAGE,
           "augment: batch tensor is (%d, %d, %d, %d), not (n, 3, 32, 32)", x->n, x->c, x->h,
           x->w);
    EXPECT(labels->kind == TENSOR_I32 && rows->kind == TENSOR_I32 && images->kind == TENSOR_U8 &&
               image_labels->kind == TENSOR_U8,
           "augment: tensor kinds (labels %s, rows %s, images %s, image labels %s)",
           kind_name(labels->kind), kind_name(rows->kind), kind_name(images->kind),
           kind_name(image_labels->kind));
    EXPECT(tensor_count(rows) >= (size_t)x->n && tensor_count(labels) >= (size_t)x->n,
           "augment: %zu rows and %zu labels for a batch of %d", tensor_count(rows),
           tensor_count(labels), x->n);
    EXPECT(tensor_count(image_labels) >= *dataset_rows, "augment: %zu labels for %zu images",
           tensor_count(image_labels), *dataset_rows);
    EXPECT(!aug || (aug->pad >= 0 && aug->pad <= AUGMENT_MAX_PAD && aug->cutout >= 0 &&
                    aug->cutout <= AUGMENT_MAX_CUTOUT),
           "augment: pad %d or cutout %d out of range", aug ? aug->pad : 0,
           aug ? aug->cutout : 0);
cleanup:
    return rc;
}

int backend_check_lerp(const struct tensor *avg, const struct tensor *w)
{
    int rc = DR_OK;
    EXPECT(avg && w && avg->data && w->data, "param_lerp: a tensor is missing");
    EXPECT(avg->kind == w->kind && (avg->kind == TENSOR_PARAM || avg->kind == TENSOR_F32),
           "param_lerp: tensors of kinds %s and %s (both must be PARAM or F32)",
           kind_name(avg->kind), kind_name(w->kind));
    EXPECT(avg->n == w->n && avg->c == w->c && avg->h == w->h && avg->w == w->w,
           "param_lerp: average (%d, %d, %d, %d) unlike the weights (%d, %d, %d, %d)", avg->n,
           avg->c, avg->h, avg->w, w->n, w->c, w->h, w->w);
cleanup:
    return rc;
}

int backend_check_cursor(const struct tensor *cursor, const char *op)
{
    int rc = DR_OK;
    EXPECT(cursor && cursor->data && cursor->kind == TENSOR_I32 &&
               tensor_count(cursor) == PLAN_CURSOR_LEN,
           "%s: the step cursor is not an I32 tensor of %d values", op, (int)PLAN_CURSOR_LEN);
cleanup:
    return rc;
}

int backend_check_augment_step(const struct tensor *x, const struct tensor *rows,
                               const struct tensor *cursor, int stride)
{
    int rc = DR_OK;
    TRY(backend_check_cursor(cursor, "augment_step"));
    EXPECT(rows && rows->kind == TENSOR_I32 && stride >= x->n,
           "augment_step: rows must be I32 and the stride (%d) at least the batch (%d)", stride,
           x->n);
cleanup:
    return rc;
}

int backend_check_sgd_multi(const struct sgd_item *items, int count,
                            const struct tensor *lr_table, const struct tensor *cursor)
{
    int rc = DR_OK;
    TRY(backend_check_cursor(cursor, "sgd_multi"));
    EXPECT(lr_table && lr_table->data && lr_table->kind == TENSOR_F32 &&
               tensor_count(lr_table) > 0,
           "sgd_multi: the learning-rate table is not an F32 tensor of at least one value");
    EXPECT(count >= 0 && (items || count == 0), "sgd_multi: %d items", count);
    for (int k = 0; k < count; k++) {
        const struct sgd_item *it = &items[k];
        EXPECT(it->w && it->v && it->dw && it->w->data && it->v->data && it->dw->data,
               "sgd_multi: item %d lacks a tensor", k);
        EXPECT(it->w->kind == TENSOR_PARAM && it->v->kind == TENSOR_PARAM &&
                   it->dw->kind == TENSOR_PARAM,
               "sgd_multi: item %d is not of PARAM tensors", k);
        EXPECT(tensor_count(it->v) == tensor_count(it->w) &&
                   tensor_count(it->dw) == tensor_count(it->w),
               "sgd_multi: item %d: w, v and dw sizes differ (%zu, %zu, %zu)", k,
               tensor_count(it->w), tensor_count(it->v), tensor_count(it->dw));
        EXPECT(it->train_epochs >= 0, "sgd_multi: item %d trains for %d epochs", k,
               it->train_epochs);
    }
cleanup:
    return rc;
}

int backend_check_lerp_multi(const struct lerp_item *items, int count)
{
    int rc = DR_OK;
    EXPECT(count >= 0 && (items || count == 0), "lerp_multi: %d items", count);
    for (int k = 0; k < count; k++) TRY(backend_check_lerp(items[k].avg, items[k].w));
cleanup:
    return rc;
}

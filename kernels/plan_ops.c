/* The op table (kernels/plan.h plan_op_desc): one row per op, stating its slots (counts,
 * which may be NULL, which are added to or updated) and its shape rule, once for every
 * engine. plan_node_check applies a row's slot masks and then its rule, so a rule may take
 * every slot its row requires as set; an engine's runner may take the node as its rule
 * left it and checks only what it alone can see (values in its own memory: labels, rows,
 * the cursor's step). Each rule reports a mismatch as an internal error (a bug of the
 * node's builder) naming the op, and returns DR_ERR_INTERNAL. */
#include "plan.h"

#include "../base/status.h"

/* ---------------------------------------------------------------- helpers */

static const char *kind_name(enum tensor_kind k)
{
    static const char *const names[] = {"ACT", "PARAM", "F32", "I32", "U8"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "unknown";
}

/* Whether t is there with data (an output without data is not computed). */
static int has(const struct tensor *t)
{
    return t && t->data;
}

/* Whether t is a vector of c values with data (batch-norm statistics and parameters). */
static int vec_ok(const struct tensor *t, int c)
{
    return has(t) && tensor_count(t) == (size_t)c;
}

/* The step cursor: an I32 tensor of PLAN_CURSOR_LEN values with data. Its values are the
 * engine's to check (they may live on the device). */
static int cursor_rule(const char *op, const struct tensor *cursor)
{
    int rc = DR_OK;
    EXPECT(has(cursor) && cursor->kind == TENSOR_I32 && tensor_count(cursor) == PLAN_CURSOR_LEN,
           "%s: the step cursor is not an I32 tensor of %d values", op, (int)PLAN_CURSOR_LEN);
cleanup:
    return rc;
}

/* y (or dy) = conv(x, w) + b, b optional: the weight fits x and the attributes, the
 * output plane is (h + 2 pad - k) / stride + 1 on each side. */
static int conv_rule(const char *op, const struct tensor *y, const struct tensor *x,
                     const struct tensor *w, const struct tensor *b, const struct conv_attr *a)
{
    int rc = DR_OK;
    EXPECT(w->c == x->c && w->h == a->k && w->w == a->k && a->stride >= 1 && a->pad >= 0,
           "%s: weight (%d, %d, %d, %d) does not fit input channels %d, k %d, stride %d, pad %d",
           op, w->n, w->c, w->h, w->w, x->c, a->k, a->stride, a->pad);
    const int ho = (x->h + 2 * a->pad - a->k) / a->stride + 1;
    const int wo = (x->w + 2 * a->pad - a->k) / a->stride + 1;
    EXPECT(ho >= 1 && wo >= 1, "%s: %dx%d input too small for k %d pad %d", op, x->h, x->w,
           a->k, a->pad);
    EXPECT(y->n == x->n && y->c == w->n && y->h == ho && y->w == wo,
           "%s: output (%d, %d, %d, %d), expected (%d, %d, %d, %d)", op, y->n, y->c, y->h,
           y->w, x->n, w->n, ho, wo);
    EXPECT(!has(b) || tensor_count(b) == (size_t)w->n, "%s: bias of %zu for %d outputs", op,
           tensor_count(b), w->n);
cleanup:
    return rc;
}

/* The parts of a train-mode batch norm over x (ghost batch norm): splits not negative, x->n
 * a multiple of the parts, save_mean and save_invstd with data and parts * x->c values. */
static int bn_parts_rule(const char *op, const struct tensor *x, const struct tensor *save_mean,
                         const struct tensor *save_invstd, const struct bn_attr *a)
{
    int rc = DR_OK;
    const size_t c = (size_t)x->c, saved = has(save_mean) ? tensor_count(save_mean) : 0;
    EXPECT(!a || a->splits >= 0, "%s: ghost batch norm with %d splits", op, a->splits);
    EXPECT(a || c == 0 || (saved >= c && saved % c == 0),
           "%s: %zu saved statistics for %zu channels", op, saved, c);
    const int parts = plan_bn_parts(x, save_mean, a);
    EXPECT(x->n % parts == 0, "%s: a batch of %d images does not split into %d equal parts", op,
           x->n, parts);
    EXPECT(has(save_invstd) && saved == (size_t)parts * c && tensor_count(save_invstd) == saved,
           "%s: saved statistics of %zu and %zu values for %d parts of %zu channels", op, saved,
           has(save_invstd) ? tensor_count(save_invstd) : (size_t)0, parts, c);
cleanup:
    return rc;
}

/* y (or dy) of a pool over x with attributes a: a known kind (the kernels branch on max
 * and treat anything else as average), a window within the plane, the output plane. */
static int pool_rule(const char *op, const struct tensor *y, const struct tensor *x,
                     const struct pool_attr *a)
{
    int rc = DR_OK;
    EXPECT(a->kind == POOL_MAX || a->kind == POOL_AVG, "%s: unknown kind %d", op, (int)a->kind);
    EXPECT(a->kh >= 1 && a->kw >= 1 && a->sh >= 1 && a->sw >= 1 && a->kh <= x->h &&
               a->kw <= x->w,
           "%s: window %dx%d stride %dx%d on a %dx%d plane", op, a->kh, a->kw, a->sh, a->sw,
           x->h, x->w);
    const int ho = (x->h - a->kh) / a->sh + 1, wo = (x->w - a->kw) / a->sw + 1;
    EXPECT(y->n == x->n && y->c == x->c && y->h == ho && y->w == wo,
           "%s: output (%d, %d, %d, %d), expected (%d, %d, %d, %d)", op, y->n, y->c, y->h, y->w,
           x->n, x->c, ho, wo);
cleanup:
    return rc;
}

/* y (or dy) (n, out, 1, 1) = linear of x (n, in, 1, 1) with w (out, in, 1, 1) and the
 * optional bias b (out). */
static int linear_rule(const char *op, const struct tensor *y, const struct tensor *x,
                       const struct tensor *w, const struct tensor *b)
{
    int rc = DR_OK;
    EXPECT(x->h == 1 && x->w == 1 && y->h == 1 && y->w == 1 && y->n == x->n,
           "%s: input (%d, %d, %d, %d) / output (%d, %d, %d, %d) are not (n, f, 1, 1)", op,
           x->n, x->c, x->h, x->w, y->n, y->c, y->h, y->w);
    EXPECT(w->n == y->c && w->c == x->c && w->h == 1 && w->w == 1,
           "%s: weight (%d, %d, %d, %d) for %d -> %d features", op, w->n, w->c, w->h, w->w,
           x->c, y->c);
    EXPECT(!has(b) || tensor_count(b) == (size_t)y->c, "%s: bias of %zu for %d outputs", op,
           tensor_count(b), y->c);
cleanup:
    return rc;
}

/* A backward op's input gradient dx, when computed, has x's shape. */
static int dx_rule(const char *op, const struct tensor *dx, const struct tensor *x)
{
    int rc = DR_OK;
    EXPECT(!has(dx) || tensor_same_shape(dx, x),
           "%s: dx (%d, %d, %d, %d) unlike x (%d, %d, %d, %d)", op, dx->n, dx->c, dx->h, dx->w,
           x->n, x->c, x->h, x->w);
cleanup:
    return rc;
}

/* ---------------------------------------------------------------- the rules */

/* x (n, 3, 32, 32) and labels I32 from images U8 (whole images) and image_labels U8 (one
 * per image), rows I32, stride at least the batch, at least n rows and labels, aug's pad
 * and cutout in range. The rows' values are the engine's to check. */
static int rule_batch(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->dst[PLAN_BATCH_X], *labels = n->dst[PLAN_BATCH_LABELS];
    const struct tensor *images = n->src[PLAN_BATCH_IMAGES];
    const struct tensor *il = n->src[PLAN_BATCH_IMAGE_LABELS], *rows = n->src[PLAN_BATCH_ROWS];
    const struct augment_params *aug = n->par.batch.aug;
    const size_t image_bytes = (size_t)AUGMENT_CHANNELS * AUGMENT_IMAGE * AUGMENT_IMAGE;
    const size_t dataset_rows = tensor_count(images) / image_bytes;
    TRY(cursor_rule("batch", n->src[PLAN_BATCH_CURSOR]));
    EXPECT(x->c == AUGMENT_CHANNELS && x->h == AUGMENT_IMAGE && x->w == AUGMENT_IMAGE,
           "batch: batch tensor is (%d, %d, %d, %d), not (n, 3, 32, 32)", x->n, x->c, x->h,
           x->w);
    EXPECT(labels->kind == TENSOR_I32 && rows->kind == TENSOR_I32 && images->kind == TENSOR_U8 &&
               il->kind == TENSOR_U8,
           "batch: tensor kinds (labels %s, rows %s, images %s, image labels %s)",
           kind_name(labels->kind), kind_name(rows->kind), kind_name(images->kind),
           kind_name(il->kind));
    EXPECT(n->par.batch.stride >= x->n, "batch: the stride (%d) is below the batch (%d)",
           n->par.batch.stride, x->n);
    EXPECT(tensor_count(rows) >= (size_t)x->n && tensor_count(labels) >= (size_t)x->n,
           "batch: %zu rows and %zu labels for a batch of %d", tensor_count(rows),
           tensor_count(labels), x->n);
    EXPECT(tensor_count(il) >= dataset_rows, "batch: %zu labels for %zu images",
           tensor_count(il), dataset_rows);
    EXPECT(!aug || (aug->pad >= 0 && aug->pad <= AUGMENT_MAX_PAD && aug->cutout >= 0 &&
                    aug->cutout <= AUGMENT_MAX_CUTOUT),
           "batch: pad %d or cutout %d out of range", aug ? aug->pad : 0, aug ? aug->cutout : 0);
cleanup:
    return rc;
}

static int rule_conv_fwd(const struct plan_node *n)
{
    return conv_rule("conv_fwd", n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_W], n->src[PLAN_B],
                     &n->par.conv);
}

static int rule_conv_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *dw = n->dst[PLAN_DW], *w = n->src[PLAN_BWD_W];
    TRY(conv_rule("conv_bwd", n->src[PLAN_DY], n->src[PLAN_BWD_X], w, n->dst[PLAN_DB],
                  &n->par.conv));
    TRY(dx_rule("conv_bwd", n->dst[PLAN_DX], n->src[PLAN_BWD_X]));
    EXPECT(!has(dw) || tensor_count(dw) == tensor_count(w), "conv_bwd: dw unlike w");
cleanup:
    return rc;
}

static int rule_bn_fwd_train(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *y = n->dst[PLAN_Y], *x = n->src[PLAN_X];
    EXPECT(tensor_same_shape(y, x), "bn_fwd_train: output (%d, %d, %d, %d) unlike input", y->n,
           y->c, y->h, y->w);
    TRY(bn_parts_rule("bn_fwd_train", x, n->dst[PLAN_SAVE_MEAN], n->dst[PLAN_SAVE_INVSTD],
                      &n->par.bn));
    EXPECT(vec_ok(n->dst[PLAN_RUNNING_MEAN], x->c) && vec_ok(n->dst[PLAN_RUNNING_VAR], x->c) &&
               vec_ok(n->src[PLAN_GAMMA], x->c) && vec_ok(n->src[PLAN_BETA], x->c),
           "bn_fwd_train: a statistics or parameter vector is not of %d channels", x->c);
cleanup:
    return rc;
}

static int rule_bn_fwd_eval(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *y = n->dst[PLAN_Y], *x = n->src[PLAN_X];
    EXPECT(tensor_same_shape(y, x), "bn_fwd_eval: output (%d, %d, %d, %d) unlike input", y->n,
           y->c, y->h, y->w);
    EXPECT(vec_ok(n->src[PLAN_RUNNING_MEAN], x->c) && vec_ok(n->src[PLAN_RUNNING_VAR], x->c) &&
               vec_ok(n->src[PLAN_GAMMA], x->c) && vec_ok(n->src[PLAN_BETA], x->c),
           "bn_fwd_eval: a statistics or parameter vector is not of %d channels", x->c);
cleanup:
    return rc;
}

static int rule_bn_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_BWD_X];
    const struct tensor *dgamma = n->dst[PLAN_DGAMMA], *dbeta = n->dst[PLAN_DBETA];
    EXPECT(tensor_same_shape(n->src[PLAN_DY], x), "bn_bwd: dy unlike x (%d, %d, %d, %d)", x->n,
           x->c, x->h, x->w);
    TRY(dx_rule("bn_bwd", n->dst[PLAN_DX], x));
    TRY(bn_parts_rule("bn_bwd", x, n->src[PLAN_BWD_SAVE_MEAN], n->src[PLAN_BWD_SAVE_INVSTD],
                      NULL));
    EXPECT(vec_ok(n->src[PLAN_BWD_GAMMA], x->c) && (!has(dgamma) || vec_ok(dgamma, x->c)) &&
               (!has(dbeta) || vec_ok(dbeta, x->c)),
           "bn_bwd: a statistics or parameter vector is not of %d channels", x->c);
cleanup:
    return rc;
}

static int rule_act_fwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *y = n->dst[PLAN_Y], *x = n->src[PLAN_X];
    EXPECT((unsigned)n->par.act.kind < ACT_KIND_COUNT, "act_fwd: unknown kind %d",
           (int)n->par.act.kind);
    EXPECT(tensor_count(y) == tensor_count(x), "act_fwd: %zu outputs for %zu inputs",
           tensor_count(y), tensor_count(x));
cleanup:
    return rc;
}

static int rule_act_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *dx = n->dst[PLAN_DX], *x = n->src[PLAN_BWD_X];
    EXPECT((unsigned)n->par.act.kind < ACT_KIND_COUNT, "act_bwd: unknown kind %d",
           (int)n->par.act.kind);
    EXPECT(!has(dx) || (tensor_count(dx) == tensor_count(x) &&
                        tensor_count(n->src[PLAN_DY]) == tensor_count(x)),
           "act_bwd: sizes differ");
cleanup:
    return rc;
}

static int rule_pool_fwd(const struct plan_node *n)
{
    return pool_rule("pool_fwd", n->dst[PLAN_Y], n->src[PLAN_X], &n->par.pool);
}

static int rule_pool_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    if (!has(n->dst[PLAN_DX])) return DR_OK;   /* not computed */
    TRY(pool_rule("pool_bwd", n->src[PLAN_DY], n->src[PLAN_BWD_X], &n->par.pool));
    TRY(dx_rule("pool_bwd", n->dst[PLAN_DX], n->src[PLAN_BWD_X]));
cleanup:
    return rc;
}

/* every input of y's batch and plane, their channels y's */
static int rule_concat_fwd(const struct plan_node *n)
{
    int rc = DR_OK, total = 0;
    const struct tensor *y = n->dst[PLAN_Y];
    for (int i = 0; i < n->n_src; i++) {
        const struct tensor *x = n->src[i];
        EXPECT(x->n == y->n && x->h == y->h && x->w == y->w,
               "concat_fwd: input %d is (%d, %d, %d, %d), output (%d, %d, %d, %d)", i, x->n, x->c,
               x->h, x->w, y->n, y->c, y->h, y->w);
        total += x->c;
    }
    EXPECT(total == y->c, "concat_fwd: inputs have %d channels, output %d", total, y->c);
cleanup:
    return rc;
}

/* each input gradient of dy's batch and plane; at most one NULL (an input that needs none,
 * the image), whose channels are what dy has beyond the others' */
static int rule_concat_bwd(const struct plan_node *n)
{
    int rc = DR_OK, known = 0, missing = 0;
    const struct tensor *dy = n->src[PLAN_DY];
    for (int i = 0; i < n->n_dst; i++) {
        const struct tensor *dx = n->dst[i];
        if (!dx) {
            missing++;
            continue;
        }
        EXPECT(dx->n == dy->n && dx->h == dy->h && dx->w == dy->w,
               "concat_bwd: gradient %d is (%d, %d, %d, %d), dy (%d, %d, %d, %d)", i, dx->n,
               dx->c, dx->h, dx->w, dy->n, dy->c, dy->h, dy->w);
        known += dx->c;
    }
    EXPECT(missing <= 1, "concat_bwd: more than one input without a gradient tensor");
    EXPECT(known <= dy->c && (missing || known == dy->c),
           "concat_bwd: gradients have %d channels, dy %d", known, dy->c);
cleanup:
    return rc;
}

static int rule_add_fwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *y = n->dst[PLAN_Y];
    EXPECT(tensor_same_shape(y, n->src[PLAN_ADD_A]) && tensor_same_shape(y, n->src[PLAN_ADD_B]),
           "add_fwd: shapes differ");
cleanup:
    return rc;
}

static int rule_scale_fwd(const struct plan_node *n)
{
    int rc = DR_OK;
    EXPECT(tensor_count(n->dst[PLAN_Y]) == tensor_count(n->src[PLAN_X]),
           "scale_fwd: sizes differ");
cleanup:
    return rc;
}

static int rule_scaled_copy(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *dx = n->dst[PLAN_DX], *dy = n->src[PLAN_DY];
    EXPECT(!has(dx) || tensor_count(dx) == tensor_count(dy),
           "scaled_copy: %zu from %zu elements", tensor_count(dx), tensor_count(dy));
cleanup:
    return rc;
}

/* y (n, c*h*w, 1, 1) for x (n, c, h, w) */
static int flat_rule(const char *op, const struct tensor *y, const struct tensor *x)
{
    int rc = DR_OK;
    EXPECT(y->n == x->n && y->c == x->c * x->h * x->w && y->h == 1 && y->w == 1,
           "%s: flat (%d, %d, %d, %d) for (%d, %d, %d, %d)", op, y->n, y->c, y->h, y->w, x->n,
           x->c, x->h, x->w);
cleanup:
    return rc;
}

static int rule_flatten_fwd(const struct plan_node *n)
{
    return flat_rule("flatten_fwd", n->dst[PLAN_Y], n->src[PLAN_X]);
}

static int rule_flatten_bwd(const struct plan_node *n)
{
    const struct tensor *dx = n->dst[PLAN_DX];
    return has(dx) ? flat_rule("flatten_bwd", n->src[PLAN_DY], dx) : DR_OK;
}

static int rule_linear_fwd(const struct plan_node *n)
{
    return linear_rule("linear_fwd", n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_W],
                       n->src[PLAN_B]);
}

static int rule_linear_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *dw = n->dst[PLAN_DW], *w = n->src[PLAN_BWD_W];
    TRY(linear_rule("linear_bwd", n->src[PLAN_DY], n->src[PLAN_BWD_X], w, n->dst[PLAN_DB]));
    TRY(dx_rule("linear_bwd", n->dst[PLAN_DX], n->src[PLAN_BWD_X]));
    EXPECT(!has(dw) || tensor_count(dw) == tensor_count(w), "linear_bwd: dw unlike w");
cleanup:
    return rc;
}

/* logits and probs (n, k, 1, 1) alike, stats of two values, a label for each example (its
 * value is the engine's to check) */
static int rule_xent_fwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *logits = n->src[PLAN_XENT_LOGITS], *stats = n->dst[PLAN_XENT_STATS];
    const struct tensor *labels = n->src[PLAN_XENT_LABELS];
    EXPECT(logits->h == 1 && logits->w == 1 && tensor_same_shape(n->dst[PLAN_XENT_PROBS], logits),
           "xent_fwd: logits (%d, %d, %d, %d) are not (n, k, 1, 1) or unlike probs", logits->n,
           logits->c, logits->h, logits->w);
    EXPECT(tensor_count(stats) >= 2, "xent_fwd: statistics vector of %zu", tensor_count(stats));
    EXPECT(tensor_count(labels) >= (size_t)logits->n, "xent_fwd: %zu labels for %d examples",
           tensor_count(labels), logits->n);
cleanup:
    return rc;
}

static int rule_xent_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *probs = n->src[PLAN_XENT_BWD_PROBS];
    const struct tensor *labels = n->src[PLAN_XENT_LABELS];
    EXPECT(tensor_same_shape(n->dst[PLAN_XENT_DLOGITS], probs) && probs->h == 1 && probs->w == 1,
           "xent_bwd: dlogits unlike probs (%d, %d, %d, %d)", probs->n, probs->c, probs->h,
           probs->w);
    EXPECT(tensor_count(labels) >= (size_t)probs->n, "xent_bwd: %zu labels for %d examples",
           tensor_count(labels), probs->n);
cleanup:
    return rc;
}

/* count >= 0 items (items given when count > 0), each with w, v and dw present, PARAM, of
 * one element count, train_epochs >= 0; lr_table F32 with at least one value; the cursor */
static int rule_sgd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *lr_table = n->src[PLAN_SGD_LR_TABLE];
    const struct sgd_item *items = n->par.sgd.items;
    const int count = n->par.sgd.count;
    TRY(cursor_rule("sgd", n->src[PLAN_SGD_CURSOR]));
    EXPECT(has(lr_table) && lr_table->kind == TENSOR_F32 && tensor_count(lr_table) > 0,
           "sgd: the learning-rate table is not an F32 tensor of at least one value");
    EXPECT(count >= 0 && (items || count == 0), "sgd: %d items", count);
    for (int k = 0; k < count; k++) {
        const struct sgd_item *it = &items[k];
        EXPECT(has(it->w) && has(it->v) && has(it->dw), "sgd: item %d lacks a tensor", k);
        EXPECT(it->w->kind == TENSOR_PARAM && it->v->kind == TENSOR_PARAM &&
                   it->dw->kind == TENSOR_PARAM,
               "sgd: item %d is not of PARAM tensors", k);
        EXPECT(tensor_count(it->v) == tensor_count(it->w) &&
                   tensor_count(it->dw) == tensor_count(it->w),
               "sgd: item %d: w, v and dw sizes differ (%zu, %zu, %zu)", k, tensor_count(it->w),
               tensor_count(it->v), tensor_count(it->dw));
        EXPECT(it->train_epochs >= 0, "sgd: item %d trains for %d epochs", k, it->train_epochs);
    }
cleanup:
    return rc;
}

/* As SGD's, and each item's w a matrix (w->n rows, the rest columns, both > 0, the
 * columns within int); the
 * Newton-Schulz settings with steps >= 0 */
static int rule_muon(const struct plan_node *n)
{
    int rc = DR_OK;
    struct plan_node as_sgd = *n;
    as_sgd.par.sgd.items = n->par.muon.items;
    as_sgd.par.sgd.count = n->par.muon.count;
    TRY(rule_sgd(&as_sgd));
    EXPECT(n->par.muon.ns.steps >= 0, "muon: %d Newton-Schulz steps", n->par.muon.ns.steps);
    for (int k = 0; k < n->par.muon.count; k++) {
        const struct tensor *w = n->par.muon.items[k].w;
        EXPECT(w->n > 0 && tensor_count(w) / (size_t)w->n > 0 &&
                   tensor_count(w) / (size_t)w->n <= INT32_MAX,
               "muon: item %d is not a matrix (%d, %d, %d, %d)", k, w->n, w->c, w->h, w->w);
    }
cleanup:
    return rc;
}

/* count >= 0 items (items given when count > 0), each avg and w present, of one shape and
 * kind, PARAM or F32 */
static int rule_lerp(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct lerp_item *items = n->par.lerp.items;
    const int count = n->par.lerp.count;
    EXPECT(count >= 0 && (items || count == 0), "lerp: %d items", count);
    for (int k = 0; k < count; k++) {
        const struct tensor *avg = items[k].avg, *w = items[k].w;
        EXPECT(has(avg) && has(w), "lerp: item %d lacks a tensor", k);
        EXPECT(avg->kind == w->kind && (avg->kind == TENSOR_PARAM || avg->kind == TENSOR_F32),
               "lerp: item %d of kinds %s and %s (both must be PARAM or F32)", k,
               kind_name(avg->kind), kind_name(w->kind));
        EXPECT(tensor_same_shape(avg, w),
               "lerp: item %d: average (%d, %d, %d, %d) unlike the weights (%d, %d, %d, %d)", k,
               avg->n, avg->c, avg->h, avg->w, w->n, w->c, w->h, w->w);
    }
cleanup:
    return rc;
}

static int rule_cursor_advance(const struct plan_node *n)
{
    return cursor_rule("cursor_advance", n->dst[PLAN_CURSOR]);
}

/* Whether coef holds the coefficients of a batch norm of `parts` parts over c channels. */
static int coef_fits(const struct tensor *coef, int parts, int c)
{
    return coef && coef->data && coef->kind == TENSOR_F32 &&
           tensor_count(coef) == (size_t)PLAN_BN_COEF_PER_CHANNEL * (size_t)parts * (size_t)c;
}

/* Whether vec holds the vectors of a batch norm over c channels (enum plan_bn_vec). */
static int bn_vec_fits(const struct tensor *vec, int c)
{
    return has(vec) && vec->kind == TENSOR_F32 &&
           tensor_count(vec) == (size_t)PLAN_BNV_COUNT * plan_bn_vec_stride(c);
}

/* A fused batch norm's add before it whose first operand is recomputed (PLAN_BNA_ADD_PRO_X,
 * _COEF): both or neither, only with add_in, x like the operand, the coefficients of one
 * part. */
static int bn_act_add_pro_rule(const struct plan_node *n)
{
    int rc = DR_OK;
    const char *name = plan_op_name(n->op);
    const struct tensor *px = n->src[PLAN_BNA_ADD_PRO_X], *pc = n->src[PLAN_BNA_ADD_PRO_COEF];
    EXPECT(!px == !pc && (!px || n->par.bn_act.add_in),
           "plan node %s: a recomputed operand without its x, coefficients or add", name);
    if (px)
        EXPECT(tensor_same_shape(px, n->src[PLAN_BNA_ADD_A]) && coef_fits(pc, 1, px->c),
               "plan node %s: the recomputed operand's x or coefficients do not fit", name);
cleanup:
    return rc;
}

/* BN_ACT_TRAIN's vectors (PLAN_BNA_VEC, PLAN_BNA_VEC_IN): of x's channels, the same
 * handle when both are given, one part; with PLAN_BNA_VEC no elementwise output is kept
 * (keep_y 0, no residual, no pool) and the activation is a ReLU (the prologue's). */
static int bn_act_vec_rule(const struct plan_node *n)
{
    int rc = DR_OK;
    const char *name = plan_op_name(n->op);
    const struct tensor *x = n->src[PLAN_X], *vec = n->dst[PLAN_BNA_VEC];
    const struct tensor *in = n->src[PLAN_BNA_VEC_IN];
    if (!vec && !in) goto cleanup;
    EXPECT(plan_bn_parts(x, NULL, &n->par.bn_act.bn) == 1,
           "plan node %s: vectors with %d parts", name, n->par.bn_act.bn.splits);
    EXPECT((!vec || bn_vec_fits(vec, x->c)) && (!in || bn_vec_fits(in, x->c)) &&
               (!vec || !in || vec == in),
           "plan node %s: vectors not of %d channels, or two of them", name, x->c);
    EXPECT(!in || !n->par.bn_act.add_in, "plan node %s: sums from a convolution and an add",
           name);
    if (vec)
        EXPECT(!n->par.bn_act.keep_y && !n->src[PLAN_BNA_RES] && n->par.bn_act.pool.kh == 0 &&
                   n->par.bn_act.kind == ACT_RELU,
               "plan node %s: vectors with an output kept, a residual, a pool or no ReLU",
               name);
cleanup:
    return rc;
}

/* CONV_FUSED_FWD's rule beyond its parts': no bias; the prologue's x like X and its
 * vectors, both or neither; the residual with the add's output; a recomputed residual's x
 * like it with its vectors; the sums of the output's channels. */
static int rule_conv_fused_fwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_X], *y = n->dst[PLAN_Y];
    const struct tensor *px = n->src[PLAN_CF_PRO_X], *pv = n->src[PLAN_CF_PRO_VEC];
    const struct tensor *res = n->src[PLAN_CF_RES], *rx = n->src[PLAN_CF_RES_X];
    const struct tensor *rv = n->src[PLAN_CF_RES_VEC], *sums = n->dst[PLAN_CF_SUMS];
    EXPECT(!px == !pv && (!px || (tensor_same_shape(px, x) && bn_vec_fits(pv, x->c))),
           "conv_fused_fwd: a prologue's x unlike x, or without its vectors");
    EXPECT(!res == !n->dst[PLAN_CF_OUT], "conv_fused_fwd: a residual without the output");
    EXPECT(!rx == !rv && (!rx || (res && tensor_same_shape(rx, y) && bn_vec_fits(rv, y->c))),
           "conv_fused_fwd: a recomputed residual's x unlike the output, or without vectors");
    EXPECT(!sums || bn_vec_fits(sums, y->c), "conv_fused_fwd: sums not of %d channels", y->c);
cleanup:
    return rc;
}

/* CONV_FUSED_BWD's rule beyond its parts': the batch norm's x like x, its vectors; with
 * its backward (PLAN_CB_DZ) dx, the vectors written, the ReLU's x, the statistics and
 * parameters of one part, and nothing of it without. */
static int rule_conv_fused_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_BWD_X], *dz = n->dst[PLAN_CB_DZ];
    EXPECT(tensor_same_shape(n->src[PLAN_CB_PRO_X], x) &&
               bn_vec_fits(n->src[PLAN_CB_PRO_VEC], x->c),
           "conv_fused_bwd: the batch norm's x unlike x, or its vectors do not fit");
    if (!dz) {
        for (int i = PLAN_CB_DGAMMA; i <= PLAN_CB_VEC; i++)
            EXPECT(!n->dst[i], "conv_fused_bwd: the batch norm's outputs without its dy");
        for (int i = PLAN_CB_BN_Y; i <= PLAN_CB_BETA; i++)
            EXPECT(!n->src[i], "conv_fused_bwd: the batch norm's inputs without its dy");
        goto cleanup;
    }
    EXPECT(has(n->dst[PLAN_DX]) && n->dst[PLAN_CB_VEC] == n->src[PLAN_CB_PRO_VEC],
           "conv_fused_bwd: the batch norm's backward without dx, or other vectors");
    EXPECT(vec_ok(n->src[PLAN_CB_MEAN], x->c) && vec_ok(n->src[PLAN_CB_INVSTD], x->c) &&
               vec_ok(n->src[PLAN_CB_GAMMA], x->c) && vec_ok(n->src[PLAN_CB_BETA], x->c) &&
               (!n->dst[PLAN_CB_DGAMMA] || vec_ok(n->dst[PLAN_CB_DGAMMA], x->c)) &&
               (!n->dst[PLAN_CB_DBETA] || vec_ok(n->dst[PLAN_CB_DBETA], x->c)),
           "conv_fused_bwd: a statistics or parameter vector is not of %d channels (one part)",
           x->c);
cleanup:
    return rc;
}

/* BN_APPLY_BWD's rule beyond its part's: one part, the vectors. */
static int rule_bn_apply_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_BWD_X];
    EXPECT(plan_bn_parts(x, n->src[PLAN_BWD_SAVE_MEAN], NULL) == 1 &&
               bn_vec_fits(n->src[PLAN_BAB_VEC], x->c),
           "bn_apply_bwd: more than one part, or vectors not of %d channels", x->c);
cleanup:
    return rc;
}

/* ADD_PRO's rule beyond its part's: the batch norm's x like the operand, its kept
 * coefficients of one part. */
static int rule_add_pro(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_AP_X];
    EXPECT(tensor_same_shape(x, n->src[PLAN_ADD_A]) && coef_fits(n->src[PLAN_AP_COEF], 1, x->c),
           "add_pro: the batch norm's x unlike the operand, or its coefficients do not fit");
cleanup:
    return rc;
}

/* The fused batch norm's rule (BN_ACT_TRAIN, BN_ACT_EVAL, BN_ACT_BWD), beyond its parts'
 * (plan_node_check checks each part of its decomposition as a node of its own): a
 * residual comes with the add's output, and the kept coefficients (BN_ACT_TRAIN's, when
 * kept; BN_ACT_BWD's, required; BN_ACT_EVAL has none) are F32 of PLAN_BN_COEF_PER_CHANNEL
 * floats per part and channel. */
static int rule_bn_act(const struct plan_node *n)
{
    int rc = DR_OK;
    const char *name = plan_op_name(n->op);
    const int pool = n->par.bn_act.pool.kh > 0;
    EXPECT(n->par.bn_act.pool.kh >= 0, "plan node %s: pool window %d", name,
           n->par.bn_act.pool.kh);
    if (n->op == PLAN_BN_ACT_BWD) {
        const struct tensor *x = n->src[PLAN_BWD_X];
        const int s = plan_bn_parts(x, n->src[PLAN_BWD_SAVE_MEAN], NULL);
        EXPECT(coef_fits(n->src[PLAN_BNA_BWD_COEF], s, x->c),
               "plan node %s: kept coefficients not of %d parts of %d channels", name, s, x->c);
        EXPECT(!pool == !n->dst[PLAN_BNA_DPOOL] && !pool == !n->src[PLAN_BNA_BWD_ACT] &&
                   !pool == !n->src[PLAN_BNA_BWD_POOL_Y],
               "plan node %s: the pool's tensors %s", name, pool ? "missing" : "without a pool");
        EXPECT(!pool || plan_pool_tiles(&n->par.bn_act.pool, x->h, x->w),
               "plan node %s: a pool whose windows do not tile the plane", name);
        EXPECT(!n->par.bn_act.add_in, "plan node %s: an add before the batch norm", name);
        goto cleanup;
    }
    EXPECT(!n->dst[PLAN_BNA_OUT] == (!n->src[PLAN_BNA_RES] && !pool),
           "plan node %s: a residual or pool without the output, or the reverse", name);
    EXPECT(!pool || !n->src[PLAN_BNA_RES],
           "plan node %s: both a residual and a pool after the activation", name);
    EXPECT(!pool || plan_pool_tiles(&n->par.bn_act.pool, n->src[PLAN_X]->h,
                                    n->src[PLAN_X]->w),
           "plan node %s: a pool whose windows do not tile the plane", name);
    EXPECT(n->par.bn_act.keep_y == 0 || n->par.bn_act.keep_y == 1,
           "plan node %s: keep_y %d", name, n->par.bn_act.keep_y);
    EXPECT(n->par.bn_act.add_in == 0 || n->par.bn_act.add_in == 1,
           "plan node %s: add_in %d", name, n->par.bn_act.add_in);
    if (n->par.bn_act.add_in) {
        EXPECT(n->op == PLAN_BN_ACT_TRAIN, "plan node %s: an add before the batch norm", name);
        EXPECT(n->dst[PLAN_BNA_SUM] == n->src[PLAN_X] && n->src[PLAN_BNA_ADD_A] &&
                   n->src[PLAN_BNA_ADD_B],
               "plan node %s: the add's output is not x, or an operand is missing", name);
    } else {
        EXPECT(!n->dst[PLAN_BNA_SUM] && !n->src[PLAN_BNA_ADD_A] && !n->src[PLAN_BNA_ADD_B],
               "plan node %s: an add's tensors without add_in", name);
    }
    TRY(bn_act_add_pro_rule(n));
    if (n->op == PLAN_BN_ACT_EVAL) {
        EXPECT(!n->dst[PLAN_BNA_COEF] && !n->dst[PLAN_BNA_VEC] && !n->src[PLAN_BNA_VEC_IN],
               "plan node %s: kept coefficients or vectors", name);
        goto cleanup;
    }
    TRY(bn_act_vec_rule(n));
    EXPECT(!n->src[PLAN_BNA_RMEAN] && !n->src[PLAN_BNA_RVAR],
           "plan node %s: running statistics read (they are written)", name);
    if (n->dst[PLAN_BNA_COEF]) {
        const struct tensor *x = n->src[PLAN_X];
        const int s = plan_bn_parts(x, NULL, &n->par.bn_act.bn);
        EXPECT(coef_fits(n->dst[PLAN_BNA_COEF], s, x->c),
               "plan node %s: kept coefficients not of %d parts of %d channels", name, s, x->c);
    }
cleanup:
    return rc;
}

/* y (or dx) like x (or dy), of at most 2^34 elements (the draw's index is element / 4, 32
 * bits); p in [0, 1), a layer id >= 0; the cursor */
static int dropout_rule(const char *op, const struct tensor *y, const struct tensor *x,
                        const struct tensor *cursor, const struct dropout_attr *a)
{
    int rc = DR_OK;
    TRY(cursor_rule(op, cursor));
    EXPECT(a->p >= 0.0f && a->p < 1.0f, "%s: drop probability %g outside [0, 1)", op,
           (double)a->p);
    EXPECT(a->layer >= 0, "%s: layer id %d", op, a->layer);
    EXPECT(!has(y) || tensor_same_shape(y, x),
           "%s: output (%d, %d, %d, %d) unlike input (%d, %d, %d, %d)", op, y->n, y->c, y->h,
           y->w, x->n, x->c, x->h, x->w);
    EXPECT(tensor_count(x) / 4 <= UINT32_MAX, "%s: %zu elements", op, tensor_count(x));
cleanup:
    return rc;
}

static int rule_dropout_fwd(const struct plan_node *n)
{
    return dropout_rule("dropout_fwd", n->dst[PLAN_Y], n->src[PLAN_X],
                        n->src[PLAN_DROPOUT_CURSOR], &n->par.dropout);
}

static int rule_dropout_bwd(const struct plan_node *n)
{
    return dropout_rule("dropout_bwd", n->dst[PLAN_DX], n->src[PLAN_DY],
                        n->src[PLAN_DROPOUT_CURSOR], &n->par.dropout);
}

/* y (or dx, when computed) like x (or dy); t (and dt, when computed) one value, PARAM */
static int temperature_rule(const char *op, const struct tensor *y, const struct tensor *x,
                            const struct tensor *t, const struct tensor *dt)
{
    int rc = DR_OK;
    EXPECT(!has(y) || tensor_same_shape(y, x),
           "%s: output (%d, %d, %d, %d) unlike input (%d, %d, %d, %d)", op, y->n, y->c, y->h,
           y->w, x->n, x->c, x->h, x->w);
    EXPECT(has(t) && t->kind == TENSOR_PARAM && tensor_count(t) == 1,
           "%s: the temperature is not a PARAM tensor of one value", op);
    EXPECT(!has(dt) || (dt->kind == TENSOR_PARAM && tensor_count(dt) == 1),
           "%s: the temperature's gradient is not a PARAM tensor of one value", op);
cleanup:
    return rc;
}

static int rule_temperature_fwd(const struct plan_node *n)
{
    return temperature_rule("temperature_fwd", n->dst[PLAN_Y], n->src[PLAN_X], n->src[PLAN_W],
                            NULL);
}

static int rule_temperature_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *dy = n->src[PLAN_DY];
    TRY(temperature_rule("temperature_bwd", n->dst[PLAN_DX], dy, n->src[PLAN_BWD_W],
                         n->dst[PLAN_DW]));
    EXPECT(tensor_same_shape(n->src[PLAN_BWD_X], dy), "temperature_bwd: x unlike dy");
cleanup:
    return rc;
}

/* ---------------------------------------------------------------- the table */

_Static_assert(PLAN_NODE_MAX_DST <= 32 && PLAN_NODE_MAX_SRC <= 32,
               "a slot mask (unsigned) has a bit for every slot");
_Static_assert(PLAN_NODE_MAX_DST >= PLAN_MAX_CONCAT && PLAN_NODE_MAX_SRC >= PLAN_MAX_CONCAT,
               "a concat node's slots fit a node");
_Static_assert(sizeof(struct dropout_attr) == sizeof(uint64_t) + sizeof(float) + sizeof(int),
               "struct dropout_attr has no padding bytes (plan_signature hashes the bytes)");

#define VAR PLAN_VARIADIC
#define ALL ((1u << PLAN_NODE_MAX_DST) - 1u)   /* every slot of a variadic op */
#define BIT(slot) (1u << (slot))

/* One row per op, in enum plan_op's order. Columns: name, dsts, srcs, dsts and srcs that
 * may be NULL, dsts the node may add to (acc), dsts always updated (read and written),
 * the shape rule. */
static const struct plan_op_desc plan_ops[PLAN_OP_COUNT] = {
    [PLAN_BATCH] = {"batch", 2, 4, 0, 0, 0, 0, rule_batch},
    [PLAN_CONV_FWD] = {"conv_fwd", 1, 3, 0, BIT(PLAN_B), 0, 0, rule_conv_fwd},
    [PLAN_CONV_BWD] = {"conv_bwd", 3, 3, BIT(PLAN_DX) | BIT(PLAN_DB), 0, BIT(PLAN_DX), 0,
                       rule_conv_bwd},
    [PLAN_BN_FWD_TRAIN] = {"bn_fwd_train", 5, 3, 0, 0, 0,
                           BIT(PLAN_RUNNING_MEAN) | BIT(PLAN_RUNNING_VAR), rule_bn_fwd_train},
    [PLAN_BN_FWD_EVAL] = {"bn_fwd_eval", 1, 5, 0, 0, 0, 0, rule_bn_fwd_eval},
    [PLAN_BN_BWD] = {"bn_bwd", 3, 5, BIT(PLAN_DX), 0, BIT(PLAN_DX), 0, rule_bn_bwd},
    [PLAN_ACT_FWD] = {"act_fwd", 1, 1, 0, 0, 0, 0, rule_act_fwd},
    [PLAN_ACT_BWD] = {"act_bwd", 1, 2, 0, 0, BIT(PLAN_DX), 0, rule_act_bwd},
    [PLAN_POOL_FWD] = {"pool_fwd", 1, 1, 0, 0, 0, 0, rule_pool_fwd},
    [PLAN_POOL_BWD] = {"pool_bwd", 1, 3, 0, 0, BIT(PLAN_DX), 0, rule_pool_bwd},
    [PLAN_CONCAT_FWD] = {"concat_fwd", 1, VAR, 0, 0, 0, 0, rule_concat_fwd},
    [PLAN_CONCAT_BWD] = {"concat_bwd", VAR, 1, ALL, 0, ALL, 0, rule_concat_bwd},
    [PLAN_ADD_FWD] = {"add_fwd", 1, 2, 0, 0, 0, 0, rule_add_fwd},
    [PLAN_SCALE_FWD] = {"scale_fwd", 1, 1, 0, 0, 0, 0, rule_scale_fwd},
    [PLAN_SCALED_COPY] = {"scaled_copy", 1, 1, 0, 0, BIT(PLAN_DX), 0, rule_scaled_copy},
    [PLAN_FLATTEN_FWD] = {"flatten_fwd", 1, 1, 0, 0, 0, 0, rule_flatten_fwd},
    [PLAN_FLATTEN_BWD] = {"flatten_bwd", 1, 1, 0, 0, BIT(PLAN_DX), 0, rule_flatten_bwd},
    [PLAN_LINEAR_FWD] = {"linear_fwd", 1, 3, 0, BIT(PLAN_B), 0, 0, rule_linear_fwd},
    [PLAN_LINEAR_BWD] = {"linear_bwd", 3, 3, BIT(PLAN_DX) | BIT(PLAN_DB), 0, BIT(PLAN_DX), 0,
                         rule_linear_bwd},
    [PLAN_XENT_FWD] = {"xent_fwd", 2, 2, 0, 0, 0, BIT(PLAN_XENT_STATS), rule_xent_fwd},
    [PLAN_XENT_BWD] = {"xent_bwd", 1, 2, 0, 0, 0, 0, rule_xent_bwd},
    [PLAN_SGD] = {"sgd", 0, 2, 0, 0, 0, 0, rule_sgd},
    [PLAN_LERP] = {"lerp", 0, 0, 0, 0, 0, 0, rule_lerp},
    [PLAN_CURSOR_ADVANCE] = {"cursor_advance", 1, 0, 0, 0, 0, BIT(PLAN_CURSOR),
                             rule_cursor_advance},
    [PLAN_MUON] = {"muon", 0, 2, 0, 0, 0, 0, rule_muon},
    [PLAN_BN_ACT_TRAIN] = {"bn_act_train", 10, 11,
                           BIT(PLAN_BNA_OUT) | BIT(PLAN_BNA_COEF) | BIT(PLAN_BNA_SUM) |
                               BIT(PLAN_BNA_VEC),
                           BIT(PLAN_BNA_RES) | BIT(PLAN_BNA_RMEAN) | BIT(PLAN_BNA_RVAR) |
                               BIT(PLAN_BNA_ADD_A) | BIT(PLAN_BNA_ADD_B) |
                               BIT(PLAN_BNA_VEC_IN) | BIT(PLAN_BNA_ADD_PRO_X) |
                               BIT(PLAN_BNA_ADD_PRO_COEF),
                           0, BIT(PLAN_RUNNING_MEAN) | BIT(PLAN_RUNNING_VAR), rule_bn_act},
    [PLAN_BN_ACT_EVAL] = {"bn_act_eval", 10, 11,
                          BIT(PLAN_SAVE_MEAN) | BIT(PLAN_SAVE_INVSTD) | BIT(PLAN_RUNNING_MEAN) |
                              BIT(PLAN_RUNNING_VAR) | BIT(PLAN_BNA_OUT) | BIT(PLAN_BNA_COEF) |
                              BIT(PLAN_BNA_SUM) | BIT(PLAN_BNA_VEC),
                          BIT(PLAN_BNA_RES) | BIT(PLAN_BNA_ADD_A) | BIT(PLAN_BNA_ADD_B) |
                              BIT(PLAN_BNA_VEC_IN) | BIT(PLAN_BNA_ADD_PRO_X) |
                              BIT(PLAN_BNA_ADD_PRO_COEF),
                          0, 0, rule_bn_act},
    [PLAN_BN_ACT_BWD] = {"bn_act_bwd", 5, 9, BIT(PLAN_DX) | BIT(PLAN_BNA_DPOOL),
                         BIT(PLAN_BNA_BWD_ACT) | BIT(PLAN_BNA_BWD_POOL_Y), BIT(PLAN_DX), 0,
                         rule_bn_act},
    [PLAN_CONV_FUSED_FWD] = {"conv_fused_fwd", 3, 7, BIT(PLAN_CF_OUT) | BIT(PLAN_CF_SUMS),
                             BIT(PLAN_CF_PRO_X) | BIT(PLAN_CF_PRO_VEC) | BIT(PLAN_CF_RES) |
                                 BIT(PLAN_CF_RES_X) | BIT(PLAN_CF_RES_VEC),
                             0, 0, rule_conv_fused_fwd},
    [PLAN_CONV_FUSED_BWD] = {"conv_fused_bwd", 6, 10,
                             BIT(PLAN_DX) | BIT(PLAN_CB_DZ) | BIT(PLAN_CB_DGAMMA) |
                                 BIT(PLAN_CB_DBETA) | BIT(PLAN_CB_VEC),
                             BIT(PLAN_CB_BN_Y) | BIT(PLAN_CB_MEAN) | BIT(PLAN_CB_INVSTD) |
                                 BIT(PLAN_CB_GAMMA) | BIT(PLAN_CB_BETA),
                             BIT(PLAN_DX), 0, rule_conv_fused_bwd},
    [PLAN_BN_APPLY_BWD] = {"bn_apply_bwd", 3, 6, BIT(PLAN_DX), 0, BIT(PLAN_DX), 0,
                           rule_bn_apply_bwd},
    [PLAN_ADD_PRO] = {"add_pro", 1, 4, 0, 0, 0, 0, rule_add_pro},
    [PLAN_DROPOUT_FWD] = {"dropout_fwd", 1, 2, 0, 0, 0, 0, rule_dropout_fwd},
    [PLAN_DROPOUT_BWD] = {"dropout_bwd", 1, 2, 0, 0, BIT(PLAN_DX), 0, rule_dropout_bwd},
    [PLAN_TEMPERATURE_FWD] = {"temperature_fwd", 1, 2, 0, 0, 0, 0, rule_temperature_fwd},
    [PLAN_TEMPERATURE_BWD] = {"temperature_bwd", 2, 3, BIT(PLAN_DX), 0, BIT(PLAN_DX), 0,
                              rule_temperature_bwd},
};

#undef VAR
#undef ALL
#undef BIT

const struct plan_op_desc *plan_op_desc(enum plan_op op)
{
    return (unsigned)op < PLAN_OP_COUNT && plan_ops[op].name ? &plan_ops[op] : NULL;
}

const char *plan_op_name(enum plan_op op)
{
    const struct plan_op_desc *d = plan_op_desc(op);
    return d ? d->name : "?";
}

int plan_pool_tiles(const struct pool_attr *a, int h, int w)
{
    return a->kind == POOL_MAX && a->kh >= 1 && a->kw >= 1 && a->sh == a->kh &&
           a->sw == a->kw && h % a->kh == 0 && w % a->kw == 0;
}

int plan_bn_parts(const struct tensor *x, const struct tensor *save_mean,
                  const struct bn_attr *a)
{
    if (a) return a->splits > 1 ? a->splits : 1;
    if (x->c <= 0 || !save_mean) return 1;
    const size_t parts = tensor_count(save_mean) / (size_t)x->c;
    return parts > 0 ? (int)parts : 1;
}

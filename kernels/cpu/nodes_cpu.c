/* The CPU engine's nodes: the runner table (cpu_nodes), one runner per op of kernels/
 * plan.h, each calling the op's CPU kernel on the node's slots and parameters. A runner
 * takes the node as plan_node_check left it (the op table's rules hold its shapes and
 * kinds) and checks only what lives in memory: labels and rows within range, the
 * cursor's step within the learning-rate table. Activations are fp32 (C, N, H, W) at the
 * tensor's current n, so an activation (n, f, 1, 1) is the features-major (f, n) matrix
 * the linear and loss kernels take; an output tensor without data is not computed. */
#include <stdint.h>

#include "../../base/status.h"
#include "../activation.h"
#include "../augment.h"
#include "../batchnorm.h"
#include "../conv2d.h"
#include "../loss.h"
#include "../optimizer.h"
#include "../pool.h"
#include "../tensor_ops.h"
#include "muon_cpu.h"
#include "plan_cpu.h"

/* ------------------------------------------------------------------ data */

/* The batch's rows from the cursor's place (a window within the rows) and each row an
 * image of the dataset: a row outside it is a data error. */
int cpu_run_batch(const struct plan_node *n)
{
    int rc = DR_OK;
    struct tensor *x = n->dst[PLAN_BATCH_X], *labels = n->dst[PLAN_BATCH_LABELS];
    const struct tensor *images = n->src[PLAN_BATCH_IMAGES];
    const struct tensor *rows = n->src[PLAN_BATCH_ROWS];
    const int32_t *cur = n->src[PLAN_BATCH_CURSOR]->data;
    const int stride = n->par.batch.stride;
    const size_t image_bytes = (size_t)AUGMENT_CHANNELS * AUGMENT_IMAGE * AUGMENT_IMAGE;
    const size_t dataset_rows = tensor_count(images) / image_bytes;
    const long first = (long)cur[CURSOR_INDEX] * stride;
    EXPECT(cur[CURSOR_INDEX] >= 0 && first + x->n <= (long)tensor_count(rows),
           "batch: batch %d of stride %d needs rows up to %ld of %zu", (int)cur[CURSOR_INDEX],
           stride, first + x->n, tensor_count(rows));
    const int32_t *r = (const int32_t *)rows->data + first;
    for (int i = 0; i < x->n; i++)
        if (r[i] < 0 || (size_t)r[i] >= dataset_rows)
            FAIL(DR_ERR_DATA, "batch: row %d of the batch is image %d of a %zu-image dataset", i,
                 (int)r[i], dataset_rows);
    augment_batch_cpu(x->data, labels->data, images->data, n->src[PLAN_BATCH_IMAGE_LABELS]->data,
                      r, x->n, n->par.batch.aug, n->par.batch.seed, cur[CURSOR_EPOCH]);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ convolution */

/* The kernel's dims of a convolution of x with w (the rule checked the output). */
static struct conv2d_dims conv_dims(const struct tensor *x, const struct tensor *w,
                                    const struct conv_attr *a)
{
    struct conv2d_dims d = {x->n, x->c, x->h, x->w, w->n, a->k, a->stride, a->pad, 0, 0};
    conv2d_dims_finish(&d);
    return d;
}

int cpu_run_conv_fwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_X], *w = n->src[PLAN_W];
    const struct conv2d_dims d = conv_dims(x, w, &n->par.conv);
    rc = conv2d_forward_cpu(n->dst[PLAN_Y]->data, x->data, w->data, cpu_slot_data(n->src[PLAN_B]),
                            &d);
    if (rc != DR_OK)
        FAIL(rc, "conv forward (%d→%d channels, %dx%d, batch %d): %s", d.c, d.co, d.h, d.w,
             d.n, dr_status_str(rc));
cleanup:
    return rc;
}

int cpu_run_conv_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_BWD_X], *w = n->src[PLAN_BWD_W];
    const struct conv2d_dims d = conv_dims(x, w, &n->par.conv);
    rc = conv2d_backward_cpu(cpu_slot_data(n->dst[PLAN_DX]), cpu_slot_data(n->dst[PLAN_DW]),
                             cpu_slot_data(n->dst[PLAN_DB]), n->src[PLAN_DY]->data, x->data,
                             w->data, &d, PLAN_NODE_ACC(n, PLAN_DX));
    if (rc != DR_OK)
        FAIL(rc, "conv backward (%d→%d channels, %dx%d, batch %d): %s", d.c, d.co, d.h, d.w,
             d.n, dr_status_str(rc));
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ batch norm */

int cpu_run_bn_fwd_train(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    const struct tensor *mean = n->dst[PLAN_SAVE_MEAN];
    batchnorm_forward_train_cpu(n->dst[PLAN_Y]->data, mean->data, n->dst[PLAN_SAVE_INVSTD]->data,
                                n->dst[PLAN_RUNNING_MEAN]->data, n->dst[PLAN_RUNNING_VAR]->data,
                                x->data, n->src[PLAN_GAMMA]->data, n->src[PLAN_BETA]->data, x->c,
                                x->n, x->h * x->w, plan_bn_parts(x, mean, &n->par.bn),
                                n->par.bn.eps, n->par.bn.momentum);
    return DR_OK;
}

int cpu_run_bn_fwd_eval(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    batchnorm_forward_eval_cpu(n->dst[PLAN_Y]->data, x->data, n->src[PLAN_GAMMA]->data,
                               n->src[PLAN_BETA]->data, n->src[PLAN_RUNNING_MEAN]->data,
                               n->src[PLAN_RUNNING_VAR]->data, x->c, x->n, x->h * x->w,
                               n->par.bn.eps);
    return DR_OK;
}

int cpu_run_bn_bwd(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_BWD_X], *mean = n->src[PLAN_BWD_SAVE_MEAN];
    batchnorm_backward_cpu(cpu_slot_data(n->dst[PLAN_DX]), cpu_slot_data(n->dst[PLAN_DGAMMA]),
                           cpu_slot_data(n->dst[PLAN_DBETA]), n->src[PLAN_DY]->data, x->data,
                           n->src[PLAN_BWD_GAMMA]->data, mean->data,
                           n->src[PLAN_BWD_SAVE_INVSTD]->data, x->c, x->n, x->h * x->w,
                           plan_bn_parts(x, mean, NULL), PLAN_NODE_ACC(n, PLAN_DX));
    return DR_OK;
}

/* ------------------------------------------------------------------ activations */

int cpu_run_act_fwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_X];
    EXPECT(activation_forward_cpu(n->dst[PLAN_Y]->data, x->data, n->par.act.kind,
                                  n->par.act.alpha, tensor_count(x)) == DR_OK,
           "act_fwd: no CPU kernel for kind %d", (int)n->par.act.kind);
cleanup:
    return rc;
}

int cpu_run_act_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *x = n->src[PLAN_BWD_X];
    float *dx = cpu_slot_data(n->dst[PLAN_DX]);
    if (!dx) return DR_OK;
    EXPECT(activation_backward_cpu(dx, n->src[PLAN_DY]->data, x->data, n->par.act.kind,
                                   n->par.act.alpha, tensor_count(x),
                                   PLAN_NODE_ACC(n, PLAN_DX)) == DR_OK,
           "act_bwd: no CPU kernel for kind %d", (int)n->par.act.kind);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ pooling */

/* The kernel's dims of a pool of x into y (or dy), as the rule checked them. */
static struct pool_dims pool_dims_of(const struct tensor *y, const struct tensor *x,
                                     const struct pool_attr *a)
{
    return (struct pool_dims){x->c * x->n, x->h, x->w, a->kh, a->kw, a->sh, a->sw, y->h, y->w};
}

int cpu_run_pool_fwd(const struct plan_node *n)
{
    const struct tensor *y = n->dst[PLAN_Y], *x = n->src[PLAN_X];
    const struct pool_dims d = pool_dims_of(y, x, &n->par.pool);
    pool_forward_cpu(y->data, x->data, n->par.pool.kind, &d);
    return DR_OK;
}

int cpu_run_pool_bwd(const struct plan_node *n)
{
    const struct tensor *dy = n->src[PLAN_DY], *x = n->src[PLAN_BWD_X];
    float *dx = cpu_slot_data(n->dst[PLAN_DX]);
    if (!dx) return DR_OK;
    const struct pool_dims d = pool_dims_of(dy, x, &n->par.pool);
    pool_backward_cpu(dx, dy->data, x->data, cpu_slot_data(n->src[PLAN_BWD_Y]), n->par.pool.kind,
                      &d, PLAN_NODE_ACC(n, PLAN_DX));
    return DR_OK;
}

/* ------------------------------------------------------------------ structural ops */

int cpu_run_concat_fwd(const struct plan_node *n)
{
    const struct tensor *y = n->dst[PLAN_Y];
    const float *xs[PLAN_MAX_CONCAT];
    int cs[PLAN_MAX_CONCAT];
    for (int i = 0; i < n->n_src; i++) {
        xs[i] = n->src[i]->data;
        cs[i] = n->src[i]->c;
    }
    concat_forward_cpu(y->data, xs, cs, n->n_src, (size_t)y->n * y->h * y->w);
    return DR_OK;
}

/* A NULL input gradient (an input that needs none) is skipped; its channels are what dy
 * has beyond the others'. */
int cpu_run_concat_bwd(const struct plan_node *n)
{
    const struct tensor *dy = n->src[PLAN_DY];
    float *dxs[PLAN_MAX_CONCAT];
    int cs[PLAN_MAX_CONCAT], acc[PLAN_MAX_CONCAT], known = 0;
    for (int i = 0; i < n->n_dst; i++) known += n->dst[i] ? n->dst[i]->c : 0;
    for (int i = 0; i < n->n_dst; i++) {
        dxs[i] = cpu_slot_data(n->dst[i]);
        cs[i] = n->dst[i] ? n->dst[i]->c : dy->c - known;
        acc[i] = PLAN_NODE_ACC(n, i);
    }
    concat_backward_cpu(dxs, dy->data, cs, n->n_dst, (size_t)dy->n * dy->h * dy->w, acc);
    return DR_OK;
}

int cpu_run_add_fwd(const struct plan_node *n)
{
    const struct tensor *y = n->dst[PLAN_Y];
    add_forward_cpu(y->data, n->src[PLAN_ADD_A]->data, n->src[PLAN_ADD_B]->data,
                    tensor_count(y));
    return DR_OK;
}

int cpu_run_scale_fwd(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    scale_forward_cpu(n->dst[PLAN_Y]->data, x->data, n->par.scale.s, tensor_count(x));
    return DR_OK;
}

int cpu_run_scaled_copy(const struct plan_node *n)
{
    const struct tensor *dy = n->src[PLAN_DY];
    float *dx = cpu_slot_data(n->dst[PLAN_DX]);
    if (dx)
        scaled_copy_cpu(dx, dy->data, n->par.scale.s, tensor_count(dy),
                        PLAN_NODE_ACC(n, PLAN_DX));
    return DR_OK;
}

int cpu_run_flatten_fwd(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    flatten_forward_cpu(n->dst[PLAN_Y]->data, x->data, x->c, x->n, x->h * x->w);
    return DR_OK;
}

int cpu_run_flatten_bwd(const struct plan_node *n)
{
    const struct tensor *dx = n->dst[PLAN_DX];
    if (cpu_slot_data(dx))
        flatten_backward_cpu(dx->data, n->src[PLAN_DY]->data, dx->c, dx->n, dx->h * dx->w,
                             PLAN_NODE_ACC(n, PLAN_DX));
    return DR_OK;
}

/* ------------------------------------------------------------------ linear, loss */

/* Labels must be class indices 0 .. k - 1: a bad one is a data error, not a silent wrong
 * loss. */
static int check_labels(const struct tensor *labels, int count, int k)
{
    int rc = DR_OK;
    const int32_t *l = labels->data;
    for (int i = 0; i < count; i++)
        if (l[i] < 0 || l[i] >= k)
            FAIL(DR_ERR_DATA, "loss: label %d of example %d is outside 0..%d", (int)l[i], i, k - 1);
cleanup:
    return rc;
}

int cpu_run_xent_fwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *logits = n->src[PLAN_XENT_LOGITS];
    const struct tensor *labels = n->src[PLAN_XENT_LABELS];
    TRY(check_labels(labels, logits->n, logits->c));
    xent_forward_cpu(n->dst[PLAN_XENT_STATS]->data, n->dst[PLAN_XENT_PROBS]->data, logits->data,
                     labels->data, logits->c, logits->n, n->par.xent.smoothing);
cleanup:
    return rc;
}

int cpu_run_xent_bwd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *probs = n->src[PLAN_XENT_BWD_PROBS];
    const struct tensor *labels = n->src[PLAN_XENT_LABELS];
    TRY(check_labels(labels, probs->n, probs->c));
    xent_backward_cpu(n->dst[PLAN_XENT_DLOGITS]->data, probs->data, labels->data, probs->c,
                      probs->n, n->par.xent.smoothing, n->par.xent.scale);
cleanup:
    return rc;
}

/* ------------------------------------------------------------------ the optimiser, cursor */

/* Every item not frozen at the cursor's epoch, at the table's learning rate for the
 * cursor's step times its lr_scale. */
int cpu_run_sgd(const struct plan_node *n)
{
    int rc = DR_OK;
    const struct tensor *lr_table = n->src[PLAN_SGD_LR_TABLE];
    const int32_t *cur = n->src[PLAN_SGD_CURSOR]->data;
    EXPECT(cur[CURSOR_STEP] >= 0 && (size_t)cur[CURSOR_STEP] < tensor_count(lr_table),
           "sgd: step %d outside the learning-rate table", (int)cur[CURSOR_STEP]);
    const float lr = ((const float *)lr_table->data)[cur[CURSOR_STEP]];
    for (int k = 0; k < n->par.sgd.count; k++) {
        const struct sgd_item *it = &n->par.sgd.items[k];
        if (it->train_epochs > 0 && cur[CURSOR_EPOCH] >= it->train_epochs) continue;
        sgd_update_cpu(it->w->data, it->v->data, it->dw->data, (float)((double)lr * it->lr_scale),
                       it->wd, n->par.sgd.momentum, n->par.sgd.nesterov, tensor_count(it->w));
    }
cleanup:
    return rc;
}

/* Muon's step of every item not frozen at the cursor's epoch (kernels/cpu/muon.c). */
int cpu_run_muon(const struct plan_node *n)
{
    return muon_multi_cpu(n->par.muon.items, n->par.muon.count, n->src[PLAN_SGD_LR_TABLE],
                          n->src[PLAN_SGD_CURSOR], n->par.muon.momentum, n->par.muon.nesterov,
                          &n->par.muon.ns);
}

int cpu_run_lerp(const struct plan_node *n)
{
    for (int k = 0; k < n->par.lerp.count; k++) {
        const struct lerp_item *it = &n->par.lerp.items[k];
        param_lerp_cpu(it->avg->data, it->w->data, n->par.lerp.t, n->par.lerp.copy_back,
                       tensor_count(it->avg));
    }
    return DR_OK;
}

int cpu_run_cursor_advance(const struct plan_node *n)
{
    int32_t *cur = n->dst[PLAN_CURSOR]->data;
    cur[CURSOR_STEP]++;
    cur[CURSOR_INDEX]++;
    return DR_OK;
}

/* ------------------------------------------------------------------ the runner table */

typedef int (*cpu_node_fn)(const struct plan_node *n);

/* One runner per plain op and per fused op of CPU_FUSED_OPS, indexed by enum plan_op; NULL
 * for the other fused ops (run as their decompositions). */
#define CPU_NODE_ROW_(id, name) [PLAN_##id] = cpu_run_##name,
static const cpu_node_fn cpu_nodes[PLAN_OP_COUNT] = {PLAN_OPS(CPU_NODE_ROW_)
                                                         CPU_FUSED_OPS(CPU_NODE_ROW_)};
#undef CPU_NODE_ROW_

int cpu_node_supported(const struct plan_node *n)
{
    return (unsigned)n->op < PLAN_OP_COUNT && cpu_nodes[n->op] != NULL &&
           (!plan_op_is_fused(n->op) || cpu_fused_supported(n));
}

int cpu_node_run(const struct plan_node *n)
{
    int rc = DR_OK;
    EXPECT(cpu_node_supported(n), "the CPU engine has no runner for plan op %d", (int)n->op);
    rc = cpu_nodes[n->op](n);
cleanup:
    return rc;
}

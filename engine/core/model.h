/* A graph instantiated on a backend: every layer's output and gradient tensor, the
 * parameters with their gradients and momentum, BN statistics, and the loss state;
 * forward, loss, backward and the optimiser step as plans (kernels/plan.h) run on the
 * backend: the training step and an evaluation batch as whole plans, each part also on
 * its own, weight averaging as a plan of one node. Engine-neutral: it never touches
 * tensor contents. */
#ifndef DAWNRUN_MODEL_H
#define DAWNRUN_MODEL_H

#include <stdint.h>

#include "kernels/backend.h"
#include "kernels/plan.h"
#include "data.h"
#include "graph.h"

/* Per-layer-type time accumulated by model_run_plan (and model_average_update) when
 * profiling. */
struct model_profile {
    double forward_s[LAYER_TYPE_COUNT];
    double backward_s[LAYER_TYPE_COUNT];
    double loss_s, optimizer_s, augment_s;   /* optimizer_s includes weight averaging */
};

struct model {
    const struct graph *g;
    struct backend *be;
    int batch_cap;            /* activations are allocated for this many images */
    struct tensor *y;         /* [g->count] layer outputs; y[0] is the image batch */
    struct tensor *dy;        /* [g->count] gradients w.r.t. layer outputs (dy[0] unused) */
    struct tensor *p, *dp, *v;/* [g->n_params] parameters, gradients, momentum */
    struct tensor *bn_mean, *bn_invstd, *bn_rmean, *bn_rvar; /* [g->count], BN layers only;
                                 bn_mean/bn_invstd hold splits * c values */
    struct tensor *bn_coef;   /* [g->count], BN layers only: the coefficients a fused
                                 forward keeps for its backward (kernels/plan.h
                                 PLAN_BNA_COEF), PLAN_BN_COEF_PER_CHANNEL * splits * c */
    struct tensor *bn_vec;    /* [g->count], BN layers only: the vectors of a batch norm
                                 whose passes the convolutions around it take (kernels/
                                 plan.h, enum plan_bn_vec), PLAN_BNV_COUNT *
                                 plan_bn_vec_stride(c) */
    struct tensor *avg;       /* [g->n_params] averaged parameters, NULL = no averaging */
    struct tensor *avg_rmean, *avg_rvar; /* [g->count] averaged BN running statistics */
    struct tensor probs;      /* softmax of the logits */
    struct tensor labels;     /* I32 (batch_cap) */
    struct tensor stats;      /* F32 (2): summed loss, correct count */
    unsigned char *live;      /* [g->count] 1 when the layer reaches the output */
    unsigned char *accum;     /* [g->count * GRAPH_MAX_INPUTS] backward accumulate flags */
    struct model_profile *prof; /* NULL = no profiling */
    struct sgd_item *sgd_items; /* [sgd_count] the training plan's optimiser items */
    int sgd_count;
    struct lerp_item *lerp_items; /* [lerp_count] every averaged tensor with its live one */
    int lerp_count;
};

/* Allocates every tensor for batches of up to batch_cap images and plans the backward
 * pass. Parameters are zero until model_init_params. Returns DR_OK or DR_ERR_NOMEM / a
 * backend error; any failed allocation (tables, plan, tensors) is one, and leaves m
 * released and zeroed. */
int model_create(struct model *m, const struct graph *g, struct backend *be, int batch_cap);
void model_free(struct model *m);

/* PyTorch-default initialisation drawn from the counter-based RNG (kernels/rng.h,
 * RNG_STREAM_INIT, one parameter ordinal per param_desc), then the dirac start where a
 * conv asks for it; whitening filters are zero until model_init_whiten; BN running mean
 * 0, var 1; momentum buffers 0. */
int model_init_params(struct model *m, uint64_t seed);

/* Computes every whitening layer's filters from the first whiten_images images of
 * `train` (all of them when it has fewer) and writes them (engine/core/whiten.h). */
int model_init_whiten(struct model *m, const struct dataset *train);

/* Allocates the averaged copies of the parameters and BN running statistics (once) and
 * sets them to the current values. Out of memory: DR_ERR_NOMEM, and no copy is kept. */
int model_average_start(struct model *m);

/* Every averaged tensor: avg += t * (w - avg); then, with copy_back, w = avg, parameters
 * and BN running statistics alike, as one LERP node (kernels/plan.h) run alone. An engine
 * that does not run LERP nodes: DR_ERR_INTERNAL, naming it. */
int model_average_update(struct model *m, float t, int copy_back);

/* Exchanges the parameters and BN running statistics with their averages (a swap of
 * tensor handles, no copy); calling it twice restores the model. */
void model_average_swap(struct model *m);

/* Sets the batch size of every activation tensor to n, 1 <= n <= batch_cap; any other n
 * is a caller's bug: DR_ERR_INTERNAL, and nothing changes. */
int model_set_batch(struct model *m, int n);

/* Where a plan's batches come from: batch b is rows[b * stride ..] of images and
 * labels, b = cursor[CURSOR_INDEX], augmented with seed and cursor[CURSOR_EPOCH]. */
struct model_batch_src {
    const struct tensor *images;   /* U8 (count, 3, 32, 32) */
    const struct tensor *labels;   /* U8 (count) */
    const struct tensor *rows;     /* I32 (rows): dataset rows in batch order */
    struct tensor *cursor;         /* I32 (PLAN_CURSOR_LEN), advanced by the plan */
    int stride;                    /* rows per batch index */
    uint64_t seed;
};

/* A parameter group with an optimiser node of its own (train.groups): the trainable
 * parameters whose kind is in `kinds` (bit k: enum param_kind k), stepped by one SGD node
 * (their wd as the others') or one Muon node (no weight decay) with the group's learning-
 * rate table, momentum and Nesterov flag. */
struct model_opt_group {
    unsigned kinds;
    int muon;                           /* 0: SGD, 1: Muon */
    const struct tensor *lr_table;      /* F32 (total steps) */
    float momentum;
    int nesterov;
    struct muon_ns ns;                  /* Muon only */
};

/* The hyperparameters of a training step that do not change from step to step; the
 * learning rate is lr_table[cursor[CURSOR_STEP]] (times lr_scale[kind]). */
struct model_step_opts {
    const struct augment_params *aug;   /* the training augmentation (kept by the caller) */
    float smoothing, grad_scale;        /* label smoothing; dlogits scale */
    float wd, momentum;                 /* wd before the per-kind scale */
    int nesterov;
    const double *lr_scale, *wd_scale;  /* [PARAM_KIND_COUNT], NULL = 1 */
    const struct tensor *lr_table;      /* F32 (total steps) */
    const struct model_opt_group *groups;   /* [n_groups], kinds disjoint; NULL: none */
    int n_groups;
};

/* Builds into p (released first) the training step: the batch at the cursor, the
 * forward pass in train mode over every live layer, the loss into m->stats, the loss
 * gradient and the backward pass, one SGD node over every trainable parameter of a kind
 * no group of o takes (items kept in m->sgd_items: lr_scale[kind],
 * (float)(wd * wd_scale[kind]), and the parameter's train_epochs), then one SGD or Muon
 * node per group of o over its kinds' parameters, in o's order, and the cursor's advance;
 * replayable. Without groups: the one SGD node over every trainable parameter. The plan points at
 * the model's tensor handles and at src's and o's tensors and aug, which must outlive
 * it; the model's batch size is read when it runs. An engine without the plan's ops:
 * DR_ERR_INTERNAL naming the op. */
int model_plan_train(struct plan *p, struct model *m, const struct model_batch_src *src,
                     const struct model_step_opts *o);

/* Builds into p (released first) one evaluation batch: the test batch at the cursor
 * (nviews 0), the forward pass in eval mode and the loss into m->stats; or, for nviews
 * test-time views, per view the batch augmented with views[v] and the forward pass,
 * summed into view_sum (ACT like the logits) with weights[v], and the loss of the sum.
 * Then the cursor's advance; replayable. views and weights must outlive p. */
int model_plan_eval(struct plan *p, struct model *m, const struct model_batch_src *src,
                    const struct augment_params *views, const float *weights, int nviews,
                    struct tensor *view_sum);

/* Builds into p (released first) one whole pass over the model's input as the caller
 * wrote it (m->y[0] and m->labels: no batch node): the forward pass (train: batch
 * statistics), the loss into m->stats, and in training the backward into m->dp with
 * dlogits = scale * (probs - target); no optimiser, no cursor (a training dropout, which
 * needs one, fails). Fused as a training step's plan or an evaluation batch's are; not
 * replayable (the caller may set p->replayable). For the selfcheck's plan cases and the
 * tests. */
int model_plan_pass(struct plan *p, struct model *m, int train, float smoothing, float scale);

/* Runs a plan of this model: plan_compute for a replayable plan (a whole step or
 * evaluation batch: the backend may fuse and replay it), node by node otherwise (the
 * single-part runs model_forward, model_loss, model_backward, model_sgd, whose tensors
 * are read by the plans after them); when profiling (m->prof), node by node with a wait
 * around each node, its time added to m->prof by layer type and phase (a fused node's,
 * kernels/plan.h PLAN_FUSED_OPS, to its first layer's: the batch norm's). */
int model_run_plan(struct model *m, struct plan *p);

/* Forward pass over y[0] (already filled) in train (batch statistics, running stats
 * updated) or eval mode: the training plan's forward part, run on its own. A dropout of
 * p > 0 in train mode is refused (DR_ERR_INTERNAL): its mask needs the step's cursor,
 * which only the training step's plan has (model_plan_train); likewise model_backward. */
int model_forward(struct model *m, int train);

/* Softmax cross-entropy of the logits against m->labels; adds (summed loss, correct)
 * to m->stats. */
int model_loss(struct model *m, float smoothing);

/* Backward pass from the loss: dlogits = scale * (probs - target), then every live
 * layer in reverse order. Parameter gradients end up in m->dp. */
int model_backward(struct model *m, float smoothing, float scale);

/* One SGD step (kernels/optimizer.h rule) on every parameter that is trainable in
 * `epoch` (param_desc.trainable and train_epochs), with lr * lr_scale[kind] and
 * wd * wd_scale[kind] (NULL scales = 1): the training plan's SGD node with a one-entry
 * learning-rate table. */
int model_sgd(struct model *m, float lr, float wd, float momentum, int nesterov,
              const double *lr_scale, const double *wd_scale, int epoch);

/* The logits layer's tensor. */
static inline struct tensor *model_logits(struct model *m)
{
    return &m->y[m->g->output];
}

#endif

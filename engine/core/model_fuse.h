/* What the plan's builder fuses (kernels/plan.h, PLAN_FUSED_OPS), decided where the graph
 * is known: for each batch-norm layer, whether its forward takes the activation layer
 * after it (and the residual add or the max pool after that, and the add before it) into
 * one node, and whether its backward takes the activation's backward (and the pool's).
 * The rules read the graph (which layers read a layer's output), never a plan; the engine
 * answers for each fused node whether it runs it (backend_ops.supports), and what it does
 * not run is built as the plain nodes. Internal to engine/core (model_plan.c). */
#ifndef DAWNRUN_ENGINE_MODEL_FUSE_H
#define DAWNRUN_ENGINE_MODEL_FUSE_H

#include "layer_types.h"
#include "model.h"

/* One layer's part in the fused nodes; every field -1 or 0 where nothing is fused. */
struct model_fuse_layer {
    int act;              /* batch-norm layer: the activation layer its forward node takes */
    int add;              /* batch-norm layer: the add layer taken after the activation */
    int pool;             /* batch-norm layer: the max-pool layer taken after the activation
                             (never with add); in training its backward is taken too */
    int add_in;           /* batch-norm layer: the add layer writing its x, taken before it
                             (training only) */
    unsigned char keep_y; /* batch-norm layer: its output is written (another reader) */
    unsigned char bwd;    /* batch-norm layer: its backward node takes the activation's */
    unsigned char in_fwd; /* activation, add or pool layer: its forward is in a batch
                             norm's node */
    unsigned char in_bwd; /* activation or pool layer: its backward is in a batch norm's
                             node */
};

/* The window of a pool layer l of row info, or the whole input plane of a global pool. */
struct pool_attr model_layer_pool_attr(const struct layer *l, const struct layer_info *info);

/* The handles a plan's nodes use for each layer's output (y) and gradient (dy), after
 * the builder's aliases: [g->count] each. */
struct model_fuse_handles {
    struct tensor *const *y;
    struct tensor *const *dy;
};

/* Decides the fused nodes of a plan of m's forward pass (train: batch statistics, else
 * evaluation) into f[0 .. g->count) (caller-owned). whole = 1: the plan holds every
 * reader of the values it writes (a training step with its backward, when with_bwd, or
 * an evaluation batch), so a fused node may leave a value only it reads unwritten;
 * whole = 0: the plan is one part of a step (model_forward), so every value is written
 * and nothing of the backward is fused. Asks m->be which fused nodes it runs. */
void model_fuse_decide(struct model_fuse_layer *f, const struct model *m,
                       const struct model_fuse_handles *h, int train, int whole, int with_bwd);

/* The fused forward node of batch-norm layer i as f decided it, into n (phase forward,
 * layer i). */
void model_fuse_fwd_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *f,
                         int i, int train);

/* The fused backward node of batch-norm layer i as f decided it, into n (phase backward,
 * layer i). */
void model_fuse_bwd_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *f,
                         int i);

#endif

/* What the plan's builder fuses (kernels/plan.h, PLAN_FUSED_OPS), decided where the graph
 * is known: for each batch-norm layer, whether its forward takes the activation layer
 * after it (and the residual add or the max pool after that, and the add before it) into
 * one node, and whether its backward takes the activation's backward (and the pool's).
 * Then, in a whole plan, which batch norms go inside the convolutions around them
 * (model_fuse_conv.c). The rules read the graph (which layers read a layer's output),
 * never a plan; the engine answers for each fused node whether it runs it
 * (backend_ops.supports), and what it does not run is built as the plain nodes. Internal
 * to engine/core (model_plan.c). */
#ifndef DAWNRUN_ENGINE_MODEL_FUSE_H
#define DAWNRUN_ENGINE_MODEL_FUSE_H

#include "layer_types.h"
#include "model.h"

/* A batch-norm layer's vectors (model_fuse_layer.vec). */
enum { FUSE_VEC_NONE, FUSE_VEC_COEF, FUSE_VEC_SUMS };

/* One layer's part in the fused nodes; every field -1 or 0 where nothing is fused. */
struct model_fuse_layer {
    int act;              /* batch-norm layer: the activation layer its forward node takes */
    int add;              /* batch-norm layer: the add layer taken after the activation */
    int pool;             /* batch-norm layer: the max-pool layer taken after the activation
                             (never with add); in training its backward is taken too */
    int add_in;           /* batch-norm layer: the add layer writing its x, taken before it
                             (training only) */
    unsigned char keep_y; /* batch-norm layer: its output is written (another reader) */
    unsigned char bwd;    /* batch-norm layer: its backward node takes the activation's (or,
                             with dbn, a convolution's backward does) */
    unsigned char in_fwd; /* activation, add or pool layer: its forward is in a batch
                             norm's node (an add: or a convolution's) */
    unsigned char in_bwd; /* activation or pool layer: its backward is in a batch norm's
                             node (an activation: or a convolution's) */
    /* The batch norm inside the convolutions (model_fuse_conv.c): */
    int pro;              /* convolution layer: the batch-norm layer whose activation (its
                             input) it reads through that batch norm's apply and ReLU; add
                             layer run alone, or batch-norm layer taking the add before it:
                             the batch-norm layer whose activation is the add's operand,
                             recomputed from that batch norm's x */
    int sums;             /* convolution layer: the batch-norm layer whose x it writes (with
                             conv_add, the add's output), summing it for that batch norm;
                             batch-norm layer: that convolution */
    int conv_add;         /* convolution layer: the add layer taken after it */
    int res_bn;           /* convolution layer with conv_add: the batch-norm layer whose
                             activation the add's other operand is, recomputed (-1: read as
                             it is) */
    unsigned char vec;    /* batch-norm layer: FUSE_VEC_COEF, its forward writes its
                             statistics, kept coefficients and apply's vectors, no
                             elementwise output (only convolutions and an add read its
                             activation, through the apply); FUSE_VEC_SUMS, the same from the
                             convolution's sums, keeping no coefficients; else none */
    unsigned char dbn;    /* convolution layer: its backward takes the activation's
                             backward and the weight gradients and coefficients of batch
                             norm pro; batch-norm layer: its backward only applies those */
};

/* The optional bias parameter of a conv/linear layer l in set (the model's parameters or
 * their gradients), or NULL. */
struct tensor *model_layer_bias(const struct layer *l, struct tensor *set);

/* The convolution attributes of a conv or whiten layer l, for its forward and backward. */
struct conv_attr model_layer_conv_attr(const struct layer *l);

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

/* The fused forward node of batch-norm layer i as f (every layer's) decided it, into n
 * (phase forward, layer i). */
void model_fuse_fwd_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *f,
                         int i, int train);

/* The fused backward node of batch-norm layer i as f decided it, into n (phase backward,
 * layer i): BN_ACT_BWD, or BN_APPLY_BWD with dbn. */
void model_fuse_bwd_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *f,
                         int i);

/* Whether f gives convolution layer w a fused forward node (a prologue, sums or an add
 * after it), or add layer q one (a recomputed operand). 1 or 0. */
int model_fuse_conv_fwd(const struct model_fuse_layer *f, const struct model *m, int w);
int model_fuse_add_fwd(const struct model_fuse_layer *f, const struct model *m, int q);

/* The fused forward node of convolution layer w as f decided it (CONV_FUSED_FWD), into n
 * (phase forward, layer w). */
void model_fuse_conv_fwd_node(struct plan_node *n, const struct model *m,
                              const struct model_fuse_handles *h,
                              const struct model_fuse_layer *f, int w);

/* The fused backward node of convolution layer w, whose forward reads its input through a
 * prologue (f[w].pro >= 0), into n (CONV_FUSED_BWD, phase backward, layer w). */
void model_fuse_conv_bwd_node(struct plan_node *n, const struct model *m,
                              const struct model_fuse_handles *h,
                              const struct model_fuse_layer *f, int w);

/* The forward node of add layer q recomputing an operand (f[q].pro >= 0), into n (ADD_PRO,
 * phase forward, layer q). */
void model_fuse_add_node(struct plan_node *n, const struct model *m,
                         const struct model_fuse_handles *h, const struct model_fuse_layer *f,
                         int q);

/* Shared by the rules (model_fuse.c, model_fuse_conv.c). */

/* The live layers other than `except` reading layer u's output, in graph order, the first
 * max of them into list (NULL with max 0); their number, the plan's output counting as one
 * more reader (listed nowhere) when u is it. */
int model_fuse_reader_list(int *list, int max, const struct model *m, int u, int except);

/* model_fuse_reader_list's number alone. */
int model_fuse_readers(const struct model *m, int u, int except);

/* Whether the engine runs node n (plan_run_node checks it against its rule). */
int model_fuse_runs(const struct model *m, const struct plan_node *n);

/* Moves the batch norms of a whole plan inside the convolutions around them where the
 * engine runs them there (model_fuse_conv.c), after model_fuse_decide decided each batch
 * norm's own node into f (with whole = 1): train and with_bwd as there. */
void model_fuse_convs(struct model_fuse_layer *f, const struct model *m,
                      const struct model_fuse_handles *h, int train, int with_bwd);

#endif

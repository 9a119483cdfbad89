/* The step as data, and every computation dawnrun asks of an engine. A plan is the
 * sequence of nodes one training step (batch, forward, loss, backward, optimiser, cursor)
 * or one evaluation batch makes, built once by the engine and handed to the backend whole
 * (backend_ops.plan_compute), as a ggml backend is handed a graph. A backend may run it
 * node by node (plan_run_each, below: each node through backend_ops.run_node), or fuse
 * the patterns it supports and replay it as a captured graph; either way the results are
 * those of running the nodes one by one, in order, within the precision's tolerance (the
 * fp32 bounds of the selfcheck). An eager call (the selfcheck, the tests, weight
 * averaging) is a plan of one node (plan_run_op): no op has a second way in.
 *
 * Every node has one shape, as a ggml tensor has: an op code, the tensors it writes (dst)
 * and reads (src), each a small array with a count, the outputs it adds to (acc) and its
 * scalar parameters (struct plan_node, below). What differs between ops is stated once,
 * in the op table (plan_op_desc, kernels/plan_ops.c: the name, the counts, which slots may
 * be NULL, which outputs are added to or updated, the shape rule); what a node reads and
 * writes, the signature, the checks and the dispatch are loops over the shape and the
 * table. An engine
 * keeps one runner per op (its runner table: cpu_nodes in kernels/cpu/nodes_cpu.c,
 * cuda_nodes in kernels/cuda/nodes_cuda.cu) and says which nodes it runs (supports).
 *
 * A plan does not own its tensors: nodes point at the engine's struct tensor handles,
 * whose data and n may change between runs (a smaller last eval batch; weight averaging
 * swaps handles). A backend that keeps anything between runs of a plan (a captured
 * graph) checks plan_signature() and redoes it when the signature changed, and
 * drops it when the plan is freed (plan_free: backend_ops.plan_forget), since a plan built
 * later at the same address, its tensors at the same device addresses, has the same
 * signature without being the same plan.
 *
 * Everything a step needs that changes from step to step lives in backend memory, so
 * that the same plan (and a graph captured from it) serves every step:
 *   - the cursor, TENSOR_I32 (PLAN_CURSOR_LEN): the global step, the epoch and the
 *     batch's index within the epoch (or within the evaluation pass), written by the
 *     engine between steps and advanced by the plan's own PLAN_CURSOR_ADVANCE node;
 *   - the epoch's row permutation (or the test rows), written once per epoch;
 *   - the learning-rate table, one fp32 value per global step, written once per run.
 *
 * Aliases: a plan has no node that only moves bytes. Where one tensor's contents would be
 * an exact copy of another's, the builder (engine/core/model_plan.c) hands every node that
 * reads the copy the original's handle instead, and the copying node is left out:
 *   - a flatten of a 1x1 plane ((n, c, 1, 1) is the same bytes in every layout): its
 *     readers read its input;
 *   - an add's backward, dx = dy for each operand: an operand's gradient that the add
 *     writes first (no accumulate) is the add's output gradient buffer itself, so later
 *     gradients of that operand accumulate into it (a convolution's backward-data with
 *     beta = 1, as any accumulate); likewise the input gradient of a 1x1 flatten.
 * The builder shares a gradient buffer only where no node writes it on behalf of one
 * gradient before the last read of another (the backward runs in reverse graph order),
 * so no node reads and writes one buffer under two names. Every engine runs such a plan
 * as it runs any other: the results are those of the plan with the copies, bit for bit
 * (the copies were exact). An operand already written by a later consumer still gets its
 * accumulating node (dx += dy). */
#ifndef DAWNRUN_PLAN_H
#define DAWNRUN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "activation.h"
#include "augment.h"
#include "backend.h"
#include "dropout.h"
#include "muon.h"
#include "pool.h"
#include "temperature.h"

/* ---------------------------------------------------------------- the ops' parameters */

struct conv_attr {
    int k, stride, pad;
};

struct bn_attr {
    float eps, momentum;
    int splits;               /* ghost batch norm: 0 or 1 = plain; S > 1 = the batch's n
                                 images in S consecutive equal parts of n / S (n must be a
                                 multiple of S), each normalised with its own statistics */
};

struct pool_attr {
    enum pool_kind kind;
    int kh, kw, sh, sw;       /* global pools pass the whole plane */
};

/* The step cursor: a TENSOR_I32 of PLAN_CURSOR_LEN values in backend memory, the
 * per-step state a replayed step reads. */
enum { CURSOR_STEP = 0,    /* global training step (indexes the learning-rate table) */
       CURSOR_EPOCH = 1,   /* 0-based epoch (the augmentation draw, parameter freezing) */
       CURSOR_INDEX = 2,   /* batch index: within the epoch, or within the evaluation pass */
       PLAN_CURSOR_LEN = 4 };

/* Most inputs of a concat node (engine/core/graph.h GRAPH_MAX_INPUTS). */
#define PLAN_MAX_CONCAT 8

/* One trainable parameter of an SGD node. It is stepped with
 * lr = (float)((double)lr_table[cursor[CURSOR_STEP]] * lr_scale) and weight decay wd,
 * unless train_epochs > 0 and cursor[CURSOR_EPOCH] >= train_epochs (then left as is). */
struct sgd_item {
    struct tensor *w, *v, *dw;  /* PARAM, the same shape: parameter, momentum, gradient */
    double lr_scale;
    float wd;
    int train_epochs;
};

/* One averaged tensor of a LERP node. */
struct lerp_item {
    struct tensor *avg, *w;     /* the same shape and kind, PARAM or F32 */
};

/* ---------------------------------------------------------------- the ops */

/* Every op's conventions:
 *   - shapes come from the slots' tensors; `n` of an activation may be smaller than
 *     allocated (the last evaluation batch), and the op uses the tensor's n;
 *   - a backward op overwrites parameter gradients and overwrites, or adds to (the
 *     node's acc bit), input gradients; an optional output that is NULL, or any output
 *     tensor without data, is not computed;
 *   - what each slot must hold (shapes, kinds, parameters) is the op's rule in the op
 *     table, checked by plan_node_check before any engine sees the node. */
/* The ops, X(ID, name): ID the enum plan_op value PLAN_ID, name the lower-case name the
 * op table (kernels/plan_ops.c) and the engines' runners use: each engine defines
 * cpu_run_<name> (kernels/cpu/) and cuda_run_<name> (kernels/cuda/), wherever the op's
 * kernels live, and its runner table is generated from this list. */
#define PLAN_OPS(X)                                                                         \
    X(BATCH, batch)                                                                         \
        /* x (n, 3, 32, 32), labels I32 from images U8, image_labels U8,                    \
           rows I32, cursor: batch row i is rows[cursor[CURSOR_INDEX] *                     \
           stride + i] (i < x->n), the draw's epoch cursor[CURSOR_EPOCH];                   \
           aug NULL: the test batch (normalise only) */                                     \
    X(CONV_FWD, conv_fwd)                                                                   \
        /* y = conv(x, w) + b (b may be NULL) */                                            \
    X(CONV_BWD, conv_bwd)                                                                   \
    X(BN_FWD_TRAIN, bn_fwd_train)                                                           \
        /* saved statistics F32 (S * c) (part s's channel j at s * c + j,                   \
           S = max(splits, 1)); running statistics F32 (c) updated once                     \
           with the means over the parts of each part's mean and unbiased                   \
           variance */                                                                      \
    X(BN_FWD_EVAL, bn_fwd_eval)                                                             \
    X(BN_BWD, bn_bwd)                                                                       \
        /* S from the saved mean's count / c */                                             \
    X(ACT_FWD, act_fwd)                                                                     \
    X(ACT_BWD, act_bwd)                                                                     \
    X(POOL_FWD, pool_fwd)                                                                   \
    X(POOL_BWD, pool_bwd)                                                                   \
    X(CONCAT_FWD, concat_fwd)                                                               \
    X(CONCAT_BWD, concat_bwd)                                                               \
        /* at most one input gradient NULL (an input that needs none),                      \
           its channels inferred */                                                         \
    X(ADD_FWD, add_fwd)                                                                     \
    X(SCALE_FWD, scale_fwd)                                                                 \
    X(SCALED_COPY, scaled_copy)                                                             \
        /* dx (=|+=) s * dy: the backward of add (s = 1) and scale */                       \
    X(FLATTEN_FWD, flatten_fwd)                                                             \
        /* y (n, c*h*w, 1, 1) from x (n, c, h, w) */                                        \
    X(FLATTEN_BWD, flatten_bwd)                                                             \
    X(LINEAR_FWD, linear_fwd)                                                               \
        /* x, y (n, in, 1, 1), (n, out, 1, 1); w PARAM (out, in, 1, 1);                     \
           b PARAM (out) or NULL */                                                         \
    X(LINEAR_BWD, linear_bwd)                                                               \
    X(XENT_FWD, xent_fwd)                                                                   \
        /* stats F32 (2) += (summed loss, correct count); probs like the                    \
           logits */                                                                        \
    X(XENT_BWD, xent_bwd)                                                                   \
    X(SGD, sgd)                                                                             \
        /* every item (struct sgd_item) stepped, in one pass where the                      \
           engine can: lr_table F32 (steps), cursor */                                      \
    X(LERP, lerp)                                                                           \
        /* weight averaging of every item, in one pass where the engine                     \
           can, per element avg = (1 - t) * avg + t * w in fp32, then                       \
           w = avg when copy_back; every compute copy of a PARAM tensor                     \
           that changes is refreshed (avg may be used for evaluation) */                    \
    X(CURSOR_ADVANCE, cursor_advance)                                                       \
        /* cursor[CURSOR_STEP] += 1 and cursor[CURSOR_INDEX] += 1 */                        \
    X(MUON, muon)                                                                           \
        /* every item (struct sgd_item) stepped by Muon (kernels/muon.h):                   \
           lr_table F32 (steps), cursor, as SGD's */                                        \
    X(DROPOUT_FWD, dropout_fwd)                                                             \
        /* y = x masked and scaled (kernels/dropout.h), y like x; the mask's                \
           step cursor[CURSOR_STEP] */                                                      \
    X(DROPOUT_BWD, dropout_bwd)                                                             \
        /* dx (=|+=) dy with the mask of the same step; dx, dy alike */                     \
    X(TEMPERATURE_FWD, temperature_fwd)                                                     \
        /* y = t x (kernels/temperature.h), y like x; t PARAM (1) in                        \
           slot PLAN_W */                                                                   \
    X(TEMPERATURE_BWD, temperature_bwd)                                                     \
        /* dx (=|+=) t dy, dx NULL or like dy; dt PARAM (1) in slot                         \
           PLAN_DW = sum dy x; src dy, x (PLAN_BWD_X), t (PLAN_BWD_W) */

/* The fused ops, X(ID, name) as in PLAN_OPS: each is a run of plain ops in one node, whose
 * results are those of its reference decomposition (plan_fused_expand, kernels/
 * plan.c) within the precision's tolerance, bit for bit on the CPU engine. The
 * plan's builder (engine/core/model_fuse.c) emits one where the graph makes it safe and
 * the engine supports it (backend_ops.supports, for the node's shapes and precision);
 * elsewhere it emits the decomposition. Both engines' runner tables take PLAN_FUSED_OPS
 * after PLAN_OPS, and each engine's supports says which nodes it runs fused;
 * plan_run_node runs the decomposition of one the engine does not support. */
#define PLAN_FUSED_OPS(X)                                                                   \
    X(BN_ACT_TRAIN, bn_act_train)                                                           \
        /* (with par.bn_act.add_in) ADD_FWD of the two operands into x, then                \
           BN_FWD_TRAIN, then ACT_FWD of its output, then (with a residual) ADD_FWD         \
           of the activation and the residual, or (with par.bn_act.pool) the max            \
           POOL_FWD of the activation: par.bn_act */                                        \
    X(BN_ACT_EVAL, bn_act_eval)                                                             \
        /* BN_FWD_EVAL, then ACT_FWD, then (with a residual) ADD_FWD or (with a             \
           pool) POOL_FWD */                                                                \
    X(BN_ACT_BWD, bn_act_bwd)                                                               \
        /* (with a pool) POOL_BWD into the activation's dy, then ACT_BWD into the           \
           batch norm's dy, then BN_BWD; the batch norm's output recomputed from x          \
           and the coefficients its BN_ACT_TRAIN kept */                                    \
    X(CONV_FUSED_FWD, conv_fused_fwd)                                                       \
        /* CONV_FWD (bias-free), then (with a residual) ADD_FWD of its output and the       \
           residual: an engine may read the input through a batch norm's apply and         \
           ReLU (a prologue), sum the output for the next batch norm, and recompute        \
           the residual through another batch norm's apply and ReLU */                     \
    X(CONV_FUSED_BWD, conv_fused_bwd)                                                       \
        /* CONV_BWD (bias-free), then (with the batch norm's backward, PLAN_CB_DZ)          \
           ACT_BWD, a ReLU, of its dx: an engine reads x through the batch norm's apply     \
           and ReLU for the weight gradient, and with PLAN_CB_DZ computes the ReLU's        \
           mask and the batch norm's weight gradients and input-gradient coefficients     \
           after the data gradient */                                                      \
    X(BN_APPLY_BWD, bn_apply_bwd)                                                           \
        /* BN_BWD: an engine may apply the input-gradient coefficients a CONV_FUSED_BWD     \
           computed, that node having written the weight gradients */                      \
    X(ADD_PRO, add_pro)                                                                     \
        /* ADD_FWD whose first operand is the activation of a batch norm that kept its      \
           coefficients (a BN_ACT_TRAIN with PLAN_BNA_VEC): an engine may recompute it      \
           from that batch norm's x as it reads it */

#define PLAN_OP_ENUM_ROW_(id, name) PLAN_##id,
enum plan_op { PLAN_OPS(PLAN_OP_ENUM_ROW_) PLAN_FUSED_OPS(PLAN_OP_ENUM_ROW_) PLAN_OP_COUNT };
#undef PLAN_OP_ENUM_ROW_

/* What a node is part of, for profiles and messages. */
enum plan_phase { PLAN_PHASE_BATCH, PLAN_PHASE_FORWARD, PLAN_PHASE_LOSS, PLAN_PHASE_BACKWARD,
                  PLAN_PHASE_OPTIMIZER, PLAN_PHASE_COUNT };

/* The node's shape, as a ggml tensor's: an op code, the op's destination tensors (dst,
 * what it writes) and source tensors (src, what it reads), each a fixed array with a count,
 * and its scalar parameters; the slot names below say which is which. One table
 * (plan_op_desc) states each op once: its name, how many dsts and srcs it has, which may
 * be NULL, which it adds to or always reads back, and its shape rule; the reads and
 * writes (plan_node_tensors), the signature, the checks (plan_node_check) and the
 * dispatch (plan_run_node, to the engine's runner) are loops over that shape and that
 * table.
 *
 * A variadic op has as many slots as its node says, 1 .. PLAN_MAX_CONCAT: CONCAT_FWD's
 * n_src inputs, CONCAT_BWD's n_dst input gradients (any of which may be added to). Every
 * other op has exactly its row's counts, set by plan_append and plan_node_init. Slots
 * from the count on are NULL. */
#define PLAN_NODE_MAX_DST 10   /* at least PLAN_MAX_CONCAT, and the fused ops' 10 */
#define PLAN_NODE_MAX_SRC 12   /* at least PLAN_MAX_CONCAT, and the fused ops' 11 */

/* Slot names (indices into dst[] and src[]), shared by the ops whose slots agree. */
enum plan_slot {
    /* forward ops (conv, bn, act, pool, concat, add, scale, flatten, linear, dropout): dst */
    PLAN_Y = 0,
    PLAN_SAVE_MEAN = 1, PLAN_SAVE_INVSTD = 2,    /* BN_FWD_TRAIN */
    PLAN_RUNNING_MEAN = 3, PLAN_RUNNING_VAR = 4, /* BN_FWD_TRAIN dst, BN_FWD_EVAL src */
    /* forward ops: src (CONCAT_FWD: src[0 .. n_src) its inputs) */
    PLAN_X = 0,
    PLAN_W = 1, PLAN_B = 2,                      /* CONV_FWD, LINEAR_FWD (b may be NULL) */
    PLAN_GAMMA = 1, PLAN_BETA = 2,               /* BN_FWD_TRAIN, BN_FWD_EVAL */
    PLAN_ADD_A = 0, PLAN_ADD_B = 1,              /* ADD_FWD */
    PLAN_DROPOUT_CURSOR = 1,                     /* DROPOUT_FWD, DROPOUT_BWD: the cursor */
    /* backward ops (CONCAT_BWD: dst[0 .. n_dst) its input gradients): dst */
    PLAN_DX = 0,
    PLAN_DW = 1, PLAN_DB = 2,                    /* CONV_BWD, LINEAR_BWD (db may be NULL) */
    PLAN_DGAMMA = 1, PLAN_DBETA = 2,             /* BN_BWD */
    /* backward ops: src */
    PLAN_DY = 0,
    PLAN_BWD_X = 1,                              /* CONV, BN, ACT, POOL, LINEAR _BWD */
    PLAN_BWD_W = 2,                              /* CONV_BWD, LINEAR_BWD */
    PLAN_BWD_GAMMA = 2, PLAN_BWD_SAVE_MEAN = 3, PLAN_BWD_SAVE_INVSTD = 4,   /* BN_BWD */
    PLAN_BWD_Y = 2,                              /* POOL_BWD: the forward's output */
    /* the loss */
    PLAN_XENT_STATS = 0, PLAN_XENT_PROBS = 1,    /* XENT_FWD dst */
    PLAN_XENT_LOGITS = 0, PLAN_XENT_LABELS = 1,  /* XENT_FWD src; XENT_BWD src labels */
    PLAN_XENT_DLOGITS = 0,                       /* XENT_BWD dst */
    PLAN_XENT_BWD_PROBS = 0,                     /* XENT_BWD src */
    /* the plan's own ops */
    PLAN_BATCH_X = 0, PLAN_BATCH_LABELS = 1,     /* BATCH dst */
    PLAN_BATCH_IMAGES = 0, PLAN_BATCH_IMAGE_LABELS = 1, PLAN_BATCH_ROWS = 2,
    PLAN_BATCH_CURSOR = 3,                       /* BATCH src */
    PLAN_SGD_LR_TABLE = 0, PLAN_SGD_CURSOR = 1,  /* SGD src, MUON src */
    PLAN_CURSOR = 0,                             /* CURSOR_ADVANCE dst */
    /* the fused batch norm (BN_ACT_TRAIN, BN_ACT_EVAL): dst[0 .. 4] and src[0 .. 2] as
       BN_FWD_TRAIN's (BN_ACT_EVAL: dst 1 .. 4 NULL, the running statistics read from src
       4 and 5), then: */
    PLAN_BNA_ACT = 5,       /* dst: the activation's output (n, c, h, w) */
    PLAN_BNA_OUT = 6,       /* dst: the residual add's output (n, c, h, w), or the max
                               pool's (n, c, h / kh, w / kw); NULL with neither */
    PLAN_BNA_COEF = 7,      /* dst: the coefficients kept for BN_ACT_BWD, F32 (S * c *
                               PLAN_BN_COEF_PER_CHANNEL) in the engine's own layout; NULL:
                               none kept (BN_ACT_TRAIN only) */
    PLAN_BNA_SUM = 8,       /* dst: with add_in, the add's output, the same handle as x
                               (BN_ACT_TRAIN only; else NULL) */
    PLAN_BNA_VEC = 9,       /* dst (BN_ACT_TRAIN only): the batch norm's vectors
                               (PLAN_BNV_*), when convolutions or an ADD_PRO read its
                               activation through its apply: a fused run writes its scale
                               and bias there and no elementwise output (y, activation:
                               keep_y 0, no residual, no pool); NULL: none */
    PLAN_BNA_VEC_IN = 8,    /* src (BN_ACT_TRAIN only): the same vectors, when the
                               CONV_FUSED_FWD writing x summed it there: a fused run takes
                               its statistics from those sums (one part); NULL: none */
    PLAN_BNA_ADD_PRO_X = 9, PLAN_BNA_ADD_PRO_COEF = 10,   /* src: with add_in, when the
                               add's first operand is the activation of a batch norm that
                               kept its coefficients (as ADD_PRO): that batch norm's x and
                               kept coefficients (one part); else NULL */
    PLAN_BNA_RES = 3,       /* src: the residual (n, c, h, w), NULL without one */
    PLAN_BNA_RMEAN = 4, PLAN_BNA_RVAR = 5,       /* src: BN_ACT_EVAL's running statistics */
    PLAN_BNA_ADD_A = 6, PLAN_BNA_ADD_B = 7,      /* src: with add_in, the add's operands
                                                    (n, c, h, w); else NULL */
    /* BN_ACT_BWD: dst[0 .. 2] and src[0 .. 4] as BN_BWD's, dy the activation's (with a
       pool, the pool's: (n, c, h / kh, w / kw)), then: */
    PLAN_BNA_DACT = 3,      /* dst: the activation's dx (the batch norm's dy) */
    PLAN_BNA_DPOOL = 4,     /* dst: with a pool, the pool's dx (the activation's dy); NULL
                               without */
    PLAN_BNA_BWD_Y = 5,     /* src: the batch norm's output (the activation's x) */
    PLAN_BNA_BWD_COEF = 6,  /* src: the coefficients BN_ACT_TRAIN kept */
    PLAN_BNA_BWD_ACT = 7,   /* src: with a pool, the activation's output (the pool's x) */
    PLAN_BNA_BWD_POOL_Y = 8, /* src: with a pool, the pool's output */
    /* CONV_FUSED_FWD: dst Y (the convolution's output) and src X, W as CONV_FWD's (no
       bias), then: */
    PLAN_CF_OUT = 1,        /* dst: the residual add's output (n, co, oh, ow); NULL without
                               a residual. With one, a fused run never writes Y */
    PLAN_CF_SUMS = 2,       /* dst: the vectors (PLAN_BNV_*) of the batch norm whose x is
                               the node's output (the add's with a residual): a fused run
                               writes its sums there; NULL: none */
    PLAN_CF_PRO_X = 2,      /* src: with a prologue, the x of the batch norm whose
                               activation is X (a fused run reads it through the apply
                               instead of X); NULL without */
    PLAN_CF_PRO_VEC = 3,    /* src: with a prologue, that batch norm's vectors */
    PLAN_CF_RES = 4,        /* src: the residual (n, co, oh, ow); NULL without */
    PLAN_CF_RES_X = 5, PLAN_CF_RES_VEC = 6,   /* src: when the residual is the activation
                               of a batch norm read through its apply, that batch norm's x
                               and vectors; else NULL */
    /* CONV_FUSED_BWD: dst DX, DW and src DY, BWD_X, BWD_W as CONV_BWD's (no bias), x
       being the activation of the batch norm read through its apply, then: */
    PLAN_CB_DZ = 2,         /* dst: with the batch norm's backward, the ReLU backward's dx
                               (the batch norm's dy); a fused run then never writes DX
                               (required), and adds what it holds when the node adds to
                               it; NULL without */
    PLAN_CB_DGAMMA = 3, PLAN_CB_DBETA = 4,   /* dst: with the batch norm's backward, its
                               weight gradients (each may be NULL), written by a fused run
                               here and by the decomposition in BN_APPLY_BWD */
    PLAN_CB_VEC = 5,        /* dst: with the batch norm's backward, its vectors (the weight
                               gradients where DGAMMA / DBETA are NULL, the coefficients) */
    PLAN_CB_PRO_X = 3,      /* src: the batch norm's x */
    PLAN_CB_PRO_VEC = 4,    /* src: its vectors (the apply's scale and bias) */
    PLAN_CB_BN_Y = 5,       /* src: with its backward, the batch norm's output (the ReLU's
                               x), then its saved statistics and parameters: */
    PLAN_CB_MEAN = 6, PLAN_CB_INVSTD = 7, PLAN_CB_GAMMA = 8, PLAN_CB_BETA = 9,
    /* BN_APPLY_BWD: BN_BWD's slots, then: */
    PLAN_BAB_VEC = 5,       /* src: the batch norm's vectors, as CONV_FUSED_BWD wrote them */
    /* ADD_PRO: ADD_FWD's slots (PLAN_ADD_A the activation), then: */
    PLAN_AP_X = 2,          /* src: the batch norm's x */
    PLAN_AP_COEF = 3        /* src: its kept coefficients (PLAN_BNA_COEF, one part) */
};

/* The per-channel vectors of a batch norm whose passes the convolutions around it take
 * (PLAN_BNA_VEC, PLAN_CF_SUMS, PLAN_CF_PRO_VEC, PLAN_CB_VEC, PLAN_BAB_VEC): one F32 tensor
 * of PLAN_BNV_COUNT * plan_bn_vec_stride(c) floats, vector v from v * stride on, each in
 * the engine's own layout within its c floats. */
enum plan_bn_vec {
    PLAN_BNV_SUM, PLAN_BNV_SQSUM,       /* the sums of x a convolution took */
    PLAN_BNV_SCALE, PLAN_BNV_BIAS,      /* the apply's scale and bias */
    PLAN_BNV_DSCALE, PLAN_BNV_DBIAS,    /* the weight gradients, where the batch norm's
                                           own tensors do not take them */
    PLAN_BNV_EQ_DY, PLAN_BNV_EQ_X, PLAN_BNV_EQ_B,   /* the input gradient's coefficients */
    PLAN_BNV_COUNT
};

/* The floats between two vectors of a batch norm over c channels: c rounded up to a
 * multiple of 4 (16-byte aligned vectors). */
static inline size_t plan_bn_vec_stride(int c)
{
    return ((size_t)(c > 0 ? c : 0) + 3) / 4 * 4;
}

/* The coefficients a fused batch norm keeps for its backward: floats per part and
 * channel (PLAN_BNA_COEF). */
#define PLAN_BN_COEF_PER_CHANNEL 4

/* A node's scalar parameters, one member per op family (the op says which is valid).
 * Four members hold a pointer, to data the node's builder owns: the batch's
 * augmentation (NULL = the test batch), and the item lists of the SGD, MUON and LERP
 * nodes, whose tensors (w, v, dw; avg, w) the node reads and writes besides its slots
 * (too many for them). */
union plan_params {
    struct conv_attr conv;   /* CONV_FWD, CONV_BWD, CONV_FUSED_FWD, CONV_FUSED_BWD (what
                                else the fused ones take, their slots say) */
    struct bn_attr bn;       /* BN_FWD_TRAIN, BN_FWD_EVAL */
    struct pool_attr pool;   /* POOL_FWD, POOL_BWD */
    struct {
        enum act_kind kind;
        float alpha;
    } act;                   /* ACT_FWD, ACT_BWD */
    struct {
        float s;
    } scale;                 /* SCALE_FWD, SCALED_COPY */
    struct {
        float smoothing, scale;   /* scale: XENT_BWD only */
    } xent;                  /* XENT_FWD, XENT_BWD */
    struct {
        const struct augment_params *aug;   /* NULL = test batch */
        int stride;
        uint64_t seed;
    } batch;                 /* BATCH */
    struct {
        const struct sgd_item *items;       /* owned by the plan's builder */
        int count;
        float momentum;
        int nesterov;
    } sgd;                   /* SGD */
    struct {
        const struct lerp_item *items;      /* owned by the node's builder */
        int count;
        float t;
        int copy_back;
    } lerp;                  /* LERP */
    struct {
        const struct sgd_item *items;       /* owned by the node's builder */
        int count;
        float momentum;
        int nesterov;
        struct muon_ns ns;
    } muon;                  /* MUON: its items as SGD's */
    struct dropout_attr dropout;   /* DROPOUT_FWD, DROPOUT_BWD */
    struct {
        struct bn_attr bn;
        enum act_kind kind;
        float alpha;
        int keep_y;          /* 1: the batch norm's output is written (another reader
                                needs it); 0: a fused run may leave it unwritten. With a
                                residual, a fused run never writes the activation's
                                output (the add alone reads it) */
        int res_first;       /* the residual was the add's first operand */
        int add_in;          /* BN_ACT_TRAIN: 1 when the add writing x is part of the node
                                (its operands PLAN_BNA_ADD_A, _B, its output PLAN_BNA_SUM);
                                an engine may take the statistics as it adds */
        struct pool_attr pool;   /* kh > 0: the max pool after the activation is part of
                                    the node (forward: its output PLAN_BNA_OUT; backward:
                                    its dy is the node's), its windows tiling the plane
                                    (stride the window); kh 0: none. With a pool, a fused
                                    run never writes the activation's output */
    } bn_act;                /* BN_ACT_TRAIN, BN_ACT_EVAL, BN_ACT_BWD (bn, kind, alpha,
                                pool) */
};

/* One node: one run of the op its kind names, by the engine's runner for that op. */
struct plan_node {
    enum plan_op op;
    enum plan_phase phase;
    int layer;                    /* graph layer id (engine/core/graph.h), -1 = none */
    int n_dst, n_src;             /* the op's counts (plan_op_desc), or a concat's */
    struct tensor *dst[PLAN_NODE_MAX_DST];        /* written; NULL where the op allows */
    const struct tensor *src[PLAN_NODE_MAX_SRC];  /* read; NULL where the op allows */
    unsigned acc;                 /* bit i: dst[i] is added to (the op's accumulate flag),
                                     else overwritten; only bits the op's row allows. For
                                     an op whose one such output is dst[0], 0 or 1. */
    union plan_params par;
};

/* Whether node n adds to dst[i] rather than overwriting it (the accumulate flag). */
#define PLAN_NODE_ACC(n, i) ((int)(((n)->acc >> (unsigned)(i)) & 1u))

/* Variadic count in plan_op_desc: the node's own n_dst or n_src, 1 .. PLAN_MAX_CONCAT. */
#define PLAN_VARIADIC (-1)

/* One op, stated once: every loop over a node's shape reads it. */
struct plan_op_desc {
    const char *name;   /* "conv_fwd", "bn_bwd", ... */
    int n_dst, n_src;   /* slots, or PLAN_VARIADIC */
    unsigned opt_dst, opt_src;   /* bit i: slot i may be NULL */
    unsigned acc_dst;   /* bit i: the node's acc may set bit i (dst[i] may be added to) */
    unsigned rw_dst;    /* bit i: dst[i] is always read as well as written (updated) */
    /* The op's shape rule: what the tensors in its slots (shapes, kinds, data where the op
     * reads it) and its parameters must be, for every engine. Called by plan_node_check
     * after the slot checks (every slot the row requires is set); DR_OK, or
     * DR_ERR_INTERNAL reported naming the op. */
    int (*rule)(const struct plan_node *n);
};

/* The row of op, or NULL for a value that is not an op. */
const struct plan_op_desc *plan_op_desc(enum plan_op op);

/* Zeroes node n and makes it a node of kind op: the row's counts (a variadic count 0,
 * for the caller to set), layer -1. */
void plan_node_init(struct plan_node *n, enum plan_op op);

/* Sets node n's slots and counts: dst[0 .. nd) from dst, src[0 .. ns) from src, the rest
 * NULL. A variadic op's counts are nd and ns; a fixed op's its row's, when they are not
 * fewer (the slots past nd and ns NULL: a fused op's optional trailing slots need not be
 * listed). nd and ns at most PLAN_NODE_MAX_DST and PLAN_NODE_MAX_SRC (larger counts are
 * cut, and plan_node_check then fails on a fixed op given too many). */
void plan_node_set_tensors(struct plan_node *n, struct tensor *const *dst, int nd,
                           const struct tensor *const *src, int ns);

/* The arguments of plan_node_set_tensors from lists of handles (C only: compound
 * literals): plan_node_set_tensors(n, PLAN_DSTS(y), PLAN_SRCS(x, w, b)). */
#define PLAN_DSTS(...)                                                                     \
    (struct tensor *const[]){__VA_ARGS__},                                                 \
        (int)(sizeof((struct tensor *const[]){__VA_ARGS__}) / sizeof(struct tensor *))
#define PLAN_SRCS(...)                                                                     \
    (const struct tensor *const[]){__VA_ARGS__},                                           \
        (int)(sizeof((const struct tensor *const[]){__VA_ARGS__}) /                        \
              sizeof(const struct tensor *))

/* Checks node n against its op's row: a known op, the counts (a variadic one within
 * 1 .. PLAN_MAX_CONCAT), every slot not allowed NULL set and at least one output (of an
 * op that has any), nothing past the counts, acc only on the outputs the op may add to;
 * then the row's shape rule; a fused op's parts (plan_fused_expand) each as a node.
 * DR_OK, or DR_ERR_INTERNAL reported with the op's name and the slot or the shape. */
int plan_node_check(const struct plan_node *n);

/* Whether the windows of max pool a tile an h x w plane: a max pool, stride equal to the
 * window, the plane a whole number of windows (so each element is in one window). The
 * pools a fused batch norm may take (PLAN_FUSED_OPS). 1 or 0. */
int plan_pool_tiles(const struct pool_attr *a, int h, int w);

/* The parts of a train-mode batch norm over x (ghost batch norm): max(a->splits, 1) in
 * the forward pass (a given), the saved mean's count / x->c in the backward pass (a NULL;
 * 1 without channels). BN_FWD_TRAIN's and BN_BWD's rules check that it divides x->n and
 * fits the saved statistics. */
int plan_bn_parts(const struct tensor *x, const struct tensor *save_mean,
                  const struct bn_attr *a);

struct plan {
    struct plan_node *nodes;
    int count, cap;
    int replayable;   /* 1: built to be run again unchanged (every per-step value in
                         backend memory), so a backend may capture and replay it */
    struct backend ran_on;   /* the backend plan_compute last ran it on (ops NULL: none),
                                which plan_free tells to forget it (plan_forget); that
                                backend must outlive the plan */
};

/* The tensors one node reads and writes, for analyses (which node consumes a tensor):
 * up to PLAN_NODE_MAX_TENSORS handles, NULL ones left out: each dst in order (written),
 * followed by itself again as read where the node adds to it (acc) or the op always
 * updates it (rw_dst), then each src (read). An SGD, MUON or LERP node's items are not
 * listed. Returns the count written to ts, with written[i] = 1 for an output. */
#define PLAN_NODE_MAX_TENSORS (2 * PLAN_NODE_MAX_DST + PLAN_NODE_MAX_SRC)
int plan_node_tensors(const struct tensor **ts, int *written, const struct plan_node *n);

/* A hash of everything a captured run depends on: every node's op, phase, layer, counts,
 * accumulate flags and parameters, and every slot's handle with its data pointer and
 * shape (an SGD, MUON or LERP node's items too). Equal signatures: the plan can be
 * replayed as it was captured. */
uint64_t plan_signature(const struct plan *p);

/* Called by plan_run_each before (after = 0) and after (after = 1) each node; a nonzero
 * return stops the run with that status. */
typedef int (*plan_node_hook)(void *user, const struct plan_node *n, int after);

/* Runs the nodes one by one, in order, each through plan_run_node: the reference
 * execution every backend's plan_compute must agree with. hook may be NULL. The first failing op's
 * status is returned (the op has reported it). */
int plan_run_each(const struct backend *b, const struct plan *p, plan_node_hook hook,
                  void *user);

/* Runs one node on b: plan_node_check, then b's supports (a fused node the engine does not
 * run is run as its reference decomposition, plan_fused_expand, each part through
 * plan_run_node; any other node the engine does not run is refused, DR_ERR_INTERNAL naming
 * the engine and the op), then b's run_node. */
int plan_run_node(const struct backend *b, const struct plan_node *n);

/* Runs node n alone, as a plan of one node (plan_run_each): an eager call is a one-node
 * plan, checked and dispatched as every node of a plan is. A lone node has nothing to fuse
 * or replay, so it takes the reference path every plan_compute agrees with. */
int plan_run_one(const struct backend *b, const struct plan_node *n);

/* Builds a lone node of kind op (plan_node_init; its slots from dst[0 .. nd) and
 * src[0 .. ns), plan_node_set_tensors; acc; the parameters *par, or none when par is
 * NULL) and runs it (plan_run_one): plan_run_op(b, PLAN_ACT_FWD, PLAN_DSTS(&y),
 * PLAN_SRCS(&x), 0, &(union plan_params){.act = {ACT_RELU, 0.0f}}). A LERP node, whose
 * tensors are its items, passes NULL, 0 for both lists. */
int plan_run_op(const struct backend *b, enum plan_op op, struct tensor *const *dst, int nd,
                const struct tensor *const *src, int ns, unsigned acc,
                const union plan_params *par);

/* Every node of p passes plan_node_check: DR_OK, or the first failure's status. */
int plan_check(const struct plan *p);

/* Runs the plan through b->ops->plan_compute when the backend has one (after plan_check,
 * so that the engine's fused paths take every node as checked), else plan_run_each
 * without a hook. Records b in p->ran_on (a backend p ran on before is first told to
 * forget it), so that plan_free has b forget p. */
int plan_compute(const struct backend *b, struct plan *p);

/* Appends a node of kind op (plan_node_init: zeroed, the row's counts) in phase and
 * layer; NULL when out of memory. Pointers to earlier nodes stay valid only until the
 * next append. */
struct plan_node *plan_append(struct plan *p, enum plan_op op, enum plan_phase phase, int layer);

/* Releases the node array (not the tensors, not sgd items), after telling the backend
 * that last ran p (p->ran_on) to forget it (backend_ops.plan_forget): a backend keeps what
 * it learnt about a plan by the plan's address, which a later plan may reuse. Safe on a
 * zeroed plan. */
void plan_free(struct plan *p);

/* ---------------------------------------------------------------- the fused ops
 * Their reference decompositions (kernels/plan.c): a fused node as the plain nodes it
 * stands for, in order, on the same tensors. The builder emits the decomposition where
 * the engine does not support the fused node, plan_run_node runs it for such a node
 * handed to it, plan_node_check checks each part as a node of its own after the fused
 * op's rule (which adds what the fused node has beyond its parts: the kept coefficients),
 * and the tests compare a fused node's run with its parts'. */

/* Most plain nodes one fused node stands for. */
#define PLAN_FUSED_MAX_PARTS 4

/* Writes the plain nodes fused node n stands for into parts[0 .. count) (caller-owned,
 * PLAN_FUSED_MAX_PARTS entries), each in n's phase and layer, and returns count; 0 for a
 * plain node (parts untouched). The parts write every output the fused node names,
 * whatever its keep_y: a fused run may leave some unwritten, its decomposition writes
 * them all. */
int plan_fused_expand(struct plan_node *parts, const struct plan_node *n);

/* Whether op is a fused op: 1 or 0. */
int plan_op_is_fused(enum plan_op op);

/* The op's name ("conv_fwd", "bn_bwd", ...) for messages and profiles. */
const char *plan_op_name(enum plan_op op);

#endif

/* The step as data: the sequence of backend calls one training step (batch, forward,
 * loss, backward, optimiser, cursor) or one evaluation batch makes, built once by the
 * engine and handed to the backend whole (backend_ops.plan_compute), as a ggml backend
 * is handed a graph. A backend may run it node by node (plan_run_each, below), or fuse
 * the patterns it supports and replay it as a captured graph; either way the results
 * are those of running the nodes one by one, in order, within the precision's tolerance
 * (the fp32 bounds of the selfcheck).
 *
 * A plan does not own its tensors: nodes point at the engine's struct tensor handles,
 * whose data and n may change between runs (a smaller last eval batch; weight averaging
 * swaps handles). A backend that keeps anything between runs of a plan (an analysis, a
 * captured graph) checks plan_signature() and redoes it when the signature changed, and
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

#include "backend.h"

enum plan_op {
    PLAN_BATCH,          /* backend_ops.augment_step */
    PLAN_CONV_FWD,
    PLAN_CONV_BWD,
    PLAN_BN_FWD_TRAIN,
    PLAN_BN_FWD_EVAL,
    PLAN_BN_BWD,
    PLAN_ACT_FWD,
    PLAN_ACT_BWD,
    PLAN_POOL_FWD,
    PLAN_POOL_BWD,
    PLAN_CONCAT_FWD,
    PLAN_CONCAT_BWD,
    PLAN_ADD_FWD,
    PLAN_SCALE_FWD,
    PLAN_SCALED_COPY,
    PLAN_FLATTEN_FWD,
    PLAN_FLATTEN_BWD,
    PLAN_LINEAR_FWD,
    PLAN_LINEAR_BWD,
    PLAN_XENT_FWD,
    PLAN_XENT_BWD,
    PLAN_SGD,            /* backend_ops.sgd_multi: every trainable parameter at once */
    PLAN_CURSOR_ADVANCE, /* backend_ops.cursor_advance */
    PLAN_OP_COUNT
};

/* What a node is part of, for profiles and messages. */
enum plan_phase { PLAN_PHASE_BATCH, PLAN_PHASE_FORWARD, PLAN_PHASE_LOSS, PLAN_PHASE_BACKWARD,
                  PLAN_PHASE_OPTIMIZER, PLAN_PHASE_COUNT };

/* One node: one call of the backend op its kind names, with that op's arguments (the
 * fields mirror the op's parameters in kernels/backend.h, outputs first). */
struct plan_node {
    enum plan_op op;
    enum plan_phase phase;
    int layer;                    /* graph layer id (engine/core/graph.h), -1 = none */
    union {
        struct {
            struct tensor *x, *labels;
            const struct tensor *images, *image_labels, *rows, *cursor;
            const struct augment_params *aug;   /* NULL = test batch */
            int stride;
            uint64_t seed;
        } batch;
        struct {
            struct tensor *y;
            const struct tensor *x, *w, *b;
            struct conv_attr a;
        } conv_fwd;
        struct {
            struct tensor *dx, *dw, *db;
            const struct tensor *dy, *x, *w;
            struct conv_attr a;
            int accumulate;
        } conv_bwd;
        struct {
            struct tensor *y, *save_mean, *save_invstd, *running_mean, *running_var;
            const struct tensor *x, *gamma, *beta;
            struct bn_attr a;
        } bn_fwd_train;
        struct {
            struct tensor *y;
            const struct tensor *x, *gamma, *beta, *running_mean, *running_var;
            struct bn_attr a;
        } bn_fwd_eval;
        struct {
            struct tensor *dx, *dgamma, *dbeta;
            const struct tensor *dy, *x, *gamma, *save_mean, *save_invstd;
            int accumulate;
        } bn_bwd;
        struct {
            struct tensor *y;
            const struct tensor *x;
            enum act_kind kind;
            float alpha;
        } act_fwd;
        struct {
            struct tensor *dx;
            const struct tensor *dy, *x;
            enum act_kind kind;
            float alpha;
            int accumulate;
        } act_bwd;
        struct {
            struct tensor *y;
            const struct tensor *x;
            struct pool_attr a;
        } pool_fwd;
        struct {
            struct tensor *dx;
            const struct tensor *dy, *x, *y;
            struct pool_attr a;
            int accumulate;
        } pool_bwd;
        struct {
            struct tensor *y;
            const struct tensor *xs[PLAN_MAX_CONCAT];
            int count;
        } concat_fwd;
        struct {
            struct tensor *dxs[PLAN_MAX_CONCAT];
            const struct tensor *dy;
            int count;
            int accumulate[PLAN_MAX_CONCAT];
        } concat_bwd;
        struct {
            struct tensor *y;
            const struct tensor *a, *b;
        } add_fwd;
        struct {
            struct tensor *y;
            const struct tensor *x;
            float s;
        } scale_fwd;
        struct {
            struct tensor *dx;
            const struct tensor *dy;
            float s;
            int accumulate;
        } scaled_copy;
        struct {
            struct tensor *y;
            const struct tensor *x;
        } flatten_fwd;
        struct {
            struct tensor *dx;
            const struct tensor *dy;
            int accumulate;
        } flatten_bwd;
        struct {
            struct tensor *y;
            const struct tensor *x, *w, *b;
        } linear_fwd;
        struct {
            struct tensor *dx, *dw, *db;
            const struct tensor *dy, *x, *w;
            int accumulate;
        } linear_bwd;
        struct {
            struct tensor *stats, *probs;
            const struct tensor *logits, *labels;
            float smoothing;
        } xent_fwd;
        struct {
            struct tensor *dlogits;
            const struct tensor *probs, *labels;
            float smoothing, scale;
        } xent_bwd;
        struct {
            const struct sgd_item *items;       /* owned by the plan's builder */
            int count;
            const struct tensor *lr_table, *cursor;
            float momentum;
            int nesterov;
        } sgd;
        struct {
            struct tensor *cursor;
        } cursor_advance;
    } u;
};

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
 * up to PLAN_NODE_MAX_TENSORS handles, NULL ones left out. A node that accumulates into
 * an output (accumulate = 1) also reads it. Returns the count written to ts, with
 * written[i] = 1 for an output. */
#define PLAN_NODE_MAX_TENSORS (2 * PLAN_MAX_CONCAT + 8)
int plan_node_tensors(const struct tensor **ts, int *written, const struct plan_node *n);

/* A hash of everything a captured run depends on: every node's op, every tensor handle's
 * data pointer and shape, and the attributes. Equal signatures: the plan can be replayed
 * as it was captured. */
uint64_t plan_signature(const struct plan *p);

/* Called by plan_run_each before (after = 0) and after (after = 1) each node; a nonzero
 * return stops the run with that status. */
typedef int (*plan_node_hook)(void *user, const struct plan_node *n, int after);

/* Runs the nodes one by one through b's table, in order: the reference execution every
 * backend's plan_compute must agree with. hook may be NULL. The first failing op's
 * status is returned (the op has reported it). */
int plan_run_each(const struct backend *b, const struct plan *p, plan_node_hook hook,
                  void *user);

/* Runs one node through b's table (the op its kind names). */
int plan_run_node(const struct backend *b, const struct plan_node *n);

/* Runs the plan through b->ops->plan_compute when the backend has one, else
 * plan_run_each without a hook. Records b in p->ran_on (a backend p ran on before is first
 * told to forget it), so that plan_free has b forget p. */
int plan_compute(const struct backend *b, struct plan *p);

/* Appends a zeroed node of kind op (phase, layer set by the caller); NULL when out of
 * memory. Pointers to earlier nodes stay valid only until the next append. */
struct plan_node *plan_append(struct plan *p, enum plan_op op, enum plan_phase phase, int layer);

/* Releases the node array (not the tensors, not sgd items), after telling the backend
 * that last ran p (p->ran_on) to forget it (backend_ops.plan_forget): a backend keeps what
 * it learnt about a plan by the plan's address, which a later plan may reuse. Safe on a
 * zeroed plan. */
void plan_free(struct plan *p);

/* The op's name ("conv_fwd", "bn_bwd", ...) for messages and profiles. */
const char *plan_op_name(enum plan_op op);

#endif

/* The CUDA engine's fusion analysis of a plan (kernels/plan.h), for its executor
 * (kernels/cuda/plan_cuda.cu): which nodes of a plan of plain nodes may run as one of the
 * fused batch-norm patterns, told as one step per node. The rules that make a fusion safe
 * live here; the engine says, in a struct plan_fuse_caps, what its fused kernels and
 * cuDNN's graphs take, runs the steps, and owns what the steps need at run time
 * (coefficient buffers, caches). The engine relies on it where the batch norm may go
 * inside cuDNN's convolution graphs (the half precisions, DAWNRUN_CUDA_FUSE_CONV on): there
 * it takes none of the builder's fused nodes (kernels/plan.h, PLAN_FUSED_OPS), so its
 * plans hold plain nodes. Elsewhere, as on the CPU engine, the batch-norm patterns come
 * from the plan's builder as fused nodes, which the analysis runs as they are.
 *
 * The patterns (docs/gpu.md, "Fused paths"):
 *   - forward: BN_FWD_TRAIN or BN_FWD_EVAL, then an ACT_FWD of its output: one pass
 *     after the statistics writes the activation's output, and the batch norm's output
 *     only when another node reads that value (keep_y); when an ADD_FWD alone reads the
 *     activation's output (a residual add), the pass writes the add's output instead;
 *   - backward: an ACT_BWD whose dx only a BN_BWD reads, that batch norm's BN_FWD_TRAIN
 *     being in the plan: the batch norm's backward takes the activation's dy and
 *     recomputes the batch norm's output from x with coefficients its forward kept
 *     (keeps_coef); the activation's dx is never written;
 *   - statistics in the add: an ADD_FWD run alone whose output's next toucher is a
 *     BN_FWD_TRAIN reading it as x (a residual block's sum entering the next
 *     pre-activation block): the add's kernel writes its output and the batch norm's
 *     per-channel partial sums, and the batch norm starts from those partials, skipping
 *     its own statistics pass (engines whose caps set add_stats);
 *   - the batch norm inside the convolutions (engines whose caps give conv_fwd_ok and conv_bwd_ok):
 *     a BN_FWD_TRAIN (one part) fused with a ReLU and with its backward as above, whose x a
 *     CONV_FWD without bias writes, and whose activation's value only one convolution reads, as
 *     CONV_FWD x and as CONV_BWD x (the same layer, no bias), that CONV_BWD's dx being the ReLU
 *     backward's dy and nothing else's: the convolution writing x also sums it for the batch norm
 *     (CONV_FWD, stats), the batch norm turns the sums into its statistics and the coefficients of
 *     its apply (BN_SUMS), the convolution reading the activation applies batch norm and ReLU to
 *     its input as it reads it (CONV_FWD, fwd), its backward does the same for the weight gradient
 *     and computes the ReLU's mask and the batch norm's weight gradients after the data gradient
 *     (CONV_BWD), and the batch norm's backward only applies them (BN_APPLY). Neither the batch
 *     norm's output nor the activation's, nor their gradients, are ever written;
 *   - the max pool after the activation (engines whose caps set pool_fold): a BN_TRAIN or BN_EVAL
 *     step with an activation, no add and no kept output (one part), whose activation's value only
 *     a POOL_FWD reads (and, in training, the POOL_BWD of the same attributes and output, as x),
 *     the pool's windows tiling the plane (a max pool, stride equal to the window, the plane a
 *     whole number of windows): the fused pass writes the pool's output and never the activation's
 *     (the pool's node is skipped); in training the batch norm's fused backward (BN_BWD) takes the
 *     pool's dy where the activation's backward took its dy, finding each window's maximum again
 *     from x and the kept coefficients, so that the pool's backward (skipped) writes nothing; its
 *     dx must be that activation backward's dy alone, written by nothing else;
 *   - the statistics in the convolution (engines whose caps give conv_fwd_ok): a BN_FWD_TRAIN of
 *     one part left to run with its own statistics pass (fused or not, its statistics from no add,
 *     not inside the convolutions), whose x's value a CONV_FWD without bias writes (the last node
 *     writing x before it), that convolution not already summing for another batch norm: the
 *     convolution (CONV_FWD, stats; with its prologue if it has one) also sums its output for the
 *     batch norm, which becomes a BN_TRAIN (act -1 when none was folded) whose stats names the
 *     convolution and skips its statistics pass;
 *   - the activation inside the convolutions reading it (engines whose caps give
 *     conv_fwd_ok and conv_wgrad_ok,): a fused
 *     BN_TRAIN with a ReLU and its backward fused (one part, no add, no pool, output not
 *     kept), whose activation's value only bias-free convolutions read, each as CONV_FWD
 *     x and as CONV_BWD x (a pre-activation block's first convolution and its 1x1
 *     shortcut), between the batch norm and its backward: the batch norm computes its
 *     statistics and coefficients only (BN_COEF), each CONV_FWD reads the batch norm's x
 *     through its apply and ReLU (CONV_FWD fwd; its statistics for another batch norm
 *     kept), each CONV_BWD does the same for its weight gradient (CONV_BWD_PRO), its
 *     data gradient as before, and the batch norm's backward recomputes from x as ever.
 *     On an engine whose caps set add_recompute, the activation may also have one ADD_FWD
 *     reader between the batch norm and its backward, reading it as one operand (the
 *     identity shortcut of a pre-activation block), run alone or taking a batch norm's
 *     statistics, whose output is neither the activation's nor the batch norm's x: that
 *     add recomputes the operand from x and the kept coefficients as it reads it
 *     (ADD_PRO). The activation's output is never written. On an engine whose caps give
 *     conv_bwd_ok too, the one CONV_BWD among those whose dx is the ReLU backward's dy
 *     and whose data gradient is the last value written there before that backward, the
 *     value's only reader, with nothing between them touching that dy, the ReLU
 *     backward's dx or the batch norm's weight gradients (a pre-activation block's branch,
 *     accumulating into the shortcut's gradient), runs as CONV_BWD does above, adding
 *     what its dx holds when it accumulates: its data gradient through the ReLU's mask
 *     into the batch norm backward's dy, with the batch norm's weight gradients and
 *     coefficients, the batch norm's backward a BN_APPLY. Its dx is never written;
 *   - the add inside the convolution writing its operand (engines whose caps give
 *     conv_add_ok,): an ADD_FWD run alone,
 *     taking a batch norm's statistics (ADD_STATS, that batch norm of one part) or
 *     recomputing a BN_COEF's activation (ADD_PRO), one of whose operands a bias-free
 *     CONV_FWD (run alone or with a prologue, summing for no batch norm) wrote, that value
 *     read by the add alone, nothing between the two touching it or the add's output, and
 *     nothing writing the other operand (or, recomputed, the batch norm's x) in between:
 *     the convolution adds the other operand (recomputed from the batch norm's x as it
 *     reads it) to its output and writes the sum as the add's output, summing it for the
 *     add's batch norm (whose stats then names the convolution); the add is skipped and
 *     the convolution's own output never written (a pre-activation block's second
 *     convolution and its shortcut).
 *
 * Invariants of the analysis: a value that a fused step no longer writes has no other
 * reader (each value a tensor holds considered apart: from the node that writes it to
 * the next node writing the tensor, wrapping round to the plan's start, since a replayed
 * plan's tensors keep their values into the next run); nothing a node moved to another
 * node's place reads or writes is touched by the nodes it moves over; nothing the
 * backward recomputes from (x, gamma, beta, the saved statistics) is written between the
 * forward and the backward. Everything else runs node by node (PLAN_FUSE_RUN). The
 * analysis reads the plan's nodes and tensor handles (their data pointers and shapes),
 * never tensor contents, and allocates nothing. */
#ifndef DAWNRUN_PLAN_FUSE_H
#define DAWNRUN_PLAN_FUSE_H

#include "plan.h"

/* What an engine's executor does at one node. */
enum plan_fuse_kind {
    PLAN_FUSE_RUN,        /* the node as it is (plan_run_node: the engine's runner) */
    PLAN_FUSE_SKIP,       /* folded into another node's step: nothing */
    PLAN_FUSE_BN_TRAIN,   /* the BN_FWD_TRAIN fused: act (or -1) and add (or -1) folded in */
    PLAN_FUSE_BN_EVAL,    /* the BN_FWD_EVAL fused: act (never -1) and add (or -1) folded in */
    PLAN_FUSE_BN_BWD,     /* the BN_BWD fused: ACT_BWD node act folded in, recomputing from
                             the coefficients BN_FWD_TRAIN node fwd kept */
    PLAN_FUSE_ADD_STATS,  /* the ADD_FWD, also summing its output for BN_FWD_TRAIN node
                             stats (whose step is BN_TRAIN, its stats naming this node) */
    PLAN_FUSE_CONV_FWD,   /* the CONV_FWD with batch norm inside: the input read through
                             BN_FWD_TRAIN node fwd's apply and ReLU (or -1: as it is), the
                             output summed for BN_FWD_TRAIN node stats (or -1; a BN_SUMS
                             step, or a BN_TRAIN or BN_COEF whose stats names this node);
                             with add >= 0, ADD_FWD node add (skipped) folded after it: its
                             other operand added (recomputed from BN_COEF node act's x and
                             coefficients when act >= 0) and the sum written, and summed,
                             instead of the convolution's output */
    PLAN_FUSE_CONV_BWD,   /* the CONV_BWD with batch norm inside: BN_FWD_TRAIN node fwd's
                             apply and ReLU on x for the weight gradient; the data gradient
                             (plus what dx holds, when the node accumulates; dx itself is
                             not written) through the ReLU's mask (ACT_BWD node act,
                             skipped) into the dy of BN_BWD node stats, with that batch
                             norm's weight gradients and input-gradient coefficients */
    PLAN_FUSE_BN_SUMS,    /* the BN_FWD_TRAIN from the sums CONV_FWD node stats took: its
                             statistics and the apply's coefficients, nothing elementwise
                             (ACT_FWD node act skipped) */
    PLAN_FUSE_BN_APPLY,   /* the BN_BWD from the coefficients CONV_BWD node stats computed
                             (forward fwd, ACT_BWD act): dx only, the elementwise pass */
    PLAN_FUSE_BN_COEF,    /* the BN_FWD_TRAIN whose activation (ACT_FWD node act, skipped)
                             only convolutions read, through its apply: its statistics
                             (stats as for BN_TRAIN) and coefficients, kept for its fused
                             backward and as those convolutions' prologue, nothing
                             elementwise */
    PLAN_FUSE_CONV_BWD_PRO, /* the CONV_BWD whose x is the unwritten activation of
                             BN_COEF node fwd: the weight gradient through that batch
                             norm's apply and ReLU, the data gradient as it is */
    PLAN_FUSE_ADD_PRO,    /* the ADD_FWD one of whose operands is the unwritten activation
                             of BN_COEF node fwd, recomputed from that batch norm's x and
                             kept coefficients; also summing its output for BN_FWD_TRAIN
                             node stats as ADD_STATS does (or -1: the sum alone) */
    PLAN_FUSE_KIND_COUNT  /* not a kind: the number of kinds */
};

/* One node's step. Indices are node indices of the analysed plan, -1 for none. */
struct plan_fuse_step {
    enum plan_fuse_kind kind;
    int act;          /* BN_TRAIN, BN_EVAL, BN_SUMS, BN_COEF: the ACT_FWD folded in; BN_BWD,
                         CONV_BWD, BN_APPLY: the ACT_BWD; CONV_FWD with an add: the
                         BN_COEF whose activation is the add's other operand, or -1 */
    int add;          /* BN_TRAIN, BN_EVAL: the residual ADD_FWD folded in after act;
                         CONV_FWD: the ADD_FWD folded in after the convolution */
    int fwd;          /* BN_BWD, BN_APPLY, CONV_BWD, CONV_BWD_PRO, ADD_PRO, CONV_FWD (-1:
                         no prologue), and the SKIP of the ACT_BWD folded: the BN_FWD_TRAIN
                         node whose kept coefficients (or statistics) it reads */
    int keep_y;       /* BN_TRAIN, BN_EVAL: the batch norm's output is read by a node
                         other than those folded, so the fused pass still writes it */
    int keeps_coef;   /* BN_TRAIN: a fused backward (BN_BWD naming this node as fwd)
                         reads the coefficients this forward must keep */
    int stats;        /* ADD_STATS, ADD_PRO: the BN_FWD_TRAIN whose statistics' partial sums
                         it computes (ADD_PRO: or -1); BN_TRAIN, BN_COEF: the ADD_STATS or
                         ADD_PRO node that computed them, or the
                         CONV_FWD node that summed x for it (the batch norm skips its own
                         statistics pass either way), or -1; CONV_FWD: the
                         BN_FWD_TRAIN whose sums it takes (or -1), BN_SUMS: that CONV_FWD;
                         CONV_BWD: the BN_BWD it computes for, BN_APPLY: that CONV_BWD */
    int pool;         /* BN_TRAIN, BN_EVAL: the POOL_FWD whose output the fused pass writes
                         (or -1); BN_BWD: the POOL_BWD whose dy it reads (or -1); the SKIP
                         of a pool folded: fwd is the batch norm's node */
};

/* What the engine's fused kernels take, beyond the rules above. Its own passes apply
 * every activation kind, and the plan's own nodes decide which values may be left
 * unwritten (a plan's readers are its nodes, replayed or not). */
struct plan_fuse_caps {
    /* 1: an ADD_FWD run alone may compute the statistics of the BN_FWD_TRAIN reading its
     * output (PLAN_FUSE_ADD_STATS); 0: the add and the batch norm run as they would. */
    int add_stats;
    /* The batch norm inside the convolutions (PLAN_FUSE_CONV_FWD and the kinds after it):
     * both NULL on an engine that has no such path. conv_fwd_ok: whether CONV_FWD node
     * conv runs with the apply and ReLU of BN_FWD_TRAIN node pro on its input (NULL:
     * none) and summing its output for BN_FWD_TRAIN node stats (NULL: no sums).
     * conv_bwd_ok: whether CONV_BWD node conv runs with the apply and ReLU of BN_FWD_TRAIN
     * node bn on x for the weight gradient, and the ReLU mask and bn's weight gradients
     * after the data gradient (plus what dx holds when conv accumulates; dx itself not
     * written). user is the caps' own. The answers may cost time (an
     * engine may build and try what it would run) but not change the plan. */
    int (*conv_fwd_ok)(void *user, const struct plan_node *conv, const struct plan_node *pro,
                       const struct plan_node *stats);
    int (*conv_bwd_ok)(void *user, const struct plan_node *conv, const struct plan_node *bn);
    void *user;
    /* 1: a max pool whose windows tile the plane may be folded into the fused batch norm
     * whose activation it reads (BN_TRAIN, BN_EVAL, BN_BWD pool); 0: it runs alone. */
    int pool_fold;
    /* Whether CONV_BWD node conv's weight gradient runs with the apply and ReLU of
     * BN_FWD_TRAIN node bn on x, its data gradient as it is (PLAN_FUSE_CONV_BWD_PRO); NULL
     * on an engine without the path (then no BN_COEF either). */
    int (*conv_wgrad_ok)(void *user, const struct plan_node *conv, const struct plan_node *bn);
    /* 1: an ADD_FWD (run alone or taking statistics) may read the activation of a BN_COEF
     * batch norm as one operand, recomputing it from that batch norm's x and coefficients
     * (PLAN_FUSE_ADD_PRO); 0: such an activation has convolutions as its only readers. */
    int add_recompute;
    /* Whether CONV_FWD node conv runs with the apply and ReLU of BN_FWD_TRAIN node pro on
     * its input (NULL: none), ADD_FWD node add's other operand added to its output and the
     * sum written as the add's output (that operand recomputed from BN_FWD_TRAIN node
     * res_bn's x through its apply and ReLU when res_bn is given), and the sum's statistics
     * for BN_FWD_TRAIN node stats (NULL: none) (PLAN_FUSE_CONV_FWD with add); NULL on an
     * engine without the path. */
    int (*conv_add_ok)(void *user, const struct plan_node *conv, const struct plan_node *pro,
                       const struct plan_node *add, const struct plan_node *res_bn,
                       const struct plan_node *stats);
};

/* Fills steps[0 .. p->count) (caller-owned, p->count entries) with the steps of plan p
 * on an engine with capabilities caps: every node PLAN_FUSE_RUN (act, add, fwd, stats,
 * pool -1, flags 0) except the patterns above, found where the rules and caps allow. The steps
 * hold for p as it is now; a caller that keeps them redoes the analysis when
 * plan_signature(p) or p->count changes. */
void plan_fuse_analyse(struct plan_fuse_step *steps, const struct plan *p,
                       const struct plan_fuse_caps *caps);

/* Whether a and b are the same memory: both non-NULL, and the same handle or handles of
 * the same non-NULL data. */
int plan_fuse_same_tensor(const struct tensor *a, const struct tensor *b);

/* The operand of ADD_FWD node add that is not t (the residual beside a folded
 * activation's output t); *t_second = 1 when t is the add's second operand (b), else 0.
 * t_second may be NULL. t and the result are (n, c, h, w) as the add's output. */
const struct tensor *plan_fuse_add_other(const struct plan_node *add,
                                         const struct tensor *t,   /* (n, c, h, w) */
                                         int *t_second);

/* The kind's name ("run", "skip", "bn_train", "bn_eval", "bn_bwd", "add_stats",
 * "conv_fwd", "conv_bwd", "bn_sums", "bn_apply", "bn_coef", "conv_bwd_pro", "add_pro"); "?"
 * for a
 * value that is not a kind. */
const char *plan_fuse_kind_name(enum plan_fuse_kind kind);

#endif

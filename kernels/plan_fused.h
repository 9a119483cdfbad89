/* The fused ops' reference decompositions (kernels/plan.h, PLAN_FUSED_OPS): a fused node
 * as the plain nodes it stands for, in order, on the same tensors. The builder emits the
 * decomposition where the engine does not support the fused node, plan_run_node runs it
 * for such a node handed to it, the op table's rule of a fused op is its parts' rules
 * (plus what the fused node adds: the kept coefficients), and the tests compare a fused
 * node's run with its parts'. */
#ifndef DAWNRUN_PLAN_FUSED_H
#define DAWNRUN_PLAN_FUSED_H

#include "plan.h"

/* Most plain nodes one fused node stands for. */
#define PLAN_FUSED_MAX_PARTS 3

/* Writes the plain nodes fused node n stands for into parts[0 .. count) (caller-owned,
 * PLAN_FUSED_MAX_PARTS entries), each in n's phase and layer, and returns count; 0 for a
 * plain node (parts untouched). The parts write every output the fused node names,
 * whatever its keep_y: a fused run may leave some unwritten, its decomposition writes
 * them all. */
int plan_fused_expand(struct plan_node *parts, const struct plan_node *n);

/* Whether op is a fused op: 1 or 0. */
int plan_op_is_fused(enum plan_op op);

/* The op table's rule of a fused op (plan_op_desc.rule): every part passes
 * plan_node_check, a residual comes with the add's output, and the kept coefficients
 * (BN_ACT_TRAIN's PLAN_BNA_COEF, required by BN_ACT_BWD, absent from BN_ACT_EVAL) are F32
 * of PLAN_BN_COEF_PER_CHANNEL floats per part and channel. DR_OK or DR_ERR_INTERNAL
 * reported naming the op. */
int plan_fused_rule(const struct plan_node *n);

#endif

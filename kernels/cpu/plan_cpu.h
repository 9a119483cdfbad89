/* The CPU engine's nodes: its runner table (nodes_cpu.c: backend_ops.supports and
 * run_node), whose fused ops (kernels/plan.h, PLAN_FUSED_OPS) run in plan_cpu.c. A plan
 * runs node by node (plan_run_each): what fuses was decided by its builder. */
#ifndef DAWNRUN_KERNELS_CPU_PLAN_CPU_H
#define DAWNRUN_KERNELS_CPU_PLAN_CPU_H

#include "../plan.h"

/* The runners, one per op of PLAN_OPS (kernels/plan.h): cpu_run_<name> runs a node that
 * plan_node_check passed on the CPU kernels. Most are in nodes_cpu.c; an op's may sit
 * beside its kernels instead (linear's in linear.c). */
#define CPU_RUN_DECL_(id, name) int cpu_run_##name(const struct plan_node *n);
PLAN_OPS(CPU_RUN_DECL_)
#undef CPU_RUN_DECL_

/* The fused ops the engine runs with passes of its own (plan_cpu.c), X(ID, name) as in
 * PLAN_FUSED_OPS; it runs the others (the convolutions with a batch norm's passes inside)
 * as their decompositions (plan_run_node). */
#define CPU_FUSED_OPS(X) X(BN_ACT_TRAIN, bn_act_train) X(BN_ACT_EVAL, bn_act_eval) \
    X(BN_ACT_BWD, bn_act_bwd)
#define CPU_RUN_DECL_(id, name) int cpu_run_##name(const struct plan_node *n);
CPU_FUSED_OPS(CPU_RUN_DECL_)
#undef CPU_RUN_DECL_

/* fp32 contents of a node's optional slot, for the runners: NULL for an absent tensor or
 * one without data. */
static inline float *cpu_slot_data(const struct tensor *t)
{
    return t ? (float *)t->data : NULL;
}

/* Whether the CPU engine runs node n: every plain op, in fp32, whatever the shapes the
 * op's rule allows; a fused op where cpu_fused_supported says so. 1 or 0. */
int cpu_node_supported(const struct plan_node *n);

/* Runs node n, which plan_node_check passed, on the CPU kernels (on the calling thread's
 * OpenMP team); DR_ERR_INTERNAL for an op without a runner, DR_ERR_DATA for a label or a
 * batch row out of range. */
int cpu_node_run(const struct plan_node *n);

/* Whether the CPU engine's fused passes (plan_cpu.c) run fused node n: a ReLU, the batch
 * norm's tensors with data and of its input's shape, and DAWNRUN_CPU_FUSE not "0" (read
 * at each call); 1 or 0. */
int cpu_fused_supported(const struct plan_node *n);

#endif

/* The CPU engine's nodes and plans: its runner table (nodes_cpu.c: backend_ops.supports
 * and run_node) and its plan executor (plan_cpu.c, backend_ops.plan_compute: the plan's
 * nodes through the runner table, but for the batch-norm patterns it fuses, found by the
 * analysis the engines share, kernels/plan_fuse.h). */
#ifndef DAWNRUN_KERNELS_CPU_PLAN_CPU_H
#define DAWNRUN_KERNELS_CPU_PLAN_CPU_H

#include "../plan.h"

/* The runners, one per op of PLAN_OPS (kernels/plan.h): cpu_run_<name> runs a node that
 * plan_node_check passed on the CPU kernels. Most are in nodes_cpu.c; an op's may sit
 * beside its kernels instead (linear's in linear.c). */
#define CPU_RUN_DECL_(id, name) int cpu_run_##name(const struct plan_node *n);
PLAN_OPS(CPU_RUN_DECL_)
#undef CPU_RUN_DECL_

/* Whether the CPU engine has a runner for node n's op (it has one for every op, in fp32,
 * whatever the shapes the op's rule allows): 1 or 0. */
int cpu_node_supported(const struct plan_node *n);

/* Runs node n, which plan_node_check passed, on the CPU kernels (on the calling thread's
 * OpenMP team); DR_ERR_INTERNAL for an op without a runner, DR_ERR_DATA for a label or a
 * batch row out of range. */
int cpu_node_run(const struct plan_node *n);

/* The analyses of the plans run so far, by plan and signature. */
struct cpu_plan_cache;
struct plan_fuse_caps;

/* What the CPU engine's fused passes take (kernels/plan_fuse.h), as cpu_plan_run hands it
 * to plan_fuse_analyse; static, never NULL. */
const struct plan_fuse_caps *cpu_plan_fuse_caps(void);

/* Runs plan p through backend b (the CPU engine), fusing where plan_cpu.c says, with
 * plan_run_each's results bit for bit; *cache (NULL at first) keeps each plan's analysis.
 * DAWNRUN_CPU_FUSE=0 (read at each run) runs every node one by one. Returns the first
 * failing node's status. */
int cpu_plan_run(struct cpu_plan_cache **cache, const struct backend *b, const struct plan *p);

/* Drops plan p's analysis from the cache (p is being freed). Safe on NULL. */
void cpu_plan_forget(struct cpu_plan_cache *cache, const struct plan *p);

/* Releases the cache. Safe on NULL. */
void cpu_plan_cache_free(struct cpu_plan_cache *cache);

#endif

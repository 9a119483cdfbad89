/* The CPU engine's plan executor (backend_ops.plan_compute): the plan's nodes through the
 * engine's table, but for the batch-norm patterns it fuses (found by the analysis the
 * engines share, kernels/plan_fuse.h; what the CPU takes: plan_cpu.c). */
#ifndef DAWNRUN_KERNELS_CPU_PLAN_CPU_H
#define DAWNRUN_KERNELS_CPU_PLAN_CPU_H

#include "../plan.h"

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

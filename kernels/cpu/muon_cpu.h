/* The CPU engine's multi-tensor Muon step (the MUON node's runner), kept beside the
 * single-tensor twin in kernels/cpu/muon.c. */
#ifndef DAWNRUN_KERNELS_CPU_MUON_CPU_H
#define DAWNRUN_KERNELS_CPU_MUON_CPU_H

#include "../plan.h"

/* muon_step_cpu (kernels/muon.h) on every item whose train_epochs has not run out at
 * cursor[CURSOR_EPOCH], with lr = (float)((double)lr_table[cursor[CURSOR_STEP]] *
 * lr_scale); an item's w is the matrix (w->n, the rest) and its wd is not used. The items
 * as the MUON node's rule (kernels/plan_ops.c) says. Returns DR_OK, DR_ERR_NOMEM or
 * DR_ERR_INTERNAL. */
int muon_multi_cpu(const struct sgd_item *items, int count,
                   const struct tensor *lr_table,   /* F32 (steps) */
                   const struct tensor *cursor,     /* I32 (PLAN_CURSOR_LEN) */
                   float momentum, int nesterov, const struct muon_ns *ns);

#endif

/* The temperature layer: one trained scalar t (a PARAM tensor of one fp32 value) that
 * multiplies its input, typically the logits before the loss (t = 1 / T). Over the count
 * elements of x, dy (and y, dx) in the engine's layout, whatever it is (elementwise):
 *   y_i  = t * x_i
 *   dx_i = t * dy_i                 (overwriting), or
 *   dx_i = dx_i + t * dy_i          (accumulating)
 *   dt   = sum over i of dy_i * x_i (overwritten, as every parameter gradient)
 * y and dx: each product and sum rounded once in fp32 (no multiply-add), so that both
 * engines give the same bits in fp32. dt: each product dy_i * x_i in double (exact for
 * fp32 factors), summed in double in an order fixed by the element count alone (the CPU
 * twin: index order; the CUDA twin: a fixed tree), rounded once to fp32 at the end, so
 * that a run repeats to the bit and the engines differ by the order of a double sum only.
 * The engines read t from memory when the node runs (a captured step replays with the
 * value the optimiser left). The nodes are TEMPERATURE_FWD and TEMPERATURE_BWD
 * (kernels/plan.h). */
#ifndef DAWNRUN_KERNELS_TEMPERATURE_H
#define DAWNRUN_KERNELS_TEMPERATURE_H

#include <stddef.h>

/* y = t * x elementwise (the contract above). */
void temperature_forward_cpu(float *y,        /* (count), any layout: x's */
                             const float *x,  /* (count) */
                             float t, size_t count);

/* dx (=|+=) t * dy elementwise, and dt = sum of dy * x in double, index order, rounded
 * to fp32; a NULL dx or dt is not computed. */
void temperature_backward_cpu(float *dx,       /* (count), dy's layout, or NULL */
                              float *dt,       /* (1), or NULL */
                              const float *dy, /* (count) */
                              const float *x,  /* (count), dy's layout */
                              float t, size_t count, int accumulate_dx);

#endif

/* SGD with momentum, in the update order of Page's experiments (per element):
 *   dw = -lr * (dw + wd * w);  v = momentum * v + dw;
 *   nesterov: w += dw + momentum * v        plain: w += v
 * dw is used as scratch and left holding the step.
 * Weight averaging (EMA, Lookahead), per element in fp32, every product and sum rounded
 * on its own (no fused multiply-add, on every engine):
 *   s = 1 - t;  avg = s * avg + t * w;  then, when copy_back, w = avg. */
#ifndef DAWNRUN_KERNELS_OPTIMIZER_H
#define DAWNRUN_KERNELS_OPTIMIZER_H

#include <stddef.h>

void sgd_update_cpu(float *w,   /* (count) in/out */
                    float *v,   /* (count) in/out, momentum buffer */
                    float *dw,  /* (count) gradient in, scratch out */
                    float lr, float wd, float momentum, int nesterov, size_t count);

/* avg = (1 - t) * avg + t * w element by element, in the order above; then, when
 * copy_back, w = avg. */
void param_lerp_cpu(float *avg, /* (count) in/out, the average */
                    float *w,   /* (count) in (out when copy_back) */
                    float t, int copy_back, size_t count);

#endif

/* SGD with momentum, in the update order of Page's experiments (per element):
 *   dw = -lr * (dw + wd * w);  v = momentum * v + dw;
 *   nesterov: w += dw + momentum * v        plain: w += v
 * dw is used as scratch and left holding the step. */
#ifndef DAWNRUN_KERNELS_OPTIMIZER_H
#define DAWNRUN_KERNELS_OPTIMIZER_H

#include <stddef.h>

void sgd_update_cpu(float *w,   /* (count) in/out */
                    float *v,   /* (count) in/out, momentum buffer */
                    float *dw,  /* (count) gradient in, scratch out */
                    float lr, float wd, float momentum, int nesterov, size_t count);

#endif

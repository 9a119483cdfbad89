/* Softmax cross-entropy with optional label smoothing. The target distribution is
 * (1 - s) * onehot(label) + s / k. Per-example loss = -sum_j target_j * log softmax_j.
 * CPU twin layout: logits are class-major (k, n). */
#ifndef DAWNRUN_KERNELS_LOSS_H
#define DAWNRUN_KERNELS_LOSS_H

#include <stdint.h>

/* probs = softmax(logits) per example; stats[0] += summed loss over the batch,
 * stats[1] += number of examples whose arg-max (first maximum) equals the label. */
void xent_forward_cpu(float *stats,           /* (2) accumulated */
                      float *probs,           /* (k, n) */
                      const float *logits,    /* (k, n) */
                      const int32_t *labels,  /* (n) */
                      int k, int n, float smoothing);

/* dlogits = scale * (probs - target), overwritten. scale = 1 for a summed loss,
 * 1/n for the batch mean. */
void xent_backward_cpu(float *dlogits,          /* (k, n) */
                       const float *probs,      /* (k, n) */
                       const int32_t *labels,   /* (n) */
                       int k, int n, float smoothing, float scale);

#endif

/* CPU softmax cross-entropy with label smoothing on class-major (k, n) logits. Each
 * example's log-sum-exp and loss are formed in double; the batch sum is in example
 * order. */
#include "../loss.h"

#include <math.h>
#include <stddef.h>

void xent_forward_cpu(float *stats, float *probs, const float *logits, const int32_t *labels,
                      int k, int n, float smoothing)
{
    double total = 0.0;
    long correct = 0;
    const double s = smoothing, on = 1.0 - s, off = k > 0 ? s / k : 0.0;
    for (int i = 0; i < n; i++) {
        const int label = labels[i];
        int arg = 0;
        float best = logits[i];
        for (int j = 1; j < k; j++) {
            const float z = logits[(size_t)j * n + i];
            if (z > best) {
                best = z;
                arg = j;
            }
        }
        double sum = 0.0, zsum = 0.0;
        for (int j = 0; j < k; j++) {
            const double z = logits[(size_t)j * n + i];
            sum += exp(z - best);
            zsum += z;
        }
        const double lse = best + log(sum);
        for (int j = 0; j < k; j++)
            probs[(size_t)j * n + i] = (float)(exp((double)logits[(size_t)j * n + i] - lse));
        /* -sum_j t_j (z_j - lse) with sum_j t_j = 1 */
        double loss = lse - off * zsum;
        if (label >= 0 && label < k) loss -= on * (double)logits[(size_t)label * n + i];
        total += loss;
        correct += arg == label;
    }
    stats[0] += (float)total;
    stats[1] += (float)correct;
}

void xent_backward_cpu(float *dlogits, const float *probs, const int32_t *labels, int k, int n,
                       float smoothing, float scale)
{
    const float off = k > 0 ? smoothing / (float)k : 0.0f, on = 1.0f - smoothing;
    for (int j = 0; j < k; j++) {
        const float *pr = probs + (size_t)j * n;
        float *dr = dlogits + (size_t)j * n;
        for (int i = 0; i < n; i++) {
            const float t = off + (labels[i] == j ? on : 0.0f);
            dr[i] = scale * (pr[i] - t);
        }
    }
}

/* Softmax cross-entropy with label smoothing on row-major (n, k) logits: the CUDA twin
 * of kernels/cpu/loss.c. The forward pass is one block: each thread takes examples in
 * turn (log-sum-exp and loss in double, as on the CPU), a fixed tree sums the batch, and
 * thread 0 adds (summed loss, correct count) into the fp32 stats vector on the device, so
 * nothing is read back until the caller reads stats. A label outside 0..k-1 raises the
 * context's FLAG_BAD_LABEL (reported at the next synchronisation) and adds nothing. */
#include <math.h>

#include "cuda_internal.h"

#define XENT_THREADS 256

template <typename T>
__global__ void __launch_bounds__(XENT_THREADS)
    xent_forward_kernel(float *stats,           /* (2) accumulated */
                        T *probs,               /* (n, k) */
                        const T *logits,        /* (n, k) */
                        const int32_t *labels,  /* (n) */
                        int k, int n, float smoothing, int *flags)
{
    __shared__ double sh_loss[XENT_THREADS], sh_correct[XENT_THREADS];
    const double s = smoothing, on = 1.0 - s, off = k > 0 ? s / k : 0.0;
    double total = 0.0, correct = 0.0;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
        const T *z = logits + (size_t)i * k;
        T *p = probs + (size_t)i * k;
        const int label = labels[i];
        int arg = 0;
        float best = cuda_to_f<T>(z[0]);
        for (int j = 1; j < k; j++) {
            const float v = cuda_to_f<T>(z[j]);
            if (v > best) {
                best = v;
                arg = j;
            }
        }
        double sum = 0.0, zsum = 0.0;
        for (int j = 0; j < k; j++) {
            const double v = cuda_to_f<T>(z[j]);
            sum += exp(v - best);
            zsum += v;
        }
        const double lse = best + log(sum);
        for (int j = 0; j < k; j++)
            p[j] = cuda_from_f<T>((float)exp((double)cuda_to_f<T>(z[j]) - lse));
        if (label < 0 || label >= k) {
            flags[FLAG_BAD_LABEL] = 1;
            continue;
        }
        total += lse - off * zsum - on * (double)cuda_to_f<T>(z[label]);
        correct += arg == label ? 1.0 : 0.0;
    }
    sh_loss[threadIdx.x] = total;
    sh_correct[threadIdx.x] = correct;
    __syncthreads();
    for (int half = XENT_THREADS / 2; half > 0; half /= 2) {
        if ((int)threadIdx.x < half) {
            sh_loss[threadIdx.x] += sh_loss[threadIdx.x + half];
            sh_correct[threadIdx.x] += sh_correct[threadIdx.x + half];
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        stats[0] += (float)sh_loss[0];
        stats[1] += (float)sh_correct[0];
    }
}

/* dlogits = scale * (probs - target), target = (1 - s) onehot + s / k. */
template <typename T>
__global__ void xent_backward_kernel(T *dlogits, const T *probs, const int32_t *labels, int k,
                                     int n, float smoothing, float scale, int *flags)
{
    const size_t count = (size_t)n * (size_t)k;
    const float off = k > 0 ? smoothing / (float)k : 0.0f, on = 1.0f - smoothing;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x) {
        const int label = labels[i / (size_t)k], j = (int)(i % (size_t)k);
        if (label < 0 || label >= k) flags[FLAG_BAD_LABEL] = 1;
        const float t = __fadd_rn(off, label == j ? on : 0.0f);
        dlogits[i] = cuda_from_f<T>(__fmul_rn(scale, __fsub_rn(cuda_to_f<T>(probs[i]), t)));
    }
}

int cuda_xent_forward(void *ctx, struct tensor *stats, struct tensor *probs,
                      const struct tensor *logits, const struct tensor *labels, float smoothing)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    if (logits->n == 0 || logits->c == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T,
                  xent_forward_kernel<T><<<1, XENT_THREADS, 0, c->stream>>>(
                      (float *)stats->data, (T *)probs->data, (const T *)logits->data,
                      (const int32_t *)labels->data, logits->c, logits->n, smoothing,
                      c->flags_dev));
    /* reads logits (n, k), n labels (int32) and stats (2 floats); writes probs (n, k)
     * and stats */
    CHECK_LAUNCH(c, tensor_count(logits) * cuda_dt_size(c->dt) +
                        (size_t)logits->n * sizeof(int32_t) + 2 * sizeof(float),
                 tensor_count(probs) * cuda_dt_size(c->dt) + 2 * sizeof(float));
cleanup:
    return rc;
}

int cuda_xent_backward(void *ctx, struct tensor *dlogits, const struct tensor *probs,
                       const struct tensor *labels, float smoothing, float scale)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = tensor_count(probs);
    if (count == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T,
                  xent_backward_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)dlogits->data, (const T *)probs->data, (const int32_t *)labels->data,
                      probs->c, probs->n, smoothing, scale, c->flags_dev));
    /* reads probs (n, k) and n labels (int32); writes dlogits (n, k) */
    CHECK_LAUNCH(c, count * cuda_dt_size(c->dt) + (size_t)probs->n * sizeof(int32_t),
                 count * cuda_dt_size(c->dt));
cleanup:
    return rc;
}

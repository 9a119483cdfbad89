/* CPU SGD with momentum and weight averaging in exactly the per-element order of
 * kernels/optimizer.h. Compiled once per instruction set (cpu_isa.h). */
#include "../optimizer.h"
#include "cpu_isa.h"

/* Below this many elements the update stays on one thread. */
#define SGD_PARALLEL_MIN 65536

void CPU_ISA_FN(sgd_update_cpu)(float *w, float *v, float *dw, float lr, float wd, float momentum,
                    int nesterov, size_t count)
{
    const long cnt = (long)count;
    if (nesterov) {
#pragma omp parallel for schedule(static) if (count >= SGD_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) {
            const float step = -lr * (dw[i] + wd * w[i]);
            const float vel = momentum * v[i] + step;
            dw[i] = step;
            v[i] = vel;
            w[i] += step + momentum * vel;
        }
    } else {
#pragma omp parallel for schedule(static) if (count >= SGD_PARALLEL_MIN)
        for (long i = 0; i < cnt; i++) {
            const float step = -lr * (dw[i] + wd * w[i]);
            const float vel = momentum * v[i] + step;
            dw[i] = step;
            v[i] = vel;
            w[i] += vel;
        }
    }
}

void CPU_ISA_FN(param_lerp_cpu)(float *avg, float *w, float t, int copy_back, size_t count)
{
    const long cnt = (long)count;
    const float s = 1.0f - t;
#pragma omp parallel for schedule(static) if (count >= SGD_PARALLEL_MIN)
    for (long i = 0; i < cnt; i++) {
        const float kept = s * avg[i], added = t * w[i];
        const float a = kept + added;
        avg[i] = a;
        if (copy_back) w[i] = a;
    }
}

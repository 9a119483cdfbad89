/* CPU temperature (kernels/temperature.h), the reference twin: the elementwise products in
 * fp32 (each rounded once), the gradient of t summed in double in index order; and the
 * TEMPERATURE_FWD and TEMPERATURE_BWD nodes' runners, which read t from its tensor. */
#include "../temperature.h"

#include "../../base/status.h"
#include "plan_cpu.h"

/* Below this many elements the elementwise loops stay on one thread. */
#define TEMPERATURE_PARALLEL_MIN 32768

void temperature_forward_cpu(float *y, const float *x, float t, size_t count)
{
    const long n = (long)count;
#pragma omp parallel for schedule(static) if (n >= TEMPERATURE_PARALLEL_MIN)
    for (long i = 0; i < n; i++) y[i] = t * x[i];
}

void temperature_backward_cpu(float *dx, float *dt, const float *dy, const float *x, float t,
                              size_t count, int accumulate_dx)
{
    const long n = (long)count;
    if (dt) {
        double s = 0.0;
        for (long i = 0; i < n; i++) s += (double)dy[i] * (double)x[i];
        *dt = (float)s;
    }
    if (!dx) return;
#pragma omp parallel for schedule(static) if (n >= TEMPERATURE_PARALLEL_MIN)
    for (long i = 0; i < n; i++) {
        const float g = t * dy[i];
        dx[i] = accumulate_dx ? dx[i] + g : g;
    }
}

/* ------------------------------------------------------------------ the nodes' runners */

/* The scalar t of a node (slot PLAN_W of the forward, PLAN_BWD_W of the backward). */
static float node_t(const struct tensor *t)
{
    return *(const float *)t->data;
}

int cpu_run_temperature_fwd(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    float *y = cpu_slot_data(n->dst[PLAN_Y]);
    if (y) temperature_forward_cpu(y, x->data, node_t(n->src[PLAN_W]), tensor_count(x));
    return DR_OK;
}

int cpu_run_temperature_bwd(const struct plan_node *n)
{
    const struct tensor *dy = n->src[PLAN_DY];
    temperature_backward_cpu(cpu_slot_data(n->dst[PLAN_DX]), cpu_slot_data(n->dst[PLAN_DW]),
                             dy->data, n->src[PLAN_BWD_X]->data, node_t(n->src[PLAN_BWD_W]),
                             tensor_count(dy), PLAN_NODE_ACC(n, PLAN_DX));
    return DR_OK;
}

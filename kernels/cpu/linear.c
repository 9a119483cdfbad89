/* CPU fully connected layer in features-major layout: single-threaded sgemm calls on
 * fixed blocks, one per OpenMP thread (columns of y for the forward pass, input
 * features for the backward pass), so results are bit-identical from run to run; and
 * the LINEAR_FWD and LINEAR_BWD nodes' runners, which hand it the node's slots. */
#include "../linear.h"

#include <omp.h>
#include <stddef.h>

#include "../../base/status.h"
#include "cpu_util.h"
#include "plan_cpu.h"

/* [*lo, *hi): block t of nt over [0, total). */
static void linear_block(int *lo, int *hi, int total, int t, int nt)
{
    *lo = (int)((long)total * t / nt);
    *hi = (int)((long)total * (t + 1) / nt);
}

void linear_forward_cpu(float *y, const float *x, const float *w, const float *b, int out,
                        int in, int n)
{
    /* always an active region, even for small products: oneDNN then runs each call on
     * its own thread instead of choosing a team of its own */
#pragma omp parallel
    {
        int j0, j1;
        linear_block(&j0, &j1, n, omp_get_thread_num(), omp_get_num_threads());
        if (j1 > j0) {
            cpu_sgemm('N', 'N', out, j1 - j0, in, 1.0f, w, in, x + j0, n, 0.0f, y + j0, n);
            if (b)
                for (int o = 0; o < out; o++)
                    for (int j = j0; j < j1; j++) y[(size_t)o * n + j] += b[o];
        }
    }
}

void linear_backward_cpu(float *dx, float *dw, float *db, const float *dy, const float *x,
                         const float *w, int out, int in, int n, int accumulate_dx)
{
#pragma omp parallel
    {
        int i0, i1;
        linear_block(&i0, &i1, in, omp_get_thread_num(), omp_get_num_threads());
        if (i1 > i0) {
            /* dw[:, i0:i1] = dy x[i0:i1, :]^T */
            if (dw)
                cpu_sgemm('N', 'T', out, i1 - i0, n, 1.0f, dy, n, x + (size_t)i0 * n, n, 0.0f,
                          dw + i0, in);
            /* dx[i0:i1, :] (=|+=) w[:, i0:i1]^T dy */
            if (dx)
                cpu_sgemm('T', 'N', i1 - i0, n, out, 1.0f, w + i0, in, dy, n,
                          accumulate_dx ? 1.0f : 0.0f, dx + (size_t)i0 * n, n);
        }
        if (db) {
#pragma omp for schedule(static)
            for (int o = 0; o < out; o++) db[o] = (float)cpu_sum(dy + (size_t)o * n, (size_t)n);
        }
    }
}

/* ------------------------------------------------------------------ the nodes' runners */

int cpu_run_linear_fwd(const struct plan_node *n)
{
    const struct tensor *y = n->dst[PLAN_Y], *x = n->src[PLAN_X];
    linear_forward_cpu(y->data, x->data, n->src[PLAN_W]->data, cpu_slot_data(n->src[PLAN_B]), y->c,
                       x->c, x->n);
    return DR_OK;
}

int cpu_run_linear_bwd(const struct plan_node *n)
{
    const struct tensor *dy = n->src[PLAN_DY], *x = n->src[PLAN_BWD_X];
    linear_backward_cpu(cpu_slot_data(n->dst[PLAN_DX]), cpu_slot_data(n->dst[PLAN_DW]),
                        cpu_slot_data(n->dst[PLAN_DB]), dy->data, x->data,
                        n->src[PLAN_BWD_W]->data, dy->c, x->c, x->n, PLAN_NODE_ACC(n, PLAN_DX));
    return DR_OK;
}

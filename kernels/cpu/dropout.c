/* CPU dropout (kernels/dropout.h), the reference twin: one pass over the (C, N, H, W)
 * tensor, plane by plane, each plane's elements consecutive in the canonical NCHW order
 * too, so that one Philox draw serves four neighbours; and the DROPOUT_FWD and
 * DROPOUT_BWD nodes' runners, which read the step from the node's cursor. */
#include "../dropout.h"

#include "../../base/status.h"
#include "plan_cpu.h"

/* Below this many elements the loops stay on one thread. */
#define DROPOUT_PARALLEL_MIN 32768

/* The mask of plane (image j, channel k) of an (n, c, h, w) tensor into keep[0 .. hw). */
static void plane_mask(unsigned char *keep, const struct dropout_attr *a, uint32_t step,
                       uint64_t first, int hw)
{
    struct rng4 r = {{0, 0, 0, 0}};
    for (int e = 0; e < hw; e++) {
        const uint64_t i = first + (uint64_t)e;
        if (e == 0 || (i & 3u) == 0) r = dropout_words(a, step, (uint32_t)(i >> 2));
        keep[e] = rng_unit(r.v[i & 3u]) >= a->p;
    }
}

/* Runs the masked pass over every plane: out (=|+=) in * s where kept (see the header). */
static void dropout_pass(float *out, const float *in, const struct dropout_attr *a,
                         uint32_t step, int c, int n, int hw, int accumulate)
{
    const float s = dropout_scale(a->p);
    const long planes = (long)c * n;
#pragma omp parallel for schedule(static) if (planes * hw >= DROPOUT_PARALLEL_MIN)
    for (long pl = 0; pl < planes; pl++) {
        const int k = (int)(pl / n), j = (int)(pl % n);   /* CNHW plane: channel k, image j */
        const uint64_t first = ((uint64_t)j * (uint64_t)c + (uint64_t)k) * (uint64_t)hw;
        float *o = out + (size_t)pl * (size_t)hw;
        const float *x = in + (size_t)pl * (size_t)hw;
        unsigned char keep[256];
        for (int e0 = 0; e0 < hw; e0 += 256) {
            const int len = hw - e0 < 256 ? hw - e0 : 256;
            plane_mask(keep, a, step, first + (uint64_t)e0, len);
            for (int e = 0; e < len; e++) {
                const float v = x[e0 + e] * s;
                if (accumulate) {
                    if (keep[e]) o[e0 + e] = o[e0 + e] + v;
                } else {
                    o[e0 + e] = keep[e] ? v : 0.0f;
                }
            }
        }
    }
}

void dropout_forward_cpu(float *y, const float *x, const struct dropout_attr *a, uint32_t step,
                         int c, int n, int hw)
{
    dropout_pass(y, x, a, step, c, n, hw, 0);
}

void dropout_backward_cpu(float *dx, const float *dy, const struct dropout_attr *a,
                          uint32_t step, int c, int n, int hw, int accumulate_dx)
{
    dropout_pass(dx, dy, a, step, c, n, hw, accumulate_dx);
}

/* ------------------------------------------------------------------ the nodes' runners */

/* The step of the node's cursor (CPU memory), as the draw's counter word. */
static uint32_t node_step(const struct plan_node *n)
{
    const int32_t *cur = n->src[PLAN_DROPOUT_CURSOR]->data;
    return (uint32_t)cur[CURSOR_STEP];
}

int cpu_run_dropout_fwd(const struct plan_node *n)
{
    const struct tensor *x = n->src[PLAN_X];
    if (!n->dst[PLAN_Y]->data) return DR_OK;   /* not computed */
    dropout_forward_cpu(n->dst[PLAN_Y]->data, x->data, &n->par.dropout, node_step(n), x->c,
                        x->n, x->h * x->w);
    return DR_OK;
}

int cpu_run_dropout_bwd(const struct plan_node *n)
{
    const struct tensor *dx = n->dst[PLAN_DX];
    if (!dx || !dx->data) return DR_OK;   /* not computed */
    dropout_backward_cpu(dx->data, n->src[PLAN_DY]->data, &n->par.dropout, node_step(n), dx->c,
                         dx->n, dx->h * dx->w, PLAN_NODE_ACC(n, PLAN_DX));
    return DR_OK;
}

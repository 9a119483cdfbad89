/* Muon (momentum orthogonalised by Newton-Schulz), the optimiser airbench94_muon gives the
 * convolution filters: a weight tensor W of `rows` output channels is seen as the matrix
 * (rows, cols), cols = in * k * k (a linear weight (out, in): rows = out, cols = in), and
 * each step with learning rate lr, momentum m and gradient g does, in this order:
 *
 *   buf = m * buf + g                                   (per element, fp32)
 *   u   = nesterov ? g + m * buf : buf                  (per element, fp32)
 *   W   = W * (float)(sqrt(rows) / ||W||)               (when normalize; not when ||W|| = 0)
 *   X   = u / (float)(||u|| + eps), as (rows, cols), transposed to (cols, rows) when
 *         rows > cols, so that X is (p, q) with p <= q
 *   `steps` times:  A = X X^T (p, p);  B = b A + c A A;  X = a X + B X
 *   W   = W - lr * X (transposed back)                  (per element, fp32)
 *
 * ||.|| is the Frobenius norm, summed in double. The quintic a x + b x^3 + c x^5 acts on
 * each singular value of X alone (the products keep the singular vectors), so the result
 * is U p(S) V^T for u = U S V^T, p the polynomial iterated `steps` times on the singular
 * values divided by ||u|| + eps: the published coefficients (3.4445, -4.7750, 2.0315)
 * push every singular value that is not tiny into a band around 1 (tests/test_muon.c
 * measures it) instead of converging to exactly 1. There is no weight decay: the
 * renormalisation bounds the weight instead.
 *
 * The CPU twin (kernels/cpu/muon.c) computes in fp32, the products with oneDNN's sgemm in
 * fixed row blocks per thread (bit-identical from run to run on the same threads). The
 * CUDA twin (kernels/cuda/muon_cuda.cu) runs the iteration in bf16 with fp32
 * accumulation (cuBLAS), as the published recipe does, and the rest as above in fp32. */
#ifndef DAWNRUN_KERNELS_MUON_H
#define DAWNRUN_KERNELS_MUON_H

#include <stddef.h>

/* The Newton-Schulz iteration's settings (train.muon in the config). */
struct muon_ns {
    int steps;        /* iterations, >= 0 */
    float a, b, c;    /* the quintic's coefficients */
    float eps;        /* added to ||u|| before dividing by it */
    int normalize;    /* 1: W is renormalised to Frobenius norm sqrt(rows) before the step */
};

/* The published settings: 5 iterations (Muon's default; airbench94_muon runs 3), the
 * coefficients (3.4445, -4.7750, 2.0315), eps 1e-7, normalize on. */
struct muon_ns muon_ns_default(void);

/* Floating-point operations of the matrix products of `steps` Newton-Schulz iterations
 * on a (rows, cols) matrix, p = min and q = max of rows and cols: each iteration
 * 2 p p q (X X^T) + 2 p p p (A A) + 2 p p q (B X), multiply and add counted apart. The
 * per-element work (momentum, norms, update) is not counted, as for the other ops. */
double muon_ns_flops(int rows, int cols, int steps);

/* Floats of scratch memory muon_orthogonalize_cpu and muon_step_cpu need for a
 * (rows, cols) matrix: 2 p q + 2 p p, p = min, q = max of rows and cols. */
size_t muon_scratch_floats(int rows, int cols);

/* out (rows, cols) = the orthogonalisation of u (rows, cols) as the file comment says
 * (X = u / (||u|| + eps), then ns->steps iterations, transposed back); out may be u.
 * scratch holds muon_scratch_floats(rows, cols) floats. Returns DR_OK, or DR_ERR_INTERNAL
 * when oneDNN fails (reported). */
int muon_orthogonalize_cpu(float *out,       /* (rows, cols) */
                           const float *u,   /* (rows, cols) */
                           float *scratch, const struct muon_ns *ns, int rows, int cols);

/* One Muon step of the weight w (rows, cols) with momentum buffer v and gradient dw, as
 * the file comment says; dw is left holding the orthogonalised update (before the lr).
 * scratch holds muon_scratch_floats(rows, cols) floats. Returns DR_OK or DR_ERR_INTERNAL. */
int muon_step_cpu(float *w,         /* (rows, cols) in/out */
                  float *v,         /* (rows, cols) in/out, the momentum buffer */
                  float *dw,        /* (rows, cols) gradient in, update out */
                  float *scratch, float lr, float momentum, int nesterov,
                  const struct muon_ns *ns, int rows, int cols);

#endif

/* The CPU twin of Muon (kernels/muon.h) in fp32: the momentum and the update element by
 * element, the Newton-Schulz products through oneDNN's sgemm in fixed row blocks, one per
 * OpenMP thread (as kernels/cpu/linear.c), and the multi-tensor step the backend table
 * calls (muon_cpu.h). */
#include "../muon.h"
#include "muon_cpu.h"

#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "../../base/status.h"
#include "../plan.h"
#include "cpu_util.h"

/* Below this many elements the elementwise loops stay on one thread. */
#define MUON_PARALLEL_MIN 65536

struct muon_ns muon_ns_default(void)
{
    return (struct muon_ns){5, 3.4445f, -4.7750f, 2.0315f, 1e-7f, 1};
}

double muon_ns_flops(int rows, int cols, int steps)
{
    const double p = rows < cols ? rows : cols, q = rows < cols ? cols : rows;
    return (double)steps * (4.0 * p * p * q + 2.0 * p * p * p);
}

size_t muon_scratch_floats(int rows, int cols)
{
    const size_t p = (size_t)(rows < cols ? rows : cols), q = (size_t)(rows < cols ? cols : rows);
    return 2 * p * q + 2 * p * p;
}

/* The Frobenius norm of x[0 .. n), summed in double in cpu_util.h's fixed order. */
static double frobenius(const float *x, size_t n)
{
    double sum, sumsq;
    cpu_sum_sumsq(&sum, &sumsq, x, n);
    return sqrt(sumsq);
}

/* [*lo, *hi): block t of nt over [0, total). */
static void muon_block(long *lo, long *hi, long total, int t, int nt)
{
    *lo = total * t / nt;
    *hi = total * (t + 1) / nt;
}

/* Row-major C (m, n) = alpha op(A) op(B) + beta C, each thread taking a block of C's rows
 * (op(A)'s rows: A is (m, k) for 'N', (k, m) for 'T', with leading dimension lda). */
static int gemm_rows(char ta, char tb, long m, long n, long k, float alpha, const float *a,
                     long lda, const float *b, long ldb, float beta, float *c, long ldc)
{
    int failed = 0;
#pragma omp parallel reduction(| : failed)
    {
        long r0, r1;
        muon_block(&r0, &r1, m, omp_get_thread_num(), omp_get_num_threads());
        if (r1 > r0) {
            const float *ab = ta == 'N' ? a + r0 * lda : a + r0;
            failed |= cpu_sgemm(ta, tb, r1 - r0, n, k, alpha, ab, lda, b, ldb, beta,
                                c + r0 * ldc, ldc) != DR_OK;
        }
    }
    return failed ? DR_ERR_INTERNAL : DR_OK;
}

int muon_orthogonalize_cpu(float *out, const float *u, float *scratch, const struct muon_ns *ns,
                           int rows, int cols)
{
    int rc = DR_OK;
    const int tr = rows > cols;
    const long p = tr ? cols : rows, q = tr ? rows : cols;
    const size_t count = (size_t)p * (size_t)q;
    float *x = scratch, *y = x + count, *a = y + count, *bm = a + (size_t)p * (size_t)p;
    const float den = (float)(frobenius(u, count) + (double)ns->eps);
    /* X = u / (||u|| + eps), (p, q) */
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < cols; j++) {
            const float e = u[i * cols + j] / den;
            if (tr) x[j * q + i] = e;
            else x[i * q + j] = e;
        }
    for (int s = 0; s < ns->steps; s++) {
        /* A = X X^T */
        if (gemm_rows('N', 'T', p, p, q, 1.0f, x, q, x, q, 0.0f, a, p) != DR_OK)
            FAIL(DR_ERR_INTERNAL, "muon: oneDNN sgemm failed (X X^T, %ld x %ld)", p, q);
        /* B = b A + c A A */
        memcpy(bm, a, (size_t)p * (size_t)p * sizeof(float));
        if (gemm_rows('N', 'N', p, p, p, ns->c, a, p, a, p, ns->b, bm, p) != DR_OK)
            FAIL(DR_ERR_INTERNAL, "muon: oneDNN sgemm failed (A A, %ld x %ld)", p, p);
        /* X = a X + B X */
        memcpy(y, x, count * sizeof(float));
        if (gemm_rows('N', 'N', p, q, p, 1.0f, bm, p, x, q, ns->a, y, q) != DR_OK)
            FAIL(DR_ERR_INTERNAL, "muon: oneDNN sgemm failed (B X, %ld x %ld)", p, q);
        float *t = x;
        x = y;
        y = t;
    }
    for (long i = 0; i < rows; i++)
        for (long j = 0; j < cols; j++) out[i * cols + j] = tr ? x[j * q + i] : x[i * q + j];
cleanup:
    return rc;
}

int muon_step_cpu(float *w, float *v, float *dw, float *scratch, float lr, float momentum,
                  int nesterov, const struct muon_ns *ns, int rows, int cols)
{
    int rc = DR_OK;
    const size_t count = (size_t)rows * (size_t)cols;
    const long cnt = (long)count;
#pragma omp parallel for schedule(static) if (count >= MUON_PARALLEL_MIN)
    for (long i = 0; i < cnt; i++) {
        const float g = dw[i], kept = momentum * v[i];
        const float buf = kept + g;
        const float mb = momentum * buf;
        v[i] = buf;
        dw[i] = nesterov ? g + mb : buf;
    }
    if (ns->normalize) {
        const double norm = frobenius(w, count);
        if (norm > 0.0) {
            const float scale = (float)(sqrt((double)rows) / norm);
#pragma omp parallel for schedule(static) if (count >= MUON_PARALLEL_MIN)
            for (long i = 0; i < cnt; i++) w[i] *= scale;
        }
    }
    TRY(muon_orthogonalize_cpu(dw, dw, scratch, ns, rows, cols));
#pragma omp parallel for schedule(static) if (count >= MUON_PARALLEL_MIN)
    for (long i = 0; i < cnt; i++) {
        const float step = lr * dw[i];
        w[i] -= step;
    }
cleanup:
    return rc;
}

int muon_multi_cpu(const struct sgd_item *items, int count, const struct tensor *lr_table,
                   const struct tensor *cursor, float momentum, int nesterov,
                   const struct muon_ns *ns)
{
    int rc = DR_OK;
    float *scratch = NULL;
    size_t need = 0;
    const int32_t *cur = cursor->data;
    EXPECT(cur[CURSOR_STEP] >= 0 && (size_t)cur[CURSOR_STEP] < tensor_count(lr_table),
           "muon_multi: step %d outside the learning-rate table", (int)cur[CURSOR_STEP]);
    const float lr0 = ((const float *)lr_table->data)[cur[CURSOR_STEP]];
    for (int k = 0; k < count; k++) {
        const struct tensor *w = items[k].w;
        const size_t s = muon_scratch_floats(w->n, (int)(tensor_count(w) / (size_t)w->n));
        if (s > need) need = s;
    }
    if (need == 0) goto cleanup;
    scratch = malloc(need * sizeof(float));
    CHECK_ALLOC(scratch, "Muon's Newton-Schulz scratch");
    for (int k = 0; k < count; k++) {
        const struct sgd_item *it = &items[k];
        if (it->train_epochs > 0 && cur[CURSOR_EPOCH] >= it->train_epochs) continue;
        const int rows = it->w->n, cols = (int)(tensor_count(it->w) / (size_t)rows);
        TRY(muon_step_cpu(it->w->data, it->v->data, it->dw->data, scratch,
                          (float)((double)lr0 * it->lr_scale), momentum, nesterov, ns, rows,
                          cols));
    }
cleanup:
    free(scratch);
    return rc;
}

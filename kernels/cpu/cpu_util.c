/* The one place the CPU kernels call oneDNN's sgemm. */
#include "cpu_util.h"

#include <oneapi/dnnl/dnnl.h>

#include "../../base/status.h"

int cpu_sgemm(char ta, char tb, long m, long n, long k, float alpha, const float *a, long lda,
              const float *b, long ldb, float beta, float *c, long ldc)
{
    if (m <= 0 || n <= 0) return DR_OK;
    if (k <= 0) {
        /* C = beta * C; oneDNN wants k >= 1 for its leading-dimension checks */
        for (long i = 0; i < m; i++)
            for (long j = 0; j < n; j++)
                c[i * ldc + j] = beta == 0.0f ? 0.0f : beta * c[i * ldc + j];
        return DR_OK;
    }
    dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
    return st == dnnl_success ? DR_OK : DR_ERR_INTERNAL;
}

/* Batch normalisation on NHWC activations, statistics and parameters in fp32, sums in
 * double: the CUDA twin of kernels/cpu/batchnorm.c, with the same formulas in the same
 * order (biased variance to normalise, unbiased for running_var, PyTorch momentum; the
 * mean applied as the float pair hi + lo; the backward pass recomputing the mean from x).
 * Each pass is: per-channel partial sums (reduce_cuda.cu), a kernel that sums the parts
 * of each channel by a fixed tree (cuda_tree_sum: the same bits on every run) and turns
 * the sums into coefficients, and an elementwise kernel moving 16-byte packs where the
 * channel count allows. Elementwise arithmetic uses explicit round-to-nearest intrinsics
 * so that no multiply-add is fused where the CPU twin rounds twice.
 * Fused paths (cuda_bn_*_fused, for plan_cuda.cu): the forward's elementwise pass also
 * applies the activation that follows the batch norm (writing its output, and the batch
 * norm's only when something else reads it); the residual add writing the forward's x
 * may take the statistics' partial sums (cuda_add_fused), which the forward then
 * starts from, and so may the convolution writing it (its fp32 sum and sum of squares,
 * conv_fused_cuda.h: the statistics then agree with the unfused ones within those sums'
 * rounding, not to the bit); the backward takes the activation's dy and
 * folds the activation's backward into its sums and its elementwise pass, recomputing the
 * batch norm's output from x with the coefficients the forward kept. Every value is
 * rounded where the unfused ops store it, so fused and unfused runs give the same bits.
 * Ghost batch norm: the S parts of the batch are S consecutive ranges of rows (n / S
 * images each; "splits" below, "parts" being the reduction's row blocks). The sums are
 * taken split by split, the coefficient kernel walks a channel's splits in order
 * (coefficients (S, count, c)), and the elementwise kernels take the split from
 * blockIdx.y. */
#include <math.h>

#include "bn_kernels_cuda.h"
#include "cuda_internal.h"
extern "C" {
#include "../batchnorm.h"
}

/* Block (RED_X, FIN_Y), grid ceil(c / RED_X): each split's two sums by the fixed tree of
 * cuda_tree_sum (or, with fsum, one split's sums as given), then thread y == 0 of each
 * channel the statistics and coefficients. */
__global__ void bn_train_finalize_kernel(float *__restrict__ coef, /* (splits, COEF_FWD_COUNT,
                                                                       c) */
                                         float *save_mean,     /* (splits, c) */
                                         float *save_invstd,   /* (splits, c) */
                                         float *running_mean,  /* (c) in/out */
                                         float *running_var,   /* (c) in/out */
                                         const double *__restrict__ partial, /* (splits, 2,
                                                                                parts, c) */
                                         const float *__restrict__ fsum,   /* (c) or NULL */
                                         const float *__restrict__ fsqsum, /* (c) or NULL */
                                         const float *gamma, const float *beta, int c,
                                         int splits, int parts, long cnt, float eps,
                                         float momentum)
{
    __shared__ double sh[FIN_Y][RED_X];
    const int ch = blockIdx.x * RED_X + threadIdx.x;
    const int mine = threadIdx.y == 0 && ch < c;
    double mean_sum = 0.0, unbiased_sum = 0.0;
    for (int s = 0; s < splits; s++) {
        const double *ps = partial + (size_t)s * 2 * parts * c;
        double sum, sumsq;
        if (fsum) {   /* one part: the fp32 sums a convolution took */
            sum = mine ? (double)fsum[ch] : 0.0;
            sumsq = mine ? (double)fsqsum[ch] : 0.0;
        } else {
            sum = cuda_tree_sum(sh, ps, parts, c, ch);
            sumsq = cuda_tree_sum(sh, ps + (size_t)parts * c, parts, c, ch);
        }
        if (!mine) continue;
        float *pc = coef + (size_t)s * COEF_FWD_COUNT * c;
        double mean, invstd, unbiased;
        batchnorm_part_stats(&mean, &invstd, &unbiased, &save_mean[s * c + ch],
                             &save_invstd[s * c + ch], sum, sumsq, (size_t)cnt, eps);
        mean_sum += mean;
        unbiased_sum += unbiased;
        float hi, lo;
        batchnorm_split(&hi, &lo, mean);
        pc[COEF_SCALE * c + ch] = (float)((double)gamma[ch] * invstd);
        pc[COEF_HI * c + ch] = hi;
        pc[COEF_LO * c + ch] = lo;
        pc[COEF_SHIFT * c + ch] = beta[ch];
    }
    if (mine)
        batchnorm_running_update(&running_mean[ch], &running_var[ch], mean_sum, unbiased_sum,
                                 splits, momentum);
}

__global__ void bn_eval_coef_kernel(float *coef,  /* (COEF_FWD_COUNT, c) */
                                    const float *gamma, const float *beta,
                                    const float *running_mean, const float *running_var, int c,
                                    float eps)
{
    const int ch = blockIdx.x * blockDim.x + threadIdx.x;
    if (ch >= c) return;
    const double invstd = 1.0 / sqrt((double)running_var[ch] + (double)eps);
    coef[COEF_SCALE * c + ch] = (float)((double)gamma[ch] * invstd);
    coef[COEF_HI * c + ch] = running_mean[ch];
    coef[COEF_LO * c + ch] = 0.0f;
    coef[COEF_SHIFT * c + ch] = beta[ch];
}

/* Block (RED_X, FIN_Y), grid ceil(c / RED_X): each split's three sums by the fixed tree
 * of cuda_tree_sum, then thread y == 0 of each channel the coefficients. */
__global__ void bn_backward_finalize_kernel(float *__restrict__ coef, /* (splits,
                                                                          COEF_BWD_COUNT, c) */
                                            float *dgamma, /* (c) or NULL */
                                            float *dbeta,  /* (c) or NULL */
                                            const double *__restrict__ partial, /* (splits, 3,
                                                                 parts, c): x, dy, dy*x */
                                            const float *gamma,
                                            const float *save_invstd, /* (splits, c) */
                                            int c, int splits, int parts, long cnt)
{
    __shared__ double sh[FIN_Y][RED_X];
    const int ch = blockIdx.x * RED_X + threadIdx.x;
    const int mine = threadIdx.y == 0 && ch < c;
    double dgamma_sum = 0.0, dbeta_sum = 0.0;
    for (int s = 0; s < splits; s++) {
        const double *ps = partial + (size_t)s * 3 * parts * c;
        const double sum_x = cuda_tree_sum(sh, ps, parts, c, ch);
        const double sum_dy = cuda_tree_sum(sh, ps + (size_t)parts * c, parts, c, ch);
        const double sum_dyx = cuda_tree_sum(sh, ps + (size_t)2 * parts * c, parts, c, ch);
        if (!mine) continue;
        float *pc = coef + (size_t)s * COEF_BWD_COUNT * c;
        double dg;
        float a, b, e, hi, lo;
        batchnorm_channel_grad(&dg, &a, &b, &e, &hi, &lo, sum_x, sum_dy, sum_dyx, gamma[ch],
                               save_invstd[s * c + ch], (size_t)cnt);
        dgamma_sum += dg;
        dbeta_sum += sum_dy;
        pc[BCOEF_A * c + ch] = a;
        pc[BCOEF_B * c + ch] = b;
        pc[BCOEF_E * c + ch] = e;
        pc[BCOEF_HI * c + ch] = hi;
        pc[BCOEF_LO * c + ch] = lo;
    }
    if (!mine) return;
    if (dgamma) dgamma[ch] = (float)dgamma_sum;
    if (dbeta) dbeta[ch] = (float)dbeta_sum;
}

/* fp32 vector data of an optional tensor. */
static float *vec(const struct tensor *t)
{
    return t ? (float *)t->data : NULL;
}

static int bn_vec_ok(const struct tensor *t, int c)
{
    return t && t->data && tensor_count(t) == (size_t)c;
}

/* Lays out the reduction scratch: partial (nq, parts, c) doubles, then ncoef × c floats. */
static int bn_scratch(struct cuda_ctx *ctx, int nq, int parts, int c, int ncoef, double **partial,
                      float **coef)
{
    int rc = DR_OK;
    void *buf = NULL;
    const size_t np = (size_t)nq * parts * c;
    TRY(cuda_scratch(ctx, SLOT_REDUCE, sizeof(double) * np + sizeof(float) * ncoef * c, &buf));
    *partial = (double *)buf;
    *coef = (float *)(*partial + np);
cleanup:
    return rc;
}

/* The forward's elementwise pass, with the activation act (and the residual res) when
 * act is not NULL (fused_bn_cuda.cu). */
static int bn_apply(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                    const struct tensor *res, const struct cuda_bn_act *act,
                    const struct tensor *x, const float *coef,
                    long split_rows, int ch, int splits)
{
    int rc = DR_OK;
    if (act) return cuda_bn_apply_act(c, y, out, res, act, x, coef, split_rows, ch, splits);
    CUDA_DISPATCH(c->dt, T,
                  return bn_apply_width<T, ACT_NONE>(c, (T *)y->data, NULL, (const T *)x->data,
                                                     NULL, coef, split_rows, ch, splits, 0.0f));
    FAIL(DR_ERR_INTERNAL, "bn: unknown activation dtype %d", (int)c->dt);
cleanup:
    return rc;
}

/* The backward's elementwise pass, with the activation act folded in when not NULL
 * (fused_bn_cuda.cu). */
static int bn_backward_apply(struct cuda_ctx *c, struct tensor *dx, const struct tensor *dy,
                             const struct tensor *x, const float *coef,
                             const struct cuda_bn_act *act, const float *fcoef, long split_rows,
                             int ch, int splits, int accumulate)
{
    int rc = DR_OK;
    if (act)
        return cuda_bn_backward_apply_act(c, dx, dy, x, coef, act, fcoef, split_rows, ch, splits,
                                          accumulate);
    CUDA_DISPATCH(c->dt, T,
                  return bn_backward_apply_width<T, ACT_NONE>(
                      c, (T *)dx->data, (const T *)dy->data, (const T *)x->data, coef, NULL,
                      split_rows, ch, splits, accumulate, 0.0f));
    FAIL(DR_ERR_INTERNAL, "bn backward: unknown activation dtype %d", (int)c->dt);
cleanup:
    return rc;
}

/* The residual add z = a + b of the fused nodes (ADD_PRO, BN_ACT_TRAIN with add_in): z as
 * add_kernel stores it.
 * With PRO, the first operand is relu(y) of a batch norm whose x a holds, y recomputed with
 * that batch norm's kept coefficients coef (COEF_FWD_COUNT, c; one part) and rounded as its
 * fused forward stores the activation (ADD_PRO). With STATS, the kernel also
 * takes the (sum, sum of squares) partials of z for the batch norm reading it
 * (BN_ACT_TRAIN with add_in), exactly as reduce_partial_kernel<T, REDUCE_SUMSQ> takes them from
 * the stored z (the same rows per thread in the same order, the same RED_Y lanes summed in
 * the same order). V channels a thread; a channel's sums do not depend on V, so every
 * width gives the same bits. Block (RED_X, RED_Y), grid (ceil(c / V / RED_X), parts,
 * splits). */
template <typename T, int V, bool PRO, bool STATS>
__global__ void add_fused_kernel(T *__restrict__ z,             /* (splits, rows, c) */
                                 double *__restrict__ partial,  /* (splits, 2, parts, c) or
                                                                   NULL */
                                 const T *__restrict__ a,       /* (splits, rows, c) */
                                 const float *__restrict__ coef, /* (COEF_FWD_COUNT, c) or
                                                                    NULL */
                                 const T *__restrict__ b,       /* (splits, rows, c) */
                                 long rows, int c, int parts)
{
    typedef cuda_pack<T, V> P;
    __shared__ double sh[2][RED_Y][STATS ? RED_X * V : 1];
    const int vecs = c / V;
    const int cv = blockIdx.x * RED_X + threadIdx.x;
    const size_t base = (size_t)blockIdx.z * (size_t)rows * (size_t)c;
    double s0[V], s1[V];
    bn_fwd_coef f[V];
    for (int k = 0; k < V; k++) {
        s0[k] = s1[k] = 0.0;
        f[k] = bn_fwd_coef{0.0f, 0.0f, 0.0f, 0.0f};
    }
    if (cv < vecs) {
        if (PRO)
            for (int k = 0; k < V; k++) f[k] = bn_fwd_coef_at(coef, c, cv * V + k);
        for (long r = (long)blockIdx.y * RED_Y + threadIdx.y; r < rows;
             r += (long)parts * RED_Y) {
            const size_t i = (base + (size_t)r * c) / V + cv;
            const P av = ((const P *)a)[i], bv = ((const P *)b)[i];
            P zv;
            for (int k = 0; k < V; k++) {
                /* with PRO, bn_apply_kernel's ReLU as it stores it */
                const float fa = PRO ? bn_fwd_act<T, ACT_RELU>(cuda_to_f<T>(av.v[k]), f[k], 0.0f,
                                                               0.0f)
                                     : cuda_to_f<T>(av.v[k]);
                zv.v[k] = cuda_from_f<T>(__fadd_rn(fa, cuda_to_f<T>(bv.v[k])));
                if (STATS) {
                    const double v = (double)cuda_to_f<T>(zv.v[k]);
                    s0[k] += v;
                    s1[k] = bn_dadd(s1[k], bn_dmul(v, v));
                }
            }
            ((P *)z)[i] = zv;
        }
    }
    if (!STATS) return;
    partial += (size_t)blockIdx.z * 2 * parts * c;
    for (int k = 0; k < V; k++) {
        sh[0][threadIdx.y][threadIdx.x * V + k] = s0[k];
        sh[1][threadIdx.y][threadIdx.x * V + k] = s1[k];
    }
    __syncthreads();
    if (threadIdx.y != 0 || cv >= vecs) return;
    for (int q = 0; q < 2; q++)
        for (int k = 0; k < V; k++) {
            double t = 0.0;
            for (int j = 0; j < RED_Y; j++) t += sh[q][j][threadIdx.x * V + k];
            partial[((size_t)q * parts + blockIdx.y) * c + cv * V + k] = t;
        }
}

/* Launches add_fused_kernel<T, V, PRO, STATS> over splits parts of split_rows rows. */
template <typename T, int V, bool PRO, bool STATS>
static int add_fused_launch(struct cuda_ctx *c, T *z, double *partial, const T *a,
                            const float *coef, const T *b, long split_rows, int ch, int splits,
                            int parts)
{
    int rc = DR_OK;
    const size_t count = (size_t)split_rows * splits * ch;
    const dim3 block(RED_X, RED_Y),
        grid((unsigned)((ch / V + RED_X - 1) / RED_X), (unsigned)parts, (unsigned)splits);
    add_fused_kernel<T, V, PRO, STATS><<<grid, block, 0, c->stream>>>(z, partial, a, coef, b,
                                                                      split_rows, ch, parts);
    /* reads a and b (count elements each) and, with PRO, the coefficients
     * (COEF_FWD_COUNT x ch floats); writes z (count elements) and, with STATS, partial
     * (splits x 2 x parts x ch doubles) */
    CHECK_LAUNCH(c, 2 * count * sizeof(T) + (PRO ? sizeof(float) * COEF_FWD_COUNT * ch : 0),
                 count * sizeof(T) +
                     (STATS ? sizeof(double) * 2 * (size_t)splits * parts * ch : 0));
cleanup:
    return rc;
}

/* add_fused_launch at width V, its PRO and STATS from coef and partial. */
template <typename T, int V>
static int add_fused_width(struct cuda_ctx *c, T *z, double *partial, const T *a,
                           const float *coef, const T *b, long split_rows, int ch, int splits,
                           int parts)
{
    if (coef && partial)
        return add_fused_launch<T, V, true, true>(c, z, partial, a, coef, b, split_rows, ch,
                                                  splits, parts);
    if (coef)
        return add_fused_launch<T, V, true, false>(c, z, partial, a, coef, b, split_rows, ch,
                                                   splits, parts);
    if (partial)
        return add_fused_launch<T, V, false, true>(c, z, partial, a, coef, b, split_rows, ch,
                                                   splits, parts);
    return add_fused_launch<T, V, false, false>(c, z, partial, a, coef, b, split_rows, ch,
                                                splits, parts);
}

/* The ghost parts of a batch norm over x (n, c, h, w) with attributes a: splits, the rows
 * of each, and the reduction's parts per split. */
static void bn_layout(int *splits, long *split_rows, int *parts, const struct tensor *x,
                      const struct bn_attr *a)
{
    const long rows = (long)x->n * x->h * x->w;
    *splits = a->splits > 1 ? a->splits : 1;
    *split_rows = rows / *splits;
    *parts = cuda_reduce_parts(*split_rows);
}

size_t cuda_bn_partial_count(const struct tensor *x, const struct bn_attr *a)
{
    int splits, parts;
    long split_rows;
    bn_layout(&splits, &split_rows, &parts, x, a);
    return (size_t)2 * splits * parts * x->c;
}

int cuda_add_fused(struct cuda_ctx *c, struct tensor *z, double *partial,
                   const struct tensor *a, const float *a_coef, const struct tensor *b,
                   const struct tensor *save_mean, const struct tensor *save_invstd,
                   const struct bn_attr *attr)
{
    int rc = DR_OK, splits = 1, parts = 1;
    const int ch = z->c;
    long split_rows = (long)z->n * z->h * z->w;
    EXPECT(tensor_same_shape(z, a) && tensor_same_shape(z, b), "add: shapes differ");
    if (partial) {
        splits = plan_bn_parts(z, save_mean, attr);   /* the batch norm's, its rule checked */
        (void)save_invstd;   /* its size checked with save_mean's by that rule */
        bn_layout(&splits, &split_rows, &parts, z, attr);   /* the batch norm's, as it takes them */
    } else {
        parts = cuda_reduce_parts(split_rows);
    }
    if (ch == 0 || split_rows == 0) goto cleanup;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T, {
        T *tz = (T *)z->data;
        const T *ta = (const T *)a->data, *tb = (const T *)b->data;
        if (bn_width<T>(ch, tz, ta, tb) > 1)
            return add_fused_width<T, cuda_vec_width<T>()>(c, tz, partial, ta, a_coef, tb,
                                                           split_rows, ch, splits, parts);
        return add_fused_width<T, 1>(c, tz, partial, ta, a_coef, tb, split_rows, ch, splits,
                                     parts);
    });
cleanup:
    return rc;
}

int cuda_bn_train_fused(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                        const struct tensor *res, const struct cuda_bn_act *act,
                        const struct cuda_bn_pool *pool, float *coef_keep,
                        const struct cuda_bn_sums *stats,
                        struct tensor *save_mean, struct tensor *save_invstd,
                        struct tensor *running_mean, struct tensor *running_var,
                        const struct tensor *x, const struct tensor *gamma,
                        const struct tensor *beta, const struct bn_attr *a)
{
    int rc = DR_OK, splits = 1, parts = 1;
    const int ch = x->c;
    const long rows = (long)x->n * x->h * x->w;
    long split_rows = rows;
    double *partial = NULL;
    float *coef = NULL;
    EXPECT((y || act || coef_keep) && (!y || tensor_same_shape(y, x)) &&
               (!act || (out && (pool || tensor_same_shape(out, x)))) &&
               (!res || (act && tensor_same_shape(res, x))) && (!pool || (act && !y && !res)),
           "bn: output unlike input (%d, %d, %d, %d)", x->n, x->c, x->h, x->w);
    splits = plan_bn_parts(x, save_mean, a);   /* as the BN_FWD_TRAIN node's rule checked */
    EXPECT(!pool || splits == 1, "bn with max pool: %d parts", splits);
    EXPECT(bn_vec_ok(running_mean, ch) && bn_vec_ok(running_var, ch) && bn_vec_ok(gamma, ch) &&
               bn_vec_ok(beta, ch),
           "bn: a statistics or parameter vector is not of %d channels", ch);
    if (ch == 0) goto cleanup;
    split_rows = rows / splits;
    parts = cuda_reduce_parts(split_rows);
    TRY(cuda_enter(c));
    TRY(bn_scratch(c, 2 * splits, parts, ch, COEF_FWD_COUNT * splits, &partial, &coef));
    if (coef_keep) coef = coef_keep;
    EXPECT(!stats || stats->partial || (stats->sum && stats->sqsum && splits == 1),
           "bn: sums of %d parts from a convolution", splits);
    if (stats && stats->partial)   /* taken by the add that wrote x (cuda_add_fused) */
        partial = (double *)stats->partial;
    else if (!stats)
        TRY(cuda_reduce_partial(c, partial, x->data, NULL, split_rows, ch, parts, splits,
                                REDUCE_SUMSQ));
    {
        const float *fsum = stats && !stats->partial ? stats->sum : NULL;
        const float *fsqsum = fsum ? stats->sqsum : NULL;
        bn_train_finalize_kernel<<<(ch + RED_X - 1) / RED_X, dim3(RED_X, FIN_Y), 0,
                                   c->stream>>>(coef, vec(save_mean), vec(save_invstd),
                                                vec(running_mean), vec(running_var), partial,
                                                fsum, fsqsum, vec(gamma), vec(beta), ch, splits,
                                                parts, split_rows, a->eps, a->momentum);
        /* reads partial (splits, 2, parts, ch) doubles (or the two fp32 sums, ch floats
         * each) and gamma, beta, running mean and variance (ch floats each); writes coef
         * (splits, COEF_FWD_COUNT, ch), save_mean and save_invstd (splits, ch) and the
         * running statistics (ch each), floats */
        CHECK_LAUNCH(c,
                     (fsum ? sizeof(float) * 2 * ch : sizeof(double) * 2 * splits * parts * ch) +
                         sizeof(float) * 4 * ch,
                     sizeof(float) * ((size_t)(COEF_FWD_COUNT + 2) * splits * ch + 2 * ch));
    }
    if (split_rows == 0 || (!y && !act)) goto cleanup;   /* (coefficients only) */
    if (pool)
        TRY(cuda_bn_apply_pool(c, out, act, pool, x, coef));
    else
        TRY(bn_apply(c, y, out, res, act, x, coef, split_rows, ch, splits));
cleanup:
    return rc;
}

int cuda_bn_train_add_fused(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                            const struct tensor *res, const struct cuda_bn_act *act,
                            const struct cuda_bn_pool *pool, float *coef_keep,
                            struct tensor *save_mean, struct tensor *save_invstd,
                            struct tensor *running_mean, struct tensor *running_var,
                            struct tensor *z, const struct tensor *a, const float *a_coef,
                            const struct tensor *b, const struct tensor *gamma,
                            const struct tensor *beta, const struct bn_attr *attr)
{
    int rc = DR_OK, splits = 1, parts = 1;
    long split_rows = 0;
    double *partial = NULL;
    float *coef = NULL;
    bn_layout(&splits, &split_rows, &parts, z, attr);
    TRY(cuda_enter(c));
    /* the partial sums where cuda_bn_train_fused's own scratch puts them: its request is
     * this one, so the buffer stays where it is */
    TRY(bn_scratch(c, 2 * splits, parts, z->c, COEF_FWD_COUNT * splits, &partial, &coef));
    TRY(cuda_add_fused(c, z, partial, a, a_coef, b, save_mean, save_invstd, attr));
    {
        const struct cuda_bn_sums sums = {partial, NULL, NULL};
        TRY(cuda_bn_train_fused(c, y, out, res, act, pool, coef_keep, &sums, save_mean,
                                save_invstd, running_mean, running_var, z, gamma, beta, attr));
    }
cleanup:
    return rc;
}

int cuda_bn_forward_train(void *ctx, struct tensor *y, struct tensor *save_mean,
                          struct tensor *save_invstd, struct tensor *running_mean,
                          struct tensor *running_var, const struct tensor *x,
                          const struct tensor *gamma, const struct tensor *beta,
                          const struct bn_attr *a)
{
    return cuda_bn_train_fused((struct cuda_ctx *)ctx, y, NULL, NULL, NULL, NULL, NULL, NULL,
                               save_mean,
                               save_invstd, running_mean, running_var, x, gamma, beta, a);
}

int cuda_bn_eval_fused(struct cuda_ctx *c, struct tensor *y, struct tensor *out,
                       const struct tensor *res, const struct cuda_bn_act *act,
                       const struct cuda_bn_pool *pool, const struct tensor *x,
                       const struct tensor *gamma, const struct tensor *beta,
                       const struct tensor *running_mean, const struct tensor *running_var,
                       const struct bn_attr *a)
{
    int rc = DR_OK;
    const int ch = x->c;
    const long rows = (long)x->n * x->h * x->w;
    const size_t count = tensor_count(x);
    void *buf = NULL;
    EXPECT((y || act) && (!y || tensor_same_shape(y, x)) &&
               (!act || (out && (pool || tensor_same_shape(out, x)))) &&
               (!res || (act && tensor_same_shape(res, x))) && (!pool || (act && !y && !res)),
           "bn: output unlike input (%d, %d, %d, %d)", x->n, x->c, x->h, x->w);
    EXPECT(bn_vec_ok(running_mean, ch) && bn_vec_ok(running_var, ch) && bn_vec_ok(gamma, ch) &&
               bn_vec_ok(beta, ch),
           "bn: a statistics or parameter vector is not of %d channels", ch);
    if (ch == 0 || count == 0) goto cleanup;
    TRY(cuda_enter(c));
    TRY(cuda_scratch(c, SLOT_REDUCE, sizeof(float) * COEF_FWD_COUNT * ch, &buf));
    bn_eval_coef_kernel<<<(ch + CUDA_THREADS - 1) / CUDA_THREADS, CUDA_THREADS, 0, c->stream>>>(
        (float *)buf, vec(gamma), vec(beta), vec(running_mean), vec(running_var), ch, a->eps);
    /* reads gamma, beta, running mean and variance (ch floats each); writes coef
     * (COEF_FWD_COUNT, ch) floats */
    CHECK_LAUNCH(c, sizeof(float) * 4 * ch, sizeof(float) * COEF_FWD_COUNT * ch);
    if (pool)
        TRY(cuda_bn_apply_pool(c, out, act, pool, x, (const float *)buf));
    else
        TRY(bn_apply(c, y, out, res, act, x, (const float *)buf, rows, ch, 1));
cleanup:
    return rc;
}

int cuda_bn_forward_eval(void *ctx, struct tensor *y, const struct tensor *x,
                         const struct tensor *gamma, const struct tensor *beta,
                         const struct tensor *running_mean, const struct tensor *running_var,
                         const struct bn_attr *a)
{
    return cuda_bn_eval_fused((struct cuda_ctx *)ctx, y, NULL, NULL, NULL, NULL, x, gamma, beta,
                              running_mean, running_var, a);
}

int cuda_bn_backward_fused(struct cuda_ctx *c, struct tensor *dx, struct tensor *dgamma,
                           struct tensor *dbeta, const struct tensor *d,
                           const struct cuda_bn_act *act, const struct cuda_bn_pool *pool,
                           const float *fcoef, const struct tensor *x,
                           const struct tensor *gamma, const struct tensor *save_mean,
                           const struct tensor *save_invstd, int accumulate)
{
    int rc = DR_OK, splits = 1, parts = 1;
    const int ch = x->c;
    const long rows = (long)x->n * x->h * x->w;
    long split_rows = rows;
    const int want_dx = dx && dx->data;
    double *partial = NULL;
    float *coef = NULL;
    EXPECT((pool || tensor_same_shape(d, x)) && (!want_dx || tensor_same_shape(dx, x)),
           "bn backward: dy or dx unlike x (%d, %d, %d, %d)", x->n, x->c, x->h, x->w);
    EXPECT(!act || fcoef, "bn backward: an activation folded in without the forward's "
                          "coefficients");
    EXPECT(!pool || act, "bn backward: a max pool folded in without its activation");
    splits = plan_bn_parts(x, save_mean, NULL);   /* as the BN_BWD node's rule checked */
    EXPECT(!pool || splits == 1, "bn backward with max pool: %d parts", splits);
    EXPECT(bn_vec_ok(gamma, ch) && (!vec(dgamma) || bn_vec_ok(dgamma, ch)) &&
               (!vec(dbeta) || bn_vec_ok(dbeta, ch)),
           "bn backward: a statistics or parameter vector is not of %d channels", ch);
    if (ch == 0) goto cleanup;
    split_rows = rows / splits;
    parts = cuda_reduce_parts(split_rows);
    TRY(cuda_enter(c));
    TRY(bn_scratch(c, 3 * splits, parts, ch, COEF_BWD_COUNT * splits, &partial, &coef));
    if (pool)
        TRY(cuda_reduce_partial_act_pool(c, partial, x, d, fcoef, parts, act, pool));
    else if (act)
        TRY(cuda_reduce_partial_act(c, partial, x->data, d->data, fcoef, split_rows, ch, parts,
                                    splits, act->kind, act->alpha));
    else
        TRY(cuda_reduce_partial(c, partial, x->data, d->data, split_rows, ch, parts, splits,
                                REDUCE_BN_BWD));
    bn_backward_finalize_kernel<<<(ch + RED_X - 1) / RED_X, dim3(RED_X, FIN_Y), 0, c->stream>>>(
        coef, vec(dgamma), vec(dbeta), partial, vec(gamma), vec(save_invstd), ch, splits, parts,
        split_rows);
    /* reads partial (splits, 3, parts, ch) doubles, gamma (ch) and save_invstd (splits, ch)
     * floats; writes coef (splits, COEF_BWD_COUNT, ch) and dgamma, dbeta (ch each, when
     * wanted) */
    CHECK_LAUNCH(c,
                 sizeof(double) * 3 * splits * parts * ch +
                     sizeof(float) * ((size_t)ch + splits * ch),
                 sizeof(float) * ((size_t)COEF_BWD_COUNT * splits * ch +
                                  (vec(dgamma) ? ch : 0) + (vec(dbeta) ? ch : 0)));
    if (!want_dx || split_rows == 0) goto cleanup;
    if (pool)
        TRY(cuda_bn_backward_apply_pool(c, dx, d, x, coef, act, fcoef, pool, accumulate));
    else
        TRY(bn_backward_apply(c, dx, d, x, coef, act, fcoef, split_rows, ch, splits, accumulate));
cleanup:
    return rc;
}

int cuda_bn_backward(void *ctx, struct tensor *dx, struct tensor *dgamma, struct tensor *dbeta,
                     const struct tensor *dy, const struct tensor *x, const struct tensor *gamma,
                     const struct tensor *save_mean, const struct tensor *save_invstd,
                     int accumulate)
{
    return cuda_bn_backward_fused((struct cuda_ctx *)ctx, dx, dgamma, dbeta, dy, NULL, NULL,
                                  NULL, x, gamma, save_mean, save_invstd, accumulate);
}

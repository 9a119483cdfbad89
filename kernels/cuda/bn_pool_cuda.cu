/* A max pool folded into the fused batch norm whose activation it reads (cuda_internal.h,
 * "fused batch norm"; kernels/plan.h, par.bn_act.pool): windows of
 * kh x kw pixels tiling the plane (stride the window). The forward's pass writes the
 * pool's output from x, the activation's output never stored; the backward's sums and
 * elementwise pass take the pool's dy, finding each window's first maximum again from x.
 * Every value is computed as the unfused ops store it (the batch norm's output, the
 * activation's, the maximum in the pool's row-major scan, the pool's dx, the activation's
 * dx, each rounded to the storage type), with explicit rounding intrinsics, so that the
 * results are the bits of the unfused nodes. Compiled as fused_bn_cuda.cu is (the
 * activations' library functions). */
#include "bn_kernels_cuda.h"
#include "cuda_internal.h"

struct bn_pool_geom {
    int n, h, w, c;   /* x, NHWC */
    int kh, kw;       /* window = stride */
    int ho, wo;       /* the pool's output */
};

/* Offset of pixel (img, yy, xx), channel 0, of an NHWC input. */
__device__ __forceinline__ size_t bn_pool_in(const bn_pool_geom &g, int img, int yy, int xx)
{
    return (((size_t)img * g.h + yy) * g.w + xx) * g.c;
}

/* Output pixel r -> (image, oy, ox). */
__device__ __forceinline__ void bn_pool_out_pixel(long r, const bn_pool_geom &g, int *img,
                                                  int *oy, int *ox)
{
    const unsigned u = (unsigned)r, wo = (unsigned)g.wo, ho = (unsigned)g.ho;
    *ox = (int)(u % wo);
    *oy = (int)((u / wo) % ho);
    *img = (int)(u / (wo * ho));
}

/* Input pixel q (row-major in the window) of output pixel (oy, ox). */
__device__ __forceinline__ void bn_pool_window_pixel(const bn_pool_geom &g, int oy, int ox, int q,
                                                     int *yy, int *xx)
{
    *yy = oy * g.kh + q / g.kw;
    *xx = ox * g.kw + q % g.kw;
}

/* For each of the V channels of pack cv, the maximum m[k] of the stored activation over
 * the window of output pixel (img, oy, ox) and the position best[k] of its first
 * occurrence in the row-major scan, as the pool's forward and backward find them. f: the
 * V channels' coefficients. */
template <typename T, int V, enum act_kind K>
__device__ __forceinline__ void bn_pool_window_max(float *m, int *best,
                                                   const T *__restrict__ x, /* (n, h, w, c) */
                                                   const bn_pool_geom &g, int img, int oy,
                                                   int ox, int cv, const bn_fwd_coef *f,
                                                   float alpha, float inv)
{
    typedef cuda_pack<T, V> P;
    for (int q = 0; q < g.kh * g.kw; q++) {
        int yy, xx;
        bn_pool_window_pixel(g, oy, ox, q, &yy, &xx);
        const P xv = ((const P *)x)[bn_pool_in(g, img, yy, xx) / V + cv];
        for (int k = 0; k < V; k++) {
            const float v = bn_fwd_act<T, K>(cuda_to_f<T>(xv.v[k]), f[k], alpha, inv);
            if (q == 0) m[k] = v, best[k] = 0;
            else if (v > m[k]) m[k] = v, best[k] = q;
        }
    }
}

/* The activation's dx as the unfused ops store it at one element: the pool's dx there
 * (gy if the element is its window's first maximum, else 0, stored as T), through the
 * activation's backward at the batch norm's stored output. */
template <typename T, enum act_kind K>
__device__ __forceinline__ float bn_pool_act_dx(float xf, float gy, int is_max,
                                                const bn_fwd_coef &f, float alpha, float inv)
{
    const float d = is_max ? cuda_to_f<T>(cuda_from_f<T>(__fadd_rn(0.0f, gy))) : 0.0f;
    return cuda_to_f<T>(cuda_from_f<T>(act_fn<K>::grad(bn_fwd_y<T>(xf, f), d, alpha, inv)));
}

/* The forward: out = the window's maximum of the stored activation, V channels a thread.
 * Block cuda_block_rows(c / V), grid cuda_grid_rows_cover over the output pixels. */
template <typename T, int V, enum act_kind K>
__global__ void bn_apply_pool_kernel(T *__restrict__ out,       /* (n, ho, wo, c) */
                                     const T *__restrict__ x,   /* (n, h, w, c) */
                                     const float *__restrict__ coef, /* (COEF_FWD_COUNT, c) */
                                     bn_pool_geom g, float alpha)
{
    typedef cuda_pack<T, V> P;
    const long rows = (long)g.n * g.ho * g.wo;
    const int vecs = g.c / V;
    const float inv = act_inv_alpha<K>(alpha);
    FOR_CHANNELS(cv, vecs)
    {
        bn_fwd_coef f[V];
        for (int k = 0; k < V; k++) f[k] = bn_fwd_coef_at(coef, g.c, cv * V + k);
        FOR_ROWS(r, rows)
        {
            int img, oy, ox, best[V];
            float m[V];
            bn_pool_out_pixel(r, g, &img, &oy, &ox);
            bn_pool_window_max<T, V, K>(m, best, x, g, img, oy, ox, cv, f, alpha, inv);
            P o;
            for (int k = 0; k < V; k++) o.v[k] = cuda_from_f<T>(m[k]);
            ((P *)out)[(size_t)r * vecs + cv] = o;
        }
    }
}

/* The backward's dy source for reduce_partial_kernel (bn_kernels_cuda.h, REDUCE_BN_BWD):
 * at element i of x, the activation's dx as the unfused ops store it: the pool's dx there
 * (its dy at the window's first maximum, else 0), through the activation's backward at
 * the batch norm's output recomputed from x (va) with the forward's coefficients. One
 * group (one batch-norm part). */
template <typename T, enum act_kind K> struct act_pool_grad_b {
    const T *x;           /* (n, h, w, c) */
    const T *gy;          /* (n, ho, wo, c) */
    const float *fcoef;   /* (COEF_FWD_COUNT, c) */
    bn_pool_geom g = {};
    float alpha;
    int ch;
    bn_fwd_coef f;
    __device__ act_pool_grad_b at(size_t, int, int channel, int channels) const
    {
        act_pool_grad_b b = *this;
        b.ch = channel;
        b.f = bn_fwd_coef_at(fcoef, channels, channel);
        return b;
    }
    __device__ float operator()(size_t i, float va) const
    {
        const float inv = act_inv_alpha<K>(alpha);
        const unsigned r = (unsigned)(i / (size_t)g.c), w = (unsigned)g.w, h = (unsigned)g.h;
        const int xx = (int)(r % w), yy = (int)((r / w) % h), img = (int)(r / (w * h));
        const int oy = yy / g.kh, ox = xx / g.kw;
        const int here = (yy - oy * g.kh) * g.kw + (xx - ox * g.kw);
        int best;
        float m;
        bn_pool_window_max<T, 1, K>(&m, &best, x, g, img, oy, ox, ch, &f, alpha, inv);
        const size_t o = (((size_t)img * g.ho + oy) * g.wo + ox) * g.c + ch;
        return bn_pool_act_dx<T, K>(va, cuda_to_f<T>(gy[o]), here == best, f, alpha, inv);
    }
};

/* The backward's elementwise pass, one window of V channels a thread: the window's first
 * maximum found as the pool's backward finds it, then at each of its pixels the
 * activation's dx as stored (act_pool_grad_b) and dx (=|+=) a*g + b*((x - hi) - lo) + e,
 * as bn_backward_apply_kernel computes it. Block and grid as bn_apply_pool_kernel. */
template <typename T, int V, enum act_kind K>
__global__ void bn_backward_apply_pool_kernel(T *__restrict__ dx,        /* (n, h, w, c) */
                                              const T *__restrict__ gy,  /* (n, ho, wo, c) */
                                              const T *__restrict__ x,   /* (n, h, w, c) */
                                              const float *__restrict__ coef, /* (COEF_BWD_COUNT,
                                                                                 c) */
                                              const float *__restrict__ fcoef, /* (COEF_FWD_COUNT,
                                                                                  c) */
                                              bn_pool_geom g, int accumulate, float alpha)
{
    typedef cuda_pack<T, V> P;
    const long rows = (long)g.n * g.ho * g.wo;
    const int vecs = g.c / V, area = g.kh * g.kw;
    const float inv = act_inv_alpha<K>(alpha);
    FOR_CHANNELS(cv, vecs)
    {
        float a[V], b[V], e[V], hi[V], lo[V];
        bn_fwd_coef f[V];
        for (int k = 0; k < V; k++) {
            const int ch = cv * V + k;
            a[k] = coef[BCOEF_A * g.c + ch];
            b[k] = coef[BCOEF_B * g.c + ch];
            e[k] = coef[BCOEF_E * g.c + ch];
            hi[k] = coef[BCOEF_HI * g.c + ch];
            lo[k] = coef[BCOEF_LO * g.c + ch];
            f[k] = bn_fwd_coef_at(fcoef, g.c, ch);
        }
        FOR_ROWS(r, rows)
        {
            int img, oy, ox, best[V];
            float m[V];
            bn_pool_out_pixel(r, g, &img, &oy, &ox);
            bn_pool_window_max<T, V, K>(m, best, x, g, img, oy, ox, cv, f, alpha, inv);
            const P gv = ((const P *)gy)[(size_t)r * vecs + cv];
            for (int q = 0; q < area; q++) {
                int yy, xx;
                bn_pool_window_pixel(g, oy, ox, q, &yy, &xx);
                const size_t i = bn_pool_in(g, img, yy, xx) / V + cv;
                const P xv = ((const P *)x)[i];
                P o;
                if (accumulate) o = ((const P *)dx)[i];
                for (int k = 0; k < V; k++) {
                    const float xf = cuda_to_f<T>(xv.v[k]);
                    const float gg = bn_pool_act_dx<T, K>(xf, cuda_to_f<T>(gv.v[k]),
                                                          q == best[k], f[k], alpha, inv);
                    const float xm = __fsub_rn(__fsub_rn(xf, hi[k]), lo[k]);
                    const float v =
                        __fadd_rn(__fadd_rn(__fmul_rn(a[k], gg), __fmul_rn(b[k], xm)), e[k]);
                    o.v[k] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(o.v[k]), v) : v);
                }
                ((P *)dx)[i] = o;
            }
        }
    }
}

/* The geometry of x pooled into y by pool, checked. */
static int bn_pool_geometry(bn_pool_geom *g, const struct tensor *y, const struct tensor *x,
                            const struct cuda_bn_pool *pool)
{
    int rc = DR_OK;
    EXPECT(pool->kh >= 1 && pool->kw >= 1 && x->h % pool->kh == 0 && x->w % pool->kw == 0 &&
               y->n == x->n && y->c == x->c && y->h == x->h / pool->kh &&
               y->w == x->w / pool->kw,
           "bn with max pool: (%d, %d, %d, %d) is not (%d, %d, %d, %d) in %dx%d windows", y->n,
           y->c, y->h, y->w, x->n, x->c, x->h, x->w, pool->kh, pool->kw);
    EXPECT((long)x->n * x->h * x->w < (1L << 31), "bn with max pool: %d images of %dx%d pixels",
           x->n, x->h, x->w);
    *g = bn_pool_geom{x->n, x->h, x->w, x->c, pool->kh, pool->kw, y->h, y->w};
cleanup:
    return rc;
}

template <typename T, int V, enum act_kind K>
static int apply_pool_launch(struct cuda_ctx *c, T *out, const T *x, const float *coef,
                             const bn_pool_geom &g, float alpha)
{
    int rc = DR_OK;
    const size_t nin = (size_t)g.n * g.h * g.w * g.c, nout = (size_t)g.n * g.ho * g.wo * g.c;
    const dim3 block = cuda_block_rows(g.c / V);
    bn_apply_pool_kernel<T, V, K>
        <<<cuda_grid_rows_cover(c, (long)g.n * g.ho * g.wo, block), block, 0, c->stream>>>(
            out, x, coef, g, alpha);
    /* reads x and coef (COEF_FWD_COUNT, c) floats; writes the pool's output */
    CHECK_LAUNCH(c, nin * sizeof(T) + sizeof(float) * COEF_FWD_COUNT * g.c, nout * sizeof(T));
cleanup:
    return rc;
}

template <typename T, enum act_kind K>
static int apply_pool(struct cuda_ctx *c, T *out, const T *x, const float *coef,
                      const bn_pool_geom &g, float alpha)
{
    if (bn_width<T>(g.c, out, x, NULL) > 1)
        return apply_pool_launch<T, cuda_vec_width<T>(), K>(c, out, x, coef, g, alpha);
    return apply_pool_launch<T, 1, K>(c, out, x, coef, g, alpha);
}

template <typename T, enum act_kind K>
static int reduce_pool(struct cuda_ctx *c, double *partial, const T *x, const T *gy,
                       const float *fcoef, const bn_pool_geom &g, int parts, float alpha)
{
    int rc = DR_OK;
    const long rows = (long)g.n * g.h * g.w;
    const dim3 block(RED_X, RED_Y), grid((unsigned)((g.c + RED_X - 1) / RED_X), (unsigned)parts, 1);
    act_pool_grad_b<T, K> src = {};
    src.x = x;
    src.gy = gy;
    src.fcoef = fcoef;
    src.g = g;
    src.alpha = alpha;
    reduce_partial_kernel<T, REDUCE_BN_BWD, act_pool_grad_b<T, K>>
        <<<grid, block, 0, c->stream>>>(partial, x, src, rows, g.c, parts);
    /* reads x once (each element is read again by the other kh*kw - 1 threads of its
     * window, neighbouring rows in neighbouring lanes and blocks: from cache, not counted),
     * the pool's dy and fcoef (COEF_FWD_COUNT, c) floats; writes partial, 3 x parts x c
     * doubles */
    CHECK_LAUNCH(c, ((size_t)rows * g.c + (size_t)g.n * g.ho * g.wo * g.c) * sizeof(T) +
                        sizeof(float) * COEF_FWD_COUNT * g.c,
                 sizeof(double) * 3 * (size_t)parts * g.c);
cleanup:
    return rc;
}

template <typename T, int V, enum act_kind K>
static int backward_pool_launch(struct cuda_ctx *c, T *dx, const T *gy, const T *x,
                                const float *coef, const float *fcoef, const bn_pool_geom &g,
                                int accumulate, float alpha)
{
    int rc = DR_OK;
    const size_t nin = (size_t)g.n * g.h * g.w * g.c, nout = (size_t)g.n * g.ho * g.wo * g.c;
    const dim3 block = cuda_block_rows(g.c / V);
    bn_backward_apply_pool_kernel<T, V, K>
        <<<cuda_grid_rows_cover(c, (long)g.n * g.ho * g.wo, block), block, 0, c->stream>>>(
            dx, gy, x, coef, fcoef, g, accumulate, alpha);
    /* reads x once (its second read of a window is from cache), the pool's dy, dx when
     * accumulating, coef (COEF_BWD_COUNT, c) and fcoef (COEF_FWD_COUNT, c) floats; writes dx */
    CHECK_LAUNCH(c, (size_t)(1 + (accumulate != 0)) * nin * sizeof(T) + nout * sizeof(T) +
                        sizeof(float) * (COEF_BWD_COUNT + COEF_FWD_COUNT) * g.c,
                 nin * sizeof(T));
cleanup:
    return rc;
}

template <typename T, enum act_kind K>
static int backward_pool(struct cuda_ctx *c, T *dx, const T *gy, const T *x, const float *coef,
                         const float *fcoef, const bn_pool_geom &g, int accumulate, float alpha)
{
    if (bn_width<T>(g.c, dx, gy, x) > 1)
        return backward_pool_launch<T, cuda_vec_width<T>(), K>(c, dx, gy, x, coef, fcoef, g,
                                                              accumulate, alpha);
    return backward_pool_launch<T, 1, K>(c, dx, gy, x, coef, fcoef, g, accumulate, alpha);
}

/* Returns F<T, kind>(args...) for the context's type and the activation's kind. */
#define BN_POOL_DISPATCH(c, kind, F, ...)                                                  \
    CUDA_DISPATCH((c)->dt, T, { ACT_DISPATCH(kind, K, F<T, K>(__VA_ARGS__)); })

int cuda_bn_apply_pool(struct cuda_ctx *c, struct tensor *out, const struct cuda_bn_act *act,
                       const struct cuda_bn_pool *pool, const struct tensor *x,
                       const float *coef)
{
    int rc = DR_OK;
    bn_pool_geom g = {};
    TRY(bn_pool_geometry(&g, out, x, pool));
    if (tensor_count(out) == 0) goto cleanup;
    BN_POOL_DISPATCH(c, act->kind, apply_pool, c, (T *)out->data, (const T *)x->data, coef, g,
                     act->alpha);
    FAIL(DR_ERR_INTERNAL, "bn with max pool: no kernel for activation kind %d", (int)act->kind);
cleanup:
    return rc;
}

int cuda_reduce_partial_act_pool(struct cuda_ctx *c, double *partial, const struct tensor *x,
                                 const struct tensor *gy, const float *fcoef, int parts,
                                 const struct cuda_bn_act *act, const struct cuda_bn_pool *pool)
{
    int rc = DR_OK;
    bn_pool_geom g = {};
    TRY(bn_pool_geometry(&g, gy, x, pool));
    EXPECT(x->c > 0 && parts >= 1 && parts <= RED_MAX_PARTS, "reduce: %d channels, %d parts",
           x->c, parts);
    BN_POOL_DISPATCH(c, act->kind, reduce_pool, c, partial, (const T *)x->data,
                     (const T *)gy->data, fcoef, g, parts, act->alpha);
    FAIL(DR_ERR_INTERNAL, "reduce: no kernel with max pool for activation kind %d",
         (int)act->kind);
cleanup:
    return rc;
}

int cuda_bn_backward_apply_pool(struct cuda_ctx *c, struct tensor *dx, const struct tensor *gy,
                                const struct tensor *x, const float *coef,
                                const struct cuda_bn_act *act, const float *fcoef,
                                const struct cuda_bn_pool *pool, int accumulate)
{
    int rc = DR_OK;
    bn_pool_geom g = {};
    TRY(bn_pool_geometry(&g, gy, x, pool));
    EXPECT(tensor_same_shape(dx, x), "bn backward with max pool: dx unlike x");
    if (tensor_count(gy) == 0) goto cleanup;
    BN_POOL_DISPATCH(c, act->kind, backward_pool, c, (T *)dx->data, (const T *)gy->data,
                     (const T *)x->data, coef, fcoef, g, accumulate, act->alpha);
    FAIL(DR_ERR_INTERNAL, "bn backward with max pool: no kernel for activation kind %d",
         (int)act->kind);
cleanup:
    return rc;
}

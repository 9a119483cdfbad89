/* The kernels batch norm's passes share between their plain form (bn_cuda.cu,
 * reduce_cuda.cu: compiled without multiply-add contraction, to match the CPU twin to the
 * bit) and their form fused with an activation (fused_bn_cuda.cu: compiled as the
 * activation kernels are, since the activations' library functions contain fused
 * multiply-adds of their own). Every product and sum here is an explicit rounding
 * intrinsic, so both forms compute the same bits whatever the file's flags; only the
 * activation's functions (act_cuda.h) differ between instantiations. */
#ifndef DAWNRUN_BN_KERNELS_CUDA_H
#define DAWNRUN_BN_KERNELS_CUDA_H

#include "act_cuda.h"
#include "cuda_internal.h"

#define RED_Y 8       /* row lanes per block of the partial reduction */
#define RED_MAX_PARTS 1024

/* Double sum and product, each rounded once (never contracted). */
#ifdef DAWNRUN_CUDA_EMU_H
static inline double bn_dadd(double a, double b)   /* the host emulation: no contraction */
{
    return a + b;
}
static inline double bn_dmul(double a, double b)
{
    return a * b;
}
#else
#define bn_dadd __dadd_rn
#define bn_dmul __dmul_rn
#endif

/* Coefficients of the elementwise backward: dx = a*dy + b*((x - hi) - lo) + e (the
 * forward's are COEF_*, cuda_internal.h). */
enum { BCOEF_A, BCOEF_B, BCOEF_E, BCOEF_HI, BCOEF_LO, COEF_BWD_COUNT };

/* ------------------------------------------------------------------ reductions */

/* Where the second operand b of REDUCE_BN_BWD comes from: a tensor (load_b), or the
 * gradient of the activation after a batch norm (act_grad_b). Each is set up per thread
 * for one (group, channel) by at(), then gives b at element offset i of the group from
 * there, the first operand's value va at the same place given. */
template <typename T> struct load_b {
    const T *b;
    __device__ load_b at(size_t group_off, int, int, int) const
    {
        return load_b{b ? b + group_off : b};
    }
    __device__ float operator()(size_t i, float) const
    {
        return cuda_to_f<T>(b[i]);
    }
};

template <typename T, enum act_kind K> struct act_grad_b {
    const T *d;           /* (groups, rows, channels) */
    const float *fcoef;   /* (groups, COEF_FWD_COUNT, channels) */
    float alpha, scale, hi, lo, shift;
    __device__ act_grad_b at(size_t group_off, int group, int ch, int channels) const
    {
        const float *k = fcoef + (size_t)group * COEF_FWD_COUNT * channels;
        return act_grad_b{d + group_off, fcoef, alpha, k[COEF_SCALE * channels + ch],
                          k[COEF_HI * channels + ch], k[COEF_LO * channels + ch],
                          k[COEF_SHIFT * channels + ch]};
    }
    __device__ float operator()(size_t i, float va) const
    {
        /* the forward's output as it stored it, then the activation's backward as it
         * stores its dx */
        const float t = __fsub_rn(__fsub_rn(va, hi), lo);
        const float y = cuda_to_f<T>(cuda_from_f<T>(__fadd_rn(__fmul_rn(t, scale), shift)));
        return cuda_to_f<T>(cuda_from_f<T>(
            act_fn<K>::grad(y, cuda_to_f<T>(d[i]), alpha, act_inv_alpha<K>(alpha))));
    }
};

/* Block (RED_X, RED_Y), grid (ceil(channels / RED_X), parts, groups). Thread (x, y) of
 * block (bx, by, bz) sums channel bx*RED_X + x of group bz over rows
 * by*RED_Y + y + k*parts*RED_Y. */
template <typename T, int MODE, class B>
__global__ void reduce_partial_kernel(double *__restrict__ partial, /* (groups, MODE, parts,
                                                                        channels) */
                                      const T *__restrict__ a, /* (groups, rows, channels) */
                                      B src_b,  /* b of REDUCE_BN_BWD (groups, rows, channels) */
                                      long rows, int channels, int parts)
{
    __shared__ double sh[3][RED_Y][RED_X];
    const int ch = blockIdx.x * RED_X + threadIdx.x;
    const size_t group_rows = (size_t)blockIdx.z * (size_t)rows * (size_t)channels;
    a += group_rows;
    partial += (size_t)blockIdx.z * MODE * parts * channels;
    double s0 = 0.0, s1 = 0.0, s2 = 0.0;
    if (ch < channels) {
        const B b = src_b.at(group_rows, (int)blockIdx.z, ch, channels);
        for (long r = (long)blockIdx.y * RED_Y + threadIdx.y; r < rows;
             r += (long)parts * RED_Y) {
            const float fa = cuda_to_f<T>(a[r * channels + ch]);
            const double va = (double)fa;
            s0 += va;
            if (MODE == REDUCE_SUMSQ) s1 = bn_dadd(s1, bn_dmul(va, va));
            if (MODE == REDUCE_BN_BWD) {
                const double vb = (double)b((size_t)r * channels + ch, fa);
                s1 += vb;
                s2 = bn_dadd(s2, bn_dmul(vb, va));
            }
        }
    }
    sh[0][threadIdx.y][threadIdx.x] = s0;
    sh[1][threadIdx.y][threadIdx.x] = s1;
    sh[2][threadIdx.y][threadIdx.x] = s2;
    __syncthreads();
    if (threadIdx.y != 0 || ch >= channels) return;
    for (int q = 0; q < MODE; q++) {
        double t = 0.0;
        for (int j = 0; j < RED_Y; j++) t += sh[q][j][threadIdx.x];
        partial[((size_t)q * parts + blockIdx.y) * channels + ch] = t;
    }
}

/* ------------------------------------------------------------------ elementwise passes */

/* One channel's forward coefficients (COEF_FWD_*), as a fused forward keeps them (the fused max pool's passes, bn_pool_cuda.cu, and the add recomputing an activation, bn_cuda.cu). */
struct bn_fwd_coef {
    float scale, hi, lo, shift;
};

/* Channel ch's coefficients from coef (COEF_FWD_COUNT, c). */
__device__ __forceinline__ bn_fwd_coef bn_fwd_coef_at(const float *coef, int c, int ch)
{
    return bn_fwd_coef{coef[COEF_SCALE * c + ch], coef[COEF_HI * c + ch],
                        coef[COEF_LO * c + ch], coef[COEF_SHIFT * c + ch]};
}

/* The batch norm's output at x as the unfused op stores it: ((x - hi) - lo) * scale + shift,
 * rounded to T. */
template <typename T>
__device__ __forceinline__ float bn_fwd_y(float xf, const bn_fwd_coef &f)
{
    const float t = __fsub_rn(__fsub_rn(xf, f.hi), f.lo);
    return cuda_to_f<T>(cuda_from_f<T>(__fadd_rn(__fmul_rn(t, f.scale), f.shift)));
}

/* The activation's output at x as the unfused ops store it: the activation of the batch
 * norm's stored output, rounded to T. */
template <typename T, enum act_kind K>
__device__ __forceinline__ float bn_fwd_act(float xf, const bn_fwd_coef &f, float alpha,
                                             float inv)
{
    return cuda_to_f<T>(cuda_from_f<T>(act_fn<K>::value(bn_fwd_y<T>(xf, f), alpha, inv)));
}


/* The pack width of the elementwise passes over (rows, c) tensors at these pointers: 16
 * bytes when c and every pointer allow, else 1. */
template <typename T>
static inline int bn_width(int c, const void *p0, const void *p1, const void *p2)
{
    const int v = cuda_vec_width<T>();
    return c % v == 0 && cuda_aligned16(p0) && cuda_aligned16(p1) && cuda_aligned16(p2) ? v : 1;
}

/* The forward's elementwise pass, V channels a thread (a 16-byte pack or one), K the
 * activation after it (ACT_NONE: none): y = ((x - hi) - lo) * scale + shift, stored when y
 * is not NULL; out = act(y as stored) when K is an activation, or, with res not NULL,
 * out = res + act(y) (the residual add after it, act(y) rounded as the activation stores
 * it). Block cuda_block_rows(c /
 * V), grid (cuda_grid_rows_cover, splits): blockIdx.y is the ghost batch-norm part, of
 * `rows` rows each. */
template <typename T, int V, enum act_kind K>
__global__ void bn_apply_kernel(T *__restrict__ y,         /* (splits, rows, c) or NULL */
                                T *__restrict__ out,       /* (splits, rows, c) or NULL */
                                const T *__restrict__ x,   /* (splits, rows, c) */
                                const T *__restrict__ res, /* (splits, rows, c) or NULL */
                                const float *__restrict__ coef, /* (splits, COEF_FWD_COUNT, c) */
                                long rows, int c, float alpha)
{
    typedef cuda_pack<T, V> P;
    const size_t base = (size_t)blockIdx.y * rows * c;
    const int vecs = c / V;
    const float inv = act_inv_alpha<K>(alpha);
    coef += (size_t)blockIdx.y * COEF_FWD_COUNT * c;
    FOR_CHANNELS(cv, vecs)
    {
        float scale[V], hi[V], lo[V], shift[V];
        for (int k = 0; k < V; k++) {
            const int ch = cv * V + k;
            scale[k] = coef[COEF_SCALE * c + ch];
            hi[k] = coef[COEF_HI * c + ch];
            lo[k] = coef[COEF_LO * c + ch];
            shift[k] = coef[COEF_SHIFT * c + ch];
        }
        FOR_ROWS(r, rows)
        {
            const size_t i = (base + (size_t)r * c) / V + cv;
            const P xv = ((const P *)x)[i];
            P yv, ov;
            for (int k = 0; k < V; k++) {
                const float t = __fsub_rn(__fsub_rn(cuda_to_f<T>(xv.v[k]), hi[k]), lo[k]);
                yv.v[k] = cuda_from_f<T>(__fadd_rn(__fmul_rn(t, scale[k]), shift[k]));
                if (K != ACT_NONE)
                    ov.v[k] = cuda_from_f<T>(act_fn<K>::value(cuda_to_f<T>(yv.v[k]), alpha, inv));
            }
            if (K != ACT_NONE && res) {
                const P rv = ((const P *)res)[i];
                for (int k = 0; k < V; k++)
                    ov.v[k] = cuda_from_f<T>(
                        __fadd_rn(cuda_to_f<T>(rv.v[k]), cuda_to_f<T>(ov.v[k])));
            }
            if (y) ((P *)y)[i] = yv;
            if (K != ACT_NONE) ((P *)out)[i] = ov;
        }
    }
}

/* The backward's elementwise pass, V channels a thread, K the activation whose backward
 * is folded in (ACT_NONE: dy is the batch norm's own): g = dy, or g = act'(y) * dy with y
 * recomputed from x by the forward's coefficients fcoef, each rounded as the unfused ops
 * store them; dx (=|+=) a*g + b*((x - hi) - lo) + e. Block and grid as bn_apply_kernel. */
template <typename T, int V, enum act_kind K>
__global__ void bn_backward_apply_kernel(T *__restrict__ dx,       /* (splits, rows, c) */
                                         const T *__restrict__ dy, /* (splits, rows, c) */
                                         const T *__restrict__ x,  /* (splits, rows, c) */
                                         const float *__restrict__ coef, /* (splits,
                                                                      COEF_BWD_COUNT, c) */
                                         const float *__restrict__ fcoef, /* (splits,
                                                          COEF_FWD_COUNT, c) or NULL */
                                         long rows, int c, int accumulate, float alpha)
{
    typedef cuda_pack<T, V> P;
    const size_t base = (size_t)blockIdx.y * rows * c;
    const int vecs = c / V;
    const float inv = act_inv_alpha<K>(alpha);
    coef += (size_t)blockIdx.y * COEF_BWD_COUNT * c;
    if (K != ACT_NONE) fcoef += (size_t)blockIdx.y * COEF_FWD_COUNT * c;
    FOR_CHANNELS(cv, vecs)
    {
        float a[V], b[V], e[V], hi[V], lo[V];
        float fscale[V], fhi[V], flo[V], fshift[V];
        for (int k = 0; k < V; k++) {
            const int ch = cv * V + k;
            a[k] = coef[BCOEF_A * c + ch];
            b[k] = coef[BCOEF_B * c + ch];
            e[k] = coef[BCOEF_E * c + ch];
            hi[k] = coef[BCOEF_HI * c + ch];
            lo[k] = coef[BCOEF_LO * c + ch];
            fscale[k] = K != ACT_NONE ? fcoef[COEF_SCALE * c + ch] : 0.0f;
            fhi[k] = K != ACT_NONE ? fcoef[COEF_HI * c + ch] : 0.0f;
            flo[k] = K != ACT_NONE ? fcoef[COEF_LO * c + ch] : 0.0f;
            fshift[k] = K != ACT_NONE ? fcoef[COEF_SHIFT * c + ch] : 0.0f;
        }
        FOR_ROWS(r, rows)
        {
            const size_t i = (base + (size_t)r * c) / V + cv;
            const P xv = ((const P *)x)[i], dv = ((const P *)dy)[i];
            P out;
            if (accumulate) out = ((const P *)dx)[i];
            for (int k = 0; k < V; k++) {
                const float xf = cuda_to_f<T>(xv.v[k]);
                float g = cuda_to_f<T>(dv.v[k]);
                if (K != ACT_NONE) {
                    const float t = __fsub_rn(__fsub_rn(xf, fhi[k]), flo[k]);
                    const float yf = cuda_to_f<T>(
                        cuda_from_f<T>(__fadd_rn(__fmul_rn(t, fscale[k]), fshift[k])));
                    g = cuda_to_f<T>(cuda_from_f<T>(act_fn<K>::grad(yf, g, alpha, inv)));
                }
                const float xm = __fsub_rn(__fsub_rn(xf, hi[k]), lo[k]);
                const float v = __fadd_rn(__fadd_rn(__fmul_rn(a[k], g), __fmul_rn(b[k], xm)),
                                          e[k]);
                out.v[k] = cuda_from_f<T>(accumulate ? __fadd_rn(cuda_to_f<T>(out.v[k]), v) : v);
            }
            ((P *)dx)[i] = out;
        }
    }
}

/* ------------------------------------------------------------------ launches
 *
 * The elementwise passes' launches, shared by the plain (bn_cuda.cu, ACT_NONE) and the
 * fused (fused_bn_cuda.cu, every activation) forms; each file instantiates its own
 * kinds. The host emulation rewrites these launches as it does those of the .cu files
 * (tests/cuda_emu/run.sh), and tests/check_launch_counted.py reads this header too. */

/* Launches bn_apply_kernel<T, V, K> on splits parts of split_rows rows. */
template <typename T, int V, enum act_kind K>
static int bn_apply_launch(struct cuda_ctx *c, T *y, T *out, const T *x, const T *res,
                           const float *coef, long split_rows, int ch, int splits, float alpha)
{
    int rc = DR_OK;
    const size_t count = (size_t)split_rows * splits * ch;
    const dim3 block = cuda_block_rows(ch / V);
    bn_apply_kernel<T, V, K>
        <<<dim3(cuda_grid_rows_cover(c, split_rows, block), (unsigned)splits), block, 0,
           c->stream>>>(y, out, x, res, coef, split_rows, ch, alpha);
    /* reads x (and res when adding it) and coef (splits, COEF_FWD_COUNT, ch) floats; writes
     * y when it is kept and the activation's (or the add's) output when there is one */
    CHECK_LAUNCH(c, count * sizeof(T) * (1 + (res != NULL)) +
                        sizeof(float) * COEF_FWD_COUNT * splits * ch,
                 count * sizeof(T) * ((y != NULL) + (K != ACT_NONE)));
cleanup:
    return rc;
}

/* bn_apply_launch at the widest vector width the pointers and channels allow. */
template <typename T, enum act_kind K>
static int bn_apply_width(struct cuda_ctx *c, T *y, T *out, const T *x, const T *res,
                          const float *coef, long split_rows, int ch, int splits, float alpha)
{
    if (bn_width<T>(ch, y, out, x) > 1 && cuda_aligned16(res))
        return bn_apply_launch<T, cuda_vec_width<T>(), K>(c, y, out, x, res, coef, split_rows,
                                                         ch, splits, alpha);
    return bn_apply_launch<T, 1, K>(c, y, out, x, res, coef, split_rows, ch, splits, alpha);
}

/* Launches bn_backward_apply_kernel<T, V, K>. */
template <typename T, int V, enum act_kind K>
static int bn_backward_apply_launch(struct cuda_ctx *c, T *dx, const T *dy, const T *x,
                                    const float *coef, const float *fcoef, long split_rows,
                                    int ch, int splits, int accumulate, float alpha)
{
    int rc = DR_OK;
    const size_t count = (size_t)split_rows * splits * ch;
    const dim3 block = cuda_block_rows(ch / V);
    bn_backward_apply_kernel<T, V, K>
        <<<dim3(cuda_grid_rows_cover(c, split_rows, block), (unsigned)splits), block, 0,
           c->stream>>>(dx, dy, x, coef, fcoef, split_rows, ch, accumulate, alpha);
    /* reads dy, x (and dx when accumulating), coef (splits, COEF_BWD_COUNT, ch) floats and,
     * with an activation folded in, fcoef (splits, COEF_FWD_COUNT, ch) floats; writes dx */
    CHECK_LAUNCH(c, (size_t)(2 + (accumulate != 0)) * count * sizeof(T) +
                        sizeof(float) * (COEF_BWD_COUNT + (K != ACT_NONE ? COEF_FWD_COUNT : 0)) *
                            splits * ch,
                 count * sizeof(T));
cleanup:
    return rc;
}

/* bn_backward_apply_launch at the widest vector width the pointers and channels allow. */
template <typename T, enum act_kind K>
static int bn_backward_apply_width(struct cuda_ctx *c, T *dx, const T *dy, const T *x,
                                   const float *coef, const float *fcoef, long split_rows,
                                   int ch, int splits, int accumulate, float alpha)
{
    if (bn_width<T>(ch, dx, dy, x) > 1)
        return bn_backward_apply_launch<T, cuda_vec_width<T>(), K>(
            c, dx, dy, x, coef, fcoef, split_rows, ch, splits, accumulate, alpha);
    return bn_backward_apply_launch<T, 1, K>(c, dx, dy, x, coef, fcoef, split_rows, ch, splits,
                                             accumulate, alpha);
}

#endif

/* The CPU convolution entry points of kernels/conv2d.h: each call goes to the
 * implementation conv2d_cpu_choose names for its shape and direction (see conv2d_impl.h).
 * The rule below comes from bench/conv_cpu_bench.c on the ResNet-9 and DAWN_net layer
 * shapes at batch 128 with 2 threads, per instruction set (docs/benchmarks.md, "CPU
 * convolutions: oneDNN primitives vs im2col + sgemm"): oneDNN's direct kernels win on
 * 3x3 convolutions with 16 or more input channels, except that with AVX2 its gradient
 * kernels lose on the widest layers (input x output channels above 256 x 256) and its
 * strided kernels on small outputs; strided 1x1 shortcuts and the 3-channel first layer
 * stay on im2col + sgemm (oneDNN subsamples or copies them first). An instruction set
 * below AVX2 keeps im2col + sgemm everywhere (not measured). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "../conv2d.h"
#include "conv2d_impl.h"

/* -1: no override; otherwise the enum conv2d_cpu_impl DAWNRUN_CPU_CONV asks for. */
static int conv_forced = -1;
static pthread_once_t conv_env_once = PTHREAD_ONCE_INIT;

static void conv_read_env(void)
{
    const char *v = getenv("DAWNRUN_CPU_CONV");
    if (!v) return;
    if (strcmp(v, "im2col") == 0) conv_forced = CONV2D_CPU_IM2COL;
    else if (strcmp(v, "dnnl") == 0) conv_forced = CONV2D_CPU_DNNL;
}

/* The rule of the file comment, for an unforced choice. */
static enum conv2d_cpu_impl conv_rule(const struct conv2d_dims *d, enum conv2d_cpu_dir dir)
{
    const int isa = conv2d_dnnl_isa_level();
    const long howo = (long)d->ho * d->wo;
    const int small_strided = d->stride > 1 && howo < 64;
    if (isa < 2) return CONV2D_CPU_IM2COL;
    if (d->k == 1 && d->stride > 1) return CONV2D_CPU_IM2COL;
    if (d->c < 16) {
        /* the first layer: only its weight gradient, and only with AVX-512 */
        return dir == CONV2D_BWD_WEIGHTS && isa >= 3 ? CONV2D_CPU_DNNL : CONV2D_CPU_IM2COL;
    }
    if (isa >= 3) {
        if (dir == CONV2D_BWD_WEIGHTS && small_strided) return CONV2D_CPU_IM2COL;
        return CONV2D_CPU_DNNL;
    }
    /* AVX2 */
    if (small_strided) return CONV2D_CPU_IM2COL;
    if (dir == CONV2D_FWD) return CONV2D_CPU_DNNL;
    if ((long)d->c * d->co > 256L * 256L) return CONV2D_CPU_IM2COL;
    if (dir == CONV2D_BWD_DATA && d->stride > 1) return CONV2D_CPU_IM2COL;
    return CONV2D_CPU_DNNL;
}

enum conv2d_cpu_impl conv2d_cpu_choose(const struct conv2d_dims *d, enum conv2d_cpu_dir dir)
{
    pthread_once(&conv_env_once, conv_read_env);
    if (conv_forced == CONV2D_CPU_IM2COL) return CONV2D_CPU_IM2COL;
    if (conv_forced != CONV2D_CPU_DNNL && conv_rule(d, dir) == CONV2D_CPU_IM2COL)
        return CONV2D_CPU_IM2COL;
    return conv2d_dnnl_supported(d, dir) ? CONV2D_CPU_DNNL : CONV2D_CPU_IM2COL;
}

const char *conv2d_cpu_impl_name(enum conv2d_cpu_impl impl)
{
    return impl == CONV2D_CPU_DNNL ? "dnnl" : "im2col";
}

static int conv_backward_with(enum conv2d_cpu_impl impl, float *dx, float *dw, float *db,
                              const float *dy, const float *x, const float *w,
                              const struct conv2d_dims *d, int accumulate_dx)
{
    if (impl == CONV2D_CPU_DNNL)
        return conv2d_dnnl_backward(dx, dw, db, dy, x, w, d, accumulate_dx);
    return conv2d_im2col_backward(dx, dw, db, dy, x, w, d, accumulate_dx);
}

int conv2d_forward_cpu(float *y, const float *x, const float *w, const float *b,
                       const struct conv2d_dims *d)
{
    if (conv2d_cpu_choose(d, CONV2D_FWD) == CONV2D_CPU_DNNL)
        return conv2d_dnnl_forward(y, x, w, b, d);
    return conv2d_im2col_forward(y, x, w, b, d);
}

/* Both gradients go to one implementation when it runs both directions (the bias
 * gradient is the same double-precision sum in either), else each to its own. */
int conv2d_backward_cpu(float *dx, float *dw, float *db, const float *dy, const float *x,
                        const float *w, const struct conv2d_dims *d, int accumulate_dx)
{
    const enum conv2d_cpu_impl iw = conv2d_cpu_choose(d, CONV2D_BWD_WEIGHTS);
    const enum conv2d_cpu_impl ix = dx ? conv2d_cpu_choose(d, CONV2D_BWD_DATA) : iw;
    if (ix == iw) return conv_backward_with(iw, dx, dw, db, dy, x, w, d, accumulate_dx);
    int rc = conv_backward_with(iw, NULL, dw, db, dy, x, w, d, 0);
    if (rc == 0) rc = conv_backward_with(ix, dx, NULL, NULL, dy, x, w, d, accumulate_dx);
    return rc;
}

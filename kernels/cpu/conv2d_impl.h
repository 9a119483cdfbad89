/* The two CPU convolution implementations behind kernels/conv2d.h, and the choice between
 * them. conv2d_forward_cpu / conv2d_backward_cpu (conv2d.c) take, for each shape, the
 * implementation conv2d_cpu_choose names; these entry points let a benchmark or a test
 * call one implementation directly. Both keep the contracts of conv2d.h, including
 * bit-identical results from run to run for a fixed OpenMP thread count. */
#ifndef DAWNRUN_KERNELS_CPU_CONV2D_IMPL_H
#define DAWNRUN_KERNELS_CPU_CONV2D_IMPL_H

#include "../conv2d.h"

enum conv2d_cpu_impl {
    CONV2D_CPU_IM2COL = 0,  /* im2col / col2im + oneDNN sgemm per chunk of images */
    CONV2D_CPU_DNNL = 1     /* oneDNN direct convolution primitives */
};

enum conv2d_cpu_dir {
    CONV2D_FWD = 0,
    CONV2D_BWD_DATA = 1,     /* dx */
    CONV2D_BWD_WEIGHTS = 2   /* dw */
};

/* Which implementation runs direction dir of shape d: DAWNRUN_CPU_CONV=im2col or =dnnl
 * in the environment forces one (read once per process); otherwise a fixed rule by
 * shape, direction and the instruction set oneDNN uses on this CPU. Never depends on
 * timing, so a given machine and thread count always computes the same bits. */
enum conv2d_cpu_impl conv2d_cpu_choose(const struct conv2d_dims *d, enum conv2d_cpu_dir dir);

/* "im2col" or "dnnl". */
const char *conv2d_cpu_impl_name(enum conv2d_cpu_impl impl);

/* im2col + sgemm implementation (conv2d.c); arguments as in conv2d.h. */
int conv2d_im2col_forward(float *y,         /* (co, n, ho, wo) */
                          const float *x,   /* (c, n, h, w) */
                          const float *w,   /* (co, c, k, k) */
                          const float *b,   /* (co) or NULL */
                          const struct conv2d_dims *d);
int conv2d_im2col_backward(float *dx,        /* (c, n, h, w) or NULL */
                           float *dw,        /* (co, c, k, k) or NULL */
                           float *db,        /* (co) or NULL */
                           const float *dy,  /* (co, n, ho, wo) */
                           const float *x,   /* (c, n, h, w) */
                           const float *w,   /* (co, c, k, k) */
                           const struct conv2d_dims *d, int accumulate_dx);

/* oneDNN primitive implementation (conv2d_dnnl.c); arguments as in conv2d.h. Primitives
 * are made once per shape, direction and thread count and kept in a process-wide cache.
 * A direction oneDNN has no optimised direct fp32 implementation for runs on im2col.
 * Returns 0, DR_ERR_NOMEM, or DR_ERR_INTERNAL when a oneDNN call fails (reported). */
int conv2d_dnnl_forward(float *y,         /* (co, n, ho, wo) */
                        const float *x,   /* (c, n, h, w) */
                        const float *w,   /* (co, c, k, k) */
                        const float *b,   /* (co) or NULL */
                        const struct conv2d_dims *d);
int conv2d_dnnl_backward(float *dx,        /* (c, n, h, w) or NULL */
                         float *dw,        /* (co, c, k, k) or NULL */
                         float *db,        /* (co) or NULL */
                         const float *dy,  /* (co, n, ho, wo) */
                         const float *x,   /* (c, n, h, w) */
                         const float *w,   /* (co, c, k, k) */
                         const struct conv2d_dims *d, int accumulate_dx);

/* 1 when oneDNN has an optimised (not reference) direct fp32 implementation of direction
 * dir of shape d on this CPU, 0 otherwise (then conv2d_cpu_choose says im2col). */
int conv2d_dnnl_supported(const struct conv2d_dims *d, enum conv2d_cpu_dir dir);

/* oneDNN's name for the implementation it runs for direction dir of shape d, e.g.
 * "jit:avx512_core"; "" if none. For benchmarks. */
const char *conv2d_dnnl_impl_info(const struct conv2d_dims *d, enum conv2d_cpu_dir dir);

/* Name of the instruction set oneDNN dispatches to on this CPU ("avx512_core", "avx2",
 * ...), as limited by DNNL_MAX_CPU_ISA. */
const char *conv2d_dnnl_isa_name(void);

/* The instruction-set family oneDNN dispatches to on this CPU (as limited by
 * DNNL_MAX_CPU_ISA): 3 AVX-512 (avx512_core or above), 2 AVX2, 1 older x86, 0 other. */
int conv2d_dnnl_isa_level(void);

/* Frees every cached primitive and the shared work buffer; later calls make them again.
 * Safe at any time: it waits for a convolution running in another thread. */
void conv2d_dnnl_release(void);

#endif

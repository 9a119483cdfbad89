/* Convolutions with the batch norm beside them inside, as cuDNN runtime-fusion graphs
 * (cuDNN's backend graph API; the engine's plain convolutions are conv_cuda.cu): the
 * batch norm's apply and ReLU as the prologue of the convolution reading it, its
 * statistics as the epilogue of the convolution writing its input, and in the backward
 * the ReLU's mask and the batch norm's weight gradients as the epilogue of the
 * backward-data convolution; a residual add as the epilogue of the convolution whose
 * output it reads. Three graphs (cuDNN's names in brackets):
 *
 *   CUDA_CONV_FUSED_FWD        y = conv(pro(x), w) [+ r]; optionally sum[k] = sum of
 *                              y[.., k], sqsum[k] = sum of y[.., k]^2 over (n, ho, wo)
 *                              [scale-bias-relu-conv-genstats; with r, "-add" after
 *                              "conv"], where r is res, or relu(res * rscale + rbias) per
 *                              output channel (res_pro: a shortcut's activation
 *                              recomputed from the batch norm's x) ["-scale-bias-relu-add"];
 *   CUDA_CONV_FUSED_WGRAD      dw = the weight gradient of conv(pro(x), w) for dy
 *                              [scale-bias-relu-wgrad];
 *   CUDA_CONV_FUSED_DGRAD_DBN  dz = relu_bwd(dgrad(dy, w) [+ res], bn(x)) with
 *                              bn(x) = (x - mean) * invstd * gamma + beta (res: the
 *                              gradient other readers of the ReLU's output gave it, as a
 *                              shortcut's, added before the mask); and the batch
 *                              norm's weight gradients dscale = sum dz * (x - mean) * invstd,
 *                              dbias = sum dz, with the coefficients of its input gradient
 *                              dx = eq_dy * dz + eq_x * x + eq_b (per channel)
 *                              [dgrad-drelu-dbn-weight, dgrad-add-drelu-dbn-weight];
 *
 * where pro(x) = relu(x * scale + bias) per input channel, or x itself when the call has
 * no prologue. Activations are NHWC in the context's compute type, filters KRSC, as in
 * conv_cuda.cu; per-channel vectors are fp32 on the device except the prologue's scale
 * and bias, which are in the compute type. Sums accumulate in fp32.
 *
 * A graph is built once per (kind, shape, prologue, statistics, type): cuDNN's heuristics
 * list, the first engine configuration whose execution plan finalizes and whose trial
 * execution succeeds; a shape no configuration serves is remembered as refused, and the
 * caller runs the unfused ops instead. Each distinct set of operand addresses keeps its
 * variant pack, so that a call seen before makes one cuDNN call (the execution). Building
 * allocates and may synchronise: it happens in cuda_conv_fused_usable, which the plan's
 * builder calls (backend_ops.supports: conv_nodes_cuda.cu) and each run of a node calls
 * again (finding the graph built, or for new shapes building it in the plan's first run
 * of them, which is eager), never inside graph capture. */
#ifndef DAWNRUN_CONV_FUSED_CUDA_H
#define DAWNRUN_CONV_FUSED_CUDA_H

#include "cuda_internal.h"

enum cuda_conv_fused_kind {
    CUDA_CONV_FUSED_FWD,
    CUDA_CONV_FUSED_WGRAD,
    CUDA_CONV_FUSED_DGRAD_DBN,
    CUDA_CONV_FUSED_KIND_COUNT
};

/* The prologue pro(x) = relu(x * scale + bias): scale, bias (ci) in the compute type. */
struct cuda_conv_prologue {
    const void *scale, *bias;
};

/* One fused call's operands. Which are read or written depends on kind (above); those a
 * kind does not use are NULL.
 *   FWD:       y, x, w; pro optional (NULL: conv(x, w)); sum and sqsum both or neither;
 *              res optional (NULL: nothing added), res_pro only with res.
 *   WGRAD:     dw (the fp32 master gradient, written, not accumulated), x, dy; pro
 *              optional; w gives the filter's shape.
 *   DGRAD_DBN: dz, dscale, dbias, eq_dy, eq_x, eq_b, dy, w, x (the batch norm's input),
 *              mean, invstd, gamma, beta (the batch norm's saved statistics and
 *              parameters); res optional (NULL: none). */
struct cuda_conv_fused_args {
    enum cuda_conv_fused_kind kind;
    const struct conv_attr *a;
    struct tensor *y;              /* FWD: (n, co, ho, wo) */
    float *sum, *sqsum;            /* FWD: (co) device fp32, or NULL */
    struct tensor *dw;             /* WGRAD: (co, ci, k, k) fp32 master gradient */
    struct tensor *dz;             /* DGRAD_DBN: (n, ci, h, w) */
    float *dscale, *dbias;         /* DGRAD_DBN: (ci) device fp32 */
    float *eq_dy, *eq_x, *eq_b;    /* DGRAD_DBN: (ci) device fp32 */
    const struct tensor *x;        /* (n, ci, h, w) */
    const struct tensor *w;        /* (co, ci, k, k) */
    const struct tensor *dy;       /* WGRAD, DGRAD_DBN: (n, co, ho, wo) */
    const struct tensor *res;      /* FWD: (n, co, ho, wo) added to the convolution's
                                      output; DGRAD_DBN: (n, ci, h, w) added to the data
                                      gradient before the mask; or NULL */
    const struct cuda_conv_prologue *res_pro;   /* FWD: res read as relu(res * scale +
                                                   bias), (co) each; NULL: as it is */
    const struct cuda_conv_prologue *pro;   /* FWD, WGRAD: NULL = none */
    const float *mean, *invstd, *gamma, *beta;   /* DGRAD_DBN: (ci) device fp32 */
};

/* 1 when cuDNN runs the fused graph of args (its kind, shapes, prologue, statistics, the
 * context's type): built on the first call for that key, with a trial execution whose
 * outputs go to scratch (the operands' inputs are read, nothing of theirs is written);
 * 0 when no engine configuration serves it (said once per key on stderr, naming the
 * graph, the shape and cuDNN's status); a negative rc on an error (a bad argument, a
 * failed allocation). Not to be called inside graph capture. */
int cuda_conv_fused_usable(struct cuda_ctx *c, const struct cuda_conv_fused_args *args);

/* 1 when the fused graph of args may be used: the support table (fused_support.h)
 * accepts it, its operands are 16-byte aligned, and it was not refused before; nothing is
 * built and cuDNN is not called (a graph the table refuses is remembered as such and
 * counted once, fused_graphs_unsupported). 0 otherwise; a negative rc on an error. Whether
 * cuDNN runs it, only cuda_conv_fused_usable finds out. */
int cuda_conv_fused_plausible(struct cuda_ctx *c, const struct cuda_conv_fused_args *args);

/* Runs the fused graph of args: the outputs the kind names are written. The key must be
 * usable (cuda_conv_fused_usable returned 1); an rc otherwise, and when cuDNN fails. */
int cuda_conv_fused_run(struct cuda_ctx *c, const struct cuda_conv_fused_args *args);

/* Frees every built graph and variant pack of c (at context destruction). */
void cuda_conv_fused_release(struct cuda_ctx *c);

#endif

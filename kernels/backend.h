/* The backend interface: a table of operations plus a context, as a ggml backend is.
 * The engine holds a `struct backend` and calls ops only through it; it never knows
 * whether memory is host or device, fp32 or fp16, CNHW or NHWC.
 *
 * Conventions for every op:
 *   - outputs first, then inputs, then attributes;
 *   - shapes come from the struct tensor arguments; `n` of activation tensors may be
 *     smaller than allocated (the last eval batch), and the op uses the tensor's n;
 *   - backward ops overwrite parameter gradients and overwrite (accumulate = 0) or add
 *     to (accumulate = 1) input gradients; a NULL input gradient is not computed;
 *   - every op returns a dr_status. */
#ifndef DAWNRUN_BACKEND_H
#define DAWNRUN_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "activation.h"
#include "augment.h"
#include "counters.h"
#include "muon.h"
#include "pool.h"
#include "tensor.h"

struct conv_attr {
    int k, stride, pad;
};

struct bn_attr {
    float eps, momentum;
    int splits;               /* ghost batch norm: 0 or 1 = plain; S > 1 = the batch's n
                                 images in S consecutive equal parts of n / S (n must be a
                                 multiple of S), each normalised with its own statistics */
};

/* The step cursor (kernels/plan.h): a TENSOR_I32 of PLAN_CURSOR_LEN values in backend
 * memory, the per-step state a replayed step reads. */
enum { CURSOR_STEP = 0,    /* global training step (indexes the learning-rate table) */
       CURSOR_EPOCH = 1,   /* 0-based epoch (the augmentation draw, parameter freezing) */
       CURSOR_INDEX = 2,   /* batch index: within the epoch, or within the evaluation pass */
       PLAN_CURSOR_LEN = 4 };

/* Most inputs of a concat node (engine/core/graph.h GRAPH_MAX_INPUTS). */
#define PLAN_MAX_CONCAT 8

/* One trainable parameter in a multi-tensor SGD step. It is stepped with
 * lr = (float)((double)lr_table[cursor[CURSOR_STEP]] * lr_scale) and weight decay wd,
 * unless train_epochs > 0 and cursor[CURSOR_EPOCH] >= train_epochs (then left as is). */
struct sgd_item {
    struct tensor *w, *v, *dw;  /* PARAM, the same shape: parameter, momentum, gradient */
    double lr_scale;
    float wd;
    int train_epochs;
};

/* One averaged tensor in a multi-tensor weight-averaging step (param_lerp semantics). */
struct lerp_item {
    struct tensor *avg, *w;
};

struct plan;

struct pool_attr {
    enum pool_kind kind;
    int kh, kw, sh, sw;       /* global pools pass the whole plane */
};

struct backend_ops {
    const char *name;                                 /* "cpu", "cuda" */
    void (*destroy)(void *ctx);
    /* device description for records ("2-core x86-64 CPU", "NVIDIA H200, driver ...") */
    const char *(*device_name)(void *ctx);

    /* memory: tensor_alloc reads kind and shape, sets data, zero-fills */
    int (*tensor_alloc)(void *ctx, struct tensor *t);
    void (*tensor_free)(void *ctx, struct tensor *t);
    int (*tensor_zero)(void *ctx, struct tensor *t);
    /* host is the canonical form of kernels/tensor.h */
    int (*tensor_write)(void *ctx, struct tensor *t, const void *host);
    int (*tensor_read)(void *ctx, void *host, const struct tensor *t);
    int (*synchronize)(void *ctx);

    /* data: x = batch of dataset rows; aug NULL = test batch (normalise only) */
    int (*augment)(void *ctx, struct tensor *x, struct tensor *labels,
                   const struct tensor *images, const struct tensor *image_labels,
                   const struct tensor *rows, const struct augment_params *aug, uint64_t seed,
                   int epoch);

    int (*conv_forward)(void *ctx, struct tensor *y, const struct tensor *x,
                        const struct tensor *w, const struct tensor *b, const struct conv_attr *a);
    int (*conv_backward)(void *ctx, struct tensor *dx, struct tensor *dw, struct tensor *db,
                         const struct tensor *dy, const struct tensor *x, const struct tensor *w,
                         const struct conv_attr *a, int accumulate);

    /* stats: TENSOR_F32 (c) running_mean, running_var; (S * c) save_mean, save_invstd,
     * part s's channel j at s * c + j, S = max(a->splits, 1). With S > 1 the running
     * statistics are updated once with the means over the parts of each part's mean and
     * unbiased variance (the same as S running statistics, one per part, averaged).
     * bn_backward reads S from save_mean (its element count / c). */
    int (*bn_forward_train)(void *ctx, struct tensor *y, struct tensor *save_mean,
                            struct tensor *save_invstd, struct tensor *running_mean,
                            struct tensor *running_var, const struct tensor *x,
                            const struct tensor *gamma, const struct tensor *beta,
                            const struct bn_attr *a);
    int (*bn_forward_eval)(void *ctx, struct tensor *y, const struct tensor *x,
                           const struct tensor *gamma, const struct tensor *beta,
                           const struct tensor *running_mean, const struct tensor *running_var,
                           const struct bn_attr *a);
    int (*bn_backward)(void *ctx, struct tensor *dx, struct tensor *dgamma, struct tensor *dbeta,
                       const struct tensor *dy, const struct tensor *x, const struct tensor *gamma,
                       const struct tensor *save_mean, const struct tensor *save_invstd,
                       int accumulate);

    int (*act_forward)(void *ctx, struct tensor *y, const struct tensor *x, enum act_kind kind,
                       float alpha);
    int (*act_backward)(void *ctx, struct tensor *dx, const struct tensor *dy,
                        const struct tensor *x, enum act_kind kind, float alpha, int accumulate);

    int (*pool_forward)(void *ctx, struct tensor *y, const struct tensor *x,
                        const struct pool_attr *a);
    int (*pool_backward)(void *ctx, struct tensor *dx, const struct tensor *dy,
                         const struct tensor *x, const struct tensor *y, const struct pool_attr *a,
                         int accumulate);

    int (*concat_forward)(void *ctx, struct tensor *y, const struct tensor *const *xs, int count);
    int (*concat_backward)(void *ctx, struct tensor *const *dxs, const struct tensor *dy,
                           int count, const int *accumulate);

    int (*add_forward)(void *ctx, struct tensor *y, const struct tensor *a, const struct tensor *b);
    int (*scale_forward)(void *ctx, struct tensor *y, const struct tensor *x, float s);
    /* dx (=|+=) s * dy; backward of add (s = 1) and scale */
    int (*scaled_copy)(void *ctx, struct tensor *dx, const struct tensor *dy, float s,
                       int accumulate);

    /* y (n, c*h*w, 1, 1) from x (n, c, h, w) */
    int (*flatten_forward)(void *ctx, struct tensor *y, const struct tensor *x);
    int (*flatten_backward)(void *ctx, struct tensor *dx, const struct tensor *dy, int accumulate);

    /* x, y: (n, in, 1, 1), (n, out, 1, 1); w PARAM (out, in, 1, 1); b PARAM (out) or NULL */
    int (*linear_forward)(void *ctx, struct tensor *y, const struct tensor *x,
                          const struct tensor *w, const struct tensor *b);
    int (*linear_backward)(void *ctx, struct tensor *dx, struct tensor *dw, struct tensor *db,
                           const struct tensor *dy, const struct tensor *x, const struct tensor *w,
                           int accumulate);

    /* stats: F32 (2) += (summed loss, correct count); probs: ACT like logits */
    int (*xent_forward)(void *ctx, struct tensor *stats, struct tensor *probs,
                        const struct tensor *logits, const struct tensor *labels, float smoothing);
    int (*xent_backward)(void *ctx, struct tensor *dlogits, const struct tensor *probs,
                         const struct tensor *labels, float smoothing, float scale);

    int (*sgd_update)(void *ctx, struct tensor *w, struct tensor *v, struct tensor *dw, float lr,
                      float wd, float momentum, int nesterov);

    /* Weight averaging, per element: avg += t * (w - avg), computed as
     * avg = (1 - t) * avg + t * w in fp32; then, when copy_back, w = avg. avg and w have
     * the same shape and kind, PARAM or F32; every compute copy of a PARAM tensor that
     * changes is refreshed (avg may be used for evaluation). */
    int (*param_lerp)(void *ctx, struct tensor *avg, struct tensor *w, float t, int copy_back);

    /* --- the plan's own ops (kernels/plan.h) --- */

    /* augment with the rows read from backend memory: batch row i is
     * rows[cursor[CURSOR_INDEX] * stride + i] (i < x->n), the epoch of the draw is
     * cursor[CURSOR_EPOCH]; otherwise as augment. rows I32, cursor I32 (PLAN_CURSOR_LEN). */
    int (*augment_step)(void *ctx, struct tensor *x, struct tensor *labels,
                        const struct tensor *images, const struct tensor *image_labels,
                        const struct tensor *rows, const struct tensor *cursor, int stride,
                        const struct augment_params *aug, uint64_t seed);
    /* sgd_update on every item (struct sgd_item says with which lr and wd, and which are
     * skipped), in one pass where the engine can; lr_table F32 (steps), cursor I32. */
    int (*sgd_multi)(void *ctx, const struct sgd_item *items, int count,
                     const struct tensor *lr_table, const struct tensor *cursor, float momentum,
                     int nesterov);
    /* param_lerp(avg, w, t, copy_back) on every item, in one pass where the engine can. */
    int (*lerp_multi)(void *ctx, const struct lerp_item *items, int count, float t,
                      int copy_back);
    /* cursor[CURSOR_STEP] += 1 and cursor[CURSOR_INDEX] += 1, in backend memory. */
    int (*cursor_advance)(void *ctx, struct tensor *cursor);
    /* Optional (NULL: the engine runs plan_run_each): runs a whole plan, with whatever
     * fusion and replay the backend supports, with plan_run_each's results. Called through
     * kernels/plan.h's plan_compute, which records the backend in the plan. */
    int (*plan_compute)(void *ctx, const struct plan *p);
    /* Optional (NULL: the engine keeps nothing per plan): drops whatever the engine keeps
     * about plan p (an analysis, device buffers, captured graphs), keyed by p's address,
     * because p is being freed and a later plan may sit at that address. plan_free calls
     * it for the backend plan_compute last ran p on. */
    void (*plan_forget)(void *ctx, const struct plan *p);

    /* Optional (NULL when the engine counts nothing, as the CPU engine): the counts since
     * the context was created or last reset (kernels/counters.h); reading them does not
     * wait for the device. A plain copy: `dawnrun bench`'s watching thread reads them
     * while the engine runs (a count may then be a step behind). */
    int (*counters)(void *ctx, struct backend_counters *out);
    void (*counters_reset)(void *ctx);

    /* Optional (NULL when the engine gives the same bits for the same inputs every run
     * anyway, as the CPU engine): on = 1 asks that every op do so (the CUDA engine then
     * takes only the cuDNN algorithms and fused engines documented deterministic), 0 lets
     * the engine take the fastest whatever their determinism (the CUDA engine's default,
     * unless DAWNRUN_CUDA_DETERMINISTIC=1). For callers comparing runs bit for bit (the
     * selfcheck). Call it before the first op: once the engine has chosen algorithms under
     * the other setting it fails with DR_ERR_INTERNAL. */
    int (*set_deterministic)(void *ctx, int on);

    /* --- Muon (kernels/muon.h) --- */

    /* One Muon step on every item (w seen as the matrix (w->n, the rest)) whose
     * train_epochs has not run out at cursor[CURSOR_EPOCH], with
     * lr = (float)((double)lr_table[cursor[CURSOR_STEP]] * lr_scale) and the momentum,
     * Nesterov flag and Newton-Schulz settings given; items as sgd_multi's (their wd is not
     * used), each dw used as scratch (its contents afterwards are the engine's). lr_table
     * F32 (steps), cursor I32. */
    int (*muon_multi)(void *ctx, const struct sgd_item *items, int count,
                      const struct tensor *lr_table, const struct tensor *cursor, float momentum,
                      int nesterov, const struct muon_ns *ns);
};

struct backend {
    const struct backend_ops *ops;
    void *ctx;
};

/* Creates the CPU reference engine (fp32, CNHW, OpenMP over `threads`; 0 = all cores). */
int backend_cpu_create(struct backend *b, int threads);

/* Says whether the CUDA engine can run on `device` here, without printing: DR_OK, or
 * DR_ERR_NODEVICE with the reason in why (e.g. the driver's error string). */
int backend_cuda_probe(int device, char *why, size_t whylen);

/* Creates the CUDA engine on `device`, computing activations in `precision` (an enum
 * precision of kernels/precision.h: fp32, fp16 or bf16; parameters, optimiser state and
 * BN statistics stay fp32). Returns DR_ERR_NODEVICE when no usable GPU (driver missing,
 * no device, cuDNN cannot initialise) or when built without CUDA. */
int backend_cuda_create(struct backend *b, int device, int precision);

/* Releases the backend. Safe on a zeroed struct. */
void backend_destroy(struct backend *b);

#endif

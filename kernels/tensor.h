/* A tensor as the engine sees it: a handle to backend memory plus its logical shape.
 * The engine never dereferences `data`; it reads and writes contents only through the
 * backend's tensor_read / tensor_write, which convert to and from the canonical host form. */
#ifndef DAWNRUN_TENSOR_H
#define DAWNRUN_TENSOR_H

#include <stddef.h>

enum tensor_kind {
    TENSOR_ACT,    /* activation or its gradient: the backend picks dtype and layout */
    TENSOR_PARAM,  /* trainable parameter, its gradient or optimiser state: fp32, backend layout */
    TENSOR_F32,    /* plain fp32 vector (BN statistics, loss accumulators) */
    TENSOR_I32,    /* int32 vector (labels, image indices) */
    TENSOR_U8      /* uint8 bytes (the dataset) */
};

/* Logical shape is always (n, c, h, w); vectors use n = count, c = h = w = 1.
 * Canonical host form: fp32 NCHW for ACT/PARAM/F32 (conv weights (co, c, kh, kw),
 * linear weights (out, in)), int32 for I32, uint8 for U8. */
struct tensor {
    void *data;
    enum tensor_kind kind;
    int n, c, h, w;
};

/* Number of elements n*c*h*w. */
static inline size_t tensor_count(const struct tensor *t)
{
    return (size_t)t->n * (size_t)t->c * (size_t)t->h * (size_t)t->w;
}

/* Whether a and b have the same (n, c, h, w). */
static inline int tensor_same_shape(const struct tensor *a, const struct tensor *b)
{
    return a->n == b->n && a->c == b->c && a->h == b->h && a->w == b->w;
}

#endif

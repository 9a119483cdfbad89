/* Checks of the backend contract (kernels/backend.h) that every engine makes on its op
 * arguments before touching memory, written once. Each reports a mismatch as an
 * internal error (a bug in the caller) with file:line and returns DR_ERR_INTERNAL. */
#ifndef DAWNRUN_BACKEND_CHECK_H
#define DAWNRUN_BACKEND_CHECK_H

#include <stddef.h>

#include "augment.h"
#include "plan.h"

/* y (or dy) of a pool over x with attributes a (kind POOL_MAX or POOL_AVG); *ho, *wo get
 * the output plane size. */
int backend_check_pool(int *ho, int *wo, const struct tensor *y, const struct tensor *x,
                       const struct pool_attr *a);

/* y (or dy) (n, out, 1, 1) = linear of x (n, in, 1, 1) with w (out, in, 1, 1) and the
 * optional bias b (out). */
int backend_check_linear(const struct tensor *y, const struct tensor *x, const struct tensor *w,
                         const struct tensor *b);

/* The gradients of a concat backward: each non-NULL dxs[i] matches dy but in channels; at
 * most one is NULL (an input that needs none, e.g. the image), *missing gets its index
 * (-1 if none) and *missing_c its channel count, inferred from dy. */
int backend_check_concat_grads(int *missing, int *missing_c, struct tensor *const *dxs,
                               const struct tensor *dy, int count);

/* The parts of a train-mode batch norm over x (ghost batch norm, kernels/backend.h):
 * *parts = max(a->splits, 1) in the forward pass (a given), or save_mean's count / x->c
 * in the backward pass (a NULL). Checks that splits is not negative, that x->n is a
 * multiple of the parts and that save_mean and save_invstd hold parts * x->c values. */
int backend_check_bn_parts(int *parts, const struct tensor *x, const struct tensor *save_mean,
                           const struct tensor *save_invstd, const struct bn_attr *a);

/* The arguments of augment (kernels/backend.h): x a (n, 3, 32, 32) batch, labels and rows
 * I32 with at least n entries, images U8 holding whole 3x32x32 images and image_labels U8
 * with a label for each, and aug (NULL: none) with pad in 0..16 and cutout in 0..32.
 * *dataset_rows gets the images' count. The rows' values are the engine's to check (they
 * may live on the device). */
int backend_check_augment(size_t *dataset_rows, const struct tensor *x,
                          const struct tensor *labels, const struct tensor *images,
                          const struct tensor *image_labels, const struct tensor *rows,
                          const struct augment_params *aug);

/* The tensors of param_lerp: avg and w both present, of the same shape and kind, the kind
 * TENSOR_PARAM or TENSOR_F32. */
int backend_check_lerp(const struct tensor *avg, const struct tensor *w);

/* The step cursor of the plan's own ops (op names the op in the message): an I32 tensor
 * of PLAN_CURSOR_LEN values with its data. Its values are the engine's to check (they
 * may live on the device). */
int backend_check_cursor(const struct tensor *cursor, const char *op);

/* The arguments of augment_step beyond augment's: rows I32, the stride at least the batch
 * (x->n), the cursor as backend_check_cursor says. */
int backend_check_augment_step(const struct tensor *x, const struct tensor *rows,
                               const struct tensor *cursor, int stride);

/* The arguments of sgd_multi: count >= 0 items (items non-NULL when count > 0), each with
 * w, v and dw present, PARAM, of one element count, train_epochs >= 0; lr_table F32 with
 * at least one value; the cursor as backend_check_cursor says. */
int backend_check_sgd_multi(const struct sgd_item *items, int count,
                            const struct tensor *lr_table, const struct tensor *cursor);

/* The arguments of lerp_multi: count >= 0 items (items non-NULL when count > 0), each as
 * backend_check_lerp says. */
int backend_check_lerp_multi(const struct lerp_item *items, int count);

#endif

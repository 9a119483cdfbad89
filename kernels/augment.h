/* Training-batch construction: gather images by row, normalise, pad, random crop,
 * random horizontal flip, cutout, exactly as in Page's experiments. The per-image
 * decisions come from augment_draw(), shared by every engine so that all produce the
 * same batch for the same (seed, epoch).
 *
 * Order for one image: normalise each channel ((v - mean) / std on the 0-255 scale);
 * pad by `pad` pixels on each side (reflect: numpy's 'reflect', the edge pixel not
 * repeated; or zero) giving (32 + 2 pad)²; take the 32×32 window at (crop_x, crop_y),
 * each uniform over the 2 pad + 1 positions; mirror left-right when flip; then write 0
 * into the cutout×cutout square whose top-left corner (cut_x, cut_y) is uniform over
 * the (32 - cutout + 1)² positions inside the image. Test batches are only normalised. */
#ifndef DAWNRUN_KERNELS_AUGMENT_H
#define DAWNRUN_KERNELS_AUGMENT_H

#include <stdint.h>

#include "rng.h"

#define AUGMENT_IMAGE 32   /* CIFAR-10 images are 3×32×32 */
#define AUGMENT_CHANNELS 3

/* The largest augment.pad and augment.cutout; the schema's limits of those keys are these
 * (tests/test_config.c checks it). */
#define AUGMENT_MAX_PAD 16
#define AUGMENT_MAX_CUTOUT AUGMENT_IMAGE

/* Channel means and standard deviations on the 0-255 scale (R, G, B). */
#define AUGMENT_MEAN_R 125.31f
#define AUGMENT_MEAN_G 122.95f
#define AUGMENT_MEAN_B 113.87f
#define AUGMENT_STD_R 62.99f
#define AUGMENT_STD_G 62.09f
#define AUGMENT_STD_B 66.70f

enum pad_mode { PAD_REFLECT, PAD_ZERO };

struct augment_params {
    int pad;                /* pixels of padding on each side, 0..AUGMENT_MAX_PAD */
    enum pad_mode pad_mode;
    int crop;               /* 1: random 32×32 crop of the padded image; 0: centre */
    int flip;               /* 1: random horizontal flip with p = 0.5 */
    int cutout;             /* side of the cutout square, 0 = none, <= AUGMENT_MAX_CUTOUT */
    int alternate_flip;     /* with flip: image `row` is mirrored in epoch e when its epoch-0
                               coin (drawn as for flip with epoch 0) XOR (e odd) is 1 */
    int view;               /* 1: a fixed view for test-time augmentation, no randomness:
                               window at (pad + view_dx, pad + view_dy), mirrored when
                               view_flip, no cutout */
    int view_dx, view_dy, view_flip;
};

struct augment_choice {
    int crop_x, crop_y;     /* window origin in the padded image */
    int flip;               /* 0 or 1 */
    int cut_x, cut_y;       /* cutout origin in the 32×32 output, when cutout > 0 */
};

/* The decisions for training-set row `row` in `epoch` (see kernels/rng.h). */
RNG_FN struct augment_choice augment_draw(const struct augment_params *p, uint64_t seed,
                                          uint32_t epoch, uint32_t row)
{
    struct augment_choice a = {p->pad, p->pad, 0, 0, 0};
    if (p->view) {
        a.crop_x = p->pad + p->view_dx;
        a.crop_y = p->pad + p->view_dy;
        a.flip = p->view_flip != 0;
        return a;
    }
    struct rng4 r = rng_draw(seed, RNG_STREAM_AUGMENT, epoch, row, 0);
    if (p->crop) {
        a.crop_x = (int)rng_below(r.v[0], (uint32_t)(2 * p->pad + 1));
        a.crop_y = (int)rng_below(r.v[1], (uint32_t)(2 * p->pad + 1));
    }
    if (p->flip && p->alternate_flip) {
        struct rng4 r0 = epoch == 0 ? r : rng_draw(seed, RNG_STREAM_AUGMENT, 0, row, 0);
        a.flip = (int)(r0.v[2] >> 31) ^ (int)(epoch & 1u);
    } else if (p->flip) {
        a.flip = (int)(r.v[2] >> 31);
    }
    if (p->cutout > 0) {
        struct rng4 s = rng_draw(seed, RNG_STREAM_AUGMENT, epoch, row, 1);
        a.cut_x = (int)rng_below(s.v[0], (uint32_t)(AUGMENT_IMAGE - p->cutout + 1));
        a.cut_y = (int)rng_below(s.v[1], (uint32_t)(AUGMENT_IMAGE - p->cutout + 1));
    }
    return a;
}

/* Builds a batch from dataset rows. p == NULL: no augmentation (test batches).
 * images holds the dataset in CIFAR plane order, 3072 bytes per image. */
void augment_batch_cpu(float *x,                /* (3, n, 32, 32) */
                       int32_t *labels_out,     /* (n) */
                       const uint8_t *images,   /* (rows, 3, 32, 32) */
                       const uint8_t *labels,   /* (rows) */
                       const int32_t *rows,     /* (n) dataset rows of this batch */
                       int n, const struct augment_params *p, uint64_t seed, int epoch);

#endif

/* CPU batch construction: gather dataset rows, normalise, pad, crop, flip, cutout, in
 * exactly the order and with exactly the draws of kernels/augment.h. It is the reference
 * the CUDA twin is compared against, bit for bit.
 *
 * Padding is applied to the normalised image, so zero padding (PAD_ZERO) writes 0, the
 * mean colour, just as cutout does; reflect padding (PAD_REFLECT) mirrors about the edge
 * pixel without repeating it (numpy 'reflect': index -1 reads 1, index 32 reads 30). */
#include "../augment.h"

#include <stddef.h>

/* Image coordinate read for padded coordinate i (0 .. 32 + 2 pad), or -1 for a zero. */
static int augment_source(int i, int pad, enum pad_mode mode)
{
    i -= pad;
    if (i >= 0 && i < AUGMENT_IMAGE) return i;
    if (mode != PAD_REFLECT) return -1;
    return i < 0 ? -i : 2 * (AUGMENT_IMAGE - 1) - i;
}

/* One augmented image into its three planes of the CNHW batch (plane stride `cstride`). */
static void augment_one(float *out, size_t cstride, const uint8_t *img /* (3, 32, 32) */,
                        const float lut[AUGMENT_CHANNELS][256], const struct augment_params *p,
                        const struct augment_choice *a)
{
    const int S = AUGMENT_IMAGE;
    int sx[AUGMENT_IMAGE], sy[AUGMENT_IMAGE];
    for (int k = 0; k < S; k++) {
        sx[k] = augment_source(a->crop_x + (a->flip ? S - 1 - k : k), p->pad, p->pad_mode);
        sy[k] = augment_source(a->crop_y + k, p->pad, p->pad_mode);
    }
    for (int c = 0; c < AUGMENT_CHANNELS; c++) {
        float *plane = out + (size_t)c * cstride;
        const uint8_t *src = img + (size_t)c * S * S;
        for (int y = 0; y < S; y++) {
            float *line = plane + y * S;
            if (sy[y] < 0) {
                for (int x = 0; x < S; x++) line[x] = 0.0f;
                continue;
            }
            const uint8_t *row = src + sy[y] * S;
            for (int x = 0; x < S; x++) line[x] = sx[x] < 0 ? 0.0f : lut[c][row[sx[x]]];
        }
        if (p->cutout > 0 && !p->view)
            for (int y = a->cut_y; y < a->cut_y + p->cutout; y++)
                for (int x = a->cut_x; x < a->cut_x + p->cutout; x++) plane[y * S + x] = 0.0f;
    }
}

void augment_batch_cpu(float *x,                /* (3, n, 32, 32) */
                       int32_t *labels_out,     /* (n) */
                       const uint8_t *images,   /* (rows, 3, 32, 32) */
                       const uint8_t *labels,   /* (rows) */
                       const int32_t *rows,     /* (n) dataset rows of this batch */
                       int n, const struct augment_params *p, uint64_t seed, int epoch)
{
    const size_t img_bytes = (size_t)AUGMENT_CHANNELS * AUGMENT_IMAGE * AUGMENT_IMAGE;
    const size_t plane = (size_t)AUGMENT_IMAGE * AUGMENT_IMAGE;
    const size_t cstride = (size_t)n * plane;
    static const float mean[AUGMENT_CHANNELS] = {AUGMENT_MEAN_R, AUGMENT_MEAN_G, AUGMENT_MEAN_B};
    static const float stdv[AUGMENT_CHANNELS] = {AUGMENT_STD_R, AUGMENT_STD_G, AUGMENT_STD_B};
    float lut[AUGMENT_CHANNELS][256];
    for (int c = 0; c < AUGMENT_CHANNELS; c++)
        for (int v = 0; v < 256; v++) lut[c][v] = ((float)v - mean[c]) / stdv[c];

#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) {
        const uint8_t *img = images + (size_t)rows[i] * img_bytes;
        float *out = x + (size_t)i * plane;
        labels_out[i] = labels[rows[i]];
        if (p == NULL) {
            for (int c = 0; c < AUGMENT_CHANNELS; c++)
                for (size_t k = 0; k < plane; k++)
                    out[c * cstride + k] = lut[c][img[c * plane + k]];
        } else {
            struct augment_choice a = augment_draw(p, seed, (uint32_t)epoch, (uint32_t)rows[i]);
            augment_one(out, cstride, img, (const float(*)[256])lut, p, &a);
        }
    }
}

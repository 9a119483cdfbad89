/* Batch construction on the device: the CUDA twin of kernels/cpu/augment.c. The dataset
 * lives on the GPU as uint8 (rows, 3, 32, 32); one thread per output pixel gathers its
 * image row, draws the image's decisions with the shared augment_draw() (the same
 * Philox counters as the CPU engine), and writes the three channels of the NHWC batch.
 * Values are computed in fp32 exactly as on the CPU ((v - mean) / std, each operation
 * correctly rounded) and rounded once to the activation type, so an fp32 batch equals
 * the CPU batch bit for bit. A row outside the dataset raises FLAG_BAD_ROW (reported at
 * the next synchronisation) and yields a zero image.
 *
 * The batch's place in the epoch is read from the step cursor in device memory (the BATCH
 * node, kernels/plan.h): its rows start at rows[cursor[CURSOR_INDEX] * stride], its draw
 * uses epoch cursor[CURSOR_EPOCH]; a window outside the rows tensor raises FLAG_BAD_ROW
 * as a bad row does. */
#include "cuda_internal.h"

#define PIXELS (AUGMENT_IMAGE * AUGMENT_IMAGE)
#define IMAGE_BYTES (AUGMENT_CHANNELS * PIXELS)

/* Image coordinate read for padded coordinate i, or -1 for a zero (see augment.c). */
__device__ __forceinline__ int augment_source(int i, int pad, int mode)
{
    i -= pad;
    if (i >= 0 && i < AUGMENT_IMAGE) return i;
    if (mode != PAD_REFLECT) return -1;
    return i < 0 ? -i : 2 * (AUGMENT_IMAGE - 1) - i;
}

__device__ __forceinline__ float augment_normalise(uint8_t v, int c)
{
    const float mean = c == 0 ? AUGMENT_MEAN_R : c == 1 ? AUGMENT_MEAN_G : AUGMENT_MEAN_B;
    const float stdv = c == 0 ? AUGMENT_STD_R : c == 1 ? AUGMENT_STD_G : AUGMENT_STD_B;
    return __fdiv_rn(__fsub_rn((float)v, mean), stdv);
}

template <typename T>
__global__ void augment_kernel(T *x,                   /* (n, 32, 32, 3) */
                               int32_t *labels_out,    /* (n) */
                               const uint8_t *images,  /* (dataset_rows, 3, 32, 32) */
                               const uint8_t *labels,  /* (dataset_rows) */
                               const int32_t *rows,    /* (rows_count) */
                               const int32_t *cursor,  /* (PLAN_CURSOR_LEN) */
                               int stride, long rows_count, int n, long dataset_rows,
                               struct augment_params p, int augment, uint64_t seed, int *flags)
{
    const size_t count = (size_t)n * PIXELS;
    /* the batch's rows and epoch from the cursor */
    const long first = (long)cursor[CURSOR_INDEX] * stride;
    const int window_ok = cursor[CURSOR_INDEX] >= 0 && first + n <= rows_count;
    const int epoch = cursor[CURSOR_EPOCH];
    rows += window_ok ? first : 0;
    for (size_t idx = (size_t)blockIdx.x * blockDim.x + threadIdx.x; idx < count;
         idx += (size_t)gridDim.x * blockDim.x) {
        const int i = (int)(idx / PIXELS), pix = (int)(idx % PIXELS);
        const int yy = pix / AUGMENT_IMAGE, xx = pix % AUGMENT_IMAGE;
        const int32_t row = window_ok ? rows[i] : -1;
        T *out = x + idx * AUGMENT_CHANNELS;
        if (row < 0 || row >= dataset_rows) {
            flags[FLAG_BAD_ROW] = 1;
            for (int c = 0; c < AUGMENT_CHANNELS; c++) out[c] = cuda_from_f<T>(0.0f);
            if (pix == 0) labels_out[i] = 0;
            continue;
        }
        if (pix == 0) labels_out[i] = labels[row];
        const uint8_t *img = images + (size_t)row * IMAGE_BYTES;
        int src = pix;   /* offset in a plane, or -1 for a zero */
        if (augment) {
            const struct augment_choice a = augment_draw(&p, seed, (uint32_t)epoch, (uint32_t)row);
            const int sx = augment_source(a.crop_x + (a.flip ? AUGMENT_IMAGE - 1 - xx : xx), p.pad,
                                          (int)p.pad_mode);
            const int sy = augment_source(a.crop_y + yy, p.pad, (int)p.pad_mode);
            const int cut = p.cutout > 0 && !p.view && yy >= a.cut_y &&
                            yy < a.cut_y + p.cutout && xx >= a.cut_x && xx < a.cut_x + p.cutout;
            src = (sx < 0 || sy < 0 || cut) ? -1 : sy * AUGMENT_IMAGE + sx;
        }
        for (int c = 0; c < AUGMENT_CHANNELS; c++)
            out[c] = cuda_from_f<T>(src < 0 ? 0.0f
                                            : augment_normalise(img[c * PIXELS + src], c));
    }
}

int cuda_augment_step(void *ctx, struct tensor *x, struct tensor *labels,
                      const struct tensor *images, const struct tensor *image_labels,
                      const struct tensor *rows, const struct tensor *cursor, int stride,
                      const struct augment_params *aug, uint64_t seed)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    const size_t count = (size_t)x->n * PIXELS;
    const size_t dataset_rows = tensor_count(images) / IMAGE_BYTES;
    struct augment_params p = {0, PAD_REFLECT, 0, 0, 0, 0, 0, 0, 0, 0};
    if (count == 0) goto cleanup;
    if (aug) p = *aug;
    TRY(cuda_enter(c));
    CUDA_DISPATCH(c->dt, T,
                  augment_kernel<T><<<cuda_grid(c, count), CUDA_THREADS, 0, c->stream>>>(
                      (T *)x->data, (int32_t *)labels->data, (const uint8_t *)images->data,
                      (const uint8_t *)image_labels->data, (const int32_t *)rows->data,
                      (const int32_t *)cursor->data, stride, (long)tensor_count(rows), x->n,
                      (long)dataset_rows, p, aug != NULL, seed, c->flags_dev));
    /* reads the cursor, n rows (int32), n images (IMAGE_BYTES u8) and n labels (u8);
     * writes x (n, 3, 32, 32) in the compute type and n labels (int32) */
    CHECK_LAUNCH(c, PLAN_CURSOR_LEN * sizeof(int32_t) +
                        (size_t)x->n * (sizeof(int32_t) + IMAGE_BYTES + 1),
                 tensor_count(x) * cuda_dt_size(c->dt) + (size_t)x->n * sizeof(int32_t));
cleanup:
    return rc;
}

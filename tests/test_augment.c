/* augment_batch_cpu and augment_draw (kernels/augment.h) against known answers made by an
 * independent Python implementation (tests/vectors/gen_vectors.py), and the properties
 * of each augmentation step on their own. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernels/augment.h"
#include "vectors/augment_vectors.h"

#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define S AUGMENT_IMAGE
#define PLANE (S * S)
#define IMG_BYTES (AUGMENT_CHANNELS * PLANE)
#define ROWS 2000   /* synthetic dataset size for the property tests */

static const float MEAN[3] = {AUGMENT_MEAN_R, AUGMENT_MEAN_G, AUGMENT_MEAN_B};
static const float STDV[3] = {AUGMENT_STD_R, AUGMENT_STD_G, AUGMENT_STD_B};

static float norm(uint8_t v, int c)
{
    return ((float)v - MEAN[c]) / STDV[c];
}

/* The two synthetic images of gen_vectors.py: 0 = ramps, 1 = LCG noise. */
static void synthetic_image(uint8_t *img /* (3, 32, 32) */, int which)
{
    uint32_t s = 2463534242u;
    for (int c = 0; c < 3; c++)
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) {
                uint8_t v;
                if (which == 0) {
                    v = (uint8_t)((c * 80 + y * 7 + x * 3 + (x * y) % 5) & 255);
                } else {
                    s = s * 1664525u + 1013904223u;
                    v = (uint8_t)(s >> 24);
                }
                img[c * PLANE + y * S + x] = v;
            }
}

static uint64_t fnv1a64(const float *x, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const unsigned char *b = (const unsigned char *)x;
    for (size_t i = 0; i < n * sizeof(float); i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* Item i of a (3, n, 32, 32) batch: x[(c * n + i) * 1024 + y * 32 + x]. */
static float at(const float *x, int n, int i, int c, int y, int xx)
{
    return x[((size_t)c * n + i) * PLANE + y * S + xx];
}

static void test_vectors(const uint8_t *images, const uint8_t *labels)
{
    struct augment_params page = {4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0}, wide = {16, PAD_ZERO, 1, 1, 5, 0, 0, 0, 0, 0};
    for (int i = 0; i < COUNT(VEC_CHOICE); i++) {
        const struct vec_choice *v = &VEC_CHOICE[i];
        struct augment_choice a =
            augment_draw(v->pad16 ? &wide : &page, v->seed, (uint32_t)v->epoch, (uint32_t)v->row);
        CHECK(a.crop_x == v->crop_x && a.crop_y == v->crop_y && a.flip == v->flip &&
              a.cut_x == v->cut_x && a.cut_y == v->cut_y);
    }

    float full[3 * 2 * PLANE];
    int32_t lab[3];
    augment_batch_cpu(full, lab, images, labels, VEC_FULL_ROWS, 2, &page, VEC_FULL_SEED,
                      VEC_FULL_EPOCH);
    int mismatches = 0;
    for (int k = 0; k < COUNT(VEC_FULL); k++) {
        uint32_t bits;
        memcpy(&bits, &full[k], sizeof bits);
        if (bits != VEC_FULL[k] && mismatches++ < 5)
            fprintf(stderr, "full vector: element %d (c %d, item %d, y %d, x %d) is %08x, "
                            "expected %08x\n",
                    k, k / (2 * PLANE), k / PLANE % 2, k % PLANE / S, k % S, bits, VEC_FULL[k]);
    }
    CHECK(mismatches == 0);
    CHECK(lab[0] == labels[1] && lab[1] == labels[0]);

    const struct augment_params sets[] = {
        {4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0}, {4, PAD_ZERO, 1, 1, 8, 0, 0, 0, 0, 0}, {2, PAD_REFLECT, 1, 0, 0, 0, 0, 0, 0, 0},
        {16, PAD_REFLECT, 1, 1, 5, 0, 0, 0, 0, 0}};
    float x[3 * 3 * PLANE];
    for (int i = 0; i < COUNT(VEC_SUM); i++) {
        const struct vec_sum *v = &VEC_SUM[i];
        const struct augment_params *p = v->params < COUNT(sets) ? &sets[v->params] : NULL;
        augment_batch_cpu(x, lab, images, labels, VEC_SUM_ROWS, 3, p, v->seed, v->epoch);
        CHECK(fnv1a64(x, COUNT(x)) == v->fnv);
    }
}

/* Fills a dataset of ROWS images: synthetic image (row % 2) with row-dependent labels. */
static void make_dataset(uint8_t *images, uint8_t *labels)
{
    for (int r = 0; r < ROWS; r++) {
        synthetic_image(images + (size_t)r * IMG_BYTES, r % 2);
        labels[r] = (uint8_t)(r * 7 % 10);
    }
}

static void test_identity_and_test_batch(const uint8_t *images, const uint8_t *labels)
{
    enum { N = 64 };
    int32_t rows[N], lab[N];
    float *x = malloc(sizeof(float) * 3 * N * PLANE);
    CHECK(x != NULL);
    if (!x) return;
    for (int i = 0; i < N; i++) rows[i] = (i * 37 + 5) % ROWS;
    /* no augmentation at all, centre crop of a padded image, and the test batch are
     * each exactly the normalised input */
    const struct augment_params none = {0, PAD_REFLECT, 0, 0, 0, 0, 0, 0, 0, 0};
    const struct augment_params centre = {4, PAD_ZERO, 0, 0, 0, 0, 0, 0, 0, 0};
    const struct augment_params *ps[3] = {&none, &centre, NULL};
    for (int k = 0; k < 3; k++) {
        for (int e = 0; e < 2; e++) {
            augment_batch_cpu(x, lab, images, labels, rows, N, ps[k], 1234, e);
            int exact = 1, lab_ok = 1;
            for (int i = 0; i < N; i++) {
                const uint8_t *img = images + (size_t)rows[i] * IMG_BYTES;
                lab_ok &= lab[i] == labels[rows[i]];
                for (int c = 0; c < 3; c++)
                    for (int y = 0; y < S; y++)
                        for (int xx = 0; xx < S; xx++)
                            exact &= at(x, N, i, c, y, xx) == norm(img[c * PLANE + y * S + xx], c);
            }
            CHECK(exact);
            CHECK(lab_ok);
        }
    }
    free(x);
}

static void test_flip(const uint8_t *images, const uint8_t *labels)
{
    enum { N = 64 };
    const struct augment_params p = {0, PAD_REFLECT, 0, 1, 0, 0, 0, 0, 0, 0};
    int32_t rows[N], lab[N];
    float *x = malloc(sizeof(float) * 3 * N * PLANE);
    CHECK(x != NULL);
    if (!x) return;
    for (int i = 0; i < N; i++) rows[i] = i;
    augment_batch_cpu(x, lab, images, labels, rows, N, &p, 77, 2);
    int flipped = 0, ok = 1;
    for (int i = 0; i < N; i++) {
        struct augment_choice a = augment_draw(&p, 77, 2, (uint32_t)rows[i]);
        const uint8_t *img = images + (size_t)rows[i] * IMG_BYTES;
        flipped += a.flip;
        for (int c = 0; c < 3; c++)
            for (int y = 0; y < S; y++)
                for (int xx = 0; xx < S; xx++) {
                    int sx = a.flip ? S - 1 - xx : xx;
                    ok &= at(x, N, i, c, y, xx) == norm(img[c * PLANE + y * S + sx], c);
                }
    }
    CHECK(ok);
    CHECK(flipped > 16 && flipped < 48);   /* p = 0.5 over 64 images */
    free(x);
}

static void test_cutout(const uint8_t *images, const uint8_t *labels)
{
    enum { N = 200, CUT = 8 };
    const struct augment_params p = {0, PAD_REFLECT, 0, 0, CUT, 0, 0, 0, 0, 0};
    int32_t rows[N], lab[N];
    float *x = malloc(sizeof(float) * 3 * N * PLANE);
    CHECK(x != NULL);
    if (!x) return;
    for (int i = 0; i < N; i++) rows[i] = i * 3;
    augment_batch_cpu(x, lab, images, labels, rows, N, &p, 5, 0);
    int ok = 1, inside = 1, lo = 0, hi = 0, zeros_ok = 1;
    for (int i = 0; i < N; i++) {
        struct augment_choice a = augment_draw(&p, 5, 0, (uint32_t)rows[i]);
        inside &= a.cut_x >= 0 && a.cut_y >= 0 && a.cut_x + CUT <= S && a.cut_y + CUT <= S;
        lo += a.cut_x == 0 || a.cut_y == 0;
        hi += a.cut_x == S - CUT || a.cut_y == S - CUT;
        /* inside the square: 0; outside: the normalised pixel (never exactly 0) */
        const uint8_t *img = images + (size_t)rows[i] * IMG_BYTES;
        for (int c = 0; c < 3; c++) {
            int zeros = 0;
            for (int y = 0; y < S; y++)
                for (int xx = 0; xx < S; xx++) {
                    float v = at(x, N, i, c, y, xx);
                    int in = xx >= a.cut_x && xx < a.cut_x + CUT && y >= a.cut_y &&
                             y < a.cut_y + CUT;
                    ok &= in ? v == 0.0f : v == norm(img[c * PLANE + y * S + xx], c);
                    zeros += v == 0.0f;
                }
            zeros_ok &= zeros == CUT * CUT;
        }
    }
    CHECK(ok);
    CHECK(zeros_ok);
    CHECK(inside);
    CHECK(lo > 0 && hi > 0);   /* the extreme origins occur (25 per axis, 200 draws) */
    free(x);
}

/* Every one of the (2 pad + 1)² crop positions occurs, and only those. */
static void test_crop_coverage(void)
{
    const struct augment_params p = {4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0};
    int seen[9][9] = {{0}}, bad = 0, covered = 0;
    for (uint32_t row = 0; row < 5000; row++) {
        struct augment_choice a = augment_draw(&p, 31337, 1, row);
        if (a.crop_x < 0 || a.crop_x > 8 || a.crop_y < 0 || a.crop_y > 8) bad++;
        else seen[a.crop_y][a.crop_x]++;
    }
    for (int y = 0; y < 9; y++)
        for (int xx = 0; xx < 9; xx++) covered += seen[y][xx] > 0;
    CHECK(bad == 0);
    CHECK(covered == 81);
    /* crop off: centre; flip off: never flipped; cutout off: origin 0 */
    const struct augment_params q = {4, PAD_REFLECT, 0, 0, 0, 0, 0, 0, 0, 0};
    int centre = 1;
    for (uint32_t row = 0; row < 1000; row++) {
        struct augment_choice a = augment_draw(&q, 31337, 1, row);
        centre &= a.crop_x == 4 && a.crop_y == 4 && a.flip == 0 && a.cut_x == 0 && a.cut_y == 0;
    }
    CHECK(centre);
}

/* Padding: reflect reads numpy 'reflect' indices, zero writes 0, checked at the extreme
 * crops (origin 0 and 2 pad) found among the draws. */
static void test_padding(const uint8_t *images, const uint8_t *labels)
{
    const int pad = 4;
    for (int mode = 0; mode < 2; mode++) {
        const struct augment_params p = {pad, mode ? PAD_ZERO : PAD_REFLECT, 1, 0, 0, 0, 0, 0, 0, 0};
        int checked = 0, ok = 1;
        for (int32_t row = 0; row < ROWS && checked < 40; row++) {
            struct augment_choice a = augment_draw(&p, 8, 0, (uint32_t)row);
            if (a.crop_x != 0 && a.crop_x != 2 * pad && a.crop_y != 0 && a.crop_y != 2 * pad)
                continue;
            float x[3 * PLANE];
            int32_t lab;
            augment_batch_cpu(x, &lab, images, labels, &row, 1, &p, 8, 0);
            const uint8_t *img = images + (size_t)row * IMG_BYTES;
            for (int c = 0; c < 3; c++)
                for (int y = 0; y < S; y++)
                    for (int xx = 0; xx < S; xx++) {
                        int iy = a.crop_y + y - pad, ix = a.crop_x + xx - pad;
                        int out = iy < 0 || iy >= S || ix < 0 || ix >= S;
                        float want;
                        if (out && mode) {
                            want = 0.0f;
                        } else {
                            if (iy < 0) iy = -iy;
                            if (iy >= S) iy = 2 * S - 2 - iy;
                            if (ix < 0) ix = -ix;
                            if (ix >= S) ix = 2 * S - 2 - ix;
                            want = norm(img[c * PLANE + iy * S + ix], c);
                        }
                        ok &= x[c * PLANE + y * S + xx] == want;
                    }
            checked++;
        }
        CHECK(checked == 40);
        CHECK(ok);
    }
    /* numpy 'reflect' by example: row 0 of the image padded by 1 on the left reads
     * pixel 1, not pixel 0; on the right, pixel 30 */
    uint8_t img[IMG_BYTES], lab8 = 3;
    for (int k = 0; k < IMG_BYTES; k++) img[k] = (uint8_t)(k % S);   /* value = column */
    const struct augment_params p1 = {1, PAD_REFLECT, 1, 0, 0, 0, 0, 0, 0, 0};
    int found_left = 0, found_right = 0;
    for (uint32_t e = 0; e < 200 && !(found_left && found_right); e++) {
        struct augment_choice a = augment_draw(&p1, 3, e, 0);
        float x[3 * PLANE];
        int32_t row = 0, lab;
        augment_batch_cpu(x, &lab, img, &lab8, &row, 1, &p1, 3, (int)e);
        CHECK(lab == 3);
        if (a.crop_x == 0) {
            found_left = 1;
            CHECK(x[0] == norm(1, 0) && x[1] == norm(0, 0));
        } else if (a.crop_x == 2) {
            found_right = 1;
            CHECK(x[S - 1] == norm(30, 0) && x[S - 2] == norm(31, 0));
        }
    }
    CHECK(found_left && found_right);
}

/* Choices depend on the epoch and the seed; a batch equals its items built one by one
 * (layout and thread-count independence). */
static void test_epochs_and_batches(const uint8_t *images, const uint8_t *labels)
{
    const struct augment_params p = {4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0};
    int diff_epoch = 0, diff_seed = 0;
    for (uint32_t row = 0; row < 100; row++) {
        struct augment_choice a = augment_draw(&p, 11, 0, row), b = augment_draw(&p, 11, 1, row),
                              c = augment_draw(&p, 12, 0, row);
        diff_epoch += memcmp(&a, &b, sizeof a) != 0;
        diff_seed += memcmp(&a, &c, sizeof a) != 0;
    }
    CHECK(diff_epoch > 90);
    CHECK(diff_seed > 90);

    enum { N = 37 };
    int32_t rows[N], lab[N];
    float *x = malloc(sizeof(float) * 3 * N * PLANE), *again = malloc(sizeof(float) * 3 * N * PLANE);
    CHECK(x && again);
    if (x && again) {
        for (int i = 0; i < N; i++) rows[i] = (i * 911) % ROWS;
        augment_batch_cpu(x, lab, images, labels, rows, N, &p, 21, 4);
        augment_batch_cpu(again, lab, images, labels, rows, N, &p, 21, 4);
        CHECK(memcmp(x, again, sizeof(float) * 3 * N * PLANE) == 0);
        int same = 1;
        for (int i = 0; i < N; i++) {
            float one[3 * PLANE];
            int32_t l1;
            augment_batch_cpu(one, &l1, images, labels, &rows[i], 1, &p, 21, 4);
            same &= l1 == lab[i];
            for (int c = 0; c < 3; c++)
                same &= memcmp(one + c * PLANE, x + ((size_t)c * N + i) * PLANE,
                               sizeof(float) * PLANE) == 0;
        }
        CHECK(same);
        augment_batch_cpu(again, lab, images, labels, rows, N, &p, 21, 5);
        CHECK(memcmp(x, again, sizeof(float) * 3 * N * PLANE) != 0);
    }
    free(x);
    free(again);
}

/* Alternating flip: epoch 0 is the ordinary coin, and every later epoch mirrors each
 * image exactly when (its epoch-0 coin) XOR (epoch odd); crops are unaffected. */
static void test_alternate_flip(void)
{
    const struct augment_params plain = {4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0};
    const struct augment_params alt = {4, PAD_REFLECT, 1, 1, 8, 1, 0, 0, 0, 0};
    const struct augment_params noflip = {4, PAD_REFLECT, 1, 0, 8, 1, 0, 0, 0, 0};
    int rule = 1, crops = 1, first = 1, none = 1, changes = 0, heads = 0;
    for (uint32_t row = 0; row < 500; row++) {
        int coin = augment_draw(&plain, 99, 0, row).flip;
        heads += coin;
        first &= augment_draw(&alt, 99, 0, row).flip == coin;
        int prev = coin;
        for (uint32_t e = 1; e < 7; e++) {
            struct augment_choice a = augment_draw(&alt, 99, e, row);
            struct augment_choice b = augment_draw(&plain, 99, e, row);
            rule &= a.flip == (coin ^ (int)(e & 1u));
            crops &= a.crop_x == b.crop_x && a.crop_y == b.crop_y && a.cut_x == b.cut_x &&
                     a.cut_y == b.cut_y;
            changes += a.flip != prev;
            prev = a.flip;
            none &= augment_draw(&noflip, 99, e, row).flip == 0;
        }
    }
    CHECK(first);
    CHECK(rule);
    CHECK(crops);
    CHECK(none);                         /* alternate_flip without flip does nothing */
    CHECK(changes == 500 * 6);           /* every image changes side every epoch */
    CHECK(heads > 200 && heads < 300);   /* the epoch-0 coin is fair */
}

/* A fixed view (test-time augmentation): no randomness, the window shifted by
 * (view_dx, view_dy) in the reflect-padded image, mirrored on request, never a cutout;
 * checked pixel by pixel against a direct construction. */
static void test_views(const uint8_t *images, const uint8_t *labels)
{
    enum { N = 16 };
    int32_t rows[N], lab[N];
    float *x = malloc(sizeof(float) * 3 * N * PLANE);
    CHECK(x != NULL);
    if (!x) return;
    for (int i = 0; i < N; i++) rows[i] = (i * 53 + 3) % ROWS;
    const int shifts[3][2] = {{0, 0}, {-1, -1}, {1, 1}};
    for (int s = 0; s < 3; s++)
        for (int f = 0; f < 2; f++) {
            struct augment_params p = {1, PAD_REFLECT, 1, 1, 8, 1, 1, 0, 0, 0};
            p.view_dx = shifts[s][0];
            p.view_dy = shifts[s][1];
            p.view_flip = f;
            int same_draw = 1, ok = 1;
            for (uint32_t e = 0; e < 3; e++) {
                struct augment_choice a = augment_draw(&p, 5, e, 17);
                same_draw &= a.crop_x == 1 + p.view_dx && a.crop_y == 1 + p.view_dy &&
                             a.flip == f;
            }
            augment_batch_cpu(x, lab, images, labels, rows, N, &p, 5, 3);
            for (int i = 0; i < N; i++) {
                const uint8_t *img = images + (size_t)rows[i] * IMG_BYTES;
                for (int c = 0; c < 3; c++)
                    for (int y = 0; y < S; y++)
                        for (int xx = 0; xx < S; xx++) {
                            int ox = f ? S - 1 - xx : xx;      /* column before the mirror */
                            int sx = ox + p.view_dx, sy = y + p.view_dy;
                            sx = sx < 0 ? -sx : sx > S - 1 ? 2 * (S - 1) - sx : sx;
                            sy = sy < 0 ? -sy : sy > S - 1 ? 2 * (S - 1) - sy : sy;
                            ok &= at(x, N, i, c, y, xx) == norm(img[c * PLANE + sy * S + sx], c);
                        }
            }
            CHECK(same_draw);
            CHECK(ok);
        }
    free(x);
}

int main(void)
{
    uint8_t *images = malloc((size_t)ROWS * IMG_BYTES), *labels = malloc(ROWS);
    CHECK(images && labels);
    if (!images || !labels) return check_finish("test_augment");
    make_dataset(images, labels);
    test_vectors(images, labels);
    test_identity_and_test_batch(images, labels);
    test_flip(images, labels);
    test_cutout(images, labels);
    test_crop_coverage();
    test_padding(images, labels);
    test_epochs_and_batches(images, labels);
    test_alternate_flip();
    test_views(images, labels);
    free(images);
    free(labels);
    return check_finish("test_augment");
}

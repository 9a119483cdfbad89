/* The CIFAR-10 dataset in memory, read from the official binary batches
 * (data_batch_1..5.bin, test_batch.bin: 3073-byte records, a label byte then 1024 red,
 * 1024 green and 1024 blue bytes, each plane 32×32 row-major). See docs/data.md. */
#ifndef DAWNRUN_DATA_H
#define DAWNRUN_DATA_H

#include <stdint.h>

#define CIFAR10_CLASSES 10
#define CIFAR10_IMAGE_BYTES 3072                     /* 3 × 32 × 32 */
#define CIFAR10_RECORD_BYTES (1 + CIFAR10_IMAGE_BYTES)
#define CIFAR10_TRAIN_FILES 5                        /* data_batch_1.bin .. _5.bin */
#define CIFAR10_DEFAULT_DIR "data/cifar-10-batches-bin"

struct dataset {
    uint8_t *images;   /* (count, 3, 32, 32) CIFAR plane order, owned */
    uint8_t *labels;   /* (count) 0..9, owned */
    int count;
};

/* Loads the training set (data_batch_1..5.bin, in that order) into *train and the test
 * set (test_batch.bin) into *test from directory `dir`; either pointer may be NULL to
 * skip that split. A subset > 0 keeps the first k records of the split; 0 keeps all;
 * more than the split holds is an error. Every problem is reported to stderr as
 * "dawnrun: FILE: message" naming the file (missing directory or file, empty file, size
 * not a multiple of 3073 bytes, label > 9 with its record index, short read).
 * Returns DR_OK, DR_ERR_DATA or DR_ERR_NOMEM; on failure both outputs are left empty. */
int cifar10_load(struct dataset *train, struct dataset *test, const char *dir,
                 int train_subset, int test_subset);

/* Releases a dataset's arrays and zeroes it. Safe on a zeroed struct or NULL. */
void dataset_free(struct dataset *d);

/* The data directory to use: `configured` when non-NULL and non-empty, else
 * $DAWNRUN_DATA when set and non-empty, else CIFAR10_DEFAULT_DIR. Never NULL; the
 * result points into `configured`, the environment or a string literal. */
const char *cifar10_default_dir(const char *configured);

#endif

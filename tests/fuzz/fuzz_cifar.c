/* Fuzz target: the CIFAR-10 loader (cifar10_load). Input bytes: [0] which file gets the
 * content (0-4: data_batch_1..5.bin, 5: test_batch.bin), [1] flags (bit 0: pad the
 * content with zero bytes to whole 3073-byte records, bit 1: skip the training split, bit
 * 2: skip the test split, bit 3: leave the file out), [2] and [3] the training and test
 * subsets, then the content. The other five files hold one valid record each. A load
 * that succeeds must give the promised counts and labels 0-9; one that fails must say
 * DR_ERR_DATA (or NOMEM) and leave both outputs empty. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine/core/data.h"
#include "base/status.h"
#include "fuzz.h"

static const char *names[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                               "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
static const char *dir;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    dir = fuzz_dir("cifar");
    return 0;
}

static void check_split(const struct dataset *d, int subset, int records)
{
    FUZZ_ASSERT(d->count > 0 && d->images && d->labels);
    FUZZ_ASSERT(subset > 0 ? d->count == subset : d->count == records);
    for (int i = 0; i < d->count; i++) FUZZ_ASSERT(d->labels[i] < CIFAR10_CLASSES);
    /* every byte of every image is readable (ASan checks the bounds) */
    unsigned sum = 0;
    for (size_t k = 0; k < (size_t)d->count * CIFAR10_IMAGE_BYTES; k++) sum += d->images[k];
    (void)sum;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    int which = data[0] % 6, flags = data[1], train_subset = (int8_t)data[2] % 8,
        test_subset = (int8_t)data[3] % 8;
    const uint8_t *content = data + 4;
    size_t n = size - 4, padded = n;
    if (flags & 1) padded = (n + CIFAR10_RECORD_BYTES - 1) / CIFAR10_RECORD_BYTES *
                            CIFAR10_RECORD_BYTES;
    unsigned char *buf = calloc(padded ? padded : 1, 1);
    unsigned char record[CIFAR10_RECORD_BYTES];
    if (!buf) return 0;
    memcpy(buf, content, n);
    char path[600];
    int records[6];
    for (int f = 0; f < 6; f++) {
        fuzz_path(path, sizeof(path), dir, names[f]);
        if (f == which) {
            if (flags & 8) unlink(path);
            else fuzz_write(path, buf, padded);
            records[f] = (int)(padded / CIFAR10_RECORD_BYTES);
        } else {
            memset(record, 0, sizeof(record));
            record[0] = (unsigned char)f;
            fuzz_write(path, record, sizeof(record));
            records[f] = 1;
        }
    }
    free(buf);

    struct dataset train, test;
    memset(&train, 0xa5, sizeof(train));
    memset(&test, 0xa5, sizeof(test));
    struct dataset *tp = (flags & 2) ? NULL : &train, *vp = (flags & 4) ? NULL : &test;
    int rc = cifar10_load(tp, vp, dir, train_subset, test_subset);
    if (rc == DR_OK) {
        int train_records = 0;
        for (int f = 0; f < 5; f++) train_records += records[f];
        if (tp) check_split(&train, train_subset, train_records);
        if (vp) check_split(&test, test_subset, records[5]);
    } else {
        FUZZ_ASSERT(rc == DR_ERR_DATA || rc == DR_ERR_NOMEM);
        if (tp) FUZZ_ASSERT(train.count == 0 && train.images == NULL && train.labels == NULL);
        if (vp) FUZZ_ASSERT(test.count == 0 && test.images == NULL && test.labels == NULL);
    }
    if (tp) dataset_free(&train);
    if (vp) dataset_free(&test);
    return 0;
}

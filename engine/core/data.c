/* CIFAR-10 binary loader with validation that names the offending file (engine/core/data.h). */
#include "data.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/status.h"

#define DATA_PATH_MAX 4096
#define DATA_CHUNK_RECORDS 1024   /* records per fread */

/* Reports "dawnrun: FILE: message" (dr_vreport) and returns DR_ERR_DATA. */
__attribute__((format(printf, 2, 3))) static int data_error(const char *file, const char *fmt,
                                                            ...)
{
    va_list ap;
    va_start(ap, fmt);
    dr_vreport(DR_ERR_DATA, __FILE__, __LINE__, file, fmt, ap);
    va_end(ap);
    return DR_ERR_DATA;
}

/* A split's files: their paths and record counts (found by data_scan). */
struct data_files {
    int n;
    char path[CIFAR10_TRAIN_FILES][DATA_PATH_MAX];
    long records[CIFAR10_TRAIN_FILES];
    long total;
};

/* Checks that each file exists, is non-empty and holds whole records. */
static int data_scan(struct data_files *f, const char *dir, const char *const *names, int n)
{
    f->n = n;
    f->total = 0;
    for (int i = 0; i < n; i++) {
        struct stat st;
        int len = snprintf(f->path[i], DATA_PATH_MAX, "%s/%s", dir, names[i]);
        if (len < 0 || len >= DATA_PATH_MAX) return data_error(dir, "path too long");
        if (stat(f->path[i], &st) != 0)
            return data_error(f->path[i], "cannot open: %s (expected the CIFAR-10 binary "
                                          "batches data_batch_1..5.bin and test_batch.bin)",
                              strerror(errno));
        if (!S_ISREG(st.st_mode)) return data_error(f->path[i], "not a regular file");
        if (st.st_size == 0)
            return data_error(f->path[i], "empty file (expected %d-byte records)",
                              CIFAR10_RECORD_BYTES);
        if (st.st_size % CIFAR10_RECORD_BYTES != 0)
            return data_error(f->path[i],
                              "size %lld bytes is not a multiple of the %d-byte record "
                              "(1 label byte + %d pixel bytes); truncated or not CIFAR-10 binary?",
                              (long long)st.st_size, CIFAR10_RECORD_BYTES, CIFAR10_IMAGE_BYTES);
        f->records[i] = (long)(st.st_size / CIFAR10_RECORD_BYTES);
        if (f->records[i] > INT_MAX - f->total)
            return data_error(f->path[i], "too many records (%ld)", f->records[i]);
        f->total += f->records[i];
    }
    return DR_OK;
}

/* Reads the first `count` records of `path` into images/labels, checking every label;
 * record indices in messages count from the start of the file. */
static int data_read_file(uint8_t *images /* (count, 3, 32, 32) */, uint8_t *labels /* (count) */,
                          const char *path, long count, uint8_t *buf /* (chunk, 3073) */)
{
    int rc = DR_OK;
    FILE *fp = fopen(path, "rb");
    if (fp == NULL) {
        rc = data_error(path, "cannot open: %s", strerror(errno));
        goto cleanup;
    }
    for (long done = 0; done < count;) {
        long want = count - done < DATA_CHUNK_RECORDS ? count - done : DATA_CHUNK_RECORDS;
        size_t got = fread(buf, CIFAR10_RECORD_BYTES, (size_t)want, fp);
        if (got != (size_t)want) {
            if (ferror(fp))
                rc = data_error(path, "read error at record %ld: %s", done + (long)got,
                                strerror(errno));
            else
                rc = data_error(path, "short read: file ended at record %ld of %ld",
                                done + (long)got, count);
            goto cleanup;
        }
        for (long r = 0; r < want; r++) {
            const uint8_t *rec = buf + r * CIFAR10_RECORD_BYTES;
            if (rec[0] >= CIFAR10_CLASSES) {
                rc = data_error(path, "record %ld: label %d is not a CIFAR-10 class (0-9)",
                                done + r, rec[0]);
                goto cleanup;
            }
            labels[done + r] = rec[0];
            memcpy(images + (size_t)(done + r) * CIFAR10_IMAGE_BYTES, rec + 1,
                   CIFAR10_IMAGE_BYTES);
        }
        done += want;
    }
cleanup:
    if (fp) fclose(fp);
    return rc;
}

/* Loads the first `subset` records (0 = all) of the split described by names[0..n). */
static int data_load_split(struct dataset *d, const char *dir, const char *const *names, int n,
                           int subset, const char *what)
{
    int rc = DR_OK;
    uint8_t *buf = NULL;
    struct data_files *f = malloc(sizeof *f);
    memset(d, 0, sizeof *d);
    CHECK_ALLOC(f, "the file list");
    TRY(data_scan(f, dir, names, n));
    if (subset < 0) {
        rc = data_error(dir, "%s subset %d is negative", what, subset);
        goto cleanup;
    }
    if (subset > f->total) {
        rc = data_error(dir, "%s subset %d is larger than the %ld %s records present", what,
                        subset, f->total, what);
        goto cleanup;
    }
    d->count = subset > 0 ? subset : (int)f->total;
    d->images = malloc((size_t)d->count * CIFAR10_IMAGE_BYTES);
    CHECK_ALLOC(d->images, "the images");
    d->labels = malloc((size_t)d->count);
    CHECK_ALLOC(d->labels, "the labels");
    buf = malloc((size_t)DATA_CHUNK_RECORDS * CIFAR10_RECORD_BYTES);
    CHECK_ALLOC(buf, "the read buffer");
    long first = 0;
    for (int i = 0; i < f->n && first < d->count; i++) {
        long take = d->count - first < f->records[i] ? d->count - first : f->records[i];
        TRY(data_read_file(d->images + (size_t)first * CIFAR10_IMAGE_BYTES, d->labels + first,
                           f->path[i], take, buf));
        first += take;
    }
cleanup:
    free(buf);
    free(f);
    if (rc != DR_OK) dataset_free(d);
    return rc;
}

int cifar10_load(struct dataset *train, struct dataset *test, const char *dir,
                 int train_subset, int test_subset)
{
    static const char *const train_names[CIFAR10_TRAIN_FILES] = {
        "data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin",
        "data_batch_5.bin"};
    static const char *const test_names[1] = {"test_batch.bin"};
    int rc = DR_OK;
    struct stat st;
    if (train) memset(train, 0, sizeof *train);
    if (test) memset(test, 0, sizeof *test);
    if (dir == NULL || *dir == '\0') dir = cifar10_default_dir(NULL);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        const char *why = stat(dir, &st) != 0 ? strerror(errno) : "not a directory";
        rc = data_error(dir, "cannot use as the CIFAR-10 data directory: %s; get the data with "
                             "scripts/get-cifar10.sh (it creates data/cifar-10-batches-bin), or "
                             "set DAWNRUN_DATA to a directory holding data_batch_1..5.bin and "
                             "test_batch.bin", why);
        goto cleanup;
    }
    if (train) TRY(data_load_split(train, dir, train_names, CIFAR10_TRAIN_FILES, train_subset,
                                   "training"));
    if (test) TRY(data_load_split(test, dir, test_names, 1, test_subset, "test"));
cleanup:
    if (rc != DR_OK) {
        dataset_free(train);
        dataset_free(test);
    }
    return rc;
}

void dataset_free(struct dataset *d)
{
    if (d == NULL) return;
    free(d->images);
    free(d->labels);
    memset(d, 0, sizeof *d);
}

const char *cifar10_default_dir(const char *configured)
{
    if (configured && *configured) return configured;
    const char *env = getenv("DAWNRUN_DATA");
    if (env && *env) return env;
    return CIFAR10_DEFAULT_DIR;
}

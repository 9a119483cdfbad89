/* The CIFAR-10 loader (engine/core/data.h): small synthetic batch files, valid and broken,
 * checking return codes and that each message names the file; then, when DAWNRUN_DATA
 * is set, the real data set (counts, labels, class balance, source_index.tsv). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "engine/core/data.h"
#include "base/status.h"

#define MSG_MAX 8192

static char tmpdir[256];
static char captured[MSG_MAX];   /* stderr of the last load_capture() */

static const char *const FILES[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                     "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};

/* Label and a pixel byte of synthetic record r of file f. */
static uint8_t syn_label(int f, int r) { return (uint8_t)((f * 2 + r) % 10); }
static uint8_t syn_pixel(int f, int r, int k) { return (uint8_t)(f * 31 + r * 17 + k * 7); }

static void path_of(char *out, size_t size, const char *dir, const char *name)
{
    snprintf(out, size, "%s/%s", dir, name);
}

/* Writes file f of the synthetic set with `records` records into dir. */
static void write_file(const char *dir, int f, int records)
{
    char path[512];
    path_of(path, sizeof path, dir, FILES[f]);
    FILE *fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (!fp) return;
    for (int r = 0; r < records; r++) {
        fputc(syn_label(f, r), fp);
        for (int k = 0; k < CIFAR10_IMAGE_BYTES; k++) fputc(syn_pixel(f, r, k), fp);
    }
    fclose(fp);
}

/* A fresh directory holding all six files with 2 records each. */
static void make_set(char *dir, size_t size, const char *name)
{
    snprintf(dir, size, "%s/%s", tmpdir, name);
    CHECK(mkdir(dir, 0700) == 0);
    for (int f = 0; f < 6; f++) write_file(dir, f, 2);
}

/* cifar10_load with stderr captured into `captured`. */
static int load_capture(struct dataset *train, struct dataset *test, const char *dir, int ts,
                        int es)
{
    char path[512];
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = fopen(path, "w+");
    if (saved < 0 || cap == NULL) {
        CHECK(!"cannot capture stderr");
        if (cap) fclose(cap);
        return -1;
    }
    dup2(fileno(cap), 2);
    int rc = cifar10_load(train, test, dir, ts, es);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    size_t n = fread(captured, 1, MSG_MAX - 1, cap);
    captured[n] = '\0';
    fclose(cap);
    return rc;
}

static int empty(const struct dataset *d)
{
    return d->images == NULL && d->labels == NULL && d->count == 0;
}

static void test_valid(void)
{
    char dir[512];
    struct dataset train, test;
    make_set(dir, sizeof dir, "good");
    CHECK(load_capture(&train, &test, dir, 0, 0) == DR_OK);
    CHECK(captured[0] == '\0');
    CHECK(train.count == 10 && test.count == 2);
    int ok = train.images && train.labels && test.images && test.labels;
    for (int i = 0; ok && i < 12; i++) {
        const struct dataset *d = i < 10 ? &train : &test;
        int f = i < 10 ? i / 2 : 5, r = i % 2, row = i < 10 ? i : r;
        ok &= d->labels[row] == syn_label(f, r);
        for (int k = 0; k < CIFAR10_IMAGE_BYTES; k++)
            ok &= d->images[(size_t)row * CIFAR10_IMAGE_BYTES + k] == syn_pixel(f, r, k);
    }
    CHECK(ok);
    dataset_free(&train);
    dataset_free(&test);
    CHECK(empty(&train) && empty(&test));

    /* subsets: the first k records, across file boundaries; NULL skips a split */
    CHECK(load_capture(&train, &test, dir, 3, 1) == DR_OK);
    CHECK(train.count == 3 && test.count == 1);
    CHECK(train.labels[2] == syn_label(1, 0) && test.labels[0] == syn_label(5, 0));
    CHECK(train.images[2 * CIFAR10_IMAGE_BYTES + 5] == syn_pixel(1, 0, 5));
    dataset_free(&train);
    dataset_free(&test);
    CHECK(load_capture(&train, NULL, dir, 10, 0) == DR_OK && train.count == 10);
    dataset_free(&train);
    CHECK(load_capture(NULL, &test, dir, 0, 2) == DR_OK && test.count == 2);
    dataset_free(&test);

    CHECK(load_capture(&train, &test, dir, 11, 0) == DR_ERR_DATA);
    CHECK(strstr(captured, dir) && strstr(captured, "11"));
    CHECK(empty(&train) && empty(&test));
    CHECK(load_capture(&train, &test, dir, 0, 3) == DR_ERR_DATA);
    CHECK(strstr(captured, "test subset 3"));
    CHECK(empty(&train) && empty(&test));
    dataset_free(NULL);
}

/* One broken variant: the load fails with DR_ERR_DATA, empty outputs, and a message
 * "dawnrun: <dir>/<file>: ..." that also contains `detail`. */
static void expect_broken(const char *dir, const char *file, const char *detail)
{
    struct dataset train, test;
    char want[600];
    snprintf(want, sizeof want, "dawnrun: %s/%s: ", dir, file);
    int rc = load_capture(&train, &test, dir, 0, 0);
    CHECK(rc == DR_ERR_DATA);
    CHECK(empty(&train) && empty(&test));
    CHECK(strstr(captured, want) != NULL);
    CHECK(strstr(captured, detail) != NULL);
    if (rc != DR_ERR_DATA || !strstr(captured, want) || !strstr(captured, detail))
        fprintf(stderr, "  broken %s: rc %d, message: %s\n", file, rc, captured);
}

static void test_broken(void)
{
    char dir[512], path[600];
    struct dataset train, test;

    make_set(dir, sizeof dir, "missing");
    path_of(path, sizeof path, dir, FILES[2]);
    CHECK(unlink(path) == 0);
    expect_broken(dir, FILES[2], "cannot open");

    make_set(dir, sizeof dir, "size");
    path_of(path, sizeof path, dir, FILES[1]);
    FILE *fp = fopen(path, "ab");
    CHECK(fp != NULL);
    if (fp) {
        fputs("xyz", fp);   /* 2 * 3073 + 3 = 6149 bytes */
        fclose(fp);
    }
    expect_broken(dir, FILES[1], "6149");

    make_set(dir, sizeof dir, "label");
    path_of(path, sizeof path, dir, FILES[5]);
    fp = fopen(path, "r+b");
    CHECK(fp != NULL);
    if (fp) {
        fseek(fp, CIFAR10_RECORD_BYTES, SEEK_SET);   /* record 1's label byte */
        fputc(10, fp);
        fclose(fp);
    }
    expect_broken(dir, FILES[5], "record 1: label 10");

    make_set(dir, sizeof dir, "empty");
    path_of(path, sizeof path, dir, FILES[4]);
    fp = fopen(path, "wb");
    CHECK(fp != NULL);
    if (fp) fclose(fp);
    expect_broken(dir, FILES[4], "empty");

    snprintf(dir, sizeof dir, "%s/no-such-dir", tmpdir);
    CHECK(load_capture(&train, &test, dir, 0, 0) == DR_ERR_DATA);
    CHECK(empty(&train) && empty(&test));
    char want[600];
    snprintf(want, sizeof want, "dawnrun: %s: ", dir);
    CHECK(strstr(captured, want) != NULL);
    CHECK(strstr(captured, "scripts/get-cifar10.sh") && strstr(captured, "DAWNRUN_DATA"));
}

static void test_default_dir(void)
{
    const char *env = getenv("DAWNRUN_DATA");
    char *saved = env ? strdup(env) : NULL;
    CHECK(strcmp(cifar10_default_dir("/some/where"), "/some/where") == 0);
    setenv("DAWNRUN_DATA", "/from/env", 1);
    CHECK(strcmp(cifar10_default_dir(""), "/from/env") == 0);
    CHECK(strcmp(cifar10_default_dir(NULL), "/from/env") == 0);
    CHECK(strcmp(cifar10_default_dir("cfg"), "cfg") == 0);
    unsetenv("DAWNRUN_DATA");
    CHECK(strcmp(cifar10_default_dir(""), "data/cifar-10-batches-bin") == 0);
    setenv("DAWNRUN_DATA", "", 1);
    CHECK(strcmp(cifar10_default_dir(NULL), "data/cifar-10-batches-bin") == 0);
    if (saved) setenv("DAWNRUN_DATA", saved, 1);
    else unsetenv("DAWNRUN_DATA");
    free(saved);
}

/* Every (file, record, label) line of source_index.tsv must match the loaded labels.
 * Returns the number of lines checked, or -1 when the file is absent. */
static long check_source_index(const char *dir, const struct dataset *train,
                               const struct dataset *test)
{
    char path[4200], line[1024], file[64];
    snprintf(path, sizeof path, "%s/source_index.tsv", dir);
    FILE *fp = fopen(path, "r");
    if (!fp) return -1;
    long lines = 0, bad = 0;
    int first_label = -1;
    while (fgets(line, sizeof line, fp)) {
        int record, label, batch;
        if (sscanf(line, "%63s %d %d", file, &record, &label) != 3) continue;   /* header */
        if (sscanf(file, "data_batch_%d.bin", &batch) == 1) {
            long row = (long)(batch - 1) * 10000 + record;
            if (row == 0) first_label = label;
            bad += row < 0 || row >= train->count || train->labels[row] != label;
        } else {
            bad += record < 0 || record >= test->count || test->labels[record] != label;
        }
        lines++;
    }
    fclose(fp);
    CHECK(bad == 0);
    CHECK(first_label == 5);   /* data_batch_1.bin record 0: dog */
    CHECK(train->labels[0] == first_label);
    return lines;
}

static void test_real(const char *dir)
{
    struct dataset train, test;
    CHECK(cifar10_load(&train, &test, dir, 0, 0) == DR_OK);
    if (!train.labels || !test.labels) return;
    CHECK(train.count == 50000 && test.count == 10000);
    long hist[2][CIFAR10_CLASSES] = {{0}};
    int labels_ok = 1;
    for (int s = 0; s < 2; s++) {
        const struct dataset *d = s ? &test : &train;
        for (int i = 0; i < d->count; i++) {
            labels_ok &= d->labels[i] < CIFAR10_CLASSES;
            if (d->labels[i] < CIFAR10_CLASSES) hist[s][d->labels[i]]++;
        }
    }
    CHECK(labels_ok);
    int balanced = 1;
    for (int c = 0; c < CIFAR10_CLASSES; c++) balanced &= hist[0][c] == 5000 && hist[1][c] == 1000;
    CHECK(balanced);
    /* plane order: the red plane's mean is ~125, the blue plane's ~114 */
    double mean[3] = {0, 0, 0};
    for (int i = 0; i < train.count; i++)
        for (int c = 0; c < 3; c++) {
            const uint8_t *p = train.images + (size_t)i * CIFAR10_IMAGE_BYTES + c * 1024;
            long s = 0;
            for (int k = 0; k < 1024; k++) s += p[k];
            mean[c] += (double)s / 1024.0;
        }
    for (int c = 0; c < 3; c++) mean[c] /= train.count;
    printf("training-set channel means: %.2f %.2f %.2f\n", mean[0], mean[1], mean[2]);
    CHECK(mean[0] > 124.0 && mean[0] < 127.0);
    CHECK(mean[1] > 121.5 && mean[1] < 124.5);
    CHECK(mean[2] > 112.5 && mean[2] < 115.5);
    long lines = check_source_index(dir, &train, &test);
    if (lines < 0) printf("no source_index.tsv in %s: label cross-check skipped\n", dir);
    else CHECK(lines == 60000);
    dataset_free(&train);
    dataset_free(&test);
}

/* Removes the synthetic directories. */
static void cleanup_tmp(void)
{
    static const char *const sets[] = {"good", "missing", "size", "label", "empty"};
    char path[800];
    for (int s = 0; s < 5; s++) {
        for (int f = 0; f < 6; f++) {
            snprintf(path, sizeof path, "%s/%s/%s", tmpdir, sets[s], FILES[f]);
            unlink(path);
        }
        snprintf(path, sizeof path, "%s/%s", tmpdir, sets[s]);
        rmdir(path);
    }
    snprintf(path, sizeof path, "%s/stderr.txt", tmpdir);
    unlink(path);
    rmdir(tmpdir);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/dawnrun-test-data-XXXXXX", t && *t ? t : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    test_valid();
    test_broken();
    test_default_dir();
    cleanup_tmp();

    const char *dir = check_data_dir();
    if (dir) test_real(dir);
    int rc = check_finish("test_data");
    if (rc == 0 && !dir) {
        printf("DAWNRUN_DATA not set: synthetic checks passed, real-data checks skipped\n");
        return 77;
    }
    return rc;
}

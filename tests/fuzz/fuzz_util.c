/* Scratch directory, file helpers and assertions of the fuzz targets (see fuzz.h). */
#define _XOPEN_SOURCE 700 /* nftw */
#include "fuzz.h"

#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char scratch[256];

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

static void scratch_remove(void)
{
    if (scratch[0]) nftw(scratch, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_dir(const char *tag)
{
    if (scratch[0]) return scratch;
    /* memory-backed when there is one: SQLite's fsyncs cost nothing there */
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    snprintf(scratch, sizeof(scratch), "%s/dawnrun-fuzz-%s-XXXXXX", base, tag);
    if (!mkdtemp(scratch)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(scratch_remove);
    return scratch;
}

void fuzz_path(char *buf, size_t n, const char *dir, const char *name)
{
    if ((size_t)snprintf(buf, n, "%s/%s", dir, name) >= n) {
        fprintf(stderr, "fuzz: path too long: %s/%s\n", dir, name);
        abort();
    }
}

void fuzz_write(const char *path, const void *data, size_t n)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    const unsigned char *p = data;
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k <= 0) {
            perror(path);
            abort();
        }
        p += k;
        n -= (size_t)k;
    }
    close(fd);
}

unsigned char *fuzz_read(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    unsigned char *buf = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? 2 * cap : 65536;
            unsigned char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = nb;
        }
        size_t k = fread(buf + len, 1, cap - len, f);
        len += k;
        if (k == 0) break;
    }
    fclose(f);
    *n = len;
    return buf;
}

void fuzz_assert(int cond, const char *what, const char *file, int line)
{
    if (cond) return;
    fprintf(stderr, "fuzz: %s:%d: invariant broken: %s\n", file, line, what);
    abort();
}

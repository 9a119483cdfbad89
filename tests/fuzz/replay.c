/* Replays inputs through a fuzz target without libFuzzer: every file named on the command
 * line, or found (recursively, in name order) under a directory named there, is one call
 * of LLVMFuzzerTestOneInput. A crash or sanitizer report fails the process; so does
 * finding no input at all. Used by ctest (fuzz_NAME_replay) and to rerun a crash file. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs path (a file, or a directory's files); returns the number of inputs, -1 on error. */
static int replay(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        size_t n = 0;
        unsigned char *data = fuzz_read(path, &n);
        if (!data) {
            perror(path);
            return -1;
        }
        LLVMFuzzerTestOneInput(data, n);
        free(data);
        return 1;
    }
    DIR *d = opendir(path);
    if (!d) {
        perror(path);
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0, total = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        if (ent->d_name[0] == '.') continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, (size_t)cap * sizeof(*nn));
            if (!nn) abort();
            names = nn;
        }
        size_t len = strlen(path) + strlen(ent->d_name) + 2;
        names[n] = malloc(len);
        if (!names[n]) abort();
        snprintf(names[n], len, "%s/%s", path, ent->d_name);
        n++;
    }
    closedir(d);
    if (n) qsort(names, (size_t)n, sizeof(*names), cmp_names);
    for (int i = 0; i < n; i++) {
        int k = replay(names[i]);
        if (k < 0) total = -1;
        else if (total >= 0) total += k;
        free(names[i]);
    }
    free(names);
    return total;
}

int main(int argc, char **argv)
{
    LLVMFuzzerInitialize(&argc, &argv);
    int total = 0;
    for (int i = 1; i < argc; i++) {
        int k = replay(argv[i]);
        if (k < 0) return 1;
        total += k;
    }
    if (total == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    printf("replay: %d inputs, no failure\n", total);
    return 0;
}

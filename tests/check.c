/* Assertion bookkeeping for the test executables (see check.h). */
#include "check.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int check_failures;
int check_count;

void check_record(int ok, const char *file, int line, const char *expr)
{
    check_count++;
    if (!ok) {
        check_failures++;
        fprintf(stderr, "FAIL %s:%d: %s\n", file, line, expr);
    }
}

int check_finish(const char *suite)
{
    printf("%s: %d passed, %d failed\n", suite, check_count - check_failures, check_failures);
    return check_failures ? 1 : 0;
}

const char *check_data_dir(void)
{
    const char *d = getenv("DAWNRUN_DATA");
    struct stat st;
    if (!d || !*d || stat(d, &st) != 0 || !S_ISDIR(st.st_mode)) return NULL;
    return d;
}

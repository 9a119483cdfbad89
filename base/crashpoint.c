/* Test-only crash points (see crashpoint.h): a pass counter per process and a SIGKILL at
 * the pass the environment names. */
#include "crashpoint.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void crashpoint(const char *name)
{
    static long passes;
    const char *spec = getenv("DAWNRUN_TEST_CRASH");
    if (!spec || !name) return;
    size_t n = strlen(name);
    if (strncmp(spec, name, n) != 0 || spec[n] != ':') return;
    char *end = NULL;
    long want = strtol(spec + n + 1, &end, 10);
    if (end == spec + n + 1 || *end || want < 1) return;
    if (++passes == want) {
        kill(getpid(), SIGKILL);
        for (;;) pause();
    }
}

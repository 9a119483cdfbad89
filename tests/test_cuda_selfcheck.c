/* The CUDA engine against the CPU engine: runs `dawnrun selfcheck --engine cuda` (every
 * op, the augmentation and short training runs, in fp32, fp16 and bf16: the cases of
 * engine/selfcheck/selfcheck_cases_*.c, described in docs/testing.md) from the build folder and
 * passes its verdict on. Skipped (77) when this machine has no usable CUDA device or the
 * build has no CUDA engine. */
#include <libgen.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernels/backend.h"
#include "base/status.h"

int main(void)
{
    char why[256], self[4096], exe[4096 + 16];
    if (backend_cuda_probe(0, why, sizeof(why)) != DR_OK) {
        printf("no usable CUDA device (%s): skipping the CUDA self-check\n", why);
        return 77;
    }
    ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (len <= 0) {
        perror("readlink /proc/self/exe");
        return 1;
    }
    self[len] = '\0';
    snprintf(exe, sizeof(exe), "%s/dawnrun", dirname(self));
    if (access(exe, X_OK) != 0) {
        fprintf(stderr, "%s: not found next to the test executable\n", exe);
        return 1;
    }
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return 1;
    }
    if (pid == 0) {
        char *args[] = {exe, "selfcheck", "--engine", "cuda", NULL};
        execv(exe, args);
        perror("execv");
        _exit(127);
    }
    int status = 0;
    if (waitpid(pid, &status, 0) < 0) {
        perror("waitpid");
        return 1;
    }
    if (!WIFEXITED(status)) {
        fprintf(stderr, "dawnrun selfcheck did not exit normally (status %d)\n", status);
        return 1;
    }
    int code = WEXITSTATUS(status);
    printf("dawnrun selfcheck exited with %d\n", code);
    return code == 0 ? 0 : code == 77 ? 77 : 1;
}

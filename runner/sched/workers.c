/* Forked worker processes for `dawnrun run` (see workers.h). */
#include "workers.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/status.h"

/* waitpid that carries on through signals; returns the raw status or -1. */
static int wait_child(pid_t pid)
{
    int st;
    for (;;) {
        pid_t r = waitpid(pid, &st, 0);
        if (r == pid) return st;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static int exit_status(int st)
{
    if (st < 0) return EXIT_FAILURE_OTHER;
    if (WIFEXITED(st)) return WEXITSTATUS(st);
    if (WIFSIGNALED(st)) return 128 + WTERMSIG(st);
    return EXIT_FAILURE_OTHER;
}

int workers_probe(char *engine, size_t engine_len, char *device, size_t device_len,
                  const struct cli_common *c, int precision)
{
    int fds[2];
    pid_t pid = -1;
    if (pipe(fds) == 0) {
        fflush(NULL);
        pid = fork();
        if (pid < 0) {
            close(fds[0]);
            close(fds[1]);
        }
    }
    if (pid < 0) {
        dr_eprintf("dawnrun: cannot start the engine probe: %s\n", strerror(errno));
        return DR_ERR_INTERNAL;
    }
    if (pid == 0) {
        /* the child: make the backend, say what it is, and go */
        char line[1024];
        int n;
        struct backend be = {0};
        close(fds[0]);
        int rc = cli_backend(c, precision, &be);
        if (rc == DR_OK)
            n = snprintf(line, sizeof(line), "%d\n%s\n%s\n", rc, be.ops->name,
                         be.ops->device_name(be.ctx));
        else
            n = snprintf(line, sizeof(line), "%d\n", rc);
        if (n > (int)sizeof(line) - 1) n = (int)sizeof(line) - 1;
        if (write(fds[1], line, (size_t)n) != n) rc = DR_ERR_INTERNAL;
        if (rc == DR_OK) backend_destroy(&be);
        fflush(NULL);
        _exit(0);
    }
    close(fds[1]);
    char buf[1024];
    size_t got = 0;
    for (;;) {
        ssize_t k = read(fds[0], buf + got, sizeof(buf) - 1 - got);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        got += (size_t)k;
        if (got == sizeof(buf) - 1) break;
    }
    buf[got] = '\0';
    close(fds[0]);
    wait_child(pid);
    char *save = NULL, *status = strtok_r(buf, "\n", &save);
    if (!status) {
        dr_eprintf("dawnrun: the engine probe died without an answer\n");
        return DR_ERR_INTERNAL;
    }
    int rc = atoi(status);
    if (rc != DR_OK) return rc;
    const char *name = strtok_r(NULL, "\n", &save), *dev = strtok_r(NULL, "\n", &save);
    snprintf(engine, engine_len, "%s", name ? name : "");
    snprintf(device, device_len, "%s", dev ? dev : "");
    return DR_OK;
}

/* The body of one worker process; returns its exit code. */
static int worker_main(int index, const struct sched_batch *b, const struct workers_spec *w,
                       const struct sched_options *o)
{
    char prefix[48], device[32];
    struct sched_options mine = *o;
    struct sched_engine eng;
    struct sched_tally tally;
    memset(&eng, 0, sizeof(eng));
    eng.common = w->common;
    if (w->devices) eng.common.device = w->devices[index];
    if (!strcmp(eng.common.engine, "cuda")) {
        snprintf(device, sizeof(device), "cuda:%d", eng.common.device);
        snprintf(prefix, sizeof(prefix), "[%s] ", device);
    } else {
        snprintf(device, sizeof(device), "%s", eng.common.engine);
        snprintf(prefix, sizeof(prefix), "[w%d] ", index);
    }
    mine.device = device;
    mine.prefix = prefix;
    mine.progress = 0;
    int rc = scheduler_work(&tally, b, &eng, &mine);
    backend_destroy(&eng.be);
    printf("%sworker %d (pid %ld): %d done, %d diverged, %d failed, %d interrupted%s\n", prefix,
           index, (long)getpid(), tally.done, tally.diverged, tally.failed, tally.interrupted,
           tally.dropped ? ", some taken over" : "");
    fflush(NULL);
    return scheduler_exit_code(rc, &tally);
}

int workers_run(int *exit_code, const struct sched_batch *b, const struct workers_spec *w,
                const struct sched_options *o)
{
    int rc = DR_OK, started = 0, forwarded = 0;
    pid_t pids[WORKERS_MAX];
    int codes[WORKERS_MAX];
    if (w->n < 1 || w->n > WORKERS_MAX) {
        dr_eprintf("dawnrun: between 1 and %d workers, not %d\n", WORKERS_MAX, w->n);
        *exit_code = EXIT_USAGE;
        return DR_ERR_USAGE;
    }
    fflush(NULL);
    for (int i = 0; i < w->n && !cli_stop_requested(NULL); i++) {
        pid_t pid = fork();
        if (pid < 0) {
            dr_eprintf("dawnrun: cannot start worker %d: %s\n", i, strerror(errno));
            rc = DR_ERR_INTERNAL;
            break;
        }
        if (pid == 0) _exit(worker_main(i, b, w, o));
        pids[started] = pid;
        codes[started++] = -1;
    }
    /* wait for everyone, polling so that a signal is passed on within a tick */
    int left = started;
    while (left > 0) {
        int st;
        pid_t r = waitpid(-1, &st, WNOHANG);
        if (r < 0 && errno != EINTR) break;
        if (cli_stop_requested(NULL) && !forwarded) {
            for (int i = 0; i < started; i++)
                if (codes[i] < 0) kill(pids[i], cli_stop_signal());
            forwarded = 1;
        }
        if (r <= 0) {
            struct timespec tick = {0, 50 * 1000 * 1000};
            nanosleep(&tick, NULL);
            continue;
        }
        for (int i = 0; i < started; i++)
            if (pids[i] == r) {
                codes[i] = exit_status(st);
                left--;
            }
    }
    for (int i = 0; i < started; i++)
        if (codes[i] < 0) codes[i] = exit_status(wait_child(pids[i]));

    *exit_code = EXIT_OK;
    if (cli_stop_requested(NULL)) {
        *exit_code = cli_exit_code(DR_ERR_INTERRUPTED);
    } else {
        for (int i = 0; i < started && *exit_code == EXIT_OK; i++) *exit_code = codes[i];
        if (*exit_code == EXIT_OK && rc != DR_OK) *exit_code = EXIT_FAILURE_OTHER;
    }
    return rc;
}

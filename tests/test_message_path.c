/* Every message takes one path, base/status.c's printer: the data loader's and the
 * checkpoint reader's messages too. Each runs the message hook first (runner/ erases its
 * progress line there, so a message never lands inside it), reads "dawnrun: WHAT:
 * message", and carries dawnrun's source location only with DAWNRUN_DEBUG=1. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "support.h"
#include "base/status.h"
#include "engine/core/checkpoint.h"
#include "engine/core/data.h"

#define HOOK_MARK "<hook>"

static void mark_hook(void)
{
    fputs(HOOK_MARK, stderr);
}

/* The loader's message on a directory without CIFAR-10 files, with debug 0 or 1. */
static const char *data_message(int debug)
{
    struct dataset train = {0}, test = {0};
    setenv("DAWNRUN_DEBUG", debug ? "1" : "0", 1);
    support_capture_begin();
    int rc = cifar10_load(&train, &test, support_tmpdir(), 0, 0);
    const char *out = support_capture_end();
    CHECK(rc == DR_ERR_DATA);
    dataset_free(&train);
    dataset_free(&test);
    return out;
}

/* The checkpoint reader's message on a damaged file, with debug 0 or 1. */
static const char *checkpoint_message(int debug, const char *path)
{
    struct trainer t;
    struct train_progress p;
    int found = 0;
    memset(&t, 0, sizeof(t));
    setenv("DAWNRUN_DEBUG", debug ? "1" : "0", 1);
    support_capture_begin();
    int rc = checkpoint_load(&t, &p, &found, path);
    const char *out = support_capture_end();
    CHECK(rc == DR_ERR_DATA && found == 1);
    return out;
}

int main(void)
{
    if (support_tmpdir_make("/tmp/dawnrun-test-messages-XXXXXX")) return 1;
    dr_set_message_hook(mark_hook);
    char want[1024];

    const char *m = data_message(0);
    snprintf(want, sizeof(want), HOOK_MARK "dawnrun: %s/data_batch_1.bin: ", support_tmpdir());
    CHECK(strncmp(m, want, strlen(want)) == 0);
    CHECK(strstr(m, "data.c:") == NULL);
    m = data_message(1);
    CHECK(strncmp(m, HOOK_MARK "dawnrun: ", strlen(HOOK_MARK "dawnrun: ")) == 0);
    CHECK(strstr(m, "data.c:") != NULL);

    const char *ckpt = support_path("damaged.ckpt");
    FILE *f = fopen(ckpt, "wb");
    CHECK(f != NULL);
    if (f) {
        fputs("not a checkpoint", f);
        fclose(f);
    }
    m = checkpoint_message(0, ckpt);
    snprintf(want, sizeof(want),
             HOOK_MARK "dawnrun: checkpoint %s: damaged or truncated (16 bytes, no end marker)\n",
             ckpt);
    CHECK(strcmp(m, want) == 0);
    m = checkpoint_message(1, ckpt);
    CHECK(strncmp(m, HOOK_MARK "dawnrun: ", strlen(HOOK_MARK "dawnrun: ")) == 0);
    CHECK(strstr(m, "checkpoint.c:") != NULL);
    CHECK(strstr(m, "damaged or truncated") != NULL);

    dr_set_message_hook(NULL);
    return support_tmpdir_finish(check_finish("message_path"));
}

/* Fuzz target: the checkpoint loader (checkpoint_load) of a small CPU trainer
 * (tests/fuzz/ckpt.cfg). A valid checkpoint of it, after its first epoch, is made at
 * start-up. Input byte [0] picks how the rest becomes the file:
 *   0: as it is;
 *   1: as the payload, followed by a trailer with its true length and checksum (so the
 *      header and table checks are reached);
 *   2: as patches on the valid checkpoint: a 4-byte offset then the bytes written
 *      there, the trailer fixed up after.
 * A refused file must give DR_ERR_DATA and leave the trainer as it was; an accepted one
 * must give a consistent epoch and step. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/backend.h"
#include "engine/core/checkpoint.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "base/status.h"
#include "engine/core/train.h"
#include "fuzz.h"

#define TRAILER_BYTES 24

static struct experiment exp_;
static struct graph graph_;
static struct backend be;
static struct dataset train_set, test_set;
static struct trainer trainer;
static unsigned char *valid;
static size_t valid_n;
static float *state0;
static size_t state_n;
static char path[600];
static long step0;

/* The checksum of the file format (checkpoint.c): 64-bit FNV-1a over little-endian
 * 64-bit words, then the tail bytes. */
static uint64_t checksum(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
    }
    for (; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

/* payload[0..n) followed by its trailer, written to path. */
static void write_with_trailer(const unsigned char *payload, size_t n)
{
    unsigned char *buf = malloc(n + TRAILER_BYTES);
    if (!buf) abort();
    memcpy(buf, payload, n);
    uint64_t len = n, sum = checksum(payload, n);
    memcpy(buf + n, &len, 8);
    memcpy(buf + n + 8, &sum, 8);
    memcpy(buf + n + 16, "DRCKEND\n", 8);
    fuzz_write(path, buf, n + TRAILER_BYTES);
    free(buf);
}

/* All the trainer's tensors and its step, concatenated (malloc'd). */
static float *read_state(size_t *n)
{
    const struct model *m = &trainer.model;
    size_t total = 1;
    for (int k = 0; k < graph_.n_params; k++) total += 2 * tensor_count(&m->p[k]);
    float *buf = malloc(total * sizeof(float)), *w = buf;
    if (!buf) abort();
    for (int k = 0; k < graph_.n_params; k++) {
        be.ops->tensor_read(be.ctx, w, &m->p[k]);
        w += tensor_count(&m->p[k]);
        be.ops->tensor_read(be.ctx, w, &m->v[k]);
        w += tensor_count(&m->v[k]);
    }
    *w = (float)trainer.step;
    *n = total;
    return buf;
}

static void fill(struct dataset *d, int count)
{
    d->count = count;
    d->images = malloc((size_t)count * 3072);
    d->labels = malloc((size_t)count);
    if (!d->images || !d->labels) abort();
    for (int i = 0; i < count; i++) d->labels[i] = (uint8_t)(i % 10);
    for (size_t k = 0; k < (size_t)count * 3072; k++) d->images[k] = (uint8_t)(k * 7 % 251);
}

static void release(void)
{
    trainer_free(&trainer);
    backend_destroy(&be);
    dataset_free(&train_set);
    dataset_free(&test_set);
    graph_free(&graph_);
    experiment_free(&exp_);
    free(valid);
    free(state0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    char cfg[1200], err[512];
    fuzz_path(cfg, sizeof(cfg), DAWNRUN_FUZZ_SOURCE_DIR, "tests/fuzz/ckpt.cfg");
    fuzz_path(path, sizeof(path), fuzz_dir("checkpoint"), "run.ckpt");
    if (experiment_load(&exp_, cfg, NULL, 0) != DR_OK ||
        graph_build(&graph_, &exp_.net, 3, 32, 32, err, sizeof(err)) != DR_OK ||
        backend_cpu_create(&be, 1) != DR_OK) {
        fprintf(stderr, "fuzz_checkpoint: cannot set up the trainer\n");
        abort();
    }
    fill(&train_set, 16);
    fill(&test_set, 16);
    if (trainer_create(&trainer, &exp_, &graph_, &be, &train_set, &test_set, 3) != DR_OK) abort();
    /* the state after epoch 1 (its step count; the values need not be trained ones) */
    step0 = trainer.step;
    trainer.step = trainer.plan.steps_per_epoch;
    struct train_progress p = {1, 0.5, 0.75, -1.0, -1, 0.125, 2.25};
    if (checkpoint_save(path, &trainer, &p) != DR_OK) abort();
    trainer.step = step0;
    valid = fuzz_read(path, &valid_n);
    if (!valid || valid_n < TRAILER_BYTES) abort();
    state0 = read_state(&state_n);
    atexit(release);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const uint8_t *rest = data + 1;
    size_t n = size - 1;
    switch (data[0] % 3) {
    case 0:
        fuzz_write(path, rest, n);
        break;
    case 1:
        write_with_trailer(rest, n);
        break;
    default: {
        size_t payload = valid_n - TRAILER_BYTES;
        unsigned char *buf = malloc(payload);
        if (!buf) abort();
        memcpy(buf, valid, payload);
        while (n >= 5) {
            uint32_t off;
            memcpy(&off, rest, 4);
            size_t len = rest[4] % 16 + 1;
            rest += 5;
            n -= 5;
            if (len > n) len = n;
            off %= (uint32_t)payload;
            if (len > payload - off) len = payload - off;
            memcpy(buf + off, rest, len);
            rest += len;
            n -= len;
        }
        write_with_trailer(buf, payload);
        free(buf);
    }
    }

    struct train_progress p;
    memset(&p, 0, sizeof(p));
    int found = -1;
    int rc = checkpoint_load(&trainer, &p, &found, path);
    FUZZ_ASSERT(found == 1);
    if (rc == DR_OK) {
        FUZZ_ASSERT(p.epoch >= 1 && p.epoch <= trainer.plan.epochs);
        FUZZ_ASSERT(trainer.step >= 0 && trainer.step <= trainer.plan.total_steps);
    } else {
        FUZZ_ASSERT(rc == DR_ERR_DATA);
        size_t n1 = 0;
        float *now = read_state(&n1);
        FUZZ_ASSERT(n1 == state_n && memcmp(now, state0, n1 * sizeof(float)) == 0);
        free(now);
    }
    /* an accepted file changed the trainer: put the start state back for the next input */
    if (rc == DR_OK) {
        fuzz_write(path, valid, valid_n);
        FUZZ_ASSERT(checkpoint_load(&trainer, &p, &found, path) == DR_OK);
        trainer.step = step0;
    }
    return 0;
}

/* Tests of engine/core/checkpoint: a run trained 3 epochs straight and one checkpointed after
 * its first epoch and resumed by a fresh trainer give bit-identical epoch records and
 * parameters on the CPU engine (also with an EMA or Lookahead weight average, whose
 * state the checkpoint carries, test-time augmentation and alternating flips); damaged, truncated, foreign (other config, other seed)
 * and missing checkpoints are told apart and leave the trainer untouched; a failed save
 * leaves no file behind; the epoch loop's hooks (record, checkpoint, stop) and a resume
 * through them. Uses a synthetic dataset, so it needs no data directory. */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "engine/core/checkpoint.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "base/status.h"
#include "engine/core/train.h"

#define EPOCHS 3

static char dir[] = "/tmp/dawnrun-test-checkpoint-XXXXXX";

/* Deterministic pseudo-images: enough structure that the loss moves. */
static int make_dataset(struct dataset *d, int count, uint32_t salt)
{
    d->count = count;
    d->images = malloc((size_t)count * 3072);
    d->labels = malloc((size_t)count);
    if (!d->images || !d->labels) return DR_ERR_NOMEM;
    uint32_t x = 2463534242u ^ salt;
    for (int i = 0; i < count; i++) {
        d->labels[i] = (uint8_t)(i % 10);
        for (int k = 0; k < 3072; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            d->images[(size_t)i * 3072 + (size_t)k] = (uint8_t)((x & 63) + 16 * d->labels[i]);
        }
    }
    return DR_OK;
}

struct fixture {
    struct experiment e;
    struct graph g;
    struct dataset train, test;
    struct backend be;
};

static int load_experiment(struct experiment *e, struct graph *g, const char *const *sets, int n)
{
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    char path[4096], err[512];
    snprintf(path, sizeof(path), "%s/tests/e2e/tiny.cfg", src ? src : ".");
    int rc = experiment_load(e, path, sets, n);
    if (rc != DR_OK) return rc;
    rc = graph_build(g, &e->net, 3, 32, 32, err, sizeof(err));
    if (rc != DR_OK) fprintf(stderr, "%s\n", err);
    return rc;
}

/* Trains epochs [first, last) and stores their records in out[first..last). */
static int train_epochs(struct trainer *t, int first, int last, struct epoch_record *out)
{
    for (int ep = first; ep < last; ep++) {
        int rc = trainer_epoch(t, ep, NULL, &out[ep]);
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

/* All parameters and momentum buffers, concatenated (malloc'd). */
static float *read_state(struct trainer *t, size_t *n)
{
    size_t total = 0;
    for (int k = 0; k < t->g->n_params; k++) total += 2 * tensor_count(&t->model.p[k]);
    float *buf = malloc(total * sizeof(float)), *w = buf;
    if (!buf) return NULL;
    for (int k = 0; k < t->g->n_params; k++) {
        t->be->ops->tensor_read(t->be->ctx, w, &t->model.p[k]);
        w += tensor_count(&t->model.p[k]);
        t->be->ops->tensor_read(t->be->ctx, w, &t->model.v[k]);
        w += tensor_count(&t->model.v[k]);
    }
    *n = total;
    return buf;
}

static int same_record(const struct epoch_record *a, const struct epoch_record *b)
{
    return a->epoch == b->epoch && a->lr == b->lr && a->train_loss == b->train_loss &&
           a->train_acc == b->train_acc && a->test_loss == b->test_loss &&
           a->test_acc == b->test_acc;
}

static void test_resume_is_bit_identical(struct fixture *f, const char *ckpt)
{
    struct epoch_record straight[EPOCHS], resumed[EPOCHS];
    struct trainer a, b, c;
    size_t na = 0, nc = 0;

    CHECK(trainer_create(&a, &f->e, &f->g, &f->be, &f->train, &f->test, 5) == DR_OK);
    CHECK(train_epochs(&a, 0, EPOCHS, straight) == DR_OK);
    float *sa = read_state(&a, &na);
    trainer_free(&a);

    /* one epoch, checkpoint, and the trainer is gone */
    CHECK(trainer_create(&b, &f->e, &f->g, &f->be, &f->train, &f->test, 5) == DR_OK);
    CHECK(train_epochs(&b, 0, 1, resumed) == DR_OK);
    struct train_progress p = {1, 1.5, 2.0, -1.0, -1, resumed[0].test_acc,
                                    resumed[0].test_loss};
    CHECK(checkpoint_save(ckpt, &b, &p) == DR_OK);
    trainer_free(&b);

    /* a fresh trainer (initialised from the seed) picks it up */
    struct train_progress q;
    int found = 0;
    memset(&q, 0, sizeof(q));
    CHECK(trainer_create(&c, &f->e, &f->g, &f->be, &f->train, &f->test, 5) == DR_OK);
    CHECK(checkpoint_load(&c, &q, &found, ckpt) == DR_OK);
    CHECK(found == 1);
    CHECK(q.epoch == 1 && q.target_epoch == -1 && q.train_time == 1.5 && q.total_time == 2.0);
    CHECK(q.last_test_acc == resumed[0].test_acc);
    CHECK(c.step == c.plan.steps_per_epoch);
    CHECK(train_epochs(&c, q.epoch, EPOCHS, resumed) == DR_OK);
    float *sc = read_state(&c, &nc);
    trainer_free(&c);

    for (int i = 0; i < EPOCHS; i++) {
        CHECK(same_record(&straight[i], &resumed[i]));
        if (!same_record(&straight[i], &resumed[i]))
            fprintf(stderr, "  epoch %d: test acc %.6f vs %.6f, train loss %.9g vs %.9g\n", i + 1,
                    straight[i].test_acc, resumed[i].test_acc, straight[i].train_loss,
                    resumed[i].train_loss);
    }
    CHECK(sa && sc && na == nc && memcmp(sa, sc, na * sizeof(float)) == 0);
    CHECK(straight[EPOCHS - 1].train_loss < straight[0].train_loss);
    free(sa);
    free(sc);
}

/* Loading must fail with DR_ERR_DATA and leave the trainer as it was. */
/* What trainer_run's hooks saw. */
struct loop_log {
    struct epoch_record r[EPOCHS];
    int epochs, checkpoints, progress_ok;
    int stop_at;              /* the checkpoint hook stops the run after this epoch */
    int fail_on_epoch;        /* on_epoch returns DR_ERR_DB for this epoch */
    const char *ckpt;
};

static int log_epoch(void *user, const struct epoch_record *r, const struct train_progress *p)
{
    struct loop_log *l = user;
    if (l->epochs < EPOCHS) l->r[l->epochs] = *r;
    l->epochs++;
    /* the progress handed with the record already counts it */
    l->progress_ok &= p->epoch == r->epoch && p->total_time == r->total_time &&
                      p->last_test_acc == r->test_acc;
    return r->epoch == l->fail_on_epoch ? DR_ERR_DB : DR_OK;
}

static int log_checkpoint(void *user, const struct trainer *t, const struct train_progress *p)
{
    struct loop_log *l = user;
    l->checkpoints++;
    int rc = checkpoint_save(l->ckpt, t, p);
    if (rc != DR_OK) return rc;
    return p->epoch == l->stop_at ? DR_ERR_INTERRUPTED : DR_OK;
}

/* The one epoch loop (trainer_run) with the hooks the scheduler uses: a record and the
 * progress after each epoch, then a checkpoint; a hook's error stops the run with it; a
 * run resumed from the checkpoint a stopped one wrote trains the remaining epochs to the
 * same records as a run that never stopped. */
static void test_loop_hooks(struct fixture *f, const char *ckpt)
{
    struct trainer a, b;
    struct train_progress p;
    struct train_hooks hooks = {log_epoch, log_checkpoint, NULL, NULL, NULL};
    struct loop_log straight = {.progress_ok = 1, .ckpt = ckpt};
    struct loop_log first = {.progress_ok = 1, .stop_at = 1, .ckpt = ckpt};
    struct loop_log rest = {.progress_ok = 1, .ckpt = ckpt};
    struct loop_log failing = {.progress_ok = 1, .fail_on_epoch = 2, .ckpt = ckpt};

    CHECK(trainer_create(&a, &f->e, &f->g, &f->be, &f->train, &f->test, 5) == DR_OK);
    hooks.user = &straight;
    train_progress_start(&p);
    CHECK(trainer_run(&a, &hooks, &p) == DR_OK);
    CHECK(straight.epochs == EPOCHS && straight.checkpoints == EPOCHS && straight.progress_ok);
    CHECK(p.epoch == EPOCHS && p.last_test_acc == straight.r[EPOCHS - 1].test_acc);
    trainer_free(&a);

    /* stopped by the checkpoint hook after epoch 1 */
    CHECK(trainer_create(&a, &f->e, &f->g, &f->be, &f->train, &f->test, 5) == DR_OK);
    hooks.user = &first;
    train_progress_start(&p);
    CHECK(trainer_run(&a, &hooks, &p) == DR_ERR_INTERRUPTED);
    CHECK(first.epochs == 1 && first.checkpoints == 1 && p.epoch == 1);
    trainer_free(&a);

    /* resumed from it: epochs 2 and 3 only, as the straight run had them */
    int found = 0;
    CHECK(trainer_create(&b, &f->e, &f->g, &f->be, &f->train, &f->test, 5) == DR_OK);
    CHECK(checkpoint_load(&b, &p, &found, ckpt) == DR_OK && found && p.epoch == 1);
    hooks.user = &rest;
    CHECK(trainer_run(&b, &hooks, &p) == DR_OK);
    CHECK(rest.epochs == EPOCHS - 1 && rest.checkpoints == EPOCHS - 1 && rest.progress_ok);
    CHECK(p.epoch == EPOCHS);
    for (int i = 0; i < EPOCHS - 1 && rest.epochs == EPOCHS - 1; i++)
        CHECK(same_record(&rest.r[i], &straight.r[i + 1]));
    trainer_free(&b);

    /* an error of on_epoch stops the run before that epoch's checkpoint */
    CHECK(trainer_create(&a, &f->e, &f->g, &f->be, &f->train, &f->test, 5) == DR_OK);
    hooks.user = &failing;
    train_progress_start(&p);
    CHECK(trainer_run(&a, &hooks, &p) == DR_ERR_DB);
    CHECK(failing.epochs == 2 && failing.checkpoints == 1 && p.epoch == 2);
    trainer_free(&a);
    CHECK(checkpoint_remove(ckpt) == DR_OK);
}

static void expect_refused(struct fixture *f, const struct experiment *e, const struct graph *g,
                           uint64_t seed, const char *path, const char *what)
{
    struct trainer t;
    struct train_progress q = {0};
    size_t n0 = 0, n1 = 0;
    int found = 0;
    CHECK(trainer_create(&t, e, g, &f->be, &f->train, &f->test, seed) == DR_OK);
    float *before = read_state(&t, &n0);
    int rc = checkpoint_load(&t, &q, &found, path);
    CHECK(rc == DR_ERR_DATA);
    CHECK(found == 1);
    if (rc != DR_ERR_DATA) fprintf(stderr, "  %s: got %s\n", what, dr_status_str(rc));
    float *after = read_state(&t, &n1);
    CHECK(before && after && n0 == n1 && memcmp(before, after, n0 * sizeof(float)) == 0);
    CHECK(t.step == 0);
    free(before);
    free(after);
    trainer_free(&t);
}

static int copy_file(const char *from, const char *to, long truncate_to, long flip_at)
{
    FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
    if (!in || !out) {
        if (in) fclose(in);
        if (out) fclose(out);
        return -1;
    }
    long i = 0;
    int ch;
    while ((ch = fgetc(in)) != EOF && (truncate_to < 0 || i < truncate_to)) {
        if (i == flip_at) ch ^= 0x10;
        fputc(ch, out);
        i++;
    }
    fclose(in);
    fclose(out);
    return 0;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static void test_refusals(struct fixture *f, const char *ckpt)
{
    char bad[4200];
    long size = file_size(ckpt);
    CHECK(size > 1000);

    snprintf(bad, sizeof(bad), "%s/flipped.ckpt", dir);
    CHECK(copy_file(ckpt, bad, -1, size / 2) == 0);
    expect_refused(f, &f->e, &f->g, 5, bad, "a flipped bit in the data");
    CHECK(copy_file(ckpt, bad, -1, 20) == 0);
    expect_refused(f, &f->e, &f->g, 5, bad, "a flipped bit in the header");

    snprintf(bad, sizeof(bad), "%s/truncated.ckpt", dir);
    CHECK(copy_file(ckpt, bad, size - 100, -1) == 0);
    expect_refused(f, &f->e, &f->g, 5, bad, "a truncated file");
    CHECK(copy_file(ckpt, bad, 10, -1) == 0);
    expect_refused(f, &f->e, &f->g, 5, bad, "a stub");

    expect_refused(f, &f->e, &f->g, 6, ckpt, "another seed");

    const char *sets[] = {"train.epochs=3", "train.momentum=0.8"};
    struct experiment e2;
    struct graph g2;
    CHECK(load_experiment(&e2, &g2, sets, 2) == DR_OK);
    expect_refused(f, &e2, &g2, 5, ckpt, "another config");
    graph_free(&g2);
    experiment_free(&e2);

    /* a missing file is no error, just nothing to resume */
    struct trainer t;
    struct train_progress q = {0};
    int found = 1;
    snprintf(bad, sizeof(bad), "%s/none.ckpt", dir);
    CHECK(trainer_create(&t, &f->e, &f->g, &f->be, &f->train, &f->test, 5) == DR_OK);
    CHECK(checkpoint_load(&t, &q, &found, bad) == DR_OK);
    CHECK(found == 0);

    /* a save that cannot be written fails cleanly */
    struct train_progress p = {1, 0, 0, -1, -1, 0, 0};
    snprintf(bad, sizeof(bad), "%s/no-such-dir/x.ckpt", dir);
    CHECK(checkpoint_save(bad, &t, &p) == DR_ERR_IO);
    trainer_free(&t);
}

/* Nothing but the checkpoint files this test made: no temporary file left behind. */
static void test_no_temporaries(void)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    int tmp = 0;
    while (d && (de = readdir(d)) != NULL)
        if (strstr(de->d_name, ".tmp.")) tmp++;
    if (d) closedir(d);
    CHECK(d != NULL);
    CHECK(tmp == 0);
}

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

/* checkpoint_remove deletes the checkpoint and the temporary files killed writers left
 * (path.tmp.PID), and nothing else. */
static void test_remove_leftovers(void)
{
    char ck[4200], t1[4300], t2[4300], other[4300], near[4300];
    snprintf(ck, sizeof(ck), "%s/gone.ckpt", dir);
    snprintf(t1, sizeof(t1), "%s.tmp.123", ck);
    snprintf(t2, sizeof(t2), "%s.tmp.4567", ck);
    snprintf(other, sizeof(other), "%s/other.ckpt.tmp.123", dir);
    snprintf(near, sizeof(near), "%s.tmpx", ck);
    const char *files[] = {ck, t1, t2, other, near};
    for (int i = 0; i < 5; i++) {
        FILE *f = fopen(files[i], "w");
        CHECK(f != NULL);
        if (f) fclose(f);
    }
    CHECK(checkpoint_remove(ck) == DR_OK);
    CHECK(!file_exists(ck) && !file_exists(t1) && !file_exists(t2));
    CHECK(file_exists(other) && file_exists(near));
    CHECK(checkpoint_remove(ck) == DR_OK); /* nothing left to delete is fine */
    unlink(other);
    unlink(near);
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char path[4200];
    while (d && (de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    rmdir(dir);
}

int main(void)
{
    struct fixture f;
    char ckpt[4200];
    memset(&f, 0, sizeof(f));
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(ckpt, sizeof(ckpt), "%s/run.ckpt", dir);
    const char *sets[] = {"train.epochs=3"};
    CHECK(load_experiment(&f.e, &f.g, sets, 1) == DR_OK);
    CHECK(make_dataset(&f.train, 512, 1) == DR_OK);
    CHECK(make_dataset(&f.test, 200, 2) == DR_OK);
    CHECK(backend_cpu_create(&f.be, 2) == DR_OK);
    if (check_failures == 0) {
        test_resume_is_bit_identical(&f, ckpt);
        char loop_ckpt[4200];
        snprintf(loop_ckpt, sizeof(loop_ckpt), "%s/loop.ckpt", dir);
        test_loop_hooks(&f, loop_ckpt);
        test_refusals(&f, ckpt);
        test_no_temporaries();
        test_remove_leftovers();
    }
    /* the weight averages are part of the state to resume */
    const char *averaged[2][5] = {
        {"train.epochs=3", "train.average.kind=\"ema\"", "train.average.every=3",
         "eval.tta=\"flip\"", "augment.alternate_flip=true"},
        {"train.epochs=3", "train.average.kind=\"lookahead\"", "train.average.every=2",
         "eval.tta=\"flip_translate\"", "train.lr_scale.bn_bias=8.0"}};
    for (int k = 0; k < 2 && check_failures == 0; k++) {
        struct fixture h = f;
        CHECK(load_experiment(&h.e, &h.g, averaged[k], 5) == DR_OK);
        if (check_failures == 0) test_resume_is_bit_identical(&h, ckpt);
        graph_free(&h.g);
        experiment_free(&h.e);
    }
    backend_destroy(&f.be);
    dataset_free(&f.train);
    dataset_free(&f.test);
    graph_free(&f.g);
    experiment_free(&f.e);
    remove_dir();
    return check_finish("checkpoint");
}

/* Checkpoint files (see checkpoint.h): a fixed header, a table of tensors, their fp32
 * contents in canonical form, and a trailer with the payload length and a checksum.
 * Built in memory, written to a temporary file, fsync'd and renamed. */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/crashpoint.h"
#include "base/status.h"

#define CKPT_MAGIC "DAWNCKPT"
#define CKPT_END "DRCKEND\n"
#define CKPT_VERSION 1u
#define CKPT_BYTE_ORDER 0x01020304u
#define CKPT_HEADER_BYTES 152
#define CKPT_ENTRY_BYTES 24
#define CKPT_TRAILER_BYTES 24

enum ckpt_role { ROLE_PARAM = 1, ROLE_MOMENTUM, ROLE_BN_MEAN, ROLE_BN_VAR, ROLE_AVG_PARAM,
                 ROLE_AVG_BN_MEAN, ROLE_AVG_BN_VAR };

/* One tensor of the table: what it is, and the trainer's tensor it comes from. */
struct ckpt_entry {
    uint32_t role, index;
    int32_t n, c, h, w;
    struct tensor *t;
};

/* Reports "dawnrun: checkpoint FILE: message" (dr_vreport) and returns status. */
static int ckpt_error(int status, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int ckpt_error(int status, const char *path, const char *fmt, ...)
{
    char what[EXPERIMENT_PATH_MAX + 256];
    va_list ap;
    snprintf(what, sizeof(what), "checkpoint %s", path);
    va_start(ap, fmt);
    dr_vreport(status, __FILE__, __LINE__, what, fmt, ap);
    va_end(ap);
    return status;
}

/* 64-bit FNV-1a over little-endian 64-bit words (then the tail bytes): fast enough to run
 * over every epoch's checkpoint, and any change of one word changes the result. */
static uint64_t ckpt_checksum(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    const uint64_t prime = 0x100000001b3ull;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = (h ^ w) * prime;
    }
    for (; i < n; i++) h = (h ^ p[i]) * prime;
    return h;
}

/* The trainer's tensors in file order: per parameter its value and momentum, then per BN
 * layer its running mean and variance; with a weight average, then the averaged
 * parameters and the averaged BN statistics. *out is malloc'd. */
static int ckpt_entries(struct ckpt_entry **out, int *count, const struct trainer *t)
{
    int rc = DR_OK, n = 0;
    const struct graph *g = t->g;
    const struct model *m = &t->model;
    size_t cap = (size_t)g->n_params * 3 + (size_t)g->count * 4 + 1;
    struct ckpt_entry *v = malloc(cap * sizeof(*v));
    CHECK_ALLOC(v, "the checkpoint table");
    for (int k = 0; k < g->n_params; k++) {
        struct tensor *ts[2] = {&m->p[k], &m->v[k]};
        for (int j = 0; j < 2; j++)
            v[n++] = (struct ckpt_entry){j == 0 ? ROLE_PARAM : ROLE_MOMENTUM, (uint32_t)k,
                                         ts[j]->n, ts[j]->c, ts[j]->h, ts[j]->w, ts[j]};
    }
    for (int i = 0; i < g->count; i++) {
        if (g->layers[i].spec.type != LAYER_BN) continue;
        struct tensor *ts[2] = {&m->bn_rmean[i], &m->bn_rvar[i]};
        for (int j = 0; j < 2; j++)
            v[n++] = (struct ckpt_entry){j == 0 ? ROLE_BN_MEAN : ROLE_BN_VAR, (uint32_t)i,
                                         ts[j]->n, ts[j]->c, ts[j]->h, ts[j]->w, ts[j]};
    }
    for (int k = 0; m->avg && k < g->n_params; k++) {
        struct tensor *a = &m->avg[k];
        v[n++] = (struct ckpt_entry){ROLE_AVG_PARAM, (uint32_t)k, a->n, a->c, a->h, a->w, a};
    }
    for (int i = 0; m->avg && i < g->count; i++) {
        if (g->layers[i].spec.type != LAYER_BN) continue;
        struct tensor *ts[2] = {&m->avg_rmean[i], &m->avg_rvar[i]};
        for (int j = 0; j < 2; j++)
            v[n++] = (struct ckpt_entry){j == 0 ? ROLE_AVG_BN_MEAN : ROLE_AVG_BN_VAR, (uint32_t)i,
                                         ts[j]->n, ts[j]->c, ts[j]->h, ts[j]->w, ts[j]};
    }
    *out = v;
    *count = n;
cleanup:
    return rc;
}

static size_t entry_floats(const struct ckpt_entry *e)
{
    return (size_t)e->n * (size_t)e->c * (size_t)e->h * (size_t)e->w;
}

/* ---- writing --------------------------------------------------------------------------- */

static unsigned char *put(unsigned char *p, const void *v, size_t n)
{
    memcpy(p, v, n);
    return p + n;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t k = write(fd, p, n);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) return -1;
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int fsync_retry(int fd)
{
    int r;
    do r = fsync(fd);
    while (r != 0 && errno == EINTR);
    return r;
}

/* Writes buf to path through a temporary file, fsync and rename, then fsyncs the
 * directory. On failure the temporary file is removed and path is untouched. */
static int write_atomically(const char *path, const unsigned char *buf, size_t n)
{
    int rc = DR_OK, fd = -1;
    size_t len = strlen(path);
    char *tmp = malloc(len + 32);
    char *dir = malloc(len + 2);
    CHECK_ALLOC(tmp, "a file name");
    CHECK_ALLOC(dir, "a file name");
    snprintf(tmp, len + 32, "%s.tmp.%ld", path, (long)getpid());
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        rc = ckpt_error(DR_ERR_IO, path, "cannot create %s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    if (write_all(fd, buf, n) != 0 || fsync_retry(fd) != 0) {
        rc = ckpt_error(DR_ERR_IO, path, "cannot write %s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    int closed = close(fd);
    fd = -1;
    if (closed != 0) {
        rc = ckpt_error(DR_ERR_IO, path, "cannot write %s: %s", tmp, strerror(errno));
        goto cleanup;
    }
    crashpoint("checkpoint-written");   /* a complete temporary file, not yet renamed */
    if (rename(tmp, path) != 0) {
        rc = ckpt_error(DR_ERR_IO, path, "cannot rename %s over it: %s", tmp, strerror(errno));
        goto cleanup;
    }
    tmp[0] = '\0';  /* renamed: nothing to remove */
    memcpy(dir, path, len + 1);
    char *slash = strrchr(dir, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == dir) dir[1] = '\0';
    else *slash = '\0';
    int dfd = open(dir, O_RDONLY);
    if (dfd >= 0) {
        /* the rename is durable once the directory is; a failure here is not fatal */
        (void)fsync_retry(dfd);
        close(dfd);
    }
cleanup:
    if (fd >= 0) close(fd);
    if (rc != DR_OK && tmp && tmp[0]) unlink(tmp);
    free(tmp);
    free(dir);
    return rc;
}

int checkpoint_save(const char *path, const struct trainer *t, const struct train_progress *p)
{
    int rc = DR_OK, count = 0;
    struct ckpt_entry *ents = NULL;
    unsigned char *buf = NULL;
    char hash[65];
    TRY(ckpt_entries(&ents, &count, t));
    size_t data = 0;
    for (int i = 0; i < count; i++) data += entry_floats(&ents[i]) * sizeof(float);
    size_t payload = CKPT_HEADER_BYTES + (size_t)count * CKPT_ENTRY_BYTES + data;
    buf = malloc(payload + CKPT_TRAILER_BYTES);
    CHECK_ALLOC(buf, "the checkpoint");

    experiment_hash(t->e, hash);
    uint32_t version = CKPT_VERSION, order = CKPT_BYTE_ORDER, n_t = (uint32_t)count, zero = 0;
    uint64_t seed = t->seed;
    int64_t step = t->step;
    int32_t epoch = p->epoch, target_epoch = p->target_epoch;
    double times[5] = {p->train_time, p->total_time, p->target_time, p->last_test_acc,
                       p->last_test_loss};
    unsigned char *w = buf;
    w = put(w, CKPT_MAGIC, 8);
    w = put(w, &version, 4);
    w = put(w, &order, 4);
    w = put(w, hash, 64);
    w = put(w, &seed, 8);
    w = put(w, &step, 8);
    w = put(w, &epoch, 4);
    w = put(w, &target_epoch, 4);
    w = put(w, times, sizeof(times));
    w = put(w, &n_t, 4);
    w = put(w, &zero, 4);
    for (int i = 0; i < count; i++) {
        const struct ckpt_entry *e = &ents[i];
        int32_t shape[4] = {e->n, e->c, e->h, e->w};
        w = put(w, &e->role, 4);
        w = put(w, &e->index, 4);
        w = put(w, shape, sizeof(shape));
    }
    for (int i = 0; i < count; i++) {
        TRY(t->be->ops->tensor_read(t->be->ctx, w, ents[i].t));
        w += entry_floats(&ents[i]) * sizeof(float);
    }
    uint64_t len = payload, sum = ckpt_checksum(buf, payload);
    w = put(w, &len, 8);
    w = put(w, &sum, 8);
    put(w, CKPT_END, 8);
    TRY(write_atomically(path, buf, payload + CKPT_TRAILER_BYTES));
cleanup:
    free(ents);
    free(buf);
    return rc;
}

/* ---- reading --------------------------------------------------------------------------- */

/* Reads the whole file; *found = 0 when it does not exist. */
static int read_file(unsigned char **out, size_t *size, int *found, const char *path)
{
    int rc = DR_OK;
    unsigned char *buf = NULL;
    struct stat st;
    *out = NULL;
    *found = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        if (errno == ENOENT) return DR_OK;
        return ckpt_error(DR_ERR_IO, path, "cannot open: %s", strerror(errno));
    }
    *found = 1;
    if (fstat(fd, &st) != 0) {
        rc = ckpt_error(DR_ERR_IO, path, "cannot stat: %s", strerror(errno));
        goto cleanup;
    }
    size_t n = (size_t)st.st_size, got = 0;
    buf = malloc(n ? n : 1);
    CHECK_ALLOC(buf, "the checkpoint");
    while (got < n) {
        ssize_t k = read(fd, buf + got, n - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            rc = ckpt_error(DR_ERR_IO, path, "cannot read: %s", strerror(errno));
            goto cleanup;
        }
        if (k == 0) break;
        got += (size_t)k;
    }
    *out = buf;
    *size = got;
    buf = NULL;
cleanup:
    close(fd);
    free(buf);
    return rc;
}

static const unsigned char *get(void *v, const unsigned char *p, size_t n)
{
    memcpy(v, p, n);
    return p + n;
}

int checkpoint_load(struct trainer *t, struct train_progress *p, int *found, const char *path)
{
    int rc = DR_OK, count = 0;
    unsigned char *buf = NULL;
    struct ckpt_entry *ents = NULL;
    size_t size = 0;
    char want_hash[65], hash[65];
    TRY(read_file(&buf, &size, found, path));
    if (!*found) goto cleanup;

    /* trailer: length and checksum of everything before it */
    uint64_t len = 0, sum = 0;
    if (size < CKPT_HEADER_BYTES + CKPT_TRAILER_BYTES ||
        memcmp(buf + size - 8, CKPT_END, 8) != 0) {
        rc = ckpt_error(DR_ERR_DATA, path, "damaged or truncated (%zu bytes, no end marker)", size);
        goto cleanup;
    }
    get(&len, buf + size - CKPT_TRAILER_BYTES, 8);
    get(&sum, buf + size - CKPT_TRAILER_BYTES + 8, 8);
    if (len != size - CKPT_TRAILER_BYTES || memcmp(buf, CKPT_MAGIC, 8) != 0) {
        rc = ckpt_error(DR_ERR_DATA, path, "damaged or truncated (%zu bytes)", size);
        goto cleanup;
    }
    if (ckpt_checksum(buf, (size_t)len) != sum) {
        rc = ckpt_error(DR_ERR_DATA, path, "damaged: checksum mismatch");
        goto cleanup;
    }

    /* header */
    uint32_t version, order, n_t, zero;
    uint64_t seed;
    int64_t step;
    int32_t epoch, target_epoch;
    double times[5];
    const unsigned char *r = buf + 8;
    r = get(&version, r, 4);
    r = get(&order, r, 4);
    r = get(hash, r, 64);
    hash[64] = '\0';
    r = get(&seed, r, 8);
    r = get(&step, r, 8);
    r = get(&epoch, r, 4);
    r = get(&target_epoch, r, 4);
    r = get(times, r, sizeof(times));
    r = get(&n_t, r, 4);
    r = get(&zero, r, 4);
    if (order != CKPT_BYTE_ORDER) {
        rc = ckpt_error(DR_ERR_DATA, path, "written on a machine of another byte order");
        goto cleanup;
    }
    if (version != CKPT_VERSION) {
        rc = ckpt_error(DR_ERR_DATA, path, "format version %u, this dawnrun reads %u", version,
                        CKPT_VERSION);
        goto cleanup;
    }
    experiment_hash(t->e, want_hash);
    if (strcmp(hash, want_hash) != 0) {
        rc = ckpt_error(DR_ERR_DATA, path,
                        "written for another config (hash %.16s, this run's is %.16s)", hash,
                        want_hash);
        goto cleanup;
    }
    if (seed != t->seed) {
        rc = ckpt_error(DR_ERR_DATA, path, "written for seed %llu, this run's is %llu",
                        (unsigned long long)seed, (unsigned long long)t->seed);
        goto cleanup;
    }
    long expect_step = (long)epoch * t->plan.steps_per_epoch;
    if (expect_step > t->plan.total_steps) expect_step = t->plan.total_steps;
    if (epoch < 1 || epoch > t->plan.epochs || step != expect_step) {
        rc = ckpt_error(DR_ERR_DATA, path, "inconsistent: epoch %d, step %lld of %d epochs",
                        (int)epoch, (long long)step, t->plan.epochs);
        goto cleanup;
    }

    /* table: must be exactly this trainer's tensors */
    TRY(ckpt_entries(&ents, &count, t));
    size_t data = 0;
    for (int i = 0; i < count; i++) data += entry_floats(&ents[i]) * sizeof(float);
    if (n_t != (uint32_t)count ||
        len != CKPT_HEADER_BYTES + (size_t)count * CKPT_ENTRY_BYTES + data) {
        rc = ckpt_error(DR_ERR_DATA, path, "holds %u tensors (%llu bytes), this network needs %d",
                        n_t, (unsigned long long)len, count);
        goto cleanup;
    }
    for (int i = 0; i < count; i++) {
        uint32_t role, index;
        int32_t shape[4];
        r = get(&role, r, 4);
        r = get(&index, r, 4);
        r = get(shape, r, sizeof(shape));
        const struct ckpt_entry *e = &ents[i];
        if (role != e->role || index != e->index || shape[0] != e->n || shape[1] != e->c ||
            shape[2] != e->h || shape[3] != e->w) {
            rc = ckpt_error(DR_ERR_DATA, path, "tensor %d has another shape than this network's",
                            i);
            goto cleanup;
        }
    }

    /* everything checked: restore */
    for (int i = 0; i < count; i++) {
        TRY(t->be->ops->tensor_write(t->be->ctx, ents[i].t, r));
        r += entry_floats(&ents[i]) * sizeof(float);
    }
    t->step = (long)step;
    p->epoch = epoch;
    p->target_epoch = target_epoch;
    p->train_time = times[0];
    p->total_time = times[1];
    p->target_time = times[2];
    p->last_test_acc = times[3];
    p->last_test_loss = times[4];
cleanup:
    free(buf);
    free(ents);
    return rc;
}

/* Deletes the temporary files (path.tmp.PID) killed writers left beside path, and this
 * process's own too unless keep_own. */
static int remove_leftovers(const char *path, int keep_own)
{
    int rc = DR_OK;
    char *dir = NULL, own[32];
    DIR *d = NULL;
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t dlen = slash ? (size_t)(slash - path) : 1;
    snprintf(own, sizeof(own), ".tmp.%ld", (long)getpid());
    dir = malloc(dlen + 1);
    CHECK_ALLOC(dir, "a directory name");
    memcpy(dir, slash ? path : ".", dlen);
    dir[dlen] = '\0';
    d = opendir(dir);
    if (!d) goto cleanup; /* no directory: no leftovers */
    size_t blen = strlen(base);
    for (struct dirent *ent; (ent = readdir(d)) != NULL;) {
        if (strncmp(ent->d_name, base, blen) || strncmp(ent->d_name + blen, ".tmp.", 5)) continue;
        if (keep_own && !strcmp(ent->d_name + blen, own)) continue;
        size_t n = dlen + 1 + strlen(ent->d_name) + 1;
        char *leftover = malloc(n);
        CHECK_ALLOC(leftover, "a file name");
        snprintf(leftover, n, "%s/%s", dir, ent->d_name);
        if (unlink(leftover) != 0 && errno != ENOENT)
            rc = ckpt_error(DR_ERR_IO, leftover, "cannot remove it: %s", strerror(errno));
        free(leftover);
    }
cleanup:
    if (d) closedir(d);
    free(dir);
    return rc;
}

int checkpoint_remove(const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT)
        return ckpt_error(DR_ERR_IO, path, "cannot remove it: %s", strerror(errno));
    return remove_leftovers(path, 0);
}

int checkpoint_remove_leftovers(const char *path)
{
    return remove_leftovers(path, 1);
}

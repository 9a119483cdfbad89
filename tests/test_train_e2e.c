/* End-to-end CPU training: a small network on a real CIFAR-10 subset must learn (loss
 * falls, test accuracy far above chance), and two runs with the same seed must give
 * bit-identical epoch records while another seed differs. Needs DAWNRUN_DATA (skips
 * with 77 without it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "engine/core/data.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "base/status.h"
#include "engine/core/train.h"

#define MAX_EPOCHS 16

struct recorder {
    struct epoch_record r[MAX_EPOCHS];
    int n;
};

static int record(void *user, const struct epoch_record *r, const struct train_progress *p)
{
    struct recorder *rec = user;
    (void)p;
    if (rec->n < MAX_EPOCHS) rec->r[rec->n++] = *r;
    printf("epoch %d lr %.4f train loss %.4f acc %.4f test loss %.4f acc %.4f (%.2f s)\n",
           r->epoch, r->lr, r->train_loss, r->train_acc, r->test_loss, r->test_acc, r->train_time);
    return DR_OK;
}

static int train_once(const struct experiment *e, const struct graph *g,
                      const struct dataset *train, const struct dataset *test, uint64_t seed,
                      struct recorder *rec)
{
    struct backend be = {0};
    struct trainer t;
    struct train_progress res;
    int rc = backend_cpu_create(&be, 2);
    if (rc != DR_OK) return rc;
    rc = trainer_create(&t, e, g, &be, train, test, seed);
    if (rc == DR_OK) {
        struct train_hooks hooks = {record, NULL, NULL, NULL, rec};
        train_progress_start(&res);
        rc = trainer_run(&t, &hooks, &res);
        trainer_free(&t);
    }
    backend_destroy(&be);
    return rc;
}

/* Same numbers to the bit (the wall-clock fields excepted). */
static int same_records(const struct recorder *a, const struct recorder *b)
{
    if (a->n != b->n) return 0;
    for (int i = 0; i < a->n; i++) {
        const struct epoch_record *x = &a->r[i], *y = &b->r[i];
        if (x->train_loss != y->train_loss || x->train_acc != y->train_acc ||
            x->test_loss != y->test_loss || x->test_acc != y->test_acc || x->lr != y->lr)
            return 0;
    }
    return 1;
}

int main(void)
{
    const char *data = check_data_dir();
    const char *src = getenv("DAWNRUN_SOURCE_DIR");
    if (!data) {
        printf("DAWNRUN_DATA not set: skipping the end-to-end test\n");
        return 77;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/tests/e2e/tiny.cfg", src ? src : ".");
    struct experiment e;
    struct graph g;
    struct dataset train = {0}, test = {0};
    char err[512];
    CHECK(experiment_load(&e, path, NULL, 0) == DR_OK);
    CHECK(graph_build(&g, &e.net, 3, 32, 32, err, sizeof(err)) == DR_OK);
    CHECK(cifar10_load(&train, &test, data, e.data.train_subset, e.data.test_subset) == DR_OK);
    if (check_failures) return check_finish("train_e2e");

    struct recorder a = {0}, b = {0}, c = {0};
    CHECK(train_once(&e, &g, &train, &test, 1, &a) == DR_OK);
    CHECK(a.n == 4);
    if (a.n == 4) {
        CHECK(a.r[3].train_loss < a.r[0].train_loss);
        CHECK(a.r[3].train_loss < 0.9 * log(10.0));
        CHECK(a.r[3].test_acc > 0.30); /* chance is 0.10 */
        CHECK(a.r[3].lr > 0.0 && a.r[3].lr < 0.01); /* last step of [0,1,4] -> [0,0.4,0] */
    }
    CHECK(train_once(&e, &g, &train, &test, 1, &b) == DR_OK);
    CHECK(same_records(&a, &b));
    CHECK(train_once(&e, &g, &train, &test, 2, &c) == DR_OK);
    CHECK(!same_records(&a, &c));

    dataset_free(&train);
    dataset_free(&test);
    graph_free(&g);
    experiment_free(&e);
    return check_finish("train_e2e");
}

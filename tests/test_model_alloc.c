/* Out of memory while a model is created: every host allocation of model_create (its
 * tables, the backward plan, the CPU engine's tensors) is made to fail in turn through
 * the fault hook of base/alloc.h, and each must end in DR_ERR_NOMEM with the model
 * released (and the same for model_average_start); after a clean create the backward plan marks exactly the inputs whose
 * gradient adds to one already written. Also: model_set_batch refuses a batch larger
 * than the model was allocated for. */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "base/alloc.h"
#include "kernels/backend.h"
#include "engine/core/graph.h"
#include "engine/core/model.h"
#include "base/status.h"

static struct layer_spec *add(struct net_spec *s, const char *name, enum layer_type t)
{
    struct layer_spec *l = net_spec_add(s, t);
    if (!l) return NULL;
    snprintf(l->name, sizeof(l->name), "%s", name);
    return l;
}

/* conv -> relu -> conv2 -> add(relu, conv2) -> gavgpool -> flatten -> linear: relu's
 * gradient is written by one consumer and added to by the other. */
static int branch_net(struct graph *g)
{
    struct net_spec s = {0};
    char err[256];
    int rc = DR_ERR_NOMEM;
    struct layer_spec *c1 = add(&s, "conv1", LAYER_CONV);
    if (c1) c1->out = 4;
    int ok = c1 && add(&s, "relu", LAYER_RELU);
    struct layer_spec *c2 = ok ? add(&s, "conv2", LAYER_CONV) : NULL;
    if (c2) c2->out = 4;
    struct layer_spec *sum = c2 ? add(&s, "sum", LAYER_ADD) : NULL;
    if (sum) {
        sum->n_inputs = 2;
        snprintf(sum->inputs[0], sizeof sum->inputs[0], "relu");
        snprintf(sum->inputs[1], sizeof sum->inputs[1], "conv2");
    }
    ok = sum && add(&s, "pool", LAYER_GAVGPOOL) && add(&s, "flat", LAYER_FLATTEN);
    struct layer_spec *lin = ok ? add(&s, "linear", LAYER_LINEAR) : NULL;
    if (lin) {
        lin->out = 10;
        rc = graph_build(g, &s, 3, 8, 8, err, sizeof(err));
        if (rc != DR_OK) printf("graph_build: %s\n", err);
    }
    net_spec_free(&s);
    return rc;
}

/* The number of accumulate flags set over all live (layer, input) pairs. */
static int count_accum(const struct model *m)
{
    int n = 0;
    for (int i = 1; i < m->g->count; i++)
        for (int s = 0; s < m->g->layers[i].n_inputs; s++)
            n += m->accum[i * GRAPH_MAX_INPUTS + s] != 0;
    return n;
}

static void test_every_allocation_fails_cleanly(const struct graph *g, struct backend *be)
{
    struct model m;
    int failures = 0;
    for (long nth = 1; nth < 10000; nth++) {
        long before = dr_alloc_faults();
        dr_alloc_fail_at(nth);
        int rc = model_create(&m, g, be, 4);
        dr_alloc_fail_at(0);
        int fired = dr_alloc_faults() != before;
        if (!fired) {   /* every allocation of model_create has been failed once */
            CHECK(rc == DR_OK);
            if (rc == DR_OK) {
                CHECK(count_accum(&m) == 1);
                model_free(&m);
            }
            printf("model_create: %d allocations, each failed once\n", failures);
            CHECK(failures > 20);   /* the tables, the plan and every tensor */
            return;
        }
        failures++;
        if (rc != DR_ERR_NOMEM) {
            printf("allocation %ld failed, model_create returned %d (%s)\n", nth, rc,
                   dr_status_str(rc));
            CHECK(rc == DR_ERR_NOMEM);
            if (rc == DR_OK) model_free(&m);
        } else {
            CHECK(m.g == NULL && m.y == NULL && m.accum == NULL);   /* released */
        }
    }
    CHECK(!"model_create never finished without a fault");
}

/* The same for the weight-average copies: a failed start leaves no half-made tables. */
static void test_average_start_fails_cleanly(const struct graph *g, struct backend *be)
{
    struct model m;
    CHECK(model_create(&m, g, be, 4) == DR_OK);
    if (!m.g) return;
    for (long nth = 1; nth < 10000; nth++) {
        long before = dr_alloc_faults();
        dr_alloc_fail_at(nth);
        int rc = model_average_start(&m);
        dr_alloc_fail_at(0);
        if (dr_alloc_faults() == before) {
            CHECK(rc == DR_OK && m.avg != NULL);
            printf("model_average_start: %ld allocations, each failed once\n", nth - 1);
            CHECK(nth > 3);
            break;
        }
        CHECK(rc == DR_ERR_NOMEM);
        CHECK(m.avg == NULL && m.avg_rmean == NULL && m.avg_rvar == NULL);
    }
    model_free(&m);
}

static void test_set_batch_bounds(const struct graph *g, struct backend *be)
{
    struct model m;
    CHECK(model_create(&m, g, be, 4) == DR_OK);
    if (!m.g) return;
    CHECK(model_set_batch(&m, 3) == DR_OK);
    CHECK(m.y[0].n == 3 && m.probs.n == 3 && m.labels.n == 3);
    CHECK(model_set_batch(&m, 4) == DR_OK);
    CHECK(model_set_batch(&m, 5) == DR_ERR_INTERNAL);
    CHECK(model_set_batch(&m, 0) == DR_ERR_INTERNAL);
    CHECK(m.y[0].n == 4 && m.labels.n == 4);   /* a refused size changes nothing */
    model_free(&m);
}

int main(void)
{
    struct graph g;
    struct backend be = {0};
    memset(&g, 0, sizeof g);
    CHECK(branch_net(&g) == DR_OK);
    CHECK(backend_cpu_create(&be, 1) == DR_OK);
    if (g.count > 0 && be.ops) {
        test_every_allocation_fails_cleanly(&g, &be);
        test_average_start_fails_cleanly(&g, &be);
        test_set_batch_bounds(&g, &be);
    }
    backend_destroy(&be);
    graph_free(&g);
    return check_finish("model_alloc");
}

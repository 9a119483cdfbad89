/* The step as a plan (kernels/plan.h, engine/core/model_plan.c) on the CPU engine:
 * plan_node_tensors names every op kind's outputs as written and the outputs it adds to
 * also as read; plan_signature follows tensor handles' data pointers and sizes and
 * nothing else; the backward pass the plan's builders describe matches central
 * differences of the loss; the trainer's step plan, run twice, advances its cursor and takes the
 * next rows of the permutation; and a run of the step plan (two epochs, a changing
 * learning rate, per-kind scales, a bias trained in the first epoch only, an EMA,
 * test-time views over a partial last batch) gives bit for bit what the same training
 * driven from the host gives: rows written per step, augment, forward, loss, backward,
 * one sgd_update per parameter with the lr of train_step_hparams, param_lerp per
 * averaged tensor; plan_free has the backend that ran the plan forget it. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/status.h"
#include "engine/core/data.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "engine/core/model.h"
#include "engine/core/shuffle.h"
#include "engine/core/train.h"
#include "kernels/backend.h"
#include "kernels/plan.h"
#include "kernels/rng.h"

/* ------------------------------------------------------------------ plan_node_tensors */

struct want {
    const struct tensor *t;
    int written;
};

/* Whether node n lists exactly the handles of w (in any order), each with its flag. */
static int lists_exactly(const struct plan_node *n, const struct want *w, int nw)
{
    const struct tensor *ts[PLAN_NODE_MAX_TENSORS];
    int wr[PLAN_NODE_MAX_TENSORS], used[PLAN_NODE_MAX_TENSORS] = {0};
    int count = plan_node_tensors(ts, wr, n);
    if (count != nw) {
        printf("%s: %d tensors listed, %d expected\n", plan_op_name(n->op), count, nw);
        return 0;
    }
    for (int i = 0; i < nw; i++) {
        int found = 0;
        for (int j = 0; j < count && !found; j++)
            if (!used[j] && ts[j] == w[i].t && wr[j] == w[i].written) used[j] = found = 1;
        if (!found) {
            printf("%s: tensor %d (%s) not listed\n", plan_op_name(n->op), i,
                   w[i].written ? "written" : "read");
            return 0;
        }
    }
    return 1;
}

#define WANT(...) ((const struct want[]){__VA_ARGS__})
#define NWANT(...) ((int)(sizeof((const struct want[]){__VA_ARGS__}) / sizeof(struct want)))
#define EXPECT_LIST(n, ...) CHECK(lists_exactly((n), WANT(__VA_ARGS__), NWANT(__VA_ARGS__)))

/* Every op kind, with every tensor argument a distinct handle; the ops that take an
 * accumulate flag once with it set (the output is read too) and once clear. */
static void test_node_tensors(void)
{
    static struct tensor T[24];
    static const struct sgd_item items[1];
    static const struct lerp_item pairs[1];
    int covered[PLAN_OP_COUNT] = {0};
    struct plan_node n;
    for (int acc = 0; acc < 2; acc++) {
#define NODE(kind) (plan_node_init(&n, (kind)), covered[kind] = 1)
        NODE(PLAN_BATCH);
        n.dst[PLAN_BATCH_X] = &T[0], n.dst[PLAN_BATCH_LABELS] = &T[1];
        n.src[PLAN_BATCH_IMAGES] = &T[2], n.src[PLAN_BATCH_IMAGE_LABELS] = &T[3];
        n.src[PLAN_BATCH_ROWS] = &T[4], n.src[PLAN_BATCH_CURSOR] = &T[5];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 0}, {&T[3], 0}, {&T[4], 0}, {&T[5], 0});

        NODE(PLAN_CONV_FWD);
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1], n.src[PLAN_W] = &T[2];
        n.src[PLAN_B] = &T[3];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0}, {&T[3], 0});

        NODE(PLAN_CONV_BWD);
        n.dst[PLAN_DX] = &T[0], n.dst[PLAN_DW] = &T[1], n.dst[PLAN_DB] = &T[2];
        n.src[PLAN_DY] = &T[3], n.src[PLAN_BWD_X] = &T[4], n.src[PLAN_BWD_W] = &T[5];
        n.acc = acc;
        if (acc)
            EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0},
                        {&T[4], 0}, {&T[5], 0});
        else
            EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0}, {&T[4], 0},
                        {&T[5], 0});

        NODE(PLAN_BN_FWD_TRAIN);   /* the running statistics are updated: read and written */
        n.dst[PLAN_Y] = &T[0], n.dst[PLAN_SAVE_MEAN] = &T[1];
        n.dst[PLAN_SAVE_INVSTD] = &T[2], n.dst[PLAN_RUNNING_MEAN] = &T[3];
        n.dst[PLAN_RUNNING_VAR] = &T[4], n.src[PLAN_X] = &T[5];
        n.src[PLAN_GAMMA] = &T[6], n.src[PLAN_BETA] = &T[7];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 1}, {&T[3], 0}, {&T[4], 1},
                    {&T[4], 0}, {&T[5], 0}, {&T[6], 0}, {&T[7], 0});

        NODE(PLAN_BN_FWD_EVAL);
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1], n.src[PLAN_GAMMA] = &T[2];
        n.src[PLAN_BETA] = &T[3], n.src[PLAN_RUNNING_MEAN] = &T[4];
        n.src[PLAN_RUNNING_VAR] = &T[5];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0}, {&T[3], 0}, {&T[4], 0}, {&T[5], 0});

        NODE(PLAN_BN_BWD);
        n.dst[PLAN_DX] = &T[0], n.dst[PLAN_DGAMMA] = &T[1], n.dst[PLAN_DBETA] = &T[2];
        n.src[PLAN_DY] = &T[3], n.src[PLAN_BWD_X] = &T[4], n.src[PLAN_BWD_GAMMA] = &T[5];
        n.src[PLAN_BWD_SAVE_MEAN] = &T[6], n.src[PLAN_BWD_SAVE_INVSTD] = &T[7];
        n.acc = acc;
        if (acc)
            EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0},
                        {&T[4], 0}, {&T[5], 0}, {&T[6], 0}, {&T[7], 0});
        else
            EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0}, {&T[4], 0},
                        {&T[5], 0}, {&T[6], 0}, {&T[7], 0});

        NODE(PLAN_ACT_FWD);
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0});

        NODE(PLAN_ACT_BWD);
        n.dst[PLAN_DX] = &T[0], n.src[PLAN_DY] = &T[1], n.src[PLAN_BWD_X] = &T[2];
        n.acc = acc;
        if (acc) EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 0}, {&T[2], 0});
        else EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0});

        NODE(PLAN_POOL_FWD);
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0});

        NODE(PLAN_POOL_BWD);
        n.dst[PLAN_DX] = &T[0], n.src[PLAN_DY] = &T[1], n.src[PLAN_BWD_X] = &T[2];
        n.src[PLAN_BWD_Y] = &T[3], n.acc = acc;
        if (acc) EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 0}, {&T[2], 0}, {&T[3], 0});
        else EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0}, {&T[3], 0});

        NODE(PLAN_CONCAT_FWD);
        n.dst[PLAN_Y] = &T[0], n.src[0] = &T[1], n.src[1] = &T[2];
        n.src[2] = &T[3], n.n_src = 3;
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0}, {&T[3], 0});

        NODE(PLAN_CONCAT_BWD);   /* the image's gradient (NULL) is left out */
        n.dst[0] = &T[0], n.dst[1] = NULL;
        n.dst[2] = &T[2], n.src[PLAN_DY] = &T[3], n.n_dst = 3;
        n.acc = (acc ? 1u : 0u) | (acc ? 0u : 4u);   /* dst[0] or dst[2] added to */
        if (acc) EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[2], 1}, {&T[3], 0});
        else EXPECT_LIST(&n, {&T[0], 1}, {&T[2], 1}, {&T[2], 0}, {&T[3], 0});

        NODE(PLAN_ADD_FWD);
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_ADD_A] = &T[1], n.src[PLAN_ADD_B] = &T[2];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0});

        NODE(PLAN_SCALE_FWD);
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0});

        NODE(PLAN_SCALED_COPY);
        n.dst[PLAN_DX] = &T[0], n.src[PLAN_DY] = &T[1], n.acc = acc;
        if (acc) EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 0});
        else EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0});

        NODE(PLAN_FLATTEN_FWD);
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0});

        NODE(PLAN_FLATTEN_BWD);
        n.dst[PLAN_DX] = &T[0], n.src[PLAN_DY] = &T[1], n.acc = acc;
        if (acc) EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 0});
        else EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0});

        NODE(PLAN_LINEAR_FWD);   /* no bias: NULL is left out */
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1], n.src[PLAN_W] = &T[2];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0});

        NODE(PLAN_LINEAR_BWD);
        n.dst[PLAN_DX] = &T[0], n.dst[PLAN_DW] = &T[1], n.dst[PLAN_DB] = &T[2];
        n.src[PLAN_DY] = &T[3], n.src[PLAN_BWD_X] = &T[4], n.src[PLAN_BWD_W] = &T[5];
        n.acc = acc;
        if (acc)
            EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0},
                        {&T[4], 0}, {&T[5], 0});
        else
            EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0}, {&T[4], 0},
                        {&T[5], 0});

        NODE(PLAN_XENT_FWD);   /* the stats are added to */
        n.dst[PLAN_XENT_STATS] = &T[0], n.dst[PLAN_XENT_PROBS] = &T[1];
        n.src[PLAN_XENT_LOGITS] = &T[2], n.src[PLAN_XENT_LABELS] = &T[3];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 1}, {&T[2], 0}, {&T[3], 0});

        NODE(PLAN_XENT_BWD);
        n.dst[PLAN_XENT_DLOGITS] = &T[0], n.src[PLAN_XENT_BWD_PROBS] = &T[1];
        n.src[PLAN_XENT_LABELS] = &T[2];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0});

        NODE(PLAN_SGD);   /* the items are read from the node itself, not listed */
        n.par.sgd.items = items, n.par.sgd.count = 1, n.src[PLAN_SGD_LR_TABLE] = &T[0];
        n.src[PLAN_SGD_CURSOR] = &T[1];
        EXPECT_LIST(&n, {&T[0], 0}, {&T[1], 0});

        NODE(PLAN_LERP);   /* no slots: the items are read from the node itself */
        n.par.lerp.items = pairs, n.par.lerp.count = 1;
        {
            const struct tensor *ts[PLAN_NODE_MAX_TENSORS];
            int written[PLAN_NODE_MAX_TENSORS];
            CHECK(plan_node_tensors(ts, written, &n) == 0);
        }

        NODE(PLAN_CURSOR_ADVANCE);
        n.dst[PLAN_CURSOR] = &T[0];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0});

        NODE(PLAN_MUON);   /* as SGD: the items are the node's own, not listed */
        n.par.muon.items = items, n.par.muon.count = 1, n.src[PLAN_SGD_LR_TABLE] = &T[0];
        n.src[PLAN_SGD_CURSOR] = &T[1];
        EXPECT_LIST(&n, {&T[0], 0}, {&T[1], 0});
        NODE(PLAN_BN_ACT_TRAIN);   /* as BN_FWD_TRAIN, then the fused outputs and inputs */
        for (int i = 0; i < 10; i++) n.dst[i] = &T[i];
        for (int i = 0; i < 4; i++) n.src[i] = &T[10 + i];
        n.src[PLAN_BNA_ADD_A] = &T[14], n.src[PLAN_BNA_ADD_B] = &T[15];
        n.src[PLAN_BNA_VEC_IN] = &T[16], n.src[PLAN_BNA_ADD_PRO_X] = &T[17];
        n.src[PLAN_BNA_ADD_PRO_COEF] = &T[18];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 1}, {&T[3], 0}, {&T[4], 1},
                    {&T[4], 0}, {&T[5], 1}, {&T[6], 1}, {&T[7], 1}, {&T[8], 1}, {&T[9], 1},
                    {&T[10], 0}, {&T[11], 0}, {&T[12], 0}, {&T[13], 0}, {&T[14], 0},
                    {&T[15], 0}, {&T[16], 0}, {&T[17], 0}, {&T[18], 0});

        NODE(PLAN_CONV_FUSED_FWD);   /* every slot: residual, prologue, sums */
        for (int i = 0; i < 3; i++) n.dst[i] = &T[i];
        for (int i = 0; i < 7; i++) n.src[i] = &T[3 + i];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0}, {&T[4], 0}, {&T[5], 0},
                    {&T[6], 0}, {&T[7], 0}, {&T[8], 0}, {&T[9], 0});

        NODE(PLAN_CONV_FUSED_BWD);   /* with the batch norm's backward; dx may be added to */
        for (int i = 0; i < 6; i++) n.dst[i] = &T[i];
        for (int i = 0; i < 10; i++) n.src[i] = &T[6 + i];
        n.acc = acc;
        if (acc)
            EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 1}, {&T[2], 1}, {&T[3], 1},
                        {&T[4], 1}, {&T[5], 1}, {&T[6], 0}, {&T[7], 0}, {&T[8], 0}, {&T[9], 0},
                        {&T[10], 0}, {&T[11], 0}, {&T[12], 0}, {&T[13], 0}, {&T[14], 0},
                        {&T[15], 0});
        else
            EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 1}, {&T[4], 1},
                        {&T[5], 1}, {&T[6], 0}, {&T[7], 0}, {&T[8], 0}, {&T[9], 0},
                        {&T[10], 0}, {&T[11], 0}, {&T[12], 0}, {&T[13], 0}, {&T[14], 0},
                        {&T[15], 0});

        NODE(PLAN_BN_APPLY_BWD);   /* as BN_BWD, then the vectors */
        for (int i = 0; i < 3; i++) n.dst[i] = &T[i];
        for (int i = 0; i < 6; i++) n.src[i] = &T[3 + i];
        n.acc = acc;
        if (acc)
            EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0},
                        {&T[4], 0}, {&T[5], 0}, {&T[6], 0}, {&T[7], 0}, {&T[8], 0});
        else
            EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0}, {&T[4], 0},
                        {&T[5], 0}, {&T[6], 0}, {&T[7], 0}, {&T[8], 0});

        NODE(PLAN_ADD_PRO);   /* the operands, then the batch norm's x and coefficients */
        n.dst[PLAN_Y] = &T[0];
        for (int i = 0; i < 4; i++) n.src[i] = &T[1 + i];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0}, {&T[3], 0}, {&T[4], 0});

        NODE(PLAN_BN_ACT_EVAL);   /* no statistics written, no coefficients kept */
        n.dst[PLAN_Y] = &T[0], n.dst[PLAN_BNA_ACT] = &T[1], n.dst[PLAN_BNA_OUT] = &T[2];
        for (int i = 0; i < 6; i++) n.src[i] = &T[3 + i];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 0}, {&T[4], 0}, {&T[5], 0},
                    {&T[6], 0}, {&T[7], 0}, {&T[8], 0});

        NODE(PLAN_BN_ACT_BWD);   /* with a pool's tensors */
        for (int i = 0; i < 5; i++) n.dst[i] = &T[i];
        for (int i = 0; i < 9; i++) n.src[i] = &T[5 + i];
        n.acc = acc;
        if (acc)
            EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 1}, {&T[2], 1}, {&T[3], 1},
                        {&T[4], 1}, {&T[5], 0}, {&T[6], 0}, {&T[7], 0}, {&T[8], 0}, {&T[9], 0},
                        {&T[10], 0}, {&T[11], 0}, {&T[12], 0}, {&T[13], 0});
        else
            EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 1}, {&T[3], 1}, {&T[4], 1},
                        {&T[5], 0}, {&T[6], 0}, {&T[7], 0}, {&T[8], 0}, {&T[9], 0}, {&T[10], 0},
                        {&T[11], 0}, {&T[12], 0}, {&T[13], 0});

        NODE(PLAN_DROPOUT_FWD);   /* the mask from the cursor's step */
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1], n.src[PLAN_DROPOUT_CURSOR] = &T[2];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0});

        NODE(PLAN_DROPOUT_BWD);
        n.dst[PLAN_DX] = &T[0], n.src[PLAN_DY] = &T[1], n.src[PLAN_DROPOUT_CURSOR] = &T[2];
        n.acc = acc;
        if (acc) EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 0}, {&T[2], 0});
        else EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0});

        NODE(PLAN_TEMPERATURE_FWD);   /* t is read */
        n.dst[PLAN_Y] = &T[0], n.src[PLAN_X] = &T[1], n.src[PLAN_W] = &T[2];
        EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 0}, {&T[2], 0});

        NODE(PLAN_TEMPERATURE_BWD);   /* dt is overwritten, never added to */
        n.dst[PLAN_DX] = &T[0], n.dst[PLAN_DW] = &T[1], n.src[PLAN_DY] = &T[2];
        n.src[PLAN_BWD_X] = &T[3], n.src[PLAN_BWD_W] = &T[4], n.acc = acc;
        if (acc)
            EXPECT_LIST(&n, {&T[0], 1}, {&T[0], 0}, {&T[1], 1}, {&T[2], 0}, {&T[3], 0},
                        {&T[4], 0});
        else EXPECT_LIST(&n, {&T[0], 1}, {&T[1], 1}, {&T[2], 0}, {&T[3], 0}, {&T[4], 0});
#undef NODE
    }
    for (int k = 0; k < PLAN_OP_COUNT; k++) {
        if (!covered[k]) printf("op %s (%d) not checked\n", plan_op_name((enum plan_op)k), k);
        CHECK(covered[k]);
    }
}

/* ------------------------------------------------------------------ the trainer's plans */

#define TRAIN_IMAGES 96
#define BATCH 16
#define TEST_IMAGES 50
#define EVAL_BATCH 20   /* 50 = 20 + 20 + 10: a partial last batch */

static struct layer_spec *add(struct net_spec *s, const char *name, enum layer_type t)
{
    struct layer_spec *l = net_spec_add(s, t);
    if (l) snprintf(l->name, sizeof(l->name), "%s", name);
    return l;
}

/* whiten (bias trained in epoch 1 only) -> relu -> conv -> bn -> relu1 -> conv2 ->
 * add(relu1, conv2) -> relu2 -> global max pool -> flatten -> linear -> scale: relu1's
 * gradient is accumulated from two consumers. */
static int test_net(struct graph *g)
{
    struct net_spec s = {0};
    struct layer_spec *l;
    char err[256];
    int ok = 1;
#define ADD(name, type) ok = ok && (l = add(&s, name, type)) != NULL
    ADD("whiten", LAYER_WHITEN);
    if (ok) {
        l->k = 2;
        l->pad = 0;
        l->eps = 5e-4f;
        l->negate = 1;
        l->bias = 1;
        l->bias_epochs = 1;
        l->whiten_images = TRAIN_IMAGES;
    }
    ADD("relu0", LAYER_RELU);
    ADD("conv1", LAYER_CONV);
    if (ok) l->out = 8;
    ADD("bn1", LAYER_BN);
    ADD("relu1", LAYER_RELU);
    ADD("conv2", LAYER_CONV);
    if (ok) l->out = 8;
    ADD("bn2", LAYER_BN);
    ADD("relu3", LAYER_RELU);
    ADD("add", LAYER_ADD);   /* bn2, relu3 and the add: one fused node */
    if (ok) {
        l->n_inputs = 2;
        snprintf(l->inputs[0], sizeof(l->inputs[0]), "relu1");
        snprintf(l->inputs[1], sizeof(l->inputs[1]), "relu3");
    }
    ADD("relu2", LAYER_RELU);
    ADD("pool", LAYER_GMAXPOOL);
    ADD("flat", LAYER_FLATTEN);
    ADD("linear", LAYER_LINEAR);
    if (ok) {
        l->out = 10;
        l->bias = 1;
    }
    ADD("logits", LAYER_SCALE);
    if (ok) l->scale = 0.25f;
#undef ADD
    int rc = ok ? graph_build(g, &s, 3, 32, 32, err, sizeof(err)) : DR_ERR_NOMEM;
    if (rc != DR_OK && ok) printf("graph_build: %s\n", err);
    net_spec_free(&s);
    return rc;
}

static void test_experiment(struct experiment *e)
{
    memset(e, 0, sizeof(*e));
    snprintf(e->name, sizeof(e->name), "plan-test");
    snprintf(e->path, sizeof(e->path), "(test)");
    e->train.epochs = 2.0;
    e->train.batch_size = BATCH;
    e->train.lr.count = 3;
    e->train.lr.knots[0] = 0.0, e->train.lr.knots[1] = 1.0, e->train.lr.knots[2] = 2.0;
    e->train.lr.values[0] = 0.05, e->train.lr.values[1] = 0.4, e->train.lr.values[2] = 0.02;
    e->train.momentum = 0.9;
    e->train.nesterov = 1;
    e->train.weight_decay = 5e-4;
    e->train.loss = LOSS_SUM;
    e->train.label_smoothing = 0.2;
    e->augment = (struct augment_params){4, PAD_REFLECT, 1, 1, 8, 0, 0, 0, 0, 0};
    e->eval.batch_size = EVAL_BATCH;
    e->eval.tta = TTA_FLIP;
    for (int k = 0; k < PARAM_KIND_COUNT; k++) e->train.lr_scale[k] = e->train.wd_scale[k] = 1.0;
    e->train.lr_scale[PARAM_BN_B] = 8.0;
    e->train.wd_scale[PARAM_BN_B] = 0.125;
    e->train.average.kind = AVERAGE_EMA;
    e->train.average.every = 2;
    e->train.average.momentum = 0.8;
    e->seeds = 1;
}

static int random_dataset(struct dataset *d, int count, uint32_t stream)
{
    d->count = count;
    d->images = malloc((size_t)count * CIFAR10_IMAGE_BYTES);
    d->labels = malloc((size_t)count);
    if (!d->images || !d->labels) return DR_ERR_NOMEM;
    for (int i = 0; i < count; i++) {
        for (int j = 0; j < CIFAR10_IMAGE_BYTES; j += 4) {
            struct rng4 r = rng_draw(0x9a17u, stream, 0, (uint32_t)i, (uint32_t)j);
            for (int k = 0; k < 4; k++)
                d->images[(size_t)i * CIFAR10_IMAGE_BYTES + j + k] = (uint8_t)r.v[k];
        }
        struct rng4 r = rng_draw(0x9a17u, stream, 1, (uint32_t)i, 0);
        d->labels[i] = (uint8_t)rng_below(r.v[0], 10);
    }
    return DR_OK;
}

/* The whole of t, host copy, malloc'd; NULL on failure. */
static void *read_all(struct backend *be, const struct tensor *t)
{
    size_t bytes = tensor_count(t) * (t->kind == TENSOR_U8 ? 1 : 4);
    void *h = malloc(bytes ? bytes : 1);
    if (h && be->ops->tensor_read(be->ctx, h, t) != DR_OK) {
        free(h);
        h = NULL;
    }
    return h;
}

/* Whether a and b hold the same bytes (both readable, same size). */
static int same_tensor(struct backend *be, const struct tensor *a, const struct tensor *b)
{
    if (tensor_count(a) != tensor_count(b) || a->kind != b->kind) return 0;
    void *x = read_all(be, a), *y = read_all(be, b);
    size_t bytes = tensor_count(a) * (a->kind == TENSOR_U8 ? 1 : 4);
    int ok = x && y && memcmp(x, y, bytes) == 0;
    free(x);
    free(y);
    return ok;
}

/* Whether two trainers of the same graph hold the same bits: every parameter, its
 * momentum, and every batch norm's running statistics. */
static int same_trained_state(struct backend *be, const struct trainer *a,
                              const struct trainer *r)
{
    int ok = 1;
    for (int k = 0; k < a->g->n_params; k++)
        ok &= same_tensor(be, &a->model.p[k], &r->model.p[k]) &&
              same_tensor(be, &a->model.v[k], &r->model.v[k]);
    for (int i = 0; i < a->g->count; i++)
        if (a->g->layers[i].spec.type == LAYER_BN)
            ok &= same_tensor(be, &a->model.bn_rmean[i], &r->model.bn_rmean[i]) &&
                  same_tensor(be, &a->model.bn_rvar[i], &r->model.bn_rvar[i]);
    return ok;
}

static int read_cursor(struct backend *be, const struct tensor *cursor, int32_t *out)
{
    return be->ops->tensor_read(be->ctx, out, cursor);
}

struct fixture {
    struct experiment e;
    struct graph g;
    struct dataset train, test;
    struct backend be;
};

/* The step plan run twice on one plan object: the cursor goes {step, epoch, 0} ->
 * {step + 1, epoch, 1} -> {step + 2, epoch, 2}; each step's batch holds the next rows
 * of the epoch's permutation (labels, and the images as the host-driven augment of those
 * rows makes them); the signature stays. */
static void test_step_twice(struct fixture *f)
{
    struct trainer t;
    struct backend *be = &f->be;
    int32_t cur[PLAN_CURSOR_LEN], perm[TRAIN_IMAGES];
    struct tensor rows = {NULL, TENSOR_I32, BATCH, 1, 1, 1};
    struct tensor x = {NULL, TENSOR_ACT, BATCH, 3, 32, 32};
    struct tensor labels = {NULL, TENSOR_I32, BATCH, 1, 1, 1};
    struct tensor at = {NULL, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1};
    if (trainer_create(&t, &f->e, &f->g, be, &f->train, &f->test, 7) != DR_OK) {
        CHECK(0);
        return;
    }
    CHECK(be->ops->tensor_alloc(be->ctx, &rows) == DR_OK);
    CHECK(be->ops->tensor_alloc(be->ctx, &x) == DR_OK);
    CHECK(be->ops->tensor_alloc(be->ctx, &labels) == DR_OK);
    CHECK(be->ops->tensor_alloc(be->ctx, &at) == DR_OK);
    const int epoch = 1;
    const int32_t first[PLAN_CURSOR_LEN] = {[CURSOR_EPOCH] = epoch};   /* batch 0 of rows */
    const union plan_params batch = {.batch = {&f->e.augment, BATCH, t.seed}};
    CHECK(be->ops->tensor_write(be->ctx, &at, first) == DR_OK);
    t.step = 6;   /* as after epoch 0 of 6 steps */
    CHECK(trainer_epoch_begin(&t, epoch) == DR_OK);
    CHECK(read_cursor(be, &t.cursor, cur) == DR_OK);
    CHECK(cur[CURSOR_STEP] == 6 && cur[CURSOR_EPOCH] == epoch && cur[CURSOR_INDEX] == 0);
    shuffle_epoch(perm, TRAIN_IMAGES, 7, epoch);
    uint64_t sig = plan_signature(&t.step_plan);
    for (int s = 0; s < 2; s++) {
        CHECK(trainer_step(&t) == DR_OK);
        CHECK(read_cursor(be, &t.cursor, cur) == DR_OK);
        printf("after step %d: cursor {%d, %d, %d}\n", s + 1, (int)cur[CURSOR_STEP],
               (int)cur[CURSOR_EPOCH], (int)cur[CURSOR_INDEX]);
        CHECK(cur[CURSOR_STEP] == 6 + s + 1 && cur[CURSOR_EPOCH] == epoch &&
              cur[CURSOR_INDEX] == s + 1);
        int32_t got[BATCH];
        CHECK(be->ops->tensor_read(be->ctx, got, &t.model.labels) == DR_OK);
        int ok = 1;
        for (int i = 0; i < BATCH; i++) ok &= got[i] == f->train.labels[perm[s * BATCH + i]];
        CHECK(ok);
        /* the images: the augment of the same rows for this epoch, computed apart */
        CHECK(be->ops->tensor_write(be->ctx, &rows, perm + s * BATCH) == DR_OK);
        CHECK(plan_run_op(be, PLAN_BATCH, PLAN_DSTS(&x, &labels),
                          PLAN_SRCS(&t.images, &t.image_labels, &rows, &at), 0, &batch) == DR_OK);
        CHECK(same_tensor(be, &x, &t.model.y[0]));
        CHECK(plan_signature(&t.step_plan) == sig);
    }
    be->ops->tensor_free(be->ctx, &rows);
    be->ops->tensor_free(be->ctx, &x);
    be->ops->tensor_free(be->ctx, &labels);
    be->ops->tensor_free(be->ctx, &at);
    trainer_free(&t);
}

/* plan_signature of the step plan: the same for the same handles whatever their
 * contents; another data pointer or n (of an activation, of a tensor reached only
 * through the SGD items) changes it, and putting it back restores it. */
static void test_signature(struct fixture *f)
{
    struct trainer t;
    if (trainer_create(&t, &f->e, &f->g, &f->be, &f->train, &f->test, 7) != DR_OK) {
        CHECK(0);
        return;
    }
    struct plan *p = &t.step_plan;
    struct model *m = &t.model;
    CHECK(trainer_epoch_begin(&t, 0) == DR_OK);   /* the training batch size */
    uint64_t s0 = plan_signature(p);
    CHECK(plan_signature(p) == s0);
    CHECK(trainer_step(&t) == DR_OK);   /* every tensor's contents change */
    CHECK(plan_signature(p) == s0);

    CHECK(model_set_batch(m, BATCH - 4) == DR_OK);   /* n of every activation */
    CHECK(plan_signature(p) != s0);
    CHECK(model_set_batch(m, BATCH) == DR_OK);
    CHECK(plan_signature(p) == s0);

    struct tensor *y = &m->y[3];
    y->n--;
    CHECK(plan_signature(p) != s0);
    y->n++;
    void *data = y->data;
    y->data = m->dy[3].data;
    CHECK(plan_signature(p) != s0);
    y->data = data;
    CHECK(plan_signature(p) == s0);

    struct tensor *v = &m->v[m->g->n_params - 1];   /* only in the SGD node's items */
    data = v->data;
    v->data = m->dp[0].data;
    CHECK(plan_signature(p) != s0);
    v->data = data;
    CHECK(plan_signature(p) == s0);

    model_average_swap(m);   /* other parameter handles' data */
    CHECK(plan_signature(p) != s0);
    model_average_swap(m);
    CHECK(plan_signature(p) == s0);
    trainer_free(&t);
}

/* A BATCH node alone: m's batch from images, labels and rows (batch 0 of stride rows->n,
 * the epoch cursor's) with aug. */
static int host_batch(struct trainer *r, const struct tensor *images, const struct tensor *labels,
                      const struct tensor *rows, const struct tensor *cursor,
                      const struct augment_params *aug)
{
    const union plan_params par = {.batch = {aug, rows->n, r->seed}};
    return plan_run_op(r->be, PLAN_BATCH, PLAN_DSTS(&r->model.y[0], &r->model.labels),
                       PLAN_SRCS(images, labels, rows, cursor), 0, &par);
}

/* The host-driven evaluation of trainer r's model: per batch the rows written, per view
 * the batch node and the eval forward pass, the weighted sum, and the loss, each node
 * alone. */
static int host_evaluate(struct trainer *r, double *loss, double *acc)
{
    int rc = DR_OK;
    struct model *m = &r->model;
    const struct backend_ops *ops = r->be->ops;
    void *ctx = r->be->ctx;
    struct augment_params views[TRAIN_TTA_MAX_VIEWS];
    float weights[TRAIN_TTA_MAX_VIEWS], st[2];
    int32_t rows_host[TEST_IMAGES];
    struct tensor rows = {NULL, TENSOR_I32, EVAL_BATCH, 1, 1, 1};
    struct tensor cursor = {NULL, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1};   /* batch 0, epoch 0 */
    int nv = train_tta_views(views, weights, r->e->eval.tta);
    for (int i = 0; i < TEST_IMAGES; i++) rows_host[i] = i;
    model_average_swap(m);   /* the EMA's weights */
    TRY(ops->tensor_alloc(ctx, &rows));
    TRY(ops->tensor_alloc(ctx, &cursor));
    TRY(ops->tensor_zero(ctx, &m->stats));
    for (int b = 0; b * EVAL_BATCH < TEST_IMAGES; b++) {
        int n = TEST_IMAGES - b * EVAL_BATCH < EVAL_BATCH ? TEST_IMAGES - b * EVAL_BATCH
                                                           : EVAL_BATCH;
        TRY(model_set_batch(m, n));
        rows.n = n;
        r->tta_logits.n = n;
        TRY(ops->tensor_write(ctx, &rows, rows_host + b * EVAL_BATCH));
        for (int v = 0; v < nv; v++) {
            TRY(host_batch(r, &r->test_images, &r->test_labels, &rows, &cursor, &views[v]));
            TRY(model_forward(m, 0));
            TRY(plan_run_op(r->be, PLAN_SCALED_COPY, PLAN_DSTS(&r->tta_logits),
                            PLAN_SRCS(model_logits(m)), v > 0,
                            &(union plan_params){.scale = {weights[v]}}));
        }
        TRY(plan_run_op(r->be, PLAN_XENT_FWD, PLAN_DSTS(&m->stats, &m->probs),
                        PLAN_SRCS(&r->tta_logits, &m->labels), 0, NULL));
    }
    TRY(ops->tensor_read(ctx, st, &m->stats));
    *loss = (double)st[0] / TEST_IMAGES;
    *acc = (double)st[1] / TEST_IMAGES;
cleanup:
    model_average_swap(m);
    if (rows.data) ops->tensor_free(ctx, &rows);
    if (cursor.data) ops->tensor_free(ctx, &cursor);
    return rc;
}

/* An SGD node of one item alone, at learning rate lr (a table of one value, the cursor at
 * its first step) and weight decay wd. */
static int host_sgd(struct backend *be, struct tensor *w, struct tensor *v, struct tensor *dw,
                    struct tensor *table, const struct tensor *cursor, float lr, float wd,
                    float momentum, int nesterov)
{
    int rc = DR_OK;
    const struct sgd_item item = {w, v, dw, 1.0, wd, 0};
    const union plan_params par = {.sgd = {&item, 1, momentum, nesterov}};
    TRY(be->ops->tensor_write(be->ctx, table, &lr));
    TRY(plan_run_op(be, PLAN_SGD, NULL, 0, PLAN_SRCS(table, cursor), 0, &par));
cleanup:
    return rc;
}

/* A LERP node of one item alone. */
static int host_lerp(struct backend *be, struct tensor *avg, struct tensor *w, float t)
{
    const struct lerp_item item = {avg, w};
    const union plan_params par = {.lerp = {&item, 1, t, 0}};
    return plan_run_op(be, PLAN_LERP, NULL, 0, NULL, 0, 0, &par);
}

/* Two epochs of the step plan (trainer_epoch) against the same training driven from the
 * host, node by node, each alone, on a trainer created alike: parameters, momentum, BN
 * statistics, the averages, the training stats and the evaluation agree to the bit. */
static void test_same_as_host(struct fixture *f)
{
    struct trainer a, r;
    struct backend *be = &f->be;
    const struct backend_ops *ops = be->ops;
    const struct experiment *e = &f->e;
    int32_t perm[TRAIN_IMAGES];
    struct tensor rows = {NULL, TENSOR_I32, BATCH, 1, 1, 1};
    struct tensor cursor = {NULL, TENSOR_I32, PLAN_CURSOR_LEN, 1, 1, 1};
    struct tensor table = {NULL, TENSOR_F32, 1, 1, 1, 1};
    if (trainer_create(&a, e, &f->g, be, &f->train, &f->test, 3) != DR_OK ||
        trainer_create(&r, e, &f->g, be, &f->train, &f->test, 3) != DR_OK) {
        CHECK(0);
        return;
    }
    CHECK(a.plan.steps_per_epoch == TRAIN_IMAGES / BATCH && a.plan.epochs == 2);
    CHECK(ops->tensor_alloc(be->ctx, &rows) == DR_OK);
    CHECK(ops->tensor_alloc(be->ctx, &cursor) == DR_OK);
    CHECK(ops->tensor_alloc(be->ctx, &table) == DR_OK);
    struct model *m = &r.model;
    float smoothing = (float)e->train.label_smoothing;
    for (int ep = 0; ep < 2; ep++) {
        struct epoch_record rec;
        CHECK(trainer_epoch(&a, ep, NULL, &rec) == DR_OK);

        shuffle_epoch(perm, TRAIN_IMAGES, r.seed, ep);
        const int32_t at[PLAN_CURSOR_LEN] = {[CURSOR_EPOCH] = ep};   /* batch 0 of the rows */
        CHECK(ops->tensor_write(be->ctx, &cursor, at) == DR_OK);
        CHECK(ops->tensor_zero(be->ctx, &m->stats) == DR_OK);
        for (int s = 0; s < r.plan.steps_per_epoch; s++) {
            float lr, wd, gs;
            train_step_hparams(e, r.step, r.plan.steps_per_epoch, &lr, &wd, &gs, NULL);
            CHECK(model_set_batch(m, BATCH) == DR_OK);
            CHECK(ops->tensor_write(be->ctx, &rows, perm + s * BATCH) == DR_OK);
            CHECK(host_batch(&r, &r.images, &r.image_labels, &rows, &cursor, &e->augment) ==
                  DR_OK);
            CHECK(model_forward(m, 1) == DR_OK);
            CHECK(model_loss(m, smoothing) == DR_OK);
            CHECK(model_backward(m, smoothing, gs) == DR_OK);
            for (int k = 0; k < r.g->n_params; k++) {
                const struct param_desc *d = &r.g->params[k];
                if (!d->trainable || (d->train_epochs > 0 && ep >= d->train_epochs)) continue;
                float lk = (float)((double)lr * e->train.lr_scale[d->kind]);
                float wk = (float)((double)wd * e->train.wd_scale[d->kind]);
                CHECK(host_sgd(be, &m->p[k], &m->v[k], &m->dp[k], &table, &cursor, lk, wk,
                               (float)e->train.momentum, e->train.nesterov) == DR_OK);
            }
            r.step++;
            if (r.step % e->train.average.every == 0) {
                float tt = (float)(1.0 - pow(e->train.average.momentum, e->train.average.every));
                for (int k = 0; k < r.g->n_params; k++)
                    CHECK(host_lerp(be, &m->avg[k], &m->p[k], tt) == DR_OK);
                for (int i = 0; i < r.g->count; i++) {
                    if (r.g->layers[i].spec.type != LAYER_BN) continue;
                    CHECK(host_lerp(be, &m->avg_rmean[i], &m->bn_rmean[i], tt) == DR_OK);
                    CHECK(host_lerp(be, &m->avg_rvar[i], &m->bn_rvar[i], tt) == DR_OK);
                }
            }
        }
        float st[2];
        CHECK(ops->tensor_read(be->ctx, st, &m->stats) == DR_OK);
        double tl = st[0] / ((double)r.plan.steps_per_epoch * BATCH);
        printf("epoch %d: train loss %.9g (host-driven %.9g)\n", ep + 1, rec.train_loss, tl);
        CHECK(rec.train_loss == tl);
        double hl = 0, ha = 0;
        CHECK(host_evaluate(&r, &hl, &ha) == DR_OK);
        printf("epoch %d: test loss %.9g acc %.4f (host-driven %.9g %.4f)\n", ep + 1,
               rec.test_loss, rec.test_acc, hl, ha);
        CHECK(rec.test_loss == hl && rec.test_acc == ha);
    }
    CHECK(a.step == r.step);
    int ok = 1;
    for (int k = 0; k < a.g->n_params; k++)
        ok &= same_tensor(be, &a.model.p[k], &r.model.p[k]) &&
              same_tensor(be, &a.model.v[k], &r.model.v[k]) &&
              same_tensor(be, &a.model.avg[k], &r.model.avg[k]);
    for (int i = 0; i < a.g->count; i++)
        if (a.g->layers[i].spec.type == LAYER_BN)
            ok &= same_tensor(be, &a.model.bn_rmean[i], &r.model.bn_rmean[i]) &&
                  same_tensor(be, &a.model.bn_rvar[i], &r.model.bn_rvar[i]) &&
                  same_tensor(be, &a.model.avg_rmean[i], &r.model.avg_rmean[i]) &&
                  same_tensor(be, &a.model.avg_rvar[i], &r.model.avg_rvar[i]);
    CHECK(ok);
    ops->tensor_free(be->ctx, &rows);
    ops->tensor_free(be->ctx, &cursor);
    ops->tensor_free(be->ctx, &table);
    trainer_free(&a);
    trainer_free(&r);
}

/* The summed loss of the batch in m->y[0] under the current parameters: the train-mode
 * forward pass and the loss, through the plan's builders. */
static int batch_loss(struct model *m, struct backend *be, double *loss)
{
    int rc = DR_OK;
    float st[2];
    TRY(be->ops->tensor_zero(be->ctx, &m->stats));
    TRY(model_forward(m, 1));
    TRY(model_loss(m, 0.0f));
    TRY(be->ops->tensor_read(be->ctx, st, &m->stats));
    *loss = st[0];
cleanup:
    return rc;
}

/* The backward pass the builders describe (accumulate flags, skipped gradients, the two
 * consumers of relu1) against central differences of the loss: a few entries of every
 * parameter tensor. */
static void test_backward_gradients(struct fixture *f)
{
    enum { N = 8 };
    struct backend *be = &f->be;
    struct model m;
    if (model_create(&m, &f->g, be, N) != DR_OK) {
        CHECK(0);
        return;
    }
    CHECK(model_init_params(&m, 15) == DR_OK);
    CHECK(model_init_whiten(&m, &f->train) == DR_OK);
    CHECK(model_set_batch(&m, N) == DR_OK);
    size_t nx = tensor_count(&m.y[0]);
    float *x = malloc(nx * sizeof(float));
    int32_t lab[N];
    for (size_t i = 0; x && i < nx; i++) {
        struct rng4 r = rng_draw(0x9a17u, 5, 0, (uint32_t)i, 0);
        x[i] = 2.0f * rng_unit(r.v[0]) - 1.0f;
    }
    for (int i = 0; i < N; i++) lab[i] = (i * 3) % 10;
    CHECK(x && be->ops->tensor_write(be->ctx, &m.y[0], x) == DR_OK);
    CHECK(be->ops->tensor_write(be->ctx, &m.labels, lab) == DR_OK);
    double l0 = 0;
    CHECK(batch_loss(&m, be, &l0) == DR_OK);
    /* twice: a gradient added to where it should be written shows on stale buffers */
    CHECK(model_backward(&m, 0.0f, 1.0f) == DR_OK);
    CHECK(model_backward(&m, 0.0f, 1.0f) == DR_OK);
    int bad = 0, checked = 0;
    const float h = 2e-3f;   /* small enough for the kinks of three ReLUs after batch norms */
    for (int k = 0; k < f->g.n_params; k++) {
        size_t count = tensor_count(&m.p[k]);
        float *w = read_all(be, &m.p[k]), *dw = read_all(be, &m.dp[k]);
        if (!w || !dw) {
            CHECK(0);
            free(w);
            free(dw);
            continue;
        }
        for (int j = 0; j < 3 && (size_t)j < count; j++) {
            size_t at = (size_t)j * (count / 3 + 1) % count;
            float keep = w[at];
            double lp = 0, lm = 0;
            w[at] = keep + h;
            CHECK(be->ops->tensor_write(be->ctx, &m.p[k], w) == DR_OK);
            CHECK(batch_loss(&m, be, &lp) == DR_OK);
            w[at] = keep - h;
            CHECK(be->ops->tensor_write(be->ctx, &m.p[k], w) == DR_OK);
            CHECK(batch_loss(&m, be, &lm) == DR_OK);
            w[at] = keep;
            CHECK(be->ops->tensor_write(be->ctx, &m.p[k], w) == DR_OK);
            double num = (lp - lm) / (2.0 * h), ana = dw[at];
            checked++;
            if (fabs(num - ana) > 2e-2 + 5e-2 * fabs(ana)) {
                printf("parameter %d [%zu]: gradient %.6g, central difference %.6g\n", k, at,
                       ana, num);
                bad++;
            }
        }
        free(w);
        free(dw);
    }
    printf("backward: %d of %d gradient entries off their central difference\n", bad, checked);
    CHECK(bad == 0 && checked > 0);
    free(x);
    model_free(&m);
}

/* The step plan's aliases (kernels/plan.h): the flatten of the 1x1 pooled plane has no
 * node either way, and neither of the add's two input gradients is copied: both are the
 * add's gradient itself (relu3's is read, by bn2's fused backward, before conv2's
 * backward adds relu1's other part to that buffer); no node copies a tensor into
 * itself. */
static void test_aliases(struct fixture *f)
{
    struct trainer t;
    if (trainer_create(&t, &f->e, &f->g, &f->be, &f->train, &f->test, 7) != DR_OK) {
        CHECK(0);
        return;
    }
    CHECK(trainer_epoch_begin(&t, 0) == DR_OK);
    const struct plan *p = &t.step_plan;
    int flatten = 0, copies = 0, self = 0;
    for (int i = 0; i < p->count; i++) {
        const struct plan_node *n = &p->nodes[i];
        if (n->op == PLAN_FLATTEN_FWD || n->op == PLAN_FLATTEN_BWD) flatten++;
        if (n->op == PLAN_SCALED_COPY && n->par.scale.s == 1.0f &&
            n->phase == PLAN_PHASE_BACKWARD) {
            copies++;
            self += n->dst[PLAN_DX] == n->src[PLAN_DY];
        }
        if (n->op == PLAN_CONV_BWD && n->dst[PLAN_DX])
            self += n->dst[PLAN_DX] == n->src[PLAN_DY];
    }
    printf("aliases: %d flatten nodes, %d backward copies, %d in place\n", flatten, copies, self);
    CHECK(flatten == 0 && copies == 0 && self == 0);
    trainer_free(&t);
}

/* plan_free has the backend that last ran the plan (plan_compute) forget it, once; a plan
 * run on another backend is first forgotten by the one before; a plan only run node by
 * node, or freed already, is forgotten by none. */
static const struct backend_ops *forget_real;
static int forgets;
static const struct plan *forgotten;

static void forget_counted(void *ctx, const struct plan *p)
{
    (void)ctx;
    forgets++;
    forgotten = p;
}

/* A plan executor that keeps something about the plans it runs: node by node. */
static int compute_each(void *ctx, const struct plan *p)
{
    const struct backend b = {forget_real, ctx};
    return plan_run_each(&b, p, NULL, NULL);
}

static void test_forget(struct fixture *f)
{
    struct backend_ops ops = *f->be.ops, other_ops;
    forget_real = f->be.ops;
    ops.plan_compute = compute_each;
    ops.plan_forget = forget_counted;
    other_ops = ops;
    struct backend be = {&ops, f->be.ctx}, other = {&other_ops, f->be.ctx};
    struct plan p = {0};
    p.replayable = 1;
    CHECK(plan_run_each(&be, &p, NULL, NULL) == DR_OK);
    plan_free(&p);
    CHECK(forgets == 0);
    p.replayable = 1;
    CHECK(plan_compute(&be, &p) == DR_OK && plan_compute(&be, &p) == DR_OK);
    CHECK(forgets == 0);
    CHECK(plan_compute(&other, &p) == DR_OK);
    CHECK(forgets == 1 && forgotten == &p);
    plan_free(&p);
    CHECK(forgets == 2 && forgotten == &p);
    plan_free(&p);
    CHECK(forgets == 2);
}

/* The nodes of each op in p into seen[PLAN_OP_COUNT]; the fused forwards with a residual
 * into *res and those writing the batch norm's output into *keep. */
static void count_ops(int *seen, int *res, int *keep, const struct plan *p)
{
    memset(seen, 0, PLAN_OP_COUNT * sizeof(*seen));
    *res = *keep = 0;
    for (int i = 0; i < p->count; i++) {
        const struct plan_node *n = &p->nodes[i];
        seen[n->op]++;
        if (n->op != PLAN_BN_ACT_TRAIN && n->op != PLAN_BN_ACT_EVAL) continue;
        *res += n->dst[PLAN_BNA_OUT] != NULL;
        *keep += n->par.bn_act.keep_y;
    }
}

/* What the builder fuses (engine/core/model_fuse.c) on the CPU engine: in the step plan,
 * bn1 with relu1 (relu1 read twice, so no add) and bn2 with relu3 and the add, both
 * backwards with their ReLU's, no batch norm's output written (each read by its ReLU
 * alone, recomputed by the fused backward); in the evaluation plan (two test-time views)
 * the same forwards, twice. With DAWNRUN_CPU_FUSE=0 nothing is fused, and an epoch gives
 * the fused epoch's parameters, statistics and losses bit for bit. */
static void test_fused_nodes(struct fixture *f)
{
    struct trainer a, r;
    int seen[PLAN_OP_COUNT], res, keep;
    if (trainer_create(&a, &f->e, &f->g, &f->be, &f->train, &f->test, 9) != DR_OK) {
        CHECK(0);
        return;
    }
    CHECK(trainer_epoch_begin(&a, 0) == DR_OK);
    count_ops(seen, &res, &keep, &a.step_plan);
    CHECK(seen[PLAN_BN_ACT_TRAIN] == 2 && seen[PLAN_BN_ACT_BWD] == 2 && res == 1 && keep == 0);
    CHECK(seen[PLAN_BN_FWD_TRAIN] == 0 && seen[PLAN_BN_BWD] == 0 && seen[PLAN_ADD_FWD] == 0);
    CHECK(seen[PLAN_ACT_FWD] == 2 && seen[PLAN_ACT_BWD] == 2);   /* relu0, relu2 */
    struct epoch_record ra, rr;
    CHECK(trainer_epoch(&a, 0, NULL, &ra) == DR_OK);
    count_ops(seen, &res, &keep, &a.eval_plan);
    CHECK(seen[PLAN_BN_ACT_EVAL] == 4 && res == 2 && keep == 0 && seen[PLAN_BN_FWD_EVAL] == 0);
    CHECK(setenv("DAWNRUN_CPU_FUSE", "0", 1) == 0);
    const int made = trainer_create(&r, &f->e, &f->g, &f->be, &f->train, &f->test, 9);
    CHECK(made == DR_OK);
    if (made == DR_OK) {
        CHECK(trainer_epoch_begin(&r, 0) == DR_OK);
        count_ops(seen, &res, &keep, &r.step_plan);
        CHECK(seen[PLAN_BN_ACT_TRAIN] == 0 && seen[PLAN_BN_ACT_BWD] == 0);
        CHECK(seen[PLAN_BN_FWD_TRAIN] == 2 && seen[PLAN_ADD_FWD] == 1);
        CHECK(trainer_epoch(&r, 0, NULL, &rr) == DR_OK);
        count_ops(seen, &res, &keep, &r.eval_plan);
        CHECK(seen[PLAN_BN_ACT_EVAL] == 0 && seen[PLAN_BN_FWD_EVAL] == 4);
        printf("fused epoch: train loss %.9g, test loss %.9g (unfused %.9g, %.9g)\n",
               ra.train_loss, ra.test_loss, rr.train_loss, rr.test_loss);
        CHECK(ra.train_loss == rr.train_loss && ra.test_loss == rr.test_loss &&
              ra.test_acc == rr.test_acc);
        CHECK(same_trained_state(&f->be, &a, &r));
        trainer_free(&r);
    }
    CHECK(unsetenv("DAWNRUN_CPU_FUSE") == 0);
    trainer_free(&a);
}

/* conv -> relu -> [dropout of p, or none when p < 0] -> global average pool -> flatten ->
 * linear, plus a dropout of p after the linear layer (the logits) when at_output. */
static int dropout_net(struct graph *g, float p, int at_output)
{
    struct net_spec s = {0};
    struct layer_spec *l;
    char err[256];
    int ok = (l = add(&s, "conv", LAYER_CONV)) != NULL;
    if (ok) l->out = 8;
    ok = ok && add(&s, "relu", LAYER_RELU);
    if (ok && p >= 0.0f && (l = add(&s, "drop", LAYER_DROPOUT)) != NULL) l->p = p;
    ok = ok && add(&s, "pool", LAYER_GAVGPOOL) && add(&s, "flat", LAYER_FLATTEN);
    ok = ok && (l = add(&s, "linear", LAYER_LINEAR)) != NULL;
    if (ok) l->out = 10, l->bias = 1;
    if (ok && at_output && (l = add(&s, "drop_out", LAYER_DROPOUT)) != NULL) l->p = 0.0f;
    int rc = ok ? graph_build(g, &s, 3, 32, 32, err, sizeof(err)) : DR_ERR_NOMEM;
    if (rc != DR_OK && ok) printf("graph_build: %s\n", err);
    net_spec_free(&s);
    return rc;
}

/* How many nodes of op plan p has. */
static int count_op(const struct plan *p, enum plan_op op)
{
    int k = 0;
    for (int i = 0; i < p->count; i++) k += p->nodes[i].op == op;
    return k;
}

/* A dropout layer: in the step plan one DROPOUT_FWD and one DROPOUT_BWD node reading the
 * trainer's cursor, with the run's seed, the layer's id and p; in the evaluation plans no
 * node (its readers read its input), so that a fresh model evaluates as the same network
 * without it (same parameters: a dropout has none); p = 0 aliased in training too (the
 * step plan of the network without it, node for node, and the same bits after a
 * training epoch); at the network's output, a copy outside training; a single-part
 * forward in train mode refused (no cursor), in eval mode run. */
static void test_dropout(struct fixture *f)
{
    struct graph g[4];   /* none, p = 0.5, p = 0, p = 0.5 with a p = 0 dropout at the output */
    struct trainer t[4];
    const float ps[4] = {-1.0f, 0.5f, 0.0f, 0.5f};
    struct experiment e = f->e;
    e.eval.tta = TTA_NONE;
    e.train.average.kind = AVERAGE_NONE;
    for (int k = 0; k < 4; k++) {
        if (dropout_net(&g[k], ps[k], k == 3) != DR_OK ||
            trainer_create(&t[k], &e, &g[k], &f->be, &f->train, &f->test, 7) != DR_OK) {
            CHECK(0);
            return;
        }
    }
    const struct plan *step = &t[1].step_plan;
    CHECK(count_op(step, PLAN_DROPOUT_FWD) == 1 && count_op(step, PLAN_DROPOUT_BWD) == 1);
    for (int i = 0; i < step->count; i++) {
        const struct plan_node *n = &step->nodes[i];
        if (n->op != PLAN_DROPOUT_FWD && n->op != PLAN_DROPOUT_BWD) continue;
        CHECK(n->src[PLAN_DROPOUT_CURSOR] == &t[1].cursor && n->par.dropout.seed == 7 &&
              n->par.dropout.p == 0.5f && n->par.dropout.layer == 3 && n->layer == 3);
        CHECK(strcmp(g[1].layers[n->layer].spec.name, "drop") == 0);
    }
    for (int k = 0; k < 4; k++) {
        CHECK(count_op(&t[k].eval_plan, PLAN_DROPOUT_FWD) == 0);
        CHECK(count_op(&t[k].eval_last_plan, PLAN_DROPOUT_FWD) == 0);
        CHECK(t[k].eval_plan.count == t[0].eval_plan.count + (k == 3));
    }
    CHECK(count_op(&t[3].eval_plan, PLAN_SCALE_FWD) == 1);   /* the logits' copy */
    CHECK(t[2].step_plan.count == t[0].step_plan.count);
    CHECK(count_op(&t[2].step_plan, PLAN_DROPOUT_FWD) == 0 &&
          count_op(&t[2].step_plan, PLAN_DROPOUT_BWD) == 0);
    for (int i = 0; i < t[0].step_plan.count; i++)
        CHECK(t[2].step_plan.nodes[i].op == t[0].step_plan.nodes[i].op);
    double loss[4], acc[4];
    for (int k = 0; k < 4; k++) CHECK(trainer_evaluate(&t[k], &loss[k], &acc[k]) == DR_OK);
    printf("dropout: fresh evaluation loss %.6f (none), %.6f (p 0.5), %.6f (p 0), "
           "%.6f (at the output)\n", loss[0], loss[1], loss[2], loss[3]);
    CHECK(loss[1] == loss[0] && acc[1] == acc[0] && loss[2] == loss[0] && loss[3] == loss[0]);
    struct epoch_record rec[4];
    for (int k = 0; k < 4; k++) CHECK(trainer_epoch(&t[k], 0, NULL, &rec[k]) == DR_OK);
    printf("dropout: epoch 1 train loss %.6f (none), %.6f (p 0.5), %.6f (p 0), %.6f "
           "(at the output)\n", rec[0].train_loss, rec[1].train_loss, rec[2].train_loss,
           rec[3].train_loss);
    CHECK(rec[2].train_loss == rec[0].train_loss && rec[2].test_loss == rec[0].test_loss);
    CHECK(rec[1].train_loss != rec[0].train_loss && isfinite(rec[1].train_loss));
    CHECK(rec[3].train_loss == rec[1].train_loss);   /* p = 0 at the output: the identity */
    for (int k = 0; k < g[0].n_params; k++) {
        CHECK(same_tensor(&f->be, &t[2].model.p[k], &t[0].model.p[k]));
        CHECK(same_tensor(&f->be, &t[3].model.p[k], &t[1].model.p[k]));
    }
    fprintf(stderr, "(one error message expected below)\n");
    CHECK(model_forward(&t[1].model, 1) == DR_ERR_INTERNAL);
    CHECK(model_forward(&t[1].model, 0) == DR_OK && model_forward(&t[2].model, 1) == DR_OK);
    for (int k = 0; k < 4; k++) {
        trainer_free(&t[k]);
        graph_free(&g[k]);
    }
}

/* conv1 -> bn1 -> relu1 -> maxpool2 (2 x 2, tiling 32 x 32) -> conv2 -> add(maxpool2,
 * conv2) -> bn2 -> relu2 -> global max pool -> flatten -> linear. */
static int pool_add_net(struct graph *g)
{
    struct net_spec s = {0};
    struct layer_spec *l;
    char err[256];
    int ok = (l = add(&s, "conv1", LAYER_CONV)) != NULL;
    if (ok) l->out = 8;
    ok = ok && add(&s, "bn1", LAYER_BN) && add(&s, "relu1", LAYER_RELU);
    ok = ok && (l = add(&s, "maxpool2", LAYER_MAXPOOL)) != NULL;
    if (ok) l->k = 2, l->stride = 2;
    ok = ok && (l = add(&s, "conv2", LAYER_CONV)) != NULL;
    if (ok) l->out = 8;
    ok = ok && (l = add(&s, "add", LAYER_ADD)) != NULL;
    if (ok) {
        l->n_inputs = 2;
        snprintf(l->inputs[0], sizeof(l->inputs[0]), "maxpool2");
        snprintf(l->inputs[1], sizeof(l->inputs[1]), "conv2");
    }
    ok = ok && add(&s, "bn2", LAYER_BN) && add(&s, "relu2", LAYER_RELU);
    ok = ok && add(&s, "gpool", LAYER_GMAXPOOL) && add(&s, "flat", LAYER_FLATTEN);
    ok = ok && (l = add(&s, "linear", LAYER_LINEAR)) != NULL;
    if (ok) l->out = 10, l->bias = 1;
    int rc = ok ? graph_build(g, &s, 3, 32, 32, err, sizeof(err)) : DR_ERR_NOMEM;
    if (rc != DR_OK && ok) printf("graph_build: %s\n", err);
    net_spec_free(&s);
    return rc;
}

/* An engine that says it runs every fused node the rules allow, and runs each as its
 * decomposition on the CPU engine (whose own fused passes take neither a pool nor the add
 * before the batch norm): what the builder emits for an engine that does, run with the
 * plain nodes' bits. */
static const struct backend_ops *fuse_all_real;

/* 1: the wrapper also takes the convolutions' fused nodes and the batch norm's nodes with
 * vectors (the batch norm inside the convolutions); 0: the batch norm's own nodes only. */
static int fuse_all_convs;

static int fuse_all_supports(void *ctx, const struct plan_node *n)
{
    const int bn_own = (n->op == PLAN_BN_ACT_TRAIN || n->op == PLAN_BN_ACT_EVAL ||
                        n->op == PLAN_BN_ACT_BWD) &&
                       !(n->op == PLAN_BN_ACT_TRAIN &&
                         (n->dst[PLAN_BNA_VEC] || n->src[PLAN_BNA_VEC_IN] ||
                          n->src[PLAN_BNA_ADD_PRO_X]));
    if (plan_op_is_fused(n->op)) return bn_own || fuse_all_convs;
    return fuse_all_real->supports(ctx, n);
}

static int fuse_all_run_node(void *ctx, const struct plan_node *n)
{
    const struct backend real = {fuse_all_real, ctx};
    struct plan_node parts[PLAN_FUSED_MAX_PARTS];
    const int count = plan_fused_expand(parts, n);
    if (count == 0) return fuse_all_real->run_node(ctx, n);
    for (int i = 0; i < count; i++) {
        const int rc = plan_run_one(&real, &parts[i]);
        if (rc != DR_OK) return rc;
    }
    return DR_OK;
}

static struct backend_ops fuse_all_ops;

static int fuse_all_compute(void *ctx, const struct plan *p)
{
    const struct backend b = {&fuse_all_ops, ctx};
    return plan_run_each(&b, p, NULL, NULL);
}

/* The fuse-all wrapper over the fixture's engine, taking the convolutions' fused nodes
 * when convs. */
static struct backend fuse_all_backend(struct fixture *f, int convs)
{
    fuse_all_real = f->be.ops;
    fuse_all_ops = *f->be.ops;
    fuse_all_ops.supports = fuse_all_supports;
    fuse_all_ops.run_node = fuse_all_run_node;
    fuse_all_ops.plan_compute = fuse_all_compute;
    fuse_all_convs = convs;
    return (struct backend){&fuse_all_ops, f->be.ctx};
}

/* The fused node of layer `layer` (a batch norm) of op in p, or NULL. */
static const struct plan_node *fused_of(const struct plan *p, enum plan_op op, int layer)
{
    for (int i = 0; i < p->count; i++)
        if (p->nodes[i].op == op && p->nodes[i].layer == layer) return &p->nodes[i];
    return NULL;
}

/* Trainer a (on the fuse-all wrapper, its epoch 0 run into ra) against a plain trainer of
 * the same graph and experiment on the CPU engine with DAWNRUN_CPU_FUSE=0 (nothing fused,
 * checked by `fused` never being in its step plan): the same losses, accuracy and trained
 * state, bit for bit; what names the network in the printed line. */
static void same_as_plain(struct fixture *f, struct trainer *a, const struct graph *g,
                          const struct experiment *e, const struct epoch_record *ra,
                          enum plan_op fused, const char *what)
{
    struct trainer r;
    struct epoch_record rr;
    CHECK(setenv("DAWNRUN_CPU_FUSE", "0", 1) == 0);
    const int made = trainer_create(&r, e, g, &f->be, &f->train, &f->test, 5);
    CHECK(made == DR_OK);
    if (made == DR_OK) {
        CHECK(trainer_epoch(&r, 0, NULL, &rr) == DR_OK);
        CHECK(count_op(&r.step_plan, fused) == 0);
        printf("%s: train loss %.9g, test loss %.9g (plain %.9g, %.9g)\n", what,
               ra->train_loss, ra->test_loss, rr.train_loss, rr.test_loss);
        CHECK(ra->train_loss == rr.train_loss && ra->test_loss == rr.test_loss &&
              ra->test_acc == rr.test_acc);
        CHECK(same_trained_state(&f->be, a, &r));
        trainer_free(&r);
    }
    CHECK(unsetenv("DAWNRUN_CPU_FUSE") == 0);
}

/* What the builder folds for an engine that takes the batch norm's own fused nodes
 * (fuse_all_*, convs off): in the step plan, the
 * max pool into bn1's node, forward and backward (the activation's output never needed:
 * no pool node at all), and into bn2's node the add before it (its output the batch
 * norm's x, still written) and the global max pool after it (one 16 x 16 window); in the
 * evaluation plan the pools folded again and the add left alone. An epoch gives the bits
 * of the plain nodes (DAWNRUN_CPU_FUSE=0 on the CPU engine). */
static void test_pool_add_folds(struct fixture *f)
{
    struct graph g;
    struct trainer a;
    struct backend be = fuse_all_backend(f, 0);
    struct experiment e = f->e;
    e.eval.tta = TTA_NONE;
    e.train.average.kind = AVERAGE_NONE;
    if (pool_add_net(&g) != DR_OK ||
        trainer_create(&a, &e, &g, &be, &f->train, &f->test, 5) != DR_OK) {
        CHECK(0);
        return;
    }
    const int bn1 = 2, relu1 = 3, pool = 4, sum = 6, bn2 = 7;
    CHECK(!strcmp(g.layers[bn1].spec.name, "bn1") && !strcmp(g.layers[bn2].spec.name, "bn2"));
    CHECK(trainer_epoch_begin(&a, 0) == DR_OK);
    const struct plan *step = &a.step_plan;
    CHECK(count_op(step, PLAN_BN_ACT_TRAIN) == 2 && count_op(step, PLAN_BN_ACT_BWD) == 2);
    CHECK(count_op(step, PLAN_POOL_FWD) == 0 && count_op(step, PLAN_POOL_BWD) == 0);
    CHECK(count_op(step, PLAN_ADD_FWD) == 0 && count_op(step, PLAN_ACT_FWD) == 0);
    const struct plan_node *n = fused_of(step, PLAN_BN_ACT_TRAIN, bn1);
    CHECK(n && n->par.bn_act.pool.kh == 2 && n->par.bn_act.pool.sw == 2 &&
          n->par.bn_act.keep_y == 0 && !n->par.bn_act.add_in &&
          n->dst[PLAN_BNA_OUT] == &a.model.y[pool] && n->dst[PLAN_BNA_COEF]);
    n = fused_of(step, PLAN_BN_ACT_BWD, bn1);
    /* the pool's dy: the add's, which passes its gradient on (an alias) */
    CHECK(n && n->par.bn_act.pool.kh == 2 && n->src[PLAN_DY] == &a.model.dy[sum] &&
          n->dst[PLAN_BNA_DPOOL] == &a.model.dy[relu1] &&
          n->src[PLAN_BNA_BWD_POOL_Y] == &a.model.y[pool]);
    n = fused_of(step, PLAN_BN_ACT_TRAIN, bn2);
    CHECK(n && n->par.bn_act.add_in && n->par.bn_act.pool.kh == 16 &&
          n->par.bn_act.pool.sw == 16 && n->dst[PLAN_BNA_OUT] == &a.model.y[bn2 + 2] &&
          n->dst[PLAN_BNA_SUM] == &a.model.y[sum] && n->src[PLAN_X] == &a.model.y[sum]);
    struct epoch_record ra;
    CHECK(trainer_epoch(&a, 0, NULL, &ra) == DR_OK);
    const struct plan *ev = &a.eval_plan;
    n = fused_of(ev, PLAN_BN_ACT_EVAL, bn1);
    CHECK(n && n->par.bn_act.pool.kh == 2 && count_op(ev, PLAN_ADD_FWD) == 1);
    CHECK(count_op(ev, PLAN_POOL_FWD) == 0 && count_op(ev, PLAN_BN_ACT_EVAL) == 2);
    same_as_plain(f, &a, &g, &e, &ra, PLAN_BN_ACT_TRAIN, "pool and add folded");
    trainer_free(&a);
    graph_free(&g);
}

/* conv1 -> bn1 -> relu1 -> conv2 -> bn2 -> relu2 -> conv3 -> bn3 -> relu3 -> conv4 ->
 * add(relu2, conv4) -> bn4 -> relu4 -> maxpool (2 x 2) -> flatten -> linear -> scale 1/8:
 * a pre-activation block (relu2 its identity shortcut) between two plain ones. */
static int conv_bn_net(struct graph *g)
{
    struct net_spec s = {0};
    struct layer_spec *l;
    char err[256];
    int ok = 1;
    for (int k = 1; k <= 3 && ok; k++) {
        char name[16];
        snprintf(name, sizeof(name), "conv%d", k);
        ok = (l = add(&s, name, LAYER_CONV)) != NULL;
        if (ok) l->out = 8;
        snprintf(name, sizeof(name), "bn%d", k);
        ok = ok && add(&s, name, LAYER_BN);
        snprintf(name, sizeof(name), "relu%d", k);
        ok = ok && add(&s, name, LAYER_RELU);
    }
    ok = ok && (l = add(&s, "conv4", LAYER_CONV)) != NULL;
    if (ok) l->out = 8;
    ok = ok && (l = add(&s, "add", LAYER_ADD)) != NULL;
    if (ok) {
        l->n_inputs = 2;
        snprintf(l->inputs[0], sizeof(l->inputs[0]), "relu2");
        snprintf(l->inputs[1], sizeof(l->inputs[1]), "conv4");
    }
    ok = ok && add(&s, "bn4", LAYER_BN) && add(&s, "relu4", LAYER_RELU);
    ok = ok && (l = add(&s, "maxpool", LAYER_MAXPOOL)) != NULL;
    if (ok) l->k = 2, l->stride = 2;
    ok = ok && add(&s, "flat", LAYER_FLATTEN);
    ok = ok && (l = add(&s, "linear", LAYER_LINEAR)) != NULL;
    if (ok) l->out = 10, l->bias = 1;
    ok = ok && (l = add(&s, "logits", LAYER_SCALE)) != NULL;   /* small logits: a gentle run */
    if (ok) l->scale = 0.125f;
    int rc = ok ? graph_build(g, &s, 3, 32, 32, err, sizeof(err)) : DR_ERR_NOMEM;
    if (rc != DR_OK && ok) printf("graph_build: %s\n", err);
    net_spec_free(&s);
    return rc;
}

/* What the builder puts inside the convolutions for an engine that takes every fused node
 * (fuse_all_*, convs on; each run as its decomposition), on conv_bn_net: rule 1 (sums and
 * apply) for bn1 and bn3, rule 2 (sums) for bn2, rule 3 (prologue) for bn2 with the add
 * recomputing relu2 and conv3 taking bn2's backward, rule 4 (the add inside conv4, its sum
 * summed for bn4, relu2 recomputed), the pool folded into bn4; the evaluation plan's add
 * inside conv4 too. An epoch gives the bits of the plain nodes (DAWNRUN_CPU_FUSE=0). */
static void test_conv_folds(struct fixture *f)
{
    struct graph g;
    struct trainer a;
    struct backend be = fuse_all_backend(f, 1);
    struct experiment e = f->e;
    e.eval.tta = TTA_NONE;
    e.train.average.kind = AVERAGE_NONE;
    if (conv_bn_net(&g) != DR_OK ||
        trainer_create(&a, &e, &g, &be, &f->train, &f->test, 5) != DR_OK) {
        CHECK(0);
        return;
    }
    const int conv1 = 1, bn1 = 2, conv2 = 4, bn2 = 5, relu2 = 6, conv3 = 7, bn3 = 8, conv4 = 10;
    const int sum = 11, bn4 = 12;
    CHECK(!strcmp(g.layers[bn4].spec.name, "bn4") && !strcmp(g.layers[sum].spec.name, "add"));
    CHECK(trainer_epoch_begin(&a, 0) == DR_OK);
    const struct plan *step = &a.step_plan;
    const struct model *m = &a.model;
    CHECK(count_op(step, PLAN_ADD_FWD) == 0 && count_op(step, PLAN_ADD_PRO) == 0 &&
          count_op(step, PLAN_CONV_FWD) == 0 && count_op(step, PLAN_CONV_FUSED_FWD) == 4);
    CHECK(count_op(step, PLAN_BN_APPLY_BWD) == 3 && count_op(step, PLAN_BN_ACT_BWD) == 1 &&
          count_op(step, PLAN_CONV_FUSED_BWD) == 3 && count_op(step, PLAN_CONV_BWD) == 1);
    /* conv1 sums for bn1, which turns the sums into its vectors, read by conv2 */
    const struct plan_node *n = fused_of(step, PLAN_CONV_FUSED_FWD, conv1);
    CHECK(n && n->dst[PLAN_CF_SUMS] == &m->bn_vec[bn1] && !n->src[PLAN_CF_PRO_X]);
    n = fused_of(step, PLAN_BN_ACT_TRAIN, bn1);
    CHECK(n && n->dst[PLAN_BNA_VEC] == &m->bn_vec[bn1] &&
          n->src[PLAN_BNA_VEC_IN] == &m->bn_vec[bn1] && !n->dst[PLAN_BNA_COEF]);
    n = fused_of(step, PLAN_CONV_FUSED_FWD, conv2);
    CHECK(n && n->src[PLAN_CF_PRO_X] == &m->y[conv1] && n->src[PLAN_CF_PRO_VEC] == &m->bn_vec[bn1]
          && n->dst[PLAN_CF_SUMS] == &m->bn_vec[bn2]);
    n = fused_of(step, PLAN_CONV_FUSED_BWD, conv2);
    CHECK(n && n->dst[PLAN_CB_DZ] == &m->dy[bn1] && n->dst[PLAN_CB_VEC] == &m->bn_vec[bn1]);
    /* bn2: its sums from conv2, its coefficients kept, its activation read through the
     * apply by conv3 (which takes its backward) and recomputed by conv4's add */
    n = fused_of(step, PLAN_BN_ACT_TRAIN, bn2);
    CHECK(n && n->dst[PLAN_BNA_VEC] == &m->bn_vec[bn2] && n->dst[PLAN_BNA_COEF] &&
          n->src[PLAN_BNA_VEC_IN] == &m->bn_vec[bn2]);
    n = fused_of(step, PLAN_CONV_FUSED_BWD, conv3);
    CHECK(n && n->dst[PLAN_CB_DZ] == &m->dy[bn2] && PLAN_NODE_ACC(n, PLAN_DX));
    CHECK(fused_of(step, PLAN_BN_APPLY_BWD, bn2) && fused_of(step, PLAN_BN_APPLY_BWD, bn3));
    n = fused_of(step, PLAN_CONV_FUSED_FWD, conv3);
    CHECK(n && n->src[PLAN_CF_PRO_VEC] == &m->bn_vec[bn2] && n->dst[PLAN_CF_SUMS] ==
          &m->bn_vec[bn3]);
    n = fused_of(step, PLAN_CONV_FUSED_FWD, conv4);
    CHECK(n && n->src[PLAN_CF_PRO_VEC] == &m->bn_vec[bn3] && n->dst[PLAN_CF_OUT] == &m->y[sum] &&
          n->src[PLAN_CF_RES] == &m->y[relu2] && n->src[PLAN_CF_RES_X] == &m->y[conv2] &&
          n->src[PLAN_CF_RES_VEC] == &m->bn_vec[bn2] && n->dst[PLAN_CF_SUMS] == &m->bn_vec[bn4]);
    n = fused_of(step, PLAN_BN_ACT_TRAIN, bn4);
    CHECK(n && !n->par.bn_act.add_in && n->par.bn_act.pool.kh == 2 &&
          n->src[PLAN_BNA_VEC_IN] == &m->bn_vec[bn4] && !n->dst[PLAN_BNA_VEC]);
    struct epoch_record ra;
    CHECK(trainer_epoch(&a, 0, NULL, &ra) == DR_OK);
    const struct plan *ev = &a.eval_plan;
    n = fused_of(ev, PLAN_CONV_FUSED_FWD, conv4);
    CHECK(n && n->dst[PLAN_CF_OUT] == &m->y[sum] && !n->src[PLAN_CF_RES_X] &&
          !n->src[PLAN_CF_PRO_X] && !n->dst[PLAN_CF_SUMS]);
    CHECK(count_op(ev, PLAN_ADD_FWD) == 0 && count_op(ev, PLAN_CONV_FUSED_FWD) == 1);
    same_as_plain(f, &a, &g, &e, &ra, PLAN_CONV_FUSED_FWD, "convolutions' fused nodes");
    trainer_free(&a);
    graph_free(&g);
}

/* conv -> relu -> global average pool -> flatten -> linear, then (mode 1) a temperature
 * layer at init 1, or (mode 2) a frozen one; mode 0: none. */
static int temperature_net(struct graph *g, int mode)
{
    struct net_spec s = {0};
    struct layer_spec *l;
    char err[256];
    int ok = (l = add(&s, "conv", LAYER_CONV)) != NULL;
    if (ok) l->out = 8;
    ok = ok && add(&s, "relu", LAYER_RELU) && add(&s, "pool", LAYER_GAVGPOOL) &&
         add(&s, "flat", LAYER_FLATTEN);
    ok = ok && (l = add(&s, "linear", LAYER_LINEAR)) != NULL;
    if (ok) l->out = 10, l->bias = 1;
    if (ok && mode > 0 && (l = add(&s, "temp", LAYER_TEMPERATURE)) != NULL)
        l->frozen = mode == 2;
    int rc = ok ? graph_build(g, &s, 3, 32, 32, err, sizeof(err)) : DR_ERR_NOMEM;
    if (rc != DR_OK && ok) printf("graph_build: %s\n", err);
    net_spec_free(&s);
    return rc;
}

/* A temperature layer at the logits: one TEMPERATURE_FWD node in the step and evaluation
 * plans (reading its scalar, the model's parameter) and one TEMPERATURE_BWD node writing
 * the scalar's gradient; at init 1 a fresh model evaluates as the network without it; an
 * epoch trains the scalar away from 1 and leaves a frozen one at 1, whose run is the
 * network's without it, bit for bit (1 x is x). */
static void test_temperature(struct fixture *f)
{
    struct graph g[3];
    struct trainer t[3];
    struct experiment e = f->e;
    e.eval.tta = TTA_NONE;
    e.train.average.kind = AVERAGE_NONE;
    for (int k = 0; k < 3; k++) {
        if (temperature_net(&g[k], k) != DR_OK ||
            trainer_create(&t[k], &e, &g[k], &f->be, &f->train, &f->test, 7) != DR_OK) {
            CHECK(0);
            return;
        }
    }
    const int tl = g[1].count - 1, tp = g[1].layers[tl].param_first;
    CHECK(g[1].n_params == g[0].n_params + 1 && tp == g[0].n_params);
    const struct plan *step = &t[1].step_plan;
    CHECK(count_op(step, PLAN_TEMPERATURE_FWD) == 1 && count_op(step, PLAN_TEMPERATURE_BWD) == 1);
    CHECK(count_op(&t[1].eval_plan, PLAN_TEMPERATURE_FWD) == 1);
    for (int i = 0; i < step->count; i++) {
        const struct plan_node *n = &step->nodes[i];
        if (n->op == PLAN_TEMPERATURE_FWD)
            CHECK(n->layer == tl && n->src[PLAN_W] == &t[1].model.p[tp] &&
                  n->src[PLAN_X] == &t[1].model.y[tl - 1] && n->dst[PLAN_Y] == &t[1].model.y[tl]);
        if (n->op == PLAN_TEMPERATURE_BWD)
            CHECK(n->layer == tl && n->dst[PLAN_DW] == &t[1].model.dp[tp] &&
                  n->src[PLAN_BWD_W] == &t[1].model.p[tp] && n->acc == 0 &&
                  n->src[PLAN_DY] == &t[1].model.dy[tl]);
    }
    double loss[3], acc[3];
    for (int k = 0; k < 3; k++) CHECK(trainer_evaluate(&t[k], &loss[k], &acc[k]) == DR_OK);
    CHECK(loss[1] == loss[0] && acc[1] == acc[0] && loss[2] == loss[0]);
    struct epoch_record rec[3];
    for (int k = 0; k < 3; k++) CHECK(trainer_epoch(&t[k], 0, NULL, &rec[k]) == DR_OK);
    float *t1 = read_all(&f->be, &t[1].model.p[tp]), *t2 = read_all(&f->be, &t[2].model.p[tp]);
    CHECK(t1 && t2);
    if (t1 && t2) {
        printf("temperature: t after an epoch %.6f (trained), %.6f (frozen); train loss %.6f "
               "(none), %.6f (trained), %.6f (frozen)\n", (double)t1[0], (double)t2[0],
               rec[0].train_loss, rec[1].train_loss, rec[2].train_loss);
        CHECK(isfinite(t1[0]) && t1[0] != 1.0f && t2[0] == 1.0f);
    }
    CHECK(rec[2].train_loss == rec[0].train_loss && rec[2].test_loss == rec[0].test_loss);
    CHECK(rec[1].train_loss != rec[0].train_loss && isfinite(rec[1].train_loss));
    for (int k = 0; k < g[0].n_params; k++)
        CHECK(same_tensor(&f->be, &t[2].model.p[k], &t[0].model.p[k]));
    free(t1);
    free(t2);
    for (int k = 0; k < 3; k++) {
        trainer_free(&t[k]);
        graph_free(&g[k]);
    }
}

/* An engine that runs no SGD nodes (its supports says so) cannot build a step plan: an
 * error naming the op, not a failure at the first step. */
static const struct backend_ops *missing_real;

static int supports_no_sgd(void *ctx, const struct plan_node *n)
{
    return n->op != PLAN_SGD && missing_real->supports(ctx, n);
}

static void test_missing_op(struct fixture *f)
{
    struct backend_ops ops = *f->be.ops;
    missing_real = f->be.ops;
    ops.supports = supports_no_sgd;
    struct backend be = {&ops, f->be.ctx};
    struct trainer t;
    CHECK(trainer_create(&t, &f->e, &f->g, &be, &f->train, &f->test, 7) == DR_ERR_INTERNAL);
}

int main(void)
{
    test_node_tensors();
    struct fixture f = {0};
    test_experiment(&f.e);
    CHECK(test_net(&f.g) == DR_OK);
    CHECK(random_dataset(&f.train, TRAIN_IMAGES, 1) == DR_OK);
    CHECK(random_dataset(&f.test, TEST_IMAGES, 2) == DR_OK);
    CHECK(backend_cpu_create(&f.be, 2) == DR_OK);
    if (check_failures) return check_finish("plan");
    test_backward_gradients(&f);
    test_aliases(&f);
    test_step_twice(&f);
    test_signature(&f);
    test_same_as_host(&f);
    test_fused_nodes(&f);
    test_missing_op(&f);
    test_forget(&f);
    test_dropout(&f);
    test_pool_add_folds(&f);
    test_conv_folds(&f);
    test_temperature(&f);
    backend_destroy(&f.be);
    graph_free(&f.g);
    dataset_free(&f.train);
    dataset_free(&f.test);
    return check_finish("plan");
}

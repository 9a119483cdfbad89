/* Tests of the config loader: every shipped experiment loads and builds with the published
 * settings (the speed-training recipes too, with their sizes), --set overrides of each
 * kind, the resolved text as an identity (pinned hashes of older experiments, new keys
 * left out at their defaults), the one precedence of model.vars and model_vars, layer
 * defaults shared with code-built networks, schedule_at,
 * the expression evaluator, did-you-mean, the schema's consistency with the graph and
 * with the limits and names the code states (image counts, precisions, augmentation),
 * docs/config.md, and failures that leave nothing behind. */
#include <glob.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine/config/config_schema.h"
#include "engine/core/experiment.h"
#include "engine/core/graph.h"
#include "base/status.h"
#include "kernels/augment.h"
#include "kernels/precision.h"

static const char *source_dir(void)
{
    const char *s = getenv("DAWNRUN_SOURCE_DIR");
    return s && s[0] ? s : ".";
}

static void source_path(char *buf, size_t n, const char *rel)
{
    snprintf(buf, n, "%s/%s", source_dir(), rel);
}

/* Loads a shipped config with overrides; returns the status. */
static int load(struct experiment *e, const char *rel, const char *const *sets, int n_sets)
{
    char path[1024];
    source_path(path, sizeof(path), rel);
    return experiment_load(e, path, sets, n_sets);
}

static int schedule_is(const struct schedule *s, int n, const double *knots,
                       const double *values)
{
    if (s->count != n) return 0;
    for (int i = 0; i < n; i++)
        if (fabs(s->knots[i] - knots[i]) > 1e-12 || fabs(s->values[i] - values[i]) > 1e-12)
            return 0;
    return 1;
}

/* The first layer of the spec named name, or NULL. */
static const struct layer_spec *find_layer(const struct experiment *e, const char *name)
{
    for (int i = 0; i < e->net.count; i++)
        if (strcmp(e->net.layers[i].name, name) == 0) return &e->net.layers[i];
    return NULL;
}

/* ---- every shipped config -------------------------------------------------------------- */

static void test_all_shipped(void)
{
    char pattern[1024];
    const char *patterns[] = {"configs/*.cfg", "configs/*/*.cfg"};
    int loaded = 0;
    for (int p = 0; p < 2; p++) {
        glob_t g;
        source_path(pattern, sizeof(pattern), patterns[p]);
        if (glob(pattern, 0, NULL, &g) != 0) continue;
        for (size_t i = 0; i < g.gl_pathc; i++) {
            if (strstr(g.gl_pathv[i], "/configs/nets/")) continue; /* networks, not experiments */
            struct experiment e;
            struct graph gr;
            char err[1024] = "";
            int rc = experiment_load(&e, g.gl_pathv[i], NULL, 0);
            CHECK(rc == DR_OK);
            if (rc != DR_OK) {
                fprintf(stderr, "  (could not load %s)\n", g.gl_pathv[i]);
                continue;
            }
            loaded++;
            CHECK(e.resolved && strlen(e.resolved) > 0);
            CHECK(e.name[0] != '\0');
            CHECK(e.net.count > 0);
            rc = graph_build(&gr, &e.net, 3, 32, 32, err, sizeof(err));
            CHECK(rc == DR_OK);
            if (rc != DR_OK) fprintf(stderr, "  %s: %s\n", g.gl_pathv[i], err);
            else graph_free(&gr);
            experiment_free(&e);
        }
        globfree(&g);
    }
    CHECK(loaded >= 6);
}

static void test_page_post3(void)
{
    struct experiment e;
    struct graph g;
    char err[512];
    const double k30[] = {0, 8, 30}, v30[] = {0, 0.4, 0}, v768[] = {0, 0.6, 0};
    const double k35[] = {0, 15, 30, 35}, v35[] = {0, 0.44, 0.005, 0};

    CHECK(load(&e, "configs/page-post3/30ep-cutout.cfg", NULL, 0) == DR_OK);
    CHECK(strcmp(e.name, "page-post3-30ep-cutout") == 0);
    CHECK(e.train.epochs == 30);
    CHECK(e.train.batch_size == 512);
    CHECK(schedule_is(&e.train.lr, 3, k30, v30));
    CHECK(e.augment.cutout == 8 && e.augment.pad == 4 && e.augment.pad_mode == PAD_REFLECT);
    CHECK(e.augment.crop == 1 && e.augment.flip == 1);
    CHECK_NEAR(e.train.momentum, 0.9, 1e-12);
    CHECK(e.train.nesterov == 1);
    CHECK_NEAR(e.train.weight_decay, 5e-4, 1e-15);
    CHECK(e.train.loss == LOSS_SUM && e.train.precision == PRECISION_FP32);
    CHECK(e.train.label_smoothing == 0.0);
    CHECK(e.eval.batch_size == 512 && e.seeds == 5);
    CHECK_NEAR(e.target_accuracy, 0.94, 1e-12);
    CHECK(e.data.train_subset == 0 && e.data.test_subset == 0);
    CHECK(graph_build(&g, &e.net, 3, 32, 32, err, sizeof(err)) == DR_OK);
    CHECK(g.n_weights == 5205834);
    graph_free(&g);
    experiment_free(&e);

    CHECK(load(&e, "configs/page-post3/30ep-cutout-bs768.cfg", NULL, 0) == DR_OK);
    CHECK(e.train.batch_size == 768 && e.train.epochs == 30 && e.augment.cutout == 8);
    CHECK(schedule_is(&e.train.lr, 3, k30, v768));
    experiment_free(&e);

    CHECK(load(&e, "configs/page-post3/35ep.cfg", NULL, 0) == DR_OK);
    CHECK(e.train.epochs == 35 && e.train.batch_size == 512 && e.augment.cutout == 0);
    CHECK(schedule_is(&e.train.lr, 4, k35, v35));
    experiment_free(&e);

    CHECK(load(&e, "configs/page-post3/35ep-cutout.cfg", NULL, 0) == DR_OK);
    CHECK(e.train.epochs == 35 && e.augment.cutout == 8);
    CHECK(schedule_is(&e.train.lr, 4, k35, v35));
    experiment_free(&e);
}

static void test_resnet9_and_demo(void)
{
    struct experiment e;
    struct graph g;
    char err[512];
    const double k24[] = {0, 5, 24}, v24[] = {0, 0.4, 0};
    const double k8[] = {0, 2, 8}, v8[] = {0, 0.4, 0};

    CHECK(load(&e, "configs/resnet9-24ep.cfg", NULL, 0) == DR_OK);
    CHECK(e.train.epochs == 24 && e.train.batch_size == 512 && e.augment.cutout == 8);
    CHECK(schedule_is(&e.train.lr, 3, k24, v24));
    const struct layer_spec *conv = find_layer(&e, "prep.conv");
    CHECK(conv && conv->type == LAYER_CONV && conv->out == 64 && conv->k == 3);
    CHECK(conv && strcmp(conv->inputs[0], "input") == 0 && conv->n_inputs == 1);
    const struct layer_spec *add = find_layer(&e, "res1.add");
    CHECK(add && add->n_inputs == 2 && strcmp(add->inputs[0], "pool1") == 0 &&
          strcmp(add->inputs[1], "res1.res2.relu") == 0);
    const struct layer_spec *pool = find_layer(&e, "pool1");
    CHECK(pool && pool->k == 2 && pool->stride == 2); /* stride defaults to k */
    const struct layer_spec *lin = find_layer(&e, "linear");
    CHECK(lin && lin->bias == 0 && lin->out == 10);
    const struct layer_spec *logits = find_layer(&e, "logits");
    CHECK(logits && fabsf(logits->scale - 0.125f) < 1e-7f);
    CHECK(logits && logits->file && strstr(logits->file, "nets/resnet9.cfg") && logits->line > 0);
    CHECK(graph_build(&g, &e.net, 3, 32, 32, err, sizeof(err)) == DR_OK);
    CHECK(g.n_weights == 6573120);
    CHECK(fabs((double)g.flops_forward / 1e9 - 0.759) < 0.005);
    graph_free(&g);
    experiment_free(&e);

    CHECK(load(&e, "configs/demo.cfg", NULL, 0) == DR_OK);
    conv = find_layer(&e, "prep.conv");
    CHECK(conv && conv->out == 16); /* model_vars width = 16 */
    conv = find_layer(&e, "layer3.conv");
    CHECK(conv && conv->out == 128);
    CHECK(e.data.train_subset == 10000 && e.data.test_subset == 2000);
    CHECK(e.train.epochs == 8 && e.train.batch_size == 128);
    CHECK(e.eval.batch_size == 128); /* 0 = the training batch size */
    CHECK(schedule_is(&e.train.lr, 3, k8, v8));
    CHECK(e.augment.cutout == 8 && e.augment.pad == 4 && e.train.nesterov == 1);
    CHECK(e.seeds == 2 && e.target_accuracy == 0.70);
    /* model_vars is merged into model.vars and dropped from the resolved text */
    CHECK(strstr(e.resolved, "model_vars") == NULL);
    CHECK(strstr(e.resolved, "width = 16.0;") != NULL);
    experiment_free(&e);
}

static char *resolved_of(const char *rel, const char *const *sets, int n)
{
    struct experiment e;
    if (load(&e, rel, sets, n) != DR_OK) return NULL;
    char *text = e.resolved;
    e.resolved = NULL;
    experiment_free(&e);
    return text;
}

static int same(const char *a, const char *b)
{
    return a && b && strcmp(a, b) == 0;
}

/* ---- the speed-training recipes -------------------------------------------------------- */

static void check_counts(const struct experiment *e, double weights, double gflop)
{
    struct graph g;
    char err[512] = "";
    int rc = graph_build(&g, &e->net, 3, 32, 32, err, sizeof(err));
    CHECK(rc == DR_OK);
    if (rc != DR_OK) {
        fprintf(stderr, "  %s\n", err);
        return;
    }
    /* within 1 % of the published sizes; trainable parameters only (the whitening filters
     * are fixed) and conv/linear FLOPs (the whitening layer counts as a conv) */
    CHECK(fabs((double)g.n_weights - weights) <= 0.01 * weights);
    CHECK(fabs((double)g.flops_forward / 1e9 - gflop) <= 0.01 * gflop);
    if (fabs((double)g.n_weights - weights) > 0.01 * weights ||
        fabs((double)g.flops_forward / 1e9 - gflop) > 0.01 * gflop)
        fprintf(stderr, "  %s: %lld parameters, %.4f GFLOP\n", e->name, (long long)g.n_weights,
                (double)g.flops_forward / 1e9);
    graph_free(&g);
}

static void test_airbench94(void)
{
    struct experiment e;
    const double knots[] = {0, 2.277, 9.9}, values[] = {0.3, 1.5, 0.105};
    CHECK(load(&e, "configs/airbench94.cfg", NULL, 0) == DR_OK);
    CHECK(fabs(e.train.epochs - 9.9) < 1e-12 && e.train.batch_size == 1024);
    CHECK(schedule_is(&e.train.lr, 3, knots, values));
    CHECK_NEAR(e.train.momentum, 0.85, 1e-12);
    CHECK(e.train.nesterov == 1 && e.train.loss == LOSS_SUM);
    CHECK_NEAR(e.train.weight_decay, 0.0153 / 11.5, 1e-15);
    CHECK_NEAR(e.train.label_smoothing, 0.2, 1e-12);
    for (int k = 0; k < PARAM_KIND_COUNT; k++) {
        CHECK(e.train.lr_scale[k] == (k == PARAM_BN_B ? 64.0 : 1.0));
        CHECK(e.train.wd_scale[k] == (k == PARAM_BN_B ? 1.0 / 64 : 1.0));
    }
    CHECK(e.train.average.kind == AVERAGE_LOOKAHEAD && e.train.average.every == 5);
    CHECK_NEAR(e.train.average.decay, 0.95, 1e-12);
    CHECK(e.eval.tta == TTA_FLIP_TRANSLATE);
    CHECK(e.augment.pad == 2 && e.augment.pad_mode == PAD_REFLECT && e.augment.crop == 1);
    CHECK(e.augment.flip == 1 && e.augment.alternate_flip == 1 && e.augment.cutout == 0);
    const struct layer_spec *w = find_layer(&e, "whiten");
    CHECK(w && w->type == LAYER_WHITEN && w->k == 2 && w->pad == 0 && w->negate == 1);
    CHECK(w && w->bias == 1 && w->bias_epochs == 3 && w->whiten_images == 5000);
    CHECK(w && fabsf(w->eps - 5e-4f) < 1e-9f && w->frozen == 0);
    const struct layer_spec *c = find_layer(&e, "block2.conv1");
    CHECK(c && c->type == LAYER_CONV && c->dirac == 1 && c->out == 256 && c->bias == 0);
    const struct layer_spec *bn = find_layer(&e, "block3.bn2");
    CHECK(bn && bn->splits == 1 && bn->freeze_weight == 1 && bn->freeze_bias == 0);
    CHECK(bn && fabsf(bn->eps - 1e-12f) < 1e-18f && fabsf(bn->momentum - 0.4f) < 1e-7f);
    const struct layer_spec *logits = find_layer(&e, "logits");
    CHECK(logits && fabsf(logits->scale - 1.0f / 9) < 1e-7f);
    check_counts(&e, 1.97e6, 0.236);
    experiment_free(&e);

    /* a small CPU run */
    const char *small[] = {"train.batch_size=64", "data.train_subset=512",
                           "data.test_subset=256", "train.epochs=1"};
    CHECK(load(&e, "configs/airbench94.cfg", small, 4) == DR_OK);
    CHECK(e.train.batch_size == 64 && e.eval.batch_size == 64);
    experiment_free(&e);
    /* alternating flips need flips */
    const char *noflip[] = {"augment.flip=false"};
    CHECK(load(&e, "configs/airbench94.cfg", noflip, 1) == DR_ERR_CONFIG);
}

static void test_page_final(void)
{
    struct experiment e;
    const double knots[] = {0, 2, 8}, values[] = {0, 1.0, 0.1};
    CHECK(load(&e, "configs/page-final-10ep.cfg", NULL, 0) == DR_OK);
    CHECK(e.train.epochs == 10 && e.train.batch_size == 512);
    CHECK(schedule_is(&e.train.lr, 3, knots, values));
    CHECK_NEAR(schedule_at(&e.train.lr, 9.5), 0.1, 1e-12); /* held after epoch 8 */
    CHECK_NEAR(e.train.momentum, 0.9, 1e-12);
    CHECK(e.train.nesterov == 1 && e.train.loss == LOSS_SUM);
    CHECK_NEAR(e.train.weight_decay, 5e-4, 1e-15);
    CHECK_NEAR(e.train.label_smoothing, 0.2, 1e-12);
    CHECK(e.train.lr_scale[PARAM_BN_B] == 64.0 && e.train.wd_scale[PARAM_BN_B] == 1.0 / 64);
    CHECK(e.train.lr_scale[PARAM_CONV_W] == 1.0 && e.train.wd_scale[PARAM_LINEAR_W] == 1.0);
    CHECK(e.train.lr_scale[PARAM_WHITEN_W] == 1.0 && e.train.wd_scale[PARAM_WHITEN_W] == 1.0);
    CHECK(e.train.average.kind == AVERAGE_EMA && e.train.average.every == 5);
    CHECK_NEAR(e.train.average.momentum, 0.99, 1e-12);
    CHECK(e.eval.tta == TTA_FLIP && e.augment.alternate_flip == 0);
    CHECK(e.augment.pad == 4 && e.augment.flip == 1 && e.augment.cutout == 0);
    const struct layer_spec *w = find_layer(&e, "whiten");
    CHECK(w && w->type == LAYER_WHITEN && w->k == 3 && w->pad == 1 && w->negate == 0);
    CHECK(w && w->bias == 0 && w->whiten_images == 10000 && fabsf(w->eps - 1e-2f) < 1e-9f);
    const struct layer_spec *prep = find_layer(&e, "prep_conv");
    CHECK(prep && prep->k == 1 && prep->out == 64 && prep->dirac == 0);
    int bns = 0;
    for (int i = 0; i < e.net.count; i++) {
        const struct layer_spec *l = &e.net.layers[i];
        if (l->type != LAYER_BN) continue;
        bns++;
        CHECK(l->splits == 16 && l->freeze_weight == 1 && l->frozen == 0);
    }
    CHECK(bns == 8);
    const struct layer_spec *act = find_layer(&e, "res3.res2.act");
    CHECK(act && act->type == LAYER_CELU && fabsf(act->alpha - 0.3f) < 1e-7f);
    const struct layer_spec *logits = find_layer(&e, "logits");
    CHECK(logits && logits->scale == 0.0625f);
    check_counts(&e, 6570880, 0.760);
    experiment_free(&e);

    /* a small CPU run: fewer ghost batch-norm parts for a small batch */
    const char *small[] = {"train.batch_size=40", "model.vars.bn_splits=4",
                           "data.train_subset=400", "data.test_subset=200"};
    CHECK(load(&e, "configs/page-final-10ep.cfg", small, 4) == DR_OK);
    const struct layer_spec *bn = find_layer(&e, "layer3.bn");
    CHECK(bn && bn->splits == 4);
    experiment_free(&e);
    /* 16 parts do not divide 40 */
    CHECK(load(&e, "configs/page-final-10ep.cfg", small, 1) == DR_ERR_CONFIG);
}

/* The new keys' defaults change nothing: neither the behaviour nor the resolved text. */
static void test_new_defaults(void)
{
    struct experiment e;
    CHECK(load(&e, "configs/resnet9-24ep.cfg", NULL, 0) == DR_OK);
    for (int k = 0; k < PARAM_KIND_COUNT; k++)
        CHECK(e.train.lr_scale[k] == 1.0 && e.train.wd_scale[k] == 1.0);
    CHECK(e.train.average.kind == AVERAGE_NONE && e.train.average.every == 5);
    CHECK(e.train.average.momentum == 0.99 && e.train.average.decay == 0.95);
    CHECK(e.eval.tta == TTA_NONE && e.augment.alternate_flip == 0);
    for (int i = 0; i < e.net.count; i++) {
        const struct layer_spec *l = &e.net.layers[i];
        CHECK((l->type != LAYER_BN || l->splits == 1) && l->frozen == 0 && l->dirac == 0);
    }
    CHECK(strstr(e.resolved, "lr_scale") == NULL && strstr(e.resolved, "average") == NULL);
    CHECK(strstr(e.resolved, "tta") == NULL && strstr(e.resolved, "alternate_flip") == NULL);
    CHECK(strstr(e.resolved, "splits") == NULL && strstr(e.resolved, "frozen") == NULL);
    experiment_free(&e);

    const char *r9 = "configs/resnet9-24ep.cfg";
    char *a = resolved_of(r9, NULL, 0);
    const char *as_default[] = {
        "train.lr_scale={ bn_bias = 1; conv_weight = 1.0; }", "train.wd_scale.linear_weight=1",
        "train.average={ kind = \"none\"; every = 5; momentum = 0.99; }",
        "eval.tta=\"none\"", "augment.alternate_flip=false",
        "model.blocks.conv_bn.layers=({ name = \"conv\"; type = \"conv\"; out = \"$c\"; "
        "k = 3; dirac = false; frozen = false; }, { name = \"bn\"; type = \"bn\"; "
        "splits = 1; frozen = false; }, { name = \"relu\"; type = \"relu\"; })"};
    char *b = resolved_of(r9, as_default, 6);
    CHECK(same(a, b));
    if (!same(a, b)) fprintf(stderr, "--- as written\n%s--- defaults spelled out\n%s", a, b);
    const char *changed[][1] = {{"train.lr_scale.bn_bias=64"}, {"train.wd_scale.conv_bias=0.5"},
                                {"train.average.kind=\"ema\""}, {"train.average.every=4"},
                                {"eval.tta=\"flip\""}, {"augment.alternate_flip=true"}};
    for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
        char *c = resolved_of(r9, changed[i], 1);
        CHECK(c && !same(a, c));
        free(c);
    }
    free(a);
    free(b);
}

/* The identities of experiments written before the speed-training keys existed: the
 * SHA-256 of their resolved text, as computed by the loader before those keys were
 * added. A change here means every stored result of these experiments is orphaned. */
static void test_hash_pins(void)
{
    static const struct {
        const char *path, *hash;
    } pins[] = {
        {"configs/resnet9-24ep.cfg",
         "b9b0d0a95cd14944eb076e8d1adeb218bf5527ffbb51e1dcb7a6b7dbe12792c6"},
        {"configs/page-post3/30ep-cutout.cfg",
         "195bd174615c38c5bf7cc4991baac7b23041833ddf5c7e504e45c7c59dce88c7"},
    };
    for (size_t i = 0; i < sizeof(pins) / sizeof(pins[0]); i++) {
        struct experiment e;
        char hex[65];
        int rc = load(&e, pins[i].path, NULL, 0);
        CHECK(rc == DR_OK);
        if (rc != DR_OK) continue;
        experiment_hash(&e, hex);
        CHECK(strcmp(hex, pins[i].hash) == 0);
        if (strcmp(hex, pins[i].hash) != 0)
            fprintf(stderr, "  %s: hash %s, pinned %s\n", pins[i].path, hex, pins[i].hash);
        experiment_free(&e);
    }
}

/* ---- overrides ------------------------------------------------------------------------- */

static void test_set(void)
{
    struct experiment e;
    const char *sets[] = {
        "train.batch_size=256",               /* int */
        "train.momentum=0.8",                 /* float */
        "train.epochs=10",                    /* an int for a float */
        "train.lr_schedule.knots=[0, 3, 10]", /* array */
        "train.lr_schedule.values=[0, 0.5, 0]", /* mixed: read as a list */
        "name=\"renamed\"",                   /* string */
        "train.nesterov=false",               /* bool */
        "model.vars.width=32",                /* a model variable */
        "augment={ cutout = 4; flip = false; }", /* a whole group */
        "data.dir=/tmp/cifar",                /* a bare word is a string */
        "train.label_smoothing=0.1",          /* a key the file does not have */
    };
    const double knots[] = {0, 3, 10}, values[] = {0, 0.5, 0};
    int n = (int)(sizeof(sets) / sizeof(sets[0]));
    CHECK(load(&e, "configs/resnet9-24ep.cfg", sets, n) == DR_OK);
    CHECK(e.train.batch_size == 256);
    CHECK_NEAR(e.train.momentum, 0.8, 1e-12);
    CHECK(e.train.epochs == 10);
    CHECK(schedule_is(&e.train.lr, 3, knots, values));
    CHECK(strcmp(e.name, "renamed") == 0);
    CHECK(e.train.nesterov == 0);
    const struct layer_spec *conv = find_layer(&e, "prep.conv");
    CHECK(conv && conv->out == 32);
    CHECK(e.augment.cutout == 4 && e.augment.flip == 0);
    CHECK(e.augment.pad == 4 && e.augment.crop == 1); /* the replaced group's defaults */
    CHECK(strcmp(e.data.dir, "/tmp/cifar") == 0);
    CHECK_NEAR(e.train.label_smoothing, 0.1, 1e-12);
    CHECK(e.eval.batch_size == 512); /* as written in the file */
    experiment_free(&e);

    /* The last override of a key wins. */
    const char *twice[] = {"train.batch_size=64", "train.batch_size=32"};
    CHECK(load(&e, "configs/resnet9-24ep.cfg", twice, 2) == DR_OK);
    CHECK(e.train.batch_size == 32);
    experiment_free(&e);

    /* Bad overrides fail and leave nothing allocated. */
    const char *bad[][1] = {{"train.batchsize=5"}, {"train.batch_size"},
                            {"train.batch_size=[1"}, {"name.x=1"}, {"model.vars.depth=3"},
                            {"train.batch_size=0"}, {"=3"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&e, 0x5a, sizeof(e));
        CHECK(load(&e, "configs/resnet9-24ep.cfg", bad[i], 1) == DR_ERR_CONFIG);
        CHECK(e.resolved == NULL && e.net.layers == NULL && e.sources == NULL);
    }
}

/* ---- the resolved text ----------------------------------------------------------------- */

static void test_resolved(void)
{
    const char *r9 = "configs/resnet9-24ep.cfg";
    char *a = resolved_of(r9, NULL, 0);
    char *b = resolved_of(r9, NULL, 0);
    CHECK(same(a, b));
    const char *bs[] = {"train.batch_size=256"};
    char *c = resolved_of(r9, bs, 1);
    CHECK(c && !same(a, c));
    /* Writing a value as it already is, or as its default, changes nothing. */
    const char *as_is[] = {"train.epochs=24.0", "train.lr_schedule.values=(0, 0.4, 0)",
                           "train.label_smoothing=0", "train.precision=\"fp32\""};
    char *d = resolved_of(r9, as_is, 4);
    CHECK(same(a, d));
    /* model_vars and model.vars overrides resolve to the same experiment. */
    const char *v1[] = {"model_vars.width=16"};
    const char *v2[] = {"model.vars.width=16.0"};
    char *e1 = resolved_of(r9, v1, 1), *e2 = resolved_of(r9, v2, 1);
    CHECK(same(e1, e2));
    CHECK(e1 && !same(a, e1));
    /* The data directory as written is kept, whatever $DAWNRUN_DATA says. */
    CHECK(a && strstr(a, "dir = \"\";") != NULL);
    free(a);
    free(b);
    free(c);
    free(d);
    free(e1);
    free(e2);
}

/* Two spellings of the same experiment (key order, defaults written or not, default
 * names, int or float) give the same resolved text. */
static void test_canonical(void)
{
    char dir[] = "/tmp/dawnrun_test_config_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    const char *one =
        "name = \"canon\";\n"
        "model = { layers = ( { type = \"conv\"; out = 8; }, { type = \"relu\"; },\n"
        "  { type = \"gavgpool\"; }, { type = \"flatten\"; }, { type = \"linear\"; out = 10; } ); };\n"
        "train = { epochs = 2; lr_schedule = { knots = [0, 2]; values = (0.4, 0); }; };\n";
    const char *two =
        "train = { lr_schedule = { values = [0.4, 0.0]; knots = (0, 2.0); }; epochs = 2.0;\n"
        "  batch_size = 512; momentum = 0.9; };\n"
        "seeds = 1;\n"
        "model = { output = \"\"; layers = (\n"
        "  { out = 8; name = \"conv0\"; k = 3; type = \"conv\"; pad = -1; },\n"
        "  { type = \"relu\"; name = \"relu1\"; }, { type = \"gavgpool\"; },\n"
        "  { type = \"flatten\"; }, { bias = true; type = \"linear\"; out = 10; } ); };\n"
        "name = \"canon\";\n"
        "augment = { cutout = 0; };\n";
    char p1[512], p2[512];
    snprintf(p1, sizeof(p1), "%s/one.cfg", dir);
    snprintf(p2, sizeof(p2), "%s/two.cfg", dir);
    FILE *f = fopen(p1, "w");
    if (f) {
        fputs(one, f);
        fclose(f);
    }
    f = fopen(p2, "w");
    if (f) {
        fputs(two, f);
        fclose(f);
    }
    struct experiment a, b;
    int ra = experiment_load(&a, p1, NULL, 0), rb = experiment_load(&b, p2, NULL, 0);
    CHECK(ra == DR_OK && rb == DR_OK);
    if (ra == DR_OK && rb == DR_OK) {
        CHECK(same(a.resolved, b.resolved));
        if (!same(a.resolved, b.resolved))
            fprintf(stderr, "--- one\n%s--- two\n%s", a.resolved, b.resolved);
        CHECK(a.net.count == 5 && strcmp(a.net.layers[0].name, "conv0") == 0);
        CHECK(strcmp(a.net.layers[4].name, "linear4") == 0 && a.net.layers[4].bias == 1);
        CHECK(strcmp(a.net.layers[1].inputs[0], "conv0") == 0);
    }
    if (ra == DR_OK) experiment_free(&a);
    if (rb == DR_OK) experiment_free(&b);
    unlink(p1);
    unlink(p2);
    rmdir(dir);
}

/* ---- model variables: model.vars, model_vars and their overrides ------------------------ */

/* Writes text to dir/name; returns 1 on success. */
static int write_file(const char *dir, const char *name, const char *text, char *path, size_t n)
{
    snprintf(path, n, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f) return 0;
    int ok = fputs(text, f) >= 0;
    return fclose(f) == 0 && ok;
}

/* The `out` of the first layer of `file` loaded with the overrides (the network's conv
 * has out = "$w"), or -1 when it does not load. */
static int width_of(const char *file, const char *const *sets, int n)
{
    struct experiment e;
    if (experiment_load(&e, file, sets, n) != DR_OK) return -1;
    int w = e.net.count > 0 ? e.net.layers[0].out : -2;
    experiment_free(&e);
    return w;
}

/* One precedence for a network variable, whichever of its two spellings is used: the
 * files (model_vars over model.vars, wherever written), then the overrides in order. */
static void test_model_vars(void)
{
    char dir[] = "/tmp/dawnrun_test_vars_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    const char *net =
        "model = { vars = { w = 16; d = 2; };\n"
        "  layers = ( { type = \"conv\"; out = \"$w * $d / 2\"; }, { type = \"gavgpool\"; },\n"
        "    { type = \"flatten\"; }, { type = \"linear\"; out = 10; } ); };\n";
    const char *rest = "name = \"vars\";\n"
                       "train = { epochs = 1; lr_schedule = { knots = [0, 1]; values = (0.4, 0); }; };\n";
    char netp[512], plain[512], both[512], before[512], text[2048];
    int ok = write_file(dir, "net.cfg", net, netp, sizeof(netp));
    snprintf(text, sizeof(text), "%s@include \"net.cfg\"\n", rest);
    ok = ok && write_file(dir, "plain.cfg", text, plain, sizeof(plain));
    snprintf(text, sizeof(text), "%s@include \"net.cfg\"\nmodel_vars = { w = 8; };\n", rest);
    ok = ok && write_file(dir, "both.cfg", text, both, sizeof(both));
    snprintf(text, sizeof(text), "%smodel_vars = { w = 8; };\n@include \"net.cfg\"\n", rest);
    ok = ok && write_file(dir, "before.cfg", text, before, sizeof(before));
    CHECK(ok);

    /* files only */
    CHECK(width_of(plain, NULL, 0) == 16);
    CHECK(width_of(both, NULL, 0) == 8);   /* model_vars overrides the network's value */
    CHECK(width_of(before, NULL, 0) == 8); /* wherever it is written */
    /* one override, either spelling, with and without model_vars in the file */
    const char *dot[] = {"model.vars.w=4"}, *us[] = {"model_vars.w=4"};
    const char *files[] = {plain, both, before};
    for (int i = 0; i < 3; i++) {
        CHECK(width_of(files[i], dot, 1) == 4);
        CHECK(width_of(files[i], us, 1) == 4);
    }
    /* several overrides: the last one wins, whatever the spellings */
    const char *a[] = {"model.vars.w=4", "model_vars.w=6"};
    const char *b[] = {"model_vars.w=6", "model.vars.w=4"};
    const char *c[] = {"model_vars.w=6", "model_vars.w=12"};
    const char *d[] = {"model.vars.w=6", "model.vars.w=12"};
    for (int i = 0; i < 3; i++) {
        CHECK(width_of(files[i], a, 2) == 6);
        CHECK(width_of(files[i], b, 2) == 4);
        CHECK(width_of(files[i], c, 2) == 12);
        CHECK(width_of(files[i], d, 2) == 12);
    }
    /* a whole group: model_vars = {...} overrides the variables it names, model.vars = {...}
     * replaces the network's group (so it must give every variable) */
    const char *g1[] = {"model_vars={w=10;}"}, *g2[] = {"model.vars={w=10; d=2;}"};
    const char *g3[] = {"model.vars.w=4", "model_vars={w=10;}"};
    const char *g4[] = {"model_vars={w=10;}", "model.vars.w=4"};
    for (int i = 0; i < 3; i++) {
        CHECK(width_of(files[i], g1, 1) == 10);
        CHECK(width_of(files[i], g2, 1) == 10);
        CHECK(width_of(files[i], g3, 2) == 10);
        CHECK(width_of(files[i], g4, 2) == 4);
    }
    /* other variables keep their values */
    const char *dd[] = {"model.vars.d=4"};
    CHECK(width_of(both, dd, 1) == 16);
    /* the same value through either spelling is the same experiment */
    struct experiment x, y;
    int rx = experiment_load(&x, both, dot, 1), ry = experiment_load(&y, plain, us, 1);
    CHECK(rx == DR_OK && ry == DR_OK);
    if (rx == DR_OK && ry == DR_OK) {
        char hx[65], hy[65];
        experiment_hash(&x, hx);
        experiment_hash(&y, hy);
        CHECK(strcmp(hx, hy) == 0);
        CHECK(strstr(x.resolved, "w = 4.0;") != NULL && strstr(x.resolved, "model_vars") == NULL);
    }
    if (rx == DR_OK) experiment_free(&x);
    if (ry == DR_OK) experiment_free(&y);
    /* the canonical spelling sweeps and overrides share */
    char k[128];
    CHECK(config_key_canonical(k, sizeof(k), "model_vars.width") == DR_OK &&
          strcmp(k, "model.vars.width") == 0);
    CHECK(config_key_canonical(k, sizeof(k), "model_vars") == DR_OK && strcmp(k, "model.vars") == 0);
    CHECK(config_key_canonical(k, sizeof(k), "model.vars.width") == DR_OK &&
          strcmp(k, "model.vars.width") == 0);
    CHECK(config_key_canonical(k, sizeof(k), "model_varsx.w") == DR_OK &&
          strcmp(k, "model_varsx.w") == 0);
    CHECK(config_key_canonical(k, 8, "model_vars.width") == DR_ERR_NOMEM);
    unlink(netp);
    unlink(plain);
    unlink(both);
    unlink(before);
    rmdir(dir);
}

/* ---- layer defaults: code-built layers and config-built ones ---------------------------- */

/* A layer of every type with only its required attributes written gets, from the config,
 * exactly the attributes net_spec_add gives the same type in code. */
static void test_layer_defaults(void)
{
    /* the types with required attributes, and those attributes */
    static const struct {
        enum layer_type type;
        const char *required; /* config text */
        int out, k;
        float scale;
    } required[] = {
        {LAYER_CONV, "out = 8;", 8, 0, 0},        {LAYER_MAXPOOL, "k = 2;", 0, 2, 0},
        {LAYER_AVGPOOL, "k = 2;", 0, 2, 0},       {LAYER_LINEAR, "out = 10;", 10, 0, 0},
        {LAYER_SCALE, "scale = 0.5;", 0, 0, 0.5f}, {LAYER_SHORTCUT, "out = 8;", 8, 0, 0},
    };
    /* every type but the image: those above with theirs, the others with none */
    struct {
        enum layer_type type;
        const char *required;
        int out, k;
        float scale;
    } types[LAYER_TYPE_COUNT];
    int n = 0;
    for (int t = LAYER_INPUT + 1; t < LAYER_TYPE_COUNT; t++) {
        types[n].type = (enum layer_type)t;
        types[n].required = "";
        types[n].out = types[n].k = 0;
        types[n].scale = 0.0f;
        for (size_t r = 0; r < sizeof(required) / sizeof(required[0]); r++)
            if (required[r].type == (enum layer_type)t) {
                types[n].required = required[r].required;
                types[n].out = required[r].out;
                types[n].k = required[r].k;
                types[n].scale = required[r].scale;
            }
        n++;
    }
    char dir[] = "/tmp/dawnrun_test_defaults_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    char text[4096], path[512];
    int used = snprintf(text, sizeof(text), "name = \"defaults\";\nmodel = { layers = (\n");
    for (int i = 0; i < n; i++)
        used += snprintf(text + used, sizeof(text) - (size_t)used, "  { type = \"%s\"; %s }%s\n",
                         layer_type_name(types[i].type), types[i].required, i + 1 < n ? "," : "");
    snprintf(text + used, sizeof(text) - (size_t)used,
             "); };\ntrain = { epochs = 1; lr_schedule = { knots = [0, 1]; values = (0.4, 0); }; };\n");
    CHECK(write_file(dir, "defaults.cfg", text, path, sizeof(path)));
    struct experiment e;
    int rc = experiment_load(&e, path, NULL, 0);
    CHECK(rc == DR_OK);
    if (rc == DR_OK) {
        CHECK(e.net.count == n);
        struct net_spec code = {0};
        for (int i = 0; i < n && i < e.net.count; i++) {
            struct layer_spec *c = net_spec_add(&code, types[i].type);
            CHECK(c != NULL);
            if (!c) break;
            if (types[i].out) c->out = types[i].out;
            if (types[i].k) {
                c->k = types[i].k;
                c->stride = types[i].k; /* its default is k's value */
            }
            if (types[i].scale != 0.0f) c->scale = types[i].scale;
            /* everything but where the layer is and what it reads */
            struct layer_spec a = *c, b = e.net.layers[i];
            memset(a.name, 0, sizeof(a.name));
            memset(b.name, 0, sizeof(b.name));
            memset(a.inputs, 0, sizeof(a.inputs));
            memset(b.inputs, 0, sizeof(b.inputs));
            a.n_inputs = b.n_inputs = 0;
            a.file = b.file = NULL;
            a.line = b.line = 0;
            int same_attrs = memcmp(&a, &b, sizeof(a)) == 0;
            CHECK(same_attrs);
            if (!same_attrs)
                fprintf(stderr, "  %s: code k %d pad %d eps %g bias %d, config k %d pad %d eps %g "
                                "bias %d\n",
                        layer_type_name(types[i].type), a.k, a.pad, (double)a.eps, a.bias, b.k,
                        b.pad, (double)b.eps, b.bias);
        }
        net_spec_free(&code);
        experiment_free(&e);
    }
    unlink(path);
    rmdir(dir);
}

/* A hardswish layer from a config: its layer type and activation kind, and its name in the
 * resolved text; alpha is refused on it (only celu reads alpha). */
static void test_hardswish_layer(void)
{
    char dir[] = "/tmp/dawnrun_test_hardswish_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    const char *fmt = "name = \"hs\";\nmodel = { layers = (\n  { type = \"conv\"; out = 8; },\n"
                      "  { name = \"act\"; type = \"hardswish\";%s }\n); };\n"
                      "train = { epochs = 1; lr_schedule = { knots = [0, 1]; "
                      "values = (0.4, 0); }; };\n";
    char text[512], good[512], bad[512];
    snprintf(text, sizeof(text), fmt, "");
    CHECK(write_file(dir, "good.cfg", text, good, sizeof(good)));
    snprintf(text, sizeof(text), fmt, " alpha = 0.5;");
    CHECK(write_file(dir, "bad.cfg", text, bad, sizeof(bad)));
    struct experiment e;
    CHECK(experiment_load(&e, good, NULL, 0) == DR_OK);
    const struct layer_spec *act = find_layer(&e, "act");
    CHECK(act && act->type == LAYER_HARDSWISH);
    const struct layer_info *info = act ? layer_info(act->type) : NULL;
    CHECK(info && info->kind == LAYER_KIND_ACT && info->act == ACT_HARDSWISH);
    CHECK(layer_type_from_name("hardswish") == LAYER_HARDSWISH);
    CHECK(e.resolved && strstr(e.resolved, "\"hardswish\"") != NULL);
    experiment_free(&e);
    CHECK(experiment_load(&e, bad, NULL, 0) == DR_ERR_CONFIG);
    unlink(good);
    unlink(bad);
    rmdir(dir);
}

/* experiment_load of path with what it prints to stderr in msg (cut to n - 1 bytes). */
static int load_quoting(struct experiment *e, const char *path, char *msg, size_t n)
{
    fflush(stderr);
    FILE *cap = tmpfile();
    const int saved = dup(2);
    msg[0] = '\0';
    if (!cap || saved < 0 || dup2(fileno(cap), 2) < 0) {
        if (cap) fclose(cap);
        if (saved >= 0) close(saved);
        return -1;
    }
    const int rc = experiment_load(e, path, NULL, 0);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    const size_t got = fread(msg, 1, n - 1, cap);
    msg[got] = '\0';
    fclose(cap);
    return rc;
}

/* A dropout layer loads as LAYER_DROPOUT with its p (0.5 when left out) and builds; a p
 * above 1 or below 0 is refused by the schema, naming the file, the line, the layer and
 * the limit; p = 1 passes the schema (0..1) and is refused when the network is built. */
static void test_dropout_layer(void)
{
    char dir[] = "/tmp/dawnrun_test_dropout_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    const char *fmt = "name = \"drop\";\nmodel = { layers = (\n  { type = \"conv\"; out = 8; },\n"
                      "  { name = \"d\"; type = \"dropout\";%s },\n"
                      "  { name = \"d2\"; type = \"dropout\"; },\n"
                      "  { type = \"gavgpool\"; }, { type = \"flatten\"; }\n); };\n"
                      "train = { epochs = 1; lr_schedule = { knots = [0, 1]; "
                      "values = (0.4, 0); }; };\n";
    const char *ps[4] = {" p = 0.3;", " p = 1.5;", " p = -0.5;", " p = 1;"};
    const char *msgs[3] = {NULL, "drop1.cfg:4: layer 'd': 'p' must be <= 1, got 1.5",
                           "drop2.cfg:4: layer 'd': 'p' must be >= 0, got -0.5"};
    for (int k = 0; k < 4; k++) {
        char text[768], path[512], name[32], msg[1024];
        snprintf(text, sizeof(text), fmt, ps[k]);
        snprintf(name, sizeof(name), "drop%d.cfg", k);
        CHECK(write_file(dir, name, text, path, sizeof(path)));
        struct experiment e;
        const int rc = load_quoting(&e, path, msg, sizeof(msg));
        if (k == 1 || k == 2) {
            CHECK(rc == DR_ERR_CONFIG && strstr(msg, msgs[k]) != NULL);
            if (!strstr(msg, msgs[k])) printf("message: %s\nwanted: %s\n", msg, msgs[k]);
            unlink(path);
            continue;
        }
        CHECK(rc == DR_OK);
        const struct layer_spec *d = rc == DR_OK ? find_layer(&e, "d") : NULL;
        const struct layer_spec *d2 = rc == DR_OK ? find_layer(&e, "d2") : NULL;
        CHECK(d && d->type == LAYER_DROPOUT && d->p == (k == 0 ? 0.3f : 1.0f));
        CHECK(d2 && d2->type == LAYER_DROPOUT && d2->p == 0.5f);
        CHECK(layer_type_from_name("dropout") == LAYER_DROPOUT);
        if (rc == DR_OK) {
            struct graph g;
            char err[256];
            const int built = graph_build(&g, &e.net, 3, 32, 32, err, sizeof(err));
            if (k == 0) {
                CHECK(built == DR_OK);
                graph_free(&g);
            } else {
                CHECK(built == DR_ERR_CONFIG && strstr(err, "drop3.cfg:4: layer 'd': p (the "
                                                       "drop probability) must be in [0, 1), "
                                                       "got 1"));
            }
            experiment_free(&e);
        }
        unlink(path);
    }
    rmdir(dir);
}

/* A temperature layer loads as LAYER_TEMPERATURE with its init (default 1) and frozen;
 * init = 0 and -2 are refused by the schema naming the layer; the parameter kind's keys
 * (train.lr_scale, wd_scale, groups) are read into its slot; a network with one builds,
 * its scalar starting at init. */
static void test_temperature_layer(void)
{
    char dir[] = "/tmp/dawnrun_test_temperature_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(!"mkdtemp");
        return;
    }
    const char *fmt = "name = \"temp\";\nmodel = { layers = (\n  { type = \"conv\"; out = 8; },\n"
                      "  { type = \"gavgpool\"; }, { type = \"flatten\"; },\n"
                      "  { name = \"t\"; type = \"temperature\";%s },\n"
                      "  { name = \"t2\"; type = \"temperature\"; frozen = true; }\n); };\n"
                      "train = { epochs = 1; lr_schedule = { knots = [0, 1]; "
                      "values = (0.4, 0); }; lr_scale = { temperature = 0.5; };\n"
                      "  wd_scale = { temperature = 0.0; };\n"
                      "  groups = { temperature = { momentum = 0.25; }; }; };\n";
    const char *inits[3] = {" init = 0.125;", " init = 0;", " init = \"-2\";"};
    const char *msgs[3] = {NULL, "temp1.cfg:5: layer 't': 'init' must be > 0, got 0",
                           "temp2.cfg:5: layer 't': 'init' must be > 0, got -2"};
    for (int k = 0; k < 3; k++) {
        char text[1024], path[512], name[32], msg[1024];
        snprintf(text, sizeof(text), fmt, inits[k]);
        snprintf(name, sizeof(name), "temp%d.cfg", k);
        CHECK(write_file(dir, name, text, path, sizeof(path)));
        struct experiment e;
        const int rc = load_quoting(&e, path, msg, sizeof(msg));
        if (k > 0) {
            CHECK(rc == DR_ERR_CONFIG && strstr(msg, msgs[k]) != NULL);
            if (!strstr(msg, msgs[k])) printf("message: %s\nwanted: %s\n", msg, msgs[k]);
            unlink(path);
            continue;
        }
        CHECK(rc == DR_OK);
        if (rc != DR_OK) printf("message: %s\n", msg);
        const struct layer_spec *t = rc == DR_OK ? find_layer(&e, "t") : NULL;
        const struct layer_spec *t2 = rc == DR_OK ? find_layer(&e, "t2") : NULL;
        CHECK(t && t->type == LAYER_TEMPERATURE && t->init == 0.125f && t->frozen == 0);
        CHECK(t2 && t2->type == LAYER_TEMPERATURE && t2->init == 1.0f && t2->frozen == 1);
        CHECK(layer_type_from_name("temperature") == LAYER_TEMPERATURE);
        if (rc == DR_OK) {
            CHECK(e.train.lr_scale[PARAM_TEMPERATURE] == 0.5 &&
                  e.train.wd_scale[PARAM_TEMPERATURE] == 0.0);
            CHECK(e.train.lr_scale[PARAM_LINEAR_B] == 1.0 &&
                  e.train.wd_scale[PARAM_CONV_W] == 1.0);
            CHECK(e.train.groups[PARAM_TEMPERATURE].own &&
                  e.train.groups[PARAM_TEMPERATURE].momentum == 0.25 &&
                  !e.train.groups[PARAM_CONV_W].own);
            struct graph g;
            char err[256];
            const int built = graph_build(&g, &e.net, 3, 32, 32, err, sizeof(err));
            CHECK(built == DR_OK);
            if (built == DR_OK) {
                CHECK(g.n_params == 3 && g.params[1].kind == PARAM_TEMPERATURE &&
                      g.params[1].init_value == 0.125f && g.params[1].trainable &&
                      g.params[2].kind == PARAM_TEMPERATURE && !g.params[2].trainable);
                graph_free(&g);
            }
            experiment_free(&e);
        }
        unlink(path);
    }
    rmdir(dir);
}

/* ---- data directory, failures ---------------------------------------------------------- */

static void test_data_dir_and_failures(void)
{
    struct experiment e;
    char *saved = getenv("DAWNRUN_DATA") ? strdup(getenv("DAWNRUN_DATA")) : NULL;
    setenv("DAWNRUN_DATA", "/somewhere/cifar", 1);
    CHECK(load(&e, "configs/demo.cfg", NULL, 0) == DR_OK);
    CHECK(strcmp(e.data.dir, "/somewhere/cifar") == 0);
    experiment_free(&e);
    unsetenv("DAWNRUN_DATA");
    CHECK(load(&e, "configs/demo.cfg", NULL, 0) == DR_OK);
    CHECK(strcmp(e.data.dir, "./data/cifar-10-batches-bin") == 0);
    experiment_free(&e);
    if (saved) setenv("DAWNRUN_DATA", saved, 1);
    free(saved);

    CHECK(load(&e, "configs/no-such-file.cfg", NULL, 0) == DR_ERR_CONFIG);
    CHECK(e.resolved == NULL);
    CHECK(load(&e, "tests/configs/bad_parse.cfg", NULL, 0) == DR_ERR_CONFIG);
    CHECK(load(&e, "tests/configs/bad_expr.cfg", NULL, 0) == DR_ERR_CONFIG);
    CHECK(e.net.layers == NULL && e.resolved == NULL);
    CHECK(load(&e, "tests/configs/good.cfg", NULL, 0) == DR_OK);
    experiment_free(&e);
    experiment_free(&e); /* twice is harmless */
}

/* ---- schedule_at ----------------------------------------------------------------------- */

static void test_schedule_at(void)
{
    struct schedule s = {3, {0, 8, 30}, {0, 0.4, 0}};
    CHECK_NEAR(schedule_at(&s, 0), 0.0, 1e-12);
    CHECK_NEAR(schedule_at(&s, 4), 0.2, 1e-12);
    CHECK_NEAR(schedule_at(&s, 8), 0.4, 1e-12);
    CHECK_NEAR(schedule_at(&s, 19), 0.2, 1e-12);
    CHECK_NEAR(schedule_at(&s, 30), 0.0, 1e-12);
    CHECK_NEAR(schedule_at(&s, 35), 0.0, 1e-12); /* after the last knot */
    struct schedule t = {2, {2, 4}, {1, 3}};
    CHECK_NEAR(schedule_at(&t, -1), 1.0, 1e-12); /* before the first knot */
    CHECK_NEAR(schedule_at(&t, 3.5), 2.5, 1e-12);
    CHECK_NEAR(schedule_at(&t, 100), 3.0, 1e-12);
    struct schedule one = {1, {5}, {0.7}};
    CHECK_NEAR(schedule_at(&one, 0), 0.7, 1e-12);
    CHECK_NEAR(schedule_at(&one, 9), 0.7, 1e-12);
}

/* ---- expressions ----------------------------------------------------------------------- */

static int test_lookup(void *ctx, const char *name, double *v)
{
    (void)ctx;
    if (!strcmp(name, "width")) *v = 64;
    else if (!strcmp(name, "c_in")) *v = 3;
    else return 0;
    return 1;
}

static double eval(const char *text, int *status)
{
    double v = NAN;
    struct cfg_expr_error err;
    *status = cfg_expr_eval(&v, text, test_lookup, NULL, 0, &err);
    return v;
}

static void test_expr(void)
{
    int st;
    CHECK(eval("1+2*3", &st) == 7 && st == EXPR_OK);
    CHECK(eval("(1+2)*3", &st) == 9 && st == EXPR_OK);
    CHECK(eval(" 2 * $width ", &st) == 128 && st == EXPR_OK);
    CHECK(eval("8*$width/4", &st) == 128 && st == EXPR_OK);
    CHECK(eval("$width - $c_in - 1", &st) == 60 && st == EXPR_OK);
    CHECK(eval("-$c_in + 4", &st) == 1 && st == EXPR_OK);
    CHECK(eval("--2", &st) == 2 && st == EXPR_OK);
    CHECK(eval("1e2 + .5", &st) == 100.5 && st == EXPR_OK);
    CHECK(eval("7/2", &st) == 3.5 && st == EXPR_OK);
    CHECK(eval("42", &st) == 42 && st == EXPR_OK);
    eval("2**3", &st);
    CHECK(st == EXPR_SYNTAX);
    eval("(1+2", &st);
    CHECK(st == EXPR_SYNTAX);
    eval("1+2)", &st);
    CHECK(st == EXPR_SYNTAX);
    eval("", &st);
    CHECK(st == EXPR_SYNTAX);
    eval("2 3", &st);
    CHECK(st == EXPR_SYNTAX);
    eval("$", &st);
    CHECK(st == EXPR_SYNTAX);
    eval("width", &st);
    CHECK(st == EXPR_SYNTAX);
    eval("1/0", &st);
    CHECK(st == EXPR_DIV_ZERO);
    eval("$width/($c_in-3)", &st);
    CHECK(st == EXPR_DIV_ZERO);
    struct cfg_expr_error err;
    double v;
    CHECK(cfg_expr_eval(&v, "2*$widht", test_lookup, NULL, 0, &err) == EXPR_UNKNOWN_VAR);
    CHECK(strcmp(err.name, "widht") == 0);
    CHECK(cfg_expr_eval(&v, "2*(", test_lookup, NULL, 0, &err) == EXPR_SYNTAX);
    CHECK(strstr(err.msg, "at the end") != NULL);
    /* check_only: names are checked, values and division by zero are not */
    CHECK(cfg_expr_eval(NULL, "1/($width-$width)", test_lookup, NULL, 1, &err) == EXPR_OK);
    CHECK(cfg_expr_eval(NULL, "$nope", test_lookup, NULL, 1, &err) == EXPR_UNKNOWN_VAR);
}

/* ---- did-you-mean ---------------------------------------------------------------------- */

static void test_suggest(void)
{
    const char *keys[] = {"epochs", "batch_size", "lr_schedule", "momentum", "nesterov",
                          "weight_decay", "loss", "label_smoothing", "precision"};
    int n = (int)(sizeof(keys) / sizeof(keys[0]));
    CHECK(cfg_edit_distance("kitten", "sitting") == 3);
    CHECK(cfg_edit_distance("", "abc") == 3);
    CHECK(cfg_edit_distance("same", "same") == 0);
    const char *s = cfg_suggest("batchsize", keys, n);
    CHECK(s && strcmp(s, "batch_size") == 0);
    s = cfg_suggest("momentun", keys, n);
    CHECK(s && strcmp(s, "momentum") == 0);
    s = cfg_suggest("lr", keys, n); /* a prefix */
    CHECK(s && strcmp(s, "lr_schedule") == 0);
    s = cfg_suggest("label_smooth", keys, n);
    CHECK(s && strcmp(s, "label_smoothing") == 0);
    CHECK(cfg_suggest("zzz", keys, n) == NULL);
    CHECK(cfg_suggest("x", keys, n) == NULL);
}

/* ---- the schema ------------------------------------------------------------------------ */

static void test_schema(void)
{
    config_t schema;
    CHECK(cfg_schema_load(&schema) == DR_OK);
    const config_setting_t *types = config_lookup(&schema, "layer_types");
    CHECK(types != NULL);
    /* Every layer type of the schema is a type of the graph, and the other way round. */
    for (int i = 0; types && i < config_setting_length(types); i++) {
        const char *name = config_setting_name(config_setting_get_elem(types, (unsigned)i));
        CHECK(layer_type_from_name(name) > LAYER_INPUT);
    }
    for (int t = LAYER_INPUT + 1; t < LAYER_TYPE_COUNT; t++)
        CHECK(types && config_setting_get_member(types, layer_type_name((enum layer_type)t)));
    /* Every entry has a type and a doc. */
    const char *groups[] = {"experiment", "layer", "block"};
    for (int g = 0; g < 3; g++) {
        const config_setting_t *keys = config_lookup(&schema, groups[g]);
        for (int i = 0; keys && i < config_setting_length(keys); i++) {
            const config_setting_t *e = config_setting_get_elem(keys, (unsigned)i);
            const char *v;
            CHECK(config_setting_lookup_string(e, "type", &v));
            CHECK(config_setting_lookup_string(e, "doc", &v));
        }
    }
    config_destroy(&schema);
}

/* The number `key` of the schema entry at `path` (an experiment key, or a full path such
 * as "layer_types.whiten.attrs.images"), or -1 when it has none. */
static long long schema_number(const config_t *schema, const char *path, const char *key)
{
    const config_setting_t *e = !strncmp(path, "layer_types.", 12)
                                    ? config_lookup(schema, path)
                                    : cfg_schema_entry(config_root_setting(schema), path, NULL);
    long long v = -1;
    if (!e || !config_setting_lookup_int64(e, key, &v)) return -1;
    return v;
}

/* The schema states limits and names that the code states too; each has its source in the
 * code, and the schema must say the same. */
static void test_schema_states_code_facts(void)
{
    config_t schema;
    CHECK(cfg_schema_load(&schema) == DR_OK);
    /* the training and test images of CIFAR-10, which data.*_subset = 0 means */
    CHECK(schema_number(&schema, "data.train_subset", "max") == EXPERIMENT_TRAIN_IMAGES);
    CHECK(schema_number(&schema, "train.batch_size", "max") == EXPERIMENT_TRAIN_IMAGES);
    CHECK(schema_number(&schema, "layer_types.whiten.attrs.images", "max") ==
          EXPERIMENT_TRAIN_IMAGES);
    CHECK(schema_number(&schema, "data.test_subset", "max") == EXPERIMENT_TEST_IMAGES);
    CHECK(schema_number(&schema, "eval.batch_size", "max") == EXPERIMENT_TEST_IMAGES);
    /* the docs' "the 50,000 training images": the same number, with its thousands comma */
    char train[32], test[32];
    snprintf(train, sizeof train, "%d,%03d", EXPERIMENT_TRAIN_IMAGES / 1000,
             EXPERIMENT_TRAIN_IMAGES % 1000);
    snprintf(test, sizeof test, "%d,%03d", EXPERIMENT_TEST_IMAGES / 1000,
             EXPERIMENT_TEST_IMAGES % 1000);
    const config_setting_t *root = config_root_setting(&schema);
    const char *doc = cfg_entry_str(cfg_schema_entry(root, "data.train_subset", NULL), "doc");
    CHECK(doc && strstr(doc, train));
    doc = cfg_entry_str(cfg_schema_entry(root, "train.batch_size", NULL), "doc");
    CHECK(doc && strstr(doc, train));
    doc = cfg_entry_str(cfg_schema_entry(root, "data.test_subset", NULL), "doc");
    CHECK(doc && strstr(doc, test));
    /* augmentation limits (kernels/augment.h, checked by the backends) */
    CHECK(schema_number(&schema, "augment.pad", "max") == AUGMENT_MAX_PAD);
    CHECK(schema_number(&schema, "augment.pad", "min") == 0);
    CHECK(schema_number(&schema, "augment.cutout", "max") == AUGMENT_MAX_CUTOUT);
    CHECK(schema_number(&schema, "augment.cutout", "min") == 0);
    /* train.precision's names, in the order of enum precision (kernels/precision.h) */
    const config_setting_t *values =
        config_setting_get_member(cfg_schema_entry(root, "train.precision", NULL), "values");
    CHECK(values && config_setting_length(values) == PRECISION_COUNT);
    for (int p = 0; values && p < config_setting_length(values); p++) {
        const char *name = config_setting_get_string_elem(values, p);
        CHECK(name && precision_name(p) && !strcmp(name, precision_name(p)));
    }
    CHECK(precision_name(PRECISION_COUNT) == NULL && precision_name(-1) == NULL);
    config_destroy(&schema);
}

/* docs/config.md carries config_schema_print's output after its marker line. */
static void test_docs(void)
{
    char path[1024], *printed = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&printed, &len);
    if (!m) {
        CHECK(!"open_memstream");
        return;
    }
    config_schema_print(m);
    fclose(m);
    CHECK(printed && strstr(printed, "`train.batch_size`") != NULL);
    CHECK(printed && strstr(printed, "### conv") != NULL);
    source_path(path, sizeof(path), "docs/config.md");
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f && printed) {
        static char doc[1 << 18];
        size_t n = fread(doc, 1, sizeof(doc) - 1, f);
        doc[n] = '\0';
        const char *marker = "<!-- generated by `dawnrun config-doc` from schemas/config.schema; "
                             "do not edit below -->\n";
        const char *gen = strstr(doc, marker);
        CHECK(gen != NULL);
        char all[40];   /* the prose above the reference states the training images too */
        snprintf(all, sizeof all, "or all %d,%03d", EXPERIMENT_TRAIN_IMAGES / 1000,
                 EXPERIMENT_TRAIN_IMAGES % 1000);
        CHECK(strstr(doc, all) != NULL);
        if (gen) {
            gen += strlen(marker);
            while (*gen == '\n') gen++;
            CHECK(strcmp(gen, printed) == 0);
            if (strcmp(gen, printed) != 0)
                fprintf(stderr, "  docs/config.md is stale: regenerate its reference with "
                                "`dawnrun config-doc`\n");
        }
    }
    if (f) fclose(f);
    free(printed);
}

int main(void)
{
    test_all_shipped();
    test_page_post3();
    test_resnet9_and_demo();
    test_airbench94();
    test_page_final();
    test_new_defaults();
    test_hash_pins();
    test_set();
    test_resolved();
    test_canonical();
    test_model_vars();
    test_layer_defaults();
    test_hardswish_layer();
    test_dropout_layer();
    test_temperature_layer();
    test_data_dir_and_failures();
    test_schedule_at();
    test_expr();
    test_suggest();
    test_schema();
    test_schema_states_code_facts();
    test_docs();
    return check_finish("test_config");
}

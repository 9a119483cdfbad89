/* graph_build on the reference networks (ResNet-9, DAWN_net and airbench94, built as
 * net_specs the way the config loader expands their blocks) and on one small broken
 * network per kind of error: parameter counts, FLOPs, shapes, shortcut resolution, the
 * whitening layer, dirac starts, frozen layers and messages. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "engine/core/graph.h"
#include "base/status.h"
#include "tests/check.h"

#define NET_FILE "nets/test.cfg"

/* Appends a layer named `name` of type t, written at NET_FILE:(its position + 10). */
static struct layer_spec *add(struct net_spec *s, const char *name, enum layer_type t)
{
    struct layer_spec *l = net_spec_add(s, t);
    if (!l) return NULL;
    snprintf(l->name, sizeof l->name, "%s", name);
    l->file = NET_FILE;
    l->line = s->count + 10;
    return l;
}

/* Sets a layer's inputs from n names. */
static void inputs(struct layer_spec *l, int n, ...)
{
    va_list ap;
    va_start(ap, n);
    l->n_inputs = n;
    for (int i = 0; i < n; i++) snprintf(l->inputs[i], sizeof l->inputs[i], "%s", va_arg(ap, char *));
    va_end(ap);
}

static const char *last_name(const struct net_spec *s)
{
    return s->count ? s->layers[s->count - 1].name : "input";
}

static void join(char *out, const char *a, const char *b)
{
    int n = snprintf(out, GRAPH_NAME_MAX, "%s.%s", a, b);
    if (n < 0 || n >= GRAPH_NAME_MAX) fprintf(stderr, "test name '%s.%s' too long\n", a, b);
}

/* block conv_bn(c): conv(c) -> bn -> relu; names "<inst>.conv", ... */
static void conv_bn(struct net_spec *s, const char *inst, int c)
{
    char n[GRAPH_NAME_MAX];
    join(n, inst, "conv");
    add(s, n, LAYER_CONV)->out = c;
    join(n, inst, "bn");
    add(s, n, LAYER_BN);
    join(n, inst, "relu");
    add(s, n, LAYER_RELU);
}

/* block residual(c): res1 = conv_bn(c), res2 = conv_bn(c), add(in, res2) */
static void residual(struct net_spec *s, const char *inst, int c)
{
    char in[GRAPH_NAME_MAX], n[GRAPH_NAME_MAX], r2[GRAPH_NAME_MAX];
    snprintf(in, sizeof in, "%s", last_name(s));
    join(n, inst, "res1");
    conv_bn(s, n, c);
    join(n, inst, "res2");
    conv_bn(s, n, c);
    join(r2, n, "relu");
    join(n, inst, "add");
    inputs(add(s, n, LAYER_ADD), 2, in, r2);
}

static void pool(struct net_spec *s, const char *name, enum layer_type t, int k)
{
    struct layer_spec *l = add(s, name, t);
    l->k = k;
    l->stride = k;
}

/* configs/nets/resnet9.cfg with width w */
static void build_resnet9(struct net_spec *s, int w)
{
    conv_bn(s, "prep", w);
    conv_bn(s, "layer1", 2 * w);
    pool(s, "pool1", LAYER_MAXPOOL, 2);
    residual(s, "res1", 2 * w);
    conv_bn(s, "layer2", 4 * w);
    pool(s, "pool2", LAYER_MAXPOOL, 2);
    conv_bn(s, "layer3", 8 * w);
    pool(s, "pool3", LAYER_MAXPOOL, 2);
    residual(s, "res3", 8 * w);
    add(s, "pool", LAYER_GMAXPOOL);
    add(s, "flat", LAYER_FLATTEN);
    struct layer_spec *lin = add(s, "linear", LAYER_LINEAR);
    lin->out = 10;
    lin->bias = 0;
    add(s, "logits", LAYER_SCALE)->scale = 0.125f;
}

/* block res_block(c_in, c_out, stride): bn(c_in) -> relu -> [conv1 -> bn1 -> relu1 ->
 * conv2], shortcut(relu), add(shortcut, conv2) */
static void res_block(struct net_spec *s, const char *inst, int c_in, int c_out, int stride)
{
    char n[GRAPH_NAME_MAX], relu[GRAPH_NAME_MAX], sc[GRAPH_NAME_MAX], c2[GRAPH_NAME_MAX];
    join(n, inst, "bn");
    add(s, n, LAYER_BN)->expect_in = c_in;
    join(relu, inst, "relu");
    add(s, relu, LAYER_RELU);
    join(n, inst, "conv1");
    struct layer_spec *l = add(s, n, LAYER_CONV);
    l->out = c_out;
    l->stride = stride;
    join(n, inst, "bn1");
    add(s, n, LAYER_BN);
    join(n, inst, "relu1");
    add(s, n, LAYER_RELU);
    join(c2, inst, "conv2");
    add(s, c2, LAYER_CONV)->out = c_out;
    join(sc, inst, "shortcut");
    l = add(s, sc, LAYER_SHORTCUT);
    l->out = c_out;
    l->stride = stride;
    inputs(l, 1, relu);
    join(n, inst, "add");
    inputs(add(s, n, LAYER_ADD), 2, sc, c2);
}

/* configs/nets/dawn_net.cfg */
static void build_dawn_net(struct net_spec *s)
{
    add(s, "prep", LAYER_CONV)->out = 64;
    res_block(s, "layer1a", 64, 64, 1);
    res_block(s, "layer1b", 64, 64, 1);
    res_block(s, "layer2a", 64, 128, 2);
    res_block(s, "layer2b", 128, 128, 1);
    res_block(s, "layer3a", 128, 256, 2);
    res_block(s, "layer3b", 256, 256, 1);
    res_block(s, "layer4a", 256, 256, 2);
    res_block(s, "layer4b", 256, 256, 1);
    pool(s, "pool_max", LAYER_MAXPOOL, 4);
    inputs(&s->layers[s->count - 1], 1, "layer4b.add");
    pool(s, "pool_avg", LAYER_AVGPOOL, 4);
    inputs(&s->layers[s->count - 1], 1, "layer4b.add");
    inputs(add(s, "concat", LAYER_CONCAT), 2, "pool_max", "pool_avg");
    add(s, "flat", LAYER_FLATTEN);
    struct layer_spec *lin = add(s, "linear", LAYER_LINEAR);
    lin->out = 10;
    lin->bias = 1;
}

/* Graph id of the layer named `name`, or -1. */
static int find(const struct graph *g, const char *name)
{
    for (int i = 0; i < g->count; i++)
        if (strcmp(g->layers[i].spec.name, name) == 0) return i;
    return -1;
}

static int shape_is(const struct graph *g, const char *name, int c, int h, int w)
{
    int i = find(g, name);
    if (i < 0) {
        fprintf(stderr, "no layer '%s'\n", name);
        return 0;
    }
    const struct layer *l = &g->layers[i];
    if (l->c == c && l->h == h && l->w == w) return 1;
    fprintf(stderr, "layer '%s' is %dx%dx%d, expected %dx%dx%d\n", name, l->c, l->h, l->w, c, h, w);
    return 0;
}

static void test_type_names(void)
{
    for (int t = 0; t < LAYER_TYPE_COUNT; t++)
        CHECK(layer_type_from_name(layer_type_name((enum layer_type)t)) == t);
    CHECK(layer_type_from_name("conv") == LAYER_CONV);
    CHECK(layer_type_from_name("gavgpool") == LAYER_GAVGPOOL);
    CHECK(layer_type_from_name("shortcut") == LAYER_SHORTCUT);
    CHECK(layer_type_from_name("convolution") == -1);
    CHECK(layer_type_from_name("") == -1);
    CHECK(strcmp(layer_type_name(LAYER_BN), "bn") == 0);

    struct net_spec s = {0};
    struct layer_spec *l = NULL;
    for (int i = 0; i < 100; i++) l = net_spec_add(&s, LAYER_CONV); /* grows past 32 */
    CHECK(s.count == 100 && l == &s.layers[99]);
    CHECK(l->type == LAYER_CONV && l->k == 3 && l->stride == 1 && l->pad == -1 &&
          l->n_inputs == 0 && l->bias == 0 && l->out == 0);
    CHECK(l->name[0] == '\0' && l->file == NULL && l->frozen == 0 && l->dirac == 0);
    /* the schema's defaults, per type (the config's, by construction) */
    l = net_spec_add(&s, LAYER_BN);
    CHECK(l && l->eps == 1e-5f && l->momentum == 0.1f && l->splits == 1 && l->freeze_weight == 0);
    l = net_spec_add(&s, LAYER_LINEAR);
    CHECK(l && l->bias == 1 && l->expect_in == 0);
    l = net_spec_add(&s, LAYER_WHITEN);
    CHECK(l && l->k == 2 && l->pad == 0 && l->eps == 5e-4f && l->whiten_images == 5000 &&
          l->bias == 0 && l->negate == 0);
    l = net_spec_add(&s, LAYER_CELU);
    CHECK(l && l->alpha == 1.0f && l->k == 0);
    l = net_spec_add(&s, LAYER_MAXPOOL); /* k is required, stride defaults to it */
    CHECK(l && l->k == 0 && l->stride == 0);
    l = net_spec_add(&s, LAYER_INPUT);   /* no attributes (graph_build refuses it) */
    CHECK(l && l->type == LAYER_INPUT && s.count == 106);
    CHECK(net_spec_add(&s, (enum layer_type)LAYER_TYPE_COUNT) == NULL && s.count == 106);
    l = net_spec_append(&s);
    CHECK(l && l->k == 0 && l->eps == 0.0f && l->type == LAYER_INPUT);
    net_spec_free(&s);

    CHECK(strcmp(layer_type_name(LAYER_WHITEN), "whiten") == 0);
    const char *kinds[PARAM_KIND_COUNT] = {"conv_weight", "conv_bias", "bn_weight",
                                           "bn_bias", "linear_weight", "linear_bias",
                                           "whiten_weight", "whiten_bias", "temperature"};
    for (int k = 0; k < PARAM_KIND_COUNT; k++)
        CHECK(strcmp(param_kind_name((enum param_kind)k), kinds[k]) == 0);
    CHECK(strcmp(param_kind_name(PARAM_KIND_COUNT), "unknown") == 0);
    CHECK(s.layers == NULL && s.count == 0);
}

static void test_resnet9(void)
{
    struct net_spec s = {0};
    struct graph g;
    char err[256];
    build_resnet9(&s, 64);
    int rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK);
    if (rc != DR_OK) {
        fprintf(stderr, "%s\n", err);
        net_spec_free(&s);
        return;
    }
    /* input + 3 conv_bn (3 each) ... : 1 + 3+3+1+7+3+1+3+1+7+4 */
    CHECK(g.count == 34);
    CHECK(g.layers[0].spec.type == LAYER_INPUT && strcmp(g.layers[0].spec.name, "input") == 0);
    CHECK(g.output == g.count - 1 && strcmp(g.layers[g.output].spec.name, "logits") == 0);

    /* weights: convs 3*64*9 + 64*128*9 + 2*128*128*9 + 128*256*9 + 256*512*9 + 2*512*512*9
     * = 1728 + 73728 + 294912 + 294912 + 1179648 + 4718592 = 6563520; BN 2*(64 + 128 +
     * 2*128 + 256 + 512 + 2*512) = 4480; linear 512*10 = 5120; total 6573120 */
    CHECK(g.n_weights == 6573120);
    /* 8 conv+bn pairs (3 params each) + linear weight */
    CHECK(g.n_params == 8 * 3 + 1);

    /* conv+linear FLOPs: prep 2*64*3*9*32*32 = 3538944; layer1 (32x32), res1 x2 (16x16),
     * layer2 (16x16), layer3 (8x8), res3 x2 (4x4) are each 150994944 (2*75497472 for the
     * residual pairs), five in all: 754974720; linear 2*512*10 = 10240.
     * Total 758523904 = 0.7585 GFLOP. */
    CHECK(g.flops_forward == 758523904);
    CHECK(fabs((double)g.flops_forward - 0.759e9) <= 0.005 * 0.759e9);
    /* elementwise: bn elements 65536 + 131072 + 65536 + 65536 + 32768 + 16384 = 376832,
     * x4 = 1507328; relu 376832; maxpools (32768 + 16384 + 8192) * 4 = 229376; adds
     * 32768 + 8192 = 40960; gmaxpool 512*16 = 8192; scale 10. Total 2162698. */
    CHECK(g.flops_elementwise == 2162698);
    int64_t sum = 0;
    for (int i = 0; i < g.count; i++) sum += g.layers[i].flops;
    CHECK(sum == g.flops_forward + g.flops_elementwise);
    /* the prep conv's input is the image: no data gradient */
    CHECK(graph_train_flops(&g) == 3 * g.flops_forward - 3538944 + 2 * g.flops_elementwise);

    CHECK(shape_is(&g, "prep.relu", 64, 32, 32));
    CHECK(shape_is(&g, "pool1", 128, 16, 16));
    CHECK(shape_is(&g, "res1.res2.conv", 128, 16, 16));
    CHECK(shape_is(&g, "res1.add", 128, 16, 16));
    CHECK(shape_is(&g, "pool3", 512, 4, 4));
    CHECK(shape_is(&g, "res3.add", 512, 4, 4));
    CHECK(shape_is(&g, "pool", 512, 1, 1));
    CHECK(shape_is(&g, "flat", 512, 1, 1));
    CHECK(shape_is(&g, "logits", 10, 1, 1));

    /* resolved attributes and inputs */
    int add1 = find(&g, "res1.add");
    CHECK(add1 > 0 && g.layers[add1].n_inputs == 2);
    CHECK(add1 > 0 && g.layers[add1].inputs[0] == find(&g, "pool1"));
    CHECK(add1 > 0 && g.layers[add1].inputs[1] == find(&g, "res1.res2.relu"));
    int p1 = find(&g, "pool1");
    CHECK(g.layers[p1].inputs[0] == p1 - 1 && g.layers[p1].in_c == 128 && g.layers[p1].in_h == 32);
    int c0 = find(&g, "prep.conv");
    CHECK(c0 == 1 && g.layers[c0].spec.pad == 1 && g.layers[c0].inputs[0] == 0);
    for (int i = 1; i < g.count; i++)
        for (int k = 0; k < g.layers[i].n_inputs; k++) CHECK(g.layers[i].inputs[k] < i);

    /* parameter layout */
    const struct param_desc *p = g.params;
    CHECK(p[0].kind == PARAM_CONV_W && p[0].layer == 1 && p[0].n == 64 && p[0].c == 3 &&
          p[0].h == 3 && p[0].w == 3 && p[0].trainable);
    CHECK_NEAR(p[0].init_bound, 1.0 / sqrt(27.0), 1e-7);
    CHECK(p[1].kind == PARAM_BN_W && p[1].layer == 2 && p[1].n == 64 && p[1].c == 1 &&
          p[1].init_bound == 0.0f && p[1].init_value == 1.0f);
    CHECK(p[2].kind == PARAM_BN_B && p[2].init_value == 0.0f);
    CHECK(g.layers[2].param_first == 1 && g.layers[2].param_count == 2);
    CHECK(g.layers[3].param_count == 0);
    const struct param_desc *lw = &g.params[g.n_params - 1];
    int lin = find(&g, "linear");
    CHECK(lw->kind == PARAM_LINEAR_W && lw->layer == lin && lw->n == 10 && lw->c == 512 &&
          lw->h == 1 && lw->w == 1);
    CHECK_NEAR(lw->init_bound, 1.0 / sqrt(512.0), 1e-7);
    CHECK(g.layers[lin].param_first == g.n_params - 1 && g.layers[lin].param_count == 1);
    int64_t total = 0;
    for (int k = 0; k < g.n_params; k++)
        total += (int64_t)g.params[k].n * g.params[k].c * g.params[k].h * g.params[k].w;
    CHECK(total == g.n_weights);
    graph_free(&g);
    CHECK(g.layers == NULL && g.count == 0);

    /* a frozen BN weight stays in params (constant 1) but is not counted as trainable */
    s.layers[1].freeze_weight = 1; /* prep.bn, 64 channels */
    rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK);
    CHECK(g.n_weights == 6573120 - 64);
    CHECK(g.n_params == 25 && g.params[1].kind == PARAM_BN_W && !g.params[1].trainable);
    CHECK(g.params[2].trainable);
    graph_free(&g);
    s.layers[1].freeze_bias = 1;
    rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK && g.n_weights == 6573120 - 128);
    graph_free(&g);
    net_spec_free(&s);

    /* width 16: convs between two widths scale by 1/16, the prep conv (3 -> w) by 1/4,
     * the linear (8w -> 10) by 1/4 */
    build_resnet9(&s, 16);
    rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK && g.flops_forward == 754974720 / 16 + 3538944 / 4 + 2 * 128 * 10);
    graph_free(&g);
    net_spec_free(&s);
}

static void test_dawn_net(void)
{
    struct net_spec s = {0};
    struct graph g;
    char err[256];
    build_dawn_net(&s);
    int rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK);
    if (rc != DR_OK) {
        fprintf(stderr, "%s\n", err);
        net_spec_free(&s);
        return;
    }
    /* input + prep + 8 blocks of 7 + 3 projections + 5 head layers */
    CHECK(g.count == 1 + 1 + 8 * 7 + 3 + 5);
    /* prep 1728; layer1 2*(36864*2 + 256) = 147968; layer2a 128 + 73728 + 256 + 147456 +
     * 8192 = 229760; layer2b 295424; layer3a 918272; layer3b 1180672; layer4a 1246208;
     * layer4b 1180672; linear 5130; total 5205834 */
    CHECK(g.n_weights == 5205834);

    /* three projection shortcuts become bias-free 1x1 convs, five are identities */
    int proj = 0;
    for (int i = 0; i < g.count; i++) {
        const char *dot = strrchr(g.layers[i].spec.name, '.');
        if (!dot || strcmp(dot, ".shortcut") != 0) continue;
        const struct layer *l = &g.layers[i];
        proj++;
        CHECK(l->spec.type == LAYER_CONV && l->spec.k == 1 && l->spec.pad == 0 &&
              l->spec.bias == 0 && l->spec.stride == 2 && l->param_count == 1);
    }
    CHECK(proj == 3);
    CHECK(find(&g, "layer1a.shortcut") < 0 && find(&g, "layer4b.shortcut") < 0);
    int sc = find(&g, "layer2a.shortcut");
    CHECK(sc > 0 && g.layers[sc].inputs[0] == find(&g, "layer2a.relu"));
    CHECK(shape_is(&g, "layer2a.shortcut", 128, 16, 16));
    CHECK(shape_is(&g, "layer4a.shortcut", 256, 4, 4));
    const struct param_desc *pw = &g.params[g.layers[sc].param_first];
    CHECK(pw->kind == PARAM_CONV_W && pw->n == 128 && pw->c == 64 && pw->h == 1 && pw->w == 1);
    CHECK_NEAR(pw->init_bound, 1.0 / 8.0, 1e-7);
    /* an identity shortcut's name resolves to its input */
    int add1 = find(&g, "layer1a.add");
    CHECK(add1 > 0 && g.layers[add1].inputs[0] == find(&g, "layer1a.relu"));
    CHECK(add1 > 0 && g.layers[add1].inputs[1] == find(&g, "layer1a.conv2"));
    int add2 = find(&g, "layer2a.add");
    CHECK(add2 > 0 && g.layers[add2].inputs[0] == sc);

    CHECK(shape_is(&g, "prep", 64, 32, 32));
    CHECK(shape_is(&g, "layer1b.add", 64, 32, 32));
    CHECK(shape_is(&g, "layer2a.conv1", 128, 16, 16));
    CHECK(shape_is(&g, "layer3b.add", 256, 8, 8));
    CHECK(shape_is(&g, "layer4b.add", 256, 4, 4));
    CHECK(shape_is(&g, "pool_max", 256, 1, 1));
    CHECK(shape_is(&g, "concat", 512, 1, 1));
    CHECK(shape_is(&g, "linear", 10, 1, 1));
    CHECK(g.output == find(&g, "linear"));
    int lin = find(&g, "linear");
    CHECK(g.layers[lin].param_count == 2 && g.params[g.layers[lin].param_first + 1].kind ==
                                               PARAM_LINEAR_B);
    CHECK(g.layers[lin].flops == 2 * 512 * 10 + 10);
    graph_free(&g);

    /* an explicit output naming an identity shortcut resolves through it (and must be
     * flat: here it is not) */
    snprintf(s.output, sizeof s.output, "%s", "layer1a.shortcut");
    rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_ERR_CONFIG && strstr(err, "layer 'layer1a.relu'") && strstr(err, "64x32x32"));
    snprintf(s.output, sizeof s.output, "%s", "flat");
    rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK && g.output == find(&g, "flat"));
    graph_free(&g);
    net_spec_free(&s);
}

/* airbench94's network (configs/nets/airbench94.cfg): whiten(k 2, negate, bias) -> gelu,
 * three groups of dirac conv -> maxpool 2 -> bn -> gelu -> dirac conv -> bn -> gelu, then
 * maxpool 3, flatten, linear, scale. */
static void build_airbench(struct net_spec *s)
{
    struct layer_spec *l = add(s, "whiten", LAYER_WHITEN);
    l->k = 2;
    l->pad = 0;
    l->eps = 5e-4f;
    l->negate = 1;
    l->bias = 1;
    l->bias_epochs = 3;
    add(s, "act", LAYER_GELU);
    const int widths[3] = {64, 256, 256};
    for (int b = 0; b < 3; b++) {
        char inst[16], n[GRAPH_NAME_MAX];
        snprintf(inst, sizeof inst, "block%d", b + 1);
        for (int c = 0; c < 2; c++) {
            join(n, inst, c ? "conv2" : "conv1");
            l = add(s, n, LAYER_CONV);
            l->out = widths[b];
            l->dirac = 1;
            if (!c) {
                join(n, inst, "pool");
                pool(s, n, LAYER_MAXPOOL, 2);
            }
            join(n, inst, c ? "bn2" : "bn1");
            l = add(s, n, LAYER_BN);
            l->eps = 1e-12f;
            l->momentum = 0.4f;
            l->freeze_weight = 1;
            join(n, inst, c ? "act2" : "act1");
            add(s, n, LAYER_GELU);
        }
    }
    pool(s, "pool", LAYER_MAXPOOL, 3);
    add(s, "flat", LAYER_FLATTEN);
    l = add(s, "linear", LAYER_LINEAR);
    l->out = 10;
    l->bias = 0;
    add(s, "logits", LAYER_SCALE)->scale = 1.0f / 9;
}

static void test_airbench(void)
{
    struct net_spec s = {0};
    struct graph g;
    char err[256];
    build_airbench(&s);
    int rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK);
    if (rc != DR_OK) {
        fprintf(stderr, "%s\n", err);
        net_spec_free(&s);
        return;
    }
    /* whiten: 24 = 2 * 3 * 2 * 2 channels, 31x31 (k 2, no padding), stride 1 */
    int w = find(&g, "whiten");
    CHECK(w == 1 && shape_is(&g, "whiten", 24, 31, 31));
    CHECK(g.layers[w].spec.type == LAYER_WHITEN && g.layers[w].spec.out == 24 &&
          g.layers[w].spec.stride == 1 && g.layers[w].spec.pad == 0);
    CHECK(g.layers[w].param_count == 2);
    const struct param_desc *ww = &g.params[g.layers[w].param_first], *wb = ww + 1;
    CHECK(ww->kind == PARAM_WHITEN_W && ww->n == 24 && ww->c == 3 && ww->h == 2 && ww->w == 2);
    CHECK(ww->init == PARAM_INIT_WHITEN && !ww->trainable && ww->train_epochs == 0);
    CHECK(wb->kind == PARAM_WHITEN_B && wb->n == 24 && wb->c == 1 && wb->trainable);
    CHECK(wb->train_epochs == 3 && wb->init == PARAM_INIT_DEFAULT);
    CHECK_NEAR(wb->init_bound, 1.0 / sqrt(12.0), 1e-7);
    CHECK(shape_is(&g, "block1.conv1", 64, 31, 31));
    CHECK(shape_is(&g, "block1.pool", 64, 15, 15));
    CHECK(shape_is(&g, "block2.pool", 256, 7, 7));
    CHECK(shape_is(&g, "block3.pool", 256, 3, 3));
    CHECK(shape_is(&g, "pool", 256, 1, 1));
    const struct param_desc *c1 = &g.params[g.layers[find(&g, "block1.conv1")].param_first];
    CHECK(c1->kind == PARAM_CONV_W && c1->init == PARAM_INIT_DIRAC && c1->c == 24 && c1->trainable);
    CHECK_NEAR(c1->init_bound, 1.0 / sqrt(24.0 * 9), 1e-7);
    const struct param_desc *bw = &g.params[g.layers[find(&g, "block2.bn2")].param_first];
    CHECK(bw->kind == PARAM_BN_W && !bw->trainable && bw[1].kind == PARAM_BN_B && bw[1].trainable);
    /* trainable: convs 24*64*9 + 64*64*9 + 64*256*9 + 3*256*256*9 = 1967616, bn shifts
     * 2*64 + 4*256 = 1152, whitening bias 24, linear 2560: 1971352 (the 288 fixed
     * whitening filters are not counted) */
    CHECK(g.n_weights == 1971352);
    /* conv FLOPs: whiten 2*24*12*961 + 24*961 = 576600; 26569728 + 16588800 + 66355200 +
     * 57802752 + 57802752 + 10616832 for the six convs; linear 5120: 236317784 */
    CHECK(g.layers[w].flops == 576600);
    CHECK(g.flops_forward == 236317784);
    /* the whitening layer reads the image: twice its forward, like the first conv */
    int64_t train = 0;
    for (int i = 1; i < g.count; i++) {
        const struct layer *l = &g.layers[i];
        int mm = l->spec.type == LAYER_CONV || l->spec.type == LAYER_LINEAR ||
                 l->spec.type == LAYER_WHITEN;
        train += (mm && l->inputs[0] != 0 ? 3 : 2) * l->flops;
    }
    CHECK(graph_train_flops(&g) == train);
    graph_free(&g);

    /* Page's whitening: k 3, pad 1, no negate, no bias: 27 channels, no trainable part */
    s.layers[0].k = 3;
    s.layers[0].pad = 1;
    s.layers[0].negate = 0;
    s.layers[0].bias = 0;
    rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK && shape_is(&g, "whiten", 27, 32, 32));
    CHECK(rc == DR_OK && g.layers[1].param_count == 1 && g.layers[1].flops == 2 * 27 * 27 * 1024);
    graph_free(&g);

    /* frozen layers keep their parameters but train none of them */
    s.layers[0].k = 2;
    s.layers[0].pad = 0;
    s.layers[0].negate = 1;
    s.layers[0].bias = 1;
    s.layers[0].frozen = 1;
    rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK && g.n_weights == 1971352 - 24 && g.params[1].kind == PARAM_WHITEN_B &&
          !g.params[1].trainable);
    graph_free(&g);
    s.layers[0].frozen = 0;
    int ci = -1, bi = -1, li = -1;
    for (int i = 0; i < s.count; i++) {
        if (!strcmp(s.layers[i].name, "block1.conv2")) ci = i;
        if (!strcmp(s.layers[i].name, "block1.bn2")) bi = i;
        if (!strcmp(s.layers[i].name, "linear")) li = i;
    }
    s.layers[ci].frozen = s.layers[bi].frozen = s.layers[li].frozen = 1;
    s.layers[li].bias = 1;
    rc = graph_build(&g, &s, 3, 32, 32, err, sizeof err);
    CHECK(rc == DR_OK);
    if (rc == DR_OK) {
        CHECK(g.n_weights == 1971352 - 36864 - 64 - 2560);
        int lin = find(&g, "linear");
        CHECK(g.layers[lin].param_count == 2 && !g.params[g.layers[lin].param_first].trainable &&
              !g.params[g.layers[lin].param_first + 1].trainable);
        const struct param_desc *b2 = &g.params[g.layers[find(&g, "block1.bn2")].param_first];
        CHECK(!b2[0].trainable && !b2[1].trainable);
        CHECK(g.params[g.layers[find(&g, "block1.conv2")].param_first].init == PARAM_INIT_DIRAC);
        graph_free(&g);
    }
    net_spec_free(&s);
}

/* --- errors: each builds a small network and checks the message ----------------- */

/* Builds s, expects DR_ERR_CONFIG and a message that starts with the layer's
 * "nets/test.cfg:LINE: layer 'NAME': " and contains `text`. */
static void expect_error(struct net_spec *s, const char *layer, const char *text, int line)
{
    struct graph g;
    char err[256], prefix[160];
    int rc = graph_build(&g, s, 3, 32, 32, err, sizeof err);
    snprintf(prefix, sizeof prefix, "%s:%d: layer '%s': ", NET_FILE, line, layer);
    CHECK(rc == DR_ERR_CONFIG);
    int ok = strncmp(err, prefix, strlen(prefix)) == 0 && strstr(err, text) != NULL;
    if (!ok) fprintf(stderr, "  message: \"%s\"\n  wanted: \"%s...%s\"\n", err, prefix, text);
    CHECK(ok);
    CHECK(g.layers == NULL && g.count == 0);
    graph_free(&g);
    net_spec_free(s);
}

/* line of the layer at spec index i (see add()) */
#define LINE(i) ((i) + 11)

static void test_errors(void)
{
    struct net_spec s = {0};
    struct layer_spec *l;

    add(&s, "c1", LAYER_CONV)->out = 8;
    inputs(add(&s, "r", LAYER_RELU), 1, "nope");
    expect_error(&s, "r", "unknown input 'nope'", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    inputs(add(&s, "r", LAYER_RELU), 1, "later");
    add(&s, "later", LAYER_RELU);
    expect_error(&s, "r", "input 'later' is defined later (cycles are not allowed)", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    add(&s, "r", LAYER_RELU);
    add(&s, "c1", LAYER_RELU);
    expect_error(&s, "c1", "duplicate name (first defined at nets/test.cfg:11)", LINE(2));

    add(&s, "c1", LAYER_CONV)->out = 8;
    l = add(&s, "c2", LAYER_CONV);
    l->out = 8;
    l->expect_in = 16;
    expect_error(&s, "c2", "expects 16 input channels, got 8", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    add(&s, "bn", LAYER_BN)->expect_in = 4;
    expect_error(&s, "bn", "expects 4 input channels, got 8", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    l = add(&s, "c2", LAYER_CONV);
    l->out = 8;
    l->stride = 2;
    inputs(add(&s, "sum", LAYER_ADD), 2, "c1", "c2");
    expect_error(&s, "sum", "inputs have different shapes: 'c1' is 8x32x32, 'c2' is 8x16x16",
                 LINE(2));

    add(&s, "c1", LAYER_CONV)->out = 8;
    pool(&s, "p", LAYER_MAXPOOL, 2);
    inputs(add(&s, "cat", LAYER_CONCAT), 2, "c1", "p");
    expect_error(&s, "cat", "inputs differ in spatial size: 'c1' is 32x32, 'p' is 16x16",
                 LINE(2));

    pool(&s, "p1", LAYER_MAXPOOL, 8);
    pool(&s, "p2", LAYER_AVGPOOL, 8);
    expect_error(&s, "p2", "window 8x8 is larger than its 4x4 input", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    add(&s, "fc", LAYER_LINEAR)->out = 10;
    expect_error(&s, "fc", "input 'c1' has shape 8x32x32; a linear layer needs a flatten before it",
                 LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    add(&s, "r", LAYER_RELU);
    expect_error(&s, "r", "is the network output (the logits) but has shape 8x32x32", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    add(&s, "g", LAYER_GAVGPOOL);
    add(&s, "f", LAYER_FLATTEN);
    add(&s, "fc", LAYER_LINEAR)->out = 10;
    snprintf(s.output, sizeof s.output, "c1");
    expect_error(&s, "c1", "must be flat", LINE(0));

    add(&s, "c1", LAYER_CONV)->out = 8;
    add(&s, "sum", LAYER_ADD);
    expect_error(&s, "sum", "add needs exactly 2 inputs, got 1", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    inputs(add(&s, "cat", LAYER_CONCAT), 1, "c1");
    expect_error(&s, "cat", "concat needs at least 2 inputs, got 1", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 8;
    inputs(add(&s, "r", LAYER_RELU), 2, "c1", "input");
    expect_error(&s, "r", "relu takes exactly 1 input, got 2", LINE(1));

    /* further checks beyond the required list */
    add(&s, "c1", LAYER_CONV)->out = 8;
    inputs(add(&s, "r", LAYER_RELU), 1, "r");
    expect_error(&s, "r", "input 'r' is the layer itself", LINE(1));

    add(&s, "input", LAYER_RELU);
    expect_error(&s, "input", "reserved for the image", LINE(0));

    l = add(&s, "c1", LAYER_CONV);
    l->out = 8;
    l->k = 5;
    l->pad = 0;
    l = add(&s, "c2", LAYER_CONV);
    l->out = 8;
    l->k = 30;
    l->pad = 0;
    expect_error(&s, "c2", "kernel 30x30 is larger than its padded input 28x28 (pad 0)", LINE(1));

    add(&s, "c1", LAYER_CONV); /* out missing */
    expect_error(&s, "c1", "out must be >= 1, got 0", LINE(0));

    add(&s, "c1", LAYER_CONV)->out = 8;
    l = add(&s, "sc", LAYER_SHORTCUT);
    l->out = 8;
    l->stride = 0;
    expect_error(&s, "sc", "stride must be >= 1, got 0", LINE(1));

    /* the speed-training attributes */
    add(&s, "c1", LAYER_CONV)->out = 32;
    l = add(&s, "c2", LAYER_CONV);
    l->out = 16;
    l->dirac = 1;
    expect_error(&s, "c2", "dirac needs no more input channels than out = 16, got 32", LINE(1));

    add(&s, "c1", LAYER_CONV)->out = 3;
    add(&s, "w", LAYER_WHITEN);
    expect_error(&s, "w", "a whiten layer must take the image ('input') as its input, got 'c1'",
                 LINE(1));

    add(&s, "w", LAYER_WHITEN)->k = 8;
    expect_error(&s, "w", "k must be in 1..7, got 8", LINE(0));

    add(&s, "w", LAYER_WHITEN)->eps = 0.0f;
    expect_error(&s, "w", "eps must be positive", LINE(0));

    add(&s, "c1", LAYER_CONV)->out = 8;
    add(&s, "bn", LAYER_BN)->splits = -2;
    expect_error(&s, "bn", "splits must be >= 1, got -2", LINE(1));

    /* without a file the message still names the layer */
    add(&s, "c1", LAYER_CONV)->out = 8;
    l = add(&s, "r", LAYER_RELU);
    inputs(l, 1, "missing");
    l->file = NULL;
    {
        struct graph g;
        char err[256];
        CHECK(graph_build(&g, &s, 3, 32, 32, err, sizeof err) == DR_ERR_CONFIG);
        CHECK(strcmp(err, "layer 'r': unknown input 'missing'") == 0);
        /* a tiny buffer truncates but stays terminated */
        CHECK(graph_build(&g, &s, 3, 32, 32, err, 8) == DR_ERR_CONFIG);
        CHECK(strcmp(err, "layer '") == 0);
    }
    net_spec_free(&s);

    /* unknown explicit output and an empty network */
    {
        struct graph g;
        char err[256];
        add(&s, "c1", LAYER_CONV)->out = 8;
        snprintf(s.output, sizeof s.output, "logits");
        CHECK(graph_build(&g, &s, 3, 32, 32, err, sizeof err) == DR_ERR_CONFIG);
        CHECK(strstr(err, "output 'logits' is not a layer name") != NULL);
        net_spec_free(&s);
        CHECK(graph_build(&g, &s, 3, 32, 32, err, sizeof err) == DR_ERR_CONFIG);
        CHECK(strstr(err, "no layers") != NULL);
    }
}

/* Elementwise layers, global pools and strides on a non-square image. */
static void test_small_shapes(void)
{
    struct net_spec s = {0};
    struct graph g;
    char err[256];
    struct layer_spec *l = add(&s, "c", LAYER_CONV);
    l->out = 6;
    l->k = 5;
    l->stride = 2;
    l->pad = 0;                             /* (20-5)/2+1 = 8, (15-5)/2+1 = 6 */
    add(&s, "e", LAYER_CELU)->alpha = 0.5f;
    add(&s, "ge", LAYER_GELU);
    l = add(&s, "ap", LAYER_AVGPOOL);
    l->k = 3;
    l->stride = 0;                           /* = k: (8-3)/3+1 = 2, (6-3)/3+1 = 2 */
    inputs(add(&s, "gm", LAYER_GMAXPOOL), 1, "ge");
    inputs(add(&s, "ga", LAYER_GAVGPOOL), 1, "e");
    inputs(add(&s, "cat", LAYER_CONCAT), 3, "gm", "ga", "gm");
    l = add(&s, "fc", LAYER_LINEAR);        /* concat output is 18x1x1: no flatten needed */
    l->out = 4;
    l->bias = 1;
    l->expect_in = 18;
    add(&s, "s", LAYER_SCALE)->scale = 2.0f;
    snprintf(s.output, sizeof s.output, "fc");
    int rc = graph_build(&g, &s, 2, 20, 15, err, sizeof err);
    CHECK(rc == DR_OK);
    if (rc != DR_OK) fprintf(stderr, "%s\n", err);
    if (rc == DR_OK) {
        CHECK(shape_is(&g, "c", 6, 8, 6));
        CHECK(shape_is(&g, "ap", 6, 2, 2));
        CHECK(g.layers[find(&g, "ap")].spec.stride == 3);
        CHECK(shape_is(&g, "gm", 6, 1, 1));
        CHECK(shape_is(&g, "cat", 18, 1, 1));
        CHECK(shape_is(&g, "s", 4, 1, 1));
        CHECK(g.output == find(&g, "fc"));
        CHECK(g.layers[find(&g, "gm")].in_h == 8 && g.layers[find(&g, "gm")].in_w == 6);
        CHECK(g.flops_forward == 2 * 6 * 2 * 25 * 8 * 6 + 2 * 18 * 4 + 4);
        /* celu 288, gelu 288, avgpool 24*9, gmax 288, gavg 288, concat 0, scale 4 */
        CHECK(g.flops_elementwise == 288 + 288 + 24 * 9 + 288 + 288 + 4);
        CHECK(g.n_weights == 6 * 2 * 25 + 18 * 4 + 4);
        graph_free(&g);
    }
    net_spec_free(&s);
}

/* A dropout layer: the default p from the schema (0.5), its input's shape, no parameters,
 * one FLOP per element (forward and backward); p outside [0, 1) (1, negative, NaN) named
 * in the error. */
static void test_dropout(void)
{
    struct net_spec s = {0};
    struct graph g;
    char err[256];
    add(&s, "c", LAYER_CONV)->out = 6;
    struct layer_spec *l = add(&s, "d", LAYER_DROPOUT);
    CHECK(l->p == 0.5f);
    add(&s, "flat", LAYER_FLATTEN);
    int rc = graph_build(&g, &s, 3, 4, 5, err, sizeof err);
    CHECK(rc == DR_OK);
    if (rc != DR_OK) fprintf(stderr, "%s\n", err);
    if (rc == DR_OK) {
        const struct layer *d = &g.layers[find(&g, "d")];
        CHECK(shape_is(&g, "d", 6, 4, 5) && d->param_count == 0 && g.n_params == 1);
        CHECK(d->flops == 120 && g.flops_elementwise == 120);
        CHECK(graph_train_flops(&g) == 2 * g.flops_forward + 2 * 120);   /* conv of the image */
        CHECK(strcmp(layer_type_name(d->spec.type), "dropout") == 0);
        graph_free(&g);
    }
    net_spec_free(&s);
    const float bad[3] = {1.0f, -0.25f, NAN};
    const char *text[3] = {"p (the drop probability) must be in [0, 1), got 1",
                           "must be in [0, 1), got -0.25", "must be in [0, 1), got nan"};
    for (int k = 0; k < 3; k++) {
        add(&s, "c1", LAYER_CONV)->out = 8;
        add(&s, "drop", LAYER_DROPOUT)->p = bad[k];
        expect_error(&s, "drop", text[k], LINE(1));
    }
}

/* A temperature layer: the default init 1, its input's shape, one trainable scalar
 * starting at init (none trained when frozen), one FLOP per output; init not finite or
 * not > 0 refused with the layer named. */
static void test_temperature(void)
{
    struct net_spec s = {0};
    struct graph g;
    char err[256];
    add(&s, "c", LAYER_CONV)->out = 6;
    add(&s, "flat", LAYER_FLATTEN);
    struct layer_spec *l = add(&s, "t", LAYER_TEMPERATURE);
    CHECK(l->init == 1.0f && l->frozen == 0);
    l->init = 0.25f;
    add(&s, "u", LAYER_TEMPERATURE)->frozen = 1;
    int rc = graph_build(&g, &s, 3, 4, 5, err, sizeof err);
    CHECK(rc == DR_OK);
    if (rc != DR_OK) fprintf(stderr, "%s\n", err);
    if (rc == DR_OK) {
        const struct layer *t = &g.layers[find(&g, "t")], *u = &g.layers[find(&g, "u")];
        CHECK(shape_is(&g, "t", 120, 1, 1) && shape_is(&g, "u", 120, 1, 1));
        CHECK(t->param_count == 1 && u->param_count == 1 && g.n_params == 3);
        const struct param_desc *pt = &g.params[t->param_first], *pu = &g.params[u->param_first];
        CHECK(pt->kind == PARAM_TEMPERATURE && pt->n * pt->c * pt->h * pt->w == 1 &&
              pt->init == PARAM_INIT_DEFAULT && pt->init_bound == 0.0f &&
              pt->init_value == 0.25f && pt->trainable == 1 && pt->layer == t - g.layers);
        CHECK(pu->kind == PARAM_TEMPERATURE && pu->init_value == 1.0f && pu->trainable == 0);
        CHECK(g.n_weights == 6 * 3 * 9 + 1);   /* the conv's weight and t, not u */
        CHECK(t->flops == 120 && g.flops_elementwise == 240);
        CHECK(strcmp(layer_type_name(t->spec.type), "temperature") == 0);
        graph_free(&g);
    }
    net_spec_free(&s);
    const float bad[4] = {0.0f, -1.0f, NAN, INFINITY};
    const char *text[4] = {"init must be finite and > 0, got 0", "must be finite and > 0, got -1",
                           "must be finite and > 0, got nan", "must be finite and > 0, got inf"};
    for (int k = 0; k < 4; k++) {
        add(&s, "c1", LAYER_CONV)->out = 8;
        add(&s, "temp", LAYER_TEMPERATURE)->init = bad[k];
        expect_error(&s, "temp", text[k], LINE(1));
    }
}

/* The type table: a row for every type, an activation layer type named as its kind for
 * every activation kind, and each activation type builds elementwise (same shape, one
 * FLOP per element, no parameters). */
static void test_type_table(void)
{
    for (int t = 0; t < LAYER_TYPE_COUNT; t++) {
        const struct layer_info *info = layer_info((enum layer_type)t);
        CHECK(info != NULL);   /* a type added to the enum without its row */
        if (!info) {
            fprintf(stderr, "  layer type %d has no row (LAYER_TYPES, layer_types.h)\n", t);
            continue;
        }
        CHECK(info->min_inputs <= (info->max_inputs ? info->max_inputs : GRAPH_MAX_INPUTS));
        CHECK(info->kind == LAYER_KIND_INPUT ? info->min_inputs == 0 : info->min_inputs >= 1);
    }
    CHECK(layer_info((enum layer_type)LAYER_TYPE_COUNT) == NULL);
    CHECK(layer_info((enum layer_type)-1) == NULL);
    CHECK(strcmp(layer_type_name((enum layer_type)LAYER_TYPE_COUNT), "unknown") == 0);
    for (int k = 0; k < ACT_KIND_COUNT; k++) {
        int types = 0;
        for (int t = 0; t < LAYER_TYPE_COUNT; t++) {
            const struct layer_info *info = layer_info((enum layer_type)t);
            if (!info || info->kind != LAYER_KIND_ACT || (int)info->act != k) continue;
            types++;
            CHECK(strcmp(info->name, act_kind_name((enum act_kind)k)) == 0);
        }
        CHECK(types == 1);
        if (types != 1)
            fprintf(stderr, "  activation '%s' is the kind of %d layer types\n",
                    act_kind_name((enum act_kind)k), types);
    }
    for (int t = 0; t < LAYER_TYPE_COUNT; t++) {
        const struct layer_info *info = layer_info((enum layer_type)t);
        if (!info || info->kind != LAYER_KIND_ACT) continue;
        struct net_spec s = {0};
        struct graph g;
        char err[256];
        add(&s, "act", (enum layer_type)t);
        add(&s, "flat", LAYER_FLATTEN);
        int rc = graph_build(&g, &s, 3, 4, 5, err, sizeof err);
        CHECK(rc == DR_OK);
        if (rc != DR_OK) fprintf(stderr, "  %s: %s\n", info->name, err);
        if (rc == DR_OK) {
            CHECK(shape_is(&g, "act", 3, 4, 5));
            CHECK(g.layers[find(&g, "act")].flops == 60 && g.flops_elementwise == 60);
            CHECK(g.n_params == 0 && g.flops_forward == 0);
            CHECK(graph_train_flops(&g) == 120);
            graph_free(&g);
        }
        net_spec_free(&s);
    }
}

int main(void)
{
    test_type_names();
    test_type_table();
    test_resnet9();
    test_dawn_net();
    test_airbench();
    test_errors();
    test_small_shapes();
    test_dropout();
    test_temperature();
    return check_finish("test_graph");
}

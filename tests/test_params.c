/* The resolved config as params: engine/config/config_params.c's flattening (keys, values,
 * types, numbers, layers keyed by name, lists as one value) and runner/report/params.c's
 * differing keys and labels. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "engine/core/experiment.h"
#include "runner/report/report_internal.h"

static const char *value_of(const struct param_list *p, const char *key)
{
    const struct param *v = param_list_find(p, key);
    return v ? v->value : "(missing)";
}

static void check_flatten(void)
{
    const char *text =
        "name = \"t\";\n"
        "train : { lr = 0.2; epochs = 24; nesterov = true; mode = \"sum\";\n"
        "          knots = [0, 8, 30]; values = (0.0, 0.4, 0.0); one = 1.0; };\n"
        "model : { layers = ( { name = \"prep\"; type = \"conv\"; out = 64; },\n"
        "                     { name = \"pool\"; type = \"maxpool\"; k = 2; } ); };\n"
        "odd = ( { a = 1; }, { a = 2; } );\n";
    struct param_list p;
    CHECK(experiment_params_from_text(&p, text) == 0);
    CHECK(!strcmp(value_of(&p, "name"), "t"));
    CHECK(!strcmp(value_of(&p, "train.lr"), "0.2"));
    const struct param *lr = param_list_find(&p, "train.lr");
    CHECK(lr && lr->type == PARAM_FLOAT && lr->num == 0.2);
    const struct param *ep = param_list_find(&p, "train.epochs");
    CHECK(ep && ep->type == PARAM_INT && ep->num == 24.0);
    const struct param *nb = param_list_find(&p, "train.nesterov");
    CHECK(nb && nb->type == PARAM_BOOL && nb->num == 1.0 && !strcmp(nb->value, "true"));
    const struct param *mode = param_list_find(&p, "train.mode");
    CHECK(mode && mode->type == PARAM_STRING && isnan(mode->num));
    CHECK(!strcmp(value_of(&p, "train.mode"), "sum"));
    CHECK(!strcmp(value_of(&p, "train.knots"), "[0, 8, 30]"));
    CHECK(!strcmp(value_of(&p, "train.values"), "(0.0, 0.4, 0.0)"));
    CHECK(!strcmp(value_of(&p, "train.one"), "1.0"));
    CHECK(!strcmp(value_of(&p, "model.layers.prep.out"), "64"));
    CHECK(!strcmp(value_of(&p, "model.layers.pool.type"), "maxpool"));
    CHECK(!strcmp(value_of(&p, "odd[1].a"), "2"));
    CHECK(p.n == 16);
    CHECK(!strcmp(p.items[0].key, "name") && !strcmp(p.items[p.n - 1].key, "odd[1].a"));
    param_list_free(&p);
    CHECK(experiment_params_from_text(&p, "train = { lr = ; };") != 0);
    CHECK(p.n == 0 && p.items == NULL);
}

static void check_differing(void)
{
    struct param_list l[3];
    CHECK(experiment_params_from_text(&l[0], "name = \"a\"; t : { lr = 0.2; c = 8; };") == 0);
    CHECK(experiment_params_from_text(&l[1], "name = \"b\"; t : { lr = 0.4; c = 8; };") == 0);
    CHECK(experiment_params_from_text(&l[2],
                                      "name = \"c\"; t : { lr = 0.2; c = 8; x = 1; };") == 0);
    char **keys = NULL;
    int n = 0;
    CHECK(report_params_differing(&keys, &n, l, 3) == 0);
    CHECK(n == 2 && !strcmp(keys[0], "t.lr") && !strcmp(keys[1], "t.x"));
    char buf[64];
    size_t len = report_params_label(buf, sizeof buf, &l[1], keys, n);
    CHECK(!strcmp(buf, "t.lr=0.4 t.x=(none)") && len == strlen(buf));
    len = report_params_label(buf, 6, &l[1], keys, n);
    CHECK(len == strlen("t.lr=0.4 t.x=(none)") && strlen(buf) == 5);
    report_keys_free(keys, n);
    CHECK(report_params_differing(&keys, &n, l, 1) == 0);
    CHECK(n == 0);
    report_keys_free(keys, n);
    for (int i = 0; i < 3; i++) param_list_free(&l[i]);
}

int main(void)
{
    check_flatten();
    check_differing();
    return check_finish("params");
}

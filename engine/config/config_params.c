/* The resolved config as parameters: every leaf setting of an experiment's resolved
 * config text (experiment.resolved, stored as experiments.config_text) as one
 * (key, value, type) row, in document order. This is what the results store's params
 * table holds and what report, export, plot and diff compare. Part of the public
 * interface engine/core/experiment.h (it parses text, not a loaded tree). */
#include <limits.h>
#include <libconfig.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/core/experiment.h"
#include "base/grow.h"
#include "base/status.h"

const char *param_type_name(enum param_type t)
{
    switch (t) {
    case PARAM_INT: return "int";
    case PARAM_FLOAT: return "float";
    case PARAM_BOOL: return "bool";
    case PARAM_STRING: return "string";
    case PARAM_LIST: return "list";
    }
    return "?";
}

/* The shortest %g spelling of v that reads back as the same double ("0.2", not
 * "0.20000000000000001"); integral values keep one decimal ("1.0") so that the text
 * still says float. */
static void format_float(char *buf, size_t n, double v)
{
    if (!isfinite(v)) {
        snprintf(buf, n, "%s", isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        return;
    }
    for (int prec = 6; prec <= 17; prec++) {
        snprintf(buf, n, "%.*g", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".eEn")) {
        size_t len = strlen(buf);
        if (len + 2 < n) memcpy(buf + len, ".0", 3);
    }
}

/* A growable string (len chars and its NUL in cap bytes). */
struct sbuf {
    char *s;
    int len, cap;
    int nomem;
};

static void sbuf_add(struct sbuf *b, const char *text)
{
    size_t n = strlen(text);
    if (b->nomem) return;
    if (n >= (size_t)INT_MAX - (size_t)b->len ||
        grow_reserve(&b->s, &b->cap, b->len + (int)n + 1, 64, 1) != DR_OK) {
        b->nomem = 1;
        return;
    }
    memcpy(b->s + b->len, text, n + 1);
    b->len += (int)n;
}

/* Appends the libconfig text of scalar s; strings quoted (inside a list) or bare. */
static void scalar_text(struct sbuf *b, const config_setting_t *s, int quote)
{
    char num[64];
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
        snprintf(num, sizeof num, "%d", config_setting_get_int(s));
        sbuf_add(b, num);
        break;
    case CONFIG_TYPE_INT64:
        snprintf(num, sizeof num, "%lld", config_setting_get_int64(s));
        sbuf_add(b, num);
        break;
    case CONFIG_TYPE_FLOAT:
        format_float(num, sizeof num, config_setting_get_float(s));
        sbuf_add(b, num);
        break;
    case CONFIG_TYPE_BOOL:
        sbuf_add(b, config_setting_get_bool(s) ? "true" : "false");
        break;
    case CONFIG_TYPE_STRING: {
        const char *v = config_setting_get_string(s);
        if (!quote) {
            sbuf_add(b, v ? v : "");
            break;
        }
        sbuf_add(b, "\"");
        for (const char *p = v ? v : ""; *p; p++) {
            char c[3] = {*p, 0, 0};
            if (*p == '"' || *p == '\\') {
                c[0] = '\\';
                c[1] = *p;
            }
            sbuf_add(b, c);
        }
        sbuf_add(b, "\"");
        break;
    }
    default: break;
    }
}

/* Appends the text of an aggregate (array "[a, b]", list "(a, b)", group "{ k = v; }"). */
static void aggregate_text(struct sbuf *b, const config_setting_t *s)
{
    int type = config_setting_type(s), n = config_setting_length(s);
    sbuf_add(b, type == CONFIG_TYPE_ARRAY ? "[" : type == CONFIG_TYPE_LIST ? "(" : "{ ");
    for (int i = 0; i < n; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (type == CONFIG_TYPE_GROUP) {
            sbuf_add(b, config_setting_name(e));
            sbuf_add(b, " = ");
        } else if (i > 0) {
            sbuf_add(b, ", ");
        }
        if (config_setting_is_aggregate(e))
            aggregate_text(b, e);
        else
            scalar_text(b, e, 1);
        if (type == CONFIG_TYPE_GROUP) sbuf_add(b, "; ");
    }
    sbuf_add(b, type == CONFIG_TYPE_ARRAY ? "]" : type == CONFIG_TYPE_LIST ? ")" : "}");
}

static int push(struct param_list *out, const char *key, struct sbuf *value,
                enum param_type type, double num)
{
    if (value->nomem) return DR_ERR_NOMEM;
    if (grow_reserve(&out->items, &out->cap, out->n + 1, 64, sizeof *out->items) != DR_OK)
        return DR_ERR_NOMEM;
    struct param *p = &out->items[out->n];
    p->key = strdup(key);
    p->value = strdup(value->s ? value->s : "");
    if (!p->key || !p->value) {
        free(p->key);
        free(p->value);
        return DR_ERR_NOMEM;
    }
    p->type = type;
    p->num = num;
    out->n++;
    return DR_OK;
}

/* 1 when every element of list s is a group (a list of layers, of knots' groups ...). */
static int list_of_groups(const config_setting_t *s)
{
    int n = config_setting_length(s);
    for (int i = 0; i < n; i++)
        if (config_setting_type(config_setting_get_elem(s, (unsigned)i)) != CONFIG_TYPE_GROUP)
            return 0;
    return n > 0;
}

static int walk(struct param_list *out, const config_setting_t *s, const char *prefix);

/* The key of element i of a list of groups: its `name` member when it has a string one
 * (layers: "model.layers.prep"), else its index ("...[3]"). */
static void elem_key(char *key, size_t n, const char *prefix, const config_setting_t *e, int i)
{
    const char *name = NULL;
    if (config_setting_lookup_string(e, "name", &name) && name[0])
        snprintf(key, n, "%s.%s", prefix, name);
    else
        snprintf(key, n, "%s[%d]", prefix, i);
}

static int leaf(struct param_list *out, const config_setting_t *s, const char *key)
{
    struct sbuf b = {0};
    enum param_type type = PARAM_LIST;
    double num = NAN;
    int rc;
    switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT:
    case CONFIG_TYPE_INT64:
        type = PARAM_INT;
        num = (double)config_setting_get_int64(s);
        if (config_setting_type(s) == CONFIG_TYPE_INT) num = config_setting_get_int(s);
        break;
    case CONFIG_TYPE_FLOAT:
        type = PARAM_FLOAT;
        num = config_setting_get_float(s);
        break;
    case CONFIG_TYPE_BOOL:
        type = PARAM_BOOL;
        num = config_setting_get_bool(s);
        break;
    case CONFIG_TYPE_STRING: type = PARAM_STRING; break;
    default: break;
    }
    if (type == PARAM_LIST)
        aggregate_text(&b, s);
    else
        scalar_text(&b, s, 0);
    rc = push(out, key, &b, type, num);
    free(b.s);
    return rc;
}

static int walk(struct param_list *out, const config_setting_t *s, const char *prefix)
{
    int n = config_setting_length(s), type = config_setting_type(s), rc = DR_OK;
    for (int i = 0; i < n && rc == DR_OK; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        char key[1024];
        if (type == CONFIG_TYPE_GROUP)
            snprintf(key, sizeof key, "%s%s%s", prefix, prefix[0] ? "." : "",
                     config_setting_name(e));
        else
            elem_key(key, sizeof key, prefix, e, i);
        if (config_setting_type(e) == CONFIG_TYPE_GROUP)
            rc = walk(out, e, key);
        else if (config_setting_type(e) == CONFIG_TYPE_LIST && list_of_groups(e))
            rc = walk(out, e, key);
        else
            rc = leaf(out, e, key);
    }
    return rc;
}

int experiment_params_from_text(struct param_list *out, const char *config_text)
{
    config_t cfg;
    int rc = DR_OK;
    memset(out, 0, sizeof *out);
    config_init(&cfg);
    if (!config_read_string(&cfg, config_text ? config_text : ""))
        FAIL(DR_ERR_CONFIG, "a stored resolved config does not parse: line %d: %s",
             config_error_line(&cfg), config_error_text(&cfg));
    rc = walk(out, config_root_setting(&cfg), "");
    if (rc == DR_ERR_NOMEM) FAIL(DR_ERR_NOMEM, "out of memory allocating the params");
cleanup:
    config_destroy(&cfg);
    if (rc != DR_OK) param_list_free(out);
    return rc;
}

void param_list_free(struct param_list *p)
{
    for (int i = 0; p && i < p->n; i++) {
        free(p->items[i].key);
        free(p->items[i].value);
    }
    if (p) {
        free(p->items);
        memset(p, 0, sizeof *p);
    }
}

const struct param *param_list_find(const struct param_list *p, const char *key)
{
    for (int i = 0; p && i < p->n; i++)
        if (!strcmp(p->items[i].key, key)) return &p->items[i];
    return NULL;
}

/* The params of the selected experiments (the params table, or their resolved configs
 * flattened by engine/core/experiment.h) and the keys that tell them apart: what report,
 * export, plot and diff show, and what legends are built from; --where matching; and
 * the params written at registration and back-filled into older databases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "engine/core/experiment.h"
#include "runner/cli/output.h"
#include "report_internal.h"

/* The enum param_type of a params.type name; PARAM_STRING for an unknown one. */
static enum param_type type_of(const char *name)
{
    static const enum param_type all[] = {PARAM_INT, PARAM_FLOAT, PARAM_BOOL, PARAM_STRING,
                                          PARAM_LIST};
    for (size_t i = 0; name && i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(name, param_type_name(all[i]))) return all[i];
    return PARAM_STRING;
}

/* out = the stored rows rows[0..n) as a param_list (copies). */
static int list_from_rows(struct param_list *out, const struct results_param *rows, int n)
{
    int rc = DR_OK;
    memset(out, 0, sizeof *out);
    out->items = calloc((size_t)n + 1, sizeof *out->items);
    CHECK_ALLOC(out->items, "the params");
    out->cap = n + 1;
    for (int i = 0; i < n; i++) {
        struct param *p = &out->items[i];
        p->key = strdup(rows[i].key);
        p->value = strdup(rows[i].value);
        out->n = i + 1;
        CHECK_ALLOC(p->key && p->value ? p : NULL, "a param");
        p->type = type_of(rows[i].type);
        p->num = rows[i].num;
    }
cleanup:
    if (rc != DR_OK) param_list_free(out);
    return rc;
}

/* out = experiment id's params: its params rows, else its flattened config_text; in the
 * resolved config's order either way, so a database reads the same before and after its
 * back-fill. */
static int load_one(struct param_list *out, struct results *db, int64_t id)
{
    int rc = DR_OK, found = 0, n_rows = 0;
    struct results_param *rows = NULL;
    struct results_experiment x = {0};
    memset(out, 0, sizeof *out);
    TRY(results_params_get(db, &rows, &n_rows, id));
    if (n_rows > 0) {
        TRY(list_from_rows(out, rows, n_rows));
        goto cleanup;
    }
    TRY(results_experiment_get(db, &x, &found, id));
    if (!found) FAIL(DR_ERR_DB, "experiment %lld is not in the database", (long long)id);
    TRY(experiment_params_from_text(out, x.config_text));
cleanup:
    results_params_free(rows, n_rows);
    results_experiment_clear(&x);
    return rc;
}

int report_params_load(struct param_list **out, struct results *db, const int64_t *ids, int n)
{
    int rc = DR_OK;
    *out = calloc((size_t)(n > 0 ? n : 1), sizeof **out);
    CHECK_ALLOC(*out, "the params");
    for (int i = 0; i < n; i++) TRY(load_one(&(*out)[i], db, ids[i]));
cleanup:
    if (rc != DR_OK) {
        report_params_free(*out, n);
        *out = NULL;
    }
    return rc;
}

int report_params_load_shown(struct param_list **out, struct results *db, const int64_t *ids,
                             int n)
{
    int rc = DR_OK;
    *out = calloc((size_t)(n > 0 ? n : 1), sizeof **out);
    CHECK_ALLOC(*out, "the params");
    for (int i = 0; i < n; i++) {
        rc = load_one(&(*out)[i], db, ids[i]);
        if (rc == DR_ERR_CONFIG) {
            dr_eprintf("dawnrun: note: experiment %lld: its stored config does not parse; "
                       "its params are left out\n", (long long)ids[i]);
            rc = DR_OK;
        }
        TRY(rc);
    }
cleanup:
    if (rc != DR_OK) {
        report_params_free(*out, n);
        *out = NULL;
    }
    return rc;
}

void report_params_free(struct param_list *p, int n)
{
    for (int i = 0; p && i < n; i++) param_list_free(&p[i]);
    free(p);
}

/* 1 when key is not the same value in every list (absent counts as a value). */
static int differs(const struct param_list *lists, int n, const char *key)
{
    const struct param *first = param_list_find(&lists[0], key);
    for (int i = 1; i < n; i++) {
        const struct param *p = param_list_find(&lists[i], key);
        if (!first != !p) return 1;
        if (p && (p->type != first->type || strcmp(p->value, first->value))) return 1;
    }
    return 0;
}

static int seen(char *const *keys, int n, const char *key)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(keys[i], key)) return 1;
    return 0;
}

int report_params_differing(char ***keys, int *n_keys, const struct param_list *lists, int n)
{
    int rc = DR_OK, cap = 0;
    *keys = NULL;
    *n_keys = 0;
    for (int i = 0; i < n; i++) cap += lists[i].n;
    *keys = calloc((size_t)cap + 1, sizeof **keys);
    CHECK_ALLOC(*keys, "the differing keys");
    for (int i = 0; i < n && n > 1; i++) {
        for (int k = 0; k < lists[i].n; k++) {
            const char *key = lists[i].items[k].key;
            if (!strcmp(key, "name") || seen(*keys, *n_keys, key)) continue;
            if (!differs(lists, n, key)) continue;
            (*keys)[*n_keys] = strdup(key);
            CHECK_ALLOC((*keys)[*n_keys], "a differing key");
            (*n_keys)++;
        }
    }
cleanup:
    if (rc != DR_OK) {
        report_keys_free(*keys, *n_keys);
        *keys = NULL;
        *n_keys = 0;
    }
    return rc;
}

void report_keys_free(char **keys, int n)
{
    for (int i = 0; keys && i < n; i++) free(keys[i]);
    free(keys);
}

size_t report_params_label(char *buf, size_t cap, const struct param_list *p,
                           char *const *keys, int n_keys)
{
    size_t len = 0;
    if (cap) buf[0] = '\0';
    for (int k = 0; k < n_keys; k++) {
        const struct param *v = param_list_find(p, keys[k]);
        int w = snprintf(cap > len ? buf + len : NULL, cap > len ? cap - len : 0, "%s%s=%s",
                         k ? " " : "", keys[k], v ? v->value : "(none)");
        if (w > 0) len += (size_t)w;
    }
    return len;
}

/* ---- --where ----------------------------------------------------------------------- */

/* v as a number when the whole text is one (finite), else 0. */
static int as_number(double *v, const char *text)
{
    char *end = NULL;
    if (!text || !*text) return 0;
    if (!strcmp(text, "true") || !strcmp(text, "false")) {
        *v = text[0] == 't' ? 1.0 : 0.0;
        return 1;
    }
    *v = strtod(text, &end);
    return end != text && *end == '\0' && isfinite(*v);
}

int report_where_matches(const struct param_list *p, const char *where)
{
    const char *eq = strchr(where, '=');
    double want, have;
    if (!eq) return 0;
    size_t klen = (size_t)(eq - where);
    const char *value = eq + 1;
    for (int i = 0; p && i < p->n; i++) {
        const struct param *q = &p->items[i];
        if (strlen(q->key) != klen || strncmp(q->key, where, klen)) continue;
        if (q->type != PARAM_LIST && q->type != PARAM_STRING && as_number(&want, value))
            return q->num == want;
        if (q->type == PARAM_STRING && as_number(&want, value) && as_number(&have, q->value))
            return have == want;
        return !strcmp(q->value, value);
    }
    return 0;
}

/* 1 when some list has the key of `where` ("key=value"). */
static int any_has_key(const struct param_list *lists, int n, const char *where)
{
    const char *eq = strchr(where, '=');
    size_t klen = eq ? (size_t)(eq - where) : strlen(where);
    for (int i = 0; i < n; i++)
        for (int k = 0; k < lists[i].n; k++)
            if (strlen(lists[i].items[k].key) == klen &&
                !strncmp(lists[i].items[k].key, where, klen))
                return 1;
    return 0;
}

int report_filter_where(struct results *db, int64_t *ids, int *n, const char *const *wheres,
                        int n_wheres, const char *name)
{
    int rc = DR_OK, kept = 0, before = *n;
    struct param_list *lists = NULL;
    if (n_wheres <= 0) return DR_OK;
    TRY(report_params_load_shown(&lists, db, ids, before));
    for (int i = 0; i < before; i++) {
        int ok = 1;
        for (int w = 0; w < n_wheres && ok; w++) ok = report_where_matches(&lists[i], wheres[w]);
        if (ok) ids[kept++] = ids[i];
    }
    *n = kept;
    if (kept == 0) {
        dr_eprintf("dawnrun %s: no experiment", name);
        for (int w = 0; w < n_wheres; w++)
            dr_eprintf("%s --where %s", w ? " and" : "", wheres[w]);
        dr_eprintf(" among the %d selected in %s\n", before, results_path(db));
        for (int w = 0; w < n_wheres; w++)
            if (!any_has_key(lists, before, wheres[w]))
                dr_eprintf("dawnrun %s: no selected experiment has a param '%.*s' (`dawnrun "
                           "diff A B --all` lists the keys)\n", name,
                           (int)(strchr(wheres[w], '=') ? strchr(wheres[w], '=') - wheres[w]
                                                       : (long)strlen(wheres[w])),
                           wheres[w]);
        rc = DR_ERR_USAGE;
    }
cleanup:
    report_params_free(lists, before);
    return rc;
}

/* ---- writing params: registration and back-fill ------------------------------------- */

int report_params_rows(struct results_param **rows, const struct param_list *p)
{
    int rc = DR_OK;
    *rows = calloc((size_t)p->n + 1, sizeof **rows);
    CHECK_ALLOC(*rows, "the params rows");
    for (int i = 0; i < p->n; i++) {
        (*rows)[i].key = p->items[i].key;
        (*rows)[i].value = p->items[i].value;
        (*rows)[i].type = param_type_name(p->items[i].type);
        (*rows)[i].num = p->items[i].num;
    }
cleanup:
    return rc;
}

int report_params_backfill(struct results *db, int *filled)
{
    int rc = DR_OK, n = 0, found = 0, written = 0;
    int64_t *ids = NULL;
    struct results_experiment x = {0};
    struct param_list p = {0};
    struct results_param *rows = NULL;
    if (filled) *filled = 0;
    TRY(results_experiments_without_params(db, &ids, &n));
    for (int i = 0; i < n; i++) {
        TRY(results_experiment_get(db, &x, &found, ids[i]));
        if (found && experiment_params_from_text(&p, x.config_text) == DR_OK) {
            TRY(report_params_rows(&rows, &p));
            TRY(results_params_fill(db, &written, ids[i], rows, p.n));
            if (filled) *filled += written;
        } else if (found) {
            dr_eprintf("dawnrun: note: experiment %lld (%s) in %s: its stored config does "
                       "not parse; it gets no params\n", (long long)ids[i], x.name,
                       results_path(db));
        }
        free(rows);
        rows = NULL;
        param_list_free(&p);
        results_experiment_clear(&x);
    }
cleanup:
    free(rows);
    param_list_free(&p);
    results_experiment_clear(&x);
    free(ids);
    return rc;
}

/* ---- the params of a report --------------------------------------------------------- */

int report_params_attach(struct report *r, struct results *db, const int64_t *ids, int n)
{
    int rc = DR_OK;
    if (n < 2) return DR_OK;   /* one experiment: nothing differs */
    TRY(report_params_load_shown(&r->params, db, ids, n));
    TRY(report_params_differing(&r->keys, &r->n_keys, r->params, n));
cleanup:
    return rc;
}

void report_params_detach(struct report *r)
{
    report_params_free(r->params, r->n);
    report_keys_free(r->keys, r->n_keys);
    r->params = NULL;
    r->keys = NULL;
    r->n_keys = 0;
}

/* 1 when text is a number as JSON spells one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int json_number_text(const char *t)
{
    const char *p = t;
    if (*p == '-') p++;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') while (*p >= '0' && *p <= '9') p++;
    else return 0;
    if (*p == '.') {
        p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-') p++;
        if (!(*p >= '0' && *p <= '9')) return 0;
        while (*p >= '0' && *p <= '9') p++;
    }
    return *p == '\0';
}

void report_json_param(FILE *f, const struct param *p)
{
    if (!p) fputs("null", f);
    else if ((p->type == PARAM_INT || p->type == PARAM_FLOAT) && json_number_text(p->value))
        fputs(p->value, f);
    else if (p->type == PARAM_BOOL) fputs(p->num != 0.0 ? "true" : "false", f);
    else output_json_string(f, p->value);
}

void report_json_params(FILE *f, const struct param_list *p, const char *indent)
{
    fputc('{', f);
    for (int i = 0; p && i < p->n; i++) {
        fprintf(f, "%s\n%s  ", i ? "," : "", indent);
        output_json_string(f, p->items[i].key);
        fputs(": ", f);
        report_json_param(f, &p->items[i]);
    }
    if (p && p->n) fprintf(f, "\n%s", indent);
    fputc('}', f);
}

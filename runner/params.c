/* The params of the selected experiments (their resolved configs flattened by
 * engine/experiment.h) and the keys that tell them apart: what report, export, plot and
 * diff show, and what legends are built from. */
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "engine/experiment.h"
#include "report_internal.h"

int report_params_load(struct param_list **out, struct results *db, const int64_t *ids, int n)
{
    int rc = DR_OK;
    struct results_experiment x = {0};
    *out = calloc((size_t)(n > 0 ? n : 1), sizeof **out);
    CHECK_ALLOC(*out, "the params");
    for (int i = 0; i < n; i++) {
        int found = 0;
        TRY(results_experiment_get(db, &x, &found, ids[i]));
        if (!found) FAIL(DR_ERR_DB, "experiment %lld is not in the database", (long long)ids[i]);
        TRY(experiment_params_from_text(&(*out)[i], x.config_text));
        results_experiment_clear(&x);
    }
cleanup:
    results_experiment_clear(&x);
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

/* Sweep dimensions from --sweep and from a config's `sweep` array, and their grid of
 * combinations (see sweep.h). */
#include "sweep.h"

#include <ctype.h>
#include <libconfig.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/status.h"
#include "engine/core/experiment.h"

static void dim_free(struct sweep_dim *d)
{
    for (int i = 0; i < d->n_values; i++) free(d->values[i]);
    free(d->values);
    free(d->key);
    memset(d, 0, sizeof(*d));
}

void sweep_free(struct sweep *s)
{
    for (int i = 0; i < s->n_dims; i++) dim_free(&s->dims[i]);
    s->n_dims = 0;
}

/* A copy of [b, e) without leading and trailing blanks, or NULL on out of memory. */
static char *trimmed(const char *b, const char *e)
{
    while (b < e && isspace((unsigned char)*b)) b++;
    while (e > b && isspace((unsigned char)e[-1])) e--;
    char *s = malloc((size_t)(e - b) + 1);
    if (!s) return NULL;
    memcpy(s, b, (size_t)(e - b));
    s[e - b] = '\0';
    return s;
}

static int valid_key(const char *k)
{
    if (!*k || *k == '.') return 0;
    for (const char *p = k; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-*", *p)) return 0;
    return k[strlen(k) - 1] != '.';
}

/* Splits the values at top-level commas into d. Returns DR_OK, DR_ERR_NOMEM, or -1 for
 * unbalanced brackets or quotes, -2 for an empty value. */
static int split_values(struct sweep_dim *d, const char *v)
{
    int depth = 0, quoted = 0;
    const char *start = v;
    for (const char *p = v;; p++) {
        char c = *p;
        if (quoted) {
            if (c == '\\' && p[1]) p++;
            else if (c == '"') quoted = 0;
            else if (!c) return -1;
            continue;
        }
        if (c == '"') quoted = 1;
        else if (c == '[' || c == '(' || c == '{') depth++;
        else if (c == ']' || c == ')' || c == '}') {
            if (--depth < 0) return -1;
        } else if ((c == ',' && depth == 0) || !c) {
            if (!c && depth != 0) return -1;
            char *one = trimmed(start, p);
            if (!one) return DR_ERR_NOMEM;
            if (!one[0]) {
                free(one);
                return -2;
            }
            if (grow_reserve(&d->values, &d->cap_values, d->n_values + 1, 4,
                             sizeof *d->values) != DR_OK) {
                free(one);
                return DR_ERR_NOMEM;
            }
            d->values[d->n_values++] = one;
            start = p + 1;
            if (!c) return DR_OK;
        }
    }
}

int sweep_add(struct sweep *s, const char *spec, const char *where, int bad)
{
    struct sweep_dim d = {0};
    const char *eq = strchr(spec, '=');
    if (!eq) {
        dr_eprintf("dawnrun: %s \"%s\": expected key.path=value1,value2,...\n", where, spec);
        return bad;
    }
    d.key = trimmed(spec, eq);
    if (!d.key) return DR_ERR_NOMEM;
    if (!valid_key(d.key)) {
        dr_eprintf("dawnrun: %s \"%s\": '%s' is not a config key path\n", where, spec, d.key);
        dim_free(&d);
        return bad;
    }
    if (!strcmp(d.key, "sweep") || !strncmp(d.key, "sweep.", 6)) {
        dr_eprintf("dawnrun: %s \"%s\": a sweep cannot vary the sweep itself\n", where, spec);
        dim_free(&d);
        return bad;
    }
    /* one dimension per key, whichever spelling names it (model_vars.x = model.vars.x) */
    char canon[512];
    int rc = config_key_canonical(canon, sizeof(canon), d.key);
    if (rc == DR_OK && strcmp(canon, d.key) != 0) {
        free(d.key);
        d.key = strdup(canon);
        if (!d.key) rc = DR_ERR_NOMEM;
    }
    if (rc != DR_OK) {
        if (rc != DR_ERR_NOMEM) dr_eprintf("dawnrun: %s \"%s\": internal error\n", where, spec);
        dim_free(&d);
        return rc == DR_ERR_NOMEM ? rc : bad;
    }
    rc = split_values(&d, eq + 1);
    if (rc != DR_OK) {
        if (rc == -1)
            dr_eprintf("dawnrun: %s \"%s\": unbalanced brackets or quotes\n", where, spec);
        else if (rc == -2)
            dr_eprintf("dawnrun: %s \"%s\": empty value\n", where, spec);
        dim_free(&d);
        return rc == DR_ERR_NOMEM ? rc : bad;
    }
    int slot = s->n_dims;
    for (int i = 0; i < s->n_dims; i++)
        if (!strcmp(s->dims[i].key, d.key)) slot = i;
    if (slot == SWEEP_MAX_DIMS) {
        dr_eprintf("dawnrun: %s \"%s\": more than %d sweep dimensions\n", where, spec,
                   SWEEP_MAX_DIMS);
        dim_free(&d);
        return bad;
    }
    long total = d.n_values;
    for (int i = 0; i < s->n_dims; i++)
        if (i != slot) total *= s->dims[i].n_values;
    if (total > SWEEP_MAX_COMBINATIONS) {
        dr_eprintf("dawnrun: %s \"%s\": the sweep would have %ld combinations (at most %d)\n",
                   where, spec, total, SWEEP_MAX_COMBINATIONS);
        dim_free(&d);
        return bad;
    }
    if (slot < s->n_dims) dim_free(&s->dims[slot]);
    else s->n_dims++;
    s->dims[slot] = d;
    return DR_OK;
}

int sweep_add_from_resolved(struct sweep *s, const char *resolved, const char *config_path)
{
    int rc = DR_OK;
    config_t cfg;
    config_init(&cfg);
    if (!config_read_string(&cfg, resolved)) {
        dr_eprintf("dawnrun: internal error: the resolved text of %s does not parse: %s\n",
                   config_path, config_error_text(&cfg));
        rc = DR_ERR_INTERNAL;
        goto cleanup;
    }
    const config_setting_t *arr = config_lookup(&cfg, "sweep");
    for (int i = 0; arr && i < config_setting_length(arr); i++) {
        const char *spec = config_setting_get_string_elem(arr, i);
        char where[4200];
        snprintf(where, sizeof(where), "%s: sweep[%d]", config_path, i);
        if (!spec) {
            dr_eprintf("dawnrun: %s: must be a string\n", where);
            rc = DR_ERR_CONFIG;
            goto cleanup;
        }
        TRY(sweep_add(s, spec, where, DR_ERR_CONFIG));
    }
cleanup:
    config_destroy(&cfg);
    return rc;
}

int sweep_count(const struct sweep *s)
{
    int n = 1;
    for (int i = 0; i < s->n_dims; i++) n *= s->dims[i].n_values;
    return n;
}

int sweep_combination(const struct sweep *s, int i, char ***sets_out, char **label_out)
{
    int rc = DR_OK;
    char **sets = calloc((size_t)s->n_dims + 1, sizeof(*sets));
    size_t cap = 1;
    for (int d = 0; d < s->n_dims; d++) {
        const struct sweep_dim *dim = &s->dims[d];
        size_t longest = 0;
        for (int v = 0; v < dim->n_values; v++)
            if (strlen(dim->values[v]) > longest) longest = strlen(dim->values[v]);
        cap += strlen(dim->key) + longest + 2;
    }
    char *label = malloc(cap);
    CHECK_ALLOC(sets, "sweep overrides");
    CHECK_ALLOC(label, "a sweep label");
    label[0] = '\0';
    int stride = sweep_count(s);
    for (int d = 0; d < s->n_dims; d++) {
        const struct sweep_dim *dim = &s->dims[d];
        stride /= dim->n_values;
        const char *v = dim->values[(i / stride) % dim->n_values];
        size_t n = strlen(dim->key) + strlen(v) + 2;
        sets[d] = malloc(n);
        CHECK_ALLOC(sets[d], "a sweep override");
        snprintf(sets[d], n, "%s=%s", dim->key, v);
        if (d) strcat(label, ",");
        strcat(label, sets[d]);
    }
    *sets_out = sets;
    *label_out = label;
    sets = NULL;
    label = NULL;
cleanup:
    if (sets) sweep_combination_free(s, sets, NULL);
    free(label);
    return rc;
}

void sweep_combination_free(const struct sweep *s, char **sets, char *label)
{
    for (int d = 0; sets && d < s->n_dims; d++) free(sets[d]);
    free(sets);
    free(label);
}

void sweep_strip_resolved(char *resolved)
{
    /* the resolved text is config_write output: a top-level array is one line that
     * starts at column 0; nested settings are indented */
    char *line = resolved;
    while (line && *line) {
        char *next = strchr(line, '\n');
        next = next ? next + 1 : line + strlen(line);
        if (!strncmp(line, "sweep = ", 8) || !strncmp(line, "sweep : ", 8)) {
            memmove(line, next, strlen(next) + 1);
            continue;
        }
        line = next;
    }
}

/* ---- the record of a run's grids ------------------------------------------------------ */

int sweep_log_axes(struct sweep_log *l, const struct sweep *s)
{
    int rc = DR_OK;
    char *vals = NULL;
    for (int d = 0; d < s->n_dims; d++) {
        const struct sweep_dim *dim = &s->dims[d];
        int seen = 0;
        for (int k = 0; k < l->n_axes && !seen; k++) seen = !strcmp(l->keys[k], dim->key);
        if (seen) continue;
        size_t len = 1;
        for (int v = 0; v < dim->n_values; v++) len += strlen(dim->values[v]) + 1;
        vals = malloc(len);
        CHECK_ALLOC(vals, "a sweep axis");
        vals[0] = '\0';
        for (int v = 0; v < dim->n_values; v++) {
            if (v) strcat(vals, ",");
            strcat(vals, dim->values[v]);
        }
        if (l->n_axes == l->cap_axes) {
            /* keys and vals share one capacity: grow a copy of it for each */
            int cap_keys = l->cap_axes, cap_vals = l->cap_axes;
            if (grow_reserve(&l->keys, &cap_keys, l->n_axes + 1, 4, sizeof *l->keys) != DR_OK ||
                grow_reserve(&l->vals, &cap_vals, l->n_axes + 1, 4, sizeof *l->vals) != DR_OK)
                FAIL(DR_ERR_NOMEM, "out of memory allocating %s", "the sweep axes");
            l->cap_axes = cap_vals;
        }
        l->keys[l->n_axes] = strdup(dim->key);
        CHECK_ALLOC(l->keys[l->n_axes], "a sweep axis");
        l->vals[l->n_axes++] = vals;
        vals = NULL;
    }
cleanup:
    free(vals);
    return rc;
}

int sweep_log_member(struct sweep_log *l, int index)
{
    int rc = DR_OK;
    if (grow_reserve(&l->members, &l->cap_members, l->n_members + 1, 16,
                     sizeof *l->members) != DR_OK)
        FAIL(DR_ERR_NOMEM, "out of memory allocating %s", "the sweep members");
    l->members[l->n_members++] = index;
cleanup:
    return rc;
}

void sweep_log_free(struct sweep_log *l)
{
    for (int k = 0; k < l->n_axes; k++) {
        free(l->keys[k]);
        free(l->vals[k]);
    }
    free(l->keys);
    free(l->vals);
    free(l->members);
    memset(l, 0, sizeof *l);
}

/* An argument the shell reads back as itself without quotes. */
static int shell_plain(const char *a)
{
    if (!*a) return 0;
    for (const char *p = a; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("_-./=,:@%+", *p)) return 0;
    return 1;
}

int sweep_command_line(char **out, int argc, char *const *argv)
{
    int rc = DR_OK;
    size_t len = strlen("dawnrun") + 1;
    for (int i = 0; i < argc; i++) len += 4 * strlen(argv[i]) + 3;
    char *s = malloc(len);
    CHECK_ALLOC(s, "the command line");
    char *w = s + sprintf(s, "dawnrun");
    for (int i = 0; i < argc; i++) {
        *w++ = ' ';
        if (shell_plain(argv[i])) {
            w += sprintf(w, "%s", argv[i]);
            continue;
        }
        *w++ = '\'';
        for (const char *p = argv[i]; *p; p++) {
            if (*p == '\'') w += sprintf(w, "'\\''");
            else *w++ = *p;
        }
        *w++ = '\'';
    }
    *w = '\0';
    *out = s;
cleanup:
    return rc;
}

int sweep_is_record_ref(const char *v)
{
    if (!strcmp(v, "last")) return 1;
    if (!*v) return 0;
    for (const char *p = v; *p; p++)
        if (!isdigit((unsigned char)*p)) return 0;
    return 1;
}

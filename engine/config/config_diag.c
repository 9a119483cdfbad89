/* The config loader's error collector: every problem is recorded with its place (the
 * file:line of a setting, or the --set flag it came from), then all are printed at once
 * in file order, so that one pass reports everything wrong. Layer 1 of config handling
 * (config_tree.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_tree.h"
#include "base/grow.h"
#include "base/status.h"

const char *cfg_diag_file_name(struct cfg_diag *d, const char *file)
{
    if (!file || strcmp(file, d->main_file) == 0) return d->main_file;
    if (!d->include_dir || file[0] == '/') return file;
    size_t dl = strlen(d->include_dir), fl = strlen(file);
    for (int i = 0; i < d->n_shown; i++) {
        const char *s = d->shown[i];
        if (strncmp(s, d->include_dir, dl) == 0 && s[dl] == '/' && strcmp(s + dl + 1, file) == 0)
            return s;
    }
    if (grow_reserve(&d->shown, &d->cap_shown, d->n_shown + 1, 4, sizeof *d->shown) != DR_OK) {
        d->nomem = 1;
        return file;
    }
    char *joined = malloc(dl + fl + 2);
    if (!joined) {
        d->nomem = 1;
        return file;
    }
    memcpy(joined, d->include_dir, dl);
    joined[dl] = '/';
    memcpy(joined + dl + 1, file, fl + 1);
    d->shown[d->n_shown++] = joined;
    return joined;
}

/* Rank of a file name, adding it at the end when new; -1 on out of memory. */
static int file_rank(struct cfg_diag *d, const char *file)
{
    file = cfg_diag_file_name(d, file);
    for (int i = 0; i < d->n_files; i++)
        if (strcmp(d->files[i], file) == 0) return i;
    if (grow_reserve(&d->files, &d->cap_files, d->n_files + 1, 8, sizeof(*d->files)) != DR_OK) {
        d->nomem = 1;
        return -1;
    }
    d->files[d->n_files] = file;
    return d->n_files++;
}

static void rank_walk(struct cfg_diag *d, const config_setting_t *s)
{
    if (s->file) file_rank(d, s->file);
    if (config_setting_is_group(s) || config_setting_is_list(s))
        for (int i = 0; i < config_setting_length(s); i++)
            rank_walk(d, config_setting_get_elem(s, (unsigned)i));
}

void cfg_diag_rank_files(struct cfg_diag *d, const config_setting_t *root)
{
    file_rank(d, d->main_file);
    rank_walk(d, root);
}

/* Records "PREFIX" + the formatted message. */
static void record(struct cfg_diag *d, int rank, int line, const char *prefix, const char *fmt,
                   va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int body = vsnprintf(NULL, 0, fmt, again);
    va_end(again);
    size_t plen = strlen(prefix);
    char *text = body < 0 ? NULL : malloc(plen + (size_t)body + 1);
    if (!text) {
        d->nomem = 1;
        return;
    }
    memcpy(text, prefix, plen);
    vsnprintf(text + plen, (size_t)body + 1, fmt, ap);
    if (grow_reserve(&d->msgs, &d->cap, d->count + 1, 16, sizeof(*d->msgs)) != DR_OK) {
        free(text);
        d->nomem = 1;
        return;
    }
    d->msgs[d->count] = (struct cfg_msg){rank, line, d->count, text};
    d->count++;
}

void cfg_diag_at(struct cfg_diag *d, const config_setting_t *s, const char *fmt, ...)
{
    char prefix[4200];
    int rank, line;
    const struct cfg_origin *o = cfg_origin_of(s);
    if (o) {
        snprintf(prefix, sizeof(prefix), "--set %s: ", o->set);
        rank = -1;
        line = o->index + 1;
    } else {
        const char *file = cfg_diag_file_name(d, s->file);
        line = (int)s->line;
        if (line > 0)
            snprintf(prefix, sizeof(prefix), "%s:%d: ", file, line);
        else
            snprintf(prefix, sizeof(prefix), "%s: ", file);
        rank = file_rank(d, file);
    }
    va_list ap;
    va_start(ap, fmt);
    record(d, rank, line, prefix, fmt, ap);
    va_end(ap);
}

void cfg_diag_set(struct cfg_diag *d, int index, const char *text, const char *fmt, ...)
{
    char prefix[4200];
    snprintf(prefix, sizeof(prefix), "--set %s: ", text);
    va_list ap;
    va_start(ap, fmt);
    record(d, -1, index + 1, prefix, fmt, ap);
    va_end(ap);
}

/* Order: overrides first, then by file rank; within a file by line, messages without a
 * line last; ties in the order recorded. */
static int msg_cmp(const void *pa, const void *pb)
{
    const struct cfg_msg *a = pa, *b = pb;
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    unsigned la = a->line > 0 ? (unsigned)a->line : ~0u;
    unsigned lb = b->line > 0 ? (unsigned)b->line : ~0u;
    if (la != lb) return la < lb ? -1 : 1;
    return (a->seq > b->seq) - (a->seq < b->seq);
}

int cfg_diag_flush(struct cfg_diag *d, FILE *f)
{
    int printed = 0;
    qsort(d->msgs, (size_t)d->count, sizeof(*d->msgs), msg_cmp);
    for (int i = 0; i < d->count; i++) {
        int repeat = 0;
        for (int j = 0; j < i && !repeat; j++)
            repeat = strcmp(d->msgs[j].text, d->msgs[i].text) == 0;
        if (!repeat) {
            fprintf(f, "%s\n", d->msgs[i].text);
            printed++;
        }
    }
    if (d->nomem) {
        fprintf(f, "%s: out of memory while checking the config\n", d->main_file);
        printed++;
    }
    for (int i = 0; i < d->count; i++) free(d->msgs[i].text);
    d->count = 0;
    return printed;
}

void cfg_diag_free(struct cfg_diag *d)
{
    for (int i = 0; i < d->count; i++) free(d->msgs[i].text);
    for (int i = 0; i < d->n_shown; i++) free(d->shown[i]);
    free(d->shown);
    free(d->msgs);
    free(d->files);
    free(d->include_dir);
    d->include_dir = NULL;
    d->msgs = NULL;
    d->files = NULL;
    d->shown = NULL;
    d->count = d->cap = d->n_files = d->cap_files = d->n_shown = d->cap_shown = 0;
}

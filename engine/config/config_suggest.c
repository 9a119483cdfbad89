/* "Did you mean ...?" for unknown names in a config: the closest known name by edit
 * distance, or one sharing a prefix. Layer 3 of config handling, validation
 * (config_schema.h); calls nothing else of config. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_schema.h"

int cfg_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int row[128];
    if (lb >= sizeof(row) / sizeof(row[0])) return (int)(la > lb ? la : lb);
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* Score of a candidate: the edit distance when close (0..2), 100 - the shared prefix
 * length when they only share a prefix, or -1 when not close at all. */
static int score(const char *word, const char *cand)
{
    size_t lw = strlen(word), lc = strlen(cand);
    int d = cfg_edit_distance(word, cand);
    int limit = (lw <= 2 || lc <= 2) ? 1 : 2;
    if (d <= limit) return d;
    size_t p = 0;
    while (word[p] && word[p] == cand[p]) p++;
    size_t shorter = lw < lc ? lw : lc;
    if (p >= 3 || (p == shorter && p >= 2)) return 100 - (int)(p > 90 ? 90 : p);
    return -1;
}

const char *cfg_suggest(const char *word, const char *const *cands, int n)
{
    const char *best = NULL;
    int best_score = -1;
    for (int i = 0; i < n; i++) {
        if (!cands[i] || strcmp(cands[i], word) == 0) continue;
        int s = score(word, cands[i]);
        if (s >= 0 && (best_score < 0 || s < best_score)) {
            best = cands[i];
            best_score = s;
        }
    }
    return best;
}

const char *cfg_suggest_member(const char *word, const config_setting_t *group)
{
    if (!group || !config_setting_is_aggregate(group)) return NULL;
    const char *best = NULL;
    int best_score = -1;
    for (int i = 0; i < config_setting_length(group); i++) {
        const config_setting_t *m = config_setting_get_elem(group, (unsigned)i);
        const struct cfg_origin *o = config_setting_get_hook(m);
        if (o && o->created) continue;
        const char *name = config_setting_is_group(group) ? config_setting_name(m)
                                                          : config_setting_get_string(m);
        if (!name || strcmp(name, word) == 0) continue;
        int s = score(word, name);
        if (s >= 0 && (best_score < 0 || s < best_score)) {
            best = name;
            best_score = s;
        }
    }
    return best;
}

const char *cfg_did_you_mean(char *buf, size_t n, const char *prefix, const char *sugg)
{
    if (sugg)
        snprintf(buf, n, " (did you mean '%s%s'?)", prefix ? prefix : "", sugg);
    else if (n > 0)
        buf[0] = '\0';
    return buf;
}

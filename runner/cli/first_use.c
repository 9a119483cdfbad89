/* The first-use line and its hand-made number formatting (see first_use.h). */
#include "first_use.h"

#include <string.h>

#include "base/status.h"

size_t first_use_cat(char *buf, size_t cap, const char *text)
{
    size_t len = strlen(buf);
    while (*text && len + 1 < cap) buf[len++] = *text++;
    buf[len] = '\0';
    return len;
}

size_t first_use_cat_u64(char *buf, size_t cap, uint64_t v)
{
    char digits[24];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    char text[24];
    for (int i = 0; i < n; i++) text[i] = digits[n - 1 - i];
    text[n] = '\0';
    return first_use_cat(buf, cap, text);
}

size_t first_use_cat_fixed(char *buf, size_t cap, double v, int decimals)
{
    uint64_t scale = 1;
    if (decimals < 0) decimals = 0;
    if (decimals > 6) decimals = 6;
    for (int i = 0; i < decimals; i++) scale *= 10;
    if (!(v >= 0.0) || v > 1e12) v = v > 1e12 ? 1e12 : 0.0;   /* NaN and negatives: 0 */
    const uint64_t scaled = (uint64_t)(v * (double)scale + 0.5);
    first_use_cat_u64(buf, cap, scaled / scale);
    if (decimals == 0) return strlen(buf);
    first_use_cat(buf, cap, ".");
    char frac[8];
    uint64_t f = scaled % scale;
    for (int i = decimals - 1; i >= 0; i--) {
        frac[i] = (char)('0' + f % 10);
        f /= 10;
    }
    frac[decimals] = '\0';
    return first_use_cat(buf, cap, frac);
}

size_t first_use_text(char *buf, size_t cap, const struct backend_counters *d)
{
    first_use_cat(buf, cap, FIRST_USE_PREFIX);
    first_use_cat_u64(buf, cap, d->fused_graphs_built);
    first_use_cat(buf, cap, " fused graphs built, ");
    first_use_cat_u64(buf, cap, d->fused_graphs_refused);
    first_use_cat(buf, cap, " refused, ");
    first_use_cat_u64(buf, cap, d->fused_graphs_unsupported);
    first_use_cat(buf, cap, " not asked (support table), ");
    first_use_cat_fixed(buf, cap, 1e-9 * (double)d->fused_build_ns, 1);
    first_use_cat(buf, cap, " s building fused graphs, ");
    first_use_cat_fixed(buf, cap, 1e-9 * (double)d->algo_search_ns, 1);
    first_use_cat(buf, cap, " s searching convolution algorithms (");
    first_use_cat_u64(buf, cap, d->algo_searches);
    return first_use_cat(buf, cap, " searches)");
}

void first_use_epoch_seen(struct first_use_epochs *e, int epoch, double train_s)
{
    for (int i = 0; i < 2; i++)
        if (e->epoch[i] == 0) {
            e->epoch[i] = epoch;
            e->train_s[i] = train_s;
            return;
        }
}

size_t first_use_run_text(char *buf, size_t cap, const struct backend_counters *d,
                          const struct first_use_epochs *e)
{
    size_t len = first_use_text(buf, cap, d);
    for (int i = 0; i < 2 && e->epoch[i] > 0; i++) {
        first_use_cat(buf, cap, i == 0 ? "; epoch " : ", epoch ");
        first_use_cat_u64(buf, cap, (uint64_t)e->epoch[i]);
        first_use_cat(buf, cap, i == 0 ? " trained in " : " in ");
        first_use_cat_fixed(buf, cap, e->train_s[i], 1);
        len = first_use_cat(buf, cap, " s");
    }
    return len;
}

int first_use_run_line(char *buf, size_t cap, const struct backend *be,
                       const struct backend_counters *before, const struct first_use_epochs *e)
{
    struct backend_counters now, cost;
    buf[0] = '\0';
    if (!be->ops->counters || be->ops->counters(be->ctx, &now) != DR_OK) return 0;
    backend_counters_diff(&cost, &now, before);
    first_use_run_text(buf, cap, &cost, e);
    return 1;
}

/* The learning rate per step of a stored experiment (see plot_lr.h): the schedule and the
 * length of training read back from its params, the points that draw it exactly. */
#include "plot_lr.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/status.h"
#include "engine/core/train.h"

/* The number of param key, or NaN when it is missing or not a number. */
static double param_num(const struct param_list *p, const char *key)
{
    const struct param *v = param_list_find(p, key);
    return v && (v->type == PARAM_INT || v->type == PARAM_FLOAT) ? v->num : NAN;
}

/* Reads a list value "[0, 8, 30]" or "(0.0, 0.4, 0.0)" into out (at most cap numbers);
 * returns how many, or -1 when it is not a flat list of numbers or too long. */
static int parse_list(double *out, int cap, const char *text)
{
    int n = 0;
    const char *s = text;
    while (*s == ' ') s++;
    if (*s != '[' && *s != '(') return -1;
    char close = *s == '[' ? ']' : ')';
    s++;
    for (;;) {
        while (*s == ' ' || *s == ',') s++;
        if (*s == close) return s[1] == '\0' ? n : -1;
        char *end;
        double v = strtod(s, &end);
        if (end == s || n == cap || !isfinite(v)) return -1;
        out[n++] = v;
        s = end;
    }
}

/* Fills the fields of e that the step count and the per-step rule read. 0 when the
 * params lack one of them. */
static int experiment_from_params(struct experiment *e, const struct param_list *p)
{
    const struct param *knots = param_list_find(p, "train.lr_schedule.knots");
    const struct param *values = param_list_find(p, "train.lr_schedule.values");
    const struct param *loss = param_list_find(p, "train.loss");
    double epochs = param_num(p, "train.epochs"), batch = param_num(p, "train.batch_size");
    double subset = param_num(p, "data.train_subset"), wd = param_num(p, "train.weight_decay");
    memset(e, 0, sizeof *e);
    if (!knots || !values || !(epochs > 0) || !(batch >= 1) || batch > 1e9) return 0;
    int nk = parse_list(e->train.lr.knots, SCHEDULE_MAX_KNOTS, knots->value);
    int nv = parse_list(e->train.lr.values, SCHEDULE_MAX_KNOTS, values->value);
    if (nk < 1 || nk != nv) return 0;
    e->train.lr.count = nk;
    e->train.epochs = epochs;
    e->train.batch_size = (int)batch;
    e->train.weight_decay = isfinite(wd) ? wd : 0.0;
    e->train.loss = loss && !strcmp(loss->value, "mean") ? LOSS_MEAN : LOSS_SUM;
    e->data.train_subset = subset > 0 && subset < 1e9 ? (int)subset : 0;
    return 1;
}

/* Marks step s when it is one of the run's. */
static void mark(char *keep, long total, long s)
{
    if (s >= 0 && s < total) keep[s] = 1;
}

int plot_lr_from_params(double **epoch, double **lr, int *n, const struct param_list *params)
{
    int rc = DR_OK;
    struct experiment e;
    struct experiment_steps st;
    char *keep = NULL;
    *epoch = *lr = NULL;
    *n = 0;
    if (!experiment_from_params(&e, params) || experiment_steps(&e, 0, &st) != DR_OK ||
        st.per_epoch > INT32_MAX)
        return DR_OK;
    keep = calloc((size_t)st.total, 1);
    CHECK_ALLOC(keep, "the learning-rate steps");
    for (long k = 0; k < st.epochs; k++) {
        mark(keep, st.total, k * st.per_epoch);
        mark(keep, st.total, (k + 1) * st.per_epoch - 1);
    }
    mark(keep, st.total, st.total - 1);
    for (int i = 0; i < e.train.lr.count; i++) {
        double at = e.train.lr.knots[i] * (double)st.per_epoch;   /* the knot, in steps */
        if (!(at > -1.0) || at >= (double)st.total) continue;
        mark(keep, st.total, (long)floor(at));
        mark(keep, st.total, (long)floor(at) + 1);
    }
    int count = 0;
    for (long s = 0; s < st.total; s++) count += keep[s];
    *epoch = malloc((size_t)count * sizeof **epoch);
    *lr = malloc((size_t)count * sizeof **lr);
    if (!*epoch || !*lr) FAIL(DR_ERR_NOMEM, "out of memory for the learning-rate curve");
    for (long s = 0; s < st.total; s++) {
        if (!keep[s]) continue;
        long k = s / st.per_epoch, first = k * st.per_epoch;
        long in_epoch = st.total - first < st.per_epoch ? st.total - first : st.per_epoch;
        float step_lr, wd, grad_scale;
        double sched;
        train_step_hparams(&e, s, (int)st.per_epoch, &step_lr, &wd, &grad_scale, &sched);
        (*epoch)[*n] = (double)k + (double)(s - first + 1) / (double)in_epoch;
        (*lr)[*n] = sched;
        (*n)++;
    }
cleanup:
    free(keep);
    if (rc != DR_OK) {
        free(*epoch);
        free(*lr);
        *epoch = *lr = NULL;
        *n = 0;
    }
    return rc;
}

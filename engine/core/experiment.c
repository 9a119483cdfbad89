/* What a loaded experiment gives besides its fields: the training images and evaluation
 * batch it asks for, the length of training, the value of a schedule at a point of it,
 * and the release of what experiment_load allocated. The loading itself is config
 * handling (engine/config/config_load.c). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "experiment.h"
#include "base/status.h"

int experiment_train_images(const struct experiment *e)
{
    return e->data.train_subset ? e->data.train_subset : EXPERIMENT_TRAIN_IMAGES;
}

int experiment_eval_batch(const struct experiment *e)
{
    return e->eval.batch_size > 0 ? e->eval.batch_size : e->train.batch_size;
}

int experiment_steps(const struct experiment *e, int train_count, struct experiment_steps *out)
{
    memset(out, 0, sizeof(*out));
    if (train_count <= 0) train_count = experiment_train_images(e);
    if (e->train.batch_size < 1 || train_count < e->train.batch_size) return DR_ERR_CONFIG;
    out->per_epoch = train_count / e->train.batch_size;
    out->total = lround(e->train.epochs * (double)out->per_epoch);
    if (out->total < 1) out->total = 1;
    out->epochs = (int)((out->total + out->per_epoch - 1) / out->per_epoch);
    return DR_OK;
}

void experiment_free(struct experiment *e)
{
    if (!e) return;
    net_spec_free(&e->net);
    free(e->resolved);
    free(e->sources);
    e->resolved = NULL;
    e->sources = NULL;
}

double schedule_at(const struct schedule *s, double t)
{
    if (s->count <= 0) return 0.0;
    if (t <= s->knots[0]) return s->values[0];
    for (int i = 1; i < s->count; i++) {
        if (t <= s->knots[i]) {
            double a = s->knots[i - 1], b = s->knots[i];
            double w = (t - a) / (b - a);
            return s->values[i - 1] + w * (s->values[i] - s->values[i - 1]);
        }
    }
    return s->values[s->count - 1];
}

/* The plan of a run (see run_plan.h): batch sizes, step and epoch counts, the images
 * trained and evaluated on. */
#include "run_plan.h"

#include <string.h>

#include "base/status.h"

int experiment_plan(struct run_plan *out, const struct experiment *e, int train_count,
                    int test_count)
{
    int rc = DR_OK;
    struct experiment_steps st;
    memset(out, 0, sizeof(*out));
    if (train_count < 0) train_count = experiment_train_images(e);
    if (test_count < 0)
        test_count = e->data.test_subset ? e->data.test_subset : EXPERIMENT_TEST_IMAGES;
    out->batch = e->train.batch_size;
    out->eval_batch = experiment_eval_batch(e);
    out->train_count = train_count;
    out->test_count = test_count;
    if (train_count < out->batch || experiment_steps(e, train_count, &st) != DR_OK)
        FAIL(DR_ERR_CONFIG, "%s: train.batch_size %d is larger than the training set (%d images)",
             e->path, out->batch, train_count);
    out->steps_per_epoch = (int)st.per_epoch;
    out->total_steps = st.total;
    out->epochs = st.epochs;
    out->eval_batches = (test_count + out->eval_batch - 1) / out->eval_batch;
    out->eval_last = test_count - (out->eval_batches - 1) * out->eval_batch;
    if (test_count == 0) out->eval_last = 0;
cleanup:
    return rc;
}

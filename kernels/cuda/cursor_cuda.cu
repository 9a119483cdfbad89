/* The step cursor's advance on the device (the CURSOR_ADVANCE node): one thread adds 1
 * to the global step and to the batch index, so that a replayed step moves the cursor
 * itself and the host writes it only where the engine says (epoch starts, evaluation). */
#include "cuda_internal.h"

__global__ void cursor_advance_kernel(int32_t *cursor /* (PLAN_CURSOR_LEN) */)
{
    cursor[CURSOR_STEP] += 1;
    cursor[CURSOR_INDEX] += 1;
}

int cuda_cursor_advance(void *ctx, struct tensor *cursor)
{
    int rc = DR_OK;
    struct cuda_ctx *c = (struct cuda_ctx *)ctx;
    TRY(cuda_enter(c));
    cursor_advance_kernel<<<1, 1, 0, c->stream>>>((int32_t *)cursor->data);
    /* reads and writes the step and the index */
    CHECK_LAUNCH(c, 2 * sizeof(int32_t), 2 * sizeof(int32_t));
cleanup:
    return rc;
}

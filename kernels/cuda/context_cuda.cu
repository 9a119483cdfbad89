/* The CUDA context's services shared by every op file: entering the context's device,
 * the scratch buffers that grow on demand, and where a parameter's compute copy lives.
 * It calls nothing of the op files or of backend_cuda.cu (the table that names them). */
#include "cuda_internal.h"

static const char *const slot_names[SLOT_COUNT] = {
    "the cuDNN convolution workspace", "the half-precision weight gradient buffer",
    "the per-channel reduction buffer", "the max-pool index buffer",
    "the convolution output for algorithm trials", "the fused convolution workspace",
    "the fused convolution weight gradient buffer", "Muon's Newton-Schulz buffers"};

size_t cuda_param_copy_offset(size_t count)
{
    return (count * sizeof(float) + CUDA_ALIGN - 1) / CUDA_ALIGN * CUDA_ALIGN;
}

void *cuda_param_copy(const struct cuda_ctx *c, const struct tensor *t)
{
    if (c->dt == CUDA_F32) return t->data;
    return (char *)t->data + cuda_param_copy_offset(tensor_count(t));
}

int cuda_enter(struct cuda_ctx *c)
{
    int rc = DR_OK;
    CHECK_CUDA(cudaSetDevice(c->device));
cleanup:
    return rc;
}

int cuda_scratch(struct cuda_ctx *c, enum cuda_slot slot, size_t bytes, void **out)
{
    int rc = DR_OK;
    struct cuda_scratch *s = &c->scratch[slot];
    size_t want = 0;
    cudaError_t e = cudaSuccess;
    if (bytes == 0) bytes = 1;   /* a zero-byte need still gets a buffer: no regrowth */
    if (s->ptr && s->bytes >= bytes) {
        *out = s->ptr;
        return DR_OK;
    }
    CHECK_CUDA(cuda_counted_sync(c));
    if (s->ptr) CHECK_CUDA(cuda_counted_free(c, s->ptr));
    s->ptr = NULL;
    s->bytes = 0;
    want = bytes + bytes / 4;   /* headroom: fewer regrowths */
    want = (want + CUDA_ALIGN - 1) / CUDA_ALIGN * CUDA_ALIGN;
    e = cuda_counted_malloc(c, &s->ptr, want);
    if (e != cudaSuccess) {
        s->ptr = NULL;
        (void)cudaGetLastError();
        FAIL(DR_ERR_NOMEM, "out of GPU memory allocating %s (%zu bytes): %s", slot_names[slot],
             want, cudaGetErrorString(e));
    }
    s->bytes = want;
    *out = s->ptr;
cleanup:
    return rc;
}

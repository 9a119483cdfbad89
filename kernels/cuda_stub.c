/* The CUDA engine's entry point in a build without CUDA: there is never a device. */
#include <stdio.h>

#include "../engine/backend.h"
#include "../engine/status.h"

int backend_cuda_create(struct backend *b, int device)
{
    (void)device;
    b->ops = NULL;
    b->ctx = NULL;
    fprintf(stderr, "dawnrun: this build has no CUDA engine (configure with nvcc, cuDNN and "
                    "cuBLAS available)\n");
    return DR_ERR_NODEVICE;
}

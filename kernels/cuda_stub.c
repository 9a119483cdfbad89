/* The CUDA engine's entry points in a build without CUDA: there is never a device. */
#include <stdio.h>

#include "backend.h"
#include "../base/status.h"

int backend_cuda_probe(int device, char *why, size_t whylen)
{
    (void)device;
    snprintf(why, whylen, "this build has no CUDA engine");
    return DR_ERR_NODEVICE;
}

int backend_cuda_create(struct backend *b, int device, int precision)
{
    char why[128];
    (void)precision;
    b->ops = NULL;
    b->ctx = NULL;
    backend_cuda_probe(device, why, sizeof(why));
    dr_eprintf("dawnrun: no CUDA device: %s (configure with nvcc, cuDNN and cuBLAS "
               "available)\n", why);
    return DR_ERR_NODEVICE;
}

/* CUDA engine: creation and device discovery. Any failure to find or initialise a
 * device (no driver, no GPU, cuDNN not initialisable) is reported as DR_ERR_NODEVICE. */
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "../../engine/backend.h"
}
#include "check_cuda.h"

extern "C" int backend_cuda_probe(int device, char *why, size_t whylen)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        snprintf(why, whylen, "%s", cudaGetErrorString(e));
        return DR_ERR_NODEVICE;
    }
    if (device < 0 || device >= count) {
        snprintf(why, whylen, "no CUDA device %d (%d present)", device, count);
        return DR_ERR_NODEVICE;
    }
    cudnnHandle_t h = NULL;
    cudnnStatus_t s = cudnnCreate(&h);
    if (s != CUDNN_STATUS_SUCCESS) {
        snprintf(why, whylen, "cuDNN cannot initialise: %s", cudnnGetErrorString(s));
        return DR_ERR_NODEVICE;
    }
    cudnnDestroy(h);
    return DR_OK;
}

extern "C" int backend_cuda_create(struct backend *b, int device, int precision)
{
    char why[256];
    (void)precision;
    b->ops = NULL;
    b->ctx = NULL;
    if (backend_cuda_probe(device, why, sizeof(why)) != DR_OK) {
        fprintf(stderr, "dawnrun: no CUDA device: %s\n", why);
        return DR_ERR_NODEVICE;
    }
    fprintf(stderr, "dawnrun: the CUDA engine's ops are not built yet\n");
    return DR_ERR_NODEVICE;
}

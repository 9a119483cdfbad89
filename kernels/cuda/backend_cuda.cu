/* CUDA engine: creation and device discovery. Any failure to find or initialise a
 * device (no driver, no GPU, cuDNN not initialisable) is reported as DR_ERR_NODEVICE. */
#include <stdio.h>
#include <stdlib.h>

extern "C" {
#include "../../engine/backend.h"
}
#include "check_cuda.h"

extern "C" int backend_cuda_create(struct backend *b, int device)
{
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    b->ops = NULL;
    b->ctx = NULL;
    if (e != cudaSuccess) {
        fprintf(stderr, "dawnrun: no CUDA device: %s\n", cudaGetErrorString(e));
        return DR_ERR_NODEVICE;
    }
    if (device < 0 || device >= count) {
        fprintf(stderr, "dawnrun: no CUDA device %d (%d present)\n", device, count);
        return DR_ERR_NODEVICE;
    }
    fprintf(stderr, "dawnrun: the CUDA engine's ops are not built yet\n");
    return DR_ERR_NODEVICE;
}

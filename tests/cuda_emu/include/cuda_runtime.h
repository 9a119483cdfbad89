/* Host emulation: the real CUDA runtime declarations (types, enums, prototypes);
 * emu_runtime.cpp defines the functions the engine calls, on host memory. */
#pragma once
#include <cuda_runtime_api.h>

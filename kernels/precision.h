/* The activation precisions an engine can compute in (train.precision). Parameters,
 * optimiser state and batch-norm statistics are fp32 in every precision. */
#ifndef DAWNRUN_KERNELS_PRECISION_H
#define DAWNRUN_KERNELS_PRECISION_H

enum precision { PRECISION_FP32, PRECISION_FP16, PRECISION_BF16 };

#endif

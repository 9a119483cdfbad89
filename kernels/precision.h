/* The activation precisions an engine can compute in (train.precision), and their names:
 * the one list of them, which the schema's enum of train.precision must repeat in the
 * same order (tests/test_config.c checks it). Parameters, optimiser state and
 * batch-norm statistics are fp32 in every precision. */
#ifndef DAWNRUN_KERNELS_PRECISION_H
#define DAWNRUN_KERNELS_PRECISION_H

enum precision { PRECISION_FP32, PRECISION_FP16, PRECISION_BF16 };
#define PRECISION_COUNT 3

/* The name of precision p as train.precision spells it ("fp32", "fp16", "bf16"), or NULL
 * for a value outside the enum: loop p from 0 while it is not NULL to read a name back. */
static inline const char *precision_name(int p)
{
    static const char *const names[PRECISION_COUNT] = {"fp32", "fp16", "bf16"};
    return p >= 0 && p < PRECISION_COUNT ? names[p] : NULL;
}

#endif

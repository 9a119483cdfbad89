/* The activation precisions an engine can compute in (train.precision), and their names:
 * the one list of them, which the schema's enum of train.precision must repeat in the
 * same order (tests/test_config.c checks it). Parameters, optimiser state and
 * batch-norm statistics are fp32 in every precision. */
#ifndef DAWNRUN_KERNELS_PRECISION_H
#define DAWNRUN_KERNELS_PRECISION_H

/* The one list: enum value and name, in the order of the schema's enum. */
#define PRECISION_LIST(X) X(PRECISION_FP32, "fp32") X(PRECISION_FP16, "fp16") \
                          X(PRECISION_BF16, "bf16")

#define PRECISION_ENUM_(e, s) e,
enum precision { PRECISION_LIST(PRECISION_ENUM_) PRECISION_COUNT_ };
#define PRECISION_COUNT ((int)PRECISION_COUNT_)

/* The names joined by '|' with a '|' after the last ("fp32|fp16|bf16|"), a string literal
 * for command-line choices: PRECISION_CHOICES "all" adds a choice of one's own. */
#define PRECISION_BAR_(e, s) s "|"
#define PRECISION_CHOICES PRECISION_LIST(PRECISION_BAR_)

/* The name of precision p as train.precision spells it ("fp32", "fp16", "bf16"), or NULL
 * for a value outside the enum: loop p from 0 while it is not NULL to read a name back. */
static inline const char *precision_name(int p)
{
#define PRECISION_NAME_(e, s) s,
    static const char *const names[] = {PRECISION_LIST(PRECISION_NAME_)};
#undef PRECISION_NAME_
    return p >= 0 && p < PRECISION_COUNT ? names[p] : NULL;
}

#endif

/* Run-time choice of the instruction set the CPU engine's own elementwise and reduction
 * kernels use. The kernel sources (CPU_ISA_KERNELS below) are compiled once per variant
 * (CMakeLists.txt): generic x86-64 (SSE2), x86-64-v3 (AVX2, FMA) and x86-64-v4 (AVX-512),
 * each under its own name suffix, and the public names (kernels/batchnorm.h, ...) call the
 * variant chosen at the first call: the best one the processor supports, or the one
 * DAWNRUN_CPU_ISA names (generic, avx2, avx512; one the processor lacks is refused).
 *
 * The variants give the same bits: no -ffast-math, no contraction of a * b + c into an
 * FMA (-ffp-contract=off; the math of vmath.h calls fmaf explicitly, which rounds once
 * with or without an FMA instruction), and every reduction adds in the fixed lane order of
 * cpu_util.h whatever the vector width. tests/test_cpu_isa.c runs each kernel under each
 * variant this processor has and compares the bits. */
#ifndef DAWNRUN_KERNELS_CPU_ISA_H
#define DAWNRUN_KERNELS_CPU_ISA_H

#include "../activation.h"
#include "../batchnorm.h"
#include "../optimizer.h"
#include "../pool.h"
#include "../tensor_ops.h"
#include "bn_fused.h"

enum cpu_isa { CPU_ISA_GENERIC, CPU_ISA_AVX2, CPU_ISA_AVX512, CPU_ISA_COUNT };

/* "generic", "avx2", "avx512". */
const char *cpu_isa_name(enum cpu_isa isa);

/* Whether this processor (and the build) can run variant isa. */
int cpu_isa_supported(enum cpu_isa isa);

/* The variant the kernels use now (chosen at the first call, as the file comment says). */
enum cpu_isa cpu_isa_active(void);

/* Makes the kernels use variant isa from now on (tests compare the variants). Returns
 * DR_OK, or DR_ERR_USAGE when the processor or the build lacks it. Not thread-safe:
 * call between kernels. */
int cpu_isa_use(enum cpu_isa isa);

/* Every kernel that has one variant per instruction set, by its public name. */
#define CPU_ISA_KERNELS(X)                                                                   \
    X(batchnorm_forward_train_cpu) X(batchnorm_forward_eval_cpu) X(batchnorm_backward_cpu)  \
    X(bn_train_fused_cpu) X(bn_eval_fused_cpu) X(bn_backward_fused_cpu)                      \
    X(activation_forward_cpu) X(activation_backward_cpu)                                     \
    X(pool_forward_cpu) X(pool_backward_cpu)                                                 \
    X(concat_forward_cpu) X(concat_backward_cpu) X(add_forward_cpu) X(scale_forward_cpu)    \
    X(scaled_copy_cpu) X(flatten_forward_cpu) X(flatten_backward_cpu)                        \
    X(sgd_update_cpu) X(param_lerp_cpu)

/* One variant's kernels, a pointer of each public function's type. */
struct cpu_isa_table {
#define CPU_ISA_FIELD(f) __typeof__(f) *f;
    CPU_ISA_KERNELS(CPU_ISA_FIELD)
#undef CPU_ISA_FIELD
};

/* The variants' tables (those the build has; the others are not linked). */
extern const struct cpu_isa_table cpu_isa_table_generic, cpu_isa_table_avx2,
    cpu_isa_table_avx512;

/* Inside a variant's compilation (CPU_ISA_SUFFIX = _generic, _avx2 or _avx512), the name
 * of public kernel f in that variant, declared with f's type. */
#define CPU_ISA_CAT_(a, b) a##b
#define CPU_ISA_CAT(a, b) CPU_ISA_CAT_(a, b)
#ifdef CPU_ISA_SUFFIX
#define CPU_ISA_FN(f) CPU_ISA_CAT(f, CPU_ISA_SUFFIX)
#define CPU_ISA_DECLARE(f) __typeof__(f) CPU_ISA_FN(f);
CPU_ISA_KERNELS(CPU_ISA_DECLARE)
#undef CPU_ISA_DECLARE
#endif

#endif

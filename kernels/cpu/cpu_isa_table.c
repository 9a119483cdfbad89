/* One instruction set's table of kernels (cpu_isa.h): compiled once per variant, with
 * CPU_ISA_SUFFIX naming it, next to that variant's kernel sources. */
#include "cpu_isa.h"

#ifndef CPU_ISA_SUFFIX
#error "cpu_isa_table.c is compiled once per instruction set, with CPU_ISA_SUFFIX set"
#endif

#define CPU_ISA_ENTRY(f) .f = CPU_ISA_FN(f),
const struct cpu_isa_table CPU_ISA_CAT(cpu_isa_table, CPU_ISA_SUFFIX) = {
    CPU_ISA_KERNELS(CPU_ISA_ENTRY)
};

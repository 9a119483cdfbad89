# The CPU engine's instruction-set variants and its comparison script.
# test_cpu_isa (tests/test_cpu_isa.c) compares every variant this processor has; here it
# runs again with DAWNRUN_CPU_ISA=generic, which the first kernel call must honour.
add_test(NAME cpu_isa_forced_generic COMMAND test_cpu_isa)
set_tests_properties(cpu_isa_forced_generic PROPERTIES
  ENVIRONMENT "DAWNRUN_CPU_ISA=generic" PASS_REGULAR_EXPRESSION "kernels: generic \\(DAWNRUN_CPU_ISA generic\\)")
# bench/cpu-compare.sh needs PyTorch to run, so only its syntax and --help are checked.
add_test(NAME bench_cpu_compare_syntax COMMAND sh -n ${CMAKE_SOURCE_DIR}/bench/cpu-compare.sh)
add_test(NAME bench_cpu_compare_help COMMAND sh ${CMAKE_SOURCE_DIR}/bench/cpu-compare.sh --help)
set_tests_properties(bench_cpu_compare_help PROPERTIES PASS_REGULAR_EXPRESSION "--isa ISA")

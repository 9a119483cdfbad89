# Sanitizer and fuzzing builds of the C code.
#   DAWNRUN_SANITIZE=address,undefined   every C file of the project (library, CLI, tests)
#     is compiled and linked with -fsanitize=LIST -fno-sanitize-recover=all, so the first
#     report aborts the process and fails its test. Used by the CI sanitizer stage with gcc.
#   DAWNRUN_FUZZ=ON (clang only)   adds -fsanitize=fuzzer-no-link to every C file and builds
#     the libFuzzer targets of tests/fuzz/ (target `fuzz`). Combine with DAWNRUN_SANITIZE.
# CUDA sources are never instrumented (nvcc does not take these flags).
set(DAWNRUN_SANITIZE "" CACHE STRING
  "Comma-separated -fsanitize= list for all C code (e.g. address,undefined); empty: none")
option(DAWNRUN_FUZZ "Build the libFuzzer targets in tests/fuzz (clang)" OFF)

if(DAWNRUN_SANITIZE)
  add_compile_options(
    "$<$<COMPILE_LANGUAGE:C>:-fsanitize=${DAWNRUN_SANITIZE}>"
    "$<$<COMPILE_LANGUAGE:C>:-fno-sanitize-recover=all>"
    "$<$<COMPILE_LANGUAGE:C>:-fno-omit-frame-pointer>"
    "$<$<COMPILE_LANGUAGE:C>:-g>")
  add_link_options("$<$<LINK_LANGUAGE:C>:-fsanitize=${DAWNRUN_SANITIZE}>")
  message(STATUS "dawnrun: sanitizers ${DAWNRUN_SANITIZE}")
endif()

if(DAWNRUN_FUZZ)
  if(NOT CMAKE_C_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "DAWNRUN_FUZZ=ON needs clang (libFuzzer): configure with CC=clang")
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:C>:-fsanitize=fuzzer-no-link>")
  message(STATUS "dawnrun: libFuzzer targets ON")
endif()

# The fuzz targets of tests/fuzz (see tests/fuzz/fuzz.h and docs/testing.md). In every
# build each target NAME is linked with the replay driver into fuzz_NAME_replay, and the
# ctest case of that name replays its committed inputs: the crash inputs kept in
# tests/fuzz/regress/NAME and the seed corpus. With -DDAWNRUN_FUZZ=ON (clang) each is
# also linked with libFuzzer into fuzz_NAME; the target `fuzz` builds them all.
set(FUZZ_DIR ${CMAKE_SOURCE_DIR}/tests/fuzz)
set(FUZZ_NAMES config cifar checkpoint results)
set(FUZZ_EXTRA_config ${CMAKE_SOURCE_DIR}/runner/cli/load.c
  ${CMAKE_SOURCE_DIR}/runner/sched/sweep.c)
# Seed corpora: the committed seeds of each target, and for the config loader the golden
# test configs and the shipped configs themselves.
set(FUZZ_SEEDS_config ${FUZZ_DIR}/seeds/config ${CMAKE_SOURCE_DIR}/tests/configs
    ${CMAKE_SOURCE_DIR}/configs)
set(FUZZ_SEEDS_cifar ${FUZZ_DIR}/seeds/cifar)
set(FUZZ_SEEDS_checkpoint ${FUZZ_DIR}/seeds/checkpoint)
set(FUZZ_SEEDS_results ${FUZZ_DIR}/seeds/results)
if(DAWNRUN_FUZZ)
  add_custom_target(fuzz)
endif()
foreach(name ${FUZZ_NAMES})
  set(srcs ${FUZZ_DIR}/fuzz_${name}.c ${FUZZ_DIR}/fuzz_util.c ${FUZZ_EXTRA_${name}})
  add_executable(fuzz_${name}_replay ${srcs} ${FUZZ_DIR}/replay.c)
  if(DAWNRUN_FUZZ)
    add_executable(fuzz_${name} ${srcs})
    target_link_options(fuzz_${name} PRIVATE -fsanitize=fuzzer)
    add_dependencies(fuzz fuzz_${name})
    set(exes fuzz_${name} fuzz_${name}_replay)
  else()
    set(exes fuzz_${name}_replay)
  endif()
  foreach(exe ${exes})
    target_compile_options(${exe} PRIVATE ${DAWNRUN_WARNINGS})
    target_compile_definitions(${exe} PRIVATE DAWNRUN_FUZZ_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
    target_include_directories(${exe} PRIVATE ${FUZZ_DIR})
    target_link_libraries(${exe} PRIVATE dawnrun_engines)
  endforeach()
  add_test(NAME fuzz_${name}_replay COMMAND fuzz_${name}_replay
           ${FUZZ_DIR}/regress/${name} ${FUZZ_SEEDS_${name}})
endforeach()

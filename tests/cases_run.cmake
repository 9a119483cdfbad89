# `dawnrun run` at the command line: every tests/run_NAME.sh (run_lib.sh excepted) is
# one ctest, run as `sh run_NAME.sh DAWNRUN SOURCE_DIR`. They need the data
# ($DAWNRUN_DATA) and the sqlite3 shell, and exit 77 (skipped) without them.
file(GLOB RUN_SCRIPTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/run_*.sh)
# Instrumented (sanitizer) builds run about 2-4 times slower: the time limit grows with them.
set(cli_run_timeout 180)
if(DAWNRUN_SANITIZE)
  set(cli_run_timeout 600)
endif()
foreach(script ${RUN_SCRIPTS})
  get_filename_component(name ${script} NAME_WE)
  if(name STREQUAL "run_lib")
    continue()
  endif()
  add_test(NAME cli_${name} COMMAND sh ${script} $<TARGET_FILE:dawnrun> ${CMAKE_SOURCE_DIR})
  set_tests_properties(cli_${name} PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT ${cli_run_timeout})
  if(DAWNRUN_SANITIZE)
    set_tests_properties(cli_${name} PROPERTIES ENVIRONMENT "DAWNRUN_SANITIZE=${DAWNRUN_SANITIZE}")
  endif()
endforeach()
# the kill test trains a reference batch and a killed one (about 40 s on two idle cores)
if(TEST cli_run_killed)
  set_tests_properties(cli_run_killed PROPERTIES TIMEOUT 400)
endif()
# scripts/slurm-array.sh on a real single-node Slurm started by the test itself (root,
# Debian's slurm-wlm and munge); skipped (77), saying why, where the daemons cannot run
add_test(NAME slurm_real COMMAND bash ${CMAKE_SOURCE_DIR}/tests/slurm_real.sh
                                 $<TARGET_FILE:dawnrun> ${CMAKE_SOURCE_DIR})
set_tests_properties(slurm_real PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 420)

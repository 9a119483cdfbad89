# The curves and export commands, and the results store's faults at the command line.
# test_plot (made by tests.cmake from tests/test_plot.c) also compiles the SVG writer, its
# series and the learning-rate curve, and checks them in process; given the dawnrun executable it checks `dawnrun plot`.
# test_export checks the shared CSV/JSON writers in process and, given the executable,
# `dawnrun export`, parsing its output back with the strict readers of report_check.c.
# tests/run_faults.sh (read-only, full, corrupt, foreign and locked databases, SIGKILL
# in a batch) is registered with the other tests/run_*.sh by cases_run.cmake, as
# cli_run_faults.
target_sources(test_plot PRIVATE ${CMAKE_SOURCE_DIR}/runner/report/plot_svg.c
  ${CMAKE_SOURCE_DIR}/runner/report/plot_series.c ${CMAKE_SOURCE_DIR}/runner/report/plot_lr.c)
add_test(NAME plot_command COMMAND test_plot $<TARGET_FILE:dawnrun>)
set_tests_properties(plot_command PROPERTIES
  ENVIRONMENT "DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")

target_sources(test_export PRIVATE
  ${CMAKE_SOURCE_DIR}/runner/cli/output.c
  ${CMAKE_SOURCE_DIR}/tests/report_check.c)
add_test(NAME export_command COMMAND test_export $<TARGET_FILE:dawnrun>)
set_tests_properties(export_command PROPERTIES
  ENVIRONMENT "DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")

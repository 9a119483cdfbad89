# The batch report and the query commands. test_report (made by tests.cmake from
# tests/test_report.c) also compiles the runner's report sources, the sweep expansion,
# the epoch-table printer and the strict CSV/JSON readers; given the dawnrun executable
# it checks the commands (experiments, runs, show, report, merge and their error paths).
target_sources(test_report PRIVATE
  ${CMAKE_SOURCE_DIR}/runner/report/report.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_write.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_html.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_decision.c
  ${CMAKE_SOURCE_DIR}/runner/report/plot_svg.c
  ${CMAKE_SOURCE_DIR}/runner/report/plot_series.c
  ${CMAKE_SOURCE_DIR}/runner/report/plot_lr.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_group.c
  ${CMAKE_SOURCE_DIR}/runner/report/params.c
  ${CMAKE_SOURCE_DIR}/runner/cli/output.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_grid.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_find.c
  ${CMAKE_SOURCE_DIR}/runner/report/params.c
  ${CMAKE_SOURCE_DIR}/runner/sched/sweep.c
  ${CMAKE_SOURCE_DIR}/runner/cli/cli.c
  ${CMAKE_SOURCE_DIR}/tests/report_check.c)
add_test(NAME report_commands COMMAND test_report $<TARGET_FILE:dawnrun>)
set_tests_properties(report_commands PROPERTIES
  ENVIRONMENT "DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
# test_params (tests.cmake) also compiles the params helpers of the report commands.
target_sources(test_params PRIVATE ${CMAKE_SOURCE_DIR}/runner/report/params.c)
target_include_directories(test_params PRIVATE ${CMAKE_SOURCE_DIR})
# params.c writes JSON values through the shared writers of output.c.
target_sources(test_params PRIVATE ${CMAKE_SOURCE_DIR}/runner/cli/output.c)
# test_results_params (tests.cmake) stores, reads, merges and back-fills params: it also
# compiles the runner's params helpers (the flattened rows and the back-fill).
target_sources(test_results_params PRIVATE ${CMAKE_SOURCE_DIR}/runner/report/params.c
  ${CMAKE_SOURCE_DIR}/runner/cli/output.c)
target_include_directories(test_results_params PRIVATE ${CMAKE_SOURCE_DIR})
# test_selection (tests.cmake) builds a database with params through the results API and
# checks the selection, --where, the differing keys and `dawnrun diff` at the command line.
target_sources(test_selection PRIVATE ${CMAKE_SOURCE_DIR}/runner/report/params.c
  ${CMAKE_SOURCE_DIR}/runner/cli/output.c ${CMAKE_SOURCE_DIR}/tests/report_check.c)
target_include_directories(test_selection PRIVATE ${CMAKE_SOURCE_DIR})
add_test(NAME selection_commands COMMAND test_selection $<TARGET_FILE:dawnrun>)
set_tests_properties(selection_commands PROPERTIES
  ENVIRONMENT "DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
# The results page: test_report_html (tests.cmake) writes it in process with the report
# sources; given dawnrun it checks the command, -o and the errors; the browser test opens
# the command's page in headless Chromium (skipped, exit 77, when it is not installed).
target_sources(test_report_html PRIVATE
  ${CMAKE_SOURCE_DIR}/runner/report/report.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_write.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_html.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_decision.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_grid.c
  ${CMAKE_SOURCE_DIR}/runner/report/plot_svg.c
  ${CMAKE_SOURCE_DIR}/runner/report/plot_series.c
  ${CMAKE_SOURCE_DIR}/runner/report/plot_lr.c
  ${CMAKE_SOURCE_DIR}/runner/report/report_group.c
  ${CMAKE_SOURCE_DIR}/runner/report/params.c
  ${CMAKE_SOURCE_DIR}/runner/cli/output.c)
add_test(NAME report_html_command COMMAND test_report_html $<TARGET_FILE:dawnrun>)
set_tests_properties(report_html_command PROPERTIES
  ENVIRONMENT "DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
add_test(NAME report_html_browser
  COMMAND sh ${CMAKE_SOURCE_DIR}/tests/report_html_browser.sh $<TARGET_FILE:dawnrun>
          $<TARGET_FILE:test_report_html> ${CMAKE_BINARY_DIR}/report-html)
set_tests_properties(report_html_browser PROPERTIES SKIP_RETURN_CODE 77 TIMEOUT 300
  ENVIRONMENT "DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
# The sequential rule's simulation with 20,000 batches per case instead of the 4,000 of
# test_sequential (tests.cmake): about five times its time.
add_test(NAME sequential_long COMMAND test_sequential --long)
set_tests_properties(sequential_long PROPERTIES LABELS long TIMEOUT 600)

# Every tests/test_*.c is one executable and one ctest case. Exit code 77 = skipped
# (no device / no data). Data-dependent tests read DAWNRUN_DATA. Each is linked with the
# assertion helpers (check.c), the shared test support (support.c) and the frozen old
# versions of the results schema (tests/fixtures/schemas, embedded as schemas/ is:
# schema_results_v1_sql ...), from which tests build the databases of older versions.
dawnrun_embed_dir(TEST_SCHEMA_SOURCES ${CMAKE_SOURCE_DIR}/tests/fixtures/schemas)
add_library(dawnrun_test_schemas STATIC ${TEST_SCHEMA_SOURCES})
file(GLOB TEST_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/test_*.c)
foreach(src ${TEST_SOURCES})
  get_filename_component(name ${src} NAME_WE)
  add_executable(${name} ${src} ${CMAKE_SOURCE_DIR}/tests/check.c
    ${CMAKE_SOURCE_DIR}/tests/support.c)
  target_compile_options(${name} PRIVATE ${DAWNRUN_WARNINGS})
  target_link_libraries(${name} PRIVATE dawnrun_engines dawnrun_test_schemas)
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE 77
    ENVIRONMENT "DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
endforeach()
# Script-driven tests (goldens, CLI) live in tests/*.cmake fragments.
file(GLOB TEST_FRAGMENTS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/cases_*.cmake)
foreach(f ${TEST_FRAGMENTS})
  include(${f})
endforeach()

# The README on a fresh machine (tests/check_readme.py): its install lines are
# scripts/packages.txt, and every test case it names is registered in this build.
add_test(NAME readme_true
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/check_readme.py ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR})

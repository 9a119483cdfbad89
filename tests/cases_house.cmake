# The house rules of the source tree (tests/check_floors.py): includes point down the
# floors, the engine twins do not see each other, and no modules depend on each other in
# a loop, neither through headers nor through the symbols of the build's objects.
add_test(NAME house_floors
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/check_floors.py ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/CMakeFiles)

# The house rules of the source tree (tests/check_floors.py): includes point down the
# floors, the engine twins do not see each other, and no modules depend on each other in
# a loop, neither through headers nor through the symbols of the build's objects.
add_test(NAME house_floors
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/check_floors.py ${CMAKE_SOURCE_DIR}
                 ${CMAKE_BINARY_DIR}/CMakeFiles)

# Every kernel launch of the CUDA engine is counted (CHECK_LAUNCH after it) and no copy,
# synchronisation or allocation bypasses the counted helpers (kernels/counters.h); the
# second case checks that the check notices a launch left uncounted.
add_test(NAME cuda_launches_counted
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/check_launch_counted.py
                 ${CMAKE_SOURCE_DIR}/kernels/cuda)
add_test(NAME cuda_launches_counted_detects
         COMMAND python3 ${CMAKE_SOURCE_DIR}/tests/check_launch_counted.py --self-test
                 ${CMAKE_SOURCE_DIR}/kernels/cuda)

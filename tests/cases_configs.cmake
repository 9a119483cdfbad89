# Golden tests of the config error messages: one ctest per tests/configs/NAME.expected,
# running `dawnrun validate` on NAME.cfg through tests/golden.sh.
file(GLOB CONFIG_GOLDENS CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/tests/configs/*.expected)
foreach(expected ${CONFIG_GOLDENS})
  get_filename_component(name ${expected} NAME_WE)
  add_test(NAME golden_${name}
    COMMAND sh ${CMAKE_SOURCE_DIR}/tests/golden.sh $<TARGET_FILE:dawnrun>
            ${CMAKE_SOURCE_DIR}/tests/configs ${name})
endforeach()

# The experiment hash of every shipped config is pinned (tests/vectors/config-hashes.txt).
add_test(NAME config_hashes_pinned
         COMMAND ${CMAKE_SOURCE_DIR}/tests/config_hashes.sh $<TARGET_FILE:dawnrun> ${CMAKE_SOURCE_DIR})

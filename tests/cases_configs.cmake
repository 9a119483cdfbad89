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

# configs/airbench94-muon.cfg has the published airbench94_muon's parameter count: the
# parameters that require gradients in its CifarNet, 24 (whitening bias) + 13,824 +
# 36,864 + 147,456 + 3 x 589,824 (the six convolutions) + 1,152 (batch-norm shifts) +
# 2,560 (head) = 1,971,352; the 1,152 frozen batch-norm scales and the 288 whitening
# weights are the fixed ones (1,972,792 in all).
add_test(NAME config_airbench94_muon_params
         COMMAND $<TARGET_FILE:dawnrun> validate ${CMAKE_SOURCE_DIR}/configs/airbench94-muon.cfg)
set_tests_properties(config_airbench94_muon_params PROPERTIES PASS_REGULAR_EXPRESSION
  "trainable parameters +1,971,352\nfixed parameters +1,440 ")
# Muon's products per step, counted by hand: the filters as (64, 216), (64, 576),
# (256, 576) and three (256, 2304) matrices, 3 iterations of 4 p p q + 2 p p p each:
# 6,333,530,112 FLOPs; configs without Muon print no such line
add_test(NAME config_airbench94_muon_flops
         COMMAND $<TARGET_FILE:dawnrun> validate ${CMAKE_SOURCE_DIR}/configs/airbench94-muon.cfg)
set_tests_properties(config_airbench94_muon_flops PROPERTIES PASS_REGULAR_EXPRESSION
  "optimiser FLOPs/step +6[.]3335 GFLOP")
add_test(NAME config_airbench94_no_muon_flops
         COMMAND $<TARGET_FILE:dawnrun> validate ${CMAKE_SOURCE_DIR}/configs/airbench94.cfg)
set_tests_properties(config_airbench94_no_muon_flops PROPERTIES FAIL_REGULAR_EXPRESSION
  "optimiser FLOPs")

# The CPU convolution has two implementations chosen per shape and direction
# (kernels/cpu/conv2d_choose.c): the reference and gradient checks run once more with each
# forced through DAWNRUN_CPU_CONV, so that both stay correct whatever the rule picks.
foreach(impl im2col dnnl)
  foreach(t test_ops_ref test_ops_grad)
    add_test(NAME ${t}_${impl} COMMAND ${t})
    set_tests_properties(${t}_${impl} PROPERTIES SKIP_RETURN_CODE 77
      ENVIRONMENT "DAWNRUN_CPU_CONV=${impl};DAWNRUN_SOURCE_DIR=${CMAKE_SOURCE_DIR}")
  endforeach()
endforeach()

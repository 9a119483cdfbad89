# The CUDA engine's own logic, checked on a machine without a GPU: `dawnrun selfcheck`
# with the engine's .cu files compiled for the host under an emulated CUDA runtime and
# reference cuDNN/cuBLAS stand-ins (kernels/cuda/emu/run.sh), compared op by op with the
# CPU engine, in fp32. On a GPU machine test_cuda_selfcheck runs the real thing.
if(DAWNRUN_HAVE_CUDA)
  add_test(NAME cuda_emulated_selfcheck
           COMMAND ${CMAKE_SOURCE_DIR}/kernels/cuda/emu/run.sh ${CMAKE_BINARY_DIR} --precision fp32)
  set_tests_properties(cuda_emulated_selfcheck PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77)
endif()

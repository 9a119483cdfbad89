# The CUDA engine's own logic, checked on a machine without a GPU: `dawnrun selfcheck`
# with the engine's .cu files compiled for the host under an emulated CUDA runtime and
# reference cuDNN/cuBLAS stand-ins (tests/cuda_emu/run.sh), compared op by op with the
# CPU engine, in fp32. On a GPU machine test_cuda_selfcheck runs the real thing.
# run.sh builds the emulation under a lock, so the cases may run side by side.
# Without the CUDA engine in the build (DAWNRUN_HAVE_CUDA off: no nvcc, cuDNN or cuBLAS)
# these cases cannot run, but they stay in the suite and show as skipped in ctest's
# summary: while dawnrun_cuda_skip_reason is set, add_test registers each NAME as a case
# that prints the reason and exits 77 (properties apply as usual); any other add_test
# call is passed on unchanged, argument by argument.
set(dawnrun_cuda_skip_reason "")
if(NOT DAWNRUN_HAVE_CUDA)
  set(dawnrun_cuda_skip_reason
      "the CUDA engine is not built here (no nvcc, cuDNN or cuBLAS found at configure time)")
  get_property(wrapped GLOBAL PROPERTY dawnrun_add_test_wrapped)
  if(NOT wrapped)   # wrapping twice would make _add_test call itself
    set_property(GLOBAL PROPERTY dawnrun_add_test_wrapped 1)
    function(add_test)
      if(dawnrun_cuda_skip_reason AND ARGC GREATER 1 AND ARGV0 STREQUAL "NAME")
        _add_test(NAME ${ARGV1} COMMAND sh -c "echo \"skipped: $1\"; exit 77" sh
                  "${dawnrun_cuda_skip_reason}")
      else()
        set(call "_add_test(")
        math(EXPR last "${ARGC} - 1")
        foreach(i RANGE 0 ${last})
          string(APPEND call " [==[${ARGV${i}}]==]")
        endforeach()
        cmake_language(EVAL CODE "${call})")
      endif()
    endfunction()
  endif()
endif()
  add_test(NAME cuda_emulated_selfcheck
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu/run.sh ${CMAKE_BINARY_DIR} --precision fp32)
  set_tests_properties(cuda_emulated_selfcheck PROPERTIES LABELS long TIMEOUT 1800
                       SKIP_RETURN_CODE 77)
  # the cases that run whole steps, with fusion and CUDA graphs off: every plan node by
  # node from the host gives the same results (the plan group compares fused with unfused
  # itself, and the run above has both on)
  add_test(NAME cuda_emulated_selfcheck_unfused
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu/run.sh ${CMAKE_BINARY_DIR} --precision fp32
                   --only train,toolbox,augment_step,sgd_multi,lerp_multi,cursor_advance)
  set_tests_properties(cuda_emulated_selfcheck_unfused PROPERTIES LABELS long TIMEOUT 1800
                       SKIP_RETURN_CODE 77 ENVIRONMENT "DAWNRUN_CUDA_FUSE=0;DAWNRUN_CUDA_GRAPH=0")
  # cuDNN refusing a listed algorithm at execution: fall-through, and the final message
  foreach(mode fallthrough none)
    add_test(NAME cuda_emulated_conv_${mode}
             COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_conv_algos.sh ${CMAKE_BINARY_DIR} ${mode})
    set_tests_properties(cuda_emulated_conv_${mode} PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  endforeach()
  # the engine's counts as `dawnrun bench` prints them: present, above 0, deterministic
  add_test(NAME cuda_emulated_bench_counts
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_bench_counts.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_bench_counts PROPERTIES LABELS long TIMEOUT 1200
                       SKIP_RETURN_CODE 77)
  # what first use costs (fused graphs built and refused, their build time, algorithm
  # searches), with cuDNN's compile time rehearsed, the engine's cap on the configurations
  # tried per graph and its build budget (DAWNRUN_CUDA_FUSED_BUILD_S)
  add_test(NAME cuda_emulated_first_use
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_first_use.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_first_use PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
  # `dawnrun bench` stopped by SIGTERM during its timed steps says its warm-up, the steps
  # done and the first-use line so far
  add_test(NAME cuda_emulated_bench_signal
           COMMAND ${CMAKE_SOURCE_DIR}/tests/bench_signal.sh cuda ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_bench_signal PROPERTIES TIMEOUT 1200 SKIP_RETURN_CODE 77)
  # stream capture and graph replay as real CUDA does them, and what capture forbids
  add_test(NAME cuda_emulated_graph_capture
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu/run.sh --test ${CMAKE_BINARY_DIR}
                   ${CMAKE_SOURCE_DIR}/tests/cuda_emu/test_graph_capture.cu)
  set_tests_properties(cuda_emulated_graph_capture PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  # the engine's CUDA graphs of replayable plans: capture, replay, recapture, counts, an op
  # that cannot be captured (the step run eagerly, said once, the plan eager from then on),
  # and a freed plan forgotten (another built at its addresses warms up)
  add_test(NAME cuda_emulated_graph_run
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_graph_run.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_graph_run PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  # a training step of `dawnrun bench` is one graph launch and nothing else from the host
  add_test(NAME cuda_emulated_step_structure
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_step_structure.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_step_structure PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  # count-only mode (tests/cuda_emu/emu.h): nothing computed, everything else as always,
  # and the engine's counts unchanged by it
  add_test(NAME cuda_emulated_count_only
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu/run.sh --test ${CMAKE_BINARY_DIR}
                   ${CMAKE_SOURCE_DIR}/tests/cuda_emu/test_count_only.cu)
  set_tests_properties(cuda_emulated_count_only PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  # the emulated cuDNN backend graph API (tests/cuda_emu/emu_graph.cpp): the three fused
  # convolution graphs against a host computation, and the graphs and calls it refuses
  add_test(NAME cuda_emulated_cudnn_graph
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu/run.sh --test ${CMAKE_BINARY_DIR}
                   ${CMAKE_SOURCE_DIR}/tests/cuda_emu/test_cudnn_graph.cu)
  set_tests_properties(cuda_emulated_cudnn_graph PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  # the support table of the fused graphs (docs/cudnn-graphs.md): the docs print the code's
  # table, and the engine asks cuDNN for no graph the table refuses (the emulated cuDNN
  # serves exactly the table's graphs; cuda_emulated_cudnn_graph checks every row)
  add_test(NAME cuda_emulated_support_table
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_support_table.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_support_table PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  add_test(NAME cuda_emulated_support_asked
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_support_asked.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_support_asked PROPERTIES TIMEOUT 900 SKIP_RETURN_CODE 77)
  # the batch norm inside the convolutions, which the engine takes in the half precisions
  # only (docs/gpu.md, "Fused paths"): the training run and the plan cases in fp16, with the
  # fused graphs, and the plan cases again with the emulated cuDNN refusing every fused
  # graph (the engine falls back to its own batch-norm passes)
  add_test(NAME cuda_emulated_selfcheck_fp16
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu/run.sh ${CMAKE_BINARY_DIR} --precision fp16
                   --only train,plan)
  set_tests_properties(cuda_emulated_selfcheck_fp16 PROPERTIES LABELS long TIMEOUT 1800
                       SKIP_RETURN_CODE 77)
  # the same in bf16, where the support table leaves the batch norm to the engine's own
  # passes: the training run and the plan cases agree with the CPU twin
  add_test(NAME cuda_emulated_selfcheck_bf16
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu/run.sh ${CMAKE_BINARY_DIR} --precision bf16
                   --only train,plan)
  set_tests_properties(cuda_emulated_selfcheck_bf16 PROPERTIES LABELS long TIMEOUT 1800
                       SKIP_RETURN_CODE 77)
  add_test(NAME cuda_emulated_selfcheck_fused_refused
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu/run.sh ${CMAKE_BINARY_DIR} --precision fp16
                   --only plan)
  set_tests_properties(cuda_emulated_selfcheck_fused_refused PROPERTIES TIMEOUT 1200
                       SKIP_RETURN_CODE 77 ENVIRONMENT "DAWNRUN_EMU_CUDNN_FUSED_REFUSE=1")
  add_test(NAME cuda_emulated_count_only_same_counts
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_count_only.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_count_only_same_counts PROPERTIES LABELS long TIMEOUT 1200
                       SKIP_RETURN_CODE 77)
  # DAWNRUN_CUDA_FUSE_CONV=0 keeps everything out of cuDNN's fused graphs: DAWN_net's counts
  # as with every fused graph refused, and more than with them taken
  add_test(NAME cuda_emulated_fuse_conv_off
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_fuse_conv_off.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_fuse_conv_off PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  # bench/kernel-split.sh (a training step's own-kernel bytes by kernel, under gdb): its rows
  # add up to the bench's own count of the step
  add_test(NAME cuda_emulated_kernel_split
           COMMAND ${CMAKE_SOURCE_DIR}/tests/cuda_emu_kernel_split.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(cuda_emulated_kernel_split PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77)
  # no FMA contraction in the files that must match the CPU twin exactly
  add_test(NAME cuda_exact_files_uncontracted
           COMMAND ${CMAKE_SOURCE_DIR}/tests/check_uncontracted.sh
                   $<TARGET_OBJECTS:dawnrun_cuda_exact_ptx> COMMAND_EXPAND_LISTS)
  set_tests_properties(cuda_exact_files_uncontracted PROPERTIES SKIP_RETURN_CODE 77)
  # the GPU protocol end to end against the emulated engine (docs/gpu.md)
  add_test(NAME gpu_protocol_rehearsal
           COMMAND ${CMAKE_SOURCE_DIR}/tests/gpu_rehearsal.sh ${CMAKE_BINARY_DIR})
  set_tests_properties(gpu_protocol_rehearsal PROPERTIES LABELS long TIMEOUT 1500
                       SKIP_RETURN_CODE 77)
set(dawnrun_cuda_skip_reason "")

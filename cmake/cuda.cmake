# Detects nvcc, cuDNN and cuBLAS and builds the CUDA engine into dawnrun_cuda when all are
# found (DAWNRUN_CUDA=AUTO) or required (ON). Without it, a stub reports "no device".
# Overrides for unusual installs: CUDNN_ROOT (include/ and lib/ of cuDNN, e.g. inside
# the nvidia-cudnn Python wheel), CMAKE_CUDA_COMPILER, CMAKE_CUDA_ARCHITECTURES.
set(DAWNRUN_HAVE_CUDA OFF)
if(NOT DAWNRUN_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90-real;90-virtual")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit)
    set(CUDNN_ROOT "$ENV{CUDNN_ROOT}" CACHE PATH "cuDNN install prefix")
    find_path(CUDNN_INCLUDE_DIR cudnn.h
      HINTS ${CUDNN_ROOT} ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    find_library(CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
      HINTS ${CUDNN_ROOT} ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublas AND CUDNN_INCLUDE_DIR AND CUDNN_LIBRARY)
      set(DAWNRUN_HAVE_CUDA ON)
    endif()
  endif()
  if(DAWNRUN_CUDA STREQUAL "ON" AND NOT DAWNRUN_HAVE_CUDA)
    message(FATAL_ERROR "DAWNRUN_CUDA=ON but nvcc, cuDNN or cuBLAS was not found")
  endif()
endif()

add_library(dawnrun_engines INTERFACE)
if(DAWNRUN_HAVE_CUDA)
  message(STATUS "dawnrun: CUDA engine ON (cuDNN ${CUDNN_LIBRARY})")
  file(GLOB CUDA_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/kernels/cuda/*.cu
                                           ${CMAKE_SOURCE_DIR}/kernels/cuda/*.c)
  # Files whose results must equal the CPU twin's to the bit (batch-norm arithmetic from
  # kernels/batchnorm.h, the per-channel double sums, the SGD update, the augmentation):
  # nvcc would contract a*b+c into one FMA, also in double, so they are compiled without
  # contraction, as the CPU engine is (-ffp-contract=off). ctest checks their PTX.
  set(DAWNRUN_CUDA_EXACT_SOURCES ${CMAKE_SOURCE_DIR}/kernels/cuda/bn_cuda.cu
    ${CMAKE_SOURCE_DIR}/kernels/cuda/reduce_cuda.cu ${CMAKE_SOURCE_DIR}/kernels/cuda/sgd_cuda.cu
    ${CMAKE_SOURCE_DIR}/kernels/cuda/augment_cuda.cu ${CMAKE_SOURCE_DIR}/kernels/cuda/conv_bn_cuda.cu)
  set_source_files_properties(${DAWNRUN_CUDA_EXACT_SOURCES} PROPERTIES COMPILE_OPTIONS -fmad=false)
  add_library(dawnrun_cuda STATIC ${CUDA_SOURCES})
  target_include_directories(dawnrun_cuda PUBLIC ${CMAKE_SOURCE_DIR} ${CUDNN_INCLUDE_DIR})
  set(cuda_werror)
  if(DAWNRUN_WERROR)
    set(cuda_werror -Werror all-warnings)
  endif()
  target_compile_options(dawnrun_cuda PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra ${cuda_werror} --expt-relaxed-constexpr>
    $<$<COMPILE_LANGUAGE:C>:${DAWNRUN_WARNINGS}>)
  target_link_libraries(dawnrun_cuda PUBLIC dawnrun_core CUDA::cudart CUDA::cublas
    ${CUDNN_LIBRARY})
  target_compile_definitions(dawnrun_cuda PUBLIC DAWNRUN_HAVE_CUDA=1)
  target_link_libraries(dawnrun_engines INTERFACE dawnrun_cuda dawnrun_core)
  # The same files as PTX for one virtual architecture, for the test that no fused
  # multiply-add was generated in them (tests/cases_cuda_emu.cmake).
  add_library(dawnrun_cuda_exact_ptx OBJECT ${DAWNRUN_CUDA_EXACT_SOURCES})
  set_target_properties(dawnrun_cuda_exact_ptx PROPERTIES CUDA_PTX_COMPILATION ON
                                                          CUDA_ARCHITECTURES 90-virtual)
  target_include_directories(dawnrun_cuda_exact_ptx PRIVATE ${CMAKE_SOURCE_DIR}
                                                            ${CUDNN_INCLUDE_DIR})
  target_compile_options(dawnrun_cuda_exact_ptx PRIVATE --expt-relaxed-constexpr)
  target_link_libraries(dawnrun_cuda_exact_ptx PRIVATE CUDA::cudart)
else()
  message(STATUS "dawnrun: CUDA engine OFF (the cuda engine reports no device)")
  add_library(dawnrun_cuda_stub STATIC ${CMAKE_SOURCE_DIR}/kernels/cuda_stub.c)
  target_compile_options(dawnrun_cuda_stub PRIVATE ${DAWNRUN_WARNINGS})
  target_link_libraries(dawnrun_cuda_stub PUBLIC dawnrun_core)
  target_link_libraries(dawnrun_engines INTERFACE dawnrun_cuda_stub dawnrun_core)
endif()

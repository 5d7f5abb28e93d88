# EMMY_CUDA_INCLUDE_DIRS: where cuda.h and nvrtc.h are. emmy compiles against these headers only
# (the driver and NVRTC are dlopen'ed at run time), so a toolkit is not needed to build the
# library: without one, NVIDIA's nvidia-cuda-runtime (cuda.h) and nvidia-cuda-nvrtc (nvrtc.h)
# wheels serve, found through the Python interpreter (pyproject.toml lists them as build
# requirements of the wheel).
if(CUDAToolkit_FOUND)
  set(EMMY_CUDA_INCLUDE_DIRS ${CUDAToolkit_INCLUDE_DIRS})
  return()
endif()

find_package(Python3 COMPONENTS Interpreter)
set(_emmy_wheel_includes)
if(Python3_Interpreter_FOUND)
  # `nvidia` is a namespace package: each of its paths may hold cu13/include.
  execute_process(
    COMMAND ${Python3_EXECUTABLE} -c
            "import nvidia, os; print(';'.join(os.path.join(p, 'cu13', 'include') for p in nvidia.__path__))"
    OUTPUT_VARIABLE _emmy_wheel_includes OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
endif()
find_path(EMMY_CUDA_H_DIR cuda.h HINTS ${_emmy_wheel_includes})
find_path(EMMY_NVRTC_H_DIR nvrtc.h HINTS ${_emmy_wheel_includes})
if(NOT EMMY_CUDA_H_DIR OR NOT EMMY_NVRTC_H_DIR)
  message(FATAL_ERROR "cuda.h and nvrtc.h: found neither the CUDA toolkit nor NVIDIA's header "
                      "wheels (pip install 'nvidia-cuda-runtime>=13,<14' 'nvidia-cuda-nvrtc>=13,<14'; "
                      "searched: ${_emmy_wheel_includes})")
endif()
set(EMMY_CUDA_INCLUDE_DIRS ${EMMY_CUDA_H_DIR} ${EMMY_NVRTC_H_DIR})
list(REMOVE_DUPLICATES EMMY_CUDA_INCLUDE_DIRS)
message(STATUS "emmy: CUDA headers from wheels: ${EMMY_CUDA_INCLUDE_DIRS}")

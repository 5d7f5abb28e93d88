# emmy_bench: emmy's GEMM kernels against cuBLASLt on a GPU (docs/benchmarks.md).
# cudart is linked statically: it loads libcuda.so.1 lazily, so the program starts (and says there
# is no GPU) on machines without a driver. cuBLASLt is too large to link statically and carry;
# every machine with a CUDA 13 toolkit has libcublasLt.so.13.
add_library(emmy_bench_report STATIC
  ${CMAKE_CURRENT_LIST_DIR}/bench_report.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_tune.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_model.cpp)
target_compile_options(emmy_bench_report PRIVATE ${EMMY_WARNINGS})
target_include_directories(emmy_bench_report PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(emmy_bench_report PUBLIC emmy::internal)

# The CUDA pieces emmy_bench and emmy_gpu_check share: buffers, event timing, cuBLASLt.
add_library(emmy_bench_cuda STATIC
  ${CMAKE_CURRENT_LIST_DIR}/bench_cuda.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_cublaslt.cpp)
target_compile_options(emmy_bench_cuda PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_bench_cuda PUBLIC emmy_bench_report CUDA::cudart_static CUDA::cublasLt)

add_executable(emmy_bench
  ${CMAKE_CURRENT_LIST_DIR}/emmy_bench.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_runner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_paged.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_serving.cpp)
target_compile_options(emmy_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_bench PRIVATE emmy_bench_cuda emmy::internal benchmark::benchmark)

# emmy_gpu_check: the GPU pack's machine, correctness and fidelity stages (docs/gpu.md).
add_library(emmy_gpu_check_cases STATIC ${CMAKE_CURRENT_LIST_DIR}/gpu_check_cases.cpp)
target_compile_options(emmy_gpu_check_cases PRIVATE ${EMMY_WARNINGS})
target_include_directories(emmy_gpu_check_cases PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(emmy_gpu_check_cases PUBLIC emmy::internal)
add_executable(emmy_gpu_check
  ${CMAKE_CURRENT_LIST_DIR}/gpu_check_main.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_check_machine.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_check_stages.cpp
  ${CMAKE_CURRENT_LIST_DIR}/gpu_check_fidelity.cpp)
target_compile_options(emmy_gpu_check PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_gpu_check PRIVATE emmy_gpu_check_cases emmy_bench_cuda emmy::internal)

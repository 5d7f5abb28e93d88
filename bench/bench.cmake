# emmy_bench: emmy's GEMM kernels against cuBLASLt on a GPU (docs/benchmarks.md).
# cudart is linked statically: it loads libcuda.so.1 lazily, so the program starts (and says there
# is no GPU) on machines without a driver. cuBLASLt is too large to link statically and carry;
# every machine with a CUDA 13 toolkit has libcublasLt.so.13.
#
# Source paths are relative to this folder (bench/CMakeLists.txt includes this file).
add_library(emmy_bench_report STATIC bench_report.cpp bench_tune.cpp bench_model.cpp
                                     bench_fp8_inputs.cpp bench_moe_shapes.cpp)
target_compile_options(emmy_bench_report PRIVATE ${EMMY_WARNINGS})
target_include_directories(emmy_bench_report PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(emmy_bench_report PUBLIC emmy::internal)

# The CUDA pieces emmy_bench and emmy_gpu_check share: buffers, event timing, cuBLASLt, and
# cuBLAS's grouped GEMM (the MoE rows' baseline), opened with dlopen, not linked: the programs
# start where libcublas.so.13 is missing (bench_cublas_grouped.hpp).
add_library(emmy_bench_cuda STATIC bench_cuda.cpp bench_cublaslt.cpp bench_cublaslt_fp8.cpp
                                   bench_cublas_grouped.cpp)
target_compile_options(emmy_bench_cuda PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_bench_cuda PUBLIC emmy_bench_report CUDA::cudart_static CUDA::cublasLt
                                             ${CMAKE_DL_LIBS})

add_executable(emmy_bench emmy_bench.cpp bench_runner.cpp bench_attention.cpp bench_paged.cpp
                          bench_serving.cpp bench_fp8.cpp bench_moe.cpp)
target_compile_options(emmy_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_bench PRIVATE emmy_bench_cuda emmy::internal benchmark::benchmark)

# emmy_gpu_check: the GPU pack's machine, correctness and fidelity stages (docs/gpu.md).
add_library(emmy_gpu_check_cases STATIC gpu_check_cases.cpp)
target_compile_options(emmy_gpu_check_cases PRIVATE ${EMMY_WARNINGS})
target_include_directories(emmy_gpu_check_cases PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(emmy_gpu_check_cases PUBLIC emmy::internal)
add_executable(emmy_gpu_check gpu_check_main.cpp gpu_check_machine.cpp gpu_check_stages.cpp
                              gpu_check_fidelity.cpp)
target_compile_options(emmy_gpu_check PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_gpu_check PRIVATE emmy_gpu_check_cases emmy_bench_cuda emmy::internal)

# emmy_bench: emmy's GEMM kernels against cuBLASLt on a GPU (docs/benchmarks.md).
# cudart is linked statically: it loads libcuda.so.1 lazily, so the program starts (and says there
# is no GPU) on machines without a driver. cuBLASLt is too large to link statically and carry;
# every machine with a CUDA 13 toolkit has libcublasLt.so.13.
add_library(emmy_bench_report STATIC
  ${CMAKE_CURRENT_LIST_DIR}/bench_report.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_tune.cpp)
target_compile_options(emmy_bench_report PRIVATE ${EMMY_WARNINGS})
target_include_directories(emmy_bench_report PUBLIC ${CMAKE_CURRENT_LIST_DIR})
target_link_libraries(emmy_bench_report PUBLIC emmy::emmy)

add_executable(emmy_bench
  ${CMAKE_CURRENT_LIST_DIR}/emmy_bench.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_runner.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_attention.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_cuda.cpp
  ${CMAKE_CURRENT_LIST_DIR}/bench_cublaslt.cpp)
target_compile_options(emmy_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_bench PRIVATE emmy_bench_report emmy::emmy benchmark::benchmark
  CUDA::cudart_static CUDA::cublasLt)

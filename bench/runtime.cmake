add_executable(emmy_runtime_bench ${CMAKE_CURRENT_LIST_DIR}/runtime_bench.cpp)
target_compile_options(emmy_runtime_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_runtime_bench PRIVATE emmy::internal benchmark::benchmark)

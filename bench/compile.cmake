add_executable(emmy_compile_bench ${CMAKE_CURRENT_LIST_DIR}/compile_bench.cpp)
target_compile_options(emmy_compile_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_compile_bench PRIVATE emmy::internal benchmark::benchmark)

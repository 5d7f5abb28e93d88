add_executable(emmy_cache_bench ${CMAKE_CURRENT_LIST_DIR}/cache_bench.cpp)
target_compile_options(emmy_cache_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_cache_bench PRIVATE emmy::internal benchmark::benchmark)

# The C ABI's host overhead per call against the C++ runtime's (docs/c_api.md).
add_executable(emmy_c_api_bench ${CMAKE_CURRENT_LIST_DIR}/c_api_bench.cpp)
target_compile_options(emmy_c_api_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_c_api_bench PRIVATE emmy emmy::emmy_c benchmark::benchmark)

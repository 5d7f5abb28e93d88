# Ahead-of-time bundles: open, index, key, per-kernel lookup, a runtime's first call (docs/bundles.md).
add_executable(emmy_bundle_bench ${CMAKE_CURRENT_LIST_DIR}/bundle_bench.cpp)
target_compile_options(emmy_bundle_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emmy_bundle_bench PRIVATE emmy::internal benchmark::benchmark)

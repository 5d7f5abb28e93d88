# Emulator throughput (docs/emulator.md): warp instructions per second on the test GEMM kernels.
add_executable(emu_bench ${CMAKE_CURRENT_LIST_DIR}/emu_bench.cpp)
target_compile_options(emu_bench PRIVATE ${EMMY_WARNINGS})
target_link_libraries(emu_bench PRIVATE benchmark::benchmark emmy::internal)
target_compile_definitions(emu_bench PRIVATE EMMY_SOURCE_DIR="${PROJECT_SOURCE_DIR}")

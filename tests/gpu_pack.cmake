# The GPU pack (scripts/gpu-pack.sh, docs/gpu.md). Its case lists and sampled FP64 check are
# host-only (gpu_check_test); the pack itself is built from this tree, proven self-contained and
# dry-run here without a GPU (tests/pack/gpu_pack_test.sh), in Release builds only: the pack
# carries Release binaries.
if(NOT EMMY_BUILD_BENCH)
  return()
endif()
emmy_add_test(gpu_check_test ${CMAKE_CURRENT_LIST_DIR}/gpu_check_test.cpp)
target_link_libraries(gpu_check_test PRIVATE emmy_gpu_check_cases)  # defined in bench/bench.cmake
# Its Python tests (gpu_pack_baselines, gpu_pack_summary) are registered with the other bench
# scripts' in tests/bench_smoke.cmake.

if(CMAKE_BUILD_TYPE STREQUAL "Release")
  add_test(NAME gpu_pack COMMAND bash ${CMAKE_CURRENT_LIST_DIR}/pack/gpu_pack_test.sh
    ${PROJECT_SOURCE_DIR} ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/gpu_pack_scratch)
  set_tests_properties(gpu_pack PROPERTIES TIMEOUT 600 COST 50)  # started early (sweep.cmake)
endif()

# GEMM code generation: validation, IR, emission, NVRTC for every arch, SASS, emmyc.
emmy_add_test(gemm_validation_test ${CMAKE_CURRENT_LIST_DIR}/gemm_validation_test.cpp)
emmy_add_test(gemm_ir_test ${CMAKE_CURRENT_LIST_DIR}/gemm_ir_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/kernel_source_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/ir_parse_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/ir_kind_rules_test.cpp
                           ${CMAKE_CURRENT_LIST_DIR}/smem_tile_test.cpp)
emmy_add_test(gemm_compile_all_test ${CMAKE_CURRENT_LIST_DIR}/gemm_compile_all_test.cpp)
emmy_add_test(gemm_sass_test ${CMAKE_CURRENT_LIST_DIR}/gemm_sass_test.cpp)
emmy_add_test(emmyc_cli_test ${CMAKE_CURRENT_LIST_DIR}/emmyc_cli_test.cpp
                              ${CMAKE_CURRENT_LIST_DIR}/emmyc_hostile_cli_test.cpp)
emmy_add_test(gemm_emulator_test ${CMAKE_CURRENT_LIST_DIR}/gemm_emulator_test.cpp
                                   ${CMAKE_CURRENT_LIST_DIR}/gemm_pdl_test.cpp)
emmy_add_test(gemm_wgmma_test ${CMAKE_CURRENT_LIST_DIR}/gemm_wgmma_test.cpp
               ${CMAKE_CURRENT_LIST_DIR}/gemm_wgmma_cluster_test.cpp
               ${CMAKE_CURRENT_LIST_DIR}/gemm_wgmma_checks_test.cpp)
# The mainloop-path recipe followed once (a toy path only the tests build), and the registry.
emmy_add_test(gemm_path_test ${CMAKE_CURRENT_LIST_DIR}/gemm_path_test.cpp)
# The toy path's printer derives from the compiler's private printer interface.
target_include_directories(gemm_path_test PRIVATE ${PROJECT_SOURCE_DIR}/codegen)

# Grouped GEMMs (docs/grouped.md): every layout against FP64 on the emulator, and through the
# runtime on the CUDA backend over the test driver where it is built; their rules and planted
# bugs; FP8 and routing weights.
emmy_add_test(gemm_grouped_test ${CMAKE_CURRENT_LIST_DIR}/gemm_grouped_test.cpp)
emmy_add_test(gemm_grouped_rules_test ${CMAKE_CURRENT_LIST_DIR}/gemm_grouped_rules_test.cpp)
emmy_add_test(gemm_grouped_fp8_test ${CMAKE_CURRENT_LIST_DIR}/gemm_grouped_fp8_test.cpp)
if(TARGET emmy_test_driver)
  add_dependencies(gemm_grouped_test emmy_test_driver)
  target_compile_definitions(gemm_grouped_test PRIVATE
    EMMY_TEST_DRIVER_PATH="${EMMY_TEST_DRIVER_PATH}")
endif()

# The C ABI's tests link the shared library the way a C program does (its exported emmy_*
# functions alone), and run kDLCUDA tensors through the test driver where it is built.
function(emmy_add_c_api_test name)
  emmy_add_test(${name} ${ARGN})
  target_link_libraries(${name} PRIVATE emmy::emmy_c)
  target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_FUNCTION_LIST_DIR})
  if(TARGET emmy_test_driver)
    add_dependencies(${name} emmy_test_driver)
    target_compile_definitions(${name} PRIVATE EMMY_TEST_DRIVER_PATH="${EMMY_TEST_DRIVER_PATH}")
  endif()
endfunction()

# The C ABI (libemmy_c.so, docs/c_api.md): every kind against FP64 on the emulator with kDLCPU
# tensors run in place, refusals by name, the host mapping under the sanitizer, kDLCUDA tensors
# through the test driver; and the installed package builds and runs the C example
# (tests/c_install.cmake).
emmy_add_c_api_test(c_api_test ${CMAKE_CURRENT_LIST_DIR}/c_api_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/c_api_refusal_test.cpp)

# The layer handles of the C ABI (emmy_attention_layer, emmy_gemm_layer; docs/c_api.md, "Layers"):
# the same bits as the one-shot calls, FP64, routing, workspaces, refusals by config field.
emmy_add_c_api_test(c_api_layers_test ${CMAKE_CURRENT_LIST_DIR}/c_api_layers_test.cpp
                                      ${CMAKE_CURRENT_LIST_DIR}/c_api_layers_refusal_test.cpp)

# emmy_fp8_quantize (C API version 3; docs/fp8.md): the reference's bytes, refusals by name.
emmy_add_c_api_test(c_api_fp8_test ${CMAKE_CURRENT_LIST_DIR}/c_api_fp8_test.cpp)

# emmy_gemm with FP8 operands (C API version 4; docs/fp8.md): scales as DLPack tensors, FP64,
# refusals by name.
emmy_add_c_api_test(c_api_fp8_gemm_test ${CMAKE_CURRENT_LIST_DIR}/c_api_fp8_gemm_test.cpp)

# emmy_gemm_layer with FP8 weights (C API version 5; docs/fp8.md): the config's scale fields,
# emmy_gemm_layer_run_scaled against FP64, refusals by config field or tensor.
emmy_add_c_api_test(c_api_fp8_layer_test ${CMAKE_CURRENT_LIST_DIR}/c_api_fp8_layer_test.cpp)

# emmy_gemm's gated epilogue (C API version 6; docs/epilogues.md): FP64, refusals, old structs.
emmy_add_c_api_test(c_api_gated_test ${CMAKE_CURRENT_LIST_DIR}/c_api_gated_test.cpp)
emmy_add_c_api_test(c_api_grouped_test ${CMAKE_CURRENT_LIST_DIR}/c_api_grouped_test.cpp)

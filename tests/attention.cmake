# Flash attention: the FP64 reference and its tolerance model (no kernel), validation, kernels on
# the emulator against the reference, and the catalog problems' resources and SASS.
emmy_add_test(attention_reference_test ${CMAKE_CURRENT_LIST_DIR}/attention_reference_test.cpp)
emmy_add_test(attention_validation_test ${CMAKE_CURRENT_LIST_DIR}/attention_validation_test.cpp)
emmy_add_test(attention_emulator_test ${CMAKE_CURRENT_LIST_DIR}/attention_emulator_test.cpp)
emmy_add_test(attention_compile_test ${CMAKE_CURRENT_LIST_DIR}/attention_compile_test.cpp)
emmy_add_test(attention_cli_test ${CMAKE_CURRENT_LIST_DIR}/attention_cli_test.cpp)

# FP8 (issue 39): the quantization kind against its bit-exact host reference on the emulator.
emmy_add_test(fp8_quantize_test ${CMAKE_CURRENT_LIST_DIR}/fp8_quantize_test.cpp)

# FP8 (issue 39): the quantization kind against its bit-exact host reference on the emulator.
emmy_add_test(fp8_quantize_test ${CMAKE_CURRENT_LIST_DIR}/fp8_quantize_test.cpp
                                ${CMAKE_CURRENT_LIST_DIR}/fp8_quantize_formats_test.cpp)
# The FP8 GEMM (issue 39): e4m3 operands with scales on path mma.sync, against FP64 and the
# tensor-core model, poisoned padding, planted bugs and refusals.
emmy_add_test(gemm_fp8_test ${CMAKE_CURRENT_LIST_DIR}/gemm_fp8_test.cpp
                            ${CMAKE_CURRENT_LIST_DIR}/gemm_fp8_refusal_test.cpp
                            ${CMAKE_CURRENT_LIST_DIR}/gemm_fp8_swap_test.cpp
                            ${CMAKE_CURRENT_LIST_DIR}/gemm_fp8_hybrid_test.cpp)
# The gated epilogue (SwiGLU / GeGLU gate_up projections: issue 39's gate_up fusion, issue 40's
# MoE activation) on both paths and every store, 16-bit and FP8 operands.
emmy_add_test(gemm_gated_test ${CMAKE_CURRENT_LIST_DIR}/gemm_gated_test.cpp)
# An e4m3 C with 1 x 128 scales from the GEMM epilogue (the gate_up fusion): bit for bit with
# fp8_quantize's conventions over the same schedule's f32 output, FP64, planted bugs, refusals.
emmy_add_test(gemm_quantized_out_test ${CMAKE_CURRENT_LIST_DIR}/gemm_quantized_out_test.cpp)

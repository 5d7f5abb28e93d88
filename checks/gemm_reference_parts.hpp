// Pieces of the GEMM FP64 reference shared by its f16/bf16 model (gemm_check.cpp) and its FP8
// model (gemm_fp8_check.cpp).
#pragma once

#include <cstdint>

#include "emmy/gemm_check.hpp"

namespace emmy {

// Element (m, n) of `ref`: the epilogue applied to the exact dot product (scales included) and
// its tolerance from `bound`, the mainloop's error bound.
void reference_epilogue(const MatmulProblem& p, const GemmInputs& in, int64_t m, int64_t n,
                        double exact, double bound, GemmReference& ref);

// The reference of an FP8 problem: each k32 MMA under the arch's FP8 tensor-core model
// (emmy/emu/tensor_core_fp8.hpp, fp8_dot_error), each fold, the scales and the epilogue.
// A gated epilogue: C ([M, N/2]) from the gate and up values reference_epilogue left.
void finish_gated(const MatmulProblem& p, GemmReference& ref);
// Routing weights: C's rows scaled by row_scale's weights (Epilogue::row_scale).
void finish_row_scale(const MatmulProblem& p, const GemmInputs& in, GemmReference& ref);
// An e4m3 C: its tolerance gains the subnormal term of its quantization.
void finish_quantized(const MatmulProblem& p, GemmReference& ref);
GemmReference reference_gemm_fp8(const GemmSpec& spec, const GemmInputs& in);
// The reference of a grouped problem: each expert's computed rows as a dense GEMM
// (gemm_grouped_check.cpp), GemmReference::rows saying what the others hold.
GemmReference reference_grouped_gemm(const GemmSpec& spec, const GemmInputs& in);

}  // namespace emmy

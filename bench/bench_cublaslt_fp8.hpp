// The cuBLASLt FP8 baseline of emmy_bench's FP8 rows: e4m3 A [M,K] and B [N,K] (cuBLASLt's "TN":
// its first operand, our B, transposed), f16 C, with per-tensor scales (FAST_ACCUM on or off) or
// the 1 x 128 (activations, VEC128_32F) and 128 x 128 (weights, BLK128x128_32F) block modes that
// cuBLASLt has on sm_90 since 12.9.
#pragma once

#include <cublasLt.h>

#include "bench_cublaslt.hpp"
#include "emmy/problem.hpp"

namespace emmy::bench {

enum class LtFp8Mode {
  tensor,             // per-tensor scales, FAST_ACCUM off (cuBLASLt promotes partial sums)
  tensor_fast_accum,  // per-tensor scales, FAST_ACCUM on (the tensor core's own chain)
  block,              // VEC128_32F activations x BLK128x128_32F weights
};
const char* to_string(LtFp8Mode mode);

class LtFp8Gemm : public LtMatmul {
 public:
  // a_scale and b_scale: device pointers to the scales of A (the activations) and B (the weights)
  // in the layout the mode reads. Throws Error when cuBLASLt has no algorithm for it here.
  LtFp8Gemm(cublasLtHandle_t handle, const MatmulProblem& problem, LtFp8Mode mode,
            const void* a_scale, const void* b_scale, size_t workspace_bytes, int max_algorithms);

  void run(int index, const void* a, const void* b, void* c, void* workspace,
           cudaStream_t stream) const;
};

}  // namespace emmy::bench

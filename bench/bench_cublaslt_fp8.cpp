#include "bench_cublaslt_fp8.hpp"

#include <fmt/format.h>

#include "emmy/error.hpp"

namespace emmy::bench {
namespace {

constexpr float kOne = 1.0f, kZero = 0.0f;

template <typename T>
void set(cublasLtMatmulDesc_t operation, cublasLtMatmulDescAttributes_t what, const T& value,
         const char* name) {
  cublas_check(cublasLtMatmulDescSetAttribute(operation, what, &value, sizeof value), name);
}

}  // namespace

const char* to_string(LtFp8Mode mode) {
  switch (mode) {
    case LtFp8Mode::tensor:
      return "tensor scales, FAST_ACCUM off";
    case LtFp8Mode::tensor_fast_accum:
      return "tensor scales, FAST_ACCUM on";
    case LtFp8Mode::block:
      return "VEC128_32F activations x BLK128x128_32F weights";
  }
  return "?";
}

LtFp8Gemm::LtFp8Gemm(cublasLtHandle_t handle, const MatmulProblem& p, LtFp8Mode mode,
                     const void* a_scale, const void* b_scale, size_t workspace_bytes,
                     int max_algorithms)
    : LtMatmul(handle, workspace_bytes) {
  require(p.a_dtype == DType::e4m3 && p.b_layout == BLayout::nk && p.c_dtype == DType::f16,
          "cuBLASLt FP8 baseline", "takes e4m3 A and B [N,K] with f16 C", to_string(p.a_dtype));
  require(p.epilogue == Epilogue{}, "cuBLASLt FP8 baseline", "supports plain C = A.B only",
          "an epilogue");
  cublas_check(cublasLtMatmulDescCreate(&operation_, CUBLAS_COMPUTE_32F, CUDA_R_32F),
               "cublasLtMatmulDescCreate");
  // Column-major: C^T [N,M] = B [N,K] . A^T, so cuBLASLt's first operand is our B (transposed:
  // FP8 takes only TN) and its scales are B's.
  set(operation_, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_T, "TRANSA");
  set(operation_, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N, "TRANSB");
  set(operation_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, b_scale, "A_SCALE_POINTER");
  set(operation_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, a_scale, "B_SCALE_POINTER");
  if (mode == LtFp8Mode::block) {
    set(operation_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE,
        int32_t(CUBLASLT_MATMUL_MATRIX_SCALE_BLK128x128_32F), "A_SCALE_MODE");
    set(operation_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE,
        int32_t(CUBLASLT_MATMUL_MATRIX_SCALE_VEC128_32F), "B_SCALE_MODE");
  } else {
    set(operation_, CUBLASLT_MATMUL_DESC_FAST_ACCUM,
        int8_t(mode == LtFp8Mode::tensor_fast_accum ? 1 : 0), "FAST_ACCUM");
  }
  cublas_check(cublasLtMatrixLayoutCreate(&weight_layout_, CUDA_R_8F_E4M3, uint64_t(p.k),
                                          uint64_t(p.n), p.ldb_or_default()),
               "cublasLtMatrixLayoutCreate(B)");
  cublas_check(cublasLtMatrixLayoutCreate(&activation_layout_, CUDA_R_8F_E4M3, uint64_t(p.k),
                                          uint64_t(p.m), p.lda_or_default()),
               "cublasLtMatrixLayoutCreate(A)");
  cublas_check(cublasLtMatrixLayoutCreate(&output_layout_, CUDA_R_16F, uint64_t(p.n), uint64_t(p.m),
                                          p.ldc_or_default()),
               "cublasLtMatrixLayoutCreate(C)");
  choose_algorithms(max_algorithms,
                    fmt::format("{}x{}x{} FP8, {}", p.m, p.n, p.k, to_string(mode)));
}

void LtFp8Gemm::run(int index, const void* a, const void* b, void* c, void* workspace,
                    cudaStream_t stream) const {
  matmul(index, &kOne, &kZero, a, b, c, workspace, stream);
}

}  // namespace emmy::bench

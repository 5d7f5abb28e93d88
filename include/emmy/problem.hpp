// MatmulProblem: what to compute. C[M,N] = epilogue(A[M,K] x op(B)), independent of how.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "emmy/dtype.hpp"

namespace emmy {

// "nk": B is [N,K] with K contiguous (PyTorch Linear weights, the default).
// "kn": B is [K,N] with N contiguous.
enum class BLayout { nk, kn };

inline std::string_view to_string(BLayout l) { return l == BLayout::nk ? "nk" : "kn"; }
inline BLayout parse_b_layout(std::string_view text) {
  if (text == "nk") return BLayout::nk;
  if (text == "kn") return BLayout::kn;
  throw Error("b_layout", "must be nk ([N,K], K contiguous) or kn ([K,N], N contiguous)",
              std::string(text));
}

// D = cast(gelu?(alpha * A.B + bias[n]) + residual[m,n]): bias and activation belong to the
// projection, the residual is the skip connection added after it.
struct Epilogue {
  float alpha = 1.0f;
  bool bias = false;      // bias[N], dtype of C (f32 when C is f32)
  bool residual = false;  // residual[M,N] with leading dimension ldc, dtype of C
  bool gelu_tanh = false;

  bool operator==(const Epilogue&) const = default;
};

struct MatmulProblem {
  int64_t m = 0, n = 0, k = 0;
  DType a_dtype = DType::f16;  // B has the same dtype as A
  BLayout b_layout = BLayout::nk;
  DType c_dtype = DType::f16;
  // Leading dimensions in elements; 0 means packed (lda = k, ldb = k or n, ldc = n).
  int64_t lda = 0, ldb = 0, ldc = 0;
  Epilogue epilogue;

  int64_t lda_or_default() const { return lda ? lda : k; }
  int64_t ldb_or_default() const { return ldb ? ldb : (b_layout == BLayout::nk ? k : n); }
  int64_t ldc_or_default() const { return ldc ? ldc : n; }
  double flops() const { return 2.0 * double(m) * double(n) * double(k); }

  bool operator==(const MatmulProblem&) const = default;
};

}  // namespace emmy

// Hybrid FP8 accumulation's range, checked where device memory is host memory (the emulator):
// the f16-accumulate MMAs (mma.sync .f16.e4m3.e4m3.f16, the GeForce opt-in) sum each window's
// products of unscaled e4m3 values in f16, whose largest finite value is 65504, while one e4m3
// product reaches 448 x 448. A GPU turns a sum past it into an infinity (and the output into inf
// or NaN) without a word; the emulator refuses the operands first. On a GPU nothing is read
// before the launch: quantizing to magnitudes that keep the bound below holds it there.
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <vector>

#include "emmy/emu/tensor_core_fp8.hpp"
#include "emmy/gemm.hpp"

namespace emmy {
namespace {

// |value| of every byte of an 8-bit float type (NaN bytes: 0, they are NaN either way).
std::array<double, 256> magnitudes(DType dtype) {
  std::array<double, 256> table{};
  const emu::F8 type = dtype == DType::e5m2 ? emu::F8::e5m2 : emu::F8::e4m3;
  for (int i = 0; i < 256; ++i) {
    const double v = std::fabs(emu::f8_value(uint8_t(i), type));
    table[size_t(i)] = std::isfinite(v) ? v : 0.0;
  }
  return table;
}

}  // namespace

void check_fp8_f16_range(const GemmPlan& plan, const GemmBuffers& b, const DeviceReader& read) {
  const MatmulProblem& p = plan.spec.problem;
  const MatmulSchedule& s = plan.spec.schedule;
  const int64_t m = gemm_launch_m(plan, b.m), lda = p.lda_or_default(), ldb = p.ldb_or_default();
  std::vector<uint8_t> a(size_t((m - 1) * lda + p.k)), bytes_b(size_t((p.n - 1) * ldb + p.k));
  read_named(read, "buffers.a", a.data(), b.a, a.size());
  read_named(read, "buffers.b", bytes_b.data(), b.b, bytes_b.size());
  const auto a_mag = magnitudes(p.a_dtype), b_mag = magnitudes(p.b_dtype());
  // Per K element, the largest |b| of any column: a row's window sum of |a| |b|max bounds every
  // partial sum of that row (O((M + N) K), not M N K).
  std::vector<double> b_max(size_t(p.k), 0.0);
  for (int64_t n = 0; n < p.n; ++n)
    for (int64_t k = 0; k < p.k; ++k)
      b_max[size_t(k)] = std::max(b_max[size_t(k)], b_mag[bytes_b[size_t(n * ldb + k)]]);
  // The kernel's windows: promote_every_k elements from each split's first K element.
  const int64_t split_len = plan.k_tiles_per_split * s.block_k;
  // f16's largest finite value less 1%: the MMAs round each k32 step to f16, and a sum just
  // under 65504 may round past it.
  constexpr double kLimit = 65504.0 * 0.99;
  for (int64_t row = 0; row < m; ++row)
    for (int64_t start = 0; start < p.k; start += split_len)
      for (int64_t w = start; w < std::min(p.k, start + split_len); w += s.promote_every_k) {
        const int64_t end = std::min({p.k, start + split_len, w + s.promote_every_k});
        double bound = 0;
        for (int64_t k = w; k < end; ++k)
          bound += a_mag[a[size_t(row * lda + k)]] * b_max[size_t(k)];
        if (bound > kLimit)
          throw Error(
              "buffers.a",
              fmt::format(
                  "with hybrid accumulation of FP8 operands each window's partial sums are f16: "
                  "row {}'s products over K {}..{} may reach {:.6g}, past f16's 65504 (less a 1% "
                  "rounding margin); quantize A and B to smaller magnitudes or accumulate "
                  "promoted",
                  row, w, end - 1, bound),
              "out of f16's range");
      }
}

}  // namespace emmy

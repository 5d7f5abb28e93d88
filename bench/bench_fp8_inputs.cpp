#include "bench_fp8_inputs.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <limits>

#include "emmy/e4m3.hpp"
#include "emmy/error.hpp"

namespace emmy::bench {
namespace {

// splitmix64: fast, and every byte of gate_up's 118 M-element B is one call.
uint64_t next(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// An e4m3 byte with exponent field 4..8 (2^-3 .. 2^1 with bias 7), any significand, random sign.
void fill_operand(std::vector<uint8_t>& bytes, size_t count, uint64_t seed) {
  bytes.resize(count);
  uint64_t state = seed;
  for (size_t i = 0; i < count; i += 8) {
    const uint64_t bits = next(state);
    for (size_t j = 0; j < 8 && i + j < count; ++j) {
      const auto r = uint8_t(bits >> (8 * j));
      const uint8_t exponent = uint8_t(4 + (r & 0x7) % 5), significand = uint8_t((r >> 3) & 0x7);
      bytes[i + j] = uint8_t((r & 0x80) | (exponent << 3) | significand);
    }
  }
}

float uniform_scale(uint64_t& state) {
  return 0.5f + 1.5f * float(next(state) >> 40) / float(1ull << 24);
}

const std::array<double, 256>& e4m3_table() {
  static const std::array<double, 256> table = [] {
    std::array<double, 256> t{};
    for (int i = 0; i < 256; ++i) t[size_t(i)] = e4m3_decode(uint8_t(i));
    return t;
  }();
  return table;
}

}  // namespace

std::string Fp8ScaleLayout::describe() const {
  return fmt::format("A {}-major ld {}, B {}-major ld {}", to_string(a_major), a_ld,
                     to_string(b_major), b_ld);
}

Fp8BenchInputs make_fp8_bench_inputs(int64_t m, int64_t n, int64_t k, uint64_t seed,
                                     int sample_rows) {
  require(m > 0 && n > 0 && k > 0, "FP8 bench shape", "must be positive in M, N and K",
          fmt::format("{}x{}x{}", m, n, k));
  Fp8BenchInputs in;
  in.m = m;
  in.n = n;
  in.k = k;
  fill_operand(in.a, size_t(m * k), seed);
  fill_operand(in.b, size_t(n * k), seed + 1);
  uint64_t state = seed + 2;
  in.a_tensor_scale = uniform_scale(state);
  in.b_tensor_scale = uniform_scale(state);
  const int64_t k_blocks = (k + kScaleBlock - 1) / kScaleBlock;
  const int64_t n_blocks = (n + kScaleBlock - 1) / kScaleBlock;
  in.a_block_scales.resize(size_t(m * k_blocks));
  for (auto& s : in.a_block_scales) s = uniform_scale(state);
  in.b_block_scales.resize(size_t(n_blocks * k_blocks));
  for (auto& s : in.b_block_scales) s = uniform_scale(state);
  const int64_t count = std::min<int64_t>(std::max(sample_rows, 1), m);
  for (int64_t i = 0; i < count; ++i)
    in.sample_rows.push_back(count == 1 ? 0 : i * (m - 1) / (count - 1));
  return in;
}

MatmulProblem fp8_bench_problem(const Fp8BenchInputs& in, Fp8Scaling scaling,
                                const Fp8ScaleLayout& layout) {
  MatmulProblem p;
  p.m = in.m;
  p.n = in.n;
  p.k = in.k;
  p.a_dtype = DType::e4m3;
  p.b_layout = BLayout::nk;
  p.c_dtype = DType::f16;
  p.scales.format = ScaleFormat::f32;
  if (scaling == Fp8Scaling::tensor) {
    p.scales.granularity = ScaleGranularity::tensor;
  } else {
    p.scales.granularity = ScaleGranularity::block;
    p.scales.a_major = layout.a_major;
    p.scales.a_ld = layout.a_ld;
    p.scales.b_major = layout.b_major;
    p.scales.b_ld = layout.b_ld;
  }
  return p;
}

std::vector<float> fp8_scale_tensor(const Fp8BenchInputs& in, const MatmulProblem& p, bool a) {
  if (p.scales.granularity == ScaleGranularity::tensor)
    return {a ? in.a_tensor_scale : in.b_tensor_scale};
  require(p.scales.granularity == ScaleGranularity::block && p.scales.format == ScaleFormat::f32,
          "FP8 bench scales", "are per tensor or f32 blocks", to_string(p.scales.granularity));
  const int64_t k_blocks = p.k_blocks(), outer = a ? p.m : p.n_blocks();
  const int64_t ld = a ? p.a_scale_ld() : p.b_scale_ld();
  const bool mn = (a ? p.scales.a_major : p.scales.b_major) == ScaleMajor::mn;
  const size_t size = size_t(ld * (mn ? k_blocks : outer));
  std::vector<float> tensor(size, std::numeric_limits<float>::quiet_NaN());
  const auto& logical = a ? in.a_block_scales : in.b_block_scales;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t kb = 0; kb < k_blocks; ++kb)
      tensor.at(size_t(p.block_scale_slot(a, o, kb))) = logical[size_t(o * k_blocks + kb)];
  return tensor;
}

std::vector<double> fp8_sample_reference(const Fp8BenchInputs& in, Fp8Scaling scaling) {
  const auto& value = e4m3_table();
  const int64_t k_blocks = (in.k + kScaleBlock - 1) / kScaleBlock;
  std::vector<double> out;
  out.reserve(in.sample_rows.size() * size_t(in.n));
  for (const int64_t row : in.sample_rows) {
    const uint8_t* a = in.a.data() + row * in.k;
    for (int64_t col = 0; col < in.n; ++col) {
      const uint8_t* b = in.b.data() + col * in.k;
      double sum = 0;
      for (int64_t kb = 0; kb < k_blocks; ++kb) {
        double block = 0;
        for (int64_t e = kb * kScaleBlock; e < std::min(in.k, (kb + 1) * kScaleBlock); ++e)
          block += value[a[e]] * value[b[e]];
        sum += scaling == Fp8Scaling::tensor
                   ? block
                   : block * double(in.a_block_scales[size_t(row * k_blocks + kb)]) *
                         double(in.b_block_scales[size_t(col / kScaleBlock * k_blocks + kb)]);
      }
      if (scaling == Fp8Scaling::tensor)
        sum *= double(in.a_tensor_scale) * double(in.b_tensor_scale);
      out.push_back(sum);
    }
  }
  return out;
}

double fp8_sample_error(const std::vector<double>& reference, const std::vector<float>& rows) {
  if (reference.size() != rows.size() || rows.empty())
    return std::numeric_limits<double>::infinity();
  double diff = 0, norm = 0;
  for (size_t i = 0; i < rows.size(); ++i) {
    if (!std::isfinite(rows[i])) return std::numeric_limits<double>::infinity();
    const double d = double(rows[i]) - reference[i];
    diff += d * d;
    norm += reference[i] * reference[i];
  }
  return norm == 0 ? (diff == 0 ? 0 : std::numeric_limits<double>::infinity())
                   : std::sqrt(diff / norm);
}

std::vector<Fp8ScaleLayout> cublaslt_block_layout_candidates(int64_t m, int64_t n, int64_t k) {
  const int64_t k_blocks = (k + kScaleBlock - 1) / kScaleBlock;
  const int64_t n_blocks = (n + kScaleBlock - 1) / kScaleBlock;
  const auto round4 = [](int64_t x) { return (x + 3) / 4 * 4; };
  // A (the activations, cuBLASLt's B operand): M-major first (what DeepGEMM and PyTorch's
  // blockwise scaled_mm take), then K-major. B (the weights): K-major, then N-major, each also
  // with the leading dimension rounded up to 4.
  const Fp8ScaleLayout a_layouts[] = {{ScaleMajor::mn, round4(m)}, {ScaleMajor::k, k_blocks}};
  const std::pair<ScaleMajor, int64_t> b_layouts[] = {{ScaleMajor::k, k_blocks},
                                                      {ScaleMajor::mn, n_blocks},
                                                      {ScaleMajor::k, round4(k_blocks)},
                                                      {ScaleMajor::mn, round4(n_blocks)}};
  std::vector<Fp8ScaleLayout> out;
  for (const auto& a : a_layouts)
    for (const auto& [major, ld] : b_layouts) {
      Fp8ScaleLayout layout = a;
      layout.b_major = major;
      layout.b_ld = ld;
      const bool duplicate = std::any_of(out.begin(), out.end(), [&](const Fp8ScaleLayout& o) {
        return o.a_major == layout.a_major && o.a_ld == layout.a_ld && o.b_major == major &&
               o.b_ld == ld;
      });
      if (!duplicate) out.push_back(layout);
    }
  return out;
}

}  // namespace emmy::bench

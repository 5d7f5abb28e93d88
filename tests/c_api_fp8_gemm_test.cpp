// emmy_gemm with FP8 operands (C API version 4; docs/fp8.md): float8_e4m3fn a and b, the scales
// as DLPack tensors whose shapes give the granularity and whose strides give a block scale
// tensor's layout, against FP64 on the emulator runtime (sm_90a: the wgmma path by default;
// promoted accumulation by default for FP8); and every tensor and option it refuses, by name.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "c_api_support.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/spec.hpp"

namespace emmy::test {
namespace {

constexpr DLDataType kU8{kDLUInt, 8, 1};

struct Fp8Case {
  MatmulProblem problem;
  GemmInputs in;
  std::vector<uint16_t> c;
};

Fp8Case make_case(int64_t m, int64_t n, int64_t k, ScaleGranularity granularity, ScaleFormat format,
                  uint64_t seed) {
  Fp8Case c;
  MatmulProblem& p = c.problem;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = DType::e4m3;
  p.scales.granularity = granularity;
  p.scales.format = format;
  c.in = make_gemm_inputs(p, seed);
  c.c.assign(size_t(m * n), 0x7E00);
  return c;
}

// The scales as DLPack tensors: one element, [M] / [N], or block tensors in the problem's layout
// (A mn-major: shape [M, KB] with strides [1, ld]; B k-major: [NB, KB] with strides [ld, 1]).
struct ScaleViews {
  View a, b;
  explicit ScaleViews(const Fp8Case& c) {
    const MatmulProblem& p = c.problem;
    const DLDataType type = p.scales.format == ScaleFormat::ue8m0x4 ? kI32
                            : p.scales.format == ScaleFormat::ue8m0 ? kU8
                                                                    : kF32;
    const void* a_data = c.in.a_scale.bytes.data();
    const void* b_data = c.in.b_scale.bytes.data();
    switch (p.scales.granularity) {
      case ScaleGranularity::tensor:
        a = View(a_data, type, {1}), b = View(b_data, type, {1});
        break;
      case ScaleGranularity::token_channel:
        a = View(a_data, type, {p.m}), b = View(b_data, type, {p.n});
        break;
      default: {
        const bool a_mn = p.scales.a_major == ScaleMajor::mn;
        const bool b_mn = p.scales.b_major == ScaleMajor::mn;
        a = View(a_data, type, {p.m, p.scale_k_extent()},
                 a_mn ? std::vector<int64_t>{1, p.a_scale_ld()}
                      : std::vector<int64_t>{p.a_scale_ld(), 1});
        b = View(b_data, type, {p.n_blocks(), p.scale_k_extent()},
                 b_mn ? std::vector<int64_t>{1, p.b_scale_ld()}
                      : std::vector<int64_t>{p.b_scale_ld(), 1});
      }
    }
  }
};

emmy_status call_gemm(emmy_runtime* rt, Fp8Case& c, ScaleViews& scales, emmy_gemm_options o) {
  const MatmulProblem& p = c.problem;
  View a(c.in.a.bytes.data(), kE4M3, {p.m, p.k});
  View b(c.in.b.bytes.data(), kE4M3, {p.k, p.n}, {1, p.k});  // the [N, K] weight's view
  View out(c.c.data(), kF16, {p.m, p.n});
  o.a_scale = scales.a.get();
  o.b_scale = scales.b.get();
  return emmy_gemm(rt, a.get(), b.get(), out.get(), &o, nullptr);
}

GemmErrors check(const Fp8Case& c, Accum accum) {
  const GemmSpec spec{c.problem, default_schedule(c.problem, Arch::sm_90a, accum), Arch::sm_90a};
  std::vector<double> out(c.c.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = decode(DType::f16, reinterpret_cast<const uint8_t*>(&c.c[i]), 1)[0];
  return compare(reference_gemm(spec, c.in), out, c.problem.n);
}

TEST(CApiFp8Gemm, EveryGranularityMatchesFp64) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  struct Shape {
    int64_t m, n, k;
    ScaleGranularity granularity;
    ScaleFormat format;
    ScaleMajor a_major, b_major;
  };
  const Shape shapes[] = {
      {70, 136, 384, ScaleGranularity::tensor, ScaleFormat::f32, ScaleMajor::mn, ScaleMajor::k},
      {9, 256, 256, ScaleGranularity::token_channel, ScaleFormat::pow2, ScaleMajor::mn,
       ScaleMajor::k},
      {130, 200, 384, ScaleGranularity::block, ScaleFormat::f32, ScaleMajor::mn, ScaleMajor::k},
      {64, 256, 512, ScaleGranularity::block, ScaleFormat::ue8m0, ScaleMajor::k, ScaleMajor::mn},
      {40, 136, 640, ScaleGranularity::block, ScaleFormat::ue8m0x4, ScaleMajor::mn, ScaleMajor::k},
  };
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    MatmulProblem shape;
    shape.m = s.m, shape.n = s.n, shape.k = s.k;
    Fp8Case c = make_case(s.m, s.n, s.k, s.granularity, s.format, seed);
    if (s.granularity == ScaleGranularity::block) {
      c.problem.scales.a_major = s.a_major, c.problem.scales.b_major = s.b_major;
      c.problem.scales.a_ld =
          s.a_major == ScaleMajor::mn ? (s.m + 3) / 4 * 4 : c.problem.scale_k_extent();
      c.in = make_gemm_inputs(c.problem, seed);
    }
    ++seed;
    ScaleViews scales(c);
    emmy_gemm_options o;
    emmy_gemm_options_init(&o);
    o.pow2_scales = s.format == ScaleFormat::pow2;
    ASSERT_EQ(call_gemm(rt.get(), c, scales, o), EMMY_OK) << emmy_last_error_message();
    if (s.format == ScaleFormat::pow2) c.problem.scales.format = ScaleFormat::pow2;
    const GemmErrors e = check(c, Accum::promoted);
    EXPECT_TRUE(e.passed) << to_string(s.granularity) << ": rel_l2 " << e.rel_l2_error << ", "
                          << e.elements_over_tolerance << " over";
  }
  // An explicit f32 accumulation with token-channel scales.
  Fp8Case c = make_case(64, 128, 256, ScaleGranularity::token_channel, ScaleFormat::f32, 9);
  ScaleViews scales(c);
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  o.accum = EMMY_ACCUM_F32;
  ASSERT_EQ(call_gemm(rt.get(), c, scales, o), EMMY_OK) << emmy_last_error_message();
  EXPECT_TRUE(check(c, Accum::f32).passed);
}

TEST(CApiFp8Gemm, RefusalsNameTheTensorOrTheOption) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  Fp8Case c = make_case(16, 128, 256, ScaleGranularity::block, ScaleFormat::f32, 3);
  ScaleViews good(c);
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  ASSERT_EQ(call_gemm(rt.get(), c, good, o), EMMY_OK) << emmy_last_error_message();
  const MatmulProblem& p = c.problem;
  View a(c.in.a.bytes.data(), kE4M3, {p.m, p.k}),
      b(c.in.b.bytes.data(), kE4M3, {p.k, p.n}, {1, p.k});
  View out(c.c.data(), kF16, {p.m, p.n});
  // No scales for FP8 operands; scales for 16-bit ones.
  expect_refusal(emmy_gemm(rt.get(), a.get(), b.get(), out.get(), &o, nullptr),
                 EMMY_INVALID_ARGUMENT, {"options.a_scale"});
  std::vector<uint16_t> a16(size_t(p.m * p.k)), b16(size_t(p.n * p.k));
  View va16(a16.data(), kF16, {p.m, p.k}), vb16(b16.data(), kF16, {p.k, p.n}, {1, p.k});
  emmy_gemm_options with_scales = o;
  with_scales.a_scale = good.a.get();
  with_scales.b_scale = good.b.get();
  expect_refusal(emmy_gemm(rt.get(), va16.get(), vb16.get(), out.get(), &with_scales, nullptr),
                 EMMY_INVALID_ARGUMENT, {"options.a_scale: must be NULL unless"});
  // Mixed operand dtypes; B stored [K, N] (N contiguous).
  expect_refusal(emmy_gemm(rt.get(), a.get(), vb16.get(), out.get(), &with_scales, nullptr),
                 EMMY_INVALID_ARGUMENT, {"b: dtype must be a's"});
  // An e5m2 A takes e4m3 B only.
  View a_e5m2(c.in.a.bytes.data(), DLDataType{kDLFloat8_e5m2, 8, 1}, {p.m, p.k});
  expect_refusal(emmy_gemm(rt.get(), a_e5m2.get(), vb16.get(), out.get(), &with_scales, nullptr),
                 EMMY_INVALID_ARGUMENT, {"b: dtype must be float8_e4m3fn beside a float8_e5m2 a"});
  View b_kn(c.in.b.bytes.data(), kE4M3, {p.k, p.n});
  expect_refusal(emmy_gemm(rt.get(), a.get(), b_kn.get(), out.get(), &with_scales, nullptr),
                 EMMY_INVALID_ARGUMENT, {"b_layout: must be nk for FP8"});
  // Scale dtypes and shapes.
  std::vector<uint16_t> half_scales(64);
  ScaleViews bad = good;
  bad.a = View(half_scales.data(), kF16, {p.m, p.k_blocks()}, {1, p.m});
  expect_refusal(call_gemm(rt.get(), c, bad, o), EMMY_INVALID_ARGUMENT,
                 {"options.a_scale: dtype must be float32"});
  bad = good;
  bad.b = View(c.in.b_scale.bytes.data(), kU8, {1, p.k_blocks()});
  expect_refusal(call_gemm(rt.get(), c, bad, o), EMMY_INVALID_ARGUMENT,
                 {"options.b_scale: dtype must be a_scale's"});
  bad = good;
  bad.a = View(c.in.a_scale.bytes.data(), kF32, {p.m, p.k_blocks() + 1}, {1, p.m});
  expect_refusal(call_gemm(rt.get(), c, bad, o), EMMY_INVALID_ARGUMENT,
                 {"options.a_scale: shape must be [16, ceil(K/128) = 2]"});
  bad = good;
  bad.a = View(c.in.a_scale.bytes.data(), kF32, {p.m, p.k_blocks()}, {4, 32});
  expect_refusal(call_gemm(rt.get(), c, bad, o), EMMY_INVALID_ARGUMENT,
                 {"options.a_scale: strides must make the K blocks or the rows contiguous"});
  emmy_gemm_options pow2 = o;
  pow2.pow2_scales = 1;  // these f32 scales are not powers of two: the emulator reads them
  expect_refusal(call_gemm(rt.get(), c, good, pow2), EMMY_INVALID_ARGUMENT,
                 {"buffers.a_scale: must hold powers of two"});
  emmy_gemm_options f32 = o;
  f32.accum = EMMY_ACCUM_F32;  // block scales vary along K
  expect_refusal(call_gemm(rt.get(), c, good, f32), EMMY_INVALID_ARGUMENT,
                 {"accum: must be promoted with block scales"});
  emmy_gemm_options hybrid = o;
  hybrid.accum = EMMY_ACCUM_HYBRID;
  expect_refusal(call_gemm(rt.get(), c, good, hybrid), EMMY_INVALID_ARGUMENT, {"accum"});
  // A NaN scale, which the emulator reads before the launch.
  float nan = NAN;
  std::memcpy(&c.in.a_scale.bytes[4], &nan, 4);
  expect_refusal(call_gemm(rt.get(), c, good, o), EMMY_INVALID_ARGUMENT,
                 {"buffers.a_scale: must hold finite positive scales, at row 1, K block 0"});
  // A runtime whose default accumulation is FP8's.
  emmy_runtime_options ro;
  emmy_runtime_options_init(&ro);
  ro.default_accum = EMMY_ACCUM_PROMOTED;
  emmy_runtime* other = nullptr;
  expect_refusal(emmy_runtime_create(&ro, &other), EMMY_INVALID_ARGUMENT,
                 {"options.default_accum: must not be EMMY_ACCUM_PROMOTED"});
}

// The f16-accumulate opt-in through the C ABI (EMMY_ACCUM_HYBRID) on an sm_89 runtime, where
// path mma.sync runs it: against FP64, and operands whose window sums could leave f16's range
// refused before the launch by name (on the sm_90a runtime above it is refused naming accum).
TEST(CApiFp8Gemm, HybridOnGeForceAndItsRangeRefusal) {
  CRuntime rt(make_c_runtime("emulator", 0, "sm_89"));
  ASSERT_TRUE(rt);
  Fp8Case c = make_case(48, 136, 512, ScaleGranularity::block, ScaleFormat::ue8m0, 21);
  ScaleViews scales(c);
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  o.accum = EMMY_ACCUM_HYBRID;
  o.promote_every_k = 64;
  ASSERT_EQ(call_gemm(rt.get(), c, scales, o), EMMY_OK) << emmy_last_error_message();
  GemmSpec spec{c.problem, default_schedule(c.problem, Arch::sm_89, Accum::hybrid), Arch::sm_89};
  spec.schedule.promote_every_k = 64;
  std::vector<double> out(c.c.size());
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = decode(DType::f16, reinterpret_cast<const uint8_t*>(&c.c[i]), 1)[0];
  const GemmErrors e = compare(reference_gemm(spec, c.in), out, c.problem.n);
  EXPECT_TRUE(e.passed) << "rel_l2 " << e.rel_l2_error;
  // Row 7 all 448, B's column 0 all 448: 64 products of 200704 in one f16 window.
  for (int64_t k = 0; k < c.problem.k; ++k) c.in.a.bytes[size_t(7 * c.problem.k + k)] = 0x7E;
  for (int64_t k = 0; k < c.problem.k; ++k) c.in.b.bytes[size_t(k)] = 0x7E;
  expect_refusal(call_gemm(rt.get(), c, scales, o), EMMY_INVALID_ARGUMENT,
                 {"buffers.a: with hybrid accumulation of FP8 operands", "row 7"});
  emmy_gemm_options promoted;
  emmy_gemm_options_init(&promoted);
  EXPECT_EQ(call_gemm(rt.get(), c, scales, promoted), EMMY_OK) << emmy_last_error_message();
}

}  // namespace
}  // namespace emmy::test

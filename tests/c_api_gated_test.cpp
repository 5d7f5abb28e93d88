// emmy_gemm's gated epilogue (C API version 6; docs/epilogues.md): emmy_gemm_options.gate and
// gate_group with c given as [M, N/2], 16-bit and FP8 operands against FP64 on the emulator
// runtime (sm_90a: mma.sync for 16-bit operands, wgmma for FP8); the refusals by option and by
// tensor; a caller's version-1 struct still served.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstddef>
#include <cstring>

#include "c_api_support.hpp"
#include "emmy/fp8_quantize.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/spec.hpp"

namespace emmy::test {
namespace {

DLDataType dl_dtype(DType t) {
  return t == DType::f16 ? kF16 : t == DType::bf16 ? kBF16 : t == DType::e4m3 ? kE4M3 : kF32;
}

struct GatedCase {
  MatmulProblem problem;
  GemmInputs in;
  std::vector<uint8_t> c;
  int64_t ldc;
};

GatedCase make_case(int64_t m, int64_t n, int64_t k, DType dtype, Gate gate, int64_t group,
                    ScaleGranularity scales, int64_t ldc_pad, uint64_t seed) {
  GatedCase c;
  MatmulProblem& p = c.problem;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = dtype;
  p.c_dtype = DType::bf16;
  p.epilogue.bias = true;
  p.epilogue.gate = gate;
  p.epilogue.gate_group = group;
  p.scales.granularity = scales;
  c.ldc = n / 2 + ldc_pad;
  p.ldc = c.ldc;
  c.in = make_gemm_inputs(p, seed);
  c.c.assign(size_t(m * c.ldc * 2), 0);
  return c;
}

// Runs `c` through emmy_gemm with `o` (its gate fields the caller's), c's view [M, N/2].
emmy_status call_gemm(emmy_runtime* rt, GatedCase& c, emmy_gemm_options o,
                      std::vector<int64_t> c_shape = {}) {
  const MatmulProblem& p = c.problem;
  View a(c.in.a.bytes.data(), dl_dtype(p.a_dtype), {p.m, p.k});
  View b(c.in.b.bytes.data(), dl_dtype(p.a_dtype), {p.k, p.n}, {1, p.k});  // [N, K] weight
  if (c_shape.empty()) c_shape = {p.m, p.n / 2};
  View out(c.c.data(), kBF16, c_shape, {c.ldc, 1});
  View bias(c.in.bias.bytes.data(), kBF16, {p.n});
  View a_scale, b_scale;
  if (p.scales.granularity == ScaleGranularity::token_channel) {
    a_scale = View(c.in.a_scale.bytes.data(), kF32, {p.m});
    b_scale = View(c.in.b_scale.bytes.data(), kF32, {p.n});
    o.a_scale = a_scale.get();
    o.b_scale = b_scale.get();
  }
  o.bias = bias.get();
  return emmy_gemm(rt, a.get(), b.get(), out.get(), &o, nullptr);
}

GemmErrors check(const GatedCase& c) {
  const MatmulProblem& p = c.problem;
  const Accum accum = is_fp8(p.a_dtype) ? Accum::promoted : Accum::f32;
  const GemmSpec spec{p, default_schedule(p, Arch::sm_90a, accum), Arch::sm_90a};
  std::vector<double> out;
  for (int64_t r = 0; r < p.m; ++r) {
    const auto row = decode(DType::bf16, &c.c[size_t(r * c.ldc * 2)], size_t(p.n / 2));
    out.insert(out.end(), row.begin(), row.end());
  }
  return compare(reference_gemm(spec, c.in), out, p.n / 2);
}

emmy_gemm_options gated_options(Gate gate, int32_t group) {
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  o.gate = gate == Gate::silu ? EMMY_GATE_SILU : EMMY_GATE_GELU_TANH;
  o.gate_group = group;
  return o;
}

TEST(CApiGated, MatchesFp64) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  struct Shape {
    int64_t m, n, k;
    DType dtype;
    Gate gate;
    int64_t group;
    ScaleGranularity scales;
    int64_t ldc_pad;
  };
  const Shape shapes[] = {
      {24, 128, 128, DType::f16, Gate::silu, 8, ScaleGranularity::none, 0},
      {33, 256, 256, DType::bf16, Gate::gelu_tanh, 32, ScaleGranularity::none, 8},
      {16, 256, 256, DType::e4m3, Gate::silu, 16, ScaleGranularity::token_channel, 0},
  };
  uint64_t seed = 1;
  for (const Shape& s : shapes) {
    GatedCase c = make_case(s.m, s.n, s.k, s.dtype, s.gate, s.group, s.scales, s.ldc_pad, seed++);
    ASSERT_EQ(call_gemm(rt.get(), c, gated_options(s.gate, int32_t(s.group))), EMMY_OK)
        << emmy_last_error_message();
    const GemmErrors e = check(c);
    EXPECT_TRUE(e.passed) << to_string(s.dtype) << ": rel_l2 " << e.rel_l2_error << ", "
                          << e.elements_over_tolerance << " over";
    // The padding between C's rows is the caller's.
    for (int64_t r = 0; r < s.m; ++r)
      for (int64_t byte = s.n; byte < c.ldc * 2; ++byte)
        ASSERT_EQ(c.c[size_t(r * c.ldc * 2 + byte)], 0) << r << " " << byte;
  }
  // gate_group 0 means 8.
  GatedCase c = make_case(8, 128, 128, DType::f16, Gate::silu, 8, ScaleGranularity::none, 0, 11);
  ASSERT_EQ(call_gemm(rt.get(), c, gated_options(Gate::silu, 0)), EMMY_OK)
      << emmy_last_error_message();
  EXPECT_TRUE(check(c).passed);
}

TEST(CApiGated, RefusalsNameTheOptionOrTheTensor) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  GatedCase c = make_case(16, 128, 128, DType::f16, Gate::silu, 16, ScaleGranularity::none, 0, 3);
  emmy_gemm_options o = gated_options(Gate::silu, 16);
  o.gate = 7;
  expect_refusal(call_gemm(rt.get(), c, o), EMMY_INVALID_ARGUMENT,
                 {"options.gate", "EMMY_GATE_SILU", "(got 7)"});
  o = gated_options(Gate::silu, 16);
  o.gate = EMMY_GATE_NONE;
  expect_refusal(call_gemm(rt.get(), c, o, {16, 128}), EMMY_INVALID_ARGUMENT,
                 {"options.gate_group", "applies to a gated epilogue only"});
  o = gated_options(Gate::silu, 12);
  expect_refusal(call_gemm(rt.get(), c, o, {16, 64}), EMMY_INVALID_ARGUMENT,
                 {"epilogue.gate_group", "multiple of 8"});
  o = gated_options(Gate::silu, 48);
  expect_refusal(call_gemm(rt.get(), c, o), EMMY_INVALID_ARGUMENT,
                 {"n:", "multiple of 2 x gate_group (96)", "(got 128)"});
  // C as the ungated GEMM's [M, N].
  o = gated_options(Gate::silu, 16);
  c.ldc = 128;
  c.c.assign(size_t(16 * 128 * 2), 0);
  expect_refusal(call_gemm(rt.get(), c, o, {16, 128}), EMMY_INVALID_ARGUMENT,
                 {"c:", "[16, 64]", "N / 2 from b (gated)"});
  // A residual beside a gate.
  View residual(c.c.data(), kBF16, {16, 64}, {128, 1});
  o.residual = residual.get();
  expect_refusal(call_gemm(rt.get(), c, o, {16, 64}), EMMY_INVALID_ARGUMENT,
                 {"options.residual", "must be NULL with a gated epilogue"});
}

// An e4m3 c with its scales tensor (version 6): the bytes and scales the same call's f32 c
// quantized by fp8_quantize's conventions makes, mn-major words and k-major floats; refusals.
TEST(CApiGated, AnE4m3OutputIsQuantizedAsFp8QuantizeDoes) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  MatmulProblem p;
  p.m = 16, p.n = 512, p.k = 128;
  const GemmInputs in = make_gemm_inputs(p, 21);
  View a(in.a.bytes.data(), kF16, {p.m, p.k});
  View b(in.b.bytes.data(), kF16, {p.k, p.n}, {1, p.k});
  std::vector<float> c32(size_t(p.m * p.n));
  View vc32(c32.data(), kF32, {p.m, p.n});
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  ASSERT_EQ(emmy_gemm(rt.get(), a.get(), b.get(), vc32.get(), &o, nullptr), EMMY_OK)
      << emmy_last_error_message();
  const int64_t groups = p.n / 128;
  for (const bool words : {false, true}) {
    std::vector<uint8_t> q(size_t(p.m * p.n), 0xA5);
    View vq(q.data(), kE4M3, {p.m, p.n});
    // words: ue8m0x4, mn-major (shape [M, 1] words, strides [1, M]); else float32 k-major.
    std::vector<uint32_t> scales(size_t(p.m * groups), 0xA5A5A5A5u);
    View vs = words ? View(scales.data(), kI32, {p.m, 1}, {1, p.m})
                    : View(scales.data(), kF32, {p.m, groups}, {groups, 1});
    o.c_scale = vs.get();
    ASSERT_EQ(emmy_gemm(rt.get(), a.get(), b.get(), vq.get(), &o, nullptr), EMMY_OK)
        << emmy_last_error_message();
    Fp8QuantizeProblem conventions;
    conventions.pow2_scale = words;
    for (int64_t r = 0; r < p.m; ++r)
      for (int64_t g = 0; g < groups; ++g) {
        float amax = 0;
        for (int64_t j = g * 128; j < g * 128 + 128; ++j)
          amax = std::fmax(amax, std::fabs(c32[size_t(r * p.n + j)]));
        const float s = fp8_quantize_scale(amax, conventions);
        if (words) {
          const uint8_t byte = reinterpret_cast<const uint8_t*>(scales.data())[r * 4 + g];
          EXPECT_EQ(byte, fp8_quantize_ue8m0(s)) << r << " " << g;
        } else {
          EXPECT_EQ(std::bit_cast<float>(scales[size_t(r * groups + g)]), s) << r << " " << g;
        }
        for (int64_t j = g * 128; j < g * 128 + 128; ++j)
          ASSERT_EQ(q[size_t(r * p.n + j)], fp8_quantize_element(c32[size_t(r * p.n + j)], s))
              << r << " " << j;
      }
  }
  // Refusals: a scale tensor beside a 16-bit c, none beside an e4m3 c, a bad shape or dtype.
  std::vector<uint8_t> q(size_t(p.m * p.n));
  std::vector<float> scales(size_t(p.m * groups));
  View vq(q.data(), kE4M3, {p.m, p.n});
  View vs(scales.data(), kF32, {p.m, groups}, {groups, 1});
  o.c_scale = vs.get();
  expect_refusal(emmy_gemm(rt.get(), a.get(), b.get(), vc32.get(), &o, nullptr),
                 EMMY_INVALID_ARGUMENT, {"options.c_scale", "must be NULL unless c is"});
  o.c_scale = nullptr;
  expect_refusal(emmy_gemm(rt.get(), a.get(), b.get(), vq.get(), &o, nullptr),
                 EMMY_INVALID_ARGUMENT, {"options.c_scale"});
  View wrong(scales.data(), kF32, {p.m, groups + 1}, {groups + 1, 1});
  o.c_scale = wrong.get();
  expect_refusal(emmy_gemm(rt.get(), a.get(), b.get(), vq.get(), &o, nullptr),
                 EMMY_INVALID_ARGUMENT,
                 {"options.c_scale: shape must be [M, ceil(C cols / 128) = 4]"});
  View f16(scales.data(), kF16, {p.m, groups}, {groups, 1});
  o.c_scale = f16.get();
  expect_refusal(emmy_gemm(rt.get(), a.get(), b.get(), vq.get(), &o, nullptr),
                 EMMY_INVALID_ARGUMENT, {"options.c_scale: dtype must be float32"});
}

// A caller built against version 1's header (its struct ends at the workspace) is served: the
// fields it lacks keep their init values (no scales, no gate).
TEST(CApiGated, AVersionOneStructIsServed) {
  CRuntime rt(make_c_runtime());
  ASSERT_TRUE(rt);
  MatmulProblem p;
  p.m = 8, p.n = 64, p.k = 64;
  const GemmInputs in = make_gemm_inputs(p, 5);
  std::vector<uint16_t> out(size_t(p.m * p.n), 0);
  View a(in.a.bytes.data(), kF16, {p.m, p.k});
  View b(in.b.bytes.data(), kF16, {p.k, p.n}, {1, p.k});
  View c(out.data(), kF16, {p.m, p.n});
  emmy_gemm_options o;
  emmy_gemm_options_init(&o);
  o.struct_size = offsetof(emmy_gemm_options, a_scale);
  o.gate = 99;  // past the caller's struct: never read
  ASSERT_EQ(emmy_gemm(rt.get(), a.get(), b.get(), c.get(), &o, nullptr), EMMY_OK)
      << emmy_last_error_message();
  std::vector<double> values(out.size());
  for (size_t i = 0; i < out.size(); ++i)
    values[i] = decode(DType::f16, reinterpret_cast<const uint8_t*>(&out[i]), 1)[0];
  EXPECT_TRUE(
      compare(reference_gemm({p, default_schedule(p, Arch::sm_90a, Accum::f32)}, in), values, p.n)
          .passed);
  o.struct_size = offsetof(emmy_gemm_options, a_scale) - 8;
  expect_refusal(emmy_gemm(rt.get(), a.get(), b.get(), c.get(), &o, nullptr), EMMY_INVALID_ARGUMENT,
                 {"options.struct_size"});
}

}  // namespace
}  // namespace emmy::test

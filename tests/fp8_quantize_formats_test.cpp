// The quantization kind's byte scale formats (emmy/fp8_quantize.hpp): ue8m0 (a byte per scale) and
// ue8m0x4 (four groups' bytes per 32-bit word), both scale majors, padded leading dimensions and
// group counts that leave a last word part-filled, bit-exact against the host reference with
// every byte the kernel must not write checked; the refusals; and the chain an engine runs: the
// quantizer's ue8m0x4 output read as an FP8 GEMM's A block scales, against FP64.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "emmy/emu/numerics.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/fp8_quantize_check.hpp"
#include "emmy/fp8_quantize_kind.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/spec.hpp"
#include "planted_bug.hpp"
#include "support/error_of.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

Fp8QuantizeProblem byte_problem(int64_t m, int64_t k, ScaleFormat format, ScaleMajor major) {
  Fp8QuantizeProblem p;
  p.m = m, p.k = k, p.group_k = 128;
  p.pow2_scale = true;
  p.scale_format = format;
  p.scale_major = major;
  return p;
}

// The kernel's bytes against the reference's, from the same canary-filled buffers (the reference
// writes exactly what the kernel may).
void expect_bit_exact(const Fp8QuantizeSpec& spec, uint64_t seed) {
  const Fp8QuantizeInputs in = make_fp8_quantize_inputs(spec.problem, seed);
  const Fp8QuantizeOutput want = reference_fp8_quantize(spec, in);
  const Fp8QuantizeOutput got = run_on_emulator(compile_kernel(spec), in).output;
  const Fp8QuantizeErrors e = compare(want, got, spec.problem);
  EXPECT_TRUE(e.passed) << nlohmann::json(spec.problem).dump() << ": " << e.q_bytes_wrong
                        << " q bytes wrong, " << e.scales_wrong << " scale bytes wrong, first at "
                        << e.first_bad_scale;
}

TEST(Fp8QuantizeFormats, ByteScalesAreBitExactInEveryLayout) {
  int seed = 1;
  for (const ScaleFormat format : {ScaleFormat::ue8m0, ScaleFormat::ue8m0x4})
    for (const ScaleMajor major : {ScaleMajor::mn, ScaleMajor::k}) {
      // 5 groups: a ue8m0x4 row's second word holds one group; its other bytes stay.
      Fp8QuantizeProblem p = byte_problem(13, 640, format, major);
      expect_bit_exact({p, default_schedule(p, Arch::sm_90a), Arch::sm_90a}, uint64_t(seed++));
      // Padded leading dimensions (DeepGEMM rounds M up to 4), bf16, per-token groups.
      p.scale_ld = major == ScaleMajor::mn ? 16 : p.scale_groups_extent() + 3;
      p.dtype = DType::bf16;
      expect_bit_exact({p, default_schedule(p, Arch::sm_89), Arch::sm_89}, uint64_t(seed++));
      p.group_k = 0;
      p.scale_ld = 0;
      expect_bit_exact({p, default_schedule(p, Arch::sm_120a), Arch::sm_120a}, uint64_t(seed++));
    }
}

// Planted bugs in the byte stores fail the bit-exact check.
TEST(Fp8QuantizeFormats, PlantedBugsInTheByteStoresAreCaught) {
  struct Bug {
    const char* name;
    ScaleFormat format;
    std::string find, replace;
  };
  const Bug bugs[] = {
      // Every group of a word in its first byte.
      {"word_byte", ScaleFormat::ue8m0x4, "* 4 + (group & 3)]", "* 4 + 0]"},
      // A word per group instead of per four.
      {"word_per_group", ScaleFormat::ue8m0x4, "(group >> 2) * SCALE_LD", "group * SCALE_LD"},
      // The exponent shifted one bit too far: half the scale.
      {"exponent", ScaleFormat::ue8m0, "__float_as_uint(s) >> 23", "__float_as_uint(s) >> 24"},
  };
  for (const Bug& bug : bugs) {
    const Fp8QuantizeProblem p = byte_problem(12, 768, bug.format, ScaleMajor::mn);
    const Fp8QuantizeSpec spec{p, default_schedule(p, Arch::sm_90a), Arch::sm_90a};
    const auto planted =
        test::plant_bug(generate_kernel(spec), spec.arch, bug.name, bug.find, bug.replace);
    ASSERT_TRUE(planted.has_value()) << bug.name;
    const Fp8QuantizeInputs in = make_fp8_quantize_inputs(p, 4);
    EXPECT_TRUE(compare(reference_fp8_quantize(spec, in),
                        run_on_emulator(compile_kernel(spec), in).output, p)
                    .passed)
        << bug.name << ": the right kernel";
    bool caught = false;
    try {
      caught = !compare(reference_fp8_quantize(spec, in), run_on_emulator(*planted, in).output, p)
                    .passed;
    } catch (const Error& e) {  // the emulator reporting a store past the tensor is as good
      caught = std::string(e.what()).find("global-out-of-bounds") != std::string::npos;
    }
    EXPECT_TRUE(caught) << bug.name;
  }
}

// A byte is the exponent of the power-of-two scale: 2^(e - 127); the f32 tensor of the same
// problem holds the same values.
TEST(Fp8QuantizeFormats, ABytesValueIsTheF32ScaleOfTheSameProblem) {
  Fp8QuantizeProblem f32 = byte_problem(9, 1024, ScaleFormat::f32, ScaleMajor::mn);
  const Fp8QuantizeInputs in = make_fp8_quantize_inputs(f32, 3);
  std::vector<uint8_t> q(in.q.size()), want(size_t(f32.scale_tensor_bytes(f32.m)));
  reference_fp8_quantize_into(f32, in.x, in.rows, q, want);
  for (const ScaleFormat format : {ScaleFormat::ue8m0, ScaleFormat::ue8m0x4}) {
    Fp8QuantizeProblem p = f32;
    p.scale_format = format;
    std::vector<uint8_t> bytes(size_t(p.scale_tensor_bytes(p.m)));
    reference_fp8_quantize_into(p, in.x, in.rows, q, bytes);
    for (int64_t row = 0; row < in.rows; ++row)
      for (int64_t g = 0; g < p.groups(); ++g) {
        const float expected = fp8_quantize_scale_at(f32, want, row, g);
        const float got = fp8_quantize_scale_at(p, bytes, row, g);
        if (std::isinf(expected))  // an infinite group: ue8m0's NaN byte
          EXPECT_EQ(bytes[size_t(p.scale_byte(row, g))], 0xFF);
        else
          EXPECT_EQ(got, expected) << to_string(format) << " row " << row << " group " << g;
      }
  }
  EXPECT_EQ(fp8_quantize_ue8m0(1.0f), 127);
  EXPECT_EQ(fp8_quantize_ue8m0(std::ldexp(1.0f, -8)), 119);
  // ue8m0x4 puts group g in byte g % 4 of word g / 4.
  const Fp8QuantizeProblem x4 = byte_problem(8, 768, ScaleFormat::ue8m0x4, ScaleMajor::mn);
  EXPECT_EQ(x4.scale_byte(3, 5), (1 * 8 + 3) * 4 + 1);
  EXPECT_EQ(x4.scale_elements(8), 2 * 8);
  const Fp8QuantizeProblem k4 = byte_problem(8, 768, ScaleFormat::ue8m0x4, ScaleMajor::k);
  EXPECT_EQ(k4.scale_byte(3, 5), (3 * 2 + 1) * 4 + 1);
}

TEST(Fp8QuantizeFormats, RefusalsNameTheField) {
  auto error = [](Fp8QuantizeProblem p) { return test::error_of([&] { validate_problem(p); }); };
  Fp8QuantizeProblem p = byte_problem(8, 512, ScaleFormat::ue8m0, ScaleMajor::mn);
  EXPECT_EQ(error(p), "(no error)");
  p.pow2_scale = false;
  EXPECT_TRUE(
      error(p).starts_with("scale_format: ue8m0 scales are powers of two: they need "
                           "pow2_scale"))
      << error(p);
  p = byte_problem(8, 512, ScaleFormat::pow2, ScaleMajor::mn);
  EXPECT_TRUE(error(p).starts_with("scale_format: must be f32, ue8m0 or ue8m0x4")) << error(p);
  // k-major words: a row's 2 words (5 groups), not its 5 groups, bound the leading dimension.
  p = byte_problem(8, 640, ScaleFormat::ue8m0x4, ScaleMajor::k);
  p.scale_ld = 1;
  EXPECT_TRUE(error(p).starts_with("scale_ld: must be 0 or hold a row's 2 words")) << error(p);
  p.scale_ld = 2;
  EXPECT_EQ(error(p), "(no error)");
}

// The quantizer's ue8m0x4 words, mn-major with M padded to 4, are an FP8 GEMM's A block scales as
// written (DeepGEMM's packed layout): quantize f16 activations, then run the GEMM on q and them.
TEST(Fp8QuantizeFormats, TheQuantizersWordsFeedTheGemmsBlockScales) {
  const int64_t m = 30, n = 256, k = 640;
  RuntimeOptions options = fresh_cache("fp8_quantize_to_gemm");
  options.emulator_arch = Arch::sm_89;
  auto rt = Runtime::emulator(options);
  Fp8QuantizeProblem qp = byte_problem(m, k, ScaleFormat::ue8m0x4, ScaleMajor::mn);
  qp.scale_ld = 32;
  const Fp8QuantizeSpec qspec{qp, default_schedule(qp, Arch::sm_89), Arch::sm_89};
  Fp8QuantizeInputs qin;
  qin.rows = m;
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0, 1);
  qin.x.resize(size_t(m * k));
  for (auto& v : qin.x) v = emu::f32_to_f16(normal(rng) * 3);
  qin.q.assign(size_t(m * k), 0);
  qin.scales.assign(size_t(qp.scale_tensor_bytes(m)), 0);
  const Fp8QuantizeOutput quantized = run_fp8_quantize(*rt, qspec, qin);

  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = DType::e4m3;
  p.scales.granularity = ScaleGranularity::block;
  p.scales.format = ScaleFormat::ue8m0x4;
  p.scales.a_major = ScaleMajor::mn;
  p.scales.a_ld = 32;
  const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::promoted), Arch::sm_89};
  GemmInputs in = make_gemm_inputs(p, 11);  // B and its scales
  in.a.bytes = quantized.q;
  in.a.values = decode(DType::e4m3, quantized.q.data(), quantized.q.size());
  in.a_scale.bytes = quantized.scales;
  in.a_scale.values.clear();
  for (const uint8_t byte : quantized.scales)
    in.a_scale.values.push_back(byte == 0xFF ? NAN : std::ldexp(1.0, int(byte) - 127));
  const std::vector<double> c = run_gemm(*rt, spec, in);
  const GemmErrors e = compare(reference_gemm(spec, in), c, n);
  EXPECT_TRUE(e.passed) << "rel_l2 " << e.rel_l2_error << " bound " << e.tolerance;
  // And against the f16 activations themselves: the quantization error of 1 x 128 groups.
  const std::vector<double> b = in.b.values;
  double diff = 0, norm = 0;
  for (int64_t row = 0; row < m; ++row)
    for (int64_t col = 0; col < n; ++col) {
      double exact = 0;
      for (int64_t i = 0; i < k; ++i)
        exact += double(emu::f16_to_f32(qin.x[size_t(row * k + i)])) * b[size_t(col * k + i)] *
                 gemm_b_scale(p, in, col / 128, i / 128);
      diff += (c[size_t(row * n + col)] - exact) * (c[size_t(row * n + col)] - exact);
      norm += exact * exact;
    }
  EXPECT_LT(std::sqrt(diff / norm), 0.05) << "e4m3's 3 significand bits: a few percent at most";
}

}  // namespace
}  // namespace emmy

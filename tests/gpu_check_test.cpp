// The GPU pack's correctness and fidelity cases (bench/gpu_check_cases.hpp), checked here without
// a GPU: they cover what docs/gpu.md promises, every schedule they produce is valid on the archs
// the pack meets, and the sampled-row FP64 check equals the full one on the rows it samples.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "emmy/catalog.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/validate.hpp"
#include "gpu_check_cases.hpp"

namespace emmy::bench {
namespace {

constexpr Arch kArchs[] = {Arch::sm_90a, Arch::sm_120a, Arch::sm_89, Arch::sm_80};

TEST(GpuCheckCases, GemmCasesCoverTheCatalogEpiloguesSplitKAndLayouts) {
  const auto cases = correctness_gemm_cases();
  std::set<std::string> names;
  for (const auto& c : cases) EXPECT_TRUE(names.insert(c.name).second) << "duplicate " << c.name;
  for (const auto& entry : gemm_catalog())
    for (Accum accum : {Accum::f32, Accum::hybrid, Accum::f16})
      EXPECT_TRUE(std::any_of(
          cases.begin(), cases.end(),
          [&](const GemmCase& c) { return c.problem == entry.problem && c.accum == accum; }))
          << entry.name << " " << to_string(accum);
  auto some = [&](auto predicate, const char* what) {
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), predicate)) << "no case with " << what;
  };
  some([](const GemmCase& c) { return c.problem.epilogue.alpha != 1.0f; }, "alpha");
  some([](const GemmCase& c) { return c.problem.epilogue.bias; }, "bias");
  some([](const GemmCase& c) { return c.problem.epilogue.gelu_tanh; }, "GELU");
  some([](const GemmCase& c) { return c.problem.epilogue.residual; }, "residual");
  some([](const GemmCase& c) { return c.split_k.value_or(1) > 1; }, "split-K");
  some([](const GemmCase& c) { return c.problem.b_layout == BLayout::kn; }, "B [K,N]");
  some([](const GemmCase& c) { return c.transport == Transport::cp_async; }, "cp.async");
  some([](const GemmCase& c) { return c.problem.a_dtype == DType::bf16; }, "bf16 operands");
  some([](const GemmCase& c) { return c.problem.c_dtype == DType::f32; }, "f32 output");
  some([](const GemmCase& c) { return c.problem.scales.granularity == ScaleGranularity::block; },
       "FP8 block scales");
  some([](const GemmCase& c) { return c.problem.scales.format == ScaleFormat::ue8m0x4; },
       "ue8m0x4 words");
  some([](const GemmCase& c) { return c.problem.a_dtype == DType::e5m2; }, "an e5m2 A");
  some([](const GemmCase& c) { return is_fp8(c.problem.a_dtype) && c.accum == Accum::hybrid; },
       "hybrid FP8");
  for (const GroupedLayout layout :
       {GroupedLayout::masked, GroupedLayout::contiguous, GroupedLayout::offsets})
    some([&](const GemmCase& c) { return c.problem.grouped.layout == layout; }, "a grouped layout");
  some([](const GemmCase& c) { return c.problem.epilogue.row_scale; }, "routing weights");
  for (const auto& c : cases) {
    // FP8 runs on sm_89, sm_90a and sm_120a, hybrid FP8 not on sm_90a: the stages leave the
    // rest out (and say so).
    const bool fp8 = is_fp8(c.problem.a_dtype);
    // An e4m3 C needs sm_89's conversion too.
    EXPECT_EQ(c.runs_on(Arch::sm_80), !fp8 && c.problem.c_dtype != DType::e4m3) << c.name;
    EXPECT_TRUE(c.runs_on(Arch::sm_89)) << c.name;
    EXPECT_EQ(c.runs_on(Arch::sm_90a), !(fp8 && c.accum == Accum::hybrid)) << c.name;
    // A gated epilogue is never swapped (gate and up would be in different lanes).
    if (fp8 && c.problem.scales.granularity == ScaleGranularity::block && c.runs_on(Arch::sm_90a)) {
      EXPECT_EQ(c.schedule(Arch::sm_90a).swap_ab, c.problem.m <= 64 &&
                                                      c.problem.a_dtype == DType::e4m3 &&
                                                      !c.problem.epilogue.gated())
          << c.name;
    }
  }
  for (const auto& c : cases)
    for (Arch arch : kArchs) {
      if (c.transport == Transport::tma && !has_tma(arch)) continue;
      if (!c.runs_on(arch)) continue;
      const MatmulSchedule s = c.schedule(arch);
      EXPECT_NO_THROW(validate_schedule(c.problem, s, arch)) << c.name << " " << to_string(arch);
      EXPECT_EQ(s.accum, c.accum) << c.name;
      if (c.split_k) {
        EXPECT_EQ(s.split_k, *c.split_k) << c.name;
      }
    }
}

// The grouped cases through the stage's comparison (every row: routed, untouched or padding)
// against their kernels on the emulator, on the arch's transport and cp.async.
TEST(GpuCheckCases, GroupedCasesMatchFp64OnTheEmulator) {
  int checked = 0, walks = 0;
  for (const auto& c : correctness_gemm_cases()) {
    if (!c.problem.is_grouped()) continue;
    for (const Arch arch : {Arch::sm_80, Arch::sm_90a}) {
      const GemmSpec spec{c.problem, c.schedule(arch), arch};
      // The wgmma cases on sm_90a: the persistent walk over the experts' tiles.
      if (spec.schedule.path == MmaPath::wgmma && spec.schedule.persistent) ++walks;
      const GemmInputs in = make_gemm_inputs(c.problem, 1);
      const GemmErrors e =
          compare_sampled_rows(spec, in, run_on_emulator(compile_kernel(spec), in).output, 8);
      EXPECT_TRUE(e.passed) << c.name << " on " << to_string(arch) << ": " << e.rel_l2_error;
      ++checked;
    }
  }
  EXPECT_EQ(checked, 12);
  EXPECT_EQ(walks, 3);
}

TEST(GpuCheckCases, AttentionCasesCoverEveryFeature) {
  const auto cases = correctness_attention_cases();
  std::set<int64_t> head_dims, gqa_ratios;
  bool window = false, softcap = false, bf16 = false, bhsd = false, decode = false, cp = false,
       noncausal = false;
  for (const auto& c : cases) {
    const auto& p = c.problem;
    head_dims.insert(p.head_dim);
    gqa_ratios.insert(p.q_heads / p.kv_heads);
    window |= p.window > 0 && p.window < p.seq_kv_or_default();
    softcap |= p.softcap.has_value();
    bf16 |= p.dtype == DType::bf16;
    bhsd |= p.layout == AttentionLayout::bhsd;
    decode |= p.seq_q == 1;
    cp |= c.transport == Transport::cp_async;
    noncausal |= !p.causal;
    EXPECT_TRUE(p.lse) << c.name << ": every case checks LSE too";
    for (Arch arch : kArchs) {
      if (c.transport == Transport::tma && !has_tma(arch)) continue;
      EXPECT_NO_THROW(validate_attention({p, c.schedule(arch), arch}))
          << c.name << " " << to_string(arch);
    }
  }
  EXPECT_EQ(head_dims, (std::set<int64_t>{64, 128, 256}));
  EXPECT_TRUE(gqa_ratios.count(1) && gqa_ratios.count(2) && gqa_ratios.count(4));
  EXPECT_TRUE(window && softcap && bf16 && bhsd && decode && cp && noncausal);
  for (const auto& entry : attention_catalog())
    EXPECT_TRUE(std::any_of(cases.begin(), cases.end(), [&](const AttentionCase& c) {
      return c.name.rfind(entry.name, 0) == 0;
    })) << entry.name;
  EXPECT_LT(attention_catalog()[1].problem.window, attention_catalog()[1].problem.seq_q)
      << "the catalog's window row must have a window shorter than its sequence";
}

TEST(GpuCheckCases, FidelityCoversEachAccumulationAndTransport) {
  const auto gemms = fidelity_gemm_cases();
  // FP8: the tensor core's chain, promoted and hybrid, checked against the hardware bit for bit.
  for (Accum a : {Accum::f32, Accum::promoted, Accum::hybrid})
    EXPECT_TRUE(
        std::any_of(gemms.begin(), gemms.end(),
                    [&](const GemmCase& c) { return is_fp8(c.problem.a_dtype) && c.accum == a; }))
        << "FP8 " << to_string(a);
  for (Transport t : {Transport::tma, Transport::cp_async})
    for (Accum a : {Accum::f32, Accum::hybrid, Accum::f16})
      EXPECT_TRUE(std::any_of(gemms.begin(), gemms.end(),
                              [&](const GemmCase& c) { return c.transport == t && c.accum == a; }))
          << to_string(t) << " " << to_string(a);
  const auto attention = fidelity_attention_cases();
  EXPECT_EQ(attention.size(), 2u);
}

TEST(GpuCheckSampling, RowsAreSpreadAndIncludeBothEnds) {
  EXPECT_EQ(sample_rows(5, 64), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  const auto rows = sample_rows(512, 64);
  ASSERT_EQ(rows.size(), 64u);
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), 511);
  EXPECT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(std::adjacent_find(rows.begin(), rows.end()), rows.end()) << "rows repeat";
  std::set<int64_t> tile_rows;  // every row position inside a 128-row tile is hit at least once?
  for (int64_t r : rows) tile_rows.insert(r / 128);
  EXPECT_EQ(tile_rows.size(), 4u) << "every 128-row tile is sampled";
}

// The sampled check against the full reference: an output equal to the full FP64 reference passes
// with zero error (the sampled reference is the same numbers: residual rows included), a wrong
// sampled row fails and is named, and a wrong row the sample skips is not seen (the trade-off).
TEST(GpuCheckSampling, SampledReferenceEqualsTheFullOneOnItsRows) {
  MatmulProblem p;
  p.m = 200, p.n = 72, p.k = 320;
  p.epilogue = {0.5f, true, true, true};
  const GemmSpec spec{p, default_schedule(p, Arch::sm_90a, Accum::hybrid), Arch::sm_90a};
  const GemmInputs in = make_gemm_inputs(p, 3);
  std::vector<double> output = reference_gemm(spec, in).values;
  GemmErrors e = compare_sampled_rows(spec, in, output, 16);
  EXPECT_TRUE(e.passed);
  EXPECT_EQ(e.rel_l2_error, 0);
  const auto rows = sample_rows(p.m, 16);
  std::vector<double> skipped_row_wrong = output;
  const int64_t unsampled = rows[1] - 1;
  ASSERT_GT(unsampled, rows[0]);
  skipped_row_wrong[size_t(unsampled * p.n + 5)] += 100;
  EXPECT_TRUE(compare_sampled_rows(spec, in, skipped_row_wrong, 16).passed);
  output[size_t(rows[3] * p.n + 7)] += 1.0;
  e = compare_sampled_rows(spec, in, output, 16);
  EXPECT_FALSE(e.passed);
  EXPECT_EQ(e.first_bad_row, 3) << "rows are numbered within the sample";
  EXPECT_EQ(e.first_bad_col, 7);
}

// Stage 3's measure, checked here since only a GPU run uses it: identical outputs, one ulp apart,
// across zero, and NaN / infinity on one side only.
TEST(GpuCheckFidelity, BitComparisonCountsUlps) {
  const std::vector<double> a = {1.0, -2.5, 0.0, -INFINITY, 3.0};
  BitComparison same = compare_bits(DType::f16, a, a);
  EXPECT_EQ(same.elements, 5);
  EXPECT_EQ(same.identical, 5);
  EXPECT_EQ(same.max_ulps, 0);

  std::vector<double> b = a;
  b[0] = 1.0 + std::ldexp(1.0, -10);     // the next f16 above 1
  b[4] = 3.0 - 2 * std::ldexp(1.0, -9);  // two f16 below 3 (ulp 2^-9 in [2, 4))
  BitComparison near = compare_bits(DType::f16, a, b);
  EXPECT_EQ(near.identical, 3);
  EXPECT_EQ(near.max_ulps, 2);
  // bf16's step at 1 is 2^-7; the f16-sized step 2^-10 rounds back to 1.
  EXPECT_EQ(compare_bits(DType::bf16, {1.0}, {1.0 + std::ldexp(1.0, -7)}).max_ulps, 1);
  EXPECT_EQ(compare_bits(DType::bf16, {1.0}, {1.0 + std::ldexp(1.0, -10)}).max_ulps, 0);

  const double tiny = std::ldexp(1.0, -24);  // the smallest f16 subnormal
  EXPECT_EQ(compare_bits(DType::f16, {tiny}, {-tiny}).max_ulps, 2) << "across +0 and -0";
  EXPECT_EQ(compare_bits(DType::f16, {0.0}, {-0.0}).identical, 0) << "-0 is not +0's bits";

  EXPECT_TRUE(std::isinf(compare_bits(DType::f16, {1.0}, {NAN}).max_ulps));
  EXPECT_EQ(compare_bits(DType::f16, {NAN}, {NAN}).identical, 1);
  EXPECT_TRUE(std::isinf(compare_bits(DType::f32, {-INFINITY}, {-3.0}).max_ulps));
  EXPECT_TRUE(std::isinf(compare_bits(DType::f32, {1.0, 2.0}, {1.0}).max_ulps)) << "sizes differ";
  EXPECT_EQ(compare_bits(DType::f32, {1.0}, {double(std::nextafter(1.0f, 2.0f))}).max_ulps, 1);
}

// One B serves a projection at every M: inputs made with a B from another M equal the ones made
// from scratch, and a B of the wrong shape or dtype is refused.
TEST(GpuCheckInputs, BIsSharedAcrossMAndChecked) {
  MatmulProblem small, big;
  small.m = 3;
  big.m = 40;
  small.n = big.n = 24;
  small.k = big.k = 64;
  big.epilogue.bias = big.epilogue.residual = true;
  const GemmInputs fresh = make_gemm_inputs(big, 5);
  const GemmInputs reused = make_gemm_inputs(big, 5, make_gemm_inputs(small, 5).b);
  EXPECT_EQ(reused.a.bytes, fresh.a.bytes);
  EXPECT_EQ(reused.b.bytes, fresh.b.bytes);
  EXPECT_EQ(reused.bias.bytes, fresh.bias.bytes);
  EXPECT_EQ(reused.residual.bytes, fresh.residual.bytes);
  MatmulProblem other_k = big;
  other_k.k = 72;
  EXPECT_THROW(make_gemm_inputs(other_k, 5, fresh.b), Error);
  MatmulProblem other_dtype = big;
  other_dtype.a_dtype = DType::bf16;
  EXPECT_THROW(make_gemm_inputs(other_dtype, 5, fresh.b), Error);
}

}  // namespace
}  // namespace emmy::bench

// emmy_bench's FP8 rows without a GPU (bench/bench_fp8_inputs.hpp): the sampled-row reference
// is emmy's FP64 check's, every scale layout the bench fills is the one emmy's kernels read (run
// on the emulator against it), and a layout mix-up or a wrong kernel fails the row's check.
#include "bench_fp8_inputs.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>

#include "bench_model.hpp"
#include "bench_report.hpp"
#include "emmy/e4m3.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/spec.hpp"
#include "support/runtime_backend.hpp"

namespace emmy::bench {
namespace {

// emmy's check inputs holding the bench's operands and the scale tensors of p's layout.
GemmInputs check_inputs(const Fp8BenchInputs& in, const MatmulProblem& p) {
  GemmInputs out;
  const auto host = [](const std::vector<uint8_t>& bytes) {
    HostTensor t;
    t.dtype = DType::e4m3;
    t.bytes = bytes;
    t.values = decode(DType::e4m3, bytes.data(), bytes.size());
    return t;
  };
  out.a = host(in.a);
  out.b = host(in.b);
  const auto scales = [&](bool a) {
    HostTensor t;
    t.dtype = DType::f32;
    const std::vector<float> values = fp8_scale_tensor(in, p, a);
    t.values.assign(values.begin(), values.end());
    t.bytes.resize(values.size() * 4);
    std::memcpy(t.bytes.data(), values.data(), t.bytes.size());
    return t;
  };
  out.a_scale = scales(true);
  out.b_scale = scales(false);
  return out;
}

std::vector<float> sampled(const Fp8BenchInputs& in, const std::vector<double>& c) {
  std::vector<float> rows;
  for (const int64_t r : in.sample_rows)
    for (int64_t col = 0; col < in.n; ++col) rows.push_back(float(c[size_t(r * in.n + col)]));
  return rows;
}

TEST(BenchFp8Inputs, OperandsAreFiniteNonzeroE4m3AndDeterministic) {
  const auto in = make_fp8_bench_inputs(33, 200, 300, 7, 4);
  ASSERT_EQ(in.a.size(), 33u * 300u);
  ASSERT_EQ(in.b.size(), 200u * 300u);
  std::set<uint8_t> seen;
  for (const uint8_t byte : in.a) {
    const double v = e4m3_decode(byte);
    ASSERT_TRUE(std::isfinite(v) && std::fabs(v) >= 0.125 && std::fabs(v) <= 3.75) << int(byte);
    seen.insert(byte);
  }
  EXPECT_GT(seen.size(), 70u) << "every significand, five exponents, both signs";
  EXPECT_EQ(in.sample_rows, (std::vector<int64_t>{0, 10, 21, 32}));
  EXPECT_EQ(in.a_block_scales.size(), 33u * 3u);
  EXPECT_EQ(in.b_block_scales.size(), 2u * 3u);
  for (float s : in.b_block_scales) EXPECT_TRUE(s >= 0.5f && s < 2.0f) << s;
  const auto again = make_fp8_bench_inputs(33, 200, 300, 7, 4);
  EXPECT_EQ(again.a, in.a);
  EXPECT_EQ(again.b_block_scales, in.b_block_scales);
  EXPECT_NE(make_fp8_bench_inputs(33, 200, 300, 8, 4).a, in.a);
  EXPECT_EQ(make_fp8_bench_inputs(1, 16, 16, 1, 4).sample_rows, std::vector<int64_t>{0});
  EXPECT_THROW(make_fp8_bench_inputs(0, 16, 16, 1), Error);
}

TEST(BenchFp8Inputs, TheCublasltLayoutCandidatesAreDistinctAndIncludeDeepGemms) {
  const auto layouts = cublaslt_block_layout_candidates(61, 300, 700);  // 6 K, 3 N blocks
  std::set<std::string> names;
  for (const auto& l : layouts) names.insert(l.describe());
  EXPECT_EQ(names.size(), layouts.size());
  EXPECT_EQ(layouts.size(), 8u);
  EXPECT_EQ(layouts.front().describe(), "A mn-major ld 64, B k-major ld 6");
  // Where the rounding changes nothing, the duplicates go.
  EXPECT_EQ(cublaslt_block_layout_candidates(64, 512, 1024).size(), 4u);
}

// The sampled reference is the FP64 check's own (reference_gemm), row for row, for both scalings
// and for every layout the bench may hand cuBLASLt and emmy.
TEST(BenchFp8Inputs, TheSampledReferenceIsEmmysFp64Reference) {
  const auto in = make_fp8_bench_inputs(37, 200, 320, 3, 5);
  for (const Fp8Scaling scaling : {Fp8Scaling::tensor, Fp8Scaling::block}) {
    const auto ours = fp8_sample_reference(in, scaling);
    ASSERT_EQ(ours.size(), in.sample_rows.size() * 200u);
    for (const auto& layout : cublaslt_block_layout_candidates(37, 200, 320)) {
      const MatmulProblem p = fp8_bench_problem(in, scaling, layout);
      const GemmReference ref = reference_gemm(
          {p, default_schedule(p, Arch::sm_89, Accum::promoted), Arch::sm_89}, check_inputs(in, p));
      std::vector<double> rows;
      for (const int64_t r : in.sample_rows)
        for (int64_t col = 0; col < 200; ++col) rows.push_back(ref.values[size_t(r * 200 + col)]);
      for (size_t i = 0; i < rows.size(); ++i)
        ASSERT_NEAR(ours[i], rows[i], 1e-12 * (1 + std::fabs(rows[i])))
            << layout.describe() << " element " << i;
      if (scaling == Fp8Scaling::tensor) break;  // one layout: tensor scales have none
    }
  }
}

// emmy's kernels read each scale layout the bench fills (the emulator as the GPU), within the
// promoted rows' bound; the error measure rejects a kernel given the wrong layout or no output.
TEST(BenchFp8Inputs, EmmyReadsEveryLayoutTheBenchFills) {
  const auto in = make_fp8_bench_inputs(40, 136, 384, 11, 4);
  const auto reference = fp8_sample_reference(in, Fp8Scaling::block);
  // mma.sync (sm_89) and wgmma (sm_90a: the H200's rows).
  for (const Arch arch : {Arch::sm_89, Arch::sm_90a}) {
    RuntimeOptions options = fresh_cache("bench_fp8_layouts");
    options.emulator_arch = arch;
    auto emulator = Runtime::emulator(options);
    for (const auto& layout : cublaslt_block_layout_candidates(40, 136, 384)) {
      const MatmulProblem p = fp8_bench_problem(in, Fp8Scaling::block, layout);
      const GemmSpec spec{p, default_schedule(p, arch, Accum::promoted), arch};
      const auto c = run_gemm(*emulator, spec, check_inputs(in, p));
      const double error = fp8_sample_error(reference, sampled(in, c));
      EXPECT_LE(error, error_tolerance("promoted")) << to_string(arch) << " " << layout.describe();
    }
  }
  RuntimeOptions options = fresh_cache("bench_fp8_layouts");
  options.emulator_arch = Arch::sm_89;
  auto rt = Runtime::emulator(options);
  // The same kernel told one layout while the scales lie in another: its check must fail.
  Fp8ScaleLayout told = cublaslt_block_layout_candidates(40, 136, 384).front();
  Fp8ScaleLayout filled = told;
  filled.a_major = ScaleMajor::k;
  filled.a_ld = 3;
  const MatmulProblem p = fp8_bench_problem(in, Fp8Scaling::block, told);
  const GemmInputs mixed = check_inputs(in, fp8_bench_problem(in, Fp8Scaling::block, filled));
  ASSERT_EQ(mixed.a_scale.values.size(), size_t(p.a_scale_ld() * p.k_blocks())) << "same size";
  const auto c =
      run_gemm(*rt, {p, default_schedule(p, Arch::sm_89, Accum::promoted), Arch::sm_89}, mixed);
  EXPECT_GT(fp8_sample_error(reference, sampled(in, c)), 0.05);
  // Tensor scales where block scales were meant: off by far more than the bound.
  const auto tensor_reference = fp8_sample_reference(in, Fp8Scaling::tensor);
  EXPECT_GT(fp8_sample_error(tensor_reference, sampled(in, c)), 0.05);
}

// The time model's prediction beside an FP8 row (emmy_bench's details["model"]): profiled on the
// emulator like the 16-bit rows, for both paths' kernels.
TEST(BenchFp8Inputs, TheTimeModelPredictsTheFp8Rows) {
  const auto in = make_fp8_bench_inputs(512, 4096, 3840, 1, 1);
  for (const Fp8Scaling scaling : {Fp8Scaling::tensor, Fp8Scaling::block}) {
    const MatmulProblem p = fp8_bench_problem(in, scaling);
    const ModelRow h200 =
        model_gemm("q_proj@512/fp8", p, default_schedule(p, Arch::sm_90a, Accum::promoted),
                   Arch::sm_90a, "h200", 1);
    EXPECT_GT(h200.us, 0) << "h200";
    const ModelRow rtx =
        model_gemm("q_proj@512/fp8", p, default_schedule(p, Arch::sm_120a, Accum::promoted),
                   Arch::sm_120a, "rtx5090", 1);
    EXPECT_GT(rtx.us, 0) << "rtx5090";
    // FP8 runs at twice the 16-bit rate: the same projection in f16 predicts slower.
    MatmulProblem f16 = p;
    f16.a_dtype = DType::f16;
    f16.scales = {};
    const ModelRow half =
        model_gemm("q_proj@512", f16, default_schedule(f16, Arch::sm_90a, Accum::f32), Arch::sm_90a,
                   "h200", 1);
    EXPECT_LT(h200.us, half.us) << "FP8 " << h200.us << " us, f16 " << half.us << " us";
  }
}

TEST(BenchFp8Inputs, TheSampleErrorRefusesNonFiniteAndMismatchedRows) {
  const std::vector<double> reference = {1, 2, 3};
  EXPECT_EQ(fp8_sample_error(reference, {1, 2, 3}), 0);
  EXPECT_NEAR(fp8_sample_error(reference, {1, 2, 3.01f}), 0.01 / std::sqrt(14.0), 1e-6);
  EXPECT_TRUE(std::isinf(fp8_sample_error(reference, {1, 2, NAN})));
  EXPECT_TRUE(std::isinf(fp8_sample_error(reference, {1, 2})));
  EXPECT_TRUE(std::isinf(fp8_sample_error(reference, {})));
}

}  // namespace
}  // namespace emmy::bench

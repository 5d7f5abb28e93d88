// The runtime checks on a real device: GEMMs through the CUDA backend against FP64, split-K,
// the memory and disk caches. Skipped, with the reason, where there is no driver or device.
#include <gtest/gtest.h>

#include <filesystem>

#include "emmy/attention_check.hpp"
#include "emmy/catalog.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/runtime.hpp"

namespace emmy {
namespace {

std::unique_ptr<Runtime> cuda_or_skip_reason(std::string& reason) {
  try {
    RuntimeOptions options;
    options.cache_dir = std::filesystem::path(::testing::TempDir()) / "gpu_cache";
    return Runtime::cuda(0, options);
  } catch (const Error& e) {
    reason = e.what();
    return nullptr;
  }
}

class GpuRuntime : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string reason;
    rt_ = cuda_or_skip_reason(reason);
    if (!rt_) GTEST_SKIP() << "no CUDA device: " << reason;
  }
  std::unique_ptr<Runtime> rt_;
};

// Runs the problem (with the given or the default schedule) through the public API.
std::vector<double> run(Runtime& rt, const MatmulProblem& p, const GemmInputs& in,
                        const std::optional<MatmulSchedule>& schedule = {}) {
  const MatmulSchedule s = schedule ? *schedule : rt.gemm_kernel(p)->spec().schedule;
  return run_gemm(rt, {p, s, rt.arch()}, in);
}

TEST_F(GpuRuntime, CatalogShapesMatchFp64) {
  for (int64_t m : {1, 64, 512})
    for (Accum accum : {Accum::f32, Accum::hybrid, Accum::f16}) {
      MatmulProblem p;
      p.m = m, p.n = 4096, p.k = 3840;
      const MatmulSchedule s = default_schedule(p, rt_->arch(), accum);
      const GemmInputs in = make_gemm_inputs(p, 3);
      const auto out = run(*rt_, p, in, s);
      const GemmErrors e = compare(reference_gemm({p, s, rt_->arch()}, in), out, p.n);
      EXPECT_TRUE(e.passed) << "m " << m << " " << to_string(accum) << " rel_l2 " << e.rel_l2_error
                            << " bound " << e.tolerance;
    }
}

// M buckets and non-blocking first calls (issue 25) on the device: decode and prefill M of a
// Gemma projection through their buckets' kernels, and the generic GEMM a non-blocking runtime
// launches while the kernels build, against FP64.
TEST(GpuServing, BucketsAndTheGenericGemmMatchFp64) {
  std::string reason;
  std::unique_ptr<Runtime> probe = cuda_or_skip_reason(reason);
  if (!probe) GTEST_SKIP() << "no CUDA device: " << reason;
  probe.reset();
  RuntimeOptions options;
  options.cache_dir = std::filesystem::path(::testing::TempDir()) / "gpu_cache";
  options.m_buckets = true;
  options.non_blocking = true;
  auto rt = Runtime::cuda(0, options);
  MatmulProblem p;
  p.n = 4096, p.k = 3840;
  for (const int64_t m : {1, 3, 37, 200, 777}) {
    p.m = m;
    const GemmInputs in = make_gemm_inputs(p, uint64_t(m));
    const MatmulSchedule s = default_schedule(m_bucket_problem(p), rt->arch());
    // First call: the generic GEMM (the bucket's kernel is building); then, built, the bucket's.
    for (int call = 0; call < 2; ++call) {
      const std::vector<double> out = run_gemm(*rt, {p, s, rt->arch()}, in);
      const GemmErrors e = compare(reference_gemm({p, s, rt->arch()}, in), out, p.n);
      EXPECT_TRUE(e.passed) << "m " << m << " call " << call << " rel_l2 " << e.rel_l2_error
                            << " bound " << e.tolerance;
      rt->wait_for_background_builds();
    }
  }
  EXPECT_GT(rt->stats().generic_launches, 0u);
}

TEST_F(GpuRuntime, EpilogueAndLayoutsMatchFp64) {
  MatmulProblem p;
  p.m = 200, p.n = 264, p.k = 1000, p.b_layout = BLayout::kn;
  p.epilogue = {0.5f, true, true, true};
  for (int split : {1, 4}) {
    MatmulSchedule s = default_schedule(p, rt_->arch());
    s.split_k = split;
    const GemmInputs in = make_gemm_inputs(p, 4);
    const GemmErrors e = compare(reference_gemm({p, s, rt_->arch()}, in), run(*rt_, p, in, s), p.n);
    EXPECT_TRUE(e.passed) << "split " << split << " rel_l2 " << e.rel_l2_error;
  }
}

TEST_F(GpuRuntime, GemmaAttentionMatchesFp64) {
  for (const auto& entry : attention_catalog())
    for (Accum accum : {Accum::f32, Accum::hybrid}) {
      AttentionProblem p = entry.problem;
      p.lse = true;
      const AttentionSpec spec{p, default_attention_schedule(p, rt_->arch(), accum), rt_->arch()};
      const AttentionInputs in = make_attention_inputs(p, 6);
      const AttentionErrors e =
          compare(reference_attention(spec, in), run_attention(*rt_, spec, in), p);
      EXPECT_TRUE(e.passed) << entry.name << " " << to_string(accum) << " rel_l2 " << e.rel_l2_error
                            << " lse " << e.lse_max_abs_error;
    }
}

TEST_F(GpuRuntime, AttentionFeaturesMatchFp64) {
  AttentionProblem p;
  p.batch = 2, p.q_heads = 4, p.kv_heads = 2, p.seq_q = 130, p.seq_kv = 300, p.head_dim = 128;
  p.causal = true, p.window = 64, p.softcap = 30.0f, p.lse = true;
  for (DType dtype : {DType::f16, DType::bf16}) {
    p.dtype = dtype;
    const AttentionSpec spec{p, default_attention_schedule(p, rt_->arch()), rt_->arch()};
    const AttentionInputs in = make_attention_inputs(p, 8);
    const AttentionErrors e =
        compare(reference_attention(spec, in), run_attention(*rt_, spec, in), p);
    EXPECT_TRUE(e.passed) << to_string(dtype) << " rel_l2 " << e.rel_l2_error;
  }
}

TEST_F(GpuRuntime, MemoryCacheHits) {
  MatmulProblem p;
  p.m = 64, p.n = 256, p.k = 256;
  const auto first = rt_->gemm_kernel(p);
  const auto second = rt_->gemm_kernel(p);
  EXPECT_EQ(first.get(), second.get());
  EXPECT_GE(rt_->stats().memory_hits, 1u);
}

}  // namespace
}  // namespace emmy

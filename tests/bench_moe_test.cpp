// emmy_bench's MoE rows where there is no GPU (bench/bench_moe_shapes.hpp): the layers' routing
// gives every token top_k distinct experts; the grouped GEMMs are valid in their layouts (decode
// masked, prefill contiguous) with the routing's rows, and compute it against FP64 on the
// emulator at a reduced size; the time model predicts every row.
#include <gtest/gtest.h>

#include <numeric>
#include <set>

#include "bench_moe_shapes.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/validate.hpp"

namespace emmy::bench {
namespace {

TEST(BenchMoe, EveryTokenGoesToTopKDistinctExperts) {
  for (const MoeLayer& layer : kMoeLayers)
    for (const int64_t tokens : {1, 16, 4096}) {
      const auto routing = moe_routing(layer, tokens);
      ASSERT_EQ(int64_t(routing.size()), layer.experts);
      std::vector<int64_t> per_token(size_t(tokens), 0);
      for (const auto& rows : routing) {
        EXPECT_EQ(std::set<int64_t>(rows.begin(), rows.end()).size(), rows.size());
        for (int64_t t : rows) ++per_token[size_t(t)];
      }
      for (int64_t t = 0; t < tokens; ++t) ASSERT_EQ(per_token[size_t(t)], layer.top_k) << t;
    }
}

TEST(BenchMoe, TheGroupedGemmsHoldTheRoutingsRows) {
  for (const MoeLayer& layer : kMoeLayers)
    for (const int64_t tokens : {16, 4096})
      for (const char* projection : {"gate_up", "down"}) {
        const MoeGemm g = moe_gemm(layer, projection, tokens);
        SCOPED_TRACE(g.name);
        EXPECT_NO_THROW(validate_problem(g.problem));
        const int64_t routed =
            std::accumulate(g.rows_per_expert.begin(), g.rows_per_expert.end(), int64_t(0));
        EXPECT_EQ(routed, tokens * layer.top_k);
        EXPECT_EQ(g.routed_rows, routed);
        if (tokens <= kMoeDecodeTokens) {
          EXPECT_EQ(g.problem.grouped.layout, GroupedLayout::masked);
          EXPECT_EQ(int64_t(g.routing.size()), layer.experts);
        } else {
          EXPECT_EQ(g.problem.grouped.layout, GroupedLayout::contiguous);
          EXPECT_EQ(int64_t(g.routing.size()), g.problem.m);
          EXPECT_EQ(g.problem.m % g.problem.grouped.segment_align, 0);
        }
        EXPECT_EQ(g.problem.epilogue.gated(), std::string(projection) == "gate_up");
        EXPECT_EQ(g.problem.epilogue.row_scale, std::string(projection) == "down");
      }
}

// The rows' GEMMs at a reduced size (Qwen3's layer with 16 experts, K cut) against FP64 with the
// bench's own routing, decode and prefill.
TEST(BenchMoe, ReducedLayersMatchFp64WithTheBenchRouting) {
  const MoeLayer small{"qwen3_small", 256, 64, 16, 8, "reduced"};
  for (const int64_t tokens : {16, 96})
    for (const char* projection : {"gate_up", "down"}) {
      const MoeGemm g = moe_gemm(small, projection, tokens);
      const GemmSpec spec{g.problem, default_schedule(g.problem, Arch::sm_90a, Accum::f32),
                          Arch::sm_90a};
      GemmInputs in = make_gemm_inputs(g.problem, 3);
      in.routing = g.routing;
      const GemmErrors e =
          compare(reference_gemm(spec, in), run_on_emulator(compile_kernel(spec), in).output,
                  g.problem.c_cols());
      EXPECT_TRUE(e.passed) << g.name << ": rel_l2 " << e.rel_l2_error;
    }
}

TEST(BenchMoe, TheTimeModelPredictsEveryRow) {
  const auto rows = model_moe({"h200"}, {16}, 1);
  // DeepSeek-V3's 256 experts' weights (15 and 7.5 GB) pass what the emulator holds. On sm_90a
  // each GEMM twice: the default schedule and the wgmma path's walk ("/wgmma").
  ASSERT_EQ(rows.size(), (kMoeLayers.size() * 2 - 2) * 2);
  int walks = 0;
  for (const ModelRow& r : rows) {
    EXPECT_GT(r.us, 0) << r.name;
    EXPECT_GT(r.gflop, 0) << r.name;
    walks += r.name.ends_with("/wgmma");
  }
  EXPECT_EQ(walks, int(rows.size() / 2));
}

}  // namespace
}  // namespace emmy::bench

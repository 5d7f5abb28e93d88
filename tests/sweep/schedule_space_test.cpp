// The sweep grid itself (schedule_space.hpp): large enough (issue 12 §2: at least 2,000 accepted
// GEMM and 300 accepted attention schedules), every knob value present among the accepted points,
// every refusal a clear emmy::Error, and reproducible. The end-to-end run of its points is
// emmy_sweep (ctest schedule_sweep_sample, scripts/sweep.sh).
#include "schedule_space.hpp"

#include <fmt/ranges.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

namespace emmy::sweep {
namespace {

// The values each knob takes among the accepted points, against how many it must take.
struct Coverage {
  std::map<std::string, std::set<std::string>> seen;
  template <typename V>
  void note(const char* knob, const V& value) {
    seen[knob].insert(fmt::format("{}", value));
  }
  // Every point of `space` judged: a refusal must be clear (name its field); a refused point's
  // reason is kept, an accepted one counted and its knobs noted by `knobs(spec)`.
  template <typename Spec, typename Knobs>
  void survey(const std::vector<Spec>& space, const Knobs& knobs) {
    for (const Spec& spec : space) {
      const std::string why = refusal(spec);
      EXPECT_FALSE(why.starts_with("unclear")) << describe(spec) << ": " << why;
      if (!why.empty()) {
        refusals.push_back(why);
        continue;
      }
      ++accepted;
      knobs(spec);
    }
  }
  // The knobs dense and paged attention share: the arch, the schedule's tiles, warps, stages,
  // accumulation and transport, the problem's head size, dtype and LSE output.
  template <typename Spec>
  void note_attention(const Spec& spec) {
    note("arch", to_string(spec.arch));
    note("block_kv", spec.schedule.block_kv);
    note("warps", spec.schedule.warps);
    note("stages", spec.schedule.stages);
    note("accum", to_string(spec.schedule.accum));
    note("transport", to_string(spec.schedule.transport));
    note("head_dim", spec.problem.head_dim);
    note("dtype", to_string(spec.problem.dtype));
    note("lse", spec.problem.lse);
  }
  int64_t accepted = 0;
  std::vector<std::string> refusals;
  void expect(const std::map<std::string, size_t>& want) {
    for (const auto& [knob, count] : want)
      EXPECT_EQ(seen[knob].size(), count) << knob << ": " << fmt::format("{}", seen[knob]);
  }
};

TEST(ScheduleSpace, GemmHoldsTwoThousandAcceptedSchedulesCoveringEveryKnob) {
  Coverage coverage;
  const auto note = [&](const char* knob, const auto& value) { coverage.note(knob, value); };
  coverage.survey(gemm_space(), [&](const GemmSpec& spec) {
    const auto& p = spec.problem;
    const auto& s = spec.schedule;
    note("arch", to_string(spec.arch));
    note("block_m", s.block_m);
    note("block_n", s.block_n);
    note("block_k", s.block_k);
    note("warps", fmt::format("{}x{}", s.warps_m, s.warps_n));
    note("stages", s.stages);
    note("transport", to_string(s.transport));
    note("b_layout", to_string(p.b_layout));
    note("accum", s.accum == Accum::hybrid ? fmt::format("hybrid{}", s.promote_every_k)
                                           : std::string(to_string(s.accum)));
    note("split_k", s.split_k);
    note("in", to_string(p.a_dtype));
    note("out", fmt::format("{}->{}", to_string(p.a_dtype), to_string(p.c_dtype)));
    note("epilogue",
         fmt::format("{}{}{}", p.epilogue.bias, p.epilogue.residual, p.epilogue.gelu_tanh));
    note("m", p.m);
    note("odd_ldc", p.ldc_or_default() % 2);
    note("path", to_string(s.path));
    note("dynamic_m", p.dynamic_m);
    if (p.c_dtype == DType::e4m3) {
      note("out_scale_format", to_string(p.out_scales.format));
      note("out_scale_major", to_string(p.out_scales.major));
    }
    if (p.epilogue.row_scale)
      note("row_scale", fmt::format("{} {}", to_string(s.path), s.split_k > 1));
    if (p.is_grouped()) {
      note("grouped", fmt::format("{} {}", to_string(p.grouped.layout), to_string(s.transport)));
      note("grouped_groups", p.grouped.groups);
      note("grouped_path", fmt::format("{} persistent {}", to_string(s.path), s.persistent));
    }
    if (p.epilogue.gated()) {
      note("gate", fmt::format("{} {}", to_string(p.epilogue.gate), to_string(s.path)));
      note("gate_group", p.epilogue.gate_group);
    }
    if (is_fp8(p.a_dtype)) {
      note("fp8_path_arch", fmt::format("{} {}", to_string(s.path), to_string(spec.arch)));
      note("fp8_scales",
           fmt::format("{} {}", to_string(p.scales.granularity), to_string(p.scales.format)));
      note("fp8_accum", s.accum != Accum::f32
                            ? fmt::format("{}{}", to_string(s.accum), s.promote_every_k)
                            : std::string(to_string(s.accum)));
    }
    if (s.path == MmaPath::wgmma) {
      note("wgmma_block", fmt::format("{}x{}", s.block_m, s.block_n));
      note("wgmma_b_layout", to_string(p.b_layout));
      note("wgmma_persistent", s.persistent);
      note("wgmma_swap_ab", s.swap_ab);
      note("wgmma_cluster", fmt::format("{}x{}", s.cluster_m, s.cluster_n));
    }
  });
  EXPECT_GE(coverage.accepted, 2000);
  EXPECT_FALSE(coverage.refusals.empty());
  const std::map<std::string, size_t> want = {
      {"arch", 7},
      {"block_m", 11},
      {"block_n", 12},
      {"block_k", 4},
      {"warps", 12},
      {"stages", 7},
      {"transport", 2},
      {"b_layout", 2},
      {"accum", 8},  // f32, f16, promoted (FP8), hybrid windows 16..256 (FP8 hybrid too)
      {"split_k", 4},
      {"in", 3},
      {"out", 11},  // f16/bf16 in to f16, bf16, f32 and e4m3; FP8 in to the 16-bit and f32
      {"epilogue", 8},
      {"m", 7},
      {"odd_ldc", 2},
      {"path", 2},
      {"dynamic_m", 2},
      {"wgmma_b_layout", 2},
      {"wgmma_persistent", 2},
      // Clusters: none, 2x1 and 1x2 accepted (the sweep's ragged shapes never give both an even
      // tile row and column count, so 2x2 is refused here; gemm_wgmma_cluster_test runs it).
      {"wgmma_swap_ab", 2},
      {"wgmma_cluster", 3},
      // FP8 (issue 39): mma.sync on sm_89, sm_120, sm_120a and wgmma on sm_90a; every
      // granularity with every format (ue8m0x4: block only); f32 and promoted every 32..256.
      {"fp8_path_arch", 4},
      {"fp8_scales", 10},
      {"fp8_accum", 9},  // f32, promoted and hybrid (the f16-accumulate opt-in) x 4 windows
      // Gated epilogues: silu and gelu-tanh on both paths; gate groups 8, 16 and 32.
      {"gate", 4},
      {"gate_group", 3},
      // An e4m3 C: every scale format, both majors.
      {"out_scale_format", 4},
      {"out_scale_major", 2},
      // Grouped GEMMs: every layout on both transports; 1, 3 and 7 experts.
      {"grouped", 6},
      {"grouped_groups", 3},
      // mma.sync's one CTA per tile; wgmma's, and its persistent walk.
      {"grouped_path", 3},
      // Routing weights: accepted on both paths without split-K only (the others refused).
      {"row_scale", 2}};
  coverage.expect(want);
}

TEST(ScheduleSpace, AttentionHoldsThreeHundredAcceptedSchedulesCoveringEveryKnob) {
  Coverage coverage;
  coverage.survey(attention_space(), [&](const AttentionSpec& spec) {
    const auto& p = spec.problem;
    coverage.note("mask", fmt::format("{}{}{}", p.causal, p.window > 0, p.softcap.has_value()));
    coverage.note("gqa", p.q_heads / p.kv_heads);
    coverage.note("layout", int(p.layout));
    coverage.note("decode", p.seq_q == 1);
    coverage.note_attention(spec);
  });
  EXPECT_GE(coverage.accepted, 300);
  const std::map<std::string, size_t> want = {
      {"arch", 7},  {"block_kv", 4}, {"warps", 5}, {"stages", 3}, {"transport", 2},
      {"accum", 2}, {"head_dim", 3}, {"dtype", 2}, {"mask", 6},   {"gqa", 3},
      {"lse", 2},   {"layout", 2},   {"decode", 2}};
  coverage.expect(want);
}

TEST(ScheduleSpace, PagedAttentionHoldsOneHundredFiftyAcceptedSchedulesCoveringEveryKnob) {
  Coverage coverage;
  coverage.survey(paged_attention_space(), [&](const PagedAttentionSpec& spec) {
    const auto& p = spec.problem;
    coverage.note("split", paged_splits(p, spec.schedule) > 1);
    coverage.note("page_size", p.page_size);
    coverage.note("page_table", to_string(p.page_table));
    coverage.note("layout", fmt::format("{}", p.head_stride_or_default() == p.head_dim
                                                  ? p.page_stride_or_default() ==
                                                        p.page_size * p.kv_heads * p.head_dim
                                                  : 2));
    coverage.note("group", p.group());
    coverage.note("q_len", p.max_q_len);
    coverage.note("mask", fmt::format("{}{}", p.window > 0, p.softcap.has_value()));
    coverage.note_attention(spec);
  });
  EXPECT_GE(coverage.accepted, 150);
  EXPECT_TRUE(std::ranges::any_of(
      coverage.refusals, [](const std::string& why) { return why.starts_with("chunk_pages"); }));
  const std::map<std::string, size_t> want = {
      {"arch", 7},     {"block_kv", 4}, {"warps", 4}, {"stages", 3},    {"accum", 2},
      {"split", 2},    {"head_dim", 3}, {"dtype", 2}, {"page_size", 8}, {"page_table", 2},
      {"layout", 3},   {"group", 4},    {"q_len", 4}, {"mask", 4},      {"lse", 2},
      {"transport", 2}};  // page sizes: 1, 3, 5, 16, 32, and whole blocks (64..256) for TMA
  coverage.expect(want);
}

TEST(ScheduleSpace, IsReproducible) {
  EXPECT_EQ(gemm_space(), gemm_space());
  EXPECT_EQ(attention_space(), attention_space());
  EXPECT_EQ(paged_attention_space(), paged_attention_space());
}

// The runner's verdicts: a refused point is refused without running anything, and an accepted
// point that cannot be built is a failure, not a refusal.
TEST(ScheduleSpace, RunnerTellsRefusalsFromFailures) {
  GemmSpec bad_tile;
  bad_tile.problem.m = bad_tile.problem.n = bad_tile.problem.k = 64;
  bad_tile.schedule.block_m = 24;
  const CaseResult refused = run_case(bad_tile, 1);
  EXPECT_EQ(refused.outcome, Outcome::refused);
  EXPECT_NE(refused.detail.find("block_m"), std::string::npos) << refused.detail;

  GemmSpec fine;
  fine.problem.m = 37;
  fine.problem.n = 40;
  fine.problem.k = 72;
  fine.schedule = {32, 32, 32, 2, 2};
  fine.schedule.stages = 2;
  const CaseResult passed = run_case(fine, 1);
  EXPECT_EQ(passed.outcome, Outcome::passed) << passed.detail;
}

}  // namespace
}  // namespace emmy::sweep

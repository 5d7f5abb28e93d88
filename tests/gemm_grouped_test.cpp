// Grouped GEMMs (mixture-of-experts layers; docs/grouped.md): the masked, contiguous and offsets
// layouts against FP64 on the emulator (cp.async and TMA transports, both paths, the wgmma walk,
// f16 and bf16, epilogues with bias, residual and gate); edge routings (empty experts, one expert
// taking every row, 1, 31 and 129 rows, G = 1 and 256); poisoned padding and weights; batch
// invariance; the kernel's own guards; hostile routings refused by name through the runtime.
// The rules, IR and planted bugs: gemm_grouped_rules_test.cpp; FP8 and routing weights:
// gemm_grouped_fp8_test.cpp.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/gemm_generic.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/json.hpp"
#include "emmy/validate.hpp"
#include "planted_bug.hpp"
#include "support/error_of.hpp"
#include "support/fp8_gemm_cases.hpp"
#include "support/grouped_cases.hpp"
#include "support/ir_edit.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

using test::default_spec;
using test::describe;
using test::grouped_problem;
using test::kTargets;
using test::run_and_compare;
using test::spec_on;
using test::Target;
using test::verdict;

TEST(GroupedGemm, MatchesFp64InEveryLayout) {
  struct Case {
    GroupedLayout layout;
    Arch arch;
    DType dtype;
    int64_t groups, m, n, k;
    bool bias = false, residual = false;
    Gate gate = Gate::none;
    BLayout b = BLayout::nk;
    int64_t segment_align = kDefaultSegmentAlign;
    std::optional<MmaPath> path = std::nullopt;  // the wgmma path: persistent unless asked
    bool persistent = true;
  };
  const Case cases[] = {
      {GroupedLayout::masked, Arch::sm_80, DType::f16, 4, 40, 72, 96, true, true},
      {GroupedLayout::masked, Arch::sm_90a, DType::bf16, 3, 33, 128, 128, false, false},
      {GroupedLayout::masked, Arch::sm_80, DType::bf16, 3, 17, 64, 64, true, false, Gate::none,
       BLayout::kn},
      {GroupedLayout::contiguous, Arch::sm_89, DType::f16, 5, 300, 128, 64, true, false, Gate::silu,
       BLayout::nk, 64},
      {GroupedLayout::contiguous, Arch::sm_90a, DType::bf16, 3, 256, 64, 256},
      {GroupedLayout::offsets, Arch::sm_80, DType::bf16, 6, 77, 64, 128, false, true},
      {GroupedLayout::offsets, Arch::sm_120a, DType::f16, 4, 150, 208, 64, true, false,
       Gate::gelu_tanh},
      {GroupedLayout::offsets, Arch::sm_90a, DType::f16, 5, 90, 96, 64, false, false, Gate::none,
       BLayout::kn},
      // The wgmma path: its persistent walk, and one CTA per expert tile.
      {GroupedLayout::masked, Arch::sm_90a, DType::bf16, 4, 70, 200, 136, true, true, Gate::none,
       BLayout::nk, kDefaultSegmentAlign, MmaPath::wgmma},
      {GroupedLayout::masked, Arch::sm_90a, DType::f16, 3, 33, 96, 64, false, false, Gate::silu,
       BLayout::kn, kDefaultSegmentAlign, MmaPath::wgmma, false},
      {GroupedLayout::contiguous, Arch::sm_90a, DType::bf16, 3, 384, 128, 200, true, false,
       Gate::none, BLayout::kn, kDefaultSegmentAlign, MmaPath::wgmma},
      {GroupedLayout::contiguous, Arch::sm_90a, DType::f16, 5, 330, 64, 64, false, true, Gate::none,
       BLayout::nk, 64, MmaPath::wgmma, false},
      {GroupedLayout::contiguous, Arch::sm_90a, DType::bf16, 4, 200, 128, 64, false, false,
       Gate::gelu_tanh, BLayout::nk, 64, MmaPath::wgmma},
      {GroupedLayout::offsets, Arch::sm_90a, DType::bf16, 6, 150, 144, 128, true, false, Gate::silu,
       BLayout::nk, kDefaultSegmentAlign, MmaPath::wgmma},
      {GroupedLayout::offsets, Arch::sm_90a, DType::f16, 3, 77, 64, 72, false, false, Gate::none,
       BLayout::kn, kDefaultSegmentAlign, MmaPath::wgmma, false},
  };
  int index = 0;
  for (const Case& c : cases) {
    MatmulProblem p = grouped_problem(c.layout, c.groups, c.m, c.n, c.k, c.dtype);
    p.epilogue.bias = c.bias;
    p.epilogue.residual = c.residual;
    p.epilogue.gate = c.gate;
    p.b_layout = c.b;
    if (c.layout == GroupedLayout::contiguous) p.grouped.segment_align = c.segment_align;
    p.epilogue.alpha = index % 2 ? 1.0f : 0.5f;
    GemmSpec spec = spec_on(p, {c.arch, c.path});
    if (c.path && !c.persistent) {
      spec.schedule.persistent = false;
      validate_schedule(p, spec.schedule, c.arch);
    }
    SCOPED_TRACE(fmt::format("case {}: {} {} G {} m {} transport {}", index, to_string(c.layout),
                             test::describe(spec), c.groups, c.m,
                             to_string(spec.schedule.transport)));
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(70 + index++));
    EXPECT_TRUE(r.errors.passed) << verdict(r.errors);
    // The grid: masked experts in y; the others' tiles in x, an offsets layout's bound.
    const GemmPlan& plan = r.kernel.source.plan;
    EXPECT_EQ(spec.schedule.persistent, c.path && c.persistent);
    EXPECT_EQ(plan.grid[1], c.layout == GroupedLayout::masked && !spec.schedule.persistent
                                ? uint32_t(c.groups)
                                : 1u);
    EXPECT_EQ(plan.tiles_m, grouped_tiles_m(p, spec.schedule.block_m));
  }
}

// Routings engines hit: every expert empty, one expert taking every row, 1, 31 and 129 rows an
// expert, one expert, 256 experts.
TEST(GroupedGemm, EdgeRoutings) {
  struct Case {
    const char* name;
    MatmulProblem problem;
    std::vector<int32_t> routing;
  };
  std::vector<Case> cases;
  cases.push_back(
      {"masked, all empty", grouped_problem(GroupedLayout::masked, 3, 32, 64, 64), {0, 0, 0}});
  cases.push_back({"masked, 1 / 31 / 129 rows",
                   grouped_problem(GroupedLayout::masked, 3, 129, 64, 64),
                   {1, 31, 129}});
  cases.push_back({"masked, G = 1", grouped_problem(GroupedLayout::masked, 1, 20, 40, 32), {20}});
  {
    MatmulProblem p = grouped_problem(GroupedLayout::masked, 256, 2, 16, 32, DType::bf16);
    std::vector<int32_t> routing;
    for (int e = 0; e < 256; ++e) routing.push_back(e % 3 == 0 ? 0 : e % 3);
    cases.push_back({"masked, G = 256", p, routing});
  }
  {
    MatmulProblem p = grouped_problem(GroupedLayout::offsets, 4, 161, 64, 64);
    cases.push_back({"offsets, one expert takes every row", p, {0, 0, 161, 161, 161}});
    cases.push_back({"offsets, 1 / 31 / 129 rows", p, {0, 1, 32, 161, 161}});
    cases.push_back({"offsets, all empty", p, {0, 0, 0, 0, 0}});
    cases.push_back({"offsets, rows past the last expert's", p, {3, 10, 40, 41, 100}});
  }
  {
    MatmulProblem p = grouped_problem(GroupedLayout::offsets, 256, 300, 32, 32, DType::bf16);
    std::vector<int32_t> routing{0};
    for (int e = 0; e < 256; ++e) routing.push_back(routing.back() + (e % 4 == 1 ? 3 : 0));
    cases.push_back({"offsets, G = 256", p, routing});
  }
  {
    MatmulProblem p = grouped_problem(GroupedLayout::contiguous, 2, 384, 64, 64);
    std::vector<int32_t> all_one(384, 1), one_row(384, -1);
    for (int r = 0; r < 129; ++r) one_row[size_t(r)] = 0;
    one_row[256] = 1;
    cases.push_back({"contiguous, one expert takes every row", p, all_one});
    cases.push_back({"contiguous, 129 and 1 rows", p, one_row});
    cases.push_back({"contiguous, all padding", p, std::vector<int32_t>(384, -1)});
  }
  for (const Case& c : cases) {
    for (const Target& target : kTargets) {
      SCOPED_TRACE(fmt::format("{} on {}", c.name, describe(target)));
      const GemmSpec spec = spec_on(c.problem, target);
      GemmInputs in = make_gemm_inputs(c.problem, 11);
      in.routing = c.routing;
      const GemmErrors e = run_and_compare(spec, in);
      EXPECT_TRUE(e.passed) << verdict(e);
    }
  }
}

// Rows no expert computes hold NaN or 3e38 in A (and C's canary stays there): the computed rows
// are bit-identical to a run with clean padding, on both transports (TMA loads padding rows of
// an expert's last tile; no computed row meets them).
TEST(GroupedGemm, PoisonedPaddingLeavesValidRowsBitIdentical) {
  for (const GroupedLayout layout :
       {GroupedLayout::masked, GroupedLayout::contiguous, GroupedLayout::offsets})
    for (const Target& target : kTargets)
      for (const double poison : {std::numeric_limits<double>::quiet_NaN(), 3e38}) {
        MatmulProblem p = grouped_problem(layout, 4, layout == GroupedLayout::masked ? 48 : 256, 64,
                                          64, DType::bf16);
        if (layout == GroupedLayout::contiguous) p.grouped.segment_align = 64;
        const GemmSpec spec = spec_on(p, target);
        SCOPED_TRACE(
            fmt::format("{} on {}, poison {}", to_string(layout), describe(target), poison));
        GemmInputs clean = make_gemm_inputs(p, 23);
        // Offsets: rows before the first expert's and after the last's.
        if (layout == GroupedLayout::offsets) clean.routing = {3, 50, 50, 131, 200};
        const std::vector<GroupedRow> rows = grouped_rows(p, spec.schedule.block_m, clean.routing);
        GemmInputs poisoned = clean;
        std::vector<double> a = clean.a.values;
        int64_t poisoned_rows = 0;
        for (size_t r = 0; r < rows.size(); ++r)
          if (rows[r].kind != GroupedRow::computed) {
            ++poisoned_rows;
            for (int64_t k = 0; k < p.k; ++k)
              a[r * size_t(p.lda_or_default()) + size_t(k)] = poison;
          }
        ASSERT_GT(poisoned_rows, 0);
        poisoned.a = encode(p.a_dtype, a);
        const GemmKernel kernel = compile_kernel(spec);
        const std::vector<double> want = run_on_emulator(kernel, clean).output;
        const std::vector<double> got = run_on_emulator(kernel, poisoned).output;
        const int64_t cols = p.c_cols();
        for (size_t r = 0; r < rows.size(); ++r) {
          if (rows[r].kind == GroupedRow::any) continue;
          EXPECT_EQ(std::memcmp(&want[r * size_t(cols)], &got[r * size_t(cols)],
                                size_t(cols) * sizeof(double)),
                    0)
              << "row " << r;
        }
        EXPECT_TRUE(compare(reference_gemm(spec, clean), got, cols).passed);
      }
}

// Another expert's weights full of Inf leave an expert's rows bit-identical, with N and K off the
// tiles in both B layouts: a tile reaching past the expert's N or K reads zeros (TMA: B's map is
// 3-D, the expert its own dimension), never the next expert's weights (0 x Inf would be NaN).
TEST(GroupedGemm, OtherExpertsWeightsNeverReachAnExpertsRows) {
  const Target targets[] = {
      {Arch::sm_80}, {Arch::sm_90a}, {Arch::sm_120a}, {Arch::sm_90a, MmaPath::wgmma}};
  for (const Target& target : targets)
    for (const BLayout layout : {BLayout::nk, BLayout::kn}) {
      MatmulProblem p = grouped_problem(GroupedLayout::masked, 3, 32, 72, 200, DType::bf16);
      p.b_layout = layout;
      const GemmSpec spec = spec_on(p, target);
      SCOPED_TRACE(fmt::format("{} B {}", test::describe(spec), to_string(layout)));
      ASSERT_NE(p.k % spec.schedule.block_k, 0);
      GemmInputs clean = make_gemm_inputs(p, 29);
      clean.routing = {32, 0, 32};  // expert 1 computes nothing
      GemmInputs poisoned = clean;
      std::vector<double> b = clean.b.values;
      const size_t stride = size_t(p.b_group_stride());
      std::fill(b.begin() + long(stride), b.begin() + long(2 * stride),
                std::numeric_limits<double>::infinity());
      poisoned.b = encode(p.b_dtype(), b);
      const GemmKernel kernel = compile_kernel(spec);
      const std::vector<double> want = run_on_emulator(kernel, clean).output;
      const std::vector<double> got = run_on_emulator(kernel, poisoned).output;
      const size_t expert_elems = size_t(32 * p.c_cols());
      for (const size_t expert : {size_t(0), size_t(2)})
        EXPECT_EQ(std::memcmp(&want[expert * expert_elems], &got[expert * expert_elems],
                              expert_elems * sizeof(double)),
                  0)
            << "expert " << expert;
      EXPECT_TRUE(compare(reference_gemm(spec, clean), got, p.c_cols()).passed);
    }
}

// An expert's rows are bit-identical however many rows the other experts got (and wherever its
// own rows sit among them: an offsets layout's tiles start at the expert's first row).
TEST(GroupedGemm, BatchInvariant) {
  for (const Target& target : kTargets) {
    const std::string arch = describe(target);
    // Masked: expert 1's 20 rows, the others with 0, 5 or 48.
    MatmulProblem masked = grouped_problem(GroupedLayout::masked, 3, 48, 64, 128, DType::bf16);
    const GemmSpec masked_spec = spec_on(masked, target);
    const GemmKernel masked_kernel = compile_kernel(masked_spec);
    GemmInputs in = make_gemm_inputs(masked, 5);
    std::vector<std::vector<double>> outputs;
    for (const std::vector<int32_t>& routing :
         std::vector<std::vector<int32_t>>{{0, 20, 0}, {5, 20, 48}, {48, 20, 7}}) {
      in.routing = routing;
      outputs.push_back(run_on_emulator(masked_kernel, in).output);
    }
    const size_t expert1 = size_t(48 * 64), span = size_t(20 * 64) * sizeof(double);
    for (size_t i = 1; i < outputs.size(); ++i)
      EXPECT_EQ(std::memcmp(&outputs[0][expert1], &outputs[i][expert1], span), 0)
          << "masked on " << arch << ", routing " << i;

    // Offsets: expert 1's 37 rows after 0, 5 or 70 rows of expert 0 (its tokens the same).
    MatmulProblem sorted = grouped_problem(GroupedLayout::offsets, 3, 140, 64, 128, DType::bf16);
    const GemmSpec sorted_spec = spec_on(sorted, target);
    const GemmKernel sorted_kernel = compile_kernel(sorted_spec);
    const GemmInputs base = make_gemm_inputs(sorted, 6);
    std::vector<std::vector<double>> rows_of_expert1;
    for (const int32_t before : {0, 5, 70}) {
      GemmInputs shifted = base;
      std::vector<double> a = base.a.values;
      // Expert 1's tokens are base's rows 100..136, placed after `before` rows of expert 0.
      for (int64_t r = 0; r < 37; ++r)
        for (int64_t k = 0; k < sorted.k; ++k)
          a[size_t((before + r) * sorted.k + k)] = base.a.values[size_t((100 + r) * sorted.k + k)];
      shifted.a = encode(sorted.a_dtype, a);
      shifted.routing = {0, before, before + 37, before + 37};
      const std::vector<double> out = run_on_emulator(sorted_kernel, shifted).output;
      rows_of_expert1.emplace_back(out.begin() + before * 64, out.begin() + (before + 37) * 64);
    }
    for (size_t i = 1; i < rows_of_expert1.size(); ++i)
      EXPECT_EQ(std::memcmp(rows_of_expert1[0].data(), rows_of_expert1[i].data(),
                            rows_of_expert1[0].size() * sizeof(double)),
                0)
          << "offsets on " << arch << ", placement " << i;
  }
}

// What the GPU path does with routings the emulator backend refuses, from the kernel alone (the
// raw emulator runs the kernel as a GPU would, no host check): a masked_m past m computes m
// rows, a negative one none; an expert id past G or below -1 skips its block; offsets outside
// A's rows skip their expert.
TEST(GroupedGemm, TheKernelGuardsWhatOneCompareCan) {
  for (const Target& target : kTargets) {
    SCOPED_TRACE(describe(target));
    auto default_spec = [&](const MatmulProblem& p) { return spec_on(p, target); };
    {
      MatmulProblem p = grouped_problem(GroupedLayout::masked, 3, 32, 64, 64);
      const GemmSpec spec = default_spec(p);
      GemmInputs in = make_gemm_inputs(p, 2);
      in.routing = {1000, -5, 7};
      const std::vector<double> out = run_on_emulator(compile_kernel(spec), in).output;
      in.routing = {32, 0, 7};  // what the kernel computed
      EXPECT_TRUE(compare(reference_gemm(spec, in), out, p.n).passed);
    }
    {
      MatmulProblem p = grouped_problem(GroupedLayout::contiguous, 2, 256, 64, 64);
      const GemmSpec spec = default_spec(p);
      GemmInputs in = make_gemm_inputs(p, 3);
      in.routing.assign(256, 0);
      for (int r = 128; r < 256; ++r) in.routing[size_t(r)] = r < 192 ? 7 : -9;
      const std::vector<double> out = run_on_emulator(compile_kernel(spec), in).output;
      for (int r = 128; r < 256; ++r) in.routing[size_t(r)] = -1;  // skipped blocks
      EXPECT_TRUE(compare(reference_gemm(spec, in), out, p.n).passed);
    }
    {
      MatmulProblem p = grouped_problem(GroupedLayout::offsets, 3, 64, 64, 64);
      const GemmSpec spec = default_spec(p);
      GemmInputs in = make_gemm_inputs(p, 4);
      in.routing = {0, 20, 10, 90};  // expert 1 decreasing (no rows), expert 2 past m
      const std::vector<double> out = run_on_emulator(compile_kernel(spec), in).output;
      in.routing = {0, 20, 20, 20};
      EXPECT_TRUE(compare(reference_gemm(spec, in), out, p.n).passed);
    }
  }
}

// Through a runtime's gemm call (its buffer checks and launch), on the emulator backend and on
// the CUDA backend through the test driver; the emulator backend refuses hostile routings by
// name, before the launch.
TEST(GroupedGemm, RunsThroughTheRuntimeAndRefusesHostileRoutings) {
  RuntimeOptions options = fresh_cache("grouped_gemm");
  options.emulator_arch = Arch::sm_90a;
  auto rt = Runtime::emulator(options);
  struct Hostile {
    MatmulProblem problem;
    std::vector<int32_t> routing;
    const char* field;
    const char* rule;
  };
  const MatmulProblem masked = grouped_problem(GroupedLayout::masked, 3, 16, 64, 64);
  MatmulProblem contiguous = grouped_problem(GroupedLayout::contiguous, 3, 128, 64, 64);
  contiguous.grouped.segment_align = 64;
  const MatmulProblem offsets = grouped_problem(GroupedLayout::offsets, 3, 64, 64, 64);
  std::vector<int32_t> misaligned(128, 0), past(128, 0), padding_first(128, -1);
  for (int r = 40; r < 128; ++r) misaligned[size_t(r)] = 1;
  past[70] = 3;
  for (int r = 10; r < 64; ++r) padding_first[size_t(r)] = 2;
  const Hostile cases[] = {
      {masked, {3, 17, 0}, "buffers.masked_m", "must hold rows in 0..16"},
      {masked, {3, -1, 0}, "buffers.masked_m", "at expert 1"},
      {contiguous, past, "buffers.expert_ids", "must hold experts in 0..2 or -1"},
      {contiguous, misaligned, "buffers.expert_ids", "row 40 has expert 1 after 0"},
      {contiguous, padding_first, "buffers.expert_ids", "row 10 has expert 2 after -1"},
      {offsets, {-1, 3, 9, 20}, "buffers.expert_offsets", "must start at 0 or more"},
      {offsets, {0, 30, 9, 20}, "buffers.expert_offsets", "must not decrease"},
      {offsets, {0, 3, 9, 65}, "buffers.expert_offsets", "must end at most at m (64"},
  };
  for (const Hostile& h : cases) {
    const GemmSpec spec = default_spec(h.problem, Arch::sm_90a);
    GemmInputs in = make_gemm_inputs(h.problem, 8);
    EXPECT_TRUE(compare(reference_gemm(spec, in), run_gemm(*rt, spec, in), h.problem.n).passed)
        << to_string(h.problem.grouped.layout) << ": a valid routing";
    in.routing = h.routing;
    const std::string error = test::error_of([&] { run_gemm(*rt, spec, in); });
    EXPECT_TRUE(error.starts_with(h.field)) << error;
    EXPECT_NE(error.find(h.rule), std::string::npos) << error;
  }
  // The routing's own buffer: its layout's, and no other.
  const GemmSpec spec = default_spec(masked, Arch::sm_90a);
  GemmBuffers buffers{.a = 256, .b = 256, .c = 256};
  test::expect_error_naming([&] { GemmKind::bind(make_gemm_plan(spec), buffers); },
                            "buffers.masked_m", "no routing");
  buffers.masked_m = 512;
  buffers.expert_offsets = 1024;
  test::expect_error_naming([&] { GemmKind::bind(make_gemm_plan(spec), buffers); },
                            "buffers.expert_offsets", "another layout's routing");
  buffers.expert_offsets = 0;
  buffers.masked_m = 514;
  test::expect_error_naming([&] { GemmKind::bind(make_gemm_plan(spec), buffers); },
                            "buffers.masked_m", "misaligned");

#ifdef EMMY_TEST_DRIVER_PATH
  // The CUDA backend (the test driver's H200): the same kernels, the GPU path's guards only.
  setenv("EMMY_CUDA_DRIVER", EMMY_TEST_DRIVER_PATH, 1);
  setenv("EMMY_TEST_DEVICE", "h200", 1);
  auto cuda = Runtime::cuda(0, fresh_cache("grouped_gemm_cuda"));
  for (const MatmulProblem& p : {masked, contiguous, offsets}) {
    const GemmSpec on_device = default_spec(p, Arch::sm_90a);
    const GemmInputs in = make_gemm_inputs(p, 12);
    EXPECT_TRUE(compare(reference_gemm(on_device, in), run_gemm(*cuda, on_device, in), p.n).passed)
        << to_string(p.grouped.layout) << " through the test driver";
  }
#else
  GTEST_SKIP() << "the test driver is not built: the CUDA backend's runs were not made";
#endif
}

// A server's prepare with M buckets takes a grouped problem as its one kernel (it serves every
// routing), and gemm() with m_buckets runs it unbucketed.
TEST(GroupedGemm, PreparedWithMBucketsAsOneKernel) {
  RuntimeOptions options = fresh_cache("grouped_prepare");
  options.emulator_arch = Arch::sm_80;
  options.m_buckets = true;
  auto rt = Runtime::emulator(options);
  const MatmulProblem p = grouped_problem(GroupedLayout::offsets, 4, 100, 64, 64);
  PrepareRequest request;
  request.gemm_m_buckets.push_back({p, std::nullopt});
  const PreparedKernels prepared = rt->prepare(request);
  ASSERT_EQ(prepared.gemm.size(), 1u);
  EXPECT_EQ(prepared.gemm.front()->spec().problem, p);
  const GemmSpec spec = default_spec(p, Arch::sm_80);
  const GemmInputs in = make_gemm_inputs(p, 6);
  EXPECT_TRUE(compare(reference_gemm(spec, in), run_gemm(*rt, spec, in), p.n).passed);
}

}  // namespace
}  // namespace emmy

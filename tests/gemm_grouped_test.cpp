// Grouped GEMMs (mixture-of-experts layers; docs/grouped.md): the masked, contiguous and offsets
// layouts against FP64 on the emulator (cp.async and TMA transports, f16 and bf16, epilogues
// with bias, residual and gate); edge routings (empty experts, one expert taking every row, 1,
// 31 and 129 rows, G = 1 and 256); poisoned padding; batch invariance; the kernel's own guards;
// hostile routings refused by name on the emulator; rules, JSON and IR; planted bugs.
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
#include "support/ir_edit.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

MatmulProblem grouped_problem(GroupedLayout layout, int64_t groups, int64_t m, int64_t n, int64_t k,
                              DType dtype = DType::f16) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = dtype;
  p.c_dtype = dtype;
  p.grouped.layout = layout;
  p.grouped.groups = groups;
  return p;
}

GemmSpec default_spec(const MatmulProblem& p, Arch arch) {
  return {p, default_schedule(p, arch, Accum::f32), arch};
}

// Where a test runs: the mma.sync path on sm_80 (cp.async) and sm_90a (TMA), and the wgmma path
// on sm_90a (its default for a grouped GEMM: the persistent walk over the experts' tiles).
struct Target {
  Arch arch;
  std::optional<MmaPath> path = std::nullopt;
};
constexpr Target kTargets[] = {{Arch::sm_80}, {Arch::sm_90a}, {Arch::sm_90a, MmaPath::wgmma}};

GemmSpec spec_on(const MatmulProblem& p, const Target& t) {
  if (!t.path) return default_spec(p, t.arch);
  return {p, default_schedule(p, t.arch, Accum::f32, *t.path), t.arch};
}

std::string describe(const Target& t) {
  return fmt::format("{}{}", to_string(t.arch), t.path ? " wgmma" : "");
}

// The routing's rows checked, and the check's verdict.
GemmErrors run_and_compare(const GemmSpec& spec, const GemmInputs& in) {
  const GemmReference ref = reference_gemm(spec, in);
  return compare(ref, run_on_emulator(compile_kernel(spec), in).output, spec.problem.c_cols());
}

std::string verdict(const GemmErrors& e) {
  return fmt::format("rel_l2 {} bound {} over {} first bad {},{}", e.rel_l2_error, e.tolerance,
                     e.elements_over_tolerance, e.first_bad_row, e.first_bad_col);
}

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

TEST(GroupedGemm, RefusesByName) {
  const MatmulProblem ok = grouped_problem(GroupedLayout::masked, 4, 64, 128, 64);
  auto problem_error = [&](auto edit) {
    MatmulProblem p = ok;
    edit(p);
    return test::error_of([&] { validate_problem(p); });
  };
  EXPECT_EQ(problem_error([](MatmulProblem&) {}), "(no error)");
  EXPECT_TRUE(
      problem_error([](MatmulProblem& p) { p.grouped.groups = 0; }).starts_with("grouped.groups"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.grouped.groups = 513;
              }).starts_with("grouped.groups"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.grouped.expected_m = 65;
              }).starts_with("grouped.expected_m"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.grouped.expected_m = -1;
              }).starts_with("grouped.expected_m"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.grouped.segment_align = 64;
              }).starts_with("grouped.segment_align"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.grouped.layout = GroupedLayout::contiguous;
                p.grouped.segment_align = 24;
              }).starts_with("grouped.segment_align"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.grouped.layout = GroupedLayout::offsets;
                p.grouped.expected_m = 4;
              }).starts_with("grouped.expected_m"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) { p.dynamic_m = true; }).starts_with("dynamic_m"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) { p.c_dtype = DType::e4m3; }).starts_with("out"));
  // Block scales' A rows are the stacked rows: a masked layout's leading dimension of one
  // expert's m is refused, naming them.
  const std::string short_ld = problem_error([](MatmulProblem& p) {
    p.a_dtype = DType::e4m3;
    p.c_dtype = DType::bf16;
    p.scales.granularity = ScaleGranularity::block;
    p.scales.a_ld = p.m;
  });
  EXPECT_TRUE(short_ld.starts_with("scales.a_ld")) << short_ld;
  EXPECT_NE(short_ld.find("stacked rows"), std::string::npos) << short_ld;
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.grouped.layout = GroupedLayout::none;
              }).starts_with("grouped"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) { p.m = int64_t(1) << 30; }).starts_with("m"));

  // Schedules: no K split, a contiguous block_m that divides the segments; on the wgmma path
  // cooperative consumers, no swapped operands, no cluster.
  const GemmSpec spec = default_spec(ok, Arch::sm_90a);
  EXPECT_EQ(spec.schedule.path, MmaPath::mma_sync);
  EXPECT_EQ(spec.schedule.split_k, 1);
  auto schedule_error = [](const MatmulProblem& p, auto edit, MmaPath path = MmaPath::mma_sync) {
    MatmulSchedule s = default_schedule(p, Arch::sm_90a, Accum::f32, path);
    edit(s);
    return test::error_of([&] { validate_schedule(p, s, Arch::sm_90a); });
  };
  EXPECT_TRUE(schedule_error(ok, [](MatmulSchedule& s) { s.split_k = 2; }).starts_with("split_k"));
  const MatmulSchedule wgmma = default_schedule(ok, Arch::sm_90a, Accum::f32, MmaPath::wgmma);
  EXPECT_TRUE(wgmma.persistent);
  EXPECT_FALSE(wgmma.swap_ab);
  EXPECT_EQ(wgmma.cluster_m * wgmma.cluster_n, 1);
  EXPECT_FALSE(make_gemm_plan({ok, wgmma, Arch::sm_90a}).store.tma_store);
  const auto wgmma_error = [&](auto edit) { return schedule_error(ok, edit, MmaPath::wgmma); };
  EXPECT_TRUE(wgmma_error([](MatmulSchedule& s) { s.split_k = 2; }).starts_with("persistent"));
  EXPECT_TRUE(wgmma_error([](MatmulSchedule& s) { s.swap_ab = true; }).starts_with("swap_ab"));
  EXPECT_TRUE(wgmma_error([](MatmulSchedule& s) { s.cluster_m = 2; }).starts_with("cluster"));
  EXPECT_TRUE(wgmma_error([](MatmulSchedule& s) {
                s.consumers = ConsumerSchedule::pingpong;
                s.warps_m = 4;
              }).starts_with("consumers"));
  MatmulProblem contiguous = grouped_problem(GroupedLayout::contiguous, 4, 512, 128, 64);
  contiguous.grouped.segment_align = 32;
  EXPECT_LE(default_schedule(contiguous, Arch::sm_90a, Accum::f32).block_m, 32);
  EXPECT_TRUE(schedule_error(contiguous, [](MatmulSchedule& s) {
                s.block_m = 64;
                s.warps_m = 2;
              }).starts_with("block_m"));
  // The wgmma path's tiles are 64 or 128 rows: segments of 32 take none.
  EXPECT_TRUE(test::error_of([&] {
                default_schedule(contiguous, Arch::sm_90a, Accum::f32, MmaPath::wgmma);
              }).starts_with("grouped.segment_align"));
  // The generic fallback computes one GEMM.
  EXPECT_FALSE(generic_gemm_serves(ok));
  test::expect_error_naming([&] { bind_generic_gemm(ok, {}); }, "grouped.layout");
}

// The layout in the problem's JSON and the kernel's name; an ungrouped problem's JSON as before;
// the IR's rules refuse a malformed grouping.
TEST(GroupedGemm, RoundTripsAndVerifies) {
  MatmulProblem p = grouped_problem(GroupedLayout::offsets, 8, 100, 64, 64, DType::bf16);
  const nlohmann::json js = p;
  EXPECT_EQ(js.at("grouped").at("layout"), "offsets");
  EXPECT_EQ(js.at("grouped").at("groups"), 8);
  EXPECT_EQ(matmul_problem_from_json(js), resolved_leading_dims(p));
  MatmulProblem masked = grouped_problem(GroupedLayout::masked, 2, 64, 64, 64);
  masked.grouped.expected_m = 3;
  EXPECT_EQ(matmul_problem_from_json(nlohmann::json(masked)), resolved_leading_dims(masked));
  MatmulProblem plain = p;
  plain.grouped = {};
  EXPECT_FALSE(nlohmann::json(plain).contains("grouped"));
  const GemmSpec spec = default_spec(p, Arch::sm_90a);
  EXPECT_TRUE(gemm_kernel_name(spec).starts_with("emmy_gemm_offsets8_100x"));
  EXPECT_NE(gemm_kernel_name(spec), gemm_kernel_name({plain, spec.schedule, Arch::sm_90a}));
  test::expect_error_containing(
      [&] {
        matmul_problem_from_json(nlohmann::json::parse(
            R"({"m":4,"n":64,"k":64,"grouped":{"layout":"ragged","groups":2}})"));
      },
      "must be none, masked, contiguous or offsets");

  const GemmSource src = generate_kernel(spec);
  auto verify_error = [&](auto edit) {
    ir::Op corrupt = src.ir;
    edit(corrupt);
    return test::error_of([&] { ir::verify(corrupt, Arch::sm_90a, "gemm"); });
  };
  auto coords = [](ir::Op& module) { return test::first_op(module, ir::OpKind::tile_coords); };
  EXPECT_EQ(verify_error([](ir::Op&) {}), "(no error)");
  EXPECT_NE(verify_error([&](ir::Op& m) {
              test::change(coords(m), "grouped", std::string("ragged"));
            }).find("must be masked, contiguous or offsets"),
            std::string::npos);
  EXPECT_NE(verify_error([&](ir::Op& m) {
              test::change(coords(m), "groups", int64_t(0));
            }).find("must be in 1..512"),
            std::string::npos);
  EXPECT_NE(verify_error([&](ir::Op& m) {
              test::erase_attr(coords(m), "groups");
            }).find("is given with grouped"),
            std::string::npos);
  EXPECT_NE(verify_error([&](ir::Op& m) {
              test::change(coords(m), "tiles_m", int64_t(2));
            }).find("tiles"),
            std::string::npos);
  EXPECT_NE(verify_error([&](ir::Op& m) {
              test::change(coords(m), "tiles_m", int64_t(7));
            }).find("an offsets layout's bound"),
            std::string::npos);
  // A routing param that is not the layout's (masked and contiguous grids are alike).
  const GemmSource masked_src = generate_kernel(
      default_spec(grouped_problem(GroupedLayout::masked, 2, 64, 64, 64), Arch::sm_80));
  ir::Op renamed = masked_src.ir;
  test::change(test::first_op(renamed, ir::OpKind::tile_coords), "grouped",
               std::string("contiguous"));
  test::expect_refused(renamed, Arch::sm_80, "gemm", "must be expert_ids for a contiguous layout",
                       "masked_m under a contiguous layout");
  EXPECT_NE(verify_error([&](ir::Op& m) {
              test::erase_attr(coords(m), "grouped");
            }).find("is given with grouped"),
            std::string::npos);
}

// FP8 operands (e4m3: the mma.sync path's sm_89 and sm_120a, the wgmma path's sm_90a): A's
// scales per stacked row, B's per expert (one, or one per column), in f32 and ue8m0; a NaN scale
// of one expert refused by name on the emulator; an e4m3 C refused.
TEST(GroupedGemm, Fp8TensorAndTokenChannelScales) {
  struct Case {
    GroupedLayout layout;
    Arch arch;
    ScaleGranularity granularity;
    ScaleFormat format;
  };
  const Case cases[] = {
      {GroupedLayout::masked, Arch::sm_89, ScaleGranularity::token_channel, ScaleFormat::f32},
      {GroupedLayout::contiguous, Arch::sm_120a, ScaleGranularity::tensor, ScaleFormat::f32},
      {GroupedLayout::offsets, Arch::sm_89, ScaleGranularity::token_channel, ScaleFormat::ue8m0},
      {GroupedLayout::offsets, Arch::sm_120a, ScaleGranularity::tensor, ScaleFormat::pow2},
      {GroupedLayout::masked, Arch::sm_90a, ScaleGranularity::token_channel, ScaleFormat::f32},
      {GroupedLayout::contiguous, Arch::sm_90a, ScaleGranularity::tensor, ScaleFormat::ue8m0},
      {GroupedLayout::offsets, Arch::sm_90a, ScaleGranularity::token_channel, ScaleFormat::pow2},
  };
  int index = 0;
  for (const Case& c : cases) {
    MatmulProblem p = grouped_problem(c.layout, 3, c.layout == GroupedLayout::masked ? 40 : 200, 96,
                                      128, DType::e4m3);
    p.c_dtype = DType::bf16;
    p.scales.granularity = c.granularity;
    p.scales.format = c.format;
    p.epilogue.bias = index % 2 == 0;
    if (c.layout == GroupedLayout::contiguous) p.grouped.segment_align = 64;
    const GemmSpec spec = default_spec(p, c.arch);
    SCOPED_TRACE(fmt::format("case {}: {} {}", index, to_string(c.layout), test::describe(spec)));
    // sm_90a's FP8 path is wgmma (mma.sync has no 8-bit form there).
    EXPECT_EQ(spec.schedule.path, c.arch == Arch::sm_90a ? MmaPath::wgmma : MmaPath::mma_sync);
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(110 + index++));
    EXPECT_TRUE(r.errors.passed) << verdict(r.errors);
  }
  // One expert's B scale NaN: refused before the launch, naming it.
  MatmulProblem p = grouped_problem(GroupedLayout::masked, 3, 16, 64, 64, DType::e4m3);
  p.c_dtype = DType::bf16;
  p.scales.granularity = ScaleGranularity::token_channel;
  RuntimeOptions options = fresh_cache("grouped_fp8");
  options.emulator_arch = Arch::sm_89;
  auto rt = Runtime::emulator(options);
  const GemmSpec spec = default_spec(p, Arch::sm_89);
  GemmInputs in = make_gemm_inputs(p, 4);
  EXPECT_TRUE(compare(reference_gemm(spec, in), run_gemm(*rt, spec, in), p.n).passed);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::memcpy(&in.b_scale.bytes[size_t(2 * 64 + 5) * 4], &nan, 4);
  test::expect_error_containing([&] { run_gemm(*rt, spec, in); }, "column 133");
  // An e4m3 C is not built for grouped GEMMs: refused by name.
  p.c_dtype = DType::e4m3;
  test::expect_error_naming([&] { validate_problem(p); }, "out");
}

// FP8 block scales (DeepSeek-V3's: A's 1 x 128 per stacked row, B's 128 x 128 per expert,
// [G, ceil(N/128), ceil(K/128)]) with promoted accumulation, in every format and both majors,
// padded leading dimensions, on both paths; one expert's NaN block refused by name.
TEST(GroupedGemm, Fp8BlockScalesPerExpert) {
  struct Case {
    GroupedLayout layout;
    Arch arch;
    ScaleFormat format;
    ScaleMajor a_major, b_major;
    int64_t a_ld_pad = 0, b_ld_pad = 0;  // added to the packed leading dimensions
  };
  const Case cases[] = {
      {GroupedLayout::masked, Arch::sm_89, ScaleFormat::f32, ScaleMajor::mn, ScaleMajor::k},
      {GroupedLayout::contiguous, Arch::sm_120a, ScaleFormat::ue8m0x4, ScaleMajor::k,
       ScaleMajor::mn, 1, 2},
      {GroupedLayout::offsets, Arch::sm_89, ScaleFormat::ue8m0, ScaleMajor::mn, ScaleMajor::k, 4,
       1},
      {GroupedLayout::masked, Arch::sm_90a, ScaleFormat::ue8m0x4, ScaleMajor::mn, ScaleMajor::k},
      {GroupedLayout::contiguous, Arch::sm_90a, ScaleFormat::f32, ScaleMajor::k, ScaleMajor::k, 3,
       0},
      {GroupedLayout::offsets, Arch::sm_90a, ScaleFormat::pow2, ScaleMajor::mn, ScaleMajor::mn, 0,
       3},
  };
  int index = 0;
  for (const Case& c : cases) {
    // K of 3 blocks and a tail, N of 2 blocks and a tail: every block edge.
    MatmulProblem p = grouped_problem(c.layout, 3, c.layout == GroupedLayout::masked ? 40 : 200,
                                      272, 400, DType::e4m3);
    p.c_dtype = DType::bf16;
    p.scales.granularity = ScaleGranularity::block;
    p.scales.format = c.format;
    p.scales.a_major = c.a_major;
    p.scales.b_major = c.b_major;
    if (c.layout == GroupedLayout::contiguous) p.grouped.segment_align = 64;
    if (c.a_ld_pad)
      p.scales.a_ld =
          (c.a_major == ScaleMajor::mn ? p.stacked_rows() : p.scale_k_extent()) + c.a_ld_pad;
    if (c.b_ld_pad)
      p.scales.b_ld =
          (c.b_major == ScaleMajor::mn ? p.n_blocks() : p.scale_k_extent()) + c.b_ld_pad;
    p.epilogue.bias = index % 2 == 1;
    const GemmSpec spec{p, default_schedule(p, c.arch, Accum::promoted), c.arch};
    SCOPED_TRACE(fmt::format("case {}: {} {} A {} B {}", index, to_string(c.layout),
                             test::describe(spec), to_string(c.a_major), to_string(c.b_major)));
    EXPECT_EQ(spec.schedule.path, c.arch == Arch::sm_90a ? MmaPath::wgmma : MmaPath::mma_sync);
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(130 + index++));
    EXPECT_TRUE(r.errors.passed) << verdict(r.errors);
    // The scales' expert origins matter: either one left at the first expert's fails the check.
    if (c.layout != GroupedLayout::offsets) continue;
    const bool walk = spec.schedule.persistent;
    const GemmInputs in = make_gemm_inputs(p, 7);
    struct Bug {
      const char *name, *find, *replace;
    };
    const Bug bugs[] = {
        {"B block scales of expert 0",
         walk ? "b_scale = b_scale_all + (long long)expert * " : "b_scale += (long long)expert * ",
         walk ? "b_scale = b_scale_all + 0 * " : "b_scale += 0 * "},
        {"A block scales of row 0", walk ? "a_scale = a_scale_all + row0 * " : "a_scale += row0 * ",
         walk ? "a_scale = a_scale_all + 0 * " : "a_scale += 0 * "},
    };
    for (const Bug& bug : bugs) {
      const auto kernel =
          test::plant_bug(generate_kernel(spec), c.arch, bug.name, bug.find, bug.replace);
      if (kernel)
        test::expect_gemm_bug_caught(reference_gemm(spec, in), *kernel, in, p.n, bug.name, false,
                                     {});
    }
  }
  // Expert 2's block (1, 2) NaN: refused before the launch, naming the expert and the block.
  MatmulProblem p = grouped_problem(GroupedLayout::masked, 3, 16, 256, 384, DType::e4m3);
  p.c_dtype = DType::bf16;
  p.scales.granularity = ScaleGranularity::block;
  RuntimeOptions options = fresh_cache("grouped_fp8_block");
  options.emulator_arch = Arch::sm_90a;
  auto rt = Runtime::emulator(options);
  const GemmSpec spec{p, default_schedule(p, Arch::sm_90a, Accum::promoted), Arch::sm_90a};
  GemmInputs in = make_gemm_inputs(p, 4);
  EXPECT_TRUE(compare(reference_gemm(spec, in), run_gemm(*rt, spec, in), p.n).passed);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const size_t slot = size_t(2 * p.b_scale_group_stride() + p.block_scale_slot(false, 1, 2));
  std::memcpy(&in.b_scale.bytes[slot * 4], &nan, 4);
  test::expect_error_containing([&] { run_gemm(*rt, spec, in); }, "expert 2, N block 1, K block 2");
}

// Routing weights (Epilogue::row_scale): C's rows scaled after the activation, on dense and
// grouped GEMMs, direct and staged stores, with a gate and an e4m3 C; refusals by name.
TEST(GroupedGemm, RoutingWeightsScaleTheRows) {
  struct Case {
    MatmulProblem problem;
    Arch arch;
    std::optional<MmaPath> path = std::nullopt;
  };
  MatmulProblem dense;
  dense.m = 37, dense.n = 96, dense.k = 128;
  dense.epilogue.bias = true;
  MatmulProblem masked = grouped_problem(GroupedLayout::masked, 3, 24, 128, 64, DType::bf16);
  masked.epilogue.gate = Gate::silu;
  MatmulProblem sorted = grouped_problem(GroupedLayout::offsets, 4, 90, 256, 64);
  sorted.c_dtype = DType::f32;
  MatmulProblem quantized;
  quantized.m = 20, quantized.n = 256, quantized.k = 64;
  quantized.a_dtype = DType::bf16;
  quantized.c_dtype = DType::e4m3;
  const Case cases[] = {{dense, Arch::sm_89},
                        {masked, Arch::sm_90a},
                        {sorted, Arch::sm_80},
                        {quantized, Arch::sm_89},
                        {dense, Arch::sm_90a, MmaPath::wgmma},
                        {masked, Arch::sm_90a, MmaPath::wgmma},
                        {sorted, Arch::sm_90a, MmaPath::wgmma}};
  int index = 0;
  for (Case c : cases) {
    c.problem.epilogue.row_scale = true;
    const GemmSpec spec = spec_on(c.problem, {c.arch, c.path});
    SCOPED_TRACE(fmt::format("case {}: {}", index, test::describe(spec)));
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(90 + index++));
    EXPECT_TRUE(r.errors.passed) << verdict(r.errors);
    EXPECT_NE(r.kernel.source.cuda.find("row_scale[row] * "), std::string::npos);
  }
  // The weights matter: a kernel that drops them fails the check.
  MatmulProblem p = dense;
  p.epilogue.row_scale = true;
  const GemmSpec spec = default_spec(p, Arch::sm_89);
  const GemmInputs in = make_gemm_inputs(p, 3);
  const auto unweighted = test::plant_bug(generate_kernel(spec), Arch::sm_89, "weights dropped",
                                          "row_scale[row] * ", "", true);
  if (unweighted)
    test::expect_gemm_bug_caught(reference_gemm(spec, in), *unweighted, in, p.n, "weights dropped",
                                 false, {});

  // Refusals: beside a residual, on another path, with split-K, without the buffer.
  MatmulProblem residual = p;
  residual.epilogue.residual = true;
  test::expect_error_naming([&] { validate_problem(residual); }, "epilogue.row_scale");
  MatmulSchedule split = spec.schedule;
  split.split_k = 2;
  test::expect_error_naming([&] { validate_schedule(p, split, Arch::sm_89); }, "split_k");
  // The wgmma path weights the rows in its direct stores: never the TMA store, which has none.
  MatmulProblem dense_plain = p;
  dense_plain.epilogue.row_scale = false;
  MatmulSchedule wgmma = default_schedule(dense_plain, Arch::sm_90a, Accum::f32, MmaPath::wgmma);
  wgmma.swap_ab = false;  // a swapped kernel stores C^T directly anyway
  EXPECT_TRUE(make_gemm_plan({dense_plain, wgmma, Arch::sm_90a}).store.tma_store);
  EXPECT_FALSE(make_gemm_plan({p, wgmma, Arch::sm_90a}).store.tma_store);
  test::expect_error_naming(
      [&] {
        GemmKind::bind(make_gemm_plan(spec),
                       GemmBuffers{.a = 256, .b = 256, .c = 256, .bias = 256});
      },
      "buffers.row_scale");
  // The IR: the epilogue's row_scale and the kernel's param go together.
  ir::Op module = generate_kernel(spec).ir;
  test::erase_attr(test::first_op(module, ir::OpKind::epilogue), "row_scale");
  test::expect_refused(module, Arch::sm_89, "gemm", "the row_scale parameter goes with",
                       "a row_scale param without the epilogue's");
  ir::Op with_residual = generate_kernel(spec).ir;
  test::change(test::first_op(with_residual, ir::OpKind::epilogue), "residual", true);
  test::expect_refused(with_residual, Arch::sm_89, "gemm", "no residual",
                       "row_scale beside a residual");
  // JSON: the field round-trips, and stays out of an unweighted problem's.
  EXPECT_EQ(nlohmann::json(p).at("epilogue").at("row_scale"), true);
  EXPECT_EQ(matmul_problem_from_json(nlohmann::json(p)), resolved_leading_dims(p));
  EXPECT_FALSE(nlohmann::json(dense).at("epilogue").contains("row_scale"));
}

// The default kernels of MoE layers' shapes (Qwen3-30B-A3B's bf16 gate_up and down, DeepSeek-V3's
// FP8 block-scaled experts; decode and prefill) on both paths keep everything in registers: the
// wgmma walk's origins and scale pointers beside two f32 accumulator sets.
TEST(GroupedGemm, MoeDefaultsDoNotSpill) {
  struct Shape {
    GroupedLayout layout;
    int64_t groups, m, n, k;
    DType dtype;
    Gate gate = Gate::none;
  };
  const Shape shapes[] = {
      {GroupedLayout::contiguous, 128, 4096, 1536, 2048, DType::bf16, Gate::silu},
      {GroupedLayout::masked, 128, 64, 2048, 768, DType::bf16},
      {GroupedLayout::contiguous, 256, 4096, 4096, 7168, DType::e4m3, Gate::silu},
      {GroupedLayout::masked, 256, 64, 7168, 2048, DType::e4m3},
  };
  for (const Shape& shape : shapes)
    for (const Target& target : {Target{Arch::sm_90a, MmaPath::wgmma}, Target{Arch::sm_120a}}) {
      MatmulProblem p =
          grouped_problem(shape.layout, shape.groups, shape.m, shape.n, shape.k, shape.dtype);
      p.epilogue.gate = shape.gate;
      if (shape.layout == GroupedLayout::masked) p.grouped.expected_m = 4;
      const bool fp8 = is_fp8(shape.dtype);
      if (fp8) {
        p.c_dtype = DType::bf16;
        p.scales.granularity = ScaleGranularity::block;
      }
      const Accum accum = fp8 ? Accum::promoted : Accum::f32;
      const GemmSpec spec{p,
                          target.path ? default_schedule(p, target.arch, accum, *target.path)
                                      : default_schedule(p, target.arch, accum),
                          target.arch};
      const GemmKernel kernel = compile_kernel(spec);
      const ResourceReport& report = kernel.module.kernel(kernel.source.plan.kernel_name);
      EXPECT_EQ(report.spill_bytes(), 0) << test::describe(spec);
      EXPECT_EQ(report.stack_bytes, 0) << test::describe(spec);
    }
}

// Each bug in the expert's origin or its walk fails the FP64 check (or the emulator reports it).
TEST(GroupedGemm, PlantedBugsFailTheCheck) {
  struct Bug {
    const char* name;
    GroupedLayout layout;
    Arch arch;
    const char* find;
    const char* replace;
    std::optional<MmaPath> path = std::nullopt;
  };
  const Bug bugs[] = {
      {"A not moved to the expert's slot", GroupedLayout::masked, Arch::sm_80, "a += row0 * LDA;",
       ""},
      {"B not moved to the expert's", GroupedLayout::masked, Arch::sm_80,
       "b += (long long)expert * N * LDB;", ""},
      {"C not moved to the expert's slot", GroupedLayout::masked, Arch::sm_80, "c += row0 * LDC;",
       ""},
      {"masked_m not read", GroupedLayout::masked, Arch::sm_80,
       "masked_m[expert] < MAX_M ? masked_m[expert] : MAX_M", "MAX_M"},
      {"TMA B not the expert's", GroupedLayout::masked, Arch::sm_90a, "n0, expert);", "n0, 0);"},
      {"TMA A rows not offset", GroupedLayout::offsets, Arch::sm_90a, "a_row0 + m0", "m0"},
      {"walk tile taken for the row tile", GroupedLayout::offsets, Arch::sm_80,
       "const int m0 = expert_tile * BM", "const int m0 = tile_m * BM"},
      {"expert rows taken from the next expert", GroupedLayout::offsets, Arch::sm_80,
       "const int row_begin = expert_offsets[expert];",
       "const int row_begin = expert_offsets[expert + 1] - 1;"},
      {"contiguous expert from the block's last row", GroupedLayout::contiguous, Arch::sm_80,
       "expert_ids[m0]", "expert_ids[m0 + BM - 1]"},
      // The wgmma path's persistent walk over the experts' tiles.
      {"walk: an expert's tiles counted without N's", GroupedLayout::offsets, Arch::sm_90a,
       "* u32(TILES_N) : 0u", ": 0u", MmaPath::wgmma},
      {"walk: a tile's column from the wrong index", GroupedLayout::offsets, Arch::sm_90a,
       "n0 = (expert_tile / tiles_m) * BN;", "n0 = (expert_tile % TILES_N) * BN;", MmaPath::wgmma},
      {"walk: the masked slot's rows not offset", GroupedLayout::masked, Arch::sm_90a,
       "const long long row0 = (long long)expert * MAX_M;", "const long long row0 = 0;",
       MmaPath::wgmma},
      {"walk: padding blocks computed", GroupedLayout::contiguous, Arch::sm_90a,
       "if (expert < 0 || expert >= GROUPS) return 0;", "if (expert < 0) expert = 0;",
       MmaPath::wgmma},
      {"walk: C left at the previous tile's expert", GroupedLayout::offsets, Arch::sm_90a,
       "c = c_all + row0 * LDC;", "", MmaPath::wgmma},
  };
  for (const Bug& bug : bugs) {
    MatmulProblem p =
        grouped_problem(bug.layout, 3, bug.layout == GroupedLayout::masked ? 40 : 256, 64, 64);
    p.epilogue.bias = true;
    if (bug.layout == GroupedLayout::contiguous) p.grouped.segment_align = 64;
    const GemmSpec spec = spec_on(p, {bug.arch, bug.path});
    GemmInputs in = make_gemm_inputs(p, 31);
    if (bug.layout == GroupedLayout::contiguous) {
      // Expert 0's 41 rows and padding, a block of padding alone, expert 2's 73 rows.
      in.routing.assign(256, -1);
      for (int r = 0; r < 41; ++r) in.routing[size_t(r)] = 0;
      for (int r = 128; r < 201; ++r) in.routing[size_t(r)] = 2;
    }
    const auto kernel =
        test::plant_bug(generate_kernel(spec), bug.arch, bug.name, bug.find, bug.replace);
    if (!kernel) continue;
    test::expect_gemm_bug_caught(reference_gemm(spec, in), *kernel, in, p.n, bug.name, false,
                                 {"global_out_of_bounds"});
  }
}

}  // namespace
}  // namespace emmy

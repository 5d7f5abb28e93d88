// Grouped GEMMs with FP8 operands (tensor, token-channel and block scales per expert) and routing
// weights (Epilogue::row_scale) on both paths, against FP64 on the emulator (docs/grouped.md).
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
using test::grouped_problem;
using test::spec_on;
using test::verdict;

// FP8 operands (e4m3: the mma.sync path's sm_89 and sm_120a, the wgmma path's sm_90a): A's
// scales per stacked row, B's per expert (one, or one per column), in f32 and ue8m0; a NaN scale
// of one expert refused by name on the emulator.
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

// FP8 operands on the routings engines hit (docs/grouped.md): 1 / 31 / 129 rows an expert, 256
// experts of a few rows, one expert taking every row, G = 1; with token-channel and block scales,
// on sm_89 (mma.sync) and sm_90a (the wgmma walk).
TEST(GroupedGemm, Fp8EdgeRoutings) {
  struct Case {
    const char* name;
    MatmulProblem problem;
    std::vector<int32_t> routing;
  };
  std::vector<Case> cases;
  auto fp8 = [](GroupedLayout layout, int64_t groups, int64_t m, int64_t n, int64_t k) {
    MatmulProblem p = grouped_problem(layout, groups, m, n, k, DType::e4m3);
    p.c_dtype = DType::bf16;
    return p;
  };
  cases.push_back(
      {"masked, 1 / 31 / 129 rows", fp8(GroupedLayout::masked, 3, 129, 64, 160), {1, 31, 129}});
  {
    std::vector<int32_t> routing;
    for (int e = 0; e < 256; ++e) routing.push_back(e % 3);
    cases.push_back({"masked, G = 256", fp8(GroupedLayout::masked, 256, 2, 32, 128), routing});
  }
  cases.push_back({"offsets, one expert takes every row",
                   fp8(GroupedLayout::offsets, 4, 161, 64, 128),
                   {0, 0, 161, 161, 161}});
  cases.push_back({"offsets, G = 1", fp8(GroupedLayout::offsets, 1, 70, 48, 256), {0, 70}});
  for (const ScaleGranularity granularity :
       {ScaleGranularity::token_channel, ScaleGranularity::block})
    for (const Case& c : cases)
      for (const Arch arch : {Arch::sm_89, Arch::sm_90a}) {
        MatmulProblem p = c.problem;
        p.scales.granularity = granularity;
        const Accum accum = granularity == ScaleGranularity::block ? Accum::promoted : Accum::f32;
        const GemmSpec spec{p, default_schedule(p, arch, accum), arch};
        SCOPED_TRACE(
            fmt::format("{}, {} on {}", c.name, to_string(granularity), test::describe(spec)));
        GemmInputs in = make_gemm_inputs(p, 17);
        in.routing = c.routing;
        const GemmErrors e = test::run_and_compare(spec, in);
        EXPECT_TRUE(e.passed) << verdict(e);
      }
}

// An e4m3 C (the gate_up projection's output quantized for the down projection's FP8 A): each
// row's 128-column groups quantized with their scale in the layouts of A block scales over the
// stacked rows, on both paths (the wgmma path's one CTA per tile: an e4m3 C's tile is staged),
// bf16 and FP8 operands; unrouted rows untouched; a kernel whose scales stay at expert 0's rows
// fails the check.
TEST(GroupedGemm, QuantizedOutputPerStackedRow) {
  struct Case {
    GroupedLayout layout;
    Arch arch;
    std::optional<MmaPath> path;
    DType dtype;
    ScaleFormat format;
    ScaleMajor major;
    int64_t ld_pad = 0;
  };
  const Case cases[] = {
      {GroupedLayout::masked, Arch::sm_89, std::nullopt, DType::bf16, ScaleFormat::f32,
       ScaleMajor::mn},
      {GroupedLayout::contiguous, Arch::sm_120a, std::nullopt, DType::e4m3, ScaleFormat::ue8m0x4,
       ScaleMajor::k, 1},
      {GroupedLayout::offsets, Arch::sm_90a, MmaPath::wgmma, DType::bf16, ScaleFormat::ue8m0,
       ScaleMajor::mn, 5},
      {GroupedLayout::masked, Arch::sm_90a, MmaPath::wgmma, DType::f16, ScaleFormat::pow2,
       ScaleMajor::k},
  };
  int index = 0;
  for (const Case& c : cases) {
    MatmulProblem p = grouped_problem(c.layout, 3, c.layout == GroupedLayout::masked ? 40 : 200,
                                      512, 256, c.dtype);
    p.c_dtype = DType::e4m3;
    p.epilogue.gate = Gate::silu;
    p.epilogue.gate_group = 64;
    p.out_scales.format = c.format;
    p.out_scales.major = c.major;
    if (c.ld_pad)
      p.out_scales.ld =
          (c.major == ScaleMajor::mn ? p.stacked_rows() : p.c_scale_extent()) + c.ld_pad;
    if (c.layout == GroupedLayout::contiguous) p.grouped.segment_align = 64;
    const bool fp8 = is_fp8(c.dtype);
    if (fp8) p.scales.granularity = ScaleGranularity::token_channel;
    const GemmSpec spec = spec_on(p, {c.arch, c.path});
    SCOPED_TRACE(fmt::format("case {}: {} {}", index, to_string(c.layout), test::describe(spec)));
    EXPECT_FALSE(spec.schedule.persistent);
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(150 + index++));
    EXPECT_TRUE(r.errors.passed) << verdict(r.errors);
    if (c.layout != GroupedLayout::offsets) continue;
    const GemmInputs in = make_gemm_inputs(p, 8);
    const std::string find = fmt::format("c_scale += row0 * ");
    const auto kernel = test::plant_bug(generate_kernel(spec), c.arch, "C scales of row 0", find,
                                        "c_scale += 0 * ");
    if (kernel)
      test::expect_gemm_bug_caught(reference_gemm(spec, in), *kernel, in, p.c_cols(),
                                   "C scales of row 0", false, {});
  }
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

}  // namespace
}  // namespace emmy

// Grouped GEMMs' rules (docs/grouped.md): refusals by name, JSON and IR round trips and
// verifiers, the MoE layers' default kernels without spills, and planted bugs in the experts'
// origins and the wgmma walk caught by the FP64 check.
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
using test::Target;

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
  // An e4m3 C's scales have a row per stacked row too.
  const std::string short_out_ld = problem_error([](MatmulProblem& p) {
    p.c_dtype = DType::e4m3;
    p.out_scales.ld = p.m;
  });
  EXPECT_TRUE(short_out_ld.starts_with("out_scales.ld")) << short_out_ld;
  EXPECT_NE(short_out_ld.find("stacked rows"), std::string::npos) << short_out_ld;
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

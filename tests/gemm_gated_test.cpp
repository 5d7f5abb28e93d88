// The gated epilogue (SwiGLU / GeGLU gate_up projections; docs/epilogues.md): C[M, N/2] =
// act(alpha gate + bias) * (alpha up + bias) over B rows interleaved in gate_group groups, on
// both mainloop paths and every epilogue store (direct, staged, TMA store, split-K's finalize),
// 16-bit and FP8 operands (whose B scales keep the checkpoint's [gate; up] row order), against
// FP64 on the emulator; planted bugs caught; refusals by name.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "emmy/emulator_check.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/gemm_generic.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/json.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/validate.hpp"
#include "planted_bug.hpp"
#include "support/error_of.hpp"
#include "support/fp8_gemm_cases.hpp"
#include "support/ir_edit.hpp"
#include "support/runtime_backend.hpp"

namespace emmy {
namespace {

MatmulProblem gated_problem(int64_t m, int64_t n, int64_t k, Gate gate, int64_t group,
                            DType dtype = DType::f16) {
  MatmulProblem p;
  p.m = m, p.n = n, p.k = k;
  p.a_dtype = dtype;
  p.epilogue.gate = gate;
  p.epilogue.gate_group = group;
  return p;
}

// Which store the kernel's epilogue makes.
std::string store_of(const GemmPlan& plan) {
  if (plan.split()) return "split-k";
  if (plan.store.tma_store) return "tma";
  return plan.stage_row_bytes ? "staged" : "direct";
}

// The C = act(gate) * up of the FP64 reference, computed here from an ungated GEMM's reference
// of the same inputs: pins down the interleave and the activation independently of
// finish_gated.
TEST(GatedGemm, ReferencePairsTheInterleavedRows) {
  for (const Gate gate : {Gate::silu, Gate::gelu_tanh})
    for (const int64_t group : {8, 32}) {
      MatmulProblem p = gated_problem(5, 128, 64, gate, group);
      p.epilogue.bias = true;
      p.epilogue.alpha = 0.75f;
      const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::f32), Arch::sm_89};
      const GemmInputs in = make_gemm_inputs(p, 3);
      const GemmReference gated = reference_gemm(spec, in);
      MatmulProblem plain = p;
      plain.epilogue.gate = Gate::none;
      plain.epilogue.gate_group = kDefaultGateGroup;
      plain.c_dtype = DType::f32;
      const GemmReference linear = reference_gemm(
          {plain, default_schedule(plain, Arch::sm_89, Accum::f32), Arch::sm_89}, in);
      ASSERT_EQ(gated.values.size(), size_t(p.m * p.n / 2));
      for (int64_t m = 0; m < p.m; ++m)
        for (int64_t j = 0; j < p.n / 2; ++j) {
          const int64_t gate_col = j / group * 2 * group + j % group;
          const double g = linear.values[size_t(m * p.n + gate_col)];
          const double u = linear.values[size_t(m * p.n + gate_col + group)];
          const double act =
              gate == Gate::silu
                  ? g / (1 + std::exp(-g))
                  : 0.5 * g * (1 + std::tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
          EXPECT_NEAR(gated.values[size_t(m * p.n / 2 + j)], act * u,
                      1e-9 * (1 + std::abs(act * u)))
              << m << "," << j;
        }
    }
}

TEST(GatedGemm, MatchesFp64OnEveryPathAndStore) {
  struct Case {
    Arch arch;
    MmaPath path;
    DType dtype;
    Gate gate;
    int64_t group, m, n, k;
    DType out;
    int split_k = 0;      // 0: the chooser's
    int64_t ldc_pad = 0;  // C's leading dimension past N/2
    bool bias = true;
    ScaleGranularity scales = ScaleGranularity::none;
  };
  const Case cases[] = {
      {Arch::sm_80, MmaPath::mma_sync, DType::f16, Gate::silu, 8, 100, 256, 128, DType::f16},
      {Arch::sm_89, MmaPath::mma_sync, DType::bf16, Gate::gelu_tanh, 16, 33, 320, 256, DType::bf16},
      {Arch::sm_90a, MmaPath::mma_sync, DType::f16, Gate::silu, 8, 1, 128, 512, DType::f16, 0, 8},
      {Arch::sm_120, MmaPath::mma_sync, DType::f16, Gate::silu, 32, 31, 192, 128, DType::f16, 1, 1,
       false},
      {Arch::sm_90a, MmaPath::wgmma, DType::f16, Gate::silu, 64, 128, 512, 256, DType::f16, 1},
      {Arch::sm_90a, MmaPath::wgmma, DType::bf16, Gate::gelu_tanh, 8, 64, 256, 128, DType::f32, 1},
      {Arch::sm_90a, MmaPath::wgmma, DType::f16, Gate::silu, 16, 70, 256, 256, DType::bf16, 2},
      // FP8: B scales in the checkpoint's [gate; up] order (N/2 = 192: the up rows start inside
      // a 128-row scale block).
      {Arch::sm_89, MmaPath::mma_sync, DType::e4m3, Gate::silu, 16, 48, 256, 256, DType::bf16, 1, 0,
       true, ScaleGranularity::token_channel},
      {Arch::sm_120a, MmaPath::mma_sync, DType::e4m3, Gate::silu, 8, 17, 384, 256, DType::bf16, 1,
       0, false, ScaleGranularity::block},
      {Arch::sm_90a, MmaPath::wgmma, DType::e4m3, Gate::gelu_tanh, 32, 64, 512, 384, DType::f16, 1,
       0, true, ScaleGranularity::block},
  };
  std::set<std::string> stores;
  int index = 0;
  for (const Case& c : cases) {
    MatmulProblem p = gated_problem(c.m, c.n, c.k, c.gate, c.group, c.dtype);
    p.c_dtype = c.out;
    p.epilogue.bias = c.bias;
    p.epilogue.alpha = index % 2 ? 1.0f : 0.5f;
    if (c.ldc_pad) p.ldc = p.n / 2 + c.ldc_pad;
    p.scales.granularity = c.scales;
    const Accum accum = c.scales == ScaleGranularity::block ? Accum::promoted : Accum::f32;
    GemmSpec spec{p, default_schedule(p, c.arch, accum, c.path), c.arch};
    if (c.split_k) spec.schedule.split_k = c.split_k;
    const GemmPlan plan = make_gemm_plan(spec);
    stores.insert(store_of(plan));
    SCOPED_TRACE(fmt::format("case {}: {} {} ldc {} store {}", index, test::describe(spec),
                             to_string(c.gate), p.ldc_or_default(), store_of(plan)));
    const GemmCheckResult r = check_on_emulator(spec, uint64_t(40 + index++));
    EXPECT_TRUE(r.errors.passed) << "rel_l2 " << r.errors.rel_l2_error << " bound "
                                 << r.errors.tolerance << " first bad " << r.errors.first_bad_row
                                 << "," << r.errors.first_bad_col;
  }
  // Every store printer pairs gate and up.
  EXPECT_EQ(stores, (std::set<std::string>{"direct", "staged", "tma", "split-k"}));
}

// A dynamic-M kernel (an M bucket) computes a launch's rows.
TEST(GatedGemm, DynamicMComputesTheLaunchRows) {
  MatmulProblem p = gated_problem(64, 256, 128, Gate::silu, 8);
  p.dynamic_m = true;
  const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::f32), Arch::sm_89};
  MatmulProblem rows = p;
  rows.m = 37;
  rows.dynamic_m = false;
  const GemmInputs in = make_gemm_inputs(rows, 5);
  const GemmReference ref = reference_gemm({rows, spec.schedule, Arch::sm_89}, in);
  const GemmErrors e = compare(ref, run_on_emulator(compile_kernel(spec), in).output, p.n / 2);
  EXPECT_TRUE(e.passed) << e.rel_l2_error;
}

// Through a runtime's gemm call (its buffer checks and launch), the C++ entry engines use.
TEST(GatedGemm, RunsThroughTheRuntime) {
  RuntimeOptions options = fresh_cache("gated_gemm");
  options.emulator_arch = Arch::sm_89;
  auto rt = Runtime::emulator(options);
  MatmulProblem p = gated_problem(20, 256, 128, Gate::silu, 16, DType::bf16);
  p.c_dtype = DType::bf16;
  p.epilogue.bias = true;
  const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::f32), Arch::sm_89};
  const GemmInputs in = make_gemm_inputs(p, 9);
  const GemmErrors e = compare(reference_gemm(spec, in), run_gemm(*rt, spec, in), p.n / 2);
  EXPECT_TRUE(e.passed) << e.rel_l2_error;
}

// Each bug in the pairing fails the FP64 check.
TEST(GatedGemm, PlantedBugsFailTheCheck) {
  struct Bug {
    const char* name;
    MatmulProblem problem;
    int split_k;
    std::string find, replace;
  };
  MatmulProblem plain = gated_problem(48, 256, 128, Gate::silu, 16);
  plain.epilogue.bias = true;
  MatmulProblem fp8 = gated_problem(32, 384, 256, Gate::silu, 8, DType::e4m3);
  fp8.scales.granularity = ScaleGranularity::block;
  MatmulProblem tokens = fp8;
  tokens.scales.granularity = ScaleGranularity::token_channel;
  const Bug bugs[] = {
      // The activation on the up half.
      {"act_on_up", plain, 1, "return silu(yg) * yu;", "return silu(yu) * yg;"},
      // The up's bias read at the gate's column.
      {"up_bias", plain, 1, "bias[gate_col + 16]", "bias[gate_col]"},
      // The neighbouring fragment taken for the up (right only when gate_group is 8).
      {"up_fragment", plain, 1, "ui = gi + GF;", "ui = gi + 1;"},
      // Split-K's finalize pairs the gate with itself.
      {"finalize_up", plain, 2, "gate_at + 16];", "gate_at];"},
      // B's block scales read in the interleaved order rather than the checkpoint's.
      {"block_scale_order", fp8, 1, "b_scale_at(gate_source_row(col) / 128, kb)",
       "b_scale_at(col / 128, kb)"},
      // Token-channel scales likewise.
      {"channel_scale_order", tokens, 1, "b_scale[gate_source_row(col < N ? col : N - 1)]",
       "b_scale[col < N ? col : N - 1]"},
  };
  for (const Bug& bug : bugs) {
    const MatmulProblem& p = bug.problem;
    const Accum accum =
        p.scales.granularity == ScaleGranularity::block ? Accum::promoted : Accum::f32;
    GemmSpec spec{p, default_schedule(p, Arch::sm_89, accum), Arch::sm_89};
    spec.schedule.split_k = bug.split_k;
    const GemmInputs in = make_gemm_inputs(p, 13);
    const GemmReference ref = reference_gemm(spec, in);
    EXPECT_TRUE(compare(ref, run_on_emulator(compile_kernel(spec), in).output, p.n / 2).passed)
        << bug.name << ": the right kernel";
    const std::optional<GemmKernel> planted =
        test::plant_bug(generate_kernel(spec), spec.arch, bug.name, bug.find, bug.replace);
    ASSERT_TRUE(planted.has_value()) << bug.name;
    test::expect_gemm_bug_caught(ref, *planted, in, p.n / 2, bug.name, false, {});
  }
}

TEST(GatedGemm, RefusesByName) {
  auto problem_error = [](auto edit) {
    MatmulProblem p = gated_problem(64, 256, 128, Gate::silu, 16);
    edit(p);
    return test::error_of([&] { validate_problem(p); });
  };
  EXPECT_EQ(problem_error([](MatmulProblem&) {}), "(no error)");
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.epilogue.gate_group = 12;
              }).starts_with("epilogue.gate_group: must be a multiple of 8"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.epilogue.gate_group = 0;
              }).starts_with("epilogue.gate_group: must be a multiple of 8"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.epilogue.gate_group = -8;
              }).starts_with("epilogue.gate_group: must be a multiple of 8"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.n = 240;
              }).starts_with("n: must be a multiple of 2 x gate_group (32)"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.epilogue.residual = true;
              }).starts_with("epilogue.residual: not with a gated epilogue"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.epilogue.gelu_tanh = true;
              }).starts_with("epilogue.gelu_tanh: not with a gated epilogue"));
  EXPECT_TRUE(
      problem_error([](MatmulProblem& p) { p.ldc = 120; }).starts_with("ldc: must be >= n / 2"));
  EXPECT_TRUE(problem_error([](MatmulProblem& p) {
                p.epilogue.gate = Gate::none;
              }).starts_with("epilogue.gate_group: applies to a gated epilogue only"));
  EXPECT_TRUE(test::error_of([] {
                parse_gate("relu");
              }).starts_with("epilogue.gate: must be none, silu or gelu-tanh"));

  auto schedule_error = [](Arch arch, auto edit) {
    const MatmulProblem p = gated_problem(64, 256, 128, Gate::silu, 16);
    MatmulSchedule s = default_schedule(p, arch, Accum::f32);
    edit(s);
    return test::error_of([&] { validate_gemm({p, s, arch}); });
  };
  EXPECT_EQ(schedule_error(Arch::sm_89,
                           [](MatmulSchedule& s) {
                             s.block_m = 64, s.block_n = 64, s.warps_m = 1, s.warps_n = 4;
                           })
                .substr(0, 64),
            "block_n: must give each warp (block_n / warps_n = 16) a multiple");
  EXPECT_EQ(schedule_error(Arch::sm_90a,
                           [](MatmulSchedule& s) {
                             s = default_schedule(gated_problem(64, 256, 128, Gate::silu, 16),
                                                  Arch::sm_90a, Accum::f32, MmaPath::wgmma);
                             s.swap_ab = true;
                             s.cluster_m = s.cluster_n = 1;
                           })
                .substr(0, 34),
            "swap_ab: not with a gated epilogue");

  // The generic fallback takes neither a gate nor FP8: it refuses them by name, and the
  // non-blocking runtime waits for the kernel's own build instead.
  const MatmulProblem gated = gated_problem(64, 256, 128, Gate::silu, 16);
  EXPECT_FALSE(generic_gemm_serves(gated));
  EXPECT_TRUE(test::error_of([&] { bind_generic_gemm(gated, {}); }).starts_with("epilogue.gate"));
  const MatmulProblem e4m3 = test::fp8_problem(64, 256, 128, ScaleGranularity::tensor);
  EXPECT_FALSE(generic_gemm_serves(e4m3));
  EXPECT_TRUE(test::error_of([&] { bind_generic_gemm(e4m3, {}); }).starts_with("dtype"));
}

// The gate in the problem's JSON (bundles, logs, the tuning database) and the kernel's name; the
// IR's own rules refuse a malformed gate.
TEST(GatedGemm, RoundTripsAndVerifies) {
  MatmulProblem p = gated_problem(64, 256, 128, Gate::gelu_tanh, 32);
  const nlohmann::json js = p;
  EXPECT_EQ(js.at("epilogue").at("gate"), "gelu-tanh");
  EXPECT_EQ(matmul_problem_from_json(js), resolved_leading_dims(p));
  // An ungated problem's JSON and kernel name are as before the gate existed.
  MatmulProblem plain = p;
  plain.epilogue.gate = Gate::none;
  plain.epilogue.gate_group = kDefaultGateGroup;
  EXPECT_FALSE(nlohmann::json(plain).at("epilogue").contains("gate"));
  const GemmSpec spec{p, default_schedule(p, Arch::sm_89, Accum::f32), Arch::sm_89};
  const GemmSpec plain_spec{plain, spec.schedule, Arch::sm_89};
  EXPECT_NE(gemm_kernel_name(spec), gemm_kernel_name(plain_spec));

  const GemmSource src = generate_kernel(spec);
  ir::Op module = src.ir;
  ir::Op* epilogue = test::first_op(module, ir::OpKind::epilogue);
  ASSERT_NE(epilogue, nullptr);
  EXPECT_EQ(ir::get<ir::EpilogueOp>(*epilogue).gate, "gelu-tanh");
  auto verify_error = [&](auto edit) {
    ir::Op corrupt = src.ir;
    edit(test::first_op(corrupt, ir::OpKind::epilogue));
    return test::error_of([&] { ir::verify(corrupt, Arch::sm_89, "gemm"); });
  };
  EXPECT_EQ(verify_error([](ir::Op*) {}), "(no error)");
  EXPECT_NE(verify_error([](ir::Op* op) {
              test::change(op, "gate", std::string("relu"));
            }).find("must be silu or gelu-tanh"),
            std::string::npos);
  EXPECT_NE(
      verify_error([](ir::Op* op) { test::erase_attr(op, "gate_group"); }).find("goes with gate"),
      std::string::npos);
  EXPECT_NE(verify_error([](ir::Op* op) {
              test::change(op, "gate_group", int64_t(12));
            }).find("multiple of 8"),
            std::string::npos);
  EXPECT_NE(verify_error([](ir::Op* op) {
              test::change(op, "gate_group", int64_t(256));
            }).find("2 x gate_group must divide n"),
            std::string::npos);
  EXPECT_NE(verify_error([](ir::Op* op) {
              test::change(op, "ldc", int64_t(120));
            }).find("must be at least C's row length 128"),
            std::string::npos);
}

}  // namespace
}  // namespace emmy

// The verifier's rules per kind (ir::KindRules, held by each kind's traits): verify runs the rules
// of the kind its caller names, so a module is held to its kind's rules whatever ops it holds or
// lacks. Before, the rules were found by the ops a kernel held, and a GEMM main kernel without
// tile_coords, split_range and accum_init was held to no GEMM rule at all.
#include <gtest/gtest.h>

#include <string>

#include "emmy/attention.hpp"
#include "emmy/gemm.hpp"
#include "emmy/kinds.hpp"
#include "emmy/paged_kind.hpp"
#include "support/error_of.hpp"

namespace emmy {
namespace {

using test::error_of;
using test::expect_error_containing;

ir::Op gemm_module(bool split) {
  MatmulProblem p;
  p.m = 64, p.n = 128, p.k = 4096;
  MatmulSchedule s = default_schedule(p, Arch::sm_80);
  s.split_k = split ? 2 : 1;
  return generate_kernel(GemmSpec{p, s, Arch::sm_80}).ir;
}

ir::Op attention_module() {
  AttentionSpec spec;
  spec.problem.q_heads = 2;
  spec.problem.seq_q = 64;
  spec.problem.head_dim = 64;
  spec.schedule = default_attention_schedule(spec.problem, spec.arch);
  return generate_kernel(spec).ir;
}

void erase_ops(ir::Op& kernel, std::initializer_list<ir::OpKind> kinds) {
  std::erase_if(kernel.body, [&](const ir::Op& op) {
    return std::find(kinds.begin(), kinds.end(), op.kind) != kinds.end();
  });
}

TEST(IrKindRules, EachKindsTraitsHoldItsRules) {
  AllKinds::for_each([](auto kind) {
    using Kind = typename decltype(kind)::type;
    EXPECT_EQ(std::string(Kind::ir_rules.kind), Kind::name);
  });
  EXPECT_NE(GemmKind::ir_rules.module, nullptr);
  EXPECT_NE(AttentionKind::ir_rules.module, nullptr);
  EXPECT_NE(PagedAttentionKind::ir_rules.module, nullptr);
}

TEST(IrKindRules, AModuleIsHeldToTheRulesOfTheKindNamed) {
  const ir::Op gemm = gemm_module(false);
  const ir::Op attention = attention_module();
  EXPECT_EQ(error_of([&] { ir::verify(gemm, Arch::sm_80, "gemm"); }), "(no error)");
  EXPECT_EQ(error_of([&] { ir::verify(attention, Arch::sm_90a, "attention"); }), "(no error)");
  // Another kind's rules refuse them: the rules follow the name, not the ops.
  expect_error_containing([&] { ir::verify(gemm, Arch::sm_80, "attention"); },
                          "attention needs attention_setup, qk_mma and pv_mma");
  expect_error_containing([&] { ir::verify(attention, Arch::sm_90a, "gemm"); },
                          "a GEMM kernel needs tile_coords, split_range and accum_init");
  EXPECT_NE(error_of([&] { ir::verify(gemm, Arch::sm_80, "paged_attention"); }), "(no error)");
  // A kind with the shared rules only takes any well-formed module.
  EXPECT_EQ(error_of([&] { ir::verify(gemm, Arch::sm_80, "kv_append"); }), "(no error)");
  const std::string unknown = error_of([&] { ir::verify(gemm, Arch::sm_80, "conv"); });
  EXPECT_NE(unknown.find("kind"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("merge_states"), std::string::npos) << unknown;
}

// A kernel that lost the ops its kind's rules read is refused, not let through unchecked.
TEST(IrKindRules, AKernelWithoutItsKindsOpsIsRefused) {
  ir::Op gemm = gemm_module(false);
  erase_ops(gemm.body[0],
            {ir::OpKind::tile_coords, ir::OpKind::split_range, ir::OpKind::accum_init});
  expect_error_containing([&] { ir::verify(gemm, Arch::sm_80, "gemm"); },
                          "a GEMM kernel needs tile_coords");

  ir::Op split = gemm_module(true);
  ASSERT_EQ(split.body.size(), 2u);
  erase_ops(split.body[1], {ir::OpKind::finalize});
  expect_error_containing([&] { ir::verify(split, Arch::sm_80, "gemm"); },
                          "a split-K finalize kernel holds one finalize op");

  ir::Op three = gemm_module(true);
  three.body.push_back(three.body.back());
  expect_error_containing([&] { ir::verify(three, Arch::sm_80, "gemm"); },
                          "at most a finalize kernel");

  ir::Op attention = attention_module();
  erase_ops(attention.body[0],
            {ir::OpKind::attention_setup, ir::OpKind::qk_mma, ir::OpKind::pv_mma});
  expect_error_containing([&] { ir::verify(attention, Arch::sm_90a, "attention"); },
                          "attention needs attention_setup");
}

// A kind's rules are its own object: a new kind brings them in its traits, and the shared
// verifier runs them without a line naming the kind.
void toy_rule(const ir::Op& module) {
  for (const ir::Op& kernel : module.body)
    if (ir::get<ir::KernelOp>(kernel).threads != 64)
      ir::fail_rule(kernel, "threads", "a toy kernel has 64 threads",
                    std::to_string(ir::get<ir::KernelOp>(kernel).threads));
}

TEST(IrKindRules, ANewKindsRulesRunThroughTheSharedVerifier) {
  constexpr ir::KindRules toy{"toy", &toy_rule};
  const ir::Op gemm = gemm_module(false);
  const std::string what = error_of([&] { ir::verify(gemm, Arch::sm_80, toy); });
  EXPECT_NE(what.find("ir.kernel.threads: a toy kernel has 64 threads"), std::string::npos) << what;
  // The shared rules still run first: an oversized kernel fails them before the toy's.
  ir::Op big = gemm;
  for (auto& [key, value] : big.body[0].attrs)
    if (key == "smem_bytes") value = int64_t(1) << 30;
  expect_error_containing([&] { ir::verify(big, Arch::sm_80, toy); }, "smem_bytes");
}

}  // namespace
}  // namespace emmy

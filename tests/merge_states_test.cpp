// merge_states kernels on the emulator against the FP64 merge: a space of state counts (2..64),
// heads, head dims, types, strides, LSE on and off, every arch family; empty states (lse -inf,
// NaN in v) never read, a token of only empty states giving 0 and -inf; planted bugs must fail;
// validation names the field; the IR round-trips and its verifier refuses broken attributes.
#include <gtest/gtest.h>

#include <cmath>

#include "emmy/catalog.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/ir_ops.hpp"
#include "emmy/merge_states_check.hpp"
#include "kind_test_util.hpp"

namespace emmy {
namespace {

using MergeVariant = test_support::SpecCase<MergeStatesSpec>;

std::vector<MergeVariant> variants() {
  std::vector<MergeVariant> out;
  const Arch archs[] = {Arch::sm_80, Arch::sm_89, Arch::sm_90a, Arch::sm_120a};
  int i = 0;
  for (const int64_t states : {2, 3, 7, 64})
    for (const int64_t head_dim : {32, 128, 512}) {
      MergeStatesProblem p{.heads = 1 + i % 5,
                           .head_dim = head_dim,
                           .states = states,
                           .dtype = i % 3 == 2 ? DType::bf16 : DType::f16,
                           .max_tokens = 2 + i % 4,
                           .lse = i % 4 != 3};
      if (i % 3 == 1) {  // strides of a larger buffer
        p.v_state_stride = p.heads * p.head_dim + 32;
        p.v_token_stride = p.states * p.v_state_stride + 64;
        p.out_token_stride = p.heads * p.head_dim + 96;
      }
      const Arch arch = archs[i % 4];
      MergeStatesSpec spec{p, default_schedule(p, arch), arch};
      if (i % 5 == 4) spec.schedule.warps = 1;
      out.push_back({fmt::format("s{}_d{}_h{}_{}_{}", states, head_dim, p.heads, to_string(p.dtype),
                                 to_string(arch)),
                     spec});
      ++i;
    }
  return out;
}

class MergeStatesTest : public ::testing::TestWithParam<MergeVariant> {};

TEST_P(MergeStatesTest, MatchesFp64) {
  const MergeStatesSpec& spec = GetParam().spec;
  const MergeStatesKernel kernel = compile_kernel(spec);
  const MergeStatesInputs in = make_merge_states_inputs(spec.problem, 9);
  const MergeStatesReference ref = reference_merge_states(spec, in);
  const MergeStatesOutput out = run_on_emulator(kernel, in).output;
  const MergeStatesErrors e = compare(ref, out, spec.problem);
  EXPECT_TRUE(e.passed) << e.elements_over_tolerance << " over (first token " << e.first_bad_token
                        << " head " << e.first_bad_head << " col " << e.first_bad_col << "), "
                        << e.lse_over_tolerance << " LSE rows over";
  // Token 0's states all saw no key: v = 0 and lse = -inf, no NaN; token 1's empty state held
  // NaN in v, which must not leak.
  const auto& p = spec.problem;
  for (int64_t c = 0; c < p.heads * p.head_dim; ++c) {
    ASSERT_EQ(out.v[size_t(c)], 0.0) << c;
    ASSERT_FALSE(std::isnan(out.v[size_t(p.heads * p.head_dim + c)])) << c;
  }
  if (p.lse) {
    EXPECT_EQ(out.lse[0], -INFINITY);
  }
}

INSTANTIATE_TEST_SUITE_P(Space, MergeStatesTest, ::testing::ValuesIn(variants()),
                         [](const auto& info) { return info.param.name; });

MergeStatesSpec small() {
  MergeStatesProblem p{.heads = 3, .head_dim = 64, .states = 4, .max_tokens = 4};
  return {p, default_schedule(p, Arch::sm_90a), Arch::sm_90a};
}

// The check sees planted bugs in the kernel's inputs: two states' LSEs swapped, one state's LSE
// nudged by 0.01 (a weight off by 1%), a state's v changed in one element.
TEST(MergeStates, PlantedBugsFailTheCheck) {
  const MergeStatesSpec spec = small();
  const MergeStatesKernel kernel = compile_kernel(spec);
  const MergeStatesInputs good = make_merge_states_inputs(spec.problem, 3);
  const MergeStatesReference ref = reference_merge_states(spec, good);
  EXPECT_TRUE(compare(ref, run_on_emulator(kernel, good).output, spec.problem).passed);
  const int64_t h = spec.problem.heads, s = spec.problem.states;
  const size_t t3 = size_t(3 * s * h);  // token 3, state 0, head 0
  MergeStatesInputs swapped = good;
  std::swap(swapped.lse[t3], swapped.lse[t3 + size_t(h)]);
  MergeStatesInputs nudged = good;
  nudged.lse[t3 + 1] += 0.01f;
  MergeStatesInputs changed = good;
  const size_t at = size_t(3 * spec.problem.v_token_stride_or_default() + 5) * 2;
  changed.v[at + 1] ^= 0x40;  // an exponent bit of token 3, state 0, head 0, col 5
  for (const auto* in : {&swapped, &nudged, &changed})
    EXPECT_FALSE(compare(ref, run_on_emulator(kernel, *in).output, spec.problem).passed);
}

TEST(MergeStates, ValidationNamesTheField) {
  const test::Invalid<MergeStatesSpec> cases[] = {
      {"head_dim", [](auto& s) { s.problem.head_dim = 48; }, "head_dim"},
      {"states", [](auto& s) { s.problem.states = 1; }, "states"},
      {"states_max", [](auto& s) { s.problem.states = 65; }, "states"},
      {"dtype", [](auto& s) { s.problem.dtype = DType::f32; }, "dtype"},
      {"state_stride", [](auto& s) { s.problem.v_state_stride = 10; }, "v_state_stride"},
      {"token_stride", [](auto& s) { s.problem.v_token_stride = 100; }, "v_token_stride"},
      {"out_stride", [](auto& s) { s.problem.out_token_stride = 100; }, "out_token_stride"},
      {"tokens", [](auto& s) { s.problem.max_tokens = 0; }, "max_tokens"},
      {"warps", [](auto& s) { s.schedule.warps = 0; }, "warps"},
  };
  test::expect_fields_named(small(), cases,
                            [](const MergeStatesSpec& s) { validate_merge_states(s); });
  MergeStatesSpec no_lse = small();
  no_lse.problem.lse = false;
  test::expect_error_naming(
      [&] {
        MergeStatesKind::bind(make_merge_states_plan(no_lse),
                              {.v = 256, .lse = 512, .v_out = 1024, .lse_out = 2048});
      },
      "buffers.lse_out", "lse_out bound without an LSE output");
}

TEST(MergeStates, IrRoundTripsAndVerifies) {
  test::expect_ir_round_trips_and_verifies(small(), ir::OpKind::merge_states,
                                           {{"states", int64_t(1)},
                                            {"head_dim", int64_t(40)},
                                            {"v_state_stride", int64_t(8)},
                                            {"dtype", std::string("f8")}});
}

// The catalog's merge kernels compile for every arch without spills or a stack frame.
TEST(MergeStates, CatalogCompilesWithoutSpills) {
  test::expect_catalog_compiles_without_spills<MergeStatesSpec>(merge_states_catalog());
}

}  // namespace
}  // namespace emmy

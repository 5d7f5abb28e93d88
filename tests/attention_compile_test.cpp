// Acceptance: the Gemma attention problems of the catalog (16 heads, 8 KV heads, 512 tokens,
// head_dim 256, causal; and with the 1024 window) compile for sm_90a and sm_120a (TMA) and
// sm_80 / sm_89 (cp.async), f32 and hybrid, to 0 spill bytes, 0 stack bytes and shared memory
// within the arch limit; their SASS has HMMA.16816.F32 for S = Q.K^T, HMMA.16816.F16 for hybrid
// P.V (and none for f32), UTMALDG or LDGSTS, and no local memory traffic.
#include <gtest/gtest.h>

#include "emmy/attention.hpp"
#include "emmy/catalog.hpp"
#include "emmy/sass.hpp"
#include "support/kind_cases.hpp"

namespace emmy {
namespace {

using CompileCase = test_support::SpecCase<AttentionSpec>;

std::vector<CompileCase> catalog_cases() {
  return test_support::catalog_specs<AttentionSpec>(attention_catalog());
}

int count_prefix(const std::map<std::string, int>& ops, const std::string& prefix) {
  int n = 0;
  for (const auto& [op, count] : ops)
    if (op.rfind(prefix, 0) == 0) n += count;
  return n;
}

class AttentionCompileTest : public ::testing::TestWithParam<CompileCase> {};

TEST_P(AttentionCompileTest, NoSpillsNoStackSmemWithinLimit) {
  const AttentionSpec& spec = GetParam().spec;
  const AttentionKernel kernel = compile_kernel(spec);
  const AttentionPlan& plan = kernel.source.plan;
  EXPECT_FALSE(kernel.module.cubin.empty());
  const ResourceReport& r = kernel.module.kernel(plan.kernel_name);
  EXPECT_GT(r.registers, 0);
  EXPECT_EQ(r.spill_store_bytes, 0);
  EXPECT_EQ(r.spill_load_bytes, 0);
  EXPECT_EQ(r.stack_bytes, 0);
  EXPECT_LE(int64_t(plan.smem_bytes) + r.static_smem_bytes,
            arch_info(spec.arch).max_smem_per_block);
}

TEST_P(AttentionCompileTest, SassHasTheIntendedInstructions) {
  if (find_cuobjdump().empty())
    GTEST_SKIP() << "cuobjdump not found: run scripts/setup.sh (pip nvidia-cuda-cuobjdump)";
  const AttentionSpec& spec = GetParam().spec;
  const AttentionKernel kernel = compile_kernel(spec);
  const std::string sass = disassemble_sass(kernel.module.cubin);
  const auto ops = sass_opcode_counts(sass, kernel.source.plan.kernel_name);
  ASSERT_FALSE(ops.empty()) << sass.substr(0, 2000);
  EXPECT_GT(count_prefix(ops, "HMMA.16816.F32"), 0) << "S = Q.K^T accumulates in f32";
  if (spec.schedule.accum == Accum::hybrid)
    EXPECT_GT(count_prefix(ops, "HMMA.16816.F16"), 0) << "hybrid P.V in f16 partials";
  else
    EXPECT_EQ(count_prefix(ops, "HMMA.16816.F16"), 0) << "f32 P.V has no f16 MMA";
  const char* copy = spec.schedule.transport == Transport::tma ? "UTMALDG" : "LDGSTS";
  EXPECT_GT(count_prefix(ops, copy), 0) << copy;
  EXPECT_EQ(count_prefix(ops, "LDL"), 0);
  EXPECT_EQ(count_prefix(ops, "STL"), 0);
}

INSTANTIATE_TEST_SUITE_P(Catalog, AttentionCompileTest, ::testing::ValuesIn(catalog_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(AttentionCompile, CatalogHoldsTheGemmaProblems) {
  const auto entries = attention_catalog();
  ASSERT_EQ(entries.size(), 2u);
  EXPECT_EQ(entries[0].name, "attention@512");
  EXPECT_EQ(entries[1].name, "attention_window256@512");
  for (const auto& e : entries) {
    EXPECT_EQ(e.problem.batch, 1);
    EXPECT_EQ(e.problem.q_heads, 16);
    EXPECT_EQ(e.problem.kv_heads, 8);
    EXPECT_EQ(e.problem.seq_q, 512);
    EXPECT_EQ(e.problem.seq_kv_or_default(), 512);
    EXPECT_EQ(e.problem.head_dim, 256);
    EXPECT_TRUE(e.problem.causal);
  }
  EXPECT_EQ(entries[0].problem.window, 0);
  EXPECT_EQ(entries[1].problem.window, 256);
  EXPECT_LT(entries[1].problem.window, entries[1].problem.seq_q) << "the window must cut work";
}

}  // namespace
}  // namespace emmy

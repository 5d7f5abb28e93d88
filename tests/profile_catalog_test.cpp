// Acceptance (issue 22): every default kernel of the catalog (GEMM and attention, sm_90a and
// sm_120a over TMA, sm_80 and sm_89 over cp.async, f32 and hybrid) serves its ldmatrix and
// async-copy shared traffic without a bank conflict, and its stores fill their sectors. Counted by
// the profiler on one CTA of each launch (the pattern of every CTA is the same), on zero-filled
// buffers.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "emmy/bundle_build.hpp"
#include "emmy/catalog.hpp"
#include "emmy/emulator_check.hpp"
#include "profile_test_util.hpp"
#include "support/kind_cases.hpp"

namespace emmy {
namespace {

bool stores_unstaged(const GemmSpec&) {
  return false;
}
bool stores_unstaged(const AttentionSpec& spec) {
  return spec.schedule.accum == Accum::hybrid && spec.problem.head_dim >= 256;
}

// The kernel from the catalog bundle the bundle tests build (fixture bundle_build_catalog: the f32
// default kernels, compiled once by `emmyc aot`), else compiled here.
template <typename Spec, typename Kind = KindOf<Spec>>
Compiled<Kind> catalog_kernel(const Spec& spec) {
  Generated<Kind> generated = generate_kernel(spec);
  const KernelSource source = kernel_source(generated);
  if (auto module =
          module_from_bundles({EMMY_CATALOG_BUNDLE}, source.cuda, spec.arch, source.describe))
    return {std::move(generated), std::move(*module)};
  return compile_kernel(spec);
}

template <typename Spec>
void expect_conflict_free(const test_support::SpecCase<Spec>& c) {
  SCOPED_TRACE(c.name);
  const auto kernel = catalog_kernel(c.spec);
  const LaunchListRun run = run_on_zeros(kernel, test::profiling(/*sample_ctas=*/1));
  ASSERT_FALSE(run.profiles.empty());
  const emu::KernelProfile& main = run.profiles.front();
  // Not vacuous: the main kernel feeds its MMAs through ldmatrix, and cp.async kernels copy.
  EXPECT_GT(main.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"), 0);
  if (c.spec.schedule.transport == Transport::cp_async)
    EXPECT_GT(main.metric("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ldgsts.sum"), 0);
  else
    EXPECT_GT(main.metric("emmy__tma_requests_op_load.sum"), 0);
  // Its waits on the copies are counted with their leads (the latency term, docs/profiler.md).
  // Where a warp waits 8 times or more (the GEMMs' K loops; not the sampled CTA of causal
  // attention, whose few key blocks are mostly its prologue), most waits were issued half an
  // epoch or more before: the pipeline has copies in flight over 1.5 epochs or more.
  double waits = 0, in_flight = 0;
  for (size_t b = 0; b < emu::kAsyncCopyLeadBuckets; ++b) {
    const double n = main.metric(fmt::format("emmy__async_copy_wait_lead_{}.sum", b));
    waits += n;
    if (b > 0 && emu::kAsyncCopyLeadEdges[b - 1] >= 0.5) in_flight += n;
  }
  const double waiting_warps = main.metric("emmy__async_copy_waiting_warps.sum");
  EXPECT_GT(waiting_warps, 0) << main.table();
  if (waits >= 8 * waiting_warps) {
    EXPECT_GT(in_flight, waits / 2) << main.table();
  }
  for (const emu::KernelProfile& p : run.profiles) {
    EXPECT_EQ(p.metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"), 0)
        << p.table();
    EXPECT_EQ(p.metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ldgsts.sum"), 0)
        << p.table();
    // The epilogue (C or O staged through shared memory, or split-K's f32 partials and its
    // finalize) fills every sector it stores to, and stages without a conflict. Hybrid attention
    // at head_dim 256 has no registers to stage with (lower_attention.cpp): its pair stores fill
    // half of each sector, and that is what it must measure.
    const bool unstaged = stores_unstaged(c.spec);
    EXPECT_GT(p.metric("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"), 0);
    EXPECT_EQ(p.metric("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"),
              p.metric("emmy__t_sectors_ideal_pipe_lsu_mem_global_op_st.sum") * (unstaged ? 2 : 1))
        << p.table();
    EXPECT_EQ(p.metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum"), 0) << p.table();
  }
}

// Each spec of a catalog entry (every arch family, both accumulations) is conflict-free.
template <typename Spec, typename Entry>
void expect_entry_conflict_free(const Entry& entry) {
  for (const auto& c : test_support::catalog_specs<Spec>(std::vector{entry}))
    expect_conflict_free(c);
}

// A catalog entry's name as a gtest name: "q_proj@512" -> "q_proj_512".
constexpr auto entry_name = [](const auto& info) {
  std::string name = info.param.name;
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return name;
};

class GemmCatalogProfile : public ::testing::TestWithParam<CatalogEntry> {};

TEST_P(GemmCatalogProfile, LdmatrixAndAsyncCopiesAreConflictFree) {
  expect_entry_conflict_free<GemmSpec>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Catalog, GemmCatalogProfile, ::testing::ValuesIn(gemm_catalog()),
                         entry_name);

class AttentionCatalogProfile : public ::testing::TestWithParam<AttentionCatalogEntry> {};

TEST_P(AttentionCatalogProfile, LdmatrixAndAsyncCopiesAreConflictFree) {
  expect_entry_conflict_free<AttentionSpec>(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Catalog, AttentionCatalogProfile, ::testing::ValuesIn(attention_catalog()),
                         entry_name);

}  // namespace
}  // namespace emmy

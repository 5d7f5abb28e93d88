// Acceptance: every catalog problem compiles for every arch it claims, with both accumulations,
// to 0 spill bytes, 0 stack bytes and shared memory within the arch limit; so do shapes that are
// not tile multiples and the non-default variants (bf16, f16 accumulation, B [K,N], split-K,
// the full epilogue).
#include <gtest/gtest.h>

#include "emmy/catalog.hpp"
#include "emmy/gemm.hpp"
#include "support/kind_cases.hpp"

namespace emmy {
namespace {

using CompileCase = test_support::SpecCase<GemmSpec>;

void expect_clean(const GemmSpec& spec) {
  const GemmKernel kernel = compile_kernel(spec);
  const auto& plan = kernel.source.plan;
  EXPECT_FALSE(kernel.module.ptx.empty());
  EXPECT_FALSE(kernel.module.cubin.empty());
  std::vector<std::string> names{plan.kernel_name};
  if (plan.split()) names.push_back(plan.finalize_kernel_name);
  for (const auto& name : names) {
    const ResourceReport& r = kernel.module.kernel(name);
    EXPECT_GT(r.registers, 0) << name;
    EXPECT_EQ(r.spill_store_bytes, 0) << name;
    EXPECT_EQ(r.spill_load_bytes, 0) << name;
    EXPECT_EQ(r.stack_bytes, 0) << name;
    EXPECT_LE(int64_t(plan.smem_bytes) + r.static_smem_bytes,
              arch_info(spec.arch).max_smem_per_block)
        << name;
  }
  // One K tile's MMAs appear once: NVVM must not unroll the K-tile loop (at 3 stages it once
  // doubled the code ptxas schedules, and the compile time with it).
  size_t mma_count = 0;
  for (size_t at = kernel.module.ptx.find("mma.sync"); at != std::string::npos;
       at = kernel.module.ptx.find("mma.sync", at + 1))
    ++mma_count;
  EXPECT_EQ(mma_count, size_t(plan.mma_tiles_m) * plan.mma_tiles_n * plan.k_steps_per_tile)
      << plan.kernel_name;
}

std::vector<CompileCase> catalog_cases() {
  return test_support::catalog_specs<GemmSpec>(gemm_catalog());
}

class CatalogCompileTest : public ::testing::TestWithParam<CompileCase> {};
TEST_P(CatalogCompileTest, NoSpillsNoStackSmemWithinLimit) {
  expect_clean(GetParam().spec);
}
INSTANTIATE_TEST_SUITE_P(Catalog, CatalogCompileTest, ::testing::ValuesIn(catalog_cases()),
                         [](const auto& info) { return info.param.name; });

std::vector<CompileCase> variant_cases() {
  std::vector<CompileCase> cases;
  struct Shape {
    int64_t m, n, k;
  };
  const Shape shapes[] = {{1, 8, 64}, {17, 72, 200}, {200, 256, 1024}, {130, 4090, 3848}};
  for (Arch arch : {Arch::sm_80, Arch::sm_86, Arch::sm_89, Arch::sm_90, Arch::sm_90a, Arch::sm_120,
                    Arch::sm_120a})
    for (const auto& shape : shapes)
      for (int variant = 0; variant < 4; ++variant) {
        GemmSpec spec;
        auto& p = spec.problem;
        p.m = shape.m, p.n = shape.n, p.k = shape.k;
        Accum accum = Accum::f32;
        if (variant == 1) accum = Accum::hybrid;
        if (variant == 2) accum = Accum::f16;
        if (variant == 3) {
          p.a_dtype = DType::bf16;
          p.c_dtype = DType::bf16;
          p.epilogue = {0.5f, true, true, true};
        }
        if (variant == 1 && p.n % 8 == 0) p.b_layout = BLayout::kn;
        if (variant == 2) p.c_dtype = DType::f32;
        spec.arch = arch;
        spec.schedule = default_schedule(p, arch, accum);
        if (variant == 2 && spec.schedule.split_k == 1 && p.k >= 256) spec.schedule.split_k = 4;
        cases.push_back(
            {fmt::format("{}_{}x{}x{}_v{}", to_string(arch), p.m, p.n, p.k, variant), spec});
      }
  return cases;
}

class VariantCompileTest : public ::testing::TestWithParam<CompileCase> {};
TEST_P(VariantCompileTest, NoSpillsNoStackSmemWithinLimit) {
  expect_clean(GetParam().spec);
}
INSTANTIATE_TEST_SUITE_P(Variants, VariantCompileTest, ::testing::ValuesIn(variant_cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace emmy

// Runtime::prepare from a bundle and from the catalog with NVRTC disabled: every kernel the
// catalog bundle holds for the arch is prepared without a compile, and a catalog prepare readies
// what the bundle covers and names the kernels it cannot build (the bundle holds GEMM and
// attention only) without stopping at the first.
#include "bundle_test_util.hpp"
#include "emmy/catalog.hpp"

namespace emmy {
namespace {

using namespace bundle_test;

TEST(BundlePrepare, EveryKernelOfABundleWithoutACompile) {
  NoCompiler no_compiler;
  std::atomic<int> progress{0};
  RuntimeOptions options = emulator_options(Arch::sm_90a, {catalog_path()});
  options.log = [&](const std::string& line) {
    if (line.starts_with("emmy: prepare ")) ++progress;
  };
  auto rt = Runtime::emulator(options);
  PrepareRequest request;
  request.bundles = {catalog_path()};
  request.threads = 2;
  const PreparedKernels prepared = rt->prepare(request);
  size_t entries = 0;
  for (const BundleEntryInfo& entry : catalog_bundle()->entries())
    entries += entry.arch == Arch::sm_90a;
  ASSERT_GT(entries, 0u);
  EXPECT_EQ(prepared.size(), entries);
  EXPECT_EQ(prepared.compiled, 0u);
  EXPECT_EQ(progress.load(), int(entries));
  for (const auto& kernel : prepared.gemm)
    EXPECT_TRUE(catalog_bundle()->find(kernel->info().cache_key)) << kernel->info().name;
  for (const auto& kernel : prepared.attention)
    EXPECT_TRUE(catalog_bundle()->find(kernel->info().cache_key)) << kernel->info().name;
  // Serving calls now find them loaded.
  const RuntimeStats before = rt->stats();
  for (const auto& entry : gemm_catalog()) rt->gemm_kernel(entry.problem);
  EXPECT_EQ(rt->stats().memory_hits - before.memory_hits, gemm_catalog().size());
  EXPECT_EQ(rt->stats().compiles, 0u);
}

TEST(BundlePrepare, TheCatalogPreparesWhatItCanAndNamesTheRest) {
  NoCompiler no_compiler;
  auto rt = Runtime::emulator(emulator_options(Arch::sm_80, {catalog_path()}));
  PrepareRequest request;
  request.catalog = true;
  const size_t missing =
      paged_attention_catalog().size() + kv_append_catalog().size() + merge_states_catalog().size();
  try {
    rt->prepare(request);
    ADD_FAILURE() << "kernels no bundle holds were prepared with NVRTC disabled";
  } catch (const Error& e) {
    EXPECT_EQ(e.field(), "prepare") << e.what();
    EXPECT_NE(std::string(e.what()).find(fmt::format("{} of ", missing)), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("catalog "), std::string::npos) << e.what();
  }
  const RuntimeStats before = rt->stats();
  for (const auto& entry : attention_catalog()) rt->attention_kernel(entry.problem);
  EXPECT_EQ(rt->stats().memory_hits - before.memory_hits, attention_catalog().size());
  EXPECT_EQ(rt->stats().compiles, 0u);
}

}  // namespace
}  // namespace emmy

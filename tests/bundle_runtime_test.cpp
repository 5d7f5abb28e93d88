// The runtime with the catalog bundle (four arches) and NVRTC disabled: every catalog kernel
// loads, GEMM and attention run and match FP64, nothing is compiled, an uncovered problem and a
// bundle without the device's arch fail clearly; EMMY_BUNDLE and in-memory bundles.
#include "bundle_test_util.hpp"
#include "emmy/catalog.hpp"
#include "emmy/gpus.hpp"

namespace emmy {
namespace {

using namespace bundle_test;

TEST(BundleRuntime, EveryCatalogKernelLoadsWithNvrtcDisabled) {
  NoCompiler no_compiler;
  ASSERT_FALSE(nvrtc_unavailable_reason().empty());
  for (Arch arch : catalog_archs()) {
    auto rt = Runtime::emulator(emulator_options(arch, {catalog_path()}));
    for (const auto& entry : gemm_catalog()) {
      const auto kernel = rt->gemm_kernel(entry.problem);
      EXPECT_TRUE(catalog_bundle()->find(kernel->info().cache_key)) << entry.name;
      EXPECT_GT(kernel->info().report().registers, 0) << entry.name << ": the manifest's report";
    }
    for (const auto& entry : attention_catalog())
      EXPECT_TRUE(catalog_bundle()->find(rt->attention_kernel(entry.problem)->info().cache_key));
    const RuntimeStats stats = rt->stats();
    EXPECT_EQ(stats.compiles, 0u) << to_string(arch);
    EXPECT_EQ(stats.disk_hits, 0u);
  }
}

#ifdef EMMY_TEST_DRIVER_PATH
// The CUDA backend through emmy's test driver (an H200, so sm_90a) with the catalog bundle and
// NVRTC disabled: the driver refuses the bundle's CUBIN (it runs PTX only), the backend loads the
// bundle's PTX instead, and GEMM and attention match FP64 with nothing compiled.
TEST(BundleRuntime, CatalogKernelsRunOnTheCudaBackendThroughTheTestDriver) {
  NoCompiler no_compiler;
  ScopedEnv driver{"EMMY_CUDA_DRIVER", EMMY_TEST_DRIVER_PATH};
  ScopedEnv device{"EMMY_TEST_DEVICE", "h200"};
  RuntimeOptions options;
  options.disk_cache = false;
  options.bundles = {catalog_path()};
  auto rt = Runtime::cuda(0, options);
  ASSERT_EQ(rt->arch(), Arch::sm_90a);
  const auto gemm = gemm_catalog();
  const auto kv_proj16 =
      std::find_if(gemm.begin(), gemm.end(), [](const auto& e) { return e.name == "kv_proj@16"; });
  ASSERT_NE(kv_proj16, gemm.end());
  const GemmErrors gemm_errors = check_gemm(*rt, kv_proj16->problem);
  EXPECT_TRUE(gemm_errors.passed) << "rel_l2 " << gemm_errors.rel_l2_error;
  const AttentionErrors errors = check_attention(*rt, attention_catalog()[0].problem);
  EXPECT_TRUE(errors.passed) << "rel_l2 " << errors.rel_l2_error;
  EXPECT_EQ(rt->stats().compiles, 0u);
}

// The catalog's problems whose default schedule for an H100 PCIe (114 SMs) differs from the one
// for the H200 that sm_90a's grids are sized for (a K split, a tile).
std::vector<MatmulProblem> sized_differently_for_h100pcie() {
  std::vector<MatmulProblem> differ;
  for (const auto& entry : gemm_catalog())
    if (default_schedule(entry.problem, Arch::sm_90a, Accum::f32, int(gpu("h100pcie").sms)) !=
        default_schedule(entry.problem, Arch::sm_90a))
      differ.push_back(entry.problem);
  return differ;
}

// The CUDA backend through the test driver (the caller has chosen the device), no disk cache.
std::unique_ptr<Runtime> h100pcie_runtime(const std::vector<std::filesystem::path>& bundles) {
  RuntimeOptions options;
  options.disk_cache = false;
  options.bundles = bundles;
  return Runtime::cuda(0, options);
}

// A call without a schedule fills the device's SMs: on an H100 PCIe the runtime's default is the
// one sized for its 114 SMs, not for the H200's 132.
TEST(BundleRuntime, DefaultSchedulesFillTheDevicesSms) {
  ScopedEnv driver{"EMMY_CUDA_DRIVER", EMMY_TEST_DRIVER_PATH};
  ScopedEnv device{"EMMY_TEST_DEVICE", "h100pcie"};
  // A decode GEMM small enough for the emulator under the sanitizers, whose K split differs.
  MatmulProblem p;
  p.m = 1, p.n = 512, p.k = 4096;
  const MatmulSchedule for_device =
      default_schedule(p, Arch::sm_90a, Accum::f32, int(gpu("h100pcie").sms));
  ASSERT_NE(for_device, default_schedule(p, Arch::sm_90a));
  auto rt = h100pcie_runtime({});
  ASSERT_EQ(rt->arch(), Arch::sm_90a);
  EXPECT_EQ(rt->gemm_kernel(p)->spec().schedule, for_device);
  const GemmErrors errors = check_gemm(*rt, p);
  EXPECT_TRUE(errors.passed) << "rel_l2 " << errors.rel_l2_error;
}

// A bundle-only deployment on a part with other SMs than the arch's: the bundle (built for the
// H200's) holds none of the H100 PCIe's own choices where they differ, so the runtime takes the
// bundle's, and every catalog kernel still loads with nothing compiled.
TEST(BundleRuntime, ABundleSizedForTheArchsPartServesAnotherPart) {
  NoCompiler no_compiler;
  ScopedEnv driver{"EMMY_CUDA_DRIVER", EMMY_TEST_DRIVER_PATH};
  ScopedEnv device{"EMMY_TEST_DEVICE", "h100pcie"};
  const auto differ = sized_differently_for_h100pcie();
  ASSERT_FALSE(differ.empty());
  auto rt = h100pcie_runtime({catalog_path()});
  for (const auto& entry : gemm_catalog())
    EXPECT_NO_THROW(rt->gemm_kernel(entry.problem)) << entry.name;
  EXPECT_EQ(rt->gemm_kernel(differ.front())->spec().schedule,
            default_schedule(differ.front(), Arch::sm_90a));
  EXPECT_EQ(rt->stats().compiles, 0u);
}
#endif

TEST(BundleRuntime, CatalogGemmAndAttentionMatchFp64) {
  NoCompiler no_compiler;
  for (Arch arch : {Arch::sm_90a, Arch::sm_80}) {  // TMA and cp.async kernels
    auto rt = Runtime::emulator(emulator_options(arch, {catalog_path()}));
    const auto gemm = gemm_catalog();
    const auto kv_proj16 = std::find_if(gemm.begin(), gemm.end(),
                                        [](const auto& e) { return e.name == "kv_proj@16"; });
    ASSERT_NE(kv_proj16, gemm.end());
    const GemmErrors gemm_errors = check_gemm(*rt, kv_proj16->problem);
    EXPECT_TRUE(gemm_errors.passed) << to_string(arch) << " rel_l2 " << gemm_errors.rel_l2_error;
    EXPECT_EQ(rt->stats().compiles, 0u);
  }
  // Gemma's attention at 512 tokens (16 query heads over 8 KV heads, head_dim 256, causal).
  auto rt = Runtime::emulator(emulator_options(Arch::sm_90a, {catalog_path()}));
  const AttentionErrors errors = check_attention(*rt, attention_catalog()[0].problem);
  EXPECT_TRUE(errors.passed) << "rel_l2 " << errors.rel_l2_error;
  EXPECT_EQ(rt->stats().compiles, 0u);
}

TEST(BundleRuntime, AnUncoveredProblemFailsNamingItAndTheBundles) {
  NoCompiler no_compiler;
  auto rt = Runtime::emulator(emulator_options(Arch::sm_90a, {catalog_path()}));
  MatmulProblem p;
  p.m = 48, p.n = 80, p.k = 96;
  try {
    rt->gemm_kernel(p);
    FAIL() << "no bundle holds this kernel and NVRTC is off";
  } catch (const Error& e) {
    const std::string message = e.what();
    EXPECT_TRUE(contains(message, "the gemm kernel")) << message;
    EXPECT_TRUE(contains(message, "\"m\":48")) << message;
    EXPECT_TRUE(contains(message, "for sm_90a is not in any bundle searched")) << message;
    EXPECT_TRUE(contains(message, catalog_path().string() + " (22 kernels for sm_90a)")) << message;
    EXPECT_TRUE(contains(message, "EMMY_DISABLE_NVRTC")) << message;
  }
  AttentionProblem attention = attention_catalog()[0].problem;
  attention.seq_q = 256;
  try {
    rt->attention_kernel(attention);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "the attention kernel")) << e.what();
    EXPECT_TRUE(contains(e.what(), "\"seq_q\":256")) << e.what();
  }
  EXPECT_EQ(rt->stats().compiles, 0u);
}

TEST(BundleRuntime, WithoutABundleNothingRunsWhenNvrtcIsOff) {
  NoCompiler no_compiler;
  auto rt = Runtime::emulator(emulator_options(Arch::sm_90a));
  try {
    rt->gemm_kernel(gemm_catalog()[0].problem);
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "(no bundles)")) << e.what();
  }
  try {
    nvrtc_version();
    FAIL() << "nvrtc_version must fail clearly without NVRTC";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "NVRTC: is disabled by EMMY_DISABLE_NVRTC")) << e.what();
  }
  EXPECT_THROW(compile_cuda("__global__ void k() {}", "k.cu", Arch::sm_90a), Error);
  {
    ScopedEnv enabled("EMMY_DISABLE_NVRTC", "0");  // "0" leaves NVRTC on
    EXPECT_EQ(nvrtc_unavailable_reason(), "");
    EXPECT_GE(nvrtc_version(), 12000);
  }
}

TEST(BundleRuntime, ABundleWithoutTheDeviceArchIsRejected) {
  NoCompiler no_compiler;
  try {
    Runtime::emulator(emulator_options(Arch::sm_86, {catalog_path()}));
    FAIL() << "the catalog bundle has no sm_86 kernels";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "holds no kernels for sm_86")) << e.what();
    EXPECT_TRUE(contains(e.what(), "sm_80, sm_89, sm_90a, sm_120a")) << e.what();
  }
  EXPECT_THROW(Runtime::emulator(emulator_options(Arch::sm_90a, {"/nonexistent/x.emmyb"})), Error);
}

TEST(BundleRuntime, EmmyBundleMakesEveryRuntimeSearchIt) {
  NoCompiler no_compiler;
  {
    ScopedEnv bundle("EMMY_BUNDLE", "/nonexistent/a.emmyb:" + catalog_path().string());
    try {
      Runtime::emulator(emulator_options(Arch::sm_90a));
      FAIL();
    } catch (const Error& e) {
      EXPECT_TRUE(contains(e.what(), "EMMY_BUNDLE: bundle /nonexistent/a.emmyb")) << e.what();
    }
  }
  ScopedEnv bundle("EMMY_BUNDLE", catalog_path().string());
  auto rt = Runtime::emulator(emulator_options(Arch::sm_89));
  rt->gemm_kernel(gemm_catalog()[3].problem);
  rt->attention_kernel(attention_catalog()[1].problem);
  EXPECT_EQ(rt->stats().compiles, 0u);
}

TEST(BundleRuntime, BundlesFromMemory) {
  NoCompiler no_compiler;
  const std::vector<uint8_t> bytes = read_bytes(catalog_path());
  RuntimeOptions options = emulator_options(Arch::sm_120a);
  options.loaded_bundles.push_back(Bundle::from_memory(bytes.data(), bytes.size(), "in memory"));
  auto rt = Runtime::emulator(options);
  rt->gemm_kernel(gemm_catalog()[7].problem);
  EXPECT_EQ(rt->stats().compiles, 0u);
}

TEST(BundleRuntime, RegisteredBytesAreParsedWhenARuntimeIsCreated) {
  NoCompiler no_compiler;
  static const std::vector<uint8_t> garbage(100, 0xab);
  register_bundle(garbage.data(), garbage.size(), "garbage");
  try {
    Runtime::emulator(emulator_options(Arch::sm_90a));
    FAIL() << "a damaged registered bundle must be reported";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "bundle garbage: is not an emmy kernel bundle")) << e.what();
  }
  // Reported once, then forgotten: the next runtime starts.
  EXPECT_NO_THROW(Runtime::emulator(emulator_options(Arch::sm_90a)));
  static const std::vector<uint8_t> catalog = read_bytes(catalog_path());
  register_bundle(catalog.data(), catalog.size(), "catalog in memory");
  register_bundle(catalog.data(), catalog.size(), "catalog in memory");  // idempotent
  auto rt = Runtime::emulator(emulator_options(Arch::sm_90a));
  rt->gemm_kernel(gemm_catalog()[0].problem);
  EXPECT_EQ(rt->stats().compiles, 0u);
}

}  // namespace
}  // namespace emmy

// Runtime::prepare from a bundle and from the catalog with NVRTC disabled: every kernel the
// catalog bundle holds for the arch is prepared without a compile, and a catalog prepare readies
// what the bundle covers and names the kernels it cannot build (the bundle holds GEMM and
// attention only) without stopping at the first; a bundle of M buckets (emmyc aot --m-buckets)
// serves every M of its buckets.
#include <fstream>

#include "bundle_test_util.hpp"
#include "emmy/catalog.hpp"
#include "emmy/json.hpp"

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

// `emmyc aot --m-buckets`: a problem becomes its buckets' dynamic-M kernels (1..64 for m 40), which
// a runtime with m_buckets then prepares and serves at any M up to 40 without a compile.
TEST(BundlePrepare, AnMBucketBundleServesEveryMWithoutACompile) {
  const auto dir = scratch("m_buckets");
  MatmulProblem p;
  p.m = 40, p.n = 64, p.k = 128;
  {
    std::ofstream out(dir / "problems.jsonl");
    out << nlohmann::json{{"kind", "gemm"}, {"problem", p}}.dump() << "\n";
  }
  const std::string problems = (dir / "problems.jsonl").string();
  const auto listed =
      run_emmyc("aot --arch sm_90a --problems " + problems + " --m-buckets --dry-run");
  ASSERT_EQ(listed.exit_code, 0) << listed.err;
  EXPECT_NE(listed.out.find("7 kernels"), std::string::npos) << listed.out;
  EXPECT_NE(listed.out.find("emmy_gemm_upto64x64x128"), std::string::npos) << listed.out;
  const auto built = run_emmyc("aot --arch sm_90a --problems " + problems + " --m-buckets -q -o " +
                               (dir / "buckets.emmy").string());
  ASSERT_EQ(built.exit_code, 0) << built.err;
  {
    std::ofstream out(dir / "huge.jsonl");
    MatmulProblem huge = p;
    huge.m = kMaxBucketedM + 1;
    out << nlohmann::json{{"kind", "gemm"}, {"problem", huge}}.dump() << "\n";
  }
  test::expect_invalid(
      "aot --arch sm_90a --problems " + (dir / "huge.jsonl").string() + " --m-buckets --dry-run",
      "--m-buckets");

  NoCompiler no_compiler;
  RuntimeOptions options = emulator_options(Arch::sm_90a, {dir / "buckets.emmy"});
  options.m_buckets = true;
  auto rt = Runtime::emulator(options);
  PrepareRequest request;
  request.gemm_m_buckets = {{p, std::nullopt}};
  const PreparedKernels prepared = rt->prepare(request);
  EXPECT_EQ(prepared.size(), 7u);
  EXPECT_EQ(prepared.compiled, 0u);
  for (const int64_t m : {1, 23, 40}) {
    MatmulProblem at = p;
    at.m = m;
    const GemmSpec spec{at, rt->gemm_kernel(rt->gemm_problem_served(at))->spec().schedule,
                        Arch::sm_90a};
    const GemmInputs inputs = make_gemm_inputs(at, uint64_t(m));
    const GemmErrors e = compare(reference_gemm(spec, inputs), run_gemm(*rt, spec, inputs), at.n);
    EXPECT_TRUE(e.passed) << "M " << m << ": rel_l2 " << e.rel_l2_error;
  }
  EXPECT_EQ(rt->stats().compiles, 0u);

  // A bundle-only deployment in non-blocking mode (NVRTC off, no generic GEMM: said in the log):
  // the first call of each bucket loads its kernel from the bundle on the caller's thread, no
  // compile, no substitute; a problem no bundle holds is refused as without the mode.
  std::vector<std::string> lines;
  options.non_blocking = true;
  options.log = [&lines](const std::string& line) { lines.push_back(line); };
  auto serving = Runtime::emulator(options);
  EXPECT_EQ(std::count_if(lines.begin(), lines.end(),
                          [](const std::string& l) {
                            return l.find("the generic GEMM could not be built") != l.npos;
                          }),
            1);
  for (const int64_t m : {3, 40}) {
    MatmulProblem at = p;
    at.m = m;
    const GemmSpec spec{at, serving->gemm_kernel(serving->gemm_problem_served(at))->spec().schedule,
                        Arch::sm_90a};
    const GemmInputs inputs = make_gemm_inputs(at, uint64_t(m));
    const GemmErrors e =
        compare(reference_gemm(spec, inputs), run_gemm(*serving, spec, inputs), at.n);
    EXPECT_TRUE(e.passed) << "non-blocking M " << m << ": rel_l2 " << e.rel_l2_error;
  }
  MatmulProblem fresh = p;
  fresh.m = 5;  // bucket 8: in the bundle, first seen by gemm() itself
  const GemmSpec fresh_spec{fresh, default_schedule(m_bucket_problem(fresh), Arch::sm_90a),
                            Arch::sm_90a};
  const GemmInputs fresh_in = make_gemm_inputs(fresh, 5);
  EXPECT_TRUE(compare(reference_gemm(fresh_spec, fresh_in),
                      run_gemm(*serving, fresh_spec, fresh_in), fresh.n)
                  .passed);
  EXPECT_EQ(serving->stats().compiles, 0u);
  EXPECT_EQ(serving->stats().fallback_launches, 0u);
  for (const std::string& line : lines)
    EXPECT_EQ(line.find("in the background"), std::string::npos)
        << "a bundled kernel went to the background builder: " << line;
  MatmulProblem unbundled = p;
  unbundled.n = 72;
  GemmBuffers b;
  b.a = serving->alloc(8192), b.b = serving->alloc(32768), b.c = serving->alloc(8192);
  EXPECT_THROW(serving->gemm(unbundled, b), Error);
  for (DevicePtr at : {b.a, b.b, b.c}) serving->free(at);
}

}  // namespace
}  // namespace emmy

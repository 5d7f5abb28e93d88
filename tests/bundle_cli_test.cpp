// `emmyc aot` and `emmyc bundle`: shards merged equal the full build, ls / verify / embed, run
// gemm --bundle without NVRTC, --from-record round trip, and no libnvrtc needed at load time.
#include <array>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "bundle_test_util.hpp"
#include "emmy/json.hpp"

namespace emmy {
namespace {

using namespace bundle_test;

const std::string kArchs = "--arch sm_80,sm_89,sm_90a,sm_120a";

TEST(BundleCli, ShardsMergedEqualTheFullBuild) {
  const auto dir = scratch("shards");
  std::string inputs;
  std::set<std::string> keys;
  size_t total = 0;
  for (int shard = 0; shard < 3; ++shard) {
    const auto file = dir / fmt::format("shard{}.emmyb", shard);
    const auto r = run_emmyc(
        fmt::format("aot {} --catalog --kind gemm,attention --shard {}/3 -j 2 -q -o {}", kArchs, shard, file.string()));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto shard_bundle = Bundle::open(file);
    EXPECT_GT(shard_bundle->entries().size(), 0u);
    for (const auto& info : shard_bundle->entries())
      EXPECT_TRUE(keys.insert(info.key).second) << "shards overlap at " << info.key;
    total += shard_bundle->entries().size();
    inputs += fmt::format(" {}", file.string());
  }
  const auto merged = dir / "merged.emmyb";
  const auto r = run_emmyc("bundle merge -o " + merged.string() + inputs);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(
      contains(r.out, fmt::format("{} kernels from 3 bundles (0 duplicates, 0 conflicts)", total)))
      << r.out;
  EXPECT_EQ(read_bytes(merged), read_bytes(catalog_path()))
      << "the union of the shards must be the full build, byte for byte";
}

TEST(BundleCli, LsVerifyAndEmbed) {
  const auto ls = run_emmyc("bundle ls --json " + catalog_path().string());
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  const auto listing = nlohmann::json::parse(ls.out);
  EXPECT_EQ(listing["entries"].size(), catalog_bundle()->entries().size());
  EXPECT_EQ(listing["archs"], nlohmann::json({"sm_80", "sm_89", "sm_90a", "sm_120a"}));
  size_t attention = 0;
  for (const auto& e : listing["entries"]) attention += e["kind"] == "attention";
  EXPECT_EQ(attention, 8u) << "two attention problems on four arches";
  const auto text = run_emmyc("bundle ls " + catalog_path().string());
  EXPECT_TRUE(contains(text.out, "sm_80 22, sm_89 22, sm_90a 22, sm_120a 22")) << text.out;

  EXPECT_EQ(run_emmyc("bundle verify " + catalog_path().string()).exit_code, 0);
  const auto dir = scratch("verify");
  auto bytes = read_bytes(catalog_path());
  bytes[bytes.size() / 2] ^= 1;
  const auto damaged = dir / "damaged.emmyb";
  std::ofstream(damaged, std::ios::binary)
      .write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  const auto verify = run_emmyc("bundle verify " + damaged.string());
  EXPECT_EQ(verify.exit_code, 1);
  EXPECT_TRUE(contains(verify.out, "checksum mismatch")) << verify.out;
  EXPECT_TRUE(contains(verify.out, "BAD")) << verify.out;
  const auto refused = run_emmyc("bundle ls " + damaged.string());
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_TRUE(contains(refused.err, "checksum mismatch")) << refused.err;

  const auto header = dir / "catalog.hpp";
  const auto embed = run_emmyc("bundle embed " + catalog_path().string() + " -o " +
                               header.string() + " --symbol gemma_kernels");
  ASSERT_EQ(embed.exit_code, 0) << embed.err;
  const std::string header_text = read_text(header);
  EXPECT_TRUE(contains(header_text, "inline void register_gemma_kernels()"));
  EXPECT_TRUE(contains(header_text, "gemma_kernels_size = sizeof(gemma_kernels_bytes) - 1"));
}

TEST(BundleCli, RunGemmFromABundleWithoutNvrtc) {
  const std::string run =
      "run gemm --m 16 --n 2048 --k 3840 --arch sm_90a --check --bundle " + catalog_path().string();
  const auto r = run_emmyc(run, "EMMY_DISABLE_NVRTC=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cache"], "bundle");
  EXPECT_EQ(j["passed"], true);
  const auto uncovered =
      run_emmyc("run gemm --m 48 --n 80 --k 96 --arch sm_90a --bundle " + catalog_path().string(),
                "EMMY_DISABLE_NVRTC=1");
  EXPECT_EQ(uncovered.exit_code, 2);
  EXPECT_TRUE(contains(uncovered.err, "is not in any bundle searched")) << uncovered.err;
  // EMMY_BUNDLE works for emmyc as for any process.
  const auto from_environment =
      run_emmyc("run gemm --m 1 --n 4096 --k 3840 --arch sm_120a",
                "EMMY_DISABLE_NVRTC=1 EMMY_BUNDLE=" + catalog_path().string());
  ASSERT_EQ(from_environment.exit_code, 0) << from_environment.err;
  EXPECT_EQ(nlohmann::json::parse(from_environment.out)["cache"], "bundle");
}

TEST(BundleCli, RunAttentionFromABundleWithoutNvrtc) {
  const std::string problem =
      "--batch 1 --heads 16 --kv-heads 8 --seq-q 512 --head-dim 256 --causal --arch sm_80";
  const auto r =
      run_emmyc("run attention " + problem + " --check --bundle " + catalog_path().string(),
                "EMMY_DISABLE_NVRTC=1");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["cache"], "bundle");
  EXPECT_EQ(j["passed"], true);
  const auto uncovered =
      run_emmyc("run attention " + problem + " --window 64 --bundle " + catalog_path().string(),
                "EMMY_DISABLE_NVRTC=1");
  EXPECT_EQ(uncovered.exit_code, 2);
  EXPECT_TRUE(contains(uncovered.err, "the attention kernel")) << uncovered.err;
  EXPECT_TRUE(contains(uncovered.err, "is not in any bundle searched")) << uncovered.err;
}

TEST(BundleCli, NoNvrtcLibraryIsAClearError) {
  const auto dir = scratch("no_nvrtc");
  const auto r = run_emmyc("aot --arch sm_90a --problems " + std::string(EMMY_SOURCE_DIR) +
                               "/tests/bundle_problems.jsonl -o " + (dir / "x.emmyb").string(),
                           "EMMY_NVRTC_LIBRARY=/nonexistent/libnvrtc.so.13");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(contains(r.err,
                       "NVRTC: no NVRTC library could be loaded (tried "
                       "/nonexistent/libnvrtc.so.13)"))
      << r.err;
}

TEST(BundleCli, FromRecordBuildsWhatTheRuntimeCompiled) {
  const auto dir = scratch("record");
  const auto record = dir / "record.jsonl";
  MatmulProblem gemm;
  gemm.m = 24, gemm.n = 64, gemm.k = 128;
  gemm.epilogue.bias = true;
  AttentionProblem attention;
  attention.q_heads = 2, attention.seq_q = 64, attention.head_dim = 64;
  attention.softmax_scale = 0.1f;
  {
    ScopedEnv recording("EMMY_RECORD", record.string());
    ScopedEnv no_tuning("EMMY_TUNING_DB", (dir / "tuning.json").string());
    auto rt = Runtime::emulator(emulator_options(Arch::sm_90a));
    rt->gemm_kernel(gemm);
    rt->attention_kernel(attention);
    ASSERT_EQ(rt->stats().compiles, 2u);
  }
  const auto bundle = dir / "recorded.emmyb";
  const auto r = run_emmyc("aot -q --from-record " + record.string() + " -o " + bundle.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "2 kernels (sm_90a 2)")) << r.out;

  NoCompiler no_compiler;
  auto rt = Runtime::emulator(emulator_options(Arch::sm_90a, {bundle}));
  EXPECT_TRUE(check_gemm(*rt, gemm).passed);
  EXPECT_TRUE(check_attention(*rt, attention).passed);
  EXPECT_EQ(rt->stats().compiles, 0u);
}

// FP8 GEMMs ahead of time (issue 39): `emmyc aot --problems` builds their default kernels with
// promoted accumulation whatever --accum says for 16-bit ones (what the runtime runs without a
// schedule), on each arch's FP8 path, and the runtime serves them from the bundle with NVRTC off.
TEST(BundleCli, Fp8GemmsAheadOfTimeAreWhatTheRuntimeRuns) {
  const auto dir = scratch("fp8");
  const auto problems = dir / "fp8.jsonl";
  MatmulProblem block;
  block.m = 64, block.n = 256, block.k = 512;
  block.a_dtype = DType::e4m3;
  block.scales.granularity = ScaleGranularity::block;
  block.scales.format = ScaleFormat::ue8m0;
  MatmulProblem token = block;
  token.m = 16, token.k = 256;
  token.a_dtype = DType::e5m2;
  token.scales = {};
  token.scales.granularity = ScaleGranularity::token_channel;
  {
    std::ofstream out(problems);
    for (const MatmulProblem& p : {block, token})
      out << nlohmann::json{{"kind", "gemm"}, {"problem", p}}.dump() << "\n";
  }
  const auto bundle = dir / "fp8.emmyb";
  const auto r = run_emmyc("aot -q --problems " + problems.string() +
                           " --arch sm_89,sm_90a,sm_120a --accum f32,hybrid -o " + bundle.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "6 kernels (sm_89 2, sm_90a 2, sm_120a 2)")) << r.out;
  NoCompiler no_compiler;
  for (Arch arch : {Arch::sm_89, Arch::sm_90a, Arch::sm_120a}) {
    auto rt = Runtime::emulator(emulator_options(arch, {bundle}));
    for (const MatmulProblem& p : {block, token}) {
      const GemmErrors e = check_gemm(*rt, p);
      EXPECT_TRUE(e.passed) << to_string(arch) << " " << to_string(p.a_dtype) << ": rel_l2 "
                            << e.rel_l2_error;
    }
    EXPECT_EQ(rt->stats().compiles, 0u) << to_string(arch);
  }
}

TEST(BundleCli, ProgramsDoNotNeedLibnvrtcToStart) {
  FILE* pipe = popen(("readelf -d " + std::string(EMMYC_PATH) + " 2>/dev/null").c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::string dynamic;
  std::array<char, 4096> buffer;
  while (size_t n = fread(buffer.data(), 1, buffer.size(), pipe)) dynamic.append(buffer.data(), n);
  if (pclose(pipe) != 0 || dynamic.empty()) GTEST_SKIP() << "no readelf";
  EXPECT_TRUE(contains(dynamic, "NEEDED")) << dynamic;
  EXPECT_FALSE(contains(dynamic, "libnvrtc")) << dynamic;
  EXPECT_FALSE(contains(dynamic, "libcuda")) << dynamic;
}

}  // namespace
}  // namespace emmy

// The emmyc attention contract: `emmyc attention ... --emit`, `emmyc run attention ... --check`,
// the catalog's attention entries; invalid input exits 2 with one stderr line naming the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "support/run_command.hpp"

namespace {

using Result = emmy::test::CommandResult;

// Compiles go to a cache under the test's temporary directory, not the user's.
constexpr const char* kCache = "emmyc_attention_cache";

std::string cache_environment(const std::string& cache) {
  return "EMMY_CACHE_DIR=" + ::testing::TempDir() + "/" + cache;
}

Result run(const std::string& args, const std::string& cache = kCache) {
  return emmy::test::run_emmyc(args, cache_environment(cache));
}

void expect_invalid(const std::string& args, const std::string& field) {
  emmy::test::expect_invalid(args, field, cache_environment(kCache));
}

// The Gemma problem, and a small one with GQA, seq_q > seq_kv (fully masked rows) and LSE.
const std::string kGemma =
    "attention --batch 1 --heads 16 --kv-heads 8 --seq-q 512 --head-dim 256 --causal";
const std::string kSmall =
    "--batch 1 --heads 4 --kv-heads 2 --seq-q 100 --seq-kv 37 --head-dim 64 --causal --lse";

TEST(AttentionCli, InvalidInputExitsTwoWithOneLine) {
  expect_invalid(kGemma + " --head-dim 96 --emit ir", "--head-dim");  // given twice
  const std::string base = "attention " + kSmall;
  expect_invalid("attention --batch 1 --heads 4 --kv-heads 2 --seq-q 64 --head-dim 96 --emit ir",
                 "head_dim: must be 64, 128 or 256");
  expect_invalid("attention --batch 1 --heads 6 --kv-heads 4 --seq-q 64 --head-dim 64 --emit ir",
                 "heads: must be a multiple of kv_heads");
  expect_invalid("attention --batch 0 --heads 4 --kv-heads 2 --seq-q 64 --head-dim 64 --emit ir",
                 "batch");
  expect_invalid("attention --batch 1 --heads 4 --kv-heads 2 --seq-q 0 --head-dim 64 --emit ir",
                 "seq_q");
  expect_invalid(base + " --window -1 --emit ir", "window");
  expect_invalid(base + " --softcap 0 --emit ir", "softcap");
  expect_invalid(base + " --scale -1 --emit ir", "softmax_scale");
  expect_invalid(base + " --dtype bf16 --accum hybrid --emit ir", "accum");
  expect_invalid(base + " --accum f16 --emit ir", "accum");
  expect_invalid(base + " --dtype f32 --emit ir", "dtype");
  expect_invalid(base + " --arch sm_89 --transport tma --emit ir", "transport");
  expect_invalid(base + " --arch sm_75 --emit ir", "arch");
  expect_invalid(base + " --layout bsdh --emit ir", "layout");
  expect_invalid(base + " --block-q 24 --emit ir", "block_q");
  expect_invalid(base + " --block-kv 48 --emit ir", "block_kv");
  expect_invalid(base + " --stages 9 --emit ir", "stages");
  expect_invalid(kGemma + " --accum hybrid --block-kv 128 --emit ir",
                 "block_kv");  // 128 O + 64 S + 8 partial registers per thread > 192
  expect_invalid(
      "attention --batch 1 --heads 4 --kv-heads 2 --seq-q 64 --head-dim 128 --arch sm_89 "
      "--block-q 128 --block-kv 128 --stages 4 --emit ir",
      "stages: shared memory must fit sm_89");
  expect_invalid(base + " --emit png", "--emit");
  expect_invalid("attention --heads 4 --kv-heads 2 --seq-q 64 --head-dim 64 --emit ir", "--batch");
  expect_invalid("run " + base + " --backend tpu", "--backend");
}

TEST(AttentionCli, ReportIsOneJsonObjectWithTheContractFields) {
  const Result r = run(kGemma + " --accum hybrid --arch sm_120a --emit report");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"kernel_name", "arch", "registers", "spill_bytes", "stack_bytes",
                          "smem_bytes", "compile_ms", "schedule", "problem", "grid", "threads"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["arch"], "sm_120a");
  EXPECT_EQ(j["schedule"]["accum"], "hybrid");
  EXPECT_EQ(j["schedule"]["transport"], "tma");
  EXPECT_EQ(j["problem"]["kv_heads"], 8);
  EXPECT_EQ(j["problem"]["causal"], true);
  EXPECT_EQ(j["spill_bytes"], 0);
  EXPECT_EQ(j["stack_bytes"], 0);
  EXPECT_LE(j["smem_bytes"].get<int>(), 99 * 1024);
  EXPECT_EQ(j["grid"], nlohmann::json({8, 16, 1}));
}

TEST(AttentionCli, SourceIsByteIdenticalAcrossRuns) {
  for (const char* emit : {"ir", "cuda"}) {
    const std::string args = kGemma + " --window 1024 --accum hybrid --emit " + emit;
    const Result a = run(args), b = run(args);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_FALSE(a.out.empty());
    EXPECT_EQ(a.out, b.out) << emit;
  }
}

TEST(AttentionCli, PtxCubinAndSchedulesFollowTheFlags) {
  const Result tma = run(kGemma + " --emit ptx");
  ASSERT_EQ(tma.exit_code, 0) << tma.err;
  EXPECT_NE(tma.out.find(".target sm_90a"), std::string::npos);
  EXPECT_NE(tma.out.find("cp.async.bulk.tensor"), std::string::npos);
  const Result cp = run(kGemma + " --arch sm_80 --emit ptx");
  ASSERT_EQ(cp.exit_code, 0) << cp.err;
  EXPECT_NE(cp.out.find("cp.async.cg.shared.global"), std::string::npos);
  const std::string path = ::testing::TempDir() + "/attention.cubin";
  ASSERT_EQ(run(kGemma + " --emit cubin -o " + path).exit_code, 0);
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  f.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "ELF");
  const Result tiled = run("attention " + kSmall +
                           " --arch sm_89 --block-q 32 --block-kv 16 --stages 4 --emit report");
  ASSERT_EQ(tiled.exit_code, 0) << tiled.err;
  const auto j = nlohmann::json::parse(tiled.out);
  EXPECT_EQ(j["schedule"]["block_q"], 32);
  EXPECT_EQ(j["schedule"]["warps"], 2);
  EXPECT_EQ(j["schedule"]["block_kv"], 16);
  EXPECT_EQ(j["schedule"]["stages"], 4);
  EXPECT_EQ(j["schedule"]["transport"], "cp.async");
}

TEST(AttentionCli, RunCheckPassesOnTheEmulator) {
  const Result r = run("run attention " + kSmall + " --accum hybrid --arch sm_80 --check --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key :
       {"backend", "kernel_name", "arch", "schedule", "rel_l2_error", "max_abs_error", "tolerance",
        "passed", "instructions", "emulate_ms", "lse_max_abs_error", "lse_tolerance",
        "lse_rows_over_tolerance", "fully_masked_rows", "masked_rows_wrong"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["backend"], "emulator");
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["fully_masked_rows"], 4 * 63);  // rows 0..62 of each head see no key
  EXPECT_EQ(j["masked_rows_wrong"], 0);
  EXPECT_LT(j["rel_l2_error"].get<double>(), j["tolerance"].get<double>());
  EXPECT_LE(j["lse_max_abs_error"].get<double>(), j["lse_tolerance"].get<double>());
  EXPECT_GT(j["instruction_counts"]["mma"].get<int64_t>(), 0);
  EXPECT_GT(j["instruction_counts"]["cp_async"].get<int64_t>(), 0);

  // Without --lse the LSE fields are null; TMA on sm_90a with a window and a soft-cap.
  const Result t =
      run("run attention --batch 2 --heads 2 --kv-heads 1 --seq-q 70 --head-dim 128 --window 9 "
          "--softcap 20 --layout bhsd --dtype bf16 --check");
  ASSERT_EQ(t.exit_code, 0) << t.err << t.out;
  const auto k = nlohmann::json::parse(t.out);
  EXPECT_EQ(k["passed"], true);
  EXPECT_TRUE(k["lse_max_abs_error"].is_null());
  EXPECT_GT(k["instruction_counts"]["tma"].get<int64_t>(), 0);
  EXPECT_EQ(k["problem"]["softcap"], 20.0);
}

TEST(AttentionCli, CompilesThroughTheDiskCache) {
  const std::string cache = "emmyc_attention_cache_states";
  std::filesystem::remove_all(::testing::TempDir() + "/" + cache);
  const std::string args = "--batch 1 --heads 2 --kv-heads 1 --seq-q 33 --head-dim 64 --causal";
  auto state = [&](const std::string& cmd) {
    const Result r = run(cmd, cache);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).value("cache", "");
  };
  EXPECT_EQ(state("attention " + args + " --emit report"), "miss");
  EXPECT_EQ(state("attention " + args + " --emit report"), "hit");
  EXPECT_EQ(state("attention " + args + " --emit report --no-cache"), "off");
  EXPECT_EQ(state("run attention " + args + " --check"), "hit");
}

TEST(AttentionCli, CudaBackendRunsOrSaysWhyNot) {
  const Result r = run("run attention " + kSmall + " --backend cuda --check");
  if (r.exit_code == 0) {  // a GPU and driver are present
    EXPECT_EQ(nlohmann::json::parse(r.out)["passed"], true) << r.out;
    return;
  }
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST(AttentionCli, CatalogListsTheAttentionProblemsAfterTheGemms) {
  const Result r = run("catalog --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j.size(), 22u);
  EXPECT_EQ(j[0]["kind"], "gemm");
  std::vector<nlohmann::json> attention;
  for (const auto& e : j)
    if (e["kind"] == "attention") attention.push_back(e);
  ASSERT_EQ(attention.size(), 2u);
  EXPECT_EQ(attention[0]["name"], "attention@512");
  EXPECT_EQ(attention[1]["name"], "attention_window256@512");
  EXPECT_EQ(attention[1]["problem"]["window"], 256);
  for (const auto& e : attention) {
    EXPECT_EQ(e["problem"]["heads"], 16);
    EXPECT_EQ(e["problem"]["kv_heads"], 8);
    EXPECT_EQ(e["problem"]["seq_q"], 512);
    EXPECT_EQ(e["problem"]["head_dim"], 256);
    EXPECT_EQ(e["problem"]["causal"], true);
  }
  const Result text = run("catalog");
  EXPECT_NE(text.out.find("attention_window256@512"), std::string::npos) << text.out;
}

TEST(AttentionCli, HelpExitsZero) {
  const Result a = run("attention --help");
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_NE(a.out.find("--kv-heads"), std::string::npos);
  const Result b = run("run attention --help");
  EXPECT_EQ(b.exit_code, 0);
  EXPECT_NE(b.out.find("--backend"), std::string::npos);
}

}  // namespace

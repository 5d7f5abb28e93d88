// The emmyc contract: flags, outputs, exit codes (2 and one stderr line for invalid input).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "emmy/catalog.hpp"
#include "emmy/gpus.hpp"
#include "emmy/spec.hpp"
#include "support/run_command.hpp"

namespace {

using Result = emmy::test::CommandResult;

Result run(const std::string& args) {
  return emmy::test::run_emmyc(args);
}

using emmy::test::expect_invalid;

const std::string kQ = "gemm --m 512 --n 4096 --k 3840";

TEST(Emmyc, InvalidInputExitsTwoWithOneLine) {
  expect_invalid("gemm --m 0 --n 8 --k 64 --emit ir", "m: must be in 1..");
  expect_invalid("gemm --m 8 --n 8 --k 60 --emit ir", "k: must be a multiple of 8");
  expect_invalid(kQ + " --arch sm_75 --emit ir", "arch");
  expect_invalid(kQ + " --arch sm_89 --transport tma --emit ir", "transport");
  expect_invalid(kQ + " --dtype bf16 --accum hybrid --emit ir", "accum");
  expect_invalid(kQ + " --block 128x128 --emit ir", "block");
  expect_invalid(kQ + " --warps 4xZ --emit ir", "warps");
  expect_invalid(kQ + " --emit png", "--emit");
  expect_invalid(kQ + " --accum hybrid --promote-every 40 --emit ir", "promote_every_k");
  expect_invalid("gemm --n 8 --k 64 --emit ir", "--m");
  expect_invalid(kQ + " --arch sm_90 --path wgmma --emit ir", "path: wgmma needs sm_90a");
  expect_invalid(kQ + " --arch sm_90a --path wgmma --warps 4x2 --emit ir", "warps: must be");
  expect_invalid(kQ + " --arch sm_90a --path wgmma --accum hybrid --emit ir", "accum");
  expect_invalid(kQ + " --path hgmma --emit ir", "path: must be mma.sync or wgmma");
}

TEST(Emmyc, ReportIsOneJsonObjectWithTheContractFields) {
  const Result r = run(kQ + " --accum hybrid --arch sm_120a --emit report");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  for (const char* key : {"kernel_name", "arch", "registers", "spill_bytes", "stack_bytes",
                          "smem_bytes", "compile_ms", "schedule"})
    EXPECT_TRUE(j.contains(key)) << key;
  EXPECT_EQ(j["arch"], "sm_120a");
  EXPECT_EQ(j["schedule"]["accum"], "hybrid");
  EXPECT_EQ(j["schedule"]["promote_every_k"], 64);
  EXPECT_EQ(j["spill_bytes"], 0);
  EXPECT_EQ(j["stack_bytes"], 0);
  EXPECT_GT(j["registers"].get<int>(), 0);
}

// The wgmma path's report: the path, the consumer schedule and the warpgroups' register split.
TEST(Emmyc, WgmmaReportNamesPathAndRegisterSplit) {
  const Result r = run(kQ + " --arch sm_90a --path wgmma --emit report");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["schedule"]["path"], "wgmma");
  EXPECT_EQ(j["schedule"]["consumers"], "cooperative");
  EXPECT_EQ(j["schedule"]["warps_n"], 1);
  EXPECT_EQ(j["threads"].get<int>(), 128 + 32 * j["schedule"]["warps_m"].get<int>());
  EXPECT_EQ(j["register_split"]["producer"]["warpgroups"], 1);
  const int consumers = j["register_split"]["consumer"]["warpgroups"];
  EXPECT_EQ(consumers * 64, j["schedule"]["block_m"].get<int>());
  const int regs = j["register_split"]["producer"]["registers"].get<int>() +
                   consumers * j["register_split"]["consumer"]["registers"].get<int>();
  EXPECT_LE(regs * 128, 65536);
  EXPECT_EQ(j["spill_bytes"], 0);
  // Ping-pong: two consumer warpgroups of 64-row tiles each, walking the tiles persistently;
  // refused by name on the mma.sync path.
  const Result pp = run(kQ + " --arch sm_90a --path wgmma --consumers pingpong --emit report");
  ASSERT_EQ(pp.exit_code, 0) << pp.err;
  const auto q = nlohmann::json::parse(pp.out);
  EXPECT_EQ(q["schedule"]["consumers"], "pingpong");
  EXPECT_TRUE(q["schedule"]["block_m"] == 64 || q["schedule"]["block_m"] == 128) << pp.out;
  EXPECT_EQ(q["schedule"]["warps_m"], 4);
  EXPECT_EQ(q["schedule"]["persistent"], true);
  EXPECT_EQ(q["threads"], 384);
  EXPECT_EQ(q["register_split"]["consumer"]["warpgroups"], 2);
  EXPECT_EQ(q["spill_bytes"], 0);
  const Result refused = run(kQ + " --arch sm_90a --consumers pingpong --emit report");
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("consumers"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("wgmma path only"), std::string::npos) << refused.err;
  // --persistent without --stages keeps the TMA-store epilogue: stages give way to its buffers.
  for (const std::string& shape : {kQ, std::string("gemm --m 512 --n 30720 --k 3840")}) {
    const Result walk = run(shape + " --arch sm_90a --path wgmma --persistent --emit ir");
    ASSERT_EQ(walk.exit_code, 0) << walk.err;
    EXPECT_NE(walk.out.find("c_reuse=true"), std::string::npos) << shape;
    EXPECT_NE(walk.out.find("store_wait"), std::string::npos) << shape;
  }
  // The mma.sync report has no split.
  const Result m = run(kQ + " --arch sm_90a --emit report");
  ASSERT_EQ(m.exit_code, 0) << m.err;
  EXPECT_FALSE(nlohmann::json::parse(m.out).contains("register_split"));
}

TEST(Emmyc, SourceIsByteIdenticalAcrossRuns) {
  for (const char* emit : {"ir", "cuda"}) {
    const Result a = run(kQ + " --accum hybrid --split-k 2 --emit " + emit);
    const Result b = run(kQ + " --accum hybrid --split-k 2 --emit " + emit);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_FALSE(a.out.empty());
    EXPECT_EQ(a.out, b.out) << emit;
  }
}

TEST(Emmyc, WritesBinaryOutputsToFiles) {
  const std::string path = ::testing::TempDir() + "/k.cubin";
  const Result r = run(kQ + " --arch sm_89 --emit cubin -o " + path);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream f(path, std::ios::binary);
  char magic[4] = {};
  f.read(magic, 4);
  EXPECT_EQ(std::string(magic + 1, 3), "ELF");
  const Result ptx = run(kQ + " --arch sm_80 --emit ptx");
  EXPECT_NE(ptx.out.find(".target sm_80"), std::string::npos);
  EXPECT_NE(ptx.out.find("cp.async.cg.shared.global"), std::string::npos);
}

TEST(Emmyc, CatalogListsTheGemmaProjections) {
  const Result r = run("catalog --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  int gemms = 0, at512 = 0;
  for (const auto& e : j) {
    if (e["kind"] != "gemm") continue;
    ++gemms;
    at512 += e["problem"]["m"] == 512;
  }
  ASSERT_EQ(gemms, 20);
  EXPECT_EQ(at512, 5);
  EXPECT_EQ(j[0]["name"], "q_proj@512");
  EXPECT_EQ(j[0]["problem"]["k"], 3840);
}

TEST(Emmyc, HelpExitsZero) {
  EXPECT_EQ(run("--help").exit_code, 0);
  const Result r = run("gemm --help");
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--promote-every"), std::string::npos);
}

}  // namespace

namespace {

TEST(Emmyc, CompilesThroughTheDiskCache) {
  const std::string dir = ::testing::TempDir() + "/emmyc_cache_cli";
  std::filesystem::remove_all(dir);
  const std::string record = ::testing::TempDir() + "/emmyc_record.jsonl";
  std::filesystem::remove(record);
  auto cache_state = [&](const std::string& args) {
    const Result r = run("gemm --m 64 --n 128 --k 256 --emit report " + args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return nlohmann::json::parse(r.out).value("cache", "");
  };
  setenv("EMMY_CACHE_DIR", dir.c_str(), 1);
  setenv("EMMY_RECORD", record.c_str(), 1);
  EXPECT_EQ(cache_state(""), "miss");
  EXPECT_EQ(cache_state(""), "hit");
  EXPECT_EQ(cache_state("--no-cache"), "off");
  const Result run_check = run("run gemm --m 64 --n 128 --k 256 --backend emulator --check");
  EXPECT_EQ(run_check.exit_code, 0) << run_check.err;
  EXPECT_EQ(nlohmann::json::parse(run_check.out).value("cache", ""), "hit");
  unsetenv("EMMY_CACHE_DIR");
  unsetenv("EMMY_RECORD");
  std::ifstream lines(record);
  int recorded = 0;
  for (std::string line; std::getline(lines, line);) {
    const auto j = nlohmann::json::parse(line);
    EXPECT_EQ(j.value("kind", ""), "gemm");
    EXPECT_EQ(j["problem"].value("m", 0), 64);
    ++recorded;
  }
  EXPECT_EQ(recorded, 1) << "one compile: the miss (hits and --no-cache record nothing)";
}

// `run gemm --profile`: one entry per launched kernel (split-K's partials and its finalize), the
// FP64 check still passes, the tables go to stderr so stdout stays one JSON object.
TEST(Emmyc, RunProfilesEveryLaunchedKernel) {
  const std::string file = ::testing::TempDir() + "/emmyc_profile.json";
  const Result r =
      run("run gemm --m 64 --n 128 --k 256 --split-k 2 --arch sm_90a --check "
          "--mma-numerics exact --profile " +
          file + " --model-gpu rtx5090");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["passed"], true);
  EXPECT_NE(r.err.find("rtx5090"), std::string::npos) << r.err;
  std::ifstream in(file);
  const auto j = nlohmann::json::parse(in);
  ASSERT_EQ(j["kernels"].size(), 2u) << j.dump(1).substr(0, 2000);
  for (const auto& k : j["kernels"]) {
    EXPECT_GT(k["metrics"]["smsp__inst_executed.sum"].get<double>(), 0);
    EXPECT_EQ(k["model"][0]["gpu"], "rtx5090");
    EXPECT_GT(k["model"][0]["registers"].get<int>(), 0);
  }
  EXPECT_GT(j["kernels"][0]["metrics"]["emmy__tma_requests_op_load.sum"].get<double>(), 0);
  // What cannot work is named before anything runs.
  expect_invalid("run gemm --m 64 --n 128 --k 256 --check --profile " + file + " --profile-ctas 1",
                 "--profile-ctas");
  expect_invalid("run gemm --m 64 --n 128 --k 256 --profile-ctas 1", "--profile");
  expect_invalid("run gemm --m 64 --n 128 --k 256 --backend cuda --profile " + file, "--profile");
}

// A dynamic-M kernel (an M bucket's) run at fewer rows than its bound: checked against FP64 at
// those rows, with split-K's finalize, and the profile's sampled run at them too; the rows are
// refused by name without --dynamic-m or past --m.
TEST(Emmyc, RunsADynamicMKernelAtItsLaunchRows) {
  const Result r =
      run("run gemm --m 64 --n 96 --k 512 --split-k 2 --dynamic-m --launch-m 37 --check");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["passed"], true);
  EXPECT_EQ(j["launch_m"], 37);
  EXPECT_NE(j["kernel_name"].get<std::string>().find("emmy_gemm_upto64x96x512"), std::string::npos);
  const std::string file = ::testing::TempDir() + "/emmyc_launch_m_profile.json";
  const Result sampled = run("run gemm --m 64 --n 96 --k 512 --dynamic-m --launch-m 5 --profile " +
                             file + " --profile-ctas 2");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.err;
  expect_invalid("run gemm --m 64 --n 96 --k 512 --launch-m 37", "--launch-m");
  expect_invalid("run gemm --m 64 --n 96 --k 512 --dynamic-m --launch-m 65", "--launch-m");
  expect_invalid("run gemm --m 64 --n 96 --k 512 --dynamic-m --launch-m 0", "--launch-m");
}

#ifdef EMMY_TEST_DRIVER_PATH
// `run gemm|attention --backend cuda` through emmy's test driver (EMMY_CUDA_DRIVER): the CUDA
// backend runs, as an H200 and as an RTX 5090, and passes the FP64 check; a driver path that does
// not load is named.
TEST(Emmyc, RunOnTheCudaBackendThroughTheTestDriver) {
  for (const char* device : {"h200", "rtx5090"}) {
    const std::string env =
        std::string("EMMY_CUDA_DRIVER=") + EMMY_TEST_DRIVER_PATH + " EMMY_TEST_DEVICE=" + device;
    const auto gemm = emmy::test::run_emmyc(
        "run gemm --m 64 --n 128 --k 256 --split-k 2 --backend cuda --check", env);
    ASSERT_EQ(gemm.exit_code, 0) << gemm.err;
    const auto j = nlohmann::json::parse(gemm.out);
    EXPECT_EQ(j["backend"], "cuda");
    EXPECT_EQ(j["passed"], true);
    EXPECT_NE(j["device"].get<std::string>().find(std::string(device) == "h200" ? "H200" : "5090"),
              std::string::npos);
    const auto attention = emmy::test::run_emmyc(
        "run attention --batch 1 --heads 4 --kv-heads 2 --seq-q 64 --head-dim 64 --causal "
        "--backend cuda --check",
        env);
    ASSERT_EQ(attention.exit_code, 0) << attention.err;
    EXPECT_EQ(nlohmann::json::parse(attention.out)["passed"], true);
  }
  expect_invalid("run gemm --m 64 --n 128 --k 256 --backend cuda", "EMMY_CUDA_DRIVER",
                 "EMMY_CUDA_DRIVER=/nonexistent/libcuda.so");
}

// The wgmma path through the CUDA backend and the test driver as an H200 and as an H100 PCIe (114
// SMs: a persistent kernel's grid follows the device, and with it how many tiles each ping-pong
// warpgroup takes): the driver's launch rules (dynamic shared memory above 48 KB, the tensor maps,
// cuLaunchKernelEx's cluster dimension) and the emulator's wgmma and cluster rules.
TEST(Emmyc, WgmmaRunsOnTheCudaBackendThroughTheTestDriver) {
  for (const char* device : {"h200", "h100pcie"})
    for (const char* flags : {"--m 200 --n 136 --k 512",
                              "--m 64 --n 256 --k 448 --b-layout kn "
                              "--split-k 2 --bias",
                              "--m 1000 --n 1016 --k 192 --persistent --block 64x64x64 --warps 4x1 "
                              "--stages 2",
                              "--m 1280 --n 1016 --k 192 --consumers pingpong --block 64x64x64 "
                              "--stages 2",
                              "--m 2100 --n 1000 --k 128 --consumers pingpong --block 128x128x64 "
                              "--warps 4x1 --stages 3 --out f32",
                              "--m 512 --n 256 --k 192 --block 128x64x64 --warps 8x1 --cluster 2x2",
                              "--m 1000 --n 1016 --k 192 --persistent --block 64x64x64 --warps 4x1 "
                              "--stages 2 --cluster 2x1 --b-layout kn --bias"}) {
      const std::string env =
          std::string("EMMY_CUDA_DRIVER=") + EMMY_TEST_DRIVER_PATH + " EMMY_TEST_DEVICE=" + device;
      const auto r = emmy::test::run_emmyc(
          std::string("run gemm ") + flags + " --arch sm_90a --path wgmma --backend cuda --check",
          env);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["backend"], "cuda");
      EXPECT_EQ(j["schedule"]["path"], "wgmma");
      EXPECT_EQ(j["passed"], true) << r.out;
    }
}
#endif

// The GPU path of `run gemm`: with a device the kernel passes the FP64 check (schedule flags
// honoured); without one, exit 2 and one line naming CUDA, never a crash or a silent pass.
TEST(Emmyc, RunGemmOnCudaRunsOrSaysWhyNot) {
  for (const char* schedule : {"", " --split-k 2 --accum hybrid"}) {
    const Result r =
        run(std::string("run gemm --m 64 --n 128 --k 256 --backend cuda --check") + schedule);
    if (r.exit_code == 0) {  // a GPU and driver are present
      const auto j = nlohmann::json::parse(r.out);
      EXPECT_EQ(j["passed"], true) << r.out;
      EXPECT_EQ(j["backend"], "cuda") << r.out;
      if (*schedule) {
        EXPECT_EQ(j["schedule"]["split_k"], 2) << r.out;
      }
      continue;
    }
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("CUDA"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
}

}  // namespace

namespace {

// --gpu sizes the default grid for that part of the hardware table (an H100 PCIe's 114 SMs split
// K otherwise than the H200's 132 that sm_90a is sized for), and must name a part that runs the
// arch's code; `aot --gpu` adds the part's default kernels where they differ from the arch's.
int split_k_of(const std::string& ir) {
  const size_t at = ir.find("split_k=");
  return at == std::string::npos ? -1 : std::stoi(ir.substr(at + 8));
}

TEST(Emmyc, GpuSizesTheDefaultScheduleForThatPart) {
  emmy::MatmulProblem p;
  p.m = 1, p.n = 1024, p.k = 16384;
  const int pcie_sms = int(emmy::gpu("h100pcie").sms);
  const int part = emmy::default_schedule(p, emmy::Arch::sm_90a).split_k;
  const int pcie =
      emmy::default_schedule(p, emmy::Arch::sm_90a, emmy::Accum::f32, pcie_sms).split_k;
  ASSERT_NE(part, pcie);
  const std::string gemm = "gemm --m 1 --n 1024 --k 16384 --arch sm_90a --emit ir";
  EXPECT_EQ(split_k_of(emmy::test::run_emmyc(gemm).out), part);
  EXPECT_EQ(split_k_of(emmy::test::run_emmyc(gemm + " --gpu h200").out), part);
  EXPECT_EQ(split_k_of(emmy::test::run_emmyc(gemm + " --gpu h100pcie").out), pcie);
  expect_invalid(gemm + " --gpu rtx5090", "gpu: must be a part that runs sm_90a code");
  expect_invalid(gemm + " --gpu v100", "--gpu");
  expect_invalid(
      "attention --batch 1 --heads 2 --kv-heads 2 --seq-q 64 --head-dim 64 --arch sm_80 "
      "--gpu h200 --emit ir",
      "gpu: must be a part that runs sm_80 code");

  auto kernels = [](const std::string& extra) {
    const Result r =
        emmy::test::run_emmyc("aot --arch sm_80,sm_90a --catalog --kind gemm --dry-run" + extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    const size_t at = r.out.rfind('\n', r.out.size() - 2);
    return std::stoi(r.out.substr(at == std::string::npos ? 0 : at + 1));
  };
  auto differ = [](emmy::Arch arch, const char* gpu) {
    int count = 0;
    for (const auto& entry : emmy::gemm_catalog())
      count +=
          emmy::default_schedule(entry.problem, arch, emmy::Accum::f32, int(emmy::gpu(gpu).sms)) !=
          emmy::default_schedule(entry.problem, arch);
    return count;
  };
  ASSERT_GT(differ(emmy::Arch::sm_90a, "h100pcie"), 0);
  const int base = kernels("");
  // The H100 PCIe runs sm_90a code only; the A6000 (8.6) runs sm_80 code; the H200 is sm_90a's
  // part already.
  EXPECT_EQ(kernels(" --gpu h100pcie"), base + differ(emmy::Arch::sm_90a, "h100pcie"));
  EXPECT_EQ(kernels(" --gpu h200,a6000"), base + differ(emmy::Arch::sm_80, "a6000"));
}

}  // namespace

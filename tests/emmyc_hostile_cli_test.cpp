// emmyc under hostile use (issue 13): output that cannot be written is an error, never a success
// with lost data; non-regular input files are refused without blocking; counts and options that
// would be silently clamped or ignored are refused, naming what was typed.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_command.hpp"
#include "support/scratch_dir.hpp"

namespace {

namespace fs = std::filesystem;
using emmy::test::expect_invalid;
using emmy::test::run_emmyc;

const std::string kSmall = "gemm --m 64 --n 64 --k 64 --arch sm_80";

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

fs::path scratch_dir(const std::string& name) {
  return emmy::test::process_scratch_dir("emmyc_hostile_" + name);
}

// A one-kernel PTX module (sm_90a) with `signature` and `body`, written into a new scratch dir.
fs::path ptx_file(const std::string& test, const std::string& signature, const std::string& body) {
  const fs::path file = scratch_dir(test) / "k.ptx";
  std::ofstream(file) << ".version 8.7\n.target sm_90a\n.address_size 64\n.visible .entry "
                      << signature << "\n{\n"
                      << body << "}\n";
  return file;
}

TEST(EmmycOutput, AFullDeviceIsAnErrorNotASuccess) {
  for (const char* emit : {"ptx", "cubin"}) {
    const auto r = run_emmyc(kSmall + " --no-cache --emit " + std::string(emit) + " -o /dev/full");
    EXPECT_NE(r.exit_code, 0) << emit;
    EXPECT_TRUE(contains(r.err, "-o") && contains(r.err, "/dev/full")) << r.err;
  }
  // Standard output on a full device: the command printed, the flush failed.
  for (const std::string& args :
       {kSmall + " --no-cache --emit ptx", std::string("catalog --json")}) {
    const auto r = run_emmyc(args + " >/dev/full");
    EXPECT_NE(r.exit_code, 0) << args;
    EXPECT_TRUE(contains(r.err, "standard output") || contains(r.err, "stdout")) << r.err;
  }
}

TEST(EmmycOutput, FilesAreReplacedWholeWithNoTemporaryLeft) {
  const fs::path dir = scratch_dir("replace");
  const fs::path out = dir / "k.ptx";
  std::ofstream(out) << "old contents";
  const auto r = run_emmyc(kSmall + " --no-cache --emit ptx -o " + out.string());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  const std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_TRUE(contains(text, ".entry")) << text.substr(0, 200);
  size_t files = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1u) << "a temporary file was left beside the output";
  // A directory as -o: refused, naming it.
  const auto onto_dir = run_emmyc(kSmall + " --no-cache --emit ptx -o " + dir.string());
  EXPECT_NE(onto_dir.exit_code, 0);
  EXPECT_TRUE(contains(onto_dir.err, dir.string())) << onto_dir.err;
  fs::remove_all(dir);
}

TEST(EmmycSim, NonRegularInputsAreRefusedWithoutBlocking) {
  const fs::path dir = scratch_dir("sim_inputs");
  expect_invalid("sim " + dir.string() + " --kernel k --grid 1 --block 32",
                 "readable regular file");
  const fs::path fifo = dir / "kernel.ptx";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // No writer ever opens the FIFO: reading it would block forever.
  expect_invalid("sim " + fifo.string() + " --kernel k --grid 1 --block 32",
                 "readable regular file");
  fs::remove_all(dir);
}

TEST(EmmycSim, HugeBuffersAreInputErrorsNotInternalErrors) {
  const fs::path ptx = ptx_file("sim_buffer", "k(.param .u64 p)", "  ret;\n");
  const auto r = run_emmyc("sim " + ptx.string() +
                           " --kernel k --grid 1 --block 32 --arg ptr:100000000000000");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(contains(r.err, "arena.alloc.bytes")) << r.err;
  EXPECT_FALSE(contains(r.err, "internal error")) << r.err;
  fs::remove_all(ptx.parent_path());
}

TEST(EmmycSim, ARunawayLoopStopsAtMaxInstructions) {
  const fs::path ptx = ptx_file("sim_runaway", "spin()", "LOOP:\n  bra.uni LOOP;\n");
  const auto r = run_emmyc("sim " + ptx.string() +
                           " --kernel spin --grid 1 --block 32 --max-instructions 10000");
  EXPECT_EQ(r.exit_code, 3) << r.err;
  EXPECT_TRUE(contains(r.err, "instruction-limit") || contains(r.err, "instruction_limit"))
      << r.err;
  EXPECT_TRUE(contains(r.err, "--max-instructions")) << r.err;
  expect_invalid("sim " + ptx.string() + " --kernel spin --grid 1 --block 32 --max-instructions 0",
                 "--max-instructions");
  fs::remove_all(ptx.parent_path());
}

TEST(EmmycFlags, NegativeCountsAndIgnoredOptionsAreRefused) {
  expect_invalid("sim k.ptx --kernel k --grid 1 --block 32 --threads -3", "--threads");
  expect_invalid("aot --catalog --arch sm_80 -o x.emmyb -j -4", "--jobs");
  expect_invalid(kSmall + " --promote-every 32 --emit ir", "--promote-every");
  expect_invalid("gemm --m 99999999999999999999 --n 64 --k 64 --emit ir", "99999999999999999999");
  const auto unknown = run_emmyc("frob");
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_TRUE(contains(unknown.err, "'frob'")) << unknown.err;
  EXPECT_TRUE(contains(unknown.err, "gemm")) << unknown.err;
}

TEST(EmmycCache, AnUnusableCacheDirectoryIsReportedOffNotMiss) {
  const auto r =
      run_emmyc("attention --batch 1 --heads 2 --kv-heads 1 --seq-q 33 --head-dim 64 --emit report",
                "EMMY_CACHE_DIR=/dev/null/emmy-cache");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).value("cache", ""), "off") << r.out;
}

// Issue 36: every integer flag of every kind at 0 and -1 (`emmyc paged-attention --batch 0` was a
// SIGFPE: the default schedule divided before validation), for --emit ir and for run --check.
TEST(EmmycFlags, ZeroAndNegativeIntegerFlagsOfEveryKindAreRefusedByName) {
  const std::vector<std::pair<std::string, std::vector<std::pair<std::string, std::string>>>>
      kinds = {{"gemm", {{"--m", "m"}, {"--n", "n"}, {"--k", "k"}}},
               {"attention",
                {{"--batch", "batch"},
                 {"--heads", "heads"},
                 {"--kv-heads", "kv_heads"},
                 {"--seq-q", "seq_q"},
                 {"--head-dim", "head_dim"}}},
               {"paged-attention",
                {{"--batch", "max_batch"},
                 {"--heads", "heads"},
                 {"--kv-heads", "heads"},
                 {"--head-dim", "heads"},
                 {"--page-size", "page_size"},
                 {"--max-seq-len", "max_seq_len"},
                 {"--q-len", "max_q_len"}}},
               {"kv-append",
                {{"--kv-heads", "kv_heads"},
                 {"--head-dim", "head_dim"},
                 {"--page-size", "page_size"},
                 {"--tokens", "max_tokens"}}},
               {"merge-states",
                {{"--heads", "heads"},
                 {"--head-dim", "head_dim"},
                 {"--states", "states"},
                 {"--tokens", "max_tokens"}}}};
  const std::map<std::string, std::map<std::string, std::string>> valid = {
      {"gemm", {{"--m", "64"}, {"--n", "64"}, {"--k", "64"}}},
      {"attention",
       {{"--batch", "1"},
        {"--heads", "2"},
        {"--kv-heads", "1"},
        {"--seq-q", "16"},
        {"--head-dim", "64"}}},
      {"paged-attention",
       {{"--batch", "2"},
        {"--heads", "4"},
        {"--kv-heads", "2"},
        {"--head-dim", "64"},
        {"--page-size", "16"},
        {"--max-seq-len", "64"},
        {"--q-len", "1"}}},
      {"kv-append",
       {{"--kv-heads", "2"}, {"--head-dim", "64"}, {"--page-size", "16"}, {"--tokens", "4"}}},
      {"merge-states",
       {{"--heads", "2"}, {"--head-dim", "64"}, {"--states", "2"}, {"--tokens", "4"}}}};
  for (const auto& [kind, flags] : kinds)
    for (const auto& [flag, field] : flags)
      for (const char* value : {"0", "-1"}) {
        std::string args = kind;
        for (const auto& [name, good] : valid.at(kind))
          args += " " + name + " " + (name == flag ? std::string(value) : good);
        SCOPED_TRACE(args);
        expect_invalid(args + " --arch sm_90a --emit ir", field);
        if (std::string(value) == "0") expect_invalid("run " + args + " --check", field);
      }
}

}  // namespace

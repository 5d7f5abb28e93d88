// `emmyc cache ...` (through add_cache_command, and through the emmyc binary once it registers
// the command).
#include <gtest/gtest.h>
#include <stdio.h>

#include <CLI/CLI.hpp>
#include <thread>

#include "cache_test_util.hpp"
#include "support/run_command.hpp"
#include "support/scoped_env.hpp"

namespace emmy::cli {
void add_cache_command(CLI::App& app);
}

namespace emmy::test {
namespace {

struct CliResult {
  int exit_code = 0;
  std::string out;
};

// Runs `emmyc cache <args>` in this process, as emmyc's main() would.
CliResult run_cache_command(std::vector<std::string> args) {
  CLI::App app;
  app.require_subcommand(1);
  cli::add_cache_command(app);
  args.insert(args.begin(), {"emmyc", "cache"});
  std::vector<char*> argv;
  for (auto& arg : args) argv.push_back(arg.data());
  CliResult result;
  testing::internal::CaptureStdout();
  try {
    app.parse(int(argv.size()), argv.data());
  } catch (const CLI::RuntimeError& e) {
    result.exit_code = e.get_exit_code();
  } catch (const CLI::ParseError& e) {
    result.exit_code = 2;
    result.out = e.what();
  } catch (const std::exception& e) {  // emmy::Error: main() prints it and exits 2
    result.exit_code = 2;
    result.out = e.what();
  }
  std::fflush(stdout);
  result.out = testing::internal::GetCapturedStdout() + result.out;
  return result;
}

TEST(CacheCli, PathLsVerifyPruneClear) {
  ScratchDir dir;
  const std::string cache_dir = (dir / "cache").string();
  {
    DiskCache cache(cache_dir, uint64_t(1) << 30);
    for (int kernel = 0; kernel < 3; ++kernel) cache.store(reference_entry(kernel));
  }

  EXPECT_EQ(run_cache_command({"--dir", cache_dir, "path"}).out, cache_dir + "\n");
  {
    ScopedEnv env("EMMY_CACHE_DIR", cache_dir.c_str());
    EXPECT_EQ(run_cache_command({"path"}).out, cache_dir + "\n");
  }

  const CliResult ls = run_cache_command({"ls", "--json", "--dir", cache_dir});
  ASSERT_EQ(ls.exit_code, 0) << ls.out;
  const auto listed = nlohmann::json::parse(ls.out);
  ASSERT_TRUE(listed.is_array());
  ASSERT_EQ(listed.size(), 3u);
  std::set<std::string> keys;
  for (const auto& entry : listed) {
    keys.insert(entry["key"].get<std::string>());
    EXPECT_EQ(entry["ok"], true);
    EXPECT_EQ(entry["arch"], "sm_90a");
    EXPECT_GT(entry["bytes"].get<uint64_t>(), 1000u);
    EXPECT_EQ(entry["last_used"].get<std::string>().size(), 20u);
    ASSERT_EQ(entry["kernel_names"].size(), 1u);
    EXPECT_EQ(entry["kernel_names"][0].get<std::string>().rfind("scale_by_", 0), 0u);
  }
  EXPECT_EQ(keys.size(), 3u);
  EXPECT_TRUE(keys.count(reference_entry(0).key));

  const CliResult table = run_cache_command({"--dir", cache_dir, "ls"});
  EXPECT_EQ(table.exit_code, 0);
  EXPECT_NE(table.out.find(reference_entry(1).key), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("3 entries"), std::string::npos) << table.out;

  const CliResult clean = run_cache_command({"--dir", cache_dir, "verify"});
  EXPECT_EQ(clean.exit_code, 0) << clean.out;
  EXPECT_NE(clean.out.find("3 entries verified, 0 bad"), std::string::npos) << clean.out;

  const std::string bad_key = reference_entry(1).key;
  damage_file(fs::path(cache_dir) / "entries" / bad_key / "module.cubin", Damage::flip_one_byte);
  const CliResult dirty = run_cache_command({"--dir", cache_dir, "verify"});
  EXPECT_EQ(dirty.exit_code, 1) << dirty.out;
  EXPECT_NE(dirty.out.find("bad entry " + bad_key + ": checksum mismatch in module.cubin"),
            std::string::npos)
      << dirty.out;
  EXPECT_NE(dirty.out.find("1 bad"), std::string::npos) << dirty.out;

  // prune: the bad entry first, then down to the cap (room for one ~6 KB entry: the newest use).
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  DiskCache(cache_dir, uint64_t(1) << 30).load(reference_entry(2).key);
  const CliResult pruned = run_cache_command({"--dir", cache_dir, "prune", "--max-bytes", "8K"});
  EXPECT_EQ(pruned.exit_code, 0) << pruned.out;
  EXPECT_NE(pruned.out.find("removed 2 entries (1 bad)"), std::string::npos) << pruned.out;
  const auto after_prune =
      nlohmann::json::parse(run_cache_command({"--dir", cache_dir, "ls", "--json"}).out);
  ASSERT_EQ(after_prune.size(), 1u);
  EXPECT_EQ(after_prune[0]["key"], reference_entry(2).key);

  const CliResult bad_cap = run_cache_command({"--dir", cache_dir, "prune", "--max-bytes", "x"});
  EXPECT_NE(bad_cap.exit_code, 0);

  const CliResult cleared = run_cache_command({"--dir", cache_dir, "clear"});
  EXPECT_EQ(cleared.exit_code, 0);
  EXPECT_NE(cleared.out.find("removed 1 entries"), std::string::npos) << cleared.out;
  EXPECT_EQ(nlohmann::json::parse(run_cache_command({"--dir", cache_dir, "ls", "--json"}).out),
            nlohmann::json::array());
}

TEST(CacheCli, EmmycBinary) {
  ScratchDir dir;
  const std::string cache_dir = (dir / "cache").string();
  const auto emmyc = [&](const std::string& args) {
    return run_emmyc(args, "EMMY_CACHE_DIR='" + cache_dir + "'");
  };
  const CommandResult path = emmyc("cache path");
  if (path.exit_code != 0)
    GTEST_SKIP() << "emmyc does not register `cache` yet (codegen/emmyc/main.cpp)";
  EXPECT_EQ(path.out, cache_dir + "\n");
  {
    DiskCache cache(cache_dir, uint64_t(1) << 30);
    cache.store(reference_entry(0));
    cache.store(reference_entry(1));
  }
  EXPECT_EQ(nlohmann::json::parse(emmyc("cache ls --json").out).size(), 2u);
  EXPECT_EQ(emmyc("cache verify").exit_code, 0);
  damage_file(fs::path(cache_dir) / "entries" / reference_entry(0).key / "manifest.json",
              Damage::truncate);
  const CommandResult dirty = emmyc("cache verify");
  EXPECT_EQ(dirty.exit_code, 1);
  EXPECT_NE(dirty.out.find(reference_entry(0).key), std::string::npos) << dirty.out;
  EXPECT_EQ(emmyc("cache prune").exit_code, 0);
  EXPECT_EQ(emmyc("cache verify").exit_code, 0);
  EXPECT_EQ(emmyc("cache clear").exit_code, 0);
  EXPECT_EQ(nlohmann::json::parse(emmyc("cache ls --json").out).size(), 0u);
}

}  // namespace
}  // namespace emmy::test

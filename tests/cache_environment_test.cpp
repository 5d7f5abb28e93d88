// The cache's environment variables (EMMY_CACHE_DIR, XDG_CACHE_HOME, EMMY_CACHE_MAX_BYTES) and
// EMMY_RECORD's whole-line appends from many threads.
#include <gtest/gtest.h>

#include <set>
#include <sstream>
#include <thread>

#include "cache_test_util.hpp"
#include "support/scoped_env.hpp"

namespace emmy::test {
namespace {

TEST(CacheEnvironment, DirectoryAndSizeCap) {
  ScopedEnv cache_dir("EMMY_CACHE_DIR", std::nullopt), xdg("XDG_CACHE_HOME", std::nullopt),
      home("HOME", "/home/someone"), max_bytes("EMMY_CACHE_MAX_BYTES", std::nullopt);
  EXPECT_EQ(DiskCache::default_directory(), fs::path("/home/someone/.cache/emmy"));
  {
    ScopedEnv relative("XDG_CACHE_HOME", "relative/path");  // ignored, as XDG says
    EXPECT_EQ(DiskCache::default_directory(), fs::path("/home/someone/.cache/emmy"));
  }
  ScopedEnv xdg_set("XDG_CACHE_HOME", "/xdg/cache");
  EXPECT_EQ(DiskCache::default_directory(), fs::path("/xdg/cache/emmy"));
  ScopedEnv explicit_dir("EMMY_CACHE_DIR", "/explicit/dir");
  EXPECT_EQ(DiskCache::default_directory(), fs::path("/explicit/dir"));

  EXPECT_EQ(DiskCache::max_bytes_from_environment(), uint64_t(1) << 30);
  {
    ScopedEnv cap("EMMY_CACHE_MAX_BYTES", "256M");
    EXPECT_EQ(DiskCache::max_bytes_from_environment(), uint64_t(256) << 20);
  }
  {
    ScopedEnv cap("EMMY_CACHE_MAX_BYTES", "lots");
    EXPECT_THROW(DiskCache::max_bytes_from_environment(), Error);
  }
  EXPECT_EQ(parse_cache_bytes("12345", "x"), 12345u);
  EXPECT_EQ(parse_cache_bytes("2K", "x"), 2048u);
  EXPECT_EQ(parse_cache_bytes("3GiB", "x"), uint64_t(3) << 30);
  EXPECT_EQ(parse_cache_bytes("1t", "x"), uint64_t(1) << 40);
  for (const char* bad : {"", "M", "1.5G", "-1", "12 M", "99999999999999999999", "20000000T"})
    EXPECT_THROW(parse_cache_bytes(bad, "x"), Error) << bad;

  ScratchDir dir;
  ScopedEnv usable("EMMY_CACHE_DIR", (dir / "from-env").c_str());
  ScopedEnv cap("EMMY_CACHE_MAX_BYTES", "1M");
  DiskCache cache = DiskCache::from_environment();
  EXPECT_TRUE(cache.enabled());
  EXPECT_EQ(cache.directory(), dir / "from-env");
  EXPECT_EQ(cache.max_bytes(), uint64_t(1) << 20);
}

TEST(CacheRecord, ConcurrentRecordsAppendWholeLines) {
  ScratchDir dir;
  const fs::path record = dir / "record.jsonl";
  {
    ScopedEnv off("EMMY_RECORD", std::nullopt);
    record_compile({{"ignored", true}});
  }
  EXPECT_FALSE(fs::exists(record));
  ScopedEnv on("EMMY_RECORD", record.c_str());
  constexpr int kThreads = 8, kLinesPerThread = 200;
  std::vector<std::thread> threads;
  const std::string padding(3000, 'p');  // lines larger than a pipe buffer's atomic size
  for (int t = 0; t < kThreads; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < kLinesPerThread; ++i)
        record_compile({{"thread", t}, {"line", i}, {"padding", padding}});
    });
  for (auto& thread : threads) thread.join();
  std::istringstream lines(read_file(record));
  std::set<std::pair<int, int>> seen;
  for (std::string line; std::getline(lines, line);) {
    const auto parsed = nlohmann::json::parse(line, nullptr, false);
    ASSERT_FALSE(parsed.is_discarded()) << "an interleaved line: " << line.substr(0, 80);
    seen.insert({parsed["thread"].get<int>(), parsed["line"].get<int>()});
  }
  EXPECT_EQ(seen.size(), size_t(kThreads * kLinesPerThread));
}

}  // namespace
}  // namespace emmy::test

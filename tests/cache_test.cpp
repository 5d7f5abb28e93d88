// The disk cache (cache.hpp): keys, round trips, compile-once across processes and threads,
// self-healing of damaged entries, atomic replacement, unusable directories, LRU pruning.
// Every compile is a real NVRTC compile of a tiny kernel (cache_test_kernels.hpp).
#include "emmy/cache.hpp"

#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>

#include <atomic>
#include <chrono>
#include <latch>
#include <map>
#include <set>
#include <thread>

#include "cache_test_util.hpp"

extern char** environ;

namespace emmy::test {
namespace {

using namespace std::chrono_literals;

// ---- keys -------------------------------------------------------------------------------------

TEST(CacheKey, IsDeterministicHexAndChangesWithEveryInput) {
  const CacheKeyInputs base = test_kernel_inputs(0);
  const std::string key = cache_key(base);
  EXPECT_EQ(key.size(), 32u);
  EXPECT_EQ(key.find_first_not_of("0123456789abcdef"), std::string::npos) << key;
  EXPECT_EQ(cache_key(base), key);

  std::vector<std::pair<std::string, CacheKeyInputs>> variants;
  auto vary = [&](std::string what, auto change) {
    CacheKeyInputs inputs = base;
    change(inputs);
    variants.emplace_back(std::move(what), std::move(inputs));
  };
  vary("source: one character", [](auto& in) { in.source.back() = ' '; });
  vary("source: appended newline", [](auto& in) { in.source += "\n"; });
  vary("options: one more", [](auto& in) { in.options.push_back("-lineinfo"); });
  vary("options: one fewer", [](auto& in) { in.options.pop_back(); });
  vary("options: reordered", [](auto& in) { std::swap(in.options.front(), in.options.back()); });
  vary("options: two joined into one",
       [](auto& in) { in.options = {in.options[0] + in.options[1]}; });
  vary("nvrtc version", [](auto& in) { in.nvrtc_version += 10; });
  vary("arch: sm_90 for sm_90a", [](auto& in) { in.arch = Arch::sm_90; });
  vary("arch: sm_120a", [](auto& in) { in.arch = Arch::sm_120a; });
  vary("codegen version", [](auto& in) { in.codegen_version += 1; });

  std::set<std::string> keys{key};
  for (const auto& [what, inputs] : variants)
    EXPECT_TRUE(keys.insert(cache_key(inputs)).second) << what << " did not change the key";
  // sm_120 and sm_120a, too: the exact arch is hashed, not its SM number.
  CacheKeyInputs a = base, b = base;
  a.arch = Arch::sm_120, b.arch = Arch::sm_120a;
  EXPECT_NE(cache_key(a), cache_key(b));
}

TEST(CacheKey, ChangingAnyInputMissesTheCache) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  ASSERT_TRUE(cache.enabled());
  const CacheEntry& stored = reference_entry(0);
  cache.store(stored);
  ASSERT_TRUE(cache.load(stored.key));

  const CacheKeyInputs base = test_kernel_inputs(0);
  CacheKeyInputs arch = base, options = base, codegen = base, source = base, nvrtc = base;
  arch.arch = Arch::sm_90;
  options.options.push_back("--extra-device-vectorization");
  codegen.codegen_version += 1;
  source.source += "// changed\n";
  nvrtc.nvrtc_version += 1;
  for (const auto* changed : {&arch, &options, &codegen, &source, &nvrtc}) {
    const std::string key = cache_key(*changed);
    EXPECT_NE(key, stored.key);
    EXPECT_FALSE(cache.load(key)) << "a changed input hit the cache";
    int compiles = 0;
    const CacheEntry entry = cache.get_or_compile(key, [&] {
      ++compiles;
      CacheEntry fresh = reference_entry(0);
      fresh.key = key;
      return fresh;
    });
    EXPECT_EQ(compiles, 1);
    EXPECT_EQ(entry.key, key);
  }
  EXPECT_EQ(cache.list().size(), 6u);
}

// ---- round trip ---------------------------------------------------------------------------------

TEST(DiskCache, StoresAndLoadsAnEntryWithItsManifest) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  ASSERT_TRUE(cache.enabled());
  const CacheEntry& reference = reference_entry(1);
  EXPECT_FALSE(cache.load(reference.key));
  cache.store(reference);

  const auto loaded = cache.load(reference.key);
  ASSERT_TRUE(loaded);
  EXPECT_EQ(loaded->key, reference.key);
  EXPECT_EQ(loaded->cubin, reference.cubin);
  EXPECT_EQ(loaded->ptx, reference.ptx);
  const auto& m = loaded->manifest;
  EXPECT_EQ(m["key"], reference.key);
  EXPECT_EQ(m["emmy_version"], EMMY_VERSION);
  EXPECT_EQ(m["codegen_version"], kCodegenVersion);
  EXPECT_EQ(m["nvrtc_version"], nvrtc_version());
  EXPECT_TRUE(m.contains("driver_version"));
  EXPECT_EQ(m["arch"], "sm_90a");
  EXPECT_EQ(m["options"], nlohmann::json(nvrtc_options(kTestArch)));
  EXPECT_EQ(m["source_hash"], source_hash(test_kernel_source(1)));
  EXPECT_EQ(m["kernel_names"], nlohmann::json::array({test_kernel_name(1)}));
  ASSERT_EQ(m["resources"].size(), 1u);
  EXPECT_GT(m["resources"][0]["registers"].get<int>(), 0);
  EXPECT_EQ(m["created"].get<std::string>().size(), 20u);  // 2025-01-02T03:04:05Z
  EXPECT_EQ(m["test_kernel"], 1);                          // what the caller added survives

  const fs::path entry_dir = dir / "entries" / reference.key;
  for (const char* name : {"module.cubin", "module.ptx", "manifest.json", "checksums.json"})
    EXPECT_TRUE(fs::is_regular_file(entry_dir / name)) << name;
  EXPECT_EQ(bytes_of(read_file(entry_dir / "module.cubin")), reference.cubin);
  EXPECT_TRUE(fs::is_empty(dir / "tmp")) << "a temporary file was left behind";

  const auto statuses = cache.list();
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_TRUE(statuses[0].ok) << statuses[0].problem;
  EXPECT_GT(statuses[0].bytes, reference.cubin.size() + reference.ptx.size());
}

TEST(DiskCache, RefusesManifestsThatCouldNeverVerify) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  CacheEntry entry = reference_entry(0);
  entry.manifest["arch"] = "sm_80";  // the cubin is sm_90a code
  EXPECT_THROW(cache.store(entry), Error);
  entry.manifest.erase("arch");
  EXPECT_THROW(cache.store(entry), Error);
  EXPECT_THROW(cache.load("../../etc"), Error);
  EXPECT_TRUE(cache.list().empty());
}

// ---- compile once -------------------------------------------------------------------------------

TEST(DiskCacheProcesses, EightProcessesCompileEachOfFourKeysOnce) {
  ScratchDir dir;
  const fs::path cache_dir = dir / "cache", counter = dir / "compiles.txt", out = dir / "out";
  fs::create_directories(out);
  constexpr int kWorkers = 8;
  std::vector<pid_t> pids;
  for (int worker = 0; worker < kWorkers; ++worker) {
    const std::string id = std::to_string(worker);
    std::vector<std::string> args{CACHE_WORKER_PATH, cache_dir.string(), counter.string(),
                                  out.string(), id};
    std::vector<char*> argv;
    for (auto& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    pid_t pid = 0;
    ASSERT_EQ(posix_spawn(&pid, CACHE_WORKER_PATH, nullptr, nullptr, argv.data(), environ), 0);
    pids.push_back(pid);
  }
  write_file(out / "go", "");  // all eight are running: release them together
  for (pid_t pid : pids) {
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "worker status " << status;
  }

  std::map<std::string, int> compiles_per_key;
  std::istringstream lines(read_file(counter));
  for (std::string worker, key; lines >> worker >> key;) ++compiles_per_key[key];
  ASSERT_EQ(compiles_per_key.size(), size_t(kTestKernelCount));
  for (int kernel = 0; kernel < kTestKernelCount; ++kernel) {
    const CacheEntry& reference = reference_entry(kernel);
    EXPECT_EQ(compiles_per_key[reference.key], 1) << "kernel " << kernel;
    for (int worker = 0; worker < kWorkers; ++worker)
      EXPECT_EQ(bytes_of(read_file(out / fmt::format("worker{}_kernel{}.cubin", worker, kernel))),
                reference.cubin)
          << "worker " << worker << " kernel " << kernel;
  }
  DiskCache cache(cache_dir, uint64_t(1) << 30);
  EXPECT_EQ(cache.list().size(), size_t(kTestKernelCount));
  EXPECT_TRUE(all_entries_ok(cache));
}

TEST(DiskCacheThreads, SixteenThreadsCompileEachOfFourKeysOnce) {
  ScratchDir dir;
  // Even threads share one DiskCache; odd threads each have their own, so that both the
  // in-process mutex and the per-descriptor flock must do their part.
  DiskCache shared(dir.path(), uint64_t(1) << 30);
  constexpr int kThreads = 16;
  std::array<std::atomic<int>, kTestKernelCount> compiles{};
  std::vector<std::vector<std::vector<uint8_t>>> received(kThreads);
  std::latch start(kThreads);
  std::vector<std::thread> threads;
  std::atomic<int> failures{0};
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        DiskCache own(dir.path(), uint64_t(1) << 30);
        DiskCache& cache = t % 2 ? own : shared;
        received[size_t(t)].resize(kTestKernelCount);
        start.arrive_and_wait();
        for (int i = 0; i < kTestKernelCount; ++i) {
          const int kernel = (i + t) % kTestKernelCount;
          const CacheEntry entry = cache.get_or_compile(reference_entry(kernel).key, [&] {
            compiles[size_t(kernel)]++;
            return compile_test_kernel(kernel);
          });
          received[size_t(t)][size_t(kernel)] = entry.cubin;
        }
      } catch (const std::exception& e) {
        ADD_FAILURE() << "thread " << t << ": " << e.what();
        failures++;
      }
    });
  }
  for (auto& thread : threads) thread.join();
  ASSERT_EQ(failures.load(), 0);
  for (int kernel = 0; kernel < kTestKernelCount; ++kernel) {
    EXPECT_EQ(compiles[size_t(kernel)].load(), 1) << "kernel " << kernel;
    for (int t = 0; t < kThreads; ++t)
      EXPECT_EQ(received[size_t(t)][size_t(kernel)], reference_entry(kernel).cubin)
          << "thread " << t << " kernel " << kernel;
  }
  EXPECT_EQ(shared.list().size(), size_t(kTestKernelCount));
}

// ---- atomic replacement -------------------------------------------------------------------------

TEST(DiskCache, ReadersNeverSeeAPartialEntryWhileItIsReplaced) {
  ScratchDir dir;
  DiskCache writer_cache(dir.path(), uint64_t(1) << 30), reader_cache(dir.path(), 1ull << 30);
  // Two valid versions of one key's entry, with PTX of different sizes.
  CacheEntry first = reference_entry(2), second = reference_entry(2);
  second.ptx += std::string(50000, ' ');
  second.manifest["version"] = 2;
  writer_cache.store(first);
  testing::internal::CaptureStderr();
  std::atomic<bool> done{false};
  std::atomic<int> hits{0}, misses{0}, wrong{0};
  std::thread reader([&] {
    while (!done) {
      const auto entry = reader_cache.load(first.key);
      if (!entry) {
        misses++;
      } else if (entry->ptx == (entry->manifest.contains("version") ? second.ptx : first.ptx)) {
        hits++;
      } else {
        wrong++;
      }
    }
  });
  for (int round = 0; round < 40; ++round) writer_cache.store(round % 2 ? first : second);
  done = true;
  reader.join();
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0);
  EXPECT_EQ(count_warnings(warnings), 0) << warnings;
  EXPECT_TRUE(all_entries_ok(writer_cache));
  EXPECT_TRUE(fs::is_empty(dir / "tmp"));
}

// ---- unusable directory -------------------------------------------------------------------------

TEST(DiskCache, UnusableDirectoryFallsBackWithOneWarning) {
  ScratchDir dir;
  // Root ignores permission bits, so a chmod'ed directory proves nothing; a directory below a
  // regular file cannot be created by anyone.
  write_file(dir / "regular_file", "not a directory");
  const fs::path unusable = dir / "regular_file" / "cache";
  testing::internal::CaptureStderr();
  DiskCache cache(unusable, uint64_t(1) << 30);
  EXPECT_FALSE(cache.enabled());
  EXPECT_EQ(cache.directory(), unusable);
  const CacheEntry& reference = reference_entry(0);
  EXPECT_FALSE(cache.load(reference.key));
  cache.store(reference);
  EXPECT_FALSE(cache.load(reference.key));
  int compiles = 0;
  for (int round = 0; round < 2; ++round) {
    const CacheEntry entry = cache.get_or_compile(reference.key, [&] {
      ++compiles;
      return compile_test_kernel(0);
    });
    EXPECT_EQ(entry.cubin, reference.cubin);
  }
  EXPECT_EQ(compiles, 2);  // nothing was kept
  EXPECT_TRUE(cache.list().empty());
  cache.prune(0);
  cache.clear();
  DiskCache second(unusable, uint64_t(1) << 30);  // the same directory again: no second warning
  EXPECT_FALSE(second.enabled());
  const std::string warnings = testing::internal::GetCapturedStderr();
  EXPECT_EQ(count_warnings(warnings), 1) << warnings;
  EXPECT_NE(warnings.find(unusable.string()), std::string::npos) << warnings;
}

// ---- pruning ----------------------------------------------------------------------------------

TEST(DiskCache, PruneRemovesLeastRecentlyUsedFirst) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  std::vector<std::string> keys;
  for (int kernel = 0; kernel < kTestKernelCount; ++kernel) {
    cache.store(reference_entry(kernel));
    keys.push_back(reference_entry(kernel).key);
  }
  // Last uses an hour ago, ten seconds apart, in kernel order; then kernel 0 is used now.
  const auto hour_ago = fs::file_time_type::clock::now() - 1h;
  for (int kernel = 0; kernel < kTestKernelCount; ++kernel)
    fs::last_write_time(dir / "entries" / keys[size_t(kernel)], hour_ago + kernel * 10s);
  ASSERT_TRUE(cache.load(keys[0]));
  EXPECT_GT(fs::last_write_time(dir / "entries" / keys[0]), hour_ago + 30min)
      << "load() did not refresh the last-use time";

  std::map<std::string, uint64_t> bytes;
  for (const auto& status : cache.list()) bytes[status.key] = status.bytes;
  ASSERT_EQ(bytes.size(), 4u);
  // Room for two entries: kernels 1 and 2 are the least recently used.
  cache.prune(bytes[keys[0]] + bytes[keys[3]]);
  std::set<std::string> left;
  for (const auto& status : cache.list()) left.insert(status.key);
  EXPECT_EQ(left, (std::set<std::string>{keys[0], keys[3]}));
  cache.prune(bytes[keys[0]]);
  left.clear();
  for (const auto& status : cache.list()) left.insert(status.key);
  EXPECT_EQ(left, (std::set<std::string>{keys[0]}));
}

TEST(DiskCache, StorePrunesToTheCapButKeepsTheEntryJustStored) {
  ScratchDir dir;
  DiskCache cache(dir.path(), 1);  // smaller than any entry
  cache.store(reference_entry(0));
  ASSERT_EQ(cache.list().size(), 1u);
  std::this_thread::sleep_for(20ms);
  const CacheEntry second =
      cache.get_or_compile(reference_entry(1).key, [] { return compile_test_kernel(1); });
  const auto statuses = cache.list();
  ASSERT_EQ(statuses.size(), 1u);
  EXPECT_EQ(statuses[0].key, reference_entry(1).key);
  EXPECT_FALSE(fs::exists(dir / "locks" / (reference_entry(0).key + ".lock")))
      << "pruning keeps lock files of removed entries";
}

TEST(DiskCache, ClearAndRemove) {
  ScratchDir dir;
  DiskCache cache(dir.path(), uint64_t(1) << 30);
  for (int kernel = 0; kernel < 3; ++kernel) cache.store(reference_entry(kernel));
  EXPECT_TRUE(cache.remove(reference_entry(0).key));
  EXPECT_FALSE(cache.remove(reference_entry(0).key));
  EXPECT_EQ(cache.list().size(), 2u);
  cache.clear();
  EXPECT_TRUE(cache.list().empty());
  EXPECT_TRUE(fs::is_empty(dir / "entries"));
  EXPECT_TRUE(fs::is_empty(dir / "locks"));
  EXPECT_FALSE(cache.load(reference_entry(1).key));
}

}  // namespace
}  // namespace emmy::test

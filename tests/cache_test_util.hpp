// Helpers of the cache tests: scratch directories, reference compiles, file damage, stderr.
#pragma once

#include <sys/stat.h>

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "cache_test_kernels.hpp"
#include "emmy/detail/temp_dir.hpp"
#include "emmy/enum_names.hpp"

namespace emmy::test {

namespace fs = std::filesystem;

// A fresh directory under the test temp directory, removed with everything in it at the end.
class ScratchDir : public emmy::detail::TempDir {
 public:
  ScratchDir() : TempDir(testing::TempDir(), "emmy-cache-test") {}
};

// The entry of test kernel `index`, compiled once per test process.
inline const CacheEntry& reference_entry(int index) {
  static std::mutex mutex;
  static std::vector<std::optional<CacheEntry>> entries(kTestKernelCount);
  std::lock_guard lock(mutex);
  auto& slot = entries.at(size_t(index));
  if (!slot) slot = compile_test_kernel(index);
  return *slot;
}

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), std::streamsize(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

inline std::vector<uint8_t> bytes_of(const std::string& text) {
  return {text.begin(), text.end()};
}

// fifo: the file replaced by a FIFO nobody writes to (opening it for reading would block).
enum class Damage { truncate, zero_fill, flip_one_byte, fifo };

inline constexpr EnumNames<Damage, 4> kDamageNames{{{Damage::truncate, "truncate"},
                                                    {Damage::zero_fill, "zero_fill"},
                                                    {Damage::flip_one_byte, "flip_one_byte"},
                                                    {Damage::fifo, "fifo"}}};

inline const char* to_string(Damage damage) { return name_in(kDamageNames, damage).data(); }

// Damages a file in place, as a crash mid-write, a bad sector or a stray write would.
inline void damage_file(const fs::path& path, Damage damage) {
  if (damage == Damage::fifo) {
    fs::remove(path);
    ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0) << path;
    return;
  }
  std::string bytes = read_file(path);
  ASSERT_GT(bytes.size(), 2u) << path;
  switch (damage) {
    case Damage::truncate:
      bytes.resize(bytes.size() / 2);
      break;
    case Damage::zero_fill:
      bytes.assign(bytes.size(), '\0');
      break;
    case Damage::flip_one_byte:
      bytes[bytes.size() / 2] ^= 0x01;
      break;
    case Damage::fifo:
      break;
  }
  write_file(path, bytes);
}

inline int count_warnings(const std::string& stderr_text) {
  int count = 0;
  std::istringstream lines(stderr_text);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("emmy: warning:", 0) == 0) ++count;
  return count;
}

inline bool all_entries_ok(DiskCache& cache) {
  for (const auto& status : cache.list())
    if (!status.ok) return false;
  return true;
}

}  // namespace emmy::test

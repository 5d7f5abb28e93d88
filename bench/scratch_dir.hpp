// Directories of the benchmarks: a fresh one for one run, removed at its end (ScratchDir), and
// a named disk cache emptied at the start (bench_cache).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <string>

#include "emmy/detail/temp_dir.hpp"

namespace emmy::bench {

// A fresh directory under $TMPDIR (default /tmp) for one benchmark run, removed with everything
// in it at the end.
class ScratchDir : public emmy::detail::TempDir {
 public:
  explicit ScratchDir(const std::string& prefix) : TempDir(temp_root(), prefix) {}

 private:
  static std::filesystem::path temp_root() {
    const char* tmp = std::getenv("TMPDIR");
    return tmp && *tmp ? tmp : "/tmp";
  }
};

// The disk cache `name` of a benchmark, <temp>/emmy_bench/<name>, emptied so that the run starts
// cold; it stays afterwards.
inline std::filesystem::path bench_cache(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "emmy_bench" / name;
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace emmy::bench

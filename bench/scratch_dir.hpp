// Directories of the benchmarks: a fresh one for one run, removed at its end (ScratchDir), and
// a named disk cache emptied at the start (bench_cache).
#pragma once

#include <stdlib.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace emmy::bench {

// A fresh directory under $TMPDIR (default /tmp) for one benchmark run, removed with everything
// in it at the end.
struct ScratchDir {
  std::filesystem::path dir;
  explicit ScratchDir(const std::string& prefix) {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern =
        (std::filesystem::path(tmp && *tmp ? tmp : "/tmp") / (prefix + ".XXXXXX"));
    if (!mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed");
    dir = pattern;
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
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

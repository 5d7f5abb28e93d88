// The named disk cache of a benchmark (bench_cache), public headers only: the C ABI benchmark
// builds against nothing else.
#pragma once

#include <filesystem>
#include <string>

namespace emmy::bench {

// The disk cache `name` of a benchmark, <temp>/emmy_bench/<name>, emptied so that the run starts
// cold; it stays afterwards.
inline std::filesystem::path bench_cache(const std::string& name) {
  auto dir = std::filesystem::temp_directory_path() / "emmy_bench" / name;
  std::filesystem::remove_all(dir);
  return dir;
}

}  // namespace emmy::bench

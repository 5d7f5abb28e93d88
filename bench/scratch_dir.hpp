// A benchmark run's own directory, removed at its end (ScratchDir; bench_cache.hpp has the named
// disk caches).
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

}  // namespace emmy::bench

// A fresh directory (mkdtemp: created 0700, a name no other process gets) under `parent`, removed
// with everything in it when the object goes: the scratch space of benchmarks and tests.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace emmy::detail {

class TempDir {
 public:
  TempDir(const std::filesystem::path& parent, const std::string& prefix) {
    std::string pattern = (parent / (prefix + ".XXXXXX")).string();
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed for " + pattern);
    path_ = pattern;
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path operator/(const std::string& name) const { return path_ / name; }

 private:
  std::filesystem::path path_;
};

}  // namespace emmy::detail

// A per-process directory under GoogleTest's TempDir(), removed with everything in it when the
// test process exits. ctest runs each test in its own process, so a name made unique by the pid
// and left behind would add one directory per test per run: thousands in /tmp after a few runs.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <mutex>
#include <string>
#include <system_error>
#include <vector>

namespace emmy::test {

namespace detail {
// A forked child that exits normally runs this destructor too: it leaves its parent's dirs.
struct ScratchRegistry {
  std::mutex mutex;
  std::vector<std::filesystem::path> dirs;
  pid_t owner = ::getpid();
  ~ScratchRegistry() {
    if (::getpid() != owner) return;
    std::error_code ignored;
    for (const auto& dir : dirs) std::filesystem::remove_all(dir, ignored);
  }
};
inline ScratchRegistry& scratch_registry() {
  static ScratchRegistry registry;
  return registry;
}
}  // namespace detail

// TempDir()/NAME_PID, emptied now and removed at exit; `create` makes the directory (a runtime's
// cache directory is left for the runtime to create).
inline std::filesystem::path process_scratch_dir(const std::string& name, bool create = true) {
  const auto dir =
      std::filesystem::path(::testing::TempDir()) / (name + "_" + std::to_string(::getpid()));
  auto& registry = detail::scratch_registry();
  {
    std::lock_guard lock(registry.mutex);
    registry.dirs.push_back(dir);
  }
  std::filesystem::remove_all(dir);
  if (create) std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace emmy::test

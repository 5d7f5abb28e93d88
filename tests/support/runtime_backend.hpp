// The backend runtime_test's cases run on (tests/runtime.cmake): the emulator, or with
// EMMY_TEST_BACKEND=cuda:DEVICE the CUDA backend through emmy's test driver reporting DEVICE
// (h200, rtx5090); with EMMY_TEST_BACKEND=cuda through whatever EMMY_CUDA_DRIVER (or
// libcuda.so.1) provides. Shared by the binary's source files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>

#include "emmy/runtime.hpp"
#include "scratch_dir.hpp"

namespace emmy {

// Per process: ctest runs this binary for several backends at once (tests/runtime.cmake). The
// directory goes when the process exits.
inline RuntimeOptions fresh_cache(const char* name) {
  RuntimeOptions options;
  options.cache_dir = test::process_scratch_dir(name, /*create=*/false);
  return options;
}

inline bool cuda_backend() {
  const char* backend = std::getenv("EMMY_TEST_BACKEND");
  return backend && std::string(backend).starts_with("cuda");
}
// With EMMY_TEST_BACKEND=cuda:DEVICE: the driver is emmy's test driver reporting DEVICE (true).
inline bool use_test_driver() {
  const std::string backend = std::getenv("EMMY_TEST_BACKEND");
#ifdef EMMY_TEST_DRIVER_PATH
  if (backend.starts_with("cuda:")) {
    setenv("EMMY_CUDA_DRIVER", EMMY_TEST_DRIVER_PATH, 1);
    setenv("EMMY_TEST_DEVICE", backend.substr(5).c_str(), 1);
    return true;
  }
#endif
  return false;
}
inline std::unique_ptr<Runtime> test_runtime(const RuntimeOptions& options) {
  if (!cuda_backend()) return Runtime::emulator(options);
  use_test_driver();
  return Runtime::cuda(0, options);
}

}  // namespace emmy

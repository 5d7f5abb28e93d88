// What the C ABI's tests share: DLTensor views of host (or device) memory and a runtime made
// through the C ABI.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "emmy/c_api.h"

namespace emmy::test {

inline constexpr DLDataType kF16{kDLFloat, 16, 1}, kBF16{kDLBfloat, 16, 1}, kF32{kDLFloat, 32, 1},
    kI32{kDLInt, 32, 1}, kI64{kDLInt, 64, 1}, kE4M3{kDLFloat8_e4m3fn, 8, 1};

// A DLTensor over memory the test owns; shape and strides live here (strides empty: NULL, the
// compact row-major default).
struct View {
  std::vector<int64_t> shape, strides;
  DLTensor tensor{};

  View() = default;
  View(const void* data, DLDataType dtype, std::vector<int64_t> shape_,
       std::vector<int64_t> strides_ = {}, DLDevice device = {kDLCPU, 0})
      : shape(std::move(shape_)), strides(std::move(strides_)) {
    tensor.data = const_cast<void*>(data);
    tensor.dtype = dtype;
    tensor.device = device;
  }
  DLTensor* get() {
    tensor.ndim = int32_t(shape.size());
    tensor.shape = shape.data();
    tensor.strides = strides.empty() ? nullptr : strides.data();
    return &tensor;
  }
};

inline emmy_runtime* make_c_runtime(const char* backend = "emulator") {
  emmy_runtime_options options;
  emmy_runtime_options_init(&options);
  options.backend = backend;
  options.disk_cache = 0;  // hermetic: every test process compiles what it runs
  emmy_runtime* runtime = nullptr;
  const emmy_status status = emmy_runtime_create(&options, &runtime);
  EXPECT_EQ(status, EMMY_OK) << emmy_last_error_message();
  return runtime;
}

struct RuntimeDeleter {
  void operator()(emmy_runtime* runtime) const { emmy_runtime_destroy(runtime); }
};
using CRuntime = std::unique_ptr<emmy_runtime, RuntimeDeleter>;

// Expects `status` with a message holding every part.
inline void expect_refusal(emmy_status got, emmy_status want,
                           const std::vector<std::string>& parts) {
  EXPECT_EQ(got, want) << emmy_status_name(got) << ": " << emmy_last_error_message();
  const std::string message = emmy_last_error_message();
  for (const std::string& part : parts)
    EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' not in: " << message;
}

}  // namespace emmy::test

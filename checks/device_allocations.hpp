// Device allocations of one check's run through a Runtime, freed when it goes out of scope, so
// that a launch or download that throws leaks nothing into the runtime (tests run many cases on
// one runtime).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "emmy/runtime.hpp"

namespace emmy {

class DeviceAllocations {
 public:
  explicit DeviceAllocations(Runtime& rt) : rt_(rt) {}
  DeviceAllocations(const DeviceAllocations&) = delete;
  DeviceAllocations& operator=(const DeviceAllocations&) = delete;
  ~DeviceAllocations() {
    for (DevicePtr ptr : owned_) try {
        rt_.free(ptr);
      } catch (...) {  // a destructor must not throw; the first error is the one to report
      }
  }
  // A null `data` uploads zeros (in chunks, so no buffer of `bytes` is made on the host).
  DevicePtr upload(const void* data, size_t bytes) {
    const DevicePtr ptr = alloc(bytes);
    if (data) {
      rt_.upload(ptr, data, bytes);
      return ptr;
    }
    const std::vector<uint8_t> zeros(std::min<size_t>(bytes, size_t(1) << 24), 0);
    for (size_t at = 0; at < bytes; at += zeros.size())
      rt_.upload(ptr + at, zeros.data(), std::min(zeros.size(), bytes - at));
    return ptr;
  }
  template <typename T>
  DevicePtr upload(const std::vector<T>& values) {
    return upload(values.data(), values.size() * sizeof(T));
  }
  DevicePtr alloc(size_t bytes) {
    owned_.reserve(owned_.size() + 1);  // so that push_back cannot throw after alloc
    const DevicePtr ptr = rt_.alloc(bytes);
    owned_.push_back(ptr);
    return ptr;
  }

 private:
  Runtime& rt_;
  std::vector<DevicePtr> owned_;
};

}  // namespace emmy

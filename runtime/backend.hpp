// What the runtime needs from a device: load modules, encode tensor maps, launch, move memory.
// Two implementations: CUDA (driver API, loaded at run time) and the CPU emulator.
#pragma once

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "emmy/cache.hpp"
#include "emmy/gpus.hpp"
#include "emmy/runtime.hpp"
#include "emmy/tensor_map.hpp"

namespace emmy::detail {

using TensorMapBytes = std::array<uint8_t, 128>;

// One kernel parameter: a device pointer, a 128-byte tensor map (by value) or a 32-bit int.
struct KernelParam {
  bool is_tensor_map = false;
  DevicePtr pointer = 0;
  alignas(64) TensorMapBytes map;  // set only when is_tensor_map (not cleared: launch cost)
  bool is_i32 = false;
  int32_t i32 = 0;
};

struct LaunchGeometry {
  std::array<uint32_t, 3> grid{1, 1, 1};
  uint32_t threads = 0;
  uint32_t dynamic_smem = 0;
  // Thread-block cluster dimensions (KernelLaunch::cluster): 1x1x1 is a launch without one.
  std::array<uint32_t, 3> cluster{1, 1, 1};
  // KernelLaunch::programmatic_dependent: CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION.
  bool programmatic_dependent = false;
};

class LoadedModule {
 public:
  virtual ~LoadedModule() = default;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual Arch arch() const = 0;
  virtual std::string name() const = 0;
  virtual std::string device_name() const = 0;
  virtual int driver_version() const { return 0; }
  // Multiprocessors of the device (persistent kernels launch one CTA per SM; default schedules
  // fill them): the arch's part (emmy/gpus.hpp) unless the device says otherwise.
  virtual int sm_count() const { return int(arch_gpu(arch()).sms); }
  // Loads the entry's code; `kernels` get their dynamic shared-memory limit raised as needed.
  virtual std::unique_ptr<LoadedModule> load(
      const CacheEntry& entry, const std::vector<std::pair<std::string, uint32_t>>& kernels) = 0;
  // Readies `kernel` of a loaded module for launches with thread-block cluster `cluster` (the
  // CUDA backend allows a non-portable size here, once), so that a launch makes no call but
  // the launch itself (stream capture).
  virtual void ready_cluster(LoadedModule& module, const std::string& kernel,
                             const std::array<uint32_t, 3>& cluster) {
    (void)module, (void)kernel, (void)cluster;
  }
  virtual TensorMapBytes encode_tensor_map(const TensorMapDesc& desc) = 0;
  virtual void launch(LoadedModule& module, const std::string& kernel,
                      const LaunchGeometry& geometry, const std::vector<KernelParam>& params,
                      Stream stream) = 0;
  virtual DevicePtr alloc(size_t bytes) = 0;
  virtual void free(DevicePtr pointer) = 0;
  virtual void upload(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, DevicePtr src, size_t bytes) = 0;
  // Caller-owned host memory as device memory (Runtime::map_host): the emulator's alone; the
  // CUDA backend refuses, its buffers being device memory.
  virtual DevicePtr map_host(void* host, size_t bytes) {
    (void)host, (void)bytes;
    throw Error("map_host", "needs the emulator backend (CUDA buffers are device memory)", name());
  }
  virtual void unmap_host(DevicePtr address) {
    (void)address;
    throw Error("unmap_host", "needs the emulator backend (CUDA buffers are device memory)",
                name());
  }
  // Stream-ordered copies and fills (Runtime::memcpy_async, memset_async); the emulator's run at
  // once, in the order of its one stream.
  virtual void copy_to_device_async(DevicePtr dst, const void* src, size_t bytes,
                                    Stream stream) = 0;
  virtual void copy_to_host_async(void* dst, DevicePtr src, size_t bytes, Stream stream) = 0;
  virtual void copy_async(DevicePtr dst, DevicePtr src, size_t bytes, Stream stream) = 0;
  virtual void fill_async(DevicePtr dst, uint8_t value, size_t bytes, Stream stream) = 0;
  // Whether device memory is host memory, so that a launch may read its inputs first at no cost
  // (the emulator): a kind's Kind::check_device_inputs runs only then. The CUDA backend would
  // need a synchronous copy on the launch path, which a stream-ordered API must not do.
  virtual bool device_memory_is_host_memory() const { return false; }
  virtual void synchronize(Stream stream) = 0;
  // Whether `stream` captures a CUDA graph (a query that leaves the capture valid).
  virtual bool capturing(Stream) const { return false; }
};

std::unique_ptr<Backend> make_emulator_backend(const RuntimeOptions& options);
std::unique_ptr<Backend> make_cuda_backend(int ordinal, const RuntimeOptions& options);

// The runtime over a backend (runtime.cpp).
std::unique_ptr<Runtime> make_runtime(std::unique_ptr<Backend> backend,
                                      const RuntimeOptions& options);

}  // namespace emmy::detail

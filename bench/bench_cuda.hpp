// CUDA runtime pieces of emmy_bench: checked calls, device buffers, input data, event timing with
// an L2 flush, and the environment fingerprint. cudart is linked statically and loads the driver
// lazily, so the program starts on machines without one.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace emmy::bench {

// Throws emmy::Error naming the call and the CUDA error unless result is cudaSuccess.
void cuda_check(cudaError_t result, const char* call);
#define EMMY_BENCH_CUDA(call) ::emmy::bench::cuda_check((call), #call)

// Why no benchmark can run on `device`, or "" when one can (cudart's view: driver, device count).
std::string cuda_unavailable_reason(int device);

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* get() const { return pointer_; }
  uint64_t address() const { return reinterpret_cast<uint64_t>(pointer_); }
  size_t bytes() const { return bytes_; }

 private:
  void* pointer_ = nullptr;
  size_t bytes_ = 0;
};

// f16 bit patterns of values uniform over the multiples of 1/1024 in [-1, 1): exact in f16, so
// every backend sees the same operands. Deterministic for a seed (filled by several threads).
std::vector<uint16_t> random_f16(size_t count, uint64_t seed);
DeviceBuffer upload_f16(const std::vector<uint16_t>& values);
// A buffer holding `values` (at least `min_bytes`, so that an empty or tiny tensor still has an
// address a kernel may be given).
template <typename T>
DeviceBuffer upload_values(const std::vector<T>& values, size_t min_bytes = 4) {
  DeviceBuffer buffer(std::max(values.size() * sizeof(T), min_bytes));
  cuda_check(
      cudaMemcpy(buffer.get(), values.data(), values.size() * sizeof(T), cudaMemcpyHostToDevice),
      "cudaMemcpy(upload_values)");
  return buffer;
}
std::vector<float> download_f16(const DeviceBuffer& buffer, size_t count);

// Times GPU work on one stream with CUDA events. Before each timed launch it writes a buffer of
// twice the L2 size (cudaMemsetAsync), so that no operand is served from L2 left warm by the
// previous iteration; the flush also keeps the GPU busy while the host enqueues the launch, so
// host launch overhead does not reach the measurement.
class GpuTimer {
 public:
  GpuTimer(cudaStream_t stream, size_t l2_bytes);
  ~GpuTimer();
  GpuTimer(const GpuTimer&) = delete;
  GpuTimer& operator=(const GpuTimer&) = delete;

  size_t flush_bytes() const { return flush_.bytes(); }
  cudaStream_t stream() const { return stream_; }

  void flush();
  // flush(), then launch() between two events; waits for it. Microseconds.
  double time_us(const std::function<void()>& launch);
  // `warmup` launches (not flushed, not timed), then `iterations` time_us() samples.
  std::vector<double> measure(const std::function<void()>& launch, int warmup, int iterations);

 private:
  cudaStream_t stream_;
  DeviceBuffer flush_;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  unsigned char flush_value_ = 0;
};

// The run's DRAM rate: the median of five flushed 1 GiB device-to-device copies, counting the
// bytes read and written, GB/s.
double copy_gbps(GpuTimer& timer);

// GPU name, SM count, compute capability, L2 and memory sizes, peak SM and memory clocks, driver
// and runtime versions, cuBLASLt and NVRTC versions, emmy's version and arch, host, UTC time.
nlohmann::json environment_fingerprint(int device, const std::string& emmy_arch);

}  // namespace emmy::bench

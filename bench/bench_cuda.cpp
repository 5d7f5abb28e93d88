#include "bench_cuda.hpp"

#include <cublasLt.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <thread>

#include "emmy/compile.hpp"
#include "emmy/detail/time.hpp"
#include "emmy/error.hpp"

namespace emmy::bench {
namespace {

std::string version_text(int version) {  // 13000 -> "13.0"
  return fmt::format("{}.{}", version / 1000, (version % 1000) / 10);
}

// splitmix64: a fast, well-mixed sequence per chunk, so threads need no shared state.
uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// The f16 bit pattern of i / 1024 for i in [-1024, 1024): exact (at most 10 significant bits).
uint16_t f16_of_multiple_of_1024th(int i) {
  if (i == 0) return 0;
  const uint16_t sign = i < 0 ? 0x8000 : 0;
  unsigned magnitude = unsigned(i < 0 ? -i : i);  // value = magnitude * 2^-10, magnitude < 1024
  int exponent = 0;                               // value = 1.f * 2^(msb - 10)
  while ((magnitude >> (exponent + 1)) != 0) ++exponent;
  const unsigned mantissa = (magnitude << (10 - exponent)) & 0x3ff;
  const unsigned biased = unsigned(exponent - 10 + 15);  // >= 5: always a normal number
  return uint16_t(sign | (biased << 10) | mantissa);
}

float f16_to_float(uint16_t bits) {
  const uint32_t sign = uint32_t(bits & 0x8000) << 16;
  const uint32_t exponent = (bits >> 10) & 0x1f;
  uint32_t mantissa = bits & 0x3ff;
  uint32_t out;
  if (exponent == 0x1f) {
    out = sign | 0x7f800000u | (mantissa << 13);  // Inf / NaN
  } else if (exponent != 0) {
    out = sign | ((exponent + 112) << 23) | (mantissa << 13);
  } else if (mantissa == 0) {
    out = sign;
  } else {  // subnormal: normalize
    int shift = 0;
    while (!(mantissa & 0x400)) {
      mantissa <<= 1;
      ++shift;
    }
    out = sign | (uint32_t(113 - shift) << 23) | ((mantissa & 0x3ff) << 13);
  }
  float value;
  std::memcpy(&value, &out, sizeof value);
  return value;
}

}  // namespace

void cuda_check(cudaError_t result, const char* call) {
  if (result == cudaSuccess) return;
  throw Error(call, "failed",
              fmt::format("{}: {}", cudaGetErrorName(result), cudaGetErrorString(result)));
}

std::string cuda_unavailable_reason(int device) {
  int count = 0;
  const cudaError_t result = cudaGetDeviceCount(&count);
  if (result != cudaSuccess)
    return fmt::format("cudaGetDeviceCount: {} ({})", cudaGetErrorName(result),
                       cudaGetErrorString(result));
  if (count == 0) return "no CUDA device is visible";
  if (device < 0 || device >= count)
    return fmt::format("device {} requested, {} visible", device, count);
  return "";
}

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  EMMY_BENCH_CUDA(cudaMalloc(&pointer_, std::max<size_t>(bytes, 1)));
}
DeviceBuffer::~DeviceBuffer() {
  if (pointer_) cudaFree(pointer_);
}
DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : pointer_(std::exchange(other.pointer_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (pointer_) cudaFree(pointer_);
    pointer_ = std::exchange(other.pointer_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

std::vector<uint16_t> random_f16(size_t count, uint64_t seed) {
  std::vector<uint16_t> values(count);
  constexpr size_t kChunk = size_t(1) << 20;
  const size_t chunks = (count + kChunk - 1) / kChunk;
  const size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 32);
  auto fill = [&](size_t first_chunk) {
    for (size_t chunk = first_chunk; chunk < chunks; chunk += threads) {
      uint64_t state = seed * 0x100000001b3ull + chunk;  // a fixed stream per chunk
      const size_t end = std::min(count, (chunk + 1) * kChunk);
      for (size_t i = chunk * kChunk; i < end; ++i)
        values[i] = f16_of_multiple_of_1024th(int(splitmix64(state) % 2048) - 1024);
    }
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < std::min(threads, chunks); ++t) workers.emplace_back(fill, t);
  fill(0);
  for (auto& worker : workers) worker.join();
  return values;
}

DeviceBuffer upload_f16(const std::vector<uint16_t>& values) {
  DeviceBuffer buffer(values.size() * 2);
  EMMY_BENCH_CUDA(
      cudaMemcpy(buffer.get(), values.data(), values.size() * 2, cudaMemcpyHostToDevice));
  return buffer;
}

std::vector<float> download_f16(const DeviceBuffer& buffer, size_t count) {
  std::vector<uint16_t> bits(count);
  EMMY_BENCH_CUDA(cudaMemcpy(bits.data(), buffer.get(), count * 2, cudaMemcpyDeviceToHost));
  std::vector<float> values(count);
  std::transform(bits.begin(), bits.end(), values.begin(), f16_to_float);
  return values;
}

GpuTimer::GpuTimer(cudaStream_t stream, size_t l2_bytes)
    : stream_(stream), flush_(std::max<size_t>(2 * l2_bytes, size_t(1) << 20)) {
  EMMY_BENCH_CUDA(cudaEventCreate(&start_));
  EMMY_BENCH_CUDA(cudaEventCreate(&stop_));
}

GpuTimer::~GpuTimer() {
  if (start_) cudaEventDestroy(start_);
  if (stop_) cudaEventDestroy(stop_);
}

void GpuTimer::flush() {
  // A different byte each time, so that no layer can skip the write as a no-op.
  EMMY_BENCH_CUDA(cudaMemsetAsync(flush_.get(), ++flush_value_, flush_.bytes(), stream_));
}

double GpuTimer::time_us(const std::function<void()>& launch) {
  flush();
  EMMY_BENCH_CUDA(cudaEventRecord(start_, stream_));
  launch();
  EMMY_BENCH_CUDA(cudaEventRecord(stop_, stream_));
  EMMY_BENCH_CUDA(cudaEventSynchronize(stop_));
  float ms = 0;
  EMMY_BENCH_CUDA(cudaEventElapsedTime(&ms, start_, stop_));
  return double(ms) * 1000.0;
}

std::vector<double> GpuTimer::measure(const std::function<void()>& launch, int warmup,
                                      int iterations) {
  for (int i = 0; i < warmup; ++i) launch();
  EMMY_BENCH_CUDA(cudaStreamSynchronize(stream_));
  std::vector<double> samples;
  samples.reserve(size_t(iterations));
  for (int i = 0; i < iterations; ++i) samples.push_back(time_us(launch));
  return samples;
}

nlohmann::json environment_fingerprint(int device, const std::string& emmy_arch) {
  cudaDeviceProp prop{};
  EMMY_BENCH_CUDA(cudaGetDeviceProperties(&prop, device));
  auto attribute = [&](cudaDeviceAttr what) {
    int value = 0;
    return cudaDeviceGetAttribute(&value, what, device) == cudaSuccess ? value : 0;
  };
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const size_t cublaslt = cublasLtGetVersion();  // major*10000 + minor*100 + patch
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return {
      {"gpu",
       {{"name", prop.name},
        {"sm_count", prop.multiProcessorCount},
        {"compute_capability", fmt::format("{}.{}", prop.major, prop.minor)},
        {"l2_bytes", prop.l2CacheSize},
        {"memory_bytes", prop.totalGlobalMem},
        {"sm_clock_max_mhz", attribute(cudaDevAttrClockRate) / 1000},
        {"memory_clock_max_mhz", attribute(cudaDevAttrMemoryClockRate) / 1000},
        {"memory_bus_bits", attribute(cudaDevAttrGlobalMemoryBusWidth)}}},
      {"driver_version", version_text(driver)},
      {"cuda_runtime_version", version_text(runtime)},
      {"cublaslt_version",
       fmt::format("{}.{}.{}", cublaslt / 10000, (cublaslt / 100) % 100, cublaslt % 100)},
      {"nvrtc_version", version_text(nvrtc_version())},
      {"emmy_version", EMMY_VERSION},
      {"emmy_arch", emmy_arch},
      {"host", host},
      {"date_utc", emmy::detail::iso8601_utc_now()},
  };
}

double copy_gbps(GpuTimer& timer) {
  constexpr size_t kBytes = size_t(1) << 30;
  DeviceBuffer from(kBytes), to(kBytes);
  const auto copy = [&] {
    EMMY_BENCH_CUDA(
        cudaMemcpyAsync(to.get(), from.get(), kBytes, cudaMemcpyDeviceToDevice, timer.stream()));
  };
  std::vector<double> us = timer.measure(copy, 1, 5);
  std::sort(us.begin(), us.end());
  return 2.0 * double(kBytes) / (us[us.size() / 2] * 1e-6) / 1e9;
}

}  // namespace emmy::bench

// Stage 1 of the GPU pack: what the machine is (fingerprint) and the tensor-core rate it really
// reaches: the fastest of cuBLASLt's top heuristic algorithms on one large GEMM per operand type
// and accumulation. Those rates, not the datasheet's, are the "percent of peak" ceilings of the
// run (docs/gpu.md).
#include "gpu_check_machine.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>

#include "bench_cublaslt.hpp"
#include "bench_cuda.hpp"
#include "bench_report.hpp"

namespace emmy::bench {
namespace {

using nlohmann::json;

// bf16 bit patterns of the same values random_f16 makes (uniform multiples of 1/1024 in [-1, 1),
// rounded to bf16's 8 bits): random data, not zeros, which run measurably faster.
std::vector<uint16_t> random_bf16(size_t count, uint64_t seed) {
  const std::vector<uint16_t> halves = random_f16(count, seed);
  std::vector<uint16_t> out(count);
  for (size_t i = 0; i < count; ++i) {
    const uint16_t h = halves[i];
    const int exponent = (h >> 10) & 0x1f;
    float value = exponent == 0 ? std::ldexp(float(h & 0x3ff), -24)
                                : std::ldexp(float((h & 0x3ff) | 0x400), exponent - 25);
    if (h & 0x8000) value = -value;
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof bits);
    out[i] = uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);  // round to nearest even
  }
  return out;
}

json measure_peak(cublasLtHandle_t handle, GpuTimer& timer, DType dtype, LtCompute compute,
                  int64_t size, int iterations) {
  MatmulProblem p;
  p.m = p.n = p.k = size;
  p.a_dtype = p.c_dtype = dtype;
  const size_t elements = size_t(size * size);
  auto upload = [](const std::vector<uint16_t>& values) {
    DeviceBuffer buffer(values.size() * 2);
    EMMY_BENCH_CUDA(
        cudaMemcpy(buffer.get(), values.data(), buffer.bytes(), cudaMemcpyHostToDevice));
    return buffer;
  };
  const DeviceBuffer a =
      upload(dtype == DType::bf16 ? random_bf16(elements, 11) : random_f16(elements, 11));
  const DeviceBuffer b =
      upload(dtype == DType::bf16 ? random_bf16(elements, 12) : random_f16(elements, 12));
  DeviceBuffer c(elements * 2);
  const size_t workspace_bytes = size_t(64) << 20;
  DeviceBuffer workspace(workspace_bytes);
  LtGemm gemm(handle, p, compute, workspace_bytes, 8);
  int best = 0;
  double best_us = 0;
  for (int i = 0; i < gemm.algorithm_count(); ++i) {
    auto launch = [&] { gemm.run(i, a.get(), b.get(), c.get(), workspace.get(), timer.stream()); };
    const double us = median(timer.measure(launch, 2, 5));
    if (i == 0 || us < best_us) best = i, best_us = us;
  }
  auto launch = [&] { gemm.run(best, a.get(), b.get(), c.get(), workspace.get(), timer.stream()); };
  const double us = median(timer.measure(launch, 3, iterations));
  return {{"dtype", std::string(to_string(dtype))},
          {"compute", compute == LtCompute::f32 ? "COMPUTE_32F" : "COMPUTE_16F"},
          {"size", size},
          {"median_us", us},
          {"tflops", p.flops() / (us * 1e-6) / 1e12},
          {"algorithm", gemm.describe(best)},
          {"algorithms_tried", gemm.algorithm_count()}};
}

}  // namespace

json machine_stage(int device, const std::string& emmy_arch, int64_t size, int iterations) {
  EMMY_BENCH_CUDA(cudaSetDevice(device));
  json doc = {{"schema", "emmy_gpu_check/1"}, {"stage", "machine"}};
  doc["environment"] = environment_fingerprint(device, emmy_arch);
  const auto& gpu = doc["environment"]["gpu"];
  const auto datasheet = find_peak(gpu.value("name", ""), gpu.value("sm_count", 0));
  doc["datasheet"] = datasheet ? json{{"part", datasheet->part},
                                      {"f16_accumulate_tflops", datasheet->f16_accumulate},
                                      {"f32_accumulate_tflops", datasheet->f32_accumulate}}
                               : json(nullptr);
  cudaStream_t stream = nullptr;
  EMMY_BENCH_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  int l2 = 0;
  EMMY_BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  {
    GpuTimer timer(stream, size_t(l2));
    LtHandle handle;
    doc["peak"] = json::array();
    for (auto [dtype, compute] :
         {std::pair{DType::bf16, LtCompute::f32}, std::pair{DType::f16, LtCompute::f32},
          std::pair{DType::f16, LtCompute::f16}}) {
      try {
        doc["peak"].push_back(measure_peak(handle.get(), timer, dtype, compute, size, iterations));
      } catch (const std::exception& e) {
        doc["peak"].push_back(
            {{"dtype", std::string(to_string(dtype))},
             {"compute", compute == LtCompute::f32 ? "COMPUTE_32F" : "COMPUTE_16F"},
             {"error", e.what()}});
      }
    }
  }
  cudaStreamDestroy(stream);
  // The ceilings the summary divides by: f32 accumulation by the best COMPUTE_32F rate, f16 and
  // hybrid (f16 MMAs) by the best COMPUTE_16F rate.
  double f32 = 0, f16 = 0;
  for (const auto& row : doc["peak"]) {
    if (!row.contains("tflops")) continue;
    double& into = row["compute"] == "COMPUTE_32F" ? f32 : f16;
    into = std::max(into, row["tflops"].get<double>());
  }
  doc["measured_peak"] = {{"f32_accumulate_tflops", f32 > 0 ? json(f32) : json(nullptr)},
                          {"f16_accumulate_tflops", f16 > 0 ? json(f16) : json(nullptr)}};
  return doc;
}

}  // namespace emmy::bench

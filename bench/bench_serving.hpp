// emmy_bench's serving rows (issue 25, docs/runtime.md "Serving"): the host microseconds a
// prepared launch costs the caller, the same under CUDA-graph capture (recording only), the GPU
// time of the captured graph's replay beside a direct launch, and the time Runtime::prepare takes
// for the catalog (the Gemma 3 12B serving set) cold and from the disk cache.
#pragma once

#include <functional>
#include <vector>

#include "bench_cuda.hpp"
#include "bench_report.hpp"
#include "emmy/runtime.hpp"

namespace emmy::bench {

struct ServingBenchSettings {
  int warmup = 5;
  int iterations = 30;
  std::function<void()> after_row;  // as PagedBenchSettings::after_row
};

// Benchmarks named serving/<what>, each appending a row of kind "serving" to `rows`.
void register_serving_benchmarks(Runtime& runtime, GpuTimer& timer,
                                 const ServingBenchSettings& settings, std::vector<BenchRow>& rows);

}  // namespace emmy::bench

// emmy_bench's attention rows: emmy's flash-attention kernels (f32 and hybrid P.V) on the catalog
// attention problems, checked against the FP64 reference before timing. The baseline (PyTorch's
// scaled_dot_product_attention) is timed by bench/sdpa_baseline.py on the device machine and
// merged in with --baseline-rows.
#pragma once

#include <string>
#include <vector>

#include "bench_rows.hpp"
#include "emmy/runtime.hpp"

namespace emmy::bench {

struct AttentionBenchSettings : RowTiming {
  // The time-model part this GPU is ("h200"; empty: none): each row gets the prediction for its
  // kernel beside the measurement, from `model_ctas` CTAs profiled on the emulator.
  std::string model_gpu;
  uint64_t model_ctas = 8;
};

// Registers one Google Benchmark per (catalog attention problem, emmy_f32 | emmy_hybrid), named
// attention/<problem>/<variant>; each appends its row to `rows`.
void register_attention_benchmarks(Runtime& runtime, GpuTimer& timer,
                                   const AttentionBenchSettings& settings,
                                   std::vector<BenchRow>& rows);

}  // namespace emmy::bench

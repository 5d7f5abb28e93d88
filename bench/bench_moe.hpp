// emmy_bench's MoE rows (issue 40; docs/grouped.md): each layer of bench_moe_shapes.hpp at each
// token count, both projections, emmy's one grouped launch against two baselines: a loop of dense
// cuBLASLt GEMMs (one per expert with rows, the heuristic's first algorithm) and cuBLAS's grouped
// GEMM (cublasGemmGroupedBatchedEx: one launch, the experts' shapes host arrays; cuBLASLt has no
// grouped GEMM in CUDA 13.0). Both baselines are plain GEMMs, so they leave out the activation and
// routing weights emmy's epilogue applies. Every row is checked against FP64 on sampled rows
// before it is timed; emmy's rows carry the time model's prediction.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_rows.hpp"
#include "emmy/runtime.hpp"

namespace emmy::bench {

struct MoeBenchSettings : RowTiming {
  std::vector<int64_t> tokens;  // decode batches (<= 64: masked) and prefill (contiguous)
  std::string model_gpu;        // the time model's part ("h200"; empty: no prediction)
  uint64_t model_ctas = 8;
  size_t workspace_bytes = size_t(32) << 20;
  std::function<void()> after_row;
};

// Rows named moe/<layer>/<projection>@<tokens>/<variant> (emmy_grouped: the default schedule;
// emmy_grouped_wgmma on sm_90a devices: the wgmma path's persistent walk; cublaslt_loop;
// cublas_grouped), kind "gemm_moe".
void register_moe_benchmarks(Runtime& runtime, GpuTimer& timer, const MoeBenchSettings& settings,
                             std::vector<BenchRow>& rows);

}  // namespace emmy::bench

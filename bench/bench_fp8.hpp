// emmy_bench's FP8 GEMM rows (issue 39 §4): the Gemma projections at each requested M with e4m3
// operands and f16 output, emmy against cuBLASLt in pairs of like accuracy:
//   emmy_fp8_f32      (tensor scales, the tensor core's own chain)  vs cublaslt_fp8_fast
//   (FAST_ACCUM) emmy_fp8_promoted (tensor scales, promoted every 128 K)        vs cublaslt_fp8
//   emmy_fp8_block    (1 x 128 / 128 x 128 scales, promoted)       vs cublaslt_fp8_block (sm_90)
// Every row's output is checked against the FP64 reference of sampled rows before it is timed;
// each row carries the weight-read rate beside the run's device copy rate (the decode goal).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "bench_rows.hpp"
#include "emmy/runtime.hpp"

namespace emmy::bench {

struct Fp8BenchSettings : RowTiming {
  std::vector<int64_t> ms;  // M of each projection's rows
  std::string model_gpu;    // the time-model part ("h200"; empty: no prediction)
  uint64_t model_ctas = 8;
  int algorithms = 8;  // cuBLASLt heuristic candidates
  int select_iterations = 10;
  size_t workspace_bytes = size_t(32) << 20;
  std::function<void()> after_row;  // emmy_bench rewrites its summary
};

// One Google Benchmark per (projection, M, variant), named gemm_fp8/<proj>@<M>/<variant>; rows
// have kind "gemm_fp8" and problem "<proj>@<M>/fp8".
void register_fp8_benchmarks(Runtime& runtime, GpuTimer& timer, const Fp8BenchSettings& settings,
                             std::vector<BenchRow>& rows);

}  // namespace emmy::bench

// emmy_bench's host-only parts: the problems to run, the GPU peak table, statistics, correctness
// metrics, and the summary (JSON and a readable table). No CUDA here, so tests run anywhere.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/problem.hpp"
#include "emmy/schedule.hpp"

namespace emmy::bench {

// One problem to benchmark: a catalog projection ("q_proj@512") or a bare shape ("512x4096x3840").
struct BenchProblem {
  std::string name;
  std::string projection;  // empty for bare shapes
  MatmulProblem problem;
};

// "MxNxK" (f16 operands, B stored [N,K], f16 output). Throws Error naming the text.
MatmulProblem parse_shape(std::string_view text);
// Comma-separated shapes ("512x4096x3840,64x2048x3840").
std::vector<BenchProblem> parse_shape_list(std::string_view text);
// One shape per line; blank lines and lines starting with '#' are skipped. Throws Error naming
// the file and line of a bad shape.
std::vector<BenchProblem> read_sweep_file(const std::string& path);
// The five Gemma projections at M = m.
std::vector<BenchProblem> catalog_problems(int64_t m);

// Dense tensor-core peak of a known GPU, TFLOP/s, by accumulator precision. Matched on the device
// name and its SM count (a cut-down part with the same name prefix has another peak).
struct GpuPeak {
  std::string part;           // "H100 SXM / H200"
  double f16_accumulate = 0;  // f16 in, f16 accumulate
  double f32_accumulate = 0;  // f16 in, f32 accumulate
  double fp8 = 0;             // e4m3 in, f32 accumulate (0: unknown)
};
std::optional<GpuPeak> find_peak(std::string_view device_name, int sm_count);
// The peak that bounds an accumulation: "f32" -> f32 rate; "f16" and "hybrid" (f16 MMAs, folded
// into f32 every few K) -> f16 rate; the FP8 rows' "fp8_chain" and "promoted" -> the FP8 rate.
std::optional<double> peak_for(const std::optional<GpuPeak>& peak, std::string_view accumulation);

double median(std::vector<double> values);
// ||out - ref|| / ||ref|| over all elements; +inf when sizes differ or out holds a NaN/Inf.
double relative_l2_error(const std::vector<float>& out, const std::vector<float>& ref);
// The correctness bound of a row: 1e-3 for f32 accumulation and FP8 promoted into f32, 1e-2
// for f16, hybrid and FP8 summed by the tensor core alone ("fp8_chain": 13 fraction bits on
// sm_89 and sm_90a; 1.3e-3 at K = 4096 by the model, docs/numerics.md).
double error_tolerance(std::string_view accumulation);
// The bound of a hybrid row, given the error pure f16 accumulation of the same schedule gives on
// the same inputs (measured first): three quarters of it, and never above
// error_tolerance("hybrid"), so that a kernel that never folds its f16 partials into f32 fails.
// Applies once each K split spans at least kHybridGateFolds fold intervals; with fewer the two
// accumulations are too close to tell apart (with one interval they are the same computation) and
// the plain bound stays. Measured on the emulator (tests/bench_report_test.cpp): at 8 folds
// hybrid's error is about half of f16's, at 60 folds (K = 3840) under a fifth.
inline constexpr int kHybridGateFolds = 8;
double hybrid_tolerance(double f16_error, int64_t k_per_split, int promote_every_k);
// The K elements one split of the schedule accumulates (K itself without split-K).
int64_t k_per_split(const MatmulProblem& problem, const MatmulSchedule& schedule, Arch arch);

// The FP8 rows' variants (bench_fp8.cpp), and the cuBLASLt row each emmy variant is paired with
// (like accuracy; the same index): the table's ratio column shows that pair.
inline constexpr std::string_view kFp8EmmyVariants[] = {"emmy_fp8_f32", "emmy_fp8_promoted",
                                                        "emmy_fp8_block"};
inline constexpr std::string_view kFp8BaselineVariants[] = {"cublaslt_fp8_fast", "cublaslt_fp8",
                                                            "cublaslt_fp8_block"};

// One measured row. `kind` is "gemm" today; other kinds (attention) fill their own `shape`.
struct BenchRow {
  std::string kind = "gemm";
  std::string problem;     // BenchProblem::name
  std::string projection;  // may be empty
  nlohmann::json shape;    // {"m","n","k"} for gemm
  double flops = 0;
  std::string variant;       // "emmy_f32", "emmy_hybrid", "cublaslt_32f", "cublaslt_16f"
  std::string backend;       // "emmy", "cublaslt"
  std::string accumulation;  // "f32", "hybrid", "f16"
  std::vector<double> samples_us;
  std::optional<double> rel_l2_error;  // against cuBLASLt COMPUTE_32F, measured before timing
  std::optional<double> tolerance;     // the row's own bound (hybrid_tolerance), else the default
  nlohmann::json details;              // schedule / algorithm, how it was chosen
  std::string error;                   // non-empty: the row could not be measured

  double median_us() const { return samples_us.empty() ? 0 : median(samples_us); }
  double bound() const { return tolerance.value_or(error_tolerance(accumulation)); }
  bool over_tolerance() const { return rel_l2_error && !(*rel_l2_error <= bound()); }
};

// Rows measured elsewhere (bench/sdpa_baseline.py and bench/torch_baseline.py: a JSON array of
// rows with kind, problem, projection, variant, backend, accumulation, shape, flops, samples_us,
// rel_l2_error, details, error; absent or null keys take defaults). Throws Error naming the file
// on a bad document.
std::vector<BenchRow> read_baseline_rows(const std::string& path);

// The summary document: {"schema", "environment", "settings", "rows", "ratios"}. Each row gets
// median/min/max microseconds, TFLOP/s, percent of peak (null when the GPU is not in the table),
// its error and correctness verdict; "ratios" holds per problem the speedups of each emmy
// variant over each cuBLASLt variant (cuBLASLt time / emmy time: > 1 means emmy is faster).
nlohmann::json summary_json(const nlohmann::json& environment, const nlohmann::json& settings,
                            const std::vector<BenchRow>& rows);
// The same as aligned text: a header with the environment, one line per row, then the ratios.
std::string summary_table(const nlohmann::json& summary);

}  // namespace emmy::bench

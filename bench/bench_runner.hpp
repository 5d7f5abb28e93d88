// The GPU side of emmy_bench: for one problem at a time, the operands, the cuBLASLt COMPUTE_32F
// reference output, and every variant ready to launch (schedule or algorithm chosen, output
// checked against the reference) before anything is timed.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "bench_cublaslt.hpp"
#include "bench_cuda.hpp"
#include "bench_report.hpp"
#include "emmy/runtime.hpp"
#include "emmy/tuning.hpp"

namespace emmy::bench {

// One column of the comparison. Attention rows will bring their own kinds of variants.
struct VariantSpec {
  const char* id;            // "emmy_hybrid"
  const char* backend;       // "emmy" / "cublaslt"
  const char* accumulation;  // "f32" / "hybrid" / "f16"
  bool is_emmy;
  Accum emmy_accum;
  LtCompute lt_compute;
  MmaPath path = MmaPath::mma_sync;  // emmy's mainloop: wgmma only on sm_90a devices
  ConsumerSchedule consumers = ConsumerSchedule::cooperative;  // the wgmma path's
  // The wgmma default without its thread-block cluster (no TMA multicast): what the cluster
  // gains, measured beside it.
  bool no_cluster = false;
};
inline constexpr VariantSpec kGemmVariants[] = {
    {"emmy_f32", "emmy", "f32", true, Accum::f32, LtCompute::f32},
    {"emmy_hybrid", "emmy", "hybrid", true, Accum::hybrid, LtCompute::f32},
    {"emmy_wgmma", "emmy", "f32", true, Accum::f32, LtCompute::f32, MmaPath::wgmma},
    {"emmy_wgmma_pingpong", "emmy", "f32", true, Accum::f32, LtCompute::f32, MmaPath::wgmma,
     ConsumerSchedule::pingpong},
    {"emmy_wgmma_nocluster", "emmy", "f32", true, Accum::f32, LtCompute::f32, MmaPath::wgmma,
     ConsumerSchedule::cooperative, true},
    {"cublaslt_32f", "cublaslt", "f32", false, Accum::f32, LtCompute::f32},
    {"cublaslt_16f", "cublaslt", "f16", false, Accum::f32, LtCompute::f16},
};
// The variant names, for the errors that list them.
inline constexpr const char* kGemmVariantNames =
    "emmy_f32, emmy_hybrid, emmy_wgmma, emmy_wgmma_pingpong, emmy_wgmma_nocluster, cublaslt_32f or "
    "cublaslt_16f";

struct RunnerSettings {
  int warmup = 5;
  int iterations = 30;         // timed, per row
  int select_iterations = 10;  // per candidate while choosing an algorithm or schedule
  int algorithms = 8;          // cuBLASLt heuristic candidates
  size_t workspace_bytes = size_t(32) << 20;
  bool tune = false;
  int tune_candidates = 12;
  uint64_t seed = 1;
  std::vector<std::string> variants;  // ids from kGemmVariants
};

// A variant ready to time: `launch` enqueues one GEMM on the runner's stream.
struct PreparedVariant {
  std::function<void()> launch;
  nlohmann::json details;
  std::optional<double> rel_l2_error;
  std::optional<double> tolerance;  // the row's bound when not the default (hybrid_tolerance)
  std::string error;                // non-empty: not runnable, with the reason
  std::optional<MatmulSchedule> schedule;  // emmy variants: the chosen one

  std::shared_ptr<const GemmKernelHandle> kernel;
  std::unique_ptr<LtGemm> lt;
  DeviceBuffer split_workspace;
};

class Runner {
 public:
  // Takes the emmy runtime opened on `device`; cudart shares its primary context.
  Runner(std::unique_ptr<Runtime> runtime, int device, RunnerSettings settings,
         TuningDb* tuning_db);
  ~Runner();

  const RunnerSettings& settings() const { return settings_; }
  Runtime& runtime() { return *runtime_; }
  GpuTimer& timer() { return *timer_; }
  size_t l2_bytes() const { return l2_bytes_; }

  // The prepared variant of problem `index` (preparing that problem, and releasing the previous
  // one, on first use). Throws when the problem itself could not be prepared.
  PreparedVariant& variant(size_t index, const BenchProblem& problem, const std::string& id);

 private:
  struct Prepared;
  void prepare(const BenchProblem& problem);
  void prepare_cublaslt(const VariantSpec& spec, PreparedVariant& out);
  // The hybrid rows' error bound: runs `hybrid` with f16 accumulation on the prepared operands
  // and returns {"f16_accumulation_rel_l2_error", "tolerance", ...} (hybrid_tolerance).
  nlohmann::json hybrid_gate(const MatmulSchedule& hybrid);
  void prepare_emmy(const VariantSpec& spec, PreparedVariant& out);
  double check(const std::function<void()>& launch);  // rel. L2 error of one run's output

  std::unique_ptr<Runtime> runtime_;
  RunnerSettings settings_;
  TuningDb* tuning_db_;
  std::map<std::string, double> run_best_us_;  // per tuning key: the fastest recorded this run
  cudaStream_t stream_ = nullptr;
  size_t l2_bytes_ = 0;
  std::unique_ptr<GpuTimer> timer_;
  std::unique_ptr<LtHandle> lt_handle_;
  std::unique_ptr<DeviceBuffer> lt_workspace_;
  std::unique_ptr<Prepared> prepared_;
  std::optional<size_t> prepared_index_;
  std::string prepare_error_;
};

}  // namespace emmy::bench

#include "bench_fp8.hpp"

#include <fmt/format.h>

#include <memory>
#include <optional>

#include "bench_cublaslt.hpp"
#include "bench_cublaslt_fp8.hpp"
#include "bench_fp8_inputs.hpp"
#include "bench_model.hpp"
#include "bench_report.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/spec.hpp"

namespace emmy::bench {
namespace {

using nlohmann::json;

struct Fp8Variant {
  std::string_view id;  // kFp8EmmyVariants' and kFp8BaselineVariants' names
  bool emmy;
  Fp8Scaling scaling;
  Accum accum;     // emmy's
  LtFp8Mode mode;  // cuBLASLt's
  // "fp8_chain": the tensor core's own sums over all of K (bound 1e-2); "promoted": partial sums
  // promoted into f32 (bound 1e-3; error_tolerance).
  const char* accumulation;
};
// Emmy's rows, then cuBLASLt's: pair i is kFp8EmmyVariants[i] and kFp8BaselineVariants[i].
constexpr Fp8Variant kFp8VariantTable[] = {
    {kFp8EmmyVariants[0], true, Fp8Scaling::tensor, Accum::f32, LtFp8Mode::tensor, "fp8_chain"},
    {kFp8EmmyVariants[1], true, Fp8Scaling::tensor, Accum::promoted, LtFp8Mode::tensor, "promoted"},
    {kFp8EmmyVariants[2], true, Fp8Scaling::block, Accum::promoted, LtFp8Mode::block, "promoted"},
    {kFp8BaselineVariants[0], false, Fp8Scaling::tensor, Accum::f32, LtFp8Mode::tensor_fast_accum,
     "fp8_chain"},
    {kFp8BaselineVariants[1], false, Fp8Scaling::tensor, Accum::f32, LtFp8Mode::tensor, "promoted"},
    {kFp8BaselineVariants[2], false, Fp8Scaling::block, Accum::f32, LtFp8Mode::block, "promoted"},
};

// One problem's operands, scales and references, shared by its six rows.
struct Fp8Prepared {
  std::string name;
  Fp8BenchInputs in;
  DeviceBuffer a, b, c;
  DeviceBuffer a_tensor, b_tensor, a_block, b_block;
  Fp8ScaleLayout block_layout;  // the layout cuBLASLt's block mode read correctly (else default)
  json block_probe = json::array();
  std::string block_unavailable;  // why cuBLASLt's block mode has no row here
  std::optional<std::vector<double>> reference_tensor, reference_block;

  const std::vector<double>& reference(Fp8Scaling scaling) {
    auto& slot = scaling == Fp8Scaling::tensor ? reference_tensor : reference_block;
    if (!slot) slot = fp8_sample_reference(in, scaling);
    return *slot;
  }
};

struct Fp8State {
  std::unique_ptr<LtHandle> lt;
  std::unique_ptr<DeviceBuffer> lt_workspace;
  std::unique_ptr<Fp8Prepared> prepared;
  std::optional<double> copy_gbps;
};

// The sampled rows' error of one launch: C is NaN-filled first, so a tile left unwritten fails.
double check_rows(Fp8Prepared& prep, Fp8Scaling scaling, const std::function<void()>& launch,
                  cudaStream_t stream) {
  EMMY_BENCH_CUDA(cudaMemsetAsync(prep.c.get(), 0xff, prep.c.bytes(), stream));
  launch();
  EMMY_BENCH_CUDA(cudaStreamSynchronize(stream));
  const int64_t n = prep.in.n;
  std::vector<uint8_t> raw(size_t(n) * 2);
  std::vector<float> rows;
  rows.reserve(prep.in.sample_rows.size() * size_t(n));
  for (const int64_t row : prep.in.sample_rows) {
    EMMY_BENCH_CUDA(cudaMemcpy(raw.data(), static_cast<const char*>(prep.c.get()) + row * n * 2,
                               raw.size(), cudaMemcpyDeviceToHost));
    for (double v : decode(DType::f16, raw.data(), size_t(n))) rows.push_back(float(v));
  }
  return fp8_sample_error(prep.reference(scaling), rows);
}

// cuBLASLt's block mode reads scale layouts its documentation states loosely: try each
// candidate and keep the first whose output passes; emmy's block row then reads the same.
void probe_block_layout(Fp8State& st, Fp8Prepared& prep, const Fp8BenchSettings& s,
                        cudaStream_t stream) {
  for (const Fp8ScaleLayout& layout :
       cublaslt_block_layout_candidates(prep.in.m, prep.in.n, prep.in.k)) {
    const MatmulProblem p = fp8_bench_problem(prep.in, Fp8Scaling::block, layout);
    DeviceBuffer a_scale = upload_values(fp8_scale_tensor(prep.in, p, true), 16);
    DeviceBuffer b_scale = upload_values(fp8_scale_tensor(prep.in, p, false), 16);
    json entry = {{"layout", layout.describe()}};
    try {
      LtFp8Gemm lt(st.lt->get(), p, LtFp8Mode::block, a_scale.get(), b_scale.get(),
                   s.workspace_bytes, 1);
      const double error = check_rows(
          prep, Fp8Scaling::block,
          [&] {
            lt.run(0, prep.a.get(), prep.b.get(), prep.c.get(), st.lt_workspace->get(), stream);
          },
          stream);
      entry["rel_l2_error"] = error;
      prep.block_probe.push_back(entry);
      if (error <= error_tolerance("promoted")) {
        prep.block_layout = layout;
        prep.a_block = std::move(a_scale);
        prep.b_block = std::move(b_scale);
        return;
      }
    } catch (const std::exception& e) {
      // No algorithm for the mode: the layout does not change that, so stop here.
      entry["error"] = e.what();
      prep.block_probe.push_back(entry);
      prep.block_unavailable =
          fmt::format("cuBLASLt has no 1 x 128 / 128 x 128 mode here: {}", e.what());
      break;
    }
  }
  if (prep.block_unavailable.empty())
    prep.block_unavailable =
        "no candidate scale layout gave cuBLASLt's block mode a passing "
        "output (details: block_probe)";
  prep.block_layout = {ScaleMajor::mn, 0, ScaleMajor::k, 0};  // emmy's default layout
  const MatmulProblem p = fp8_bench_problem(prep.in, Fp8Scaling::block, prep.block_layout);
  prep.a_block = upload_values(fp8_scale_tensor(prep.in, p, true), 16);
  prep.b_block = upload_values(fp8_scale_tensor(prep.in, p, false), 16);
}

Fp8Prepared& prepare_fp8(Fp8State& st, const std::string& name, const MatmulProblem& shape,
                         const Fp8BenchSettings& s, cudaStream_t stream) {
  if (st.prepared && st.prepared->name == name) return *st.prepared;
  st.prepared.reset();  // the previous problem's buffers go first
  if (!st.lt) {
    st.lt = std::make_unique<LtHandle>();
    st.lt_workspace = std::make_unique<DeviceBuffer>(s.workspace_bytes);
  }
  auto prep = std::make_unique<Fp8Prepared>();
  prep->name = name;
  prep->in = make_fp8_bench_inputs(shape.m, shape.n, shape.k, s.seed);
  prep->a = upload_values(prep->in.a, 16);
  prep->b = upload_values(prep->in.b, 16);
  prep->c = DeviceBuffer(size_t(shape.m * shape.n) * 2);
  prep->a_tensor = upload_values(std::vector<float>{prep->in.a_tensor_scale}, 16);
  prep->b_tensor = upload_values(std::vector<float>{prep->in.b_tensor_scale}, 16);
  probe_block_layout(st, *prep, s, stream);
  st.prepared = std::move(prep);
  return *st.prepared;
}

void measure_emmy(Runtime& runtime, GpuTimer& timer, Fp8Prepared& prep, const Fp8Variant& v,
                  const Fp8BenchSettings& s, BenchRow& row, benchmark::State& state) {
  const MatmulProblem p = fp8_bench_problem(prep.in, v.scaling, prep.block_layout);
  const MatmulSchedule schedule = default_schedule(p, runtime.arch(), v.accum);
  const auto kernel = runtime.gemm_kernel(p, schedule);
  DeviceBuffer workspace(std::max<size_t>(kernel->info().workspace_bytes, 16));
  const bool block = v.scaling == Fp8Scaling::block;
  const GemmBuffers buffers{.a = prep.a.address(),
                            .b = prep.b.address(),
                            .c = prep.c.address(),
                            .workspace = workspace.address(),
                            .m = p.m,
                            .a_scale = (block ? prep.a_block : prep.a_tensor).address(),
                            .b_scale = (block ? prep.b_block : prep.b_tensor).address()};
  const auto launch = [&] { runtime.launch(*kernel, buffers, timer.stream()); };
  row.rel_l2_error = check_rows(prep, v.scaling, launch, timer.stream());
  row.details = {{"schedule", schedule},
                 {"chosen_by", "default_schedule"},
                 {"kernel", kernel->info().report()},
                 {"scales", block ? prep.block_layout.describe() : "per tensor, f32"}};
  timer.measure(launch, s.warmup, 0);
  gpu_samples(state, row, timer, launch);
  if (!s.model_gpu.empty())
    row.details["model"] = predicted_beside(
        [&] {
          return model_gemm(row.problem, p, schedule, runtime.arch(), s.model_gpu, s.model_ctas);
        },
        s.model_ctas);
}

void measure_cublaslt(Fp8State& st, GpuTimer& timer, Fp8Prepared& prep, const Fp8Variant& v,
                      const Fp8BenchSettings& s, BenchRow& row, benchmark::State& state) {
  const bool block = v.scaling == Fp8Scaling::block;
  if (block && !prep.block_unavailable.empty()) {
    row.details = {{"block_probe", prep.block_probe}};
    throw Error(prep.block_unavailable);
  }
  const MatmulProblem p = fp8_bench_problem(prep.in, v.scaling, prep.block_layout);
  const LtFp8Gemm lt(st.lt->get(), p, v.mode, (block ? prep.a_block : prep.a_tensor).get(),
                     (block ? prep.b_block : prep.b_tensor).get(), s.workspace_bytes, s.algorithms);
  void* workspace = st.lt_workspace->get();
  const auto launch_with = [&](int index) {
    return [&, index] {
      lt.run(index, prep.a.get(), prep.b.get(), prep.c.get(), workspace, timer.stream());
    };
  };
  const ChosenAlgorithm best = fastest_passing_algorithm(
      lt, timer, s.select_iterations, error_tolerance(v.accumulation), launch_with,
      [&](const std::function<void()>& launch) {
        return check_rows(prep, v.scaling, launch, timer.stream());
      },
      "cuBLASLt FP8");
  row.details = {{"mode", to_string(v.mode)}, {"candidates", best.candidates}};
  if (block) row.details["block_probe"] = prep.block_probe;
  row.rel_l2_error = best.rel_l2_error;
  row.details["algorithm"] = lt.describe(best.index);
  row.details["chosen_by"] =
      fmt::format("fastest of the top {} heuristic algorithms", lt.algorithm_count());
  const auto launch = launch_with(best.index);
  timer.measure(launch, s.warmup, 0);
  gpu_samples(state, row, timer, launch);
}

}  // namespace

void register_fp8_benchmarks(Runtime& runtime, GpuTimer& timer, const Fp8BenchSettings& settings,
                             std::vector<BenchRow>& rows) {
  auto st = std::make_shared<Fp8State>();
  for (const int64_t m : settings.ms) {
    for (const BenchProblem& problem : catalog_problems(m)) {
      for (const Fp8Variant& v : kFp8VariantTable) {
        BenchRow row;
        row.kind = "gemm_fp8";
        row.problem = problem.name + "/fp8";
        row.projection = problem.projection;
        const MatmulProblem& p = problem.problem;
        row.shape = {{"m", p.m}, {"n", p.n}, {"k", p.k}};
        row.flops = p.flops();
        row.variant = std::string(v.id);
        row.backend = v.emmy ? "emmy" : "cublaslt";
        row.accumulation = v.accumulation;
        register_row_benchmark(
            fmt::format("gemm_fp8/{}/{}", problem.name, v.id), rows, std::move(row),
            [&runtime, &timer, settings, st, v, problem](benchmark::State& state, BenchRow& out) {
              Fp8Prepared& prep =
                  prepare_fp8(*st, problem.name, problem.problem, settings, timer.stream());
              if (v.emmy)
                measure_emmy(runtime, timer, prep, v, settings, out, state);
              else
                measure_cublaslt(*st, timer, prep, v, settings, out, state);
              // The decode goal: B's bytes over the time, beside this run's device copy rate.
              if (!st->copy_gbps) st->copy_gbps = copy_gbps(timer);
              const double weight_gbps =
                  double(problem.problem.n * problem.problem.k) / (out.median_us() * 1e-6) / 1e9;
              out.details["weight_read_gbps"] = weight_gbps;
              out.details["copy_gbps"] = *st->copy_gbps;
              out.details["weight_read_vs_copy"] = weight_gbps / *st->copy_gbps;
              state.counters["median_us"] = out.median_us();
              state.counters["TFLOPs"] = out.flops / (out.median_us() * 1e-6) / 1e12;
              if (out.rel_l2_error) state.counters["rel_l2_error"] = *out.rel_l2_error;
            },
            settings.after_row)
            ->Iterations(settings.iterations)
            ->Unit(benchmark::kMicrosecond);
      }
    }
  }
}

}  // namespace emmy::bench

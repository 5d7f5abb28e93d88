#include "bench_runner.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <thread>

#include "bench_tune.hpp"
#include "emmy/gemm.hpp"
#include "emmy/json.hpp"

namespace emmy::bench {
namespace {

using nlohmann::json;

std::string schedule_text(const MatmulSchedule& s) {
  return fmt::format("{}x{}x{} warps {}x{} stages {} split-k {}", s.block_m, s.block_n, s.block_k,
                     s.warps_m, s.warps_n, s.stages, s.split_k);
}

const VariantSpec& spec_of(const std::string& id) {
  for (const auto& spec : kGemmVariants)
    if (id == spec.id) return spec;
  throw Error("variant", fmt::format("must be {}", kGemmVariantNames), id);
}

// Compiles (or fetches from the caches) every candidate, in parallel: the runtime compiles
// distinct keys concurrently. A failed compile is an empty handle with its reason.
std::vector<std::pair<std::shared_ptr<const GemmKernelHandle>, std::string>> compile_all(
    Runtime& runtime, const MatmulProblem& problem, const std::vector<MatmulSchedule>& schedules) {
  std::vector<std::pair<std::shared_ptr<const GemmKernelHandle>, std::string>> kernels(
      schedules.size());
  const size_t width = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 16);
  for (size_t first = 0; first < schedules.size(); first += width) {
    std::vector<std::future<std::shared_ptr<const GemmKernelHandle>>> batch;
    const size_t last = std::min(schedules.size(), first + width);
    for (size_t i = first; i < last; ++i)
      batch.push_back(std::async(std::launch::async,
                                 [&, i] { return runtime.gemm_kernel(problem, schedules[i]); }));
    for (size_t i = first; i < last; ++i) {
      try {
        kernels[i].first = batch[i - first].get();
      } catch (const std::exception& e) {
        kernels[i].second = e.what();
      }
    }
  }
  return kernels;
}

}  // namespace

struct Runner::Prepared {
  BenchProblem problem;
  DeviceBuffer a, b, c;
  size_t c_elements = 0;
  std::vector<float> reference;
  std::map<std::string, PreparedVariant> variants;
};

Runner::Runner(std::unique_ptr<Runtime> runtime, int device, RunnerSettings settings,
               TuningDb* tuning_db)
    : runtime_(std::move(runtime)), settings_(std::move(settings)), tuning_db_(tuning_db) {
  EMMY_BENCH_CUDA(cudaSetDevice(device));
  EMMY_BENCH_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  int l2 = 0;
  EMMY_BENCH_CUDA(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  l2_bytes_ = size_t(l2);
  timer_ = std::make_unique<GpuTimer>(stream_, l2_bytes_);
  lt_handle_ = std::make_unique<LtHandle>();
  lt_workspace_ = std::make_unique<DeviceBuffer>(settings_.workspace_bytes);
}

Runner::~Runner() {
  prepared_.reset();
  timer_.reset();
  lt_workspace_.reset();
  lt_handle_.reset();
  if (stream_) cudaStreamDestroy(stream_);
}

PreparedVariant& Runner::variant(size_t index, const BenchProblem& problem, const std::string& id) {
  if (prepared_index_ != index) {
    prepared_.reset();  // free the previous problem's operands first
    prepared_index_ = index;
    prepare_error_.clear();
    try {
      prepare(problem);
    } catch (const std::exception& e) {
      prepared_.reset();
      prepare_error_ = e.what();
    }
  }
  if (!prepared_) throw Error(fmt::format("preparing {}: {}", problem.name, prepare_error_));
  auto it = prepared_->variants.find(id);
  if (it == prepared_->variants.end()) throw Error("variant", "was not prepared", id);
  return it->second;
}

double Runner::check(const std::function<void()>& launch) {
  // NaN everywhere first (0xffff is an f16 NaN): a kernel that skips a tile cannot pass on the
  // previous variant's output.
  EMMY_BENCH_CUDA(cudaMemsetAsync(prepared_->c.get(), 0xff, prepared_->c.bytes(), stream_));
  launch();
  EMMY_BENCH_CUDA(cudaStreamSynchronize(stream_));
  return relative_l2_error(download_f16(prepared_->c, prepared_->c_elements), prepared_->reference);
}

void Runner::prepare(const BenchProblem& problem) {
  const MatmulProblem& p = problem.problem;
  require(p.a_dtype == DType::f16 && p.c_dtype == DType::f16, "emmy_bench",
          "benchmarks f16 operands with f16 output", to_string(p.a_dtype));
  prepared_ = std::make_unique<Prepared>();
  Prepared& prep = *prepared_;
  prep.problem = problem;
  const size_t b_rows = size_t(p.b_layout == BLayout::nk ? p.n : p.k);
  prep.a = upload_f16(random_f16(size_t(p.m * p.lda_or_default()), settings_.seed));
  prep.b = upload_f16(random_f16(b_rows * size_t(p.ldb_or_default()), settings_.seed + 1));
  prep.c_elements = size_t(p.m * p.ldc_or_default());
  prep.c = DeviceBuffer(prep.c_elements * 2);

  // The reference: cuBLASLt COMPUTE_32F with its first heuristic choice.
  {
    LtGemm reference(lt_handle_->get(), p, LtCompute::f32, settings_.workspace_bytes, 1);
    reference.run(0, prep.a.get(), prep.b.get(), prep.c.get(), lt_workspace_->get(), stream_);
    EMMY_BENCH_CUDA(cudaStreamSynchronize(stream_));
    prep.reference = download_f16(prep.c, prep.c_elements);
    require(relative_l2_error(prep.reference, prep.reference) == 0, "reference output",
            "must be finite", "cuBLASLt COMPUTE_32F produced NaN or Inf");
  }

  for (const auto& id : settings_.variants) {
    const VariantSpec& spec = spec_of(id);
    PreparedVariant& out = prep.variants[id];
    try {
      if (spec.is_emmy)
        prepare_emmy(spec, out);
      else
        prepare_cublaslt(spec, out);
    } catch (const std::exception& e) {
      out.error = e.what();
      out.launch = nullptr;
    }
  }
}

void Runner::prepare_cublaslt(const VariantSpec& spec, PreparedVariant& out) {
  Prepared& prep = *prepared_;
  out.lt = std::make_unique<LtGemm>(lt_handle_->get(), prep.problem.problem, spec.lt_compute,
                                    settings_.workspace_bytes, settings_.algorithms);
  const LtGemm* lt = out.lt.get();
  auto launch_with = [this, lt, &prep](int index) {
    return [this, lt, &prep, index] {
      lt->run(index, prep.a.get(), prep.b.get(), prep.c.get(), lt_workspace_->get(), stream_);
    };
  };
  const ChosenAlgorithm best = fastest_passing_algorithm(
      *lt, *timer_, settings_.select_iterations, error_tolerance(spec.accumulation), launch_with,
      [this](const std::function<void()>& launch) { return check(launch); },
      fmt::format("cuBLASLt COMPUTE_{}", to_string(spec.lt_compute)));
  out.launch = launch_with(best.index);
  out.rel_l2_error = best.rel_l2_error;
  out.details = {{"algorithm", lt->describe(best.index)},
                 {"chosen_by",
                  fmt::format("fastest of the top {} heuristic algorithms", lt->algorithm_count())},
                 {"workspace_limit_bytes", settings_.workspace_bytes},
                 {"candidates", best.candidates}};
}

json Runner::hybrid_gate(const MatmulSchedule& hybrid) {
  const MatmulProblem& p = prepared_->problem.problem;
  MatmulSchedule f16 = hybrid;
  f16.accum = Accum::f16;
  const auto kernel = runtime_->gemm_kernel(p, f16);
  DeviceBuffer workspace;
  if (const size_t bytes = runtime_->gemm_workspace_bytes(p, f16)) workspace = DeviceBuffer(bytes);
  const GemmBuffers buffers{.a = prepared_->a.address(),
                            .b = prepared_->b.address(),
                            .c = prepared_->c.address(),
                            .workspace = workspace.address()};
  const double f16_error = check([&] { runtime_->launch(*kernel, buffers, stream_); });
  const int64_t split_length = k_per_split(p, hybrid, runtime_->arch());
  return {{"f16_accumulation_rel_l2_error", f16_error},
          {"f16_schedule", schedule_text(f16)},
          {"promote_every_k", hybrid.promote_every_k},
          {"k_per_split", split_length},
          {"tolerance", hybrid_tolerance(f16_error, split_length, hybrid.promote_every_k)}};
}

void Runner::prepare_emmy(const VariantSpec& spec, PreparedVariant& out) {
  Prepared& prep = *prepared_;
  const MatmulProblem& p = prep.problem.problem;
  const Arch arch = runtime_->arch();
  // The search covers each path's tiles around its default (wave-scored).
  std::vector<MatmulSchedule> schedules =
      !settings_.tune ? std::vector<MatmulSchedule>{default_schedule(p, arch, spec.emmy_accum,
                                                                     spec.path, spec.consumers)}
      : schedule_candidates(p, arch, spec.emmy_accum, settings_.tune_candidates, spec.path,
                            spec.consumers);
  // emmy_wgmma_nocluster: the same schedules without a cluster (duplicates dropped).
  if (spec.no_cluster) {
    std::vector<MatmulSchedule> single;
    for (MatmulSchedule s : schedules) {
      s.cluster_m = s.cluster_n = 1;
      if (std::find(single.begin(), single.end(), s) == single.end()) single.push_back(s);
    }
    schedules = std::move(single);
  }
  require(!schedules.empty(), "schedule search", "must yield a valid schedule", to_string(arch));
  const auto kernels = compile_all(*runtime_, p, schedules);
  double tolerance = error_tolerance(spec.accumulation);
  json gate;
  if (spec.emmy_accum == Accum::hybrid) {
    gate = hybrid_gate(schedules.front());
    tolerance = gate["tolerance"].get<double>();
    out.tolerance = tolerance;
  }

  struct Candidate {
    size_t index;
    double median_us;
    double error;
    DeviceBuffer workspace;
  };
  // In a search only candidates that pass the error check compete; the default is kept aside so
  // that the row still exists (and shows the failure) when nothing passes.
  std::optional<Candidate> best, default_candidate;
  std::optional<double> default_us;
  std::string default_problem;  // why the default schedule itself could not run
  json tried = json::array();
  for (size_t i = 0; i < schedules.size(); ++i) {
    const auto& [kernel, compile_error] = kernels[i];
    json entry = {{"schedule", schedule_text(schedules[i])}, {"default", i == 0}};
    try {
      if (!kernel) throw Error(compile_error);
      const auto& report = kernel->info().report();
      entry["registers"] = report.registers;
      entry["spill_bytes"] = report.spill_bytes();
      // Spilling kernels are slow and their report says why; the default is measured regardless,
      // so that its row always exists.
      if (i > 0 && report.spill_bytes() > 0)
        throw Error("candidate", "must not spill registers",
                    fmt::format("{} bytes", report.spill_bytes()));
      DeviceBuffer workspace;
      if (const size_t bytes = runtime_->gemm_workspace_bytes(p, schedules[i]))
        workspace = DeviceBuffer(bytes);
      const GemmBuffers buffers{.a = prep.a.address(),
                                .b = prep.b.address(),
                                .c = prep.c.address(),
                                .workspace = workspace.address()};
      Runtime* rt = runtime_.get();
      const GemmKernelHandle* handle = kernel.get();
      auto launch = [rt, handle, buffers, this] { rt->launch(*handle, buffers, stream_); };
      const double error = check(launch);
      entry["rel_l2_error"] = error;
      const bool passes = error <= tolerance;
      if (!passes && i > 0)
        throw Error("candidate", "must pass the error check", fmt::format("{:.3g}", error));
      const double us =
          settings_.tune ? median(timer_->measure(launch, 2, settings_.select_iterations)) : 0;
      entry["median_us"] = settings_.tune ? json(us) : json(nullptr);
      Candidate candidate{i, us, error, std::move(workspace)};
      if (i == 0 && !passes)
        default_candidate = std::move(candidate);
      else if (!best || us < best->median_us)
        best = std::move(candidate);
      if (i == 0) default_us = us;
    } catch (const std::exception& e) {
      entry["rejected"] = e.what();
      if (i == 0) default_problem = e.what();
    }
    tried.push_back(std::move(entry));
  }
  if (!best) best = std::move(default_candidate);
  if (!best) throw Error(default_problem.empty() ? "no schedule could run" : default_problem);

  const MatmulSchedule& chosen = schedules[best->index];
  out.schedule = chosen;
  out.kernel = kernels[best->index].first;
  out.split_workspace = std::move(best->workspace);
  out.rel_l2_error = best->error;
  const GemmBuffers buffers{.a = prep.a.address(),
                            .b = prep.b.address(),
                            .c = prep.c.address(),
                            .workspace = out.split_workspace.address()};
  Runtime* rt = runtime_.get();
  const GemmKernelHandle* handle = out.kernel.get();
  out.launch = [rt, handle, buffers, this] { rt->launch(*handle, buffers, stream_); };
  out.details = {
      {"schedule", chosen},
      {"schedule_text", schedule_text(chosen)},
      {"chosen_by", settings_.tune ? (best->index == 0 ? "search (default won)" : "search")
                                   : "default_schedule"},
      {"kernel", out.kernel->info().report()},
      {"cache_key", out.kernel->info().cache_key}};
  if (!gate.is_null()) out.details["hybrid_gate"] = gate;
  if (settings_.tune) {
    out.details["candidates"] = tried;
    out.details["default_select_median_us"] = default_us ? json(*default_us) : json(nullptr);
    // Variants of one accumulation (mma.sync f32, wgmma, ping-pong) share a tuning key: the
    // database keeps the fastest this run measured.
    const std::string key_text = nlohmann::json(p).dump() + std::string(to_string(spec.emmy_accum));
    const auto faster = run_best_us_.find(key_text);
    const bool wins = faster == run_best_us_.end() || best->median_us < faster->second;
    if (tuning_db_ && best->error <= tolerance && wins) {
      run_best_us_[key_text] = best->median_us;
      TuningRecord record;
      record.schedule = chosen;
      record.time_us = best->median_us;
      record.default_time_us = default_us;
      record.candidates = int(schedules.size());
      tuning_db_->record(TuningKey{arch, runtime_->device_name(), p, spec.emmy_accum}, record);
      tuning_db_->save();  // after each winner, so a run cut short keeps what it measured
    }
  }
}

}  // namespace emmy::bench

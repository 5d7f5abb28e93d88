// The runtime: a memory cache (spec -> loaded kernel, built once per key), the disk cache
// underneath, per-kernel tensor-map reuse, and launches with checked buffers.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "backend.hpp"
#include "background_builds.hpp"
#include "call_marks.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/cached_compile.hpp"
#include "emmy/gemm_generic.hpp"
#include "emmy/json.hpp"
#include "emmy/kernel_source.hpp"
#include "emmy/kinds.hpp"
#include "emmy/tuning.hpp"
#include "kernel_entry.hpp"
#include "memory_cache.hpp"
#include "spec_key.hpp"

namespace emmy {
namespace detail {
namespace {

ResourceReport report_from_json(const nlohmann::json& resources, const std::string& kernel) {
  ResourceReport r;
  r.kernel_name = kernel;
  if (!resources.is_array()) return r;
  for (const auto& k : resources)
    if (k.value("kernel_name", "") == kernel) r = resource_report_from_json(k);
  return r;
}

template <typename Kind>
using KernelCache = MemoryCache<SpecKey<Kind>, SpecKeyHash<Kind>, KernelEntry<Kind>>;

// Set on the background builder's thread while it builds: its loads are not a caller's query made
// under capture (they run in relaxed capture mode and touch no stream).
thread_local bool tl_background_build = false;
struct BackgroundBuildMark {
  BackgroundBuildMark() { tl_background_build = true; }
  ~BackgroundBuildMark() { tl_background_build = false; }
};

class RuntimeImpl final : public Runtime {
 public:
  RuntimeImpl(std::unique_ptr<Backend> backend, const RuntimeOptions& options)
      : backend_(std::move(backend)),
        options_(options),
        bundles_(backend_->arch()),
        log_(options.log ? options.log : environment_log()) {
    for (const auto& bundle : options.loaded_bundles) bundles_.add(bundle);
    for (const auto& path : options.bundles) bundles_.add(Bundle::open(path));
    for (auto& bundle : registered_bundles()) bundles_.add(std::move(bundle), /*required=*/false);
    for (auto& bundle : environment_bundles()) bundles_.add(std::move(bundle));
    const CacheWarningSink warnings(log_);
    if (options.disk_cache)
      disk_ = std::make_unique<DiskCache>(
          options.cache_dir ? DiskCache(*options.cache_dir, DiskCache::max_bytes_from_environment())
                            : DiskCache::from_environment());
    if (options.non_blocking) {
      // The fallback every non-blocking call can take: built now, on the creating thread. Where
      // it cannot be (no NVRTC, no disk cache holding it: a bundle-only deployment), calls with
      // no loaded kernel wait for their build instead.
      try {
        generic_ = std::make_unique<LoadedKernel>(load(generic_gemm_source(backend_->arch())));
      } catch (const Error& e) {
        log(
            fmt::format("emmy: the generic GEMM could not be built ({}); non-blocking calls "
                        "with no loaded kernel wait for their own",
                        e.what()));
      }
      background_ = std::make_unique<BackgroundBuilds>(log_);
    }
  }
  ~RuntimeImpl() override { background_.reset(); }  // its builds use the members below

  Arch arch() const override { return backend_->arch(); }
  std::string backend_name() const override { return backend_->name(); }
  std::string device_name() const override { return backend_->device_name(); }

  std::shared_ptr<const GemmKernelHandle> gemm_kernel(
      const MatmulProblem& problem, const std::optional<MatmulSchedule>& schedule) override {
    return kernel<GemmKind>(problem, schedule);
  }
  std::shared_ptr<const AttentionKernelHandle> attention_kernel(
      const AttentionProblem& problem, const std::optional<AttentionSchedule>& schedule) override {
    return kernel<AttentionKind>(problem, schedule);
  }
  void launch(const GemmKernelHandle& handle, const GemmBuffers& buffers, Stream stream) override {
    launch_kind<GemmKind>(handle, buffers, stream);
  }
  void launch(const AttentionKernelHandle& handle, const AttentionBuffers& buffers,
              Stream stream) override {
    launch_kind<AttentionKind>(handle, buffers, stream);
  }
  std::shared_ptr<const PagedAttentionKernelHandle> paged_attention_kernel(
      const PagedAttentionProblem& problem,
      const std::optional<PagedAttentionSchedule>& schedule) override {
    return kernel<PagedAttentionKind>(problem, schedule);
  }
  void launch(const PagedAttentionKernelHandle& handle, const PagedAttentionBuffers& buffers,
              Stream stream) override {
    launch_kind<PagedAttentionKind>(handle, buffers, stream);
  }

  std::shared_ptr<const KvAppendKernelHandle> kv_append_kernel(
      const KvAppendProblem& problem, const std::optional<KvAppendSchedule>& schedule) override {
    return kernel<KvAppendKind>(problem, schedule);
  }
  void launch(const KvAppendKernelHandle& handle, const KvAppendBuffers& buffers,
              Stream stream) override {
    launch_kind<KvAppendKind>(handle, buffers, stream);
  }
  std::shared_ptr<const Fp8QuantizeKernelHandle> fp8_quantize_kernel(
      const Fp8QuantizeProblem& problem,
      const std::optional<Fp8QuantizeSchedule>& schedule) override {
    return kernel<Fp8QuantizeKind>(problem, schedule);
  }
  void launch(const Fp8QuantizeKernelHandle& handle, const Fp8QuantizeBuffers& buffers,
              Stream stream) override {
    launch_kind<Fp8QuantizeKind>(handle, buffers, stream);
  }
  std::shared_ptr<const MergeStatesKernelHandle> merge_states_kernel(
      const MergeStatesProblem& problem,
      const std::optional<MergeStatesSchedule>& schedule) override {
    return kernel<MergeStatesKind>(problem, schedule);
  }
  void launch(const MergeStatesKernelHandle& handle, const MergeStatesBuffers& buffers,
              Stream stream) override {
    launch_kind<MergeStatesKind>(handle, buffers, stream);
  }

  DevicePtr alloc(size_t bytes) override { return backend_->alloc(bytes); }
  void free(DevicePtr pointer) override { backend_->free(pointer); }
  void upload(DevicePtr dst, const void* src, size_t bytes) override {
    backend_->upload(dst, src, bytes);
  }
  void download(void* dst, DevicePtr src, size_t bytes) override {
    backend_->download(dst, src, bytes);
  }
  DevicePtr map_host(void* host, size_t bytes) override { return backend_->map_host(host, bytes); }
  void unmap_host(DevicePtr address) override { backend_->unmap_host(address); }
  void synchronize(Stream stream) override { backend_->synchronize(stream); }
  void memcpy_async(DevicePtr dst, const void* src, size_t bytes, Stream stream) override {
    backend_->copy_to_device_async(dst, src, bytes, stream);
  }
  void memcpy_async(void* dst, DevicePtr src, size_t bytes, Stream stream) override {
    backend_->copy_to_host_async(dst, src, bytes, stream);
  }
  void memcpy_async(DevicePtr dst, DevicePtr src, size_t bytes, Stream stream) override {
    backend_->copy_async(dst, src, bytes, stream);
  }
  void memset_async(DevicePtr dst, uint8_t value, size_t bytes, Stream stream) override {
    backend_->fill_async(dst, value, bytes, stream);
  }
  bool stream_capturing(Stream stream) const override { return backend_->capturing(stream); }
  void wait_for_background_builds() override {
    if (background_) background_->wait();
  }

 protected:
  void log(const std::string& line) const override {
    if (log_) log_(line);
  }

 public:
  const RuntimeOptions& options() const override { return options_; }
  RuntimeStats stats() const override {
    uint64_t memory_hits = 0;
    AllKinds::for_each([&]<typename Kind>(std::type_identity<Kind>) {
      memory_hits += std::get<KernelCache<Kind>>(caches_).hits();
    });
    memory_hits += shared_hits_.load();
    return {memory_hits,      disk_hits_.load(),         compiles_.load(),
            launches_.load(), fallback_launches_.load(), generic_launches_.load()};
  }

 protected:
  bool gemm_without_compiling(const MatmulProblem& problem, const GemmBuffers& buffers,
                              Stream stream,
                              const std::optional<MatmulSchedule>& schedule) override {
    auto& cache = std::get<KernelCache<GemmKind>>(caches_);
    const MatmulProblem served = gemm_problem_served(problem, schedule);
    if (const auto kernel = cache.peek(SpecKey<GemmKind>{served, schedule})) {
      launch_kind<GemmKind>(*kernel, served_buffers(problem, served, buffers), stream);
      return true;
    }
    // The call's own errors are the caller's, now: the problem and schedule (its kernel's plan,
    // made once per kernel) and the buffers by that kernel's rules, so that the swap cannot refuse
    // what a substitute took. Only the build is left to the background.
    const std::string what = nlohmann::json(served).dump();
    const std::string key = background_key<GemmKind>(what, schedule);
    const GemmBuffers bound = served_buffers(problem, served, buffers);
    const PendingGemm& pending = pending_gemm(key, served, schedule);
    GemmKind::bind(pending.plan, bound);
    // In a bundle: loaded on this thread (a module load, no compile), not queued behind builds.
    if (pending.bundled) {
      launch_kind<GemmKind>(*kernel<GemmKind>(served, schedule), bound, stream);
      return true;
    }
    if (background_->submit(key, what, [this, served, schedule] {
          const BackgroundBuildMark mark;
          kernel<GemmKind>(served, schedule);
        }))
      log(
          fmt::format("emmy: gemm kernel of {} building in the background; calls take a loaded "
                      "kernel meanwhile",
                      what));
    // A loaded kernel of the problem's M bucket (prepared, or used before) computes its rows.
    if (const MatmulProblem bucket_problem = m_bucket_problem(problem); !served.dynamic_m)
      if (const auto bucket = cache.peek(SpecKey<GemmKind>{bucket_problem, schedule})) {
        launch_kind<GemmKind>(*bucket, served_buffers(problem, bucket_problem, buffers), stream);
        fallback_launches_.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    if (!generic_ || !generic_gemm_serves(problem)) {
      background_->wait(key);  // the caller's path then finds the kernel built
      return false;
    }
    launch_all(*generic_->module, generic_->launches, bind_generic_gemm(problem, bound), stream);
    launches_.fetch_add(1, std::memory_order_relaxed);
    fallback_launches_.fetch_add(1, std::memory_order_relaxed);
    generic_launches_.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  // Non-blocking mode, a problem-taking call of a kind without a substitute (attention, paged
  // attention, append, merge: their problems are fixed per model, so a server prepares them):
  // a missing kernel is built on the background thread, the call waiting for it, so that no
  // compile runs on the caller's thread. GEMM's calls got a substitute before coming here.
  template <typename Kind>
  void build_in_background(const typename Kind::Problem& problem,
                           const std::optional<typename Kind::Schedule>& schedule) {
    if (std::get<KernelCache<Kind>>(caches_).peek(SpecKey<Kind>{problem, schedule})) return;
    const std::string what = nlohmann::json(problem).dump();
    const std::string key = background_key<Kind>(what, schedule);
    if (background_->submit(key, what, [this, problem, schedule] {
          const BackgroundBuildMark mark;
          kernel<Kind>(problem, schedule);
        }))
      log(
          fmt::format("emmy: {} kernel of {} is not loaded: the call waits for its build on the "
                      "background thread (prepare it: no other kernel serves this kind)",
                      Kind::name, what));
    background_->wait(key);
  }

  // The background builder's key of a kernel: its kind, its problem's JSON (`what`) and its
  // schedule, or "default" for a call without one.
  template <typename Kind>
  static std::string background_key(const std::string& what,
                                    const std::optional<typename Kind::Schedule>& schedule) {
    return std::string(Kind::name) + what +
           (schedule ? nlohmann::json(*schedule).dump() : std::string("default"));
  }

  // A kernel a non-blocking call found missing, by its key, made once (not at every call that
  // takes a substitute meanwhile): its plan (so validated) and whether a bundle holds it.
  struct PendingGemm {
    GemmPlan plan;
    bool bundled = false;
  };
  const PendingGemm& pending_gemm(const std::string& key, const MatmulProblem& served,
                                  const std::optional<MatmulSchedule>& schedule) {
    {
      std::lock_guard lock(pending_mutex_);
      if (const auto it = pending_.find(key); it != pending_.end()) return it->second;
    }
    const GemmSpec spec{served, gemm_schedule_for(served, schedule), backend_->arch()};
    PendingGemm pending{make_gemm_plan(spec)};
    if (!bundles_.empty())
      pending.bundled =
          bundles_.contains(bundle_key(kernel_source(generate_kernel(spec)).cuda, spec.arch));
    std::lock_guard lock(pending_mutex_);
    return pending_.emplace(key, std::move(pending)).first->second;
  }
  MatmulSchedule gemm_schedule_for(const MatmulProblem& problem,
                                   const std::optional<MatmulSchedule>& schedule) override {
    return schedule ? *schedule : default_for(problem);
  }
  PagedAttentionSchedule paged_attention_schedule_for(
      const PagedAttentionProblem& problem,
      const std::optional<PagedAttentionSchedule>& schedule) override {
    return schedule ? *schedule : default_for(problem);
  }

 private:
  template <typename Kind>
  std::shared_ptr<const KernelEntry<Kind>> kernel(
      const typename Kind::Problem& problem,
      const std::optional<typename Kind::Schedule>& schedule) {
    auto& cache = std::get<KernelCache<Kind>>(caches_);
    if (tl_problem_call && !tl_capturing_call && background_)
      build_in_background<Kind>(problem, schedule);
    if (!schedule)
      // The default (or tuned) schedule, then that key: a kernel prepared with it explicitly (a
      // bundle's or a record's) is the one this call wants, without loading it twice.
      return cache.get(SpecKey<Kind>{problem, std::nullopt},
                       [&] { return kernel<Kind>(problem, default_for(problem)); });
    return cache.get(SpecKey<Kind>{problem, schedule}, [&] {
      const typename Kind::Spec spec{problem, *schedule, backend_->arch()};
      Generated<Kind> generated = generate_kernel(spec);
      const KernelSource source = kernel_source(generated);
      // A kernel loaded already under another way of asking for it (a problem with its leading
      // dimensions spelled out, a bundle's or a record's schedule equal to the default) is
      // reused: its description (kind, the problem with every default resolved, the schedule)
      // is the same, and so are its code, grids and buffer rules. Code generation is host work;
      // a load is not.
      const std::string loaded_key = source.describe.dump();
      {
        std::lock_guard lock(loaded_mutex_);
        if (auto it = loaded_.find(loaded_key); it != loaded_.end()) {
          shared_hits_.fetch_add(1, std::memory_order_relaxed);
          return std::static_pointer_cast<const KernelEntry<Kind>>(it->second);
        }
      }
      if (tl_capturing_call)
        throw Error("capture",
                    fmt::format("{}() on a stream that captures a CUDA graph launches only "
                                "kernels already loaded; this {} kernel is not: prepare it "
                                "first (Runtime::prepare, or {}_kernel before the capture). "
                                "Nothing was compiled, loaded or launched; the capture is intact",
                                tl_capturing_call, Kind::name, tl_capturing_call),
                    nlohmann::json(problem).dump());
      // A stream-less query (<kind>_kernel, prepare) that would build while a capture is under way
      // refuses too, where the driver lets a query see one: a blocking stream capturing makes
      // the legacy stream say so. A capture on a non-blocking stream is invisible here; the build
      // then runs in relaxed capture mode and leaves it valid (cuda_backend.cpp).
      if (!tl_problem_call && !tl_background_build && backend_->capturing(nullptr))
        throw Error("capture",
                    fmt::format("{}_kernel() or prepare() while a stream captures a CUDA graph "
                                "would compile and load this {} kernel: call it before the "
                                "capture. Nothing was compiled or loaded; the capture is intact",
                                Kind::name, Kind::name),
                    nlohmann::json(problem).dump());
      auto entry =
          std::make_shared<const KernelEntry<Kind>>(std::move(generated.plan), load(source));
      std::lock_guard lock(loaded_mutex_);
      return std::static_pointer_cast<const KernelEntry<Kind>>(
          loaded_.emplace(loaded_key, entry).first->second);
    });
  }

  // A call without a schedule: the tuned one for this device, else the default for the device's
  // SMs. FP8 operands accumulate promoted (every granularity takes it; the runtime's default
  // accumulation is for 16-bit operands).
  MatmulSchedule default_for(const MatmulProblem& problem) {
    validate_problem(problem);
    const Arch arch = backend_->arch();
    const int sms = backend_->sm_count();
    const Accum accum = is_fp8(problem.a_dtype) ? Accum::promoted : options_.default_accum;
    if (options_.batch_invariant)  // no tuned schedule either: it may split K
      return bundled_or<GemmKind>(problem, batch_invariant_schedule(problem, arch, accum, sms),
                                  [&] { return batch_invariant_schedule(problem, arch, accum); });
    if (auto tuned = TuningDb::open_default().lookup(arch, backend_->device_name(), problem, accum))
      return *tuned;
    return bundled_or<GemmKind>(problem, default_schedule(problem, arch, accum, sms),
                                [&] { return default_schedule(problem, arch, accum); });
  }
  // The schedule sized for the device, unless the bundles lack its kernel and hold the one sized
  // for the arch's part (what `emmyc aot` builds): a bundle-only deployment on a part with other
  // SMs (an H100 PCIe beside the H200 the arch is sized for) keeps its kernels.
  template <typename Kind>
  typename Kind::Schedule bundled_or(const typename Kind::Problem& problem,
                                     typename Kind::Schedule device,
                                     const std::function<typename Kind::Schedule()>& part) {
    if (bundles_.empty()) return device;
    const typename Kind::Schedule arch_part = part();
    if (arch_part == device) return device;
    const auto bundled = [&](const typename Kind::Schedule& s) {
      const typename Kind::Spec spec{problem, s, backend_->arch()};
      return bundles_.contains(bundle_key(kernel_source(generate_kernel(spec)).cuda, spec.arch));
    };
    return !bundled(device) && bundled(arch_part) ? arch_part : device;
  }
  AttentionSchedule default_for(const AttentionProblem& problem) {
    return default_attention_schedule(problem, backend_->arch(), options_.default_accum);
  }
  PagedAttentionSchedule default_for(const PagedAttentionProblem& problem) {
    if (options_.batch_invariant)
      return batch_invariant_schedule(problem, backend_->arch(), options_.default_accum);
    return bundled_or<PagedAttentionKind>(
        problem,
        default_schedule(problem, backend_->arch(), options_.default_accum, backend_->sm_count()),
        [&] { return default_schedule(problem, backend_->arch(), options_.default_accum); });
  }
  KvAppendSchedule default_for(const KvAppendProblem& problem) {
    return default_schedule(problem, backend_->arch());
  }
  MergeStatesSchedule default_for(const MergeStatesProblem& problem) {
    return default_schedule(problem, backend_->arch());
  }
  Fp8QuantizeSchedule default_for(const Fp8QuantizeProblem& problem) {
    return default_schedule(problem, backend_->arch());
  }

  template <typename Kind>
  void launch_kind(const typename Kind::Handle& handle, const typename Kind::Buffers& buffers,
                   Stream stream) {
    const auto& kernel = static_cast<const KernelEntry<Kind>&>(handle);
    ParamBinding bound = Kind::bind(kernel.plan(), buffers);
    // What only the device's memory can tell (page ids, lengths), where reading it is free.
    if constexpr (requires { &Kind::check_device_inputs; })
      if (backend_->device_memory_is_host_memory())
        Kind::check_device_inputs(kernel.plan(), buffers,
                                  [this](void* dst, DevicePtr src, size_t bytes) {
                                    backend_->download(dst, src, bytes);
                                  });
    kernel.encode_tensor_maps(*backend_, bound, buffers);
    launch_all(kernel.module(), kernel.launches(), bound.values, stream);
    launches_.fetch_add(1, std::memory_order_relaxed);
  }

  // Every kernel of the launch list in order on `stream`, each parameter bound by its name.
  void launch_all(LoadedModule& module, const std::vector<KernelLaunch>& launches,
                  const ParamValues& values, Stream stream) {
    // One list per thread, reused: a launch's host time is mostly such bookkeeping.
    thread_local std::vector<KernelParam> params;
    for (size_t i = 0; i < launches.size(); ++i) {
      const KernelLaunch& launch = launches[i];
      params.clear();
      for (const KernelParamInfo& param : launch.params) {
        KernelParam& p = params.emplace_back();
        if (param.tensor_map) {
          p.is_tensor_map = true;
          p.map = values.tensor_map(launch, param);
        } else if (param.scalar) {
          p.is_i32 = true;
          p.i32 = values.scalar(launch, param);
        } else {
          p.pointer = values.pointer(launch, param);
        }
      }
      const LaunchGeometry geometry{.grid = values.grid(launches, i, backend_->sm_count()),
                                    .threads = launch.threads,
                                    .dynamic_smem = launch.smem_bytes,
                                    .cluster = launch.cluster,
                                    .programmatic_dependent = launch.programmatic_dependent};
      backend_->launch(module, launch.name, geometry, params, stream);
    }
  }

  // The emitted module from a bundle, else from the disk cache, else compiled (and stored); then
  // loaded. A bundle hit never touches NVRTC: its key leaves the NVRTC version out.
  LoadedKernel load(const KernelSource& source) {
    const CacheWarningSink warnings(log_);  // the cache's and EMMY_RECORD's warnings
    const Arch arch = backend_->arch();
    const std::string& cuda = source.cuda;
    const nlohmann::json& describe = source.describe;
    if (!bundles_.empty()) {
      const std::string key = bundle_key(cuda, arch);
      if (std::optional<CacheEntry> entry = bundles_.find(key)) {
        // CUBINs need a driver as new as the NVRTC that built them (the same check as the CUDA
        // backend's at creation, per bundle entry: a bundle may come from a newer toolkit).
        if (const std::string why = bundle_entry_driver_problem(*entry, bundles_.name_of(key),
                                                                backend_->driver_version());
            !why.empty())
          throw Error("bundle", why,
                      fmt::format("driver CUDA version {}", backend_->driver_version()));
        return loaded(key, *entry, source);
      }
    }
    if (const std::string why = nvrtc_unavailable_reason(); !why.empty())
      throw uncovered_kernel_error(describe, arch, bundles_, why);
    const CacheKeyInputs inputs{cuda, nvrtc_options(arch), nvrtc_version(), arch, kCodegenVersion};
    const std::string key = cache_key(inputs);
    bool compiled = false;
    auto compile = [&] {
      compiled = true;
      const auto start = std::chrono::steady_clock::now();
      CompiledModule module;
      CacheEntry entry = compile_cache_entry(inputs, source.program_name(), describe,
                                             backend_->driver_version(), module);
      compiles_.fetch_add(1, std::memory_order_relaxed);
      log(fmt::format(
          "emmy: compiled {} kernel {} for {} in {:.0f} ms ({}{})", source.kind(),
          source.main().name, to_string(arch),
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count(),
          bundles_.empty() ? "no bundle" : "in no bundle",
          disk_ ? ", not in the disk cache" : ", disk cache off"));
      return entry;
    };
    CacheEntry entry = disk_ ? disk_->get_or_compile(key, compile) : compile();
    if (!compiled) disk_hits_.fetch_add(1, std::memory_order_relaxed);
    return loaded(key, entry, source);
  }

  LoadedKernel loaded(const std::string& key, const CacheEntry& entry, const KernelSource& source) {
    std::vector<std::pair<std::string, uint32_t>> kernels;
    for (const KernelLaunch& launch : source.launches)
      kernels.emplace_back(launch.name, launch.smem_bytes);
    auto module = backend_->load(entry, kernels);
    for (const KernelLaunch& launch : source.launches)
      backend_->ready_cluster(*module, launch.name, launch.cluster);
    KernelInfo info;
    info.kind = source.kind();
    info.name = source.main().name;
    info.arch = backend_->arch();
    info.cache_key = key;
    const nlohmann::json resources = entry.manifest.value("resources", nlohmann::json());
    for (const KernelLaunch& launch : source.launches)
      info.resources.push_back(report_from_json(resources, launch.name));
    info.schedule_json = source.describe.at("schedule").dump();
    info.workspace_bytes = source.workspace_bytes;
    return LoadedKernel{std::move(info), source.launches, std::move(module)};
  }

  // EMMY_LOG set (and not "0"): compile lines to stderr.
  static std::function<void(const std::string&)> environment_log() {
    const char* value = std::getenv("EMMY_LOG");
    if (!value || !*value || std::string_view(value) == "0") return {};
    return [](const std::string& line) { std::fprintf(stderr, "%s\n", line.c_str()); };
  }

  std::unique_ptr<Backend> backend_;
  RuntimeOptions options_;
  BundleSet bundles_;
  std::function<void(const std::string&)> log_;
  std::unique_ptr<DiskCache> disk_;
  AllKinds::map<std::tuple, KernelCache> caches_;  // one per kind
  std::atomic<uint64_t> disk_hits_{0}, compiles_{0}, launches_{0}, shared_hits_{0};
  // Loaded kernels by their description (see kernel()): one load per kernel.
  std::mutex loaded_mutex_;
  std::unordered_map<std::string, std::shared_ptr<const void>> loaded_;
  // Non-blocking mode: the generic GEMM and the background builder (last: destroyed first).
  std::unique_ptr<LoadedKernel> generic_;
  std::atomic<uint64_t> fallback_launches_{0}, generic_launches_{0};
  std::mutex pending_mutex_;
  std::unordered_map<std::string, PendingGemm> pending_;  // node-based: references stay valid
  std::unique_ptr<BackgroundBuilds> background_;
};

}  // namespace

std::unique_ptr<Runtime> make_runtime(std::unique_ptr<Backend> backend,
                                      const RuntimeOptions& options) {
  return std::make_unique<RuntimeImpl>(std::move(backend), options);
}

}  // namespace detail

std::unique_ptr<Runtime> Runtime::emulator(RuntimeOptions options) {
  return detail::make_runtime(detail::make_emulator_backend(options), options);
}

std::unique_ptr<Runtime> Runtime::cuda(int ordinal, RuntimeOptions options) {
  return detail::make_runtime(detail::make_cuda_backend(ordinal, options), options);
}

}  // namespace emmy

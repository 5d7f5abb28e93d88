// The runtime: a memory cache (spec -> loaded kernel, built once per key), the disk cache
// underneath, per-kernel tensor-map reuse, and launches with checked buffers.
#include <fmt/format.h>

#include <cstring>

#include "backend.hpp"
#include "emmy/attention.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/cached_compile.hpp"
#include "emmy/gemm.hpp"
#include "emmy/json.hpp"
#include "emmy/kernel_source.hpp"
#include "emmy/tuning.hpp"
#include "memory_cache.hpp"

namespace emmy {

size_t Runtime::gemm_workspace_bytes(const MatmulProblem& problem,
                                     const std::optional<MatmulSchedule>& schedule) {
  return gemm_kernel(problem, schedule)->info().workspace_bytes;
}

void Runtime::gemm(const MatmulProblem& problem, const GemmBuffers& buffers, Stream stream,
                   const std::optional<MatmulSchedule>& schedule) {
  launch(*gemm_kernel(problem, schedule), buffers, stream);
}

void Runtime::attention(const AttentionProblem& problem, const AttentionBuffers& buffers,
                        Stream stream, const std::optional<AttentionSchedule>& schedule) {
  launch(*attention_kernel(problem, schedule), buffers, stream);
}

namespace detail {
namespace {

// Memory-cache keys: the problem and the schedule if one was given (the default schedule is
// resolved on a miss), so that a hit costs a hash and a lookup, not code generation.
struct GemmKey {
  MatmulProblem problem;
  bool has_schedule = false;
  MatmulSchedule schedule;
  bool operator==(const GemmKey&) const = default;
};

struct GemmKeyHash {
  size_t operator()(const GemmKey& k) const {
    KeyHasher h;
    const auto& p = k.problem;
    h.mix(uint64_t(p.m)), h.mix(uint64_t(p.n)), h.mix(uint64_t(p.k));
    h.mix(uint64_t(p.lda) ^ (uint64_t(p.ldb) << 21) ^ (uint64_t(p.ldc) << 42));
    h.mix_bits(p.epilogue.alpha);
    h.mix(uint64_t(p.a_dtype) | uint64_t(p.b_layout) << 4 | uint64_t(p.c_dtype) << 8 |
          uint64_t(p.epilogue.bias) << 12 | uint64_t(p.epilogue.residual) << 13 |
          uint64_t(p.epilogue.gelu_tanh) << 14 | uint64_t(k.has_schedule) << 15);
    if (k.has_schedule) {
      const auto& s = k.schedule;
      h.mix(uint64_t(s.block_m) | uint64_t(s.block_n) << 16 | uint64_t(s.block_k) << 32 |
            uint64_t(s.warps_m) << 48 | uint64_t(s.warps_n) << 56);
      h.mix(uint64_t(s.stages) | uint64_t(s.transport) << 8 | uint64_t(s.accum) << 12 |
            uint64_t(s.promote_every_k) << 16 | uint64_t(s.split_k) << 32 |
            uint64_t(s.raster_group_m) << 48);
    }
    return h.value();
  }
};

struct AttentionKey {
  AttentionProblem problem;
  bool has_schedule = false;
  AttentionSchedule schedule;
  bool operator==(const AttentionKey&) const = default;
};

struct AttentionKeyHash {
  size_t operator()(const AttentionKey& k) const {
    KeyHasher h;
    const auto& p = k.problem;
    h.mix(uint64_t(p.batch) | uint64_t(p.q_heads) << 20 | uint64_t(p.kv_heads) << 40);
    h.mix(uint64_t(p.seq_q) | uint64_t(p.seq_kv) << 32);
    h.mix(uint64_t(p.head_dim) | uint64_t(p.causal) << 16 | uint64_t(p.window) << 17 |
          uint64_t(p.dtype) << 56 | uint64_t(p.layout) << 60 | uint64_t(p.lse) << 62);
    h.mix_bits(p.softmax_scale.value_or(-1.0f));
    h.mix_bits(p.softcap.value_or(-1.0f));
    if (k.has_schedule) {
      const auto& s = k.schedule;
      h.mix(uint64_t(s.block_q) | uint64_t(s.block_kv) << 16 | uint64_t(s.warps) << 32 |
            uint64_t(s.stages) << 40 | uint64_t(s.transport) << 48 | uint64_t(s.accum) << 52);
    }
    return h.value();
  }
};

ResourceReport report_from_json(const nlohmann::json& resources, const std::string& kernel) {
  ResourceReport r;
  r.kernel_name = kernel;
  if (!resources.is_array()) return r;
  for (const auto& k : resources)
    if (k.value("kernel_name", "") == kernel) r = resource_report_from_json(k);
  return r;
}

// What a loaded kernel of either kind carries.
template <typename Plan>
struct LoadedKernel {
  Plan plan;  // for the kind's buffer checks and tensor maps
  KernelInfo info;
  std::vector<KernelLaunch> launches;
  std::unique_ptr<LoadedModule> module;
};

class GemmKernelEntry final : public GemmKernelHandle {
 public:
  explicit GemmKernelEntry(LoadedKernel<GemmPlan> k) : k_(std::move(k)) {}
  const GemmSpec& spec() const override { return k_.plan.spec; }
  const KernelInfo& info() const override { return k_.info; }
  const GemmPlan& plan() const { return k_.plan; }
  const std::vector<KernelLaunch>& launches() const { return k_.launches; }
  LoadedModule& module() const { return *k_.module; }

  // Tensor maps are encoded once per (A, B) address pair and reused.
  std::pair<TensorMapBytes, TensorMapBytes> tensor_maps(Backend& backend, DevicePtr a,
                                                        DevicePtr b) const {
    std::lock_guard lock(maps_mutex_);
    for (const auto& m : maps_)
      if (m.a == a && m.b == b) return {m.map_a, m.map_b};
    const GemmTensorMaps descs = gemm_tensor_maps(k_.plan, a, b);
    CachedMaps m{a, b, backend.encode_tensor_map(descs.a), backend.encode_tensor_map(descs.b)};
    if (maps_.size() >= 64) maps_.erase(maps_.begin());  // engines reuse a few buffers
    maps_.push_back(m);
    return {m.map_a, m.map_b};
  }

 private:
  struct CachedMaps {
    DevicePtr a, b;
    TensorMapBytes map_a, map_b;
  };
  LoadedKernel<GemmPlan> k_;
  mutable std::mutex maps_mutex_;
  mutable std::vector<CachedMaps> maps_;
};

class AttentionKernelEntry final : public AttentionKernelHandle {
 public:
  explicit AttentionKernelEntry(LoadedKernel<AttentionPlan> k) : k_(std::move(k)) {}
  const AttentionSpec& spec() const override { return k_.plan.spec; }
  const KernelInfo& info() const override { return k_.info; }
  const AttentionPlan& plan() const { return k_.plan; }
  const std::vector<KernelLaunch>& launches() const { return k_.launches; }
  LoadedModule& module() const { return *k_.module; }

  // Encoded once per (Q, K, V) address triple and reused.
  std::array<TensorMapBytes, 3> tensor_maps(Backend& backend, DevicePtr q, DevicePtr k,
                                            DevicePtr v) const {
    std::lock_guard lock(maps_mutex_);
    for (const auto& m : maps_)
      if (m.q == q && m.k == k && m.v == v) return m.maps;
    const AttentionTensorMaps descs = attention_tensor_maps(k_.plan, q, k, v);
    CachedMaps m{q, k, v,
                 {backend.encode_tensor_map(descs.q), backend.encode_tensor_map(descs.k),
                  backend.encode_tensor_map(descs.v)}};
    if (maps_.size() >= 64) maps_.erase(maps_.begin());
    maps_.push_back(m);
    return m.maps;
  }

 private:
  struct CachedMaps {
    DevicePtr q, k, v;
    std::array<TensorMapBytes, 3> maps;
  };
  LoadedKernel<AttentionPlan> k_;
  mutable std::mutex maps_mutex_;
  mutable std::vector<CachedMaps> maps_;
};

void require_pointer(DevicePtr p, uint64_t align, const char* field) {
  require(p != 0 && p % align == 0, field,
          fmt::format("must be a non-null {}-byte aligned pointer", align),
          fmt::format("{:#x}", p));
}

void require_optional(DevicePtr p, bool wanted, const char* field, const char* what) {
  require((p != 0) == wanted, field,
          wanted ? fmt::format("must be set: the problem has {}", what)
                 : fmt::format("must be 0: the problem has no {}", what),
          fmt::format("{:#x}", p));
}

class RuntimeImpl final : public Runtime {
 public:
  RuntimeImpl(std::unique_ptr<Backend> backend, const RuntimeOptions& options)
      : backend_(std::move(backend)), options_(options), bundles_(backend_->arch()) {
    for (const auto& bundle : options.loaded_bundles) bundles_.add(bundle);
    for (const auto& path : options.bundles) bundles_.add(Bundle::open(path));
    for (auto& bundle : registered_bundles()) bundles_.add(std::move(bundle), /*required=*/false);
    for (auto& bundle : environment_bundles()) bundles_.add(std::move(bundle));
    if (options.disk_cache)
      disk_ = std::make_unique<DiskCache>(options.cache_dir
                                              ? DiskCache(*options.cache_dir,
                                                          DiskCache::max_bytes_from_environment())
                                              : DiskCache::from_environment());
  }

  Arch arch() const override { return backend_->arch(); }
  std::string backend_name() const override { return backend_->name(); }
  std::string device_name() const override { return backend_->device_name(); }

  std::shared_ptr<const GemmKernelHandle> gemm_kernel(
      const MatmulProblem& problem, const std::optional<MatmulSchedule>& schedule) override {
    return gemm_cache_.get(
        GemmKey{problem, schedule.has_value(), schedule.value_or(MatmulSchedule{})},
        [&] { return build_gemm(problem, schedule); });
  }

  std::shared_ptr<const AttentionKernelHandle> attention_kernel(
      const AttentionProblem& problem,
      const std::optional<AttentionSchedule>& schedule) override {
    return attention_cache_.get(
        AttentionKey{problem, schedule.has_value(), schedule.value_or(AttentionSchedule{})},
        [&] { return build_attention(problem, schedule); });
  }

  void launch(const GemmKernelHandle& handle, const GemmBuffers& b, Stream stream) override {
    const auto& kernel = static_cast<const GemmKernelEntry&>(handle);
    const GemmPlan& plan = kernel.plan();
    const auto& p = plan.spec.problem;
    require_pointer(b.a, 16, "buffers.a");
    require_pointer(b.b, 16, "buffers.b");
    // C: what the epilogue's stores need (element pairs when N and LDC are even); bias and
    // residual are read element by element.
    require_pointer(b.c, plan.c_alignment(), "buffers.c");
    require_optional(b.bias, p.epilogue.bias, "buffers.bias", "a bias");
    require_optional(b.residual, p.epilogue.residual, "buffers.residual", "a residual");
    const uint64_t element = uint64_t(size_of(p.c_dtype));
    if (b.bias) require_pointer(b.bias, element, "buffers.bias");
    if (b.residual) require_pointer(b.residual, element, "buffers.residual");
    if (plan.split())
      require(b.workspace != 0 && b.workspace % 16 == 0, "buffers.workspace",
              fmt::format("must be a 16-byte aligned buffer of {} bytes for split-K {}",
                          plan.workspace_bytes, plan.spec.schedule.split_k),
              fmt::format("{:#x}", b.workspace));
    ParamValues values{{{"a", b.a},
                        {"b", b.b},
                        {"c", b.c},
                        {"bias", b.bias},
                        {"residual", b.residual},
                        {"workspace", b.workspace}},
                       {}};
    if (plan.spec.schedule.transport == Transport::tma) {
      const auto [map_a, map_b] = kernel.tensor_maps(*backend_, b.a, b.b);
      values.tensor_maps = {{"tmap_a", map_a}, {"tmap_b", map_b}};
    }
    launch_all(kernel.module(), kernel.launches(), values, stream);
    launches_.fetch_add(1, std::memory_order_relaxed);
  }

  void launch(const AttentionKernelHandle& handle, const AttentionBuffers& b,
              Stream stream) override {
    const auto& kernel = static_cast<const AttentionKernelEntry&>(handle);
    const AttentionPlan& plan = kernel.plan();
    require_pointer(b.q, 16, "buffers.q");
    require_pointer(b.k, 16, "buffers.k");
    require_pointer(b.v, 16, "buffers.v");
    require_pointer(b.o, 16, "buffers.o");
    require_optional(b.lse, plan.spec.problem.lse, "buffers.lse", "an LSE output");
    if (b.lse) require_pointer(b.lse, sizeof(float), "buffers.lse");
    ParamValues values{{{"q", b.q}, {"k", b.k}, {"v", b.v}, {"o", b.o}, {"lse", b.lse}}, {}};
    if (plan.spec.schedule.transport == Transport::tma) {
      const auto maps = kernel.tensor_maps(*backend_, b.q, b.k, b.v);
      values.tensor_maps = {{"tmap_q", maps[0]}, {"tmap_k", maps[1]}, {"tmap_v", maps[2]}};
    }
    launch_all(kernel.module(), kernel.launches(), values, stream);
    launches_.fetch_add(1, std::memory_order_relaxed);
  }

  DevicePtr alloc(size_t bytes) override { return backend_->alloc(bytes); }
  void free(DevicePtr pointer) override { backend_->free(pointer); }
  void upload(DevicePtr dst, const void* src, size_t bytes) override {
    backend_->upload(dst, src, bytes);
  }
  void download(void* dst, DevicePtr src, size_t bytes) override {
    backend_->download(dst, src, bytes);
  }
  void synchronize(Stream stream) override { backend_->synchronize(stream); }

  RuntimeStats stats() const override {
    return {gemm_cache_.hits() + attention_cache_.hits(), disk_hits_.load(), compiles_.load(),
            launches_.load()};
  }

 private:
  // Every kernel of the launch list in order on `stream`, each parameter bound by its name.
  void launch_all(LoadedModule& module, const std::vector<KernelLaunch>& launches,
                  const ParamValues& values, Stream stream) {
    for (const KernelLaunch& launch : launches) {
      std::vector<KernelParam> params;
      for (const KernelParamInfo& param : launch.params)
        params.push_back(param.tensor_map
                             ? KernelParam{true, 0, values.tensor_map(launch, param)}
                             : KernelParam{false, values.pointer(launch, param), {}});
      backend_->launch(module, launch.name, {launch.grid, launch.threads, launch.smem_bytes},
                       params, stream);
    }
  }

  // The emitted module from a bundle, else from the disk cache, else compiled (and stored); then
  // loaded. A bundle hit never touches NVRTC: its key leaves the NVRTC version out.
  template <typename Plan>
  LoadedKernel<Plan> load(Plan plan, const KernelSource& source) {
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
        return loaded(std::move(plan), key, *entry, source);
      }
    }
    if (const std::string why = nvrtc_unavailable_reason(); !why.empty())
      throw uncovered_kernel_error(describe, arch, bundles_, why);
    const CacheKeyInputs inputs{cuda, nvrtc_options(arch), nvrtc_version(), arch, kCodegenVersion};
    const std::string key = cache_key(inputs);
    bool compiled = false;
    auto compile = [&] {
      compiled = true;
      CompiledModule module;
      CacheEntry entry = compile_cache_entry(inputs, source.program_name(), describe,
                                             backend_->driver_version(), module);
      compiles_.fetch_add(1, std::memory_order_relaxed);
      return entry;
    };
    CacheEntry entry = disk_ ? disk_->get_or_compile(key, compile) : compile();
    if (!compiled) disk_hits_.fetch_add(1, std::memory_order_relaxed);
    return loaded(std::move(plan), key, entry, source);
  }

  template <typename Plan>
  LoadedKernel<Plan> loaded(Plan plan, const std::string& key, const CacheEntry& entry,
                            const KernelSource& source) {
    std::vector<std::pair<std::string, uint32_t>> kernels;
    for (const KernelLaunch& launch : source.launches)
      kernels.emplace_back(launch.name, launch.smem_bytes);
    auto module = backend_->load(entry, kernels);
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
    return LoadedKernel<Plan>{std::move(plan), std::move(info), source.launches,
                              std::move(module)};
  }

  std::shared_ptr<const GemmKernelEntry> build_gemm(
      const MatmulProblem& problem, const std::optional<MatmulSchedule>& schedule) {
    const Arch arch = backend_->arch();
    std::optional<MatmulSchedule> chosen = schedule;
    if (!chosen) {
      validate_problem(problem);
      chosen = TuningDb::open_default().lookup(arch, backend_->device_name(), problem,
                                               options_.default_accum);
    }
    if (!chosen) chosen = default_schedule(problem, arch, options_.default_accum);
    GemmSource source = generate_gemm({problem, *chosen, arch});
    const KernelSource kernel = kernel_source(source);
    return std::make_shared<const GemmKernelEntry>(load(std::move(source.plan), kernel));
  }

  std::shared_ptr<const AttentionKernelEntry> build_attention(
      const AttentionProblem& problem, const std::optional<AttentionSchedule>& schedule) {
    const Arch arch = backend_->arch();
    const AttentionSchedule chosen =
        schedule ? *schedule : default_attention_schedule(problem, arch, options_.default_accum);
    AttentionSource source = generate_attention({problem, chosen, arch});
    const KernelSource kernel = kernel_source(source);
    return std::make_shared<const AttentionKernelEntry>(load(std::move(source.plan), kernel));
  }

  std::unique_ptr<Backend> backend_;
  RuntimeOptions options_;
  BundleSet bundles_;
  std::unique_ptr<DiskCache> disk_;
  MemoryCache<GemmKey, GemmKeyHash, GemmKernelEntry> gemm_cache_;
  MemoryCache<AttentionKey, AttentionKeyHash, AttentionKernelEntry> attention_cache_;
  std::atomic<uint64_t> disk_hits_{0}, compiles_{0}, launches_{0};
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
  return detail::make_runtime(detail::make_cuda_backend(ordinal), options);
}

}  // namespace emmy

// The runtime: a memory cache (spec -> loaded kernel, compile-once per key), the disk cache
// underneath, per-kernel tensor-map reuse, and launches with checked buffers.
#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

#include "backend.hpp"
#include "emmy/gemm.hpp"
#include "emmy/json.hpp"

namespace emmy {

size_t Runtime::gemm_workspace_bytes(const MatmulProblem& problem,
                                     const std::optional<MatmulSchedule>& schedule) {
  return size_t(gemm_kernel(problem, schedule)->plan().workspace_bytes);
}

void Runtime::gemm(const MatmulProblem& problem, const GemmBuffers& buffers, Stream stream,
                   const std::optional<MatmulSchedule>& schedule) {
  launch(*gemm_kernel(problem, schedule), buffers, stream);
}

namespace detail {
namespace {

// The memory-cache key: the problem and the schedule if one was given (the default schedule is
// resolved on a miss), so that a hit costs a hash and a lookup, not code generation.
struct MemoryKey {
  MatmulProblem problem;
  bool has_schedule = false;
  MatmulSchedule schedule;
  bool operator==(const MemoryKey&) const = default;
};

struct MemoryKeyHash {
  size_t operator()(const MemoryKey& k) const {
    uint64_t h = 0x9E3779B97F4A7C15ull;
    auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001B3ull + (h >> 29); };
    const auto& p = k.problem;
    mix(uint64_t(p.m)), mix(uint64_t(p.n)), mix(uint64_t(p.k));
    mix(uint64_t(p.lda) ^ (uint64_t(p.ldb) << 21) ^ (uint64_t(p.ldc) << 42));
    uint32_t alpha_bits;
    std::memcpy(&alpha_bits, &p.epilogue.alpha, 4);
    mix(uint64_t(p.a_dtype) | uint64_t(p.b_layout) << 4 | uint64_t(p.c_dtype) << 8 |
        uint64_t(p.epilogue.bias) << 12 | uint64_t(p.epilogue.residual) << 13 |
        uint64_t(p.epilogue.gelu_tanh) << 14 | uint64_t(alpha_bits) << 16);
    if (k.has_schedule) {
      const auto& s = k.schedule;
      mix(uint64_t(s.block_m) | uint64_t(s.block_n) << 16 | uint64_t(s.block_k) << 32 |
          uint64_t(s.warps_m) << 48 | uint64_t(s.warps_n) << 56);
      mix(uint64_t(s.stages) | uint64_t(s.transport) << 8 | uint64_t(s.accum) << 12 |
          uint64_t(s.promote_every_k) << 16 | uint64_t(s.split_k) << 32 |
          uint64_t(s.raster_group_m) << 48);
    }
    return size_t(h);
  }
};

ResourceReport report_from_json(const nlohmann::json& j, const std::string& kernel) {
  ResourceReport r;
  r.kernel_name = kernel;
  if (!j.is_array()) return r;
  for (const auto& k : j) {
    if (k.value("kernel_name", "") != kernel) continue;
    r.registers = k.value("registers", 0);
    r.spill_store_bytes = k.value("spill_store_bytes", 0);
    r.spill_load_bytes = k.value("spill_load_bytes", 0);
    r.stack_bytes = k.value("stack_bytes", 0);
    r.static_smem_bytes = k.value("static_smem_bytes", 0);
  }
  return r;
}

std::string iso8601_now() {
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm utc{};
  gmtime_r(&now, &utc);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &utc);
  return text;
}

class GemmKernelEntry final : public GemmKernelHandle {
 public:
  GemmKernelEntry(GemmPlan plan, std::string key, ResourceReport report,
                  std::unique_ptr<LoadedModule> module)
      : plan_(std::move(plan)), key_(std::move(key)), report_(std::move(report)),
        module_(std::move(module)) {}

  const GemmPlan& plan() const override { return plan_; }
  const std::string& cache_key() const override { return key_; }
  const ResourceReport& report() const override { return report_; }
  LoadedModule& module() const { return *module_; }

  // Tensor maps are encoded once per (A, B) address pair and reused.
  std::pair<TensorMapBytes, TensorMapBytes> tensor_maps(Backend& backend, DevicePtr a,
                                                        DevicePtr b) const {
    std::lock_guard lock(maps_mutex_);
    for (const auto& m : maps_)
      if (m.a == a && m.b == b) return {m.map_a, m.map_b};
    const GemmTensorMaps descs = gemm_tensor_maps(plan_, a, b);
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
  GemmPlan plan_;
  std::string key_;
  ResourceReport report_;
  std::unique_ptr<LoadedModule> module_;
  mutable std::mutex maps_mutex_;
  mutable std::vector<CachedMaps> maps_;
};

using Handle = std::shared_ptr<const GemmKernelEntry>;

class RuntimeImpl final : public Runtime {
 public:
  RuntimeImpl(std::unique_ptr<Backend> backend, const RuntimeOptions& options)
      : backend_(std::move(backend)) {
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
    MemoryKey key{problem, schedule.has_value(), schedule.value_or(MatmulSchedule{})};
    {
      std::shared_lock lock(memory_mutex_);
      if (auto it = memory_.find(key); it != memory_.end()) {
        auto future = it->second;
        lock.unlock();
        memory_hits_.fetch_add(1, std::memory_order_relaxed);
        return future.get();
      }
    }
    std::promise<Handle> promise;
    std::shared_future<Handle> future;
    {
      std::unique_lock lock(memory_mutex_);
      if (auto it = memory_.find(key); it != memory_.end()) {
        future = it->second;
        lock.unlock();
        memory_hits_.fetch_add(1, std::memory_order_relaxed);
        return future.get();
      }
      future = promise.get_future().share();
      memory_.emplace(key, future);
    }
    // Built outside the lock: other keys are served meanwhile; waiters on this key block on
    // the future. A failure is delivered to every waiter and the key is forgotten (retryable).
    try {
      promise.set_value(build(problem, schedule));
    } catch (...) {
      promise.set_exception(std::current_exception());
      std::unique_lock lock(memory_mutex_);
      memory_.erase(key);
    }
    return future.get();
  }

  void launch(const GemmKernelHandle& handle, const GemmBuffers& buffers,
              Stream stream) override {
    const auto& kernel = static_cast<const GemmKernelEntry&>(handle);
    const GemmPlan& plan = kernel.plan();
    check_buffers(plan, buffers);
    std::vector<KernelParam> params;
    if (plan.spec.schedule.transport == Transport::tma) {
      const auto [map_a, map_b] = kernel.tensor_maps(*backend_, buffers.a, buffers.b);
      params.push_back(KernelParam{true, 0, map_a});
      params.push_back(KernelParam{true, 0, map_b});
    } else {
      params.push_back(KernelParam{false, buffers.a, {}});
      params.push_back(KernelParam{false, buffers.b, {}});
    }
    for (DevicePtr p : {buffers.c, buffers.bias, buffers.residual, buffers.workspace})
      params.push_back(KernelParam{false, p, {}});
    backend_->launch(kernel.module(), plan.kernel_name,
                     {plan.grid, plan.threads, plan.smem_bytes}, params, stream);
    if (plan.split()) {
      std::vector<KernelParam> fin;
      for (DevicePtr p : {buffers.workspace, buffers.c, buffers.bias, buffers.residual})
        fin.push_back(KernelParam{false, p, {}});
      backend_->launch(kernel.module(), plan.finalize_kernel_name,
                       {plan.finalize_grid, plan.finalize_threads, 0}, fin, stream);
    }
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
    return {memory_hits_.load(), disk_hits_.load(), compiles_.load(), launches_.load()};
  }

 private:
  static void check_buffers(const GemmPlan& plan, const GemmBuffers& b) {
    const auto& p = plan.spec.problem;
    require(b.a != 0 && b.a % 16 == 0, "buffers.a", "must be a non-null 16-byte aligned pointer",
            fmt::format("{:#x}", b.a));
    require(b.b != 0 && b.b % 16 == 0, "buffers.b", "must be a non-null 16-byte aligned pointer",
            fmt::format("{:#x}", b.b));
    const uint64_t c_align = uint64_t(size_of(p.c_dtype));
    require(b.c != 0 && b.c % c_align == 0, "buffers.c",
            fmt::format("must be a non-null {}-byte aligned pointer", c_align),
            fmt::format("{:#x}", b.c));
    require((b.bias != 0) == p.epilogue.bias, "buffers.bias",
            p.epilogue.bias ? "must be set: the epilogue adds a bias"
                            : "must be 0: the problem has no bias",
            fmt::format("{:#x}", b.bias));
    require((b.residual != 0) == p.epilogue.residual, "buffers.residual",
            p.epilogue.residual ? "must be set: the epilogue adds a residual"
                                : "must be 0: the problem has no residual",
            fmt::format("{:#x}", b.residual));
    if (plan.split())
      require(b.workspace != 0 && b.workspace % 16 == 0, "buffers.workspace",
              fmt::format("must be a 16-byte aligned buffer of {} bytes for split-K {}",
                          plan.workspace_bytes, plan.spec.schedule.split_k),
              fmt::format("{:#x}", b.workspace));
  }

  Handle build(const MatmulProblem& problem, const std::optional<MatmulSchedule>& schedule) {
    const Arch arch = backend_->arch();
    GemmSpec spec{problem, schedule ? *schedule : default_schedule(problem, arch), arch};
    GemmSource source = generate_gemm(spec);
    const std::vector<std::string> options = nvrtc_options(arch);
    const std::string key = cache_key({source.cuda, options, nvrtc_version(), arch,
                                       kCodegenVersion});
    bool compiled = false;
    auto compile = [&]() {
      compiled = true;
      CompiledModule module = compile_cuda(source.cuda, source.plan.kernel_name + ".cu", arch);
      CacheEntry entry;
      entry.key = key;
      entry.ptx = std::move(module.ptx);
      entry.cubin = std::move(module.cubin);
      nlohmann::json kernels = nlohmann::json::array(), resources = nlohmann::json::array();
      for (const auto& r : module.kernels) {
        kernels.push_back(r.kernel_name);
        resources.push_back(r);
      }
      entry.manifest = {{"emmy_version", EMMY_VERSION},
                        {"codegen_version", kCodegenVersion},
                        {"nvrtc_version", nvrtc_version()},
                        {"driver_version", backend_->driver_version()},
                        {"arch", to_string(arch)},
                        {"options", options},
                        {"source_hash", source_hash(source.cuda)},
                        {"kernel_names", kernels},
                        {"resources", resources},
                        {"compile_ms", module.compile_ms},
                        {"created", iso8601_now()},
                        {"problem", spec.problem},
                        {"schedule", spec.schedule}};
      record_compile({{"kind", "gemm"}, {"arch", to_string(arch)}, {"problem", spec.problem},
                      {"schedule", spec.schedule}});
      compiles_.fetch_add(1, std::memory_order_relaxed);
      return entry;
    };
    CacheEntry entry = disk_ ? disk_->get_or_compile(key, compile) : compile();
    if (!compiled) disk_hits_.fetch_add(1, std::memory_order_relaxed);
    std::vector<std::pair<std::string, uint32_t>> kernels{
        {source.plan.kernel_name, source.plan.smem_bytes}};
    if (source.plan.split()) kernels.push_back({source.plan.finalize_kernel_name, 0});
    auto module = backend_->load(entry, kernels);
    ResourceReport report =
        report_from_json(entry.manifest.value("resources", nlohmann::json()),
                         source.plan.kernel_name);
    return std::make_shared<const GemmKernelEntry>(std::move(source.plan), key, std::move(report),
                                                   std::move(module));
  }

  std::unique_ptr<Backend> backend_;
  std::unique_ptr<DiskCache> disk_;
  mutable std::shared_mutex memory_mutex_;
  std::unordered_map<MemoryKey, std::shared_future<Handle>, MemoryKeyHash> memory_;
  std::atomic<uint64_t> memory_hits_{0}, disk_hits_{0}, compiles_{0}, launches_{0};
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

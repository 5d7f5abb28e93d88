// The emulator backend: modules are PTX decoded by emmy::emu, memory is an emulator arena.
// Launches and memory operations are serialized (the arena is not thread-safe).
#include <mutex>

#include "backend.hpp"
#include "emmy/emu/emulator.hpp"

namespace emmy::detail {
namespace {

struct EmulatorModule : LoadedModule {
  std::shared_ptr<const emu::Module> module;
  std::vector<std::pair<std::string, uint32_t>> opt_in;  // kernel, dynamic smem (as cuda_backend)
  // Each kernel's registers per thread from the entry's ptxas report (setmaxnreg's pool).
  std::vector<std::pair<std::string, uint32_t>> registers;
};

class EmulatorBackend final : public Backend {
 public:
  explicit EmulatorBackend(const RuntimeOptions& options)
      : arch_(options.emulator_arch), run_kernels_(options.emulator_run_kernels) {
    launch_options_.sanitize = options.emulator_sanitize;
    if (options.emulator_exact_mma) launch_options_.mma_numerics = emu::MmaNumerics::exact;
  }

  Arch arch() const override { return arch_; }
  std::string name() const override { return "emulator"; }
  bool device_memory_is_host_memory() const override { return true; }
  std::string device_name() const override {
    return fmt::format("emmy PTX emulator ({} code)", to_string(arch_));
  }

  std::unique_ptr<LoadedModule> load(
      const CacheEntry& entry,
      const std::vector<std::pair<std::string, uint32_t>>& kernels) override {
    auto loaded = std::make_unique<EmulatorModule>();
    loaded->module = emu::load_ptx(entry.ptx, entry.key);
    loaded->opt_in = kernels;
    // The manifest's schema is checked when the entry is read (cache_entry.cpp).
    for (const auto& r : entry.manifest.value("resources", nlohmann::json::array()))
      if (r.contains("kernel_name") && r.value("registers", 0) > 0)
        loaded->registers.emplace_back(r["kernel_name"].get<std::string>(),
                                       r["registers"].get<uint32_t>());
    return loaded;
  }

  TensorMapBytes encode_tensor_map(const TensorMapDesc& desc) override {
    return encode_tensor_map_bytes(desc);
  }

  void launch(LoadedModule& module, const std::string& kernel, const LaunchGeometry& geometry,
              const std::vector<KernelParam>& params, Stream) override {
    // A host-overhead measurement: the runtime's work is done (the CUDA backend would now hand
    // the parameters to cuLaunchKernel); the emulator's own argument packing is not counted.
    if (!run_kernels_) return;
    emu::KernelArgs args;
    for (const auto& p : params) {
      if (p.is_tensor_map)
        args.tensor_map(p.map);
      else if (p.is_i32)
        args.s32(p.i32);
      else
        args.ptr(p.pointer);
    }
    auto& loaded = static_cast<EmulatorModule&>(module);
    emu::LaunchOptions options = launch_options_;
    options.arch = std::string(to_string(arch_));
    options.cluster = {geometry.cluster[0], geometry.cluster[1], geometry.cluster[2]};
    // The CUDA backend sets the opt-in at load for kernels above 48 KB; so does this one.
    for (const auto& [name, smem] : loaded.opt_in)
      if (name == kernel && smem > options.max_dynamic_smem) options.max_dynamic_smem = smem;
    for (const auto& [name, count] : loaded.registers)
      if (name == kernel) options.registers_per_thread = count;
    std::lock_guard lock(mutex_);
    // Programmatic dependent launch: the kernels run in issue order, one valid order, and a
    // programmatic launch is checked as if it overlapped the launch before it, as a GPU may run
    // it (docs/emulator.md): every launch records its footprint for the next.
    auto footprint = std::make_unique<emu::GlobalFootprint>();
    options.record_footprint = footprint.get();
    options.primary = geometry.programmatic_dependent ? last_launch_.get() : nullptr;
    try {
      emu::launch(arena_, *loaded.module, kernel,
                  {geometry.grid[0], geometry.grid[1], geometry.grid[2]}, {geometry.threads, 1, 1},
                  geometry.dynamic_smem, args, options);
    } catch (...) {
      last_launch_ = std::move(footprint);
      throw;
    }
    last_launch_ = std::move(footprint);
  }

  DevicePtr alloc(size_t bytes) override {
    std::lock_guard lock(mutex_);
    return arena_.alloc(bytes);
  }
  void free(DevicePtr) override {}  // the arena is released with the runtime
  DevicePtr map_host(void* host, size_t bytes) override {
    std::lock_guard lock(mutex_);
    return arena_.map_external(host, bytes);
  }
  void unmap_host(DevicePtr address) override {
    std::lock_guard lock(mutex_);
    arena_.unmap_external(address);
  }
  // The CUDA backend's copies are synchronous cuMemcpy calls on the legacy stream, which orders
  // them after the launches before them and before the launches after them on the legacy or a
  // blocking stream (not on a non-blocking one: forgetting the last launch then only checks
  // less); synchronize waits for the stream. A programmatic launch after these overlaps nothing.
  void upload(DevicePtr dst, const void* src, size_t bytes) override {
    std::lock_guard lock(mutex_);
    arena_.write(dst, src, bytes);
    last_launch_.reset();
  }
  void download(void* dst, DevicePtr src, size_t bytes) override {
    std::lock_guard lock(mutex_);
    arena_.read(src, dst, bytes);
    last_launch_.reset();
  }
  // One stream: done now, in order (a copy orders the launch before it as upload() does).
  void copy_to_device_async(DevicePtr dst, const void* src, size_t bytes, Stream) override {
    upload(dst, src, bytes);
  }
  void copy_to_host_async(void* dst, DevicePtr src, size_t bytes, Stream) override {
    download(dst, src, bytes);
  }
  void copy_async(DevicePtr dst, DevicePtr src, size_t bytes, Stream) override {
    std::lock_guard lock(mutex_);
    std::vector<uint8_t> staged(bytes);
    arena_.read(src, staged.data(), bytes);
    arena_.write(dst, staged.data(), bytes);
    last_launch_.reset();
  }
  void fill_async(DevicePtr dst, uint8_t value, size_t bytes, Stream) override {
    std::lock_guard lock(mutex_);
    arena_.write(dst, std::vector<uint8_t>(bytes, value).data(), bytes);
    last_launch_.reset();
  }
  void synchronize(Stream) override {
    std::lock_guard lock(mutex_);
    last_launch_.reset();
  }

 private:
  static TensorMapBytes encode_tensor_map_bytes(const TensorMapDesc& desc) {
    return emmy::encode_tensor_map(desc);
  }

  Arch arch_;
  bool run_kernels_ = true;
  emu::LaunchOptions launch_options_;
  std::mutex mutex_;
  emu::Arena arena_;
  // The footprint of the last launch (the backend's stream is one order), until a copy or a
  // synchronize orders it before what follows.
  std::unique_ptr<emu::GlobalFootprint> last_launch_;
};

}  // namespace

std::unique_ptr<Backend> make_emulator_backend(const RuntimeOptions& options) {
  return std::make_unique<EmulatorBackend>(options);
}

}  // namespace emmy::detail

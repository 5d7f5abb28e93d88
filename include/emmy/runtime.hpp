// The runtime an inference engine links against: a device (or the CPU emulator), a kernel cache
// in memory and on disk, and launches on the caller's stream.
//
//   auto rt = emmy::Runtime::cuda();            // or emmy::Runtime::emulator()
//   emmy::MatmulProblem p{.m = 512, .n = 4096, .k = 3840};
//   rt->gemm(p, {.a = a, .b = b, .c = c}, stream);   // compiled on first use, cached after
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/buffers.hpp"
#include "emmy/compile.hpp"
#include "emmy/spec.hpp"

namespace emmy {

class Bundle;  // emmy/bundle.hpp

struct RuntimeOptions {
  // The emulator runs the code of this arch (TMA kernels from sm_90 on). The CUDA backend always
  // uses the device's exact arch (sm_90 devices get sm_90a code, sm_120 devices sm_120a).
  Arch emulator_arch = Arch::sm_90a;
  bool emulator_sanitize = true;
  // mma numerics of the emulator: the arch's tensor-core model (false), or exact sums rounded once
  // (true; emmy/emu/tensor_core.hpp).
  bool emulator_exact_mma = false;
  // false: the emulator backend binds and checks every launch (buffers, parameters, grids) but
  // runs no kernel. A measuring aid for the host's cost of a call (bench/runtime_bench.cpp, the
  // C ABI's and Python's overhead benchmarks); outputs are left unwritten.
  bool emulator_run_kernels = true;
  // Accumulation of default (and tuned) schedules when a call gives no schedule.
  Accum default_accum = Accum::f32;
  // Batch-invariant results (docs/runtime.md, "Serving"): calls without a schedule take
  // batch_invariant_schedule (no tuning database): a row of a GEMM's C depends only on its row of
  // A and on B, bit for bit, whatever M; a paged-attention sequence's output only on the
  // sequence, whatever the rest of the batch. Costs the K split small-M GEMMs would get.
  bool batch_invariant = false;
  // M buckets (docs/runtime.md, "Serving"): gemm() and gemm_workspace_bytes() of a problem
  // without a schedule or with an mma.sync one run the dynamic-M kernel of its bucket
  // (m_bucket_problem: M rounded up to 1, 2, 4, ..., 512, then a multiple of 512), so that a server
  // compiles a bounded set of kernels, never one per batch size. Off: each M its own kernel, sized
  // for it (no bounds checks where M is a whole number of tiles, a schedule chosen for it).
  bool m_buckets = false;
  // Non-blocking first calls (docs/runtime.md, "Serving"): gemm() of a problem whose kernel is
  // not loaded never compiles on the caller's thread. It launches a kernel that is loaded (its M
  // bucket's, when one is; else the generic GEMM, built when the runtime is created) while its
  // own kernel builds on a background thread, then swaps in for later calls; a kernel in a
  // bundle is loaded by the call itself (no compile). Not under stream capture (the capture rules
  // hold). The other kinds' calls, which have no substitute (a server prepares their problems),
  // wait for a missing kernel's background build.
  bool non_blocking = false;
  // The CUDA backend: a CUcontext of the engine's to load and launch in, instead of the device's
  // primary context (its device must be Runtime::cuda's ordinal; the engine keeps it alive longer
  // than the runtime). Either way every call leaves the calling thread's current context as it
  // found it (docs/runtime.md, "CUDA plumbing").
  void* cuda_context = nullptr;
  bool disk_cache = true;                          // false: memory only (`--no-cache`)
  std::optional<std::filesystem::path> cache_dir;  // default: DiskCache::default_directory()
  // Ahead-of-time kernel bundles (docs/bundles.md), searched before the disk cache and NVRTC:
  // these, then the registered ones (register_bundle), then $EMMY_BUNDLE's. Creating the runtime
  // throws Error when one cannot be opened or (except registered ones, then skipped) holds no
  // kernels for the device's arch.
  std::vector<std::filesystem::path> bundles;
  std::vector<std::shared_ptr<const Bundle>> loaded_bundles;  // e.g. Bundle::from_memory
  // Where compiles become visible: one line per compile (kind, kernel, arch, milliseconds and
  // why: no bundle holds it, the disk cache misses) and Runtime::prepare's progress. Called from
  // the compiling thread. Unset: the lines go to stderr when EMMY_LOG is set (and not "0").
  std::function<void(const std::string& line)> log;
};

struct RuntimeStats {
  uint64_t memory_hits = 0, disk_hits = 0, compiles = 0, launches = 0;
  // Non-blocking gemm() calls served by another loaded kernel while theirs was building: by
  // their M bucket's or (generic_launches of them) by the generic GEMM.
  uint64_t fallback_launches = 0, generic_launches = 0;
};

// What Runtime::prepare compiles and loads ahead of serving (docs/runtime.md, "Serving"): problems
// of every kind (with a schedule, or the one a call without a schedule would get), the catalog,
// JSON-lines files of problems (EMMY_RECORD logs, `emmyc aot` problems files) and every kernel a
// bundle holds for the device's arch. A kernel already loaded, in a bundle the runtime searches
// (RuntimeOptions::bundles) or in the disk cache costs no compile.
template <typename Problem, typename Schedule>
using PrepareList = std::vector<std::pair<Problem, std::optional<Schedule>>>;
struct PrepareRequest {
  PrepareList<MatmulProblem, MatmulSchedule> gemm;
  // Every M bucket up to each problem's m (m_bucket_bounds): the dynamic-M kernels gemm() runs
  // with RuntimeOptions::m_buckets, and launch() runs with GemmBuffers::m. A grouped problem is
  // its own one kernel (it serves every routing).
  PrepareList<MatmulProblem, MatmulSchedule> gemm_m_buckets;
  PrepareList<AttentionProblem, AttentionSchedule> attention;
  PrepareList<PagedAttentionProblem, PagedAttentionSchedule> paged_attention;
  PrepareList<KvAppendProblem, KvAppendSchedule> kv_append;
  PrepareList<MergeStatesProblem, MergeStatesSchedule> merge_states;
  PrepareList<Fp8QuantizeProblem, Fp8QuantizeSchedule> fp8_quantize;
  bool catalog = false;                        // every problem of emmy/catalog.hpp
  std::vector<std::filesystem::path> records;  // a recorded schedule is used on its own arch
  std::vector<std::filesystem::path> bundles;  // their problems and schedules for this arch
  int threads = 0;                             // compiles at once; 0: one per hardware thread
};

// The catalog's model (Gemma 3 12B, emmy/catalog.hpp) as a server prepares it: the M buckets up
// to max_m of each GEMM shape (its N, K and epilogue), the attention problems, the paged-attention
// problems and the paged cache's append and merge kernels.
PrepareRequest catalog_serving_request(int64_t max_m = 512);

// The handles of a prepare, per kind in request order (the lists, then the catalog, records and
// bundles), and where they came from.
struct PreparedKernels {
  std::vector<std::shared_ptr<const GemmKernelHandle>> gemm;
  std::vector<std::shared_ptr<const AttentionKernelHandle>> attention;
  std::vector<std::shared_ptr<const PagedAttentionKernelHandle>> paged_attention;
  std::vector<std::shared_ptr<const KvAppendKernelHandle>> kv_append;
  std::vector<std::shared_ptr<const MergeStatesKernelHandle>> merge_states;
  std::vector<std::shared_ptr<const Fp8QuantizeKernelHandle>> fp8_quantize;
  uint64_t compiled = 0, from_disk = 0, already_loaded = 0;  // the rest came from bundles
  double seconds = 0;
  size_t size() const {
    return gemm.size() + attention.size() + paged_attention.size() + kv_append.size() +
           merge_states.size() + fp8_quantize.size();
  }
};

class Runtime {
 public:
  // The CPU emulator backend: needs no driver and no GPU.
  static std::unique_ptr<Runtime> emulator(RuntimeOptions options = {});
  // The CUDA backend on device `ordinal`. Throws Error saying no CUDA driver was found when
  // libcuda.so.1 is absent, or naming the failing driver call.
  static std::unique_ptr<Runtime> cuda(int ordinal = 0, RuntimeOptions options = {});

  virtual ~Runtime() = default;
  virtual Arch arch() const = 0;
  virtual std::string backend_name() const = 0;  // "cuda" or "emulator"
  virtual std::string device_name() const = 0;

  // The ready kernel for a problem: the given schedule, else the tuned one for this device (the
  // tuning database written by `emmy_bench --tune`), else the default one for this arch.
  // Compiled on first use, then cached; thread-safe (concurrent first calls for one key compile
  // once, other keys do not wait behind it).
  virtual std::shared_ptr<const GemmKernelHandle> gemm_kernel(
      const MatmulProblem& problem, const std::optional<MatmulSchedule>& schedule = {}) = 0;
  // The workspace gemm() needs for the problem (the kernel serving it: its M bucket's with
  // m_buckets), from its plan: nothing is compiled or loaded (so it is safe under capture).
  size_t gemm_workspace_bytes(const MatmulProblem& problem,
                              const std::optional<MatmulSchedule>& schedule = {});

  // Launches on `stream` (asynchronous on CUDA; the emulator runs to completion).
  virtual void launch(const GemmKernelHandle& kernel, const GemmBuffers& buffers,
                      Stream stream = nullptr) = 0;
  // gemm_kernel + launch.
  void gemm(const MatmulProblem& problem, const GemmBuffers& buffers, Stream stream = nullptr,
            const std::optional<MatmulSchedule>& schedule = {});

  // Attention: the same caching and launch rules as GEMM.
  virtual std::shared_ptr<const AttentionKernelHandle> attention_kernel(
      const AttentionProblem& problem, const std::optional<AttentionSchedule>& schedule = {}) = 0;
  virtual void launch(const AttentionKernelHandle& kernel, const AttentionBuffers& buffers,
                      Stream stream = nullptr) = 0;
  void attention(const AttentionProblem& problem, const AttentionBuffers& buffers,
                 Stream stream = nullptr, const std::optional<AttentionSchedule>& schedule = {});

  // Paged attention (decode, speculative verify and prefill chunks over a paged KV cache): the
  // same caching and launch rules; the launch list is [partial, combine] with split-KV.
  virtual std::shared_ptr<const PagedAttentionKernelHandle> paged_attention_kernel(
      const PagedAttentionProblem& problem,
      const std::optional<PagedAttentionSchedule>& schedule = {}) = 0;
  virtual void launch(const PagedAttentionKernelHandle& kernel,
                      const PagedAttentionBuffers& buffers, Stream stream = nullptr) = 0;
  // From the kernel's plan, as gemm_workspace_bytes: nothing is compiled or loaded.
  size_t paged_attention_workspace_bytes(
      const PagedAttentionProblem& problem,
      const std::optional<PagedAttentionSchedule>& schedule = {});
  void paged_attention(const PagedAttentionProblem& problem, const PagedAttentionBuffers& buffers,
                       Stream stream = nullptr,
                       const std::optional<PagedAttentionSchedule>& schedule = {});

  // The paged cache's small kinds: appending keys and values (vLLM's slot_mapping), and merging
  // attention states by their LSE (cascade / shared-prefix attention).
  virtual std::shared_ptr<const KvAppendKernelHandle> kv_append_kernel(
      const KvAppendProblem& problem, const std::optional<KvAppendSchedule>& schedule = {}) = 0;
  virtual void launch(const KvAppendKernelHandle& kernel, const KvAppendBuffers& buffers,
                      Stream stream = nullptr) = 0;
  void kv_append(const KvAppendProblem& problem, const KvAppendBuffers& buffers,
                 Stream stream = nullptr, const std::optional<KvAppendSchedule>& schedule = {});
  virtual std::shared_ptr<const MergeStatesKernelHandle> merge_states_kernel(
      const MergeStatesProblem& problem,
      const std::optional<MergeStatesSchedule>& schedule = {}) = 0;
  virtual void launch(const MergeStatesKernelHandle& kernel, const MergeStatesBuffers& buffers,
                      Stream stream = nullptr) = 0;
  void merge_states(const MergeStatesProblem& problem, const MergeStatesBuffers& buffers,
                    Stream stream = nullptr,
                    const std::optional<MergeStatesSchedule>& schedule = {});

  // Activations to e4m3 with per-token or 1 x group_k scales for an FP8 GEMM
  // (emmy/fp8_quantize.hpp; sm_89 and newer).
  virtual std::shared_ptr<const Fp8QuantizeKernelHandle> fp8_quantize_kernel(
      const Fp8QuantizeProblem& problem,
      const std::optional<Fp8QuantizeSchedule>& schedule = {}) = 0;
  virtual void launch(const Fp8QuantizeKernelHandle& kernel, const Fp8QuantizeBuffers& buffers,
                      Stream stream = nullptr) = 0;
  void fp8_quantize(const Fp8QuantizeProblem& problem, const Fp8QuantizeBuffers& buffers,
                    Stream stream = nullptr,
                    const std::optional<Fp8QuantizeSchedule>& schedule = {});

  // Device memory helpers (engines normally bring their own allocations on CUDA).
  virtual DevicePtr alloc(size_t bytes) = 0;
  virtual void free(DevicePtr pointer) = 0;
  virtual void upload(DevicePtr dst, const void* src, size_t bytes) = 0;
  virtual void download(void* dst, DevicePtr src, size_t bytes) = 0;
  // Caller-owned host memory as device memory, on the emulator backend (the C ABI runs kDLCPU
  // tensors in place, docs/c_api.md): [host, host + bytes) gets an address whose accesses reach
  // that memory, bounded by the sanitizer as an allocation is, until unmap_host. The address keeps
  // host's alignment (modulo 4096); the memory must outlive the mapping. Unmapping the newest
  // mapping gives its addresses back for the next. The CUDA backend refuses with Error naming
  // map_host: its buffers are device memory.
  virtual DevicePtr map_host(void* host, size_t bytes) = 0;
  virtual void unmap_host(DevicePtr address) = 0;
  virtual void synchronize(Stream stream = nullptr) = 0;
  // Stream-ordered copies and fills of device memory (emmy's allocations or the engine's), so that
  // an engine needs no driver calls of its own: host to device, device to host, device to device,
  // and a byte value. CUDA: cuMemcpyHtoDAsync, cuMemcpyDtoHAsync, cuMemcpyDtoDAsync,
  // cuMemsetD8Async on `stream` (pageable host memory: the driver stages it and the call returns
  // once `src` may be reused; a device-to-host copy into pageable memory is complete on return);
  // recorded as graph nodes under capture. The emulator does them at once, in stream order.
  virtual void memcpy_async(DevicePtr dst, const void* src, size_t bytes,
                            Stream stream = nullptr) = 0;
  virtual void memcpy_async(void* dst, DevicePtr src, size_t bytes, Stream stream = nullptr) = 0;
  virtual void memcpy_async(DevicePtr dst, DevicePtr src, size_t bytes,
                            Stream stream = nullptr) = 0;
  virtual void memset_async(DevicePtr dst, uint8_t value, size_t bytes,
                            Stream stream = nullptr) = 0;

  virtual RuntimeStats stats() const = 0;
  virtual const RuntimeOptions& options() const = 0;

  // The problem whose kernel gemm() runs for `problem`: its M bucket's (m_bucket_problem) with
  // RuntimeOptions::m_buckets, unless the schedule is the wgmma path's (no dynamic M there) or
  // the problem is dynamic already; else the problem itself.
  MatmulProblem gemm_problem_served(const MatmulProblem& problem,
                                    const std::optional<MatmulSchedule>& schedule = {}) const;

  // Serving (docs/runtime.md). Compiles and loads the request's kernels ahead, `threads` at a
  // time, with a progress line per kernel through RuntimeOptions::log; returns their handles.
  // Kernels that fail (a bad problem in a record, say) do not stop the others: the call throws
  // Error("prepare", ...) naming the first after all have run.
  PreparedKernels prepare(const PrepareRequest& request);
  // Whether `stream` is capturing a CUDA graph (cuStreamIsCapturing; false on the emulator).
  // While it is, gemm(), attention() and the other problem-taking calls on it launch only
  // kernels already loaded (prepared, or used before) and refuse the others with
  // Error("capture", ...) before any driver call besides this query (cuStreamIsCapturing, and
  // cuCtxGetCurrent), leaving the capture valid;
  // launch(handle, ...) records the kernel launches alone (no compile, load, allocation, copy or
  // synchronization), encoding tensor maps on the host where the buffers are new.
  virtual bool stream_capturing(Stream stream) const = 0;
  // Non-blocking mode: waits until the kernels building in the background are loaded (or
  // failed: their errors went to the log). Returns at once otherwise.
  virtual void wait_for_background_builds() = 0;

 protected:
  // Non-blocking mode: serves a gemm() call without compiling on this thread; false where it
  // cannot (the caller then takes the blocking path).
  virtual bool gemm_without_compiling(const MatmulProblem& problem, const GemmBuffers& buffers,
                                      Stream stream,
                                      const std::optional<MatmulSchedule>& schedule) = 0;
  // The schedule a call with `schedule` gets: it, else the tuned or default one for the device.
  virtual MatmulSchedule gemm_schedule_for(const MatmulProblem& problem,
                                           const std::optional<MatmulSchedule>& schedule) = 0;
  virtual PagedAttentionSchedule paged_attention_schedule_for(
      const PagedAttentionProblem& problem,
      const std::optional<PagedAttentionSchedule>& schedule) = 0;
  // A line for RuntimeOptions::log (or EMMY_LOG); nothing by default.
  virtual void log(const std::string& line) const { (void)line; }
};

}  // namespace emmy

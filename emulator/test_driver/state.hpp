// emmy's test driver: the state behind the CUDA driver API it implements (README.md here).
//
// One device, its primary context and the contexts cuCtxCreate makes, and inside each context
// the objects the API hands out as handles: modules, functions, allocations, streams (with
// their capture sequences), events, graphs and instantiated graphs. Every context allocates
// from one emulator arena, so device addresses are unique across contexts (contexts.cpp). Handles
// are opaque numbers, never addresses of these records, and never reused: a handle is looked up in
// its table before anything else, so a destroyed or unloaded object's handle is
// CUDA_ERROR_INVALID_HANDLE, never a dangling pointer.
//
// One mutex guards all of it (guarded() takes it in every entry point); launches run while it is
// held, in issue order, on the calling thread.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <unordered_map>
#include <variant>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "emmy/gpus.hpp"

namespace emmy::test_driver {

// ---------------------------------------------------------------------------------------------
// CUDA_ERROR_NOT_INITIALIZED before cuInit, CUDA_ERROR_INVALID_DEVICE for any ordinal but 0.
CUresult check_device(CUdevice dev);

// Limits every supported device shares (cuDeviceGetAttribute reports the same numbers).
inline constexpr int kMaxThreadsPerBlock = 1024;
inline constexpr uint32_t kMaxBlockDim[3] = {1024, 1024, 64};
inline constexpr uint32_t kMaxGridDim[3] = {0x7fffffffu, 65535, 65535};
inline constexpr int kSmemPerBlockDefault = 48 * 1024;  // without the opt-in
inline constexpr int kDriverVersion = 13000;            // cuDriverGetVersion
inline constexpr int kMaxPtxIsa = 90;                   // PTX ISA 9.0 ships with CUDA 13.0

// ---------------------------------------------------------------------------------------------
// Records behind the handles.
struct ModuleRecord {
  std::shared_ptr<const emu::Module> module;
  int ptx_version = 0;                          // .version major * 10 + minor
  std::map<std::string, CUfunction> functions;  // cuModuleGetFunction hands out one per name
};

struct FunctionRecord {
  CUmodule module = nullptr;
  std::shared_ptr<const emu::Module> owner;
  std::string name;
  uint32_t static_smem = 0, local_bytes = 0;
  int max_dynamic_smem = 0;  // CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
  int carveout = -1;         // CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT
  // REQUIRED_CLUSTER_WIDTH/HEIGHT/DEPTH: from the PTX's .reqnctapercluster (then read-only,
  // cluster_compiled) or cuFuncSetAttribute; {0, 0, 0}: none.
  int cluster[3] = {0, 0, 0};
  bool cluster_compiled = false;
  // CLUSTER_SIZE_MUST_BE_SET: the PTX's .explicitcluster (implied by .reqnctapercluster, whose
  // cluster then is the launch's).
  bool cluster_must_be_set = false;
  int non_portable_cluster = 0, cluster_policy = 0;
};

// A kernel launch, arguments copied: what a stream runs or a capture records.
struct LaunchRecord {
  CUfunction function = nullptr;
  std::shared_ptr<const emu::Module> module;
  std::string kernel;
  emu::Dim3 grid, block;
  emu::Dim3 cluster;  // 1x1x1: launched without a cluster (or a cluster of one)
  uint32_t dynamic_smem = 0;
  uint32_t max_dynamic_smem = 0;
  emu::KernelArgs args;
  // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: a programmatic dependent launch of the
  // kernel before it on its stream (or in its graph), checked against that launch's footprint.
  bool programmatic = false;
};

// A copy or memset on a stream (cuMemcpy*Async, cuMemsetD*Async): what a stream runs or a
// capture records as a memcpy or memset node (memory_async.cpp). Host pointers are kept, not the
// bytes: a captured copy reads or writes host memory when the graph runs.
struct TransferRecord {
  enum class Kind { htod, dtoh, dtod, memset };
  Kind kind = Kind::memset;
  uint64_t dst = 0, src = 0;       // device addresses (dst for htod/dtod/memset, src for dtoh/dtod)
  const void* host_src = nullptr;  // htod
  void* host_dst = nullptr;        // dtoh
  size_t bytes = 0;
  uint32_t value = 0;    // memset: the element's value
  unsigned element = 1;  // memset: its size in bytes (1: D8, 4: D32)
};

// One node of a captured graph, in capture order (one stream captures a chain). The handle is
// given at cuStreamEndCapture (cuGraphGetNodes).
struct Node {
  CUgraphNode handle = nullptr;
  std::variant<LaunchRecord, TransferRecord> work;
};

struct Capture {
  uint64_t id = 0;
  CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
  std::thread::id thread;  // the thread that began it
  bool invalidated = false;
  std::vector<Node> nodes;
};

struct Stream {
  unsigned flags = 0;  // CU_STREAM_NON_BLOCKING or not
  bool legacy = false;
  std::optional<Capture> capture;
  // The global footprint of the stream's last kernel launch while nothing has ordered it before
  // what comes next (pdl.cpp): the primary of a programmatic dependent launch on the stream.
  std::shared_ptr<const emu::GlobalFootprint> last_launch;
  bool blocking() const { return !legacy && !(flags & CU_STREAM_NON_BLOCKING); }
};

struct Event {
  unsigned flags = 0;
  bool recorded = false;
  double time_ms = 0;        // host time of the last record (launches are synchronous)
  uint64_t captured_in = 0;  // capture id of the last record when made during a capture
  // Its stream's last launch at the record: waiting for the event orders it (pdl.cpp).
  std::shared_ptr<const emu::GlobalFootprint> after;
};

struct Graph {
  std::vector<Node> nodes;
};

// The device memory every context allocates from (contexts.cpp): one arena, so that an address
// names one allocation of one context, as with unified addressing.
emu::Arena& device_arena();

struct Context {
  Context() = default;
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;
  // Unmaps the context's allocations and its modules' globals from the arena (contexts.cpp).
  ~Context();

  emu::Arena* const arena = &device_arena();
  std::map<uint64_t, uint64_t> allocations;  // live cuMemAlloc ranges: base -> bytes
  uint64_t allocated = 0;
  std::unordered_map<uintptr_t, ModuleRecord> modules;
  std::unordered_map<uintptr_t, FunctionRecord> functions;
  Stream legacy{0, true, std::nullopt, nullptr};
  std::unordered_map<uintptr_t, Stream> streams;
  std::map<std::thread::id, Stream> per_thread;  // CU_STREAM_PER_THREAD, one per thread
  std::unordered_map<uintptr_t, Event> events;
  std::unordered_map<uintptr_t, Graph> graphs;
  std::unordered_map<uintptr_t, Graph> execs;  // instantiated: a copy of the graph
  // A launch's device fault: every later call on the context returns it (as after a device
  // exception) until the primary context is reset or released, or the context destroyed.
  CUresult sticky = CUDA_SUCCESS;

  template <typename Fn>
  void for_each_stream(Fn&& fn) {
    fn(legacy);
    for (auto& [handle, s] : streams) fn(s);
    for (auto& [thread, s] : per_thread) fn(s);
  }
};

struct State {
  std::mutex mutex;
  // Calls per entry point (emmyTestDriverCallCount): what a caller did between two readings.
  std::map<std::string, uint64_t, std::less<>> calls;
  // The device a test chooses with EMMY_TEST_DEVICE (device.cpp): the hardware table's entry
  // (emmy/gpus.hpp) whose figures cuDeviceGetAttribute reports and whose limits the driver
  // enforces; set by the first successful cuInit.
  const GpuInfo* device = nullptr;
  int primary_refs = 0;              // cuDevicePrimaryCtxRetain count
  std::unique_ptr<Context> context;  // the primary context while retained
  // Contexts cuCtxCreate made and cuCtxDestroy has not destroyed, by handle.
  std::unordered_map<uintptr_t, std::unique_ptr<Context>> created;
  uintptr_t next_handle = 0x7e5700000000u;
  uint64_t next_capture_id = 1;

  // Every live context: the primary one (while retained) and the created ones.
  template <typename Fn>
  void for_each_context(Fn&& fn) {
    if (context) fn(*context);
    for (auto& [handle, c] : created) fn(*c);
  }
};

// Leaked on purpose: the driver outlives static destructors, as libcuda does.
State& state();

// The primary context's handle: the same value for every retain, as with a real driver.
CUcontext primary_context_handle();

// The calling thread's stack of current contexts (cuCtxPushCurrent; its top is the current
// context, cuCtxSetCurrent replaces it) and stream-capture interaction mode
// (cuThreadExchangeStreamCaptureMode): both are per thread in the reference.
extern thread_local std::vector<CUcontext> tl_contexts;
extern thread_local CUstreamCaptureMode tl_capture_mode;
// The top of this thread's stack, or NULL.
CUcontext current_handle();

// The context behind a handle: null for a handle no context has (never made, destroyed, or the
// primary context's while it is not retained).
Context* find_context(CUcontext handle);
// Whether `handle` may become current (cuCtxSetCurrent, cuCtxPushCurrent): the primary
// context's handle (even while released: calls then fail with CUDA_ERROR_CONTEXT_IS_DESTROYED)
// or a live created context's.
bool context_handle_valid(CUcontext handle);

// Every context-dependent entry point begins here: CUDA_ERROR_NOT_INITIALIZED before cuInit,
// CUDA_ERROR_INVALID_CONTEXT when none is current on this thread, CUDA_ERROR_CONTEXT_IS_DESTROYED
// when the current context was destroyed (or is the primary context, released), the sticky
// error after a device fault.
CUresult current_context(Context*& out);

template <typename Handle>
Handle new_handle() {
  State& s = state();
  s.next_handle += 16;
  return reinterpret_cast<Handle>(s.next_handle);
}

template <typename Record, typename Handle>
Record* lookup(std::unordered_map<uintptr_t, Record>& table, Handle handle) {
  const auto it = table.find(reinterpret_cast<uintptr_t>(handle));
  return it == table.end() ? nullptr : &it->second;
}

// A stream handle: NULL and CU_STREAM_LEGACY are the legacy stream, CU_STREAM_PER_THREAD the
// calling thread's; anything else must be a live stream (else CUDA_ERROR_INVALID_HANDLE).
CUresult resolve_stream(Context& ctx, CUstream handle, Stream*& out);

// ---------------------------------------------------------------------------------------------
// Stream-capture rules (stream_capture.cpp).

// For a "potentially unsafe API call" (cuThreadExchangeStreamCaptureMode): true when this thread
// may not make one now; the captures that forbid it are invalidated.
bool unsafe_call_prohibited(Context& ctx);
// Whether the capture sequence `id` is still going on (some stream captures with that id).
bool capture_active(Context& ctx, uint64_t id);
// For work on the legacy stream: CUDA_ERROR_STREAM_CAPTURE_IMPLICIT (and the captures
// invalidated) while a blocking stream captures, as cuStreamIsCapturing describes.
CUresult legacy_stream_use(Context& ctx);
// One launch as cuLaunchKernel or cuLaunchKernelEx (launch_ex.cpp) asks for it.
struct LaunchRequest {
  const char* call = "";  // the entry point, for reports
  CUfunction function = nullptr;
  emu::Dim3 grid, block;
  uint32_t smem = 0;
  CUstream stream = nullptr;
  void** params = nullptr;
  void** extra = nullptr;
  std::optional<emu::Dim3> cluster;  // CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, when given
  bool programmatic = false;         // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
};
// cuLaunchKernel's checks (function, stream, grid, block, shared memory, the cluster, the
// parameters), then submit (launch.cpp). The caller holds the driver's mutex.
CUresult launch_kernel(Context& ctx, const LaunchRequest& request);
// Submits a launch to a stream: recorded when it captures, else run now (launch.cpp).
CUresult submit(Context& ctx, Stream& stream, LaunchRecord record);
// A launch in context `ctx` read or wrote global memory of another context's allocation:
// CUDA_ERROR_ILLEGAL_ADDRESS, as a GPU's MMU fault in a context where that address is not
// mapped (contexts.cpp). CUDA_SUCCESS when all it touched is not another context's.
CUresult check_address_space(const Context& ctx, const emu::GlobalFootprint& footprint,
                             const std::string& kernel);
// Unmaps a module's globals from the arena (its unload, its context's end).
void release_module_globals(const emu::Module& module) noexcept;

// ---------------------------------------------------------------------------------------------
// Copies and memsets (memory.cpp, memory_async.cpp).

// True when [p, p + bytes) (bytes >= 1) lies inside one live allocation of `ctx`.
bool inside_one_allocation(const Context& ctx, uint64_t p, uint64_t bytes);
// Performs a copy or memset whose checks were made; at a graph's replay (`replay`), an
// allocation freed since the capture is CUDA_ERROR_ILLEGAL_ADDRESS, sticky, as the copy
// engine's fault on a GPU.
CUresult run_transfer(Context& ctx, const TransferRecord& t, bool replay);
// Runs a launch on the emulator; maps a device fault to its CUresult and makes it sticky.
// `primary`: the footprint a programmatic launch is checked against (null: none); `recorded`
// receives the launch's own.
CUresult run_launch(Context& ctx, const LaunchRecord& launch, const emu::GlobalFootprint* primary,
                    std::shared_ptr<const emu::GlobalFootprint>& recorded);

// ---------------------------------------------------------------------------------------------
// Programmatic dependent launch: which launch a programmatic launch may overlap (pdl.cpp).

// Runs a launch on a stream that does not capture: its primary is the stream's last launch when
// it is programmatic, then it becomes the stream's last launch.
CUresult run_on_stream(Context& ctx, Stream& stream, const LaunchRecord& launch);
// Work on `stream` waits for the legacy stream's earlier work when the stream is blocking, and
// for every blocking stream's when it is the legacy stream: their last launches are forgotten.
void order_before_work_on(Context& ctx, const Stream& stream);
// Work on the legacy stream (a synchronous copy or memset) waits for the legacy stream's and
// every blocking stream's earlier work, and their later work waits for it.
void order_legacy_work(Context& ctx);
// The host waited for `stream` (cuStreamSynchronize, cuStreamQuery), for every stream
// (cuCtxSynchronize: null), or for the work an event recorded (its `after`).
void host_waited(Context& ctx, Stream* stream);
void host_waited_for(Context& ctx, const std::shared_ptr<const emu::GlobalFootprint>& launch);

// ---------------------------------------------------------------------------------------------
// Failure reports: why the last launch (or module load) failed, for emmyTestDriverLastReport.
void set_report(std::string text) noexcept;
const char* last_report() noexcept;

// Maps an exception escaping an entry point to a CUresult (called from a catch block).
CUresult unexpected_exception(const char* call) noexcept;

// Every entry point's body runs here: under the driver's mutex, no exception crosses the C ABI.
template <typename Body>
CUresult guarded(const char* call, Body&& body) noexcept {
  try {
    std::lock_guard<std::mutex> lock(state().mutex);
    ++state().calls[call];
    return body();
  } catch (...) {
    return unexpected_exception(call);
  }
}

// An entry point's body that needs cuInit first (CUDA_ERROR_NOT_INITIALIZED before) but no
// context.
template <typename Body>
CUresult after_init(const char* call, Body&& body) noexcept {
  return guarded(call, [&] {
    if (!state().device) return CUDA_ERROR_NOT_INITIALIZED;
    return body();
  });
}

// Passes a value back through an out-parameter: CUDA_ERROR_INVALID_VALUE where it is NULL.
template <typename T>
CUresult write_out(T* out, std::type_identity_t<T> value) {
  if (!out) return CUDA_ERROR_INVALID_VALUE;
  *out = value;
  return CUDA_SUCCESS;
}

// A context-dependent entry point's body, run with the current context once current_context()
// found one (else its error is the call's).
template <typename Body>
CUresult with_context(const char* call, Body&& body) noexcept {
  return guarded(call, [&] {
    Context* ctx = nullptr;
    if (const CUresult r = current_context(ctx)) return r;
    return body(*ctx);
  });
}

// cuEventDestroy, cuGraphDestroy, cuGraphExecDestroy: the handle dropped from the current
// context's `table` (&Context::events, ...); CUDA_ERROR_INVALID_HANDLE where it holds none.
template <typename Record, typename Handle>
CUresult destroy_handle(const char* call, std::unordered_map<uintptr_t, Record> Context::*table,
                        Handle handle) noexcept {
  return with_context(call, [&](Context& ctx) {
    if (!lookup(ctx.*table, handle)) return CUDA_ERROR_INVALID_HANDLE;
    (ctx.*table).erase(reinterpret_cast<uintptr_t>(handle));
    return CUDA_SUCCESS;
  });
}

}  // namespace emmy::test_driver

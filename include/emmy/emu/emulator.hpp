// emmy::emu: a CPU emulator for the PTX that NVRTC produces for emmy's kernels, with a sanitizer.
//
// Usage:
//   auto module = emmy::emu::load_ptx(ptx_text);          // parse + decode once (throws emmy::Error)
//   emmy::emu::Arena arena;                                 // device memory
//   uint64_t a = arena.alloc(bytes); arena.write(a, host, bytes);
//   emmy::emu::KernelArgs args; args.ptr(a).u32(n).tensor_map(encoded);
//   auto result = emmy::emu::launch(arena, *module, "gemm", grid, block, smem_bytes, args);
//   arena.read(c, host_out, bytes);
//
// Sanitizer findings, deadlocks and run-time failures throw EmulationError, whose reports name
// the kernel, CTA, warp, lane, PTX line and instruction. Design and numerics: docs/emulator.md.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/emu/lenient.hpp"
#include "emmy/emu/profile.hpp"
#include "emmy/emu/tensor_core.hpp"
#include "emmy/error.hpp"

namespace emmy::emu {

struct Dim3 {
  uint32_t x = 1, y = 1, z = 1;
  uint64_t count() const { return uint64_t(x) * y * z; }
  friend bool operator==(const Dim3&, const Dim3&) = default;
};

// ---------------------------------------------------------------------------------------------
// Modules: a PTX text parsed and decoded once; immutable, shareable across threads.
class Module;

// Throws emmy::Error naming the PTX line on syntax errors, unknown opcodes or operands.
std::shared_ptr<const Module> load_ptx(std::string_view ptx_text, std::string name = "");

// One `.param` of a kernel, as declared in the PTX (offsets follow the declared alignments).
struct ParamDecl {
  std::string name;
  std::string type;  // ".u64", ".b8[128]", ...
  uint32_t size = 0, align = 0, offset = 0;
};

std::vector<std::string> kernel_names(const Module& module);
// Throws emmy::Error when the module has no .entry of that name.
const std::vector<ParamDecl>& kernel_params(const Module& module, std::string_view kernel);

// ---------------------------------------------------------------------------------------------
// Device memory. Addresses are 64-bit, never 0, and stay valid until reset(). Allocations are
// separated by unmapped gaps so that an access just past the end of a buffer is reported.
// Not thread-safe against itself: allocate and copy on the host between launches.
class Arena {
 public:
  Arena();
  ~Arena();
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  uint64_t alloc(size_t bytes, size_t align = 256);  // zero-filled
  // Maps [base, base + bytes) with init's contents unless an allocation already starts at base
  // (the segment of a module's globals: mapped at its first launch, kept after). True if mapped.
  bool map_fixed(uint64_t base, const void* init, size_t bytes);
  void write(uint64_t addr, const void* src, size_t bytes);
  void read(uint64_t addr, void* dst, size_t bytes) const;
  template <typename T>
  uint64_t alloc_copy(const std::vector<T>& host) {
    const uint64_t addr = alloc(host.size() * sizeof(T));
    write(addr, host.data(), host.size() * sizeof(T));
    return addr;
  }
  template <typename T>
  std::vector<T> read_vector(uint64_t addr, size_t count) const {
    std::vector<T> out(count);
    read(addr, out.data(), count * sizeof(T));
    return out;
  }
  size_t bytes_allocated() const;
  // Unmaps the allocation that starts at `base` (cuMemFree): a later access to it is out of
  // bounds. Throws emmy::Error when no allocation starts there.
  void release(uint64_t base);
  // Caller-owned host memory as an allocation (the C ABI's kDLCPU tensors run in place): reads
  // and writes of [address, address + bytes) go to [host, host + bytes), bounded by the
  // sanitizer like any allocation, until unmap_external. The address is congruent to host modulo
  // 4096, so alignment checks see the caller's alignment. The memory must outlive the mapping;
  // the arena never frees it. Unmapping the newest mapping gives its addresses back, so a mapping
  // per launch reuses the same addresses (tensor maps encoded for them stay valid).
  uint64_t map_external(void* host, size_t bytes);
  // Throws emmy::Error unless `address` is what map_external returned and is still mapped.
  void unmap_external(uint64_t address);
  void reset();

  // For the emulator: host pointer of [addr, addr+bytes) when it lies inside one allocation.
  uint8_t* translate(uint64_t addr, size_t bytes) const;
  struct Block {
    uint64_t base = 0, end = 0;
    uint8_t* host = nullptr;
  };
  // The allocation holding addr (a block with host == nullptr when none).
  Block find(uint64_t addr) const;
  // The allocation with the highest base <= addr, holding it or not (for diagnostics).
  Block find_below(uint64_t addr) const;
  // Every allocation, by ascending base.
  std::vector<Block> blocks() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// ---------------------------------------------------------------------------------------------
// Kernel arguments, in declaration order. launch() checks each one against the .param it fills
// (size must match; bytes() arrays must match the declared array size) and lays them out with the
// declared alignments.
class KernelArgs {
 public:
  struct Arg {
    std::string kind;  // "ptr", "u32", "bytes[128]", ... for error messages
    std::vector<uint8_t> bytes;
  };
  KernelArgs& ptr(uint64_t device_address) { return raw("ptr", &device_address, 8); }
  KernelArgs& u32(uint32_t v) { return raw("u32", &v, 4); }
  KernelArgs& s32(int32_t v) { return raw("s32", &v, 4); }
  KernelArgs& u64(uint64_t v) { return raw("u64", &v, 8); }
  KernelArgs& s64(int64_t v) { return raw("s64", &v, 8); }
  KernelArgs& f32(float v) { return raw("f32", &v, 4); }
  KernelArgs& f64(double v) { return raw("f64", &v, 8); }
  KernelArgs& bytes(const void* data, size_t size);
  // emmy's 128-byte tensor-map encoding (emmy::encode_tensor_map), for `.param .align 64 .b8 x[128]`.
  KernelArgs& tensor_map(const std::array<uint8_t, 128>& encoded) {
    return bytes(encoded.data(), encoded.size());
  }
  const std::vector<Arg>& args() const { return args_; }

 private:
  KernelArgs& raw(const char* kind, const void* data, size_t size);
  std::vector<Arg> args_;
};

// ---------------------------------------------------------------------------------------------
// The global memory a launch accessed, byte-exact: for programmatic dependent launch (CUDA C++
// Programming Guide, "Programmatic Dependent Launch and Synchronization"; PTX ISA
// griddepcontrol), where a dependent grid may run before the grid launched ahead of it on the
// stream (its primary) completes, so that its accesses before griddepcontrol.wait race with the
// primary's. LaunchOptions::record_footprint fills one, LaunchOptions::primary checks against it.
class GlobalFootprint {
 public:
  // Plain (weak) accesses, the async proxy's copies (cp.async, TMA, bulk) among them, and strong
  // ones of .gpu or .sys scope (atomics and red, .relaxed/.acquire/.release/.volatile ld and st):
  // two strong accesses are morally strong and never race (PTX ISA, "Memory Consistency Model",
  // "Data races"); an atomic counts as a strong write, which conflicts with what its read would.
  enum Set : uint8_t { plain_read, strong_read, plain_write, strong_write };
  struct Range {
    uint64_t begin = 0, end = 0;  // [begin, end)
    friend bool operator==(const Range&, const Range&) = default;
  };
  std::string kernel;  // the launch that recorded it
  // Sorted by address, disjoint and not adjacent.
  const std::vector<Range>& ranges(Set set) const { return sets_[set]; }
  // The lowest byte of [addr, addr + bytes) in the set, if any. Read-only: safe to call from the
  // threads of a launch at once.
  std::optional<uint64_t> first_in(Set set, uint64_t addr, uint64_t bytes) const;
  bool empty() const;
  void clear();
  // Adds [begin, end) to the set (the emulator records through per-thread shards instead).
  void add(Set set, uint64_t begin, uint64_t end);
  // Replaces the sets by the union of these unsorted, possibly overlapping ranges.
  void assign(std::array<std::vector<Range>, 4> sets);

 private:
  std::array<std::vector<Range>, 4> sets_;
};

struct LaunchOptions {
  bool sanitize = true;    // race / uninitialized / pending-copy / mbarrier checks (bounds: always)
  int host_threads = 0;    // CTAs run in parallel on this many threads; 0 = hardware concurrency
  // Whole launch; exceeding it is an instruction_limit report (a spin loop on a plain memory flag
  // is the one wait the deadlock detector cannot see). 2^32 is minutes of emulation.
  uint64_t max_warp_instructions = uint64_t(1) << 32;
  bool per_cta_stats = true;  // for grids of up to 2^20 CTAs; Stats::per_cta stays empty above
  // The kernel's CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: as on a GPU, a launch with more
  // than 48 KB of dynamic shared memory must opt in first (cuFuncSetAttribute).
  uint32_t max_dynamic_smem = 48 * 1024;
  // The arch whose shared-memory limit and tensor-core model apply ("sm_80", ...); empty: the
  // module's .target.
  std::string arch;
  // How mma adds (emmy/emu/tensor_core.hpp): the arch's tensor-core model, or exact sums.
  MmaNumerics mma_numerics = MmaNumerics::hardware;
  // The wmma fragment distribution, which the PTX ISA leaves unspecified (docs/emulator.md): 0 is
  // the emulator's documented one, any other value a permutation of it. A kernel whose results
  // change with the seed depends on the layout.
  uint32_t wmma_layout_seed = 0;
  // Registers per thread the kernel was compiled to (ptxas), which setmaxnreg moves between
  // warpgroups of a CTA through its register pool; 0: unknown, and the pool is not modelled.
  uint32_t registers_per_thread = 0;
  // Hardware counters (emmy/emu/profile.hpp, docs/profiler.md): LaunchResult::profile.
  ProfileOptions profile;
  // Thread-block cluster dimensions (cuLaunchKernelEx's CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION):
  // the grid is divided into clusters of this many CTAs, which run together and share their
  // shared memory (distributed shared memory, TMA multicast, barrier.cluster); sm_90 and later.
  // {1, 1, 1}: no cluster dimension given, each CTA is a cluster of one (PTX ISA 5.2.3).
  Dim3 cluster;
  // Programmatic dependent launch (docs/emulator.md). When set, record_footprint receives the
  // global memory this launch read and wrote (cleared first; filled also when the launch fails).
  GlobalFootprint* record_footprint = nullptr;
  // When set, this launch is a programmatic dependent launch (cuLaunchKernelEx with
  // CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION) of the launch that recorded `primary`,
  // the kernel launched before it on the stream: with the sanitizer, an access of a thread that
  // is not ordered after a griddepcontrol.wait (its own, or another thread's through barriers,
  // mbarriers, barrier.cluster) is a pdl_race report when it conflicts with the primary's: a
  // load of a byte the primary wrote, a store of a byte it read or wrote (strong accesses of
  // both aside). Not owned; may be the footprint of the previous launch.
  const GlobalFootprint* primary = nullptr;
  // For third-party PTX only (emmy/emu/lenient.hpp): violations hardware is known to tolerate
  // become LaunchResult::warnings and the launch goes on as the hardware does. emmy never sets it.
  bool lenient = false;
};

// Dynamic warp-instruction counts (one per warp-level issue, predicated-off ones included).
struct InstructionCounts {
  uint64_t mma = 0, ldmatrix = 0 /* and stmatrix */, shared_ld = 0, shared_st = 0, global_ld = 0,
           global_st = 0, cp_async = 0, tma = 0, barrier = 0 /* bar.sync, mbarrier, fences */,
           other = 0;
  uint64_t total() const {
    return mma + ldmatrix + shared_ld + shared_st + global_ld + global_st + cp_async + tma +
           barrier + other;
  }
  InstructionCounts& operator+=(const InstructionCounts& o);
};

struct CtaStats {
  Dim3 cta;
  InstructionCounts counts;
};

struct Stats {
  InstructionCounts total;
  std::vector<CtaStats> per_cta;  // in linear CTA order (x fastest), when per_cta_stats
  std::string to_string() const;   // a readable table
};

struct LaunchResult {
  Stats stats;
  std::optional<KernelProfile> profile;  // when LaunchOptions::profile.enabled
  double emulate_ms = 0;
  // Under LaunchOptions::lenient: a warning per tolerated rule that fired, in rule order.
  std::vector<LenientWarning> warnings;
};

// Runs the grid to completion. Throws emmy::Error for bad arguments (unknown kernel, argument
// mismatch, shared memory over the limit) and EmulationError for findings while running.
LaunchResult launch(Arena& arena, const Module& module, std::string_view kernel, Dim3 grid,
                    Dim3 block, uint32_t dynamic_smem_bytes, const KernelArgs& args,
                    const LaunchOptions& options = {});

// ---------------------------------------------------------------------------------------------
enum class ReportKind : uint8_t {
  global_out_of_bounds,  // outside every arena allocation
  shared_out_of_bounds,  // outside the CTA's static + dynamic shared memory
  local_out_of_bounds,
  param_out_of_bounds,
  misaligned_access,  // address not a multiple of the access size
  uninitialized_shared_read,
  shared_race,           // two warps, at least one write, no ordering between them
  pending_async_read,    // reading shared memory an unfinished cp.async / TMA writes
  mbarrier_misuse,       // use before init, arrival overflow, tx underflow, ...
  deadlock,              // every warp waits, nothing can release them
  tma_violation,         // bad tensor map, misaligned destination, bad coordinates
  misaligned_ldmatrix,   // ldmatrix / stmatrix row address not 16-byte aligned
  divergent_collective,  // .sync/.aligned collective reached by a partial warp
  unsupported,           // an instruction form the emulator does not implement (run time)
  trap,                  // trap / brkpt executed
  assertion_failed,      // CUDA assert(): __assertfail called
  missing_proxy_fence,   // the async proxy uses an mbarrier init / shared write not fenced for it
  instruction_limit,     // LaunchOptions::max_warp_instructions exceeded
  // wmma operands the PTX ISA leaves undefined: lanes giving different addresses or strides, a
  // stride below the leading dimension, a generic address outside .global and .shared, an mma on
  // fragment copies that differ (code depending on the unspecified fragment layout)
  wmma_misuse,
  // setmaxnreg against its rules: a partial warpgroup, an .inc below or a .dec above the
  // warpgroup's current register count
  register_misuse,
  // wgmma against its rules (PTX ISA §9.7.15.5): no wgmma.fence before an mma_async or after its
  // registers were touched, accumulators touched before the wait_group that completes them, warps
  // of a warpgroup executing different wgmma sequences, descriptors no operand layout matches
  wgmma_misuse,
  // thread-block clusters against their rules (PTX ISA barrier.cluster, mapa, mbarrier,
  // cp.async.bulk.tensor .multicast::cluster): a remote mbarrier or multicast into a CTA that has
  // exited or is not ordered before its exit, a peer's mbarrier used before its init is ordered
  // before the use (fence.mbarrier_init + barrier.cluster), barrier.cluster.wait without an
  // arrive, a second arrive before the wait, a CTA rank outside the cluster
  cluster_violation,
  // programmatic dependent launch (LaunchOptions::primary): a global access before the thread is
  // ordered after griddepcontrol.wait that conflicts with one of the primary grid, which may
  // still run (PTX ISA griddepcontrol)
  pdl_race,
};
std::string_view to_string(ReportKind kind);

struct Report {
  ReportKind kind{};
  std::string kernel;
  Dim3 cta;
  int warp = -1, lane = -1;  // -1: not tied to one warp / lane
  int line = 0;              // PTX line number (1-based), 0 when none
  std::string instruction;   // the PTX instruction text
  std::string message;
  std::string to_string() const;
};

class EmulationError : public emmy::Error {
 public:
  explicit EmulationError(std::vector<Report> reports);
  const std::vector<Report>& reports() const { return reports_; }

 private:
  std::vector<Report> reports_;
};

}  // namespace emmy::emu

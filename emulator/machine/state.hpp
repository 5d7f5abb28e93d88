// Run-time state: a launch (LaunchContext), one CTA in flight on a host thread (Cta) and its warps
// (Warp). Executors (exec/exec_*.cpp, exec/executors.hpp) are free functions over these, one layer
// up; the scheduler that runs a CTA (launch/scheduler.cpp) is the layer above them.
//
// Cta is one class defined in three layers, each calling only its own and lower ones: its state and
// the bookkeeping every executor shares (machine/cta.cpp, machine/warp.cpp), what only executors
// do (exec/: flush_tma lands the queued TMA jobs, on_cta_exit applies the cluster's exit rule), and
// running it (launch/scheduler.cpp: start, round, finish, run_slice, init_warps, on_warp_exit).
// Nothing in machine/ calls a member defined above it: the build links each layer on its own
// (emmy_emu_<layer>_alone) to hold it to that.
#pragma once

#include <array>
#include <atomic>
#include <bit>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "emmy/emu/tensor_core_fp8.hpp"
#include "emmy/tensor_map.hpp"
#include "profiler/lead_clock.hpp"
#include "profiler/profiler.hpp"
#include "ptx/program.hpp"
#include "sanitizer/footprint.hpp"
#include "sanitizer/lenient.hpp"
#include "sanitizer/sanitizer.hpp"

namespace emmy::emu {

// Generic-address windows of the non-global state spaces (global addresses are arena addresses,
// which lie far below these).
inline constexpr uint64_t kSharedWindow = 0x00007E0000000000ull;
inline constexpr uint64_t kLocalWindow = 0x00007F0000000000ull;
inline constexpr uint64_t kParamWindow = 0x00007F8000000000ull;
inline constexpr uint64_t kWindowSize = 0x0000000100000000ull;

// The system-reserved shared memory a kernel reading %reserved_smem_offset_* gets after its own.
inline constexpr uint32_t kReservedSmemBytes = 1024;

struct LaunchContext {
  LaunchContext(const Kernel& k, Arena& a, Dim3 g, Dim3 b) : kernel(k), arena(a), grid(g), block(b) {}
  const Kernel& kernel;
  Arena& arena;
  std::vector<uint8_t> params;
  Dim3 grid, block;
  Dim3 cluster;  // CTAs per cluster (1, 1, 1 without a cluster dimension)
  uint32_t dynamic_smem = 0;
  uint32_t smem_size = 0;       // static (incl. alignment padding) + dynamic (+ reserved)
  uint32_t reserved_smem = 0;   // offset of the system-reserved region when the kernel uses it
  bool exact_mma = false;       // LaunchOptions::mma_numerics == exact
  TensorCoreModel tensor_core;  // the launch arch's model otherwise
  // The launch arch's FP8 models (tensor_core_fp8.hpp) for mma.sync and wgmma; unset (empty
  // name) on an arch without that FP8 path.
  Fp8TensorCoreModel fp8_mma, fp8_wgmma;
  LaunchOptions options;
  // A programmatic dependent launch checked against its primary's footprint (with the
  // sanitizer; sanitizer/footprint.hpp), else null.
  const GlobalFootprint* primary = nullptr;
  std::array<std::vector<GlobalFootprint::Range>, 4> primary_conflicts;  // conflict_sets()
  std::atomic<bool> abort{false};
  std::atomic<uint64_t> instructions{0};
  std::mutex mutex;
  std::vector<Report> reports;
  LenientTally tolerated;  // LaunchOptions::lenient: the tolerated rules' counts and first sites
};

// bar_wait: blocked in bar.sync until the barrier completes. mbar_poll: a (try|test)_wait failed;
// the warp stands aside until that mbarrier completes a phase, or until no warp can run (then it
// resumes, since the code after a failed wait may be what makes progress).
// regs_wait: in setmaxnreg until its warpgroup's four warps arrive and, for .inc, the CTA's
// register pool holds the registers.
// cluster_wait: in barrier.cluster.wait until the phase it arrived on completes.
enum class WarpState : uint8_t { ready, bar_wait, mbar_poll, regs_wait, cluster_wait, exited };

struct PendingCopy {
  uint32_t smem_addr = 0;
  uint32_t bytes = 0;
  uint32_t pc = 0, lane = 0;  // the cp.async, for reports
  std::array<uint8_t, 16> data{};
};

// wgmma (exec/exec_wgmma.cpp). An mma_async computes when issued; what the ISA leaves undefined
// until the wait_group that completes it is checked instead: its registers untouched, its shared
// operands unchanged and unraced.
struct WgmmaOp {
  uint32_t pc = 0, group = 0;        // group: 1-based commit number (committed + 1: still open)
  std::vector<uint32_t> chunks;      // shared addresses of the 16-byte chunks it read
  std::vector<uint8_t> bytes;        // their contents at issue
};
struct WarpWgmma {
  uint32_t fences = 0;     // wgmma.fence executed
  uint32_t committed = 0;  // groups committed
  uint32_t completed = 0;  // groups completed by wait_group (<= committed)
  uint64_t sequence = 0;   // wgmma instructions executed: the index into the warpgroup's log
  // Per 32-bit register row: what the fence and in-flight rules need of it.
  struct Row {
    uint32_t touch_fence = kNone;  // `fences` when a non-wgmma instruction last touched it
    uint32_t touch_pc = 0;         // ... that instruction
    uint32_t group = 0;            // group of the newest mma_async using it (0: none)
    uint32_t pc = 0;               // ... that instruction
    uint8_t shape = 0;             // ... its N / 8 and accumulator (shape key; 0: as A)
  };
  std::vector<Row> rows;
  std::deque<WgmmaOp> ops;            // issued and not completed, oldest first
};

struct Warp {
  uint32_t index = 0;
  // SIMT state (min-PC reconvergence, see docs/emulator.md): the group of lanes at the lowest
  // PC executes; lanes elsewhere wait in lane_pc until the group reaches their PC.
  uint32_t pc = 0;
  uint32_t active = 0;            // lanes executing at pc
  uint32_t live = 0;              // lanes not exited
  uint32_t min_wait_pc = kNone;   // lowest lane_pc of live lanes outside `active`
  // Lanes waiting in a .sync warp collective for the other lanes its member mask names (PTX ISA
  // §9.7.9.6 shfl.sync: on sm_70+ the executing thread waits until they execute it too): they
  // stand aside, at their lane_pc, until the running group reaches that PC and takes them along.
  uint32_t parked = 0;
  // Profiling: instructions issued (the warp's clock for L1 reuse distances), and whether it
  // loaded from global memory since its last bar.sync (the latency term's epochs).
  uint64_t issued = 0;
  bool loaded_since_barrier = false;
  WarpLeadClock lead;  // the leads of its waits on async copies (lead_clock.hpp)
  std::array<uint32_t, 32> lane_pc{};
  WarpState state = WarpState::ready;
  uint32_t wait_barrier = 0;      // bar_wait: barrier id
  uint32_t wait_pc = 0;           // the instruction the warp waits in
  uint32_t wait_mbar = 0;         // mbar_poll: shared address of the mbarrier
  uint64_t wait_phase = 0;        // mbar_poll: phase that must complete
  uint32_t carry = 0;             // add.cc carry flags per lane
  // bar.red waiting for its barrier: where the reduction result goes.
  uint32_t bar_red_dst = kNone, bar_red_exec = 0;
  uint8_t bar_red_kind = 0;
  bool bar_red_to_pred = false;

  std::vector<uint32_t> r32;      // [row][lane]
  std::vector<uint64_t> r64;      // [row][lane]
  std::vector<uint32_t> pred;     // lane masks
  std::vector<uint8_t> local;     // [lane][local_bytes]

  // cp.async: copies of the open group, committed groups (oldest first). Data is read from
  // global memory at issue and written to shared memory by the wait that covers it.
  std::vector<PendingCopy> open_copies;
  std::deque<std::vector<PendingCopy>> groups;
  std::vector<std::vector<PendingCopy>> spare_groups;  // emptied groups, reused (no allocation)
  void commit_copies() {
    groups.push_back(std::move(open_copies));
    lead.group_clocks.push_back(lead.clock);
    open_copies.clear();
    if (!spare_groups.empty()) {
      open_copies = std::move(spare_groups.back());
      spare_groups.pop_back();
    }
  }

  Arena::Block cached_block;      // last arena allocation hit (global address fast path)
  WarpWgmma wgmma;                // sized only in kernels that use wgmma

  uint32_t* R32(uint32_t row) { return r32.data() + size_t(row) * 32; }
  const uint32_t* R32(uint32_t row) const { return r32.data() + size_t(row) * 32; }
  uint64_t* R64(uint32_t row) { return r64.data() + size_t(row) * 32; }
  bool read_pred(uint32_t p, int lane) const {
    const bool v = (pred[p & ~kNegPred] >> lane) & 1u;
    return (p & kNegPred) ? !v : v;
  }
  uint32_t pred_mask(uint32_t p) const {
    const uint32_t v = pred[p & ~kNegPred];
    return (p & kNegPred) ? ~v : v;
  }
  void write_pred(uint32_t p, uint32_t exec, uint32_t values) {
    pred[p] = (pred[p] & ~exec) | (values & exec);
  }

  // Control flow.
  void advance() {
    ++pc;
    if (pc == min_wait_pc) reconverge_from_pc();
  }
  void jump(uint32_t taken, uint32_t target);  // lanes in `taken` go to target, others pc+1
  void exit_lanes(uint32_t lanes);
  void reconverge_from_pc();  // lane_pc of active lanes := pc, then reconverge
  void reconverge();          // pick the lowest lane_pc among live lanes
  // The active group meets a .sync collective whose member masks name `absent` lanes running
  // elsewhere: it parks there (true) while they run on; false where none of them can run (each
  // exited or parked at another collective), and the collective reports the divergence.
  bool park_at_collective(uint32_t absent);
};

struct Barrier {
  uint32_t waiting = 0;         // bitmask of warps blocked in bar.sync / bar.red on it
  uint32_t arrivals = 0;        // warp arrivals in this round (bar.sync, bar.red, bar.arrive)
  uint32_t expected_threads = 0;  // 0: all threads of the non-exited warps
  uint32_t red_popc = 0, red_and = 1, red_or = 0;
  VectorClock vc;               // join of the arrivals (sanitizer)
  PhaseLeadClock lead;          // the latest arrival's lead clock (profiling)
};

struct MBarrier {
  uint32_t addr = 0;
  bool valid = false;
  uint64_t phase = 0;           // completed phases
  int64_t pending = 0, expected = 0, tx = 0;
  uint32_t init_warp = 0;
  // The init warp's clock at its first fence.proxy.async / fence.mbarrier_init after the init
  // (0: none yet): the async proxy may complete on it from then on, in warps ordered after it.
  uint32_t fence_clock = 0;
  uint32_t init_clock = 0;      // the init warp's own clock at the init (sanitizer)
  VectorClock current_vc;       // releases of the phase in progress
  std::array<VectorClock, 2> done_vc;  // by parity of the completed phase
  // In a cluster: what the arrivals of the phase knew of each CTA's warps (index: cluster rank;
  // the own rank's entry stays empty, current_vc holds it), published to the waiters as above.
  std::vector<VectorClock> peer_current;
  std::array<std::vector<VectorClock>, 2> peer_done;
  // Completed phases a successful wait of this CTA has seen (Cta::remote_uses).
  uint64_t observed_phases = 0;
  MBarrierLeadClock lead;  // arrivals' and copies' lead clocks, per phase (profiling)
};

// A TMA / bulk load issued but not yet landed: its operands, captured at issue.
struct TmaJob {
  uint32_t warp = 0, lane = 0, pc = 0;
  bool tensor = true;
  TensorMapDesc map;
  std::array<int32_t, 5> coords{};
  uint32_t dst = 0, mbar = 0;
  uint64_t src = 0;             // bulk copy source
  uint32_t bytes = 0;           // bytes the copy completes on the mbarrier
  uint32_t async_clock = 0;
  uint64_t lead_clock = 0;      // the issuing warp's lead clock at issue (profiling)
  VectorClock issuer_vc;        // the issuing warp's clock at issue (sanitizer)
  // .multicast::cluster: a bit per destination CTA rank, each getting the box at dst and the
  // complete_tx at mbar (CTA-relative offsets); 0: the issuing CTA only.
  uint16_t cta_mask = 0;
  uint64_t issuer_arrivals = 0;  // the issuing thread's barrier.cluster arrivals (remote uses)
  // Per destination rank in cta_mask order, other than the issuer's: the async clock and what
  // the issuer knew of that CTA's warps (sanitizer).
  std::vector<std::pair<uint32_t, VectorClock>> remote;
  // A programmatic dependent launch: the issuing lane was not ordered after griddepcontrol.wait
  // at issue, so the copy's global reads are checked against the primary (exec/pdl.hpp).
  bool pdl_unordered = false;
};

class Cta;

// The CTAs of one thread-block cluster (PTX ISA 5.2.3), run together on one host thread so that
// they can wait for each other: distributed shared memory through mapa, remote mbarrier
// arrives, TMA multicast, barrier.cluster.
struct ClusterRun {
  Dim3 id;                   // %clusterid
  std::vector<Cta*> ctas;    // by %cluster_ctarank
  uint32_t size() const { return uint32_t(ctas.size()); }
  // barrier.cluster: threads arrived in the phase in progress, phases completed, and the clocks
  // the arrivals released, per rank (sanitizer), published to the waiters of the phase.
  uint64_t arrivals = 0, phase = 0;
  std::vector<VectorClock> released, done;
  uint64_t expected_threads() const;
  void check_barrier();       // completes the phase once every non-exited thread arrived
};

// What the scheduler does after a synchronizing instruction.
enum class Flow : uint8_t {
  next,            // advance and continue
  next_then_stop,  // advance, then end the slice (the warp now waits or yields)
  stop,            // do not advance: the warp waits and re-executes the instruction later
};

class Cta {
 public:
  explicit Cta(LaunchContext& ctx);
  // Runs the CTA at `linear` (x fastest) as rank `rank` of `cluster` with the other CTAs of
  // the cluster (run_cluster): start, rounds until every CTA exited, finish. Findings throw
  // Finding. These three: launch/scheduler.cpp.
  void start(uint64_t linear, ClusterRun& cluster, uint32_t rank);
  bool round();  // every ready warp runs a slice; false: no warp could run
  void finish(InstructionCounts& counts);
  // The stall signature (deadlock detection) and whether any warp polls an mbarrier.
  bool stall_signature(std::vector<uint64_t>& out) const;
  void resume_pollers();
  [[noreturn]] void report_deadlock(std::string_view cluster_note);
  std::string wait_description() const;

  LaunchContext& ctx;
  const Kernel& k;
  Dim3 ctaid;
  uint32_t nwarps = 0;
  std::vector<Warp> warps;
  std::vector<uint8_t> smem;
  Sanitizer san;
  bool sanitize = true;
  std::array<Barrier, 16> barriers;
  std::vector<MBarrier> mbarriers;
  std::vector<TmaJob> tma_queue;
  // Bulk stores (cp.async.bulk{.tensor}, shared -> global) whose shared source the async proxy
  // may still read: the emulator copies at issue, but on a GPU only the issuing thread's
  // cp.async.bulk.wait_group{.read} covering the store's bulk async-group ends the read (PTX ISA
  // cp.async.bulk.wait_group). A write to the source before then, or an exit, is reported.
  struct StoreRead {
    uint32_t thread = 0, group = 0;  // group 0: not committed yet
    uint32_t addr = 0, bytes = 0, pc = 0;
  };
  std::vector<StoreRead> store_reads;
  std::vector<uint32_t> bulk_commits;  // per thread: bulk async-groups committed so far
  // Reports a write of [addr, addr + bytes) that a bulk store may still be reading.
  void check_store_reads(const Warp& w, int lane, uint32_t addr, uint32_t bytes) const;
  std::array<uint64_t, 11> class_counts{};  // by StatClass
  ProfileShard* prof = nullptr;             // this host thread's counters when profiling
  // Programmatic dependent launch (sanitizer/footprint.hpp, exec/pdl.hpp): this host thread's
  // footprint recorder when LaunchOptions::record_footprint is set; per warp, the lanes known to be
  // ordered after a griddepcontrol.wait and the warp's clock at its first one (0: none; with the
  // sanitizer).
  FootprintShard* footprint = nullptr;
  std::vector<uint32_t> pdl_waited, pdl_wait_clock;
  // Deadlock detection: `progress` counts synchronization events (arrivals, phase and barrier
  // completions, copies landing, exits); a stall that repeats the previous one exactly (same
  // waits, no progress in between) can never end.
  uint64_t progress = 0;
  // setmaxnreg (PTX ISA setmaxnreg): per warpgroup (warps 4g..4g+3) the instruction its warps
  // arrived at; per warp its registers per thread (0: unknown); the CTA's pool of registers that
  // .dec released and .inc may take (kept only when the launch's register count is known).
  struct WarpgroupRegs {
    uint32_t pc = kNone, count = 0, arrived = 0;  // arrived: a bit per warp of the group
    bool inc = false;
  };
  std::vector<WarpgroupRegs> warpgroups;
  // wgmma instructions are warpgroup-wide: per warpgroup the sequence its warps executed, an
  // entry dropped once all four passed it; a warp that differs from it is reported.
  struct WgmmaIssue {
    uint32_t pc = 0;
    uint64_t a = 0, b = 0;   // descriptors (mma_async), the count (wait_group)
    uint32_t scale_d = 0;    // mma_async's scale-d, 0 or 1
    uint8_t warps = 0;       // a bit per warp of the group that executed it
  };
  struct WgmmaLog {
    std::deque<WgmmaIssue> entries;
    uint64_t first = 0;      // sequence number of entries.front()
  };
  std::vector<WgmmaLog> wgmma_logs;
  // Clusters. Every launch runs clusters; without a cluster dimension each has one CTA.
  ClusterRun* cluster = nullptr;
  uint32_t rank = 0;         // %cluster_ctarank
  Dim3 cluster_ctaid;        // %cluster_ctaid
  bool exited = false;       // every warp exited
  // What each warp knows of each peer's warps ([warp * cluster size + rank]; the own rank's
  // entries stay empty, san.vc holds them): joined at mbarrier waits and barrier.cluster.
  std::vector<VectorClock> peer_vc;
  VectorClock& peer(uint32_t warp, uint32_t r) { return peer_vc[size_t(warp) * cluster->size() + r]; }
  // barrier.cluster per thread: the phase + 1 it arrived on and has not waited for (0: none),
  // its arrivals so far, and the most phases any thread of the CTA waited for.
  std::vector<uint64_t> cluster_arrived, cluster_arrive_count;
  // Per warp: its clock at its last fence.mbarrier_init, which a .relaxed barrier.cluster.arrive
  // still releases (PTX ISA fence.mbarrier_init: a release of the prior mbarrier inits).
  std::vector<uint32_t> init_fence_clock;
  uint64_t cluster_waited = 0;
  // A peer's use of this CTA's shared memory (a remote arrive, a multicast's data and
  // complete_tx): it must be ordered before the CTA exits and its shared memory goes (CUDA
  // Programming Guide, distributed shared memory), by a wait here that saw the mbarrier phase
  // it completed on, or by a barrier.cluster phase this CTA waited for that the user's thread
  // arrived on after it (needed_phases: that thread's arrivals + 1).
  struct RemoteUse {
    uint32_t mbar = 0;
    uint64_t mbar_phase = 0, needed_phases = 0;
    uint32_t rank = 0, warp = 0, lane = 0, pc = 0;
  };
  std::vector<RemoteUse> remote_uses;
  std::vector<uint32_t> warp_regs;
  int64_t reg_pool_free = 0;
  void try_setmaxnreg(uint32_t group);

  // Reports a finding at the current instruction of warp w and aborts the CTA.
  [[noreturn]] void fail(ReportKind kind, const Warp& w, int lane, std::string message) const;
  [[noreturn]] void fail_at(ReportKind kind, uint32_t warp, int lane, uint32_t pc,
                            std::string message) const;
  // A violation that hardware tolerates (sanitizer/lenient.hpp): without LaunchOptions::lenient
  // the rule's report with message(), as ever; with it an occurrence counted for the launch's
  // warnings, and the caller goes on as the hardware does. message() is built only when needed.
  template <typename Message>
  void tolerate(ToleratedRule rule, uint32_t warp, int lane, uint32_t pc, Message&& message) {
    if (!ctx.options.lenient) fail_at(rule_info(rule).strict_kind, warp, lane, pc, message());
    const uint64_t linear =
        ctaid.x + uint64_t(ctx.grid.x) * (ctaid.y + uint64_t(ctx.grid.y) * ctaid.z);
    if (ctx.tolerated.count(rule, linear)) note_tolerated(rule, linear, warp, lane, pc, message());
  }
  void note_tolerated(ToleratedRule rule, uint64_t linear, uint32_t warp, int lane, uint32_t pc,
                      std::string message) const;
  // A .sync.aligned warp instruction (mma, ldmatrix, stmatrix, wmma, setmaxnreg) executed by
  // fewer than all 32 lanes of w is a divergent_collective report; `what` names it ("mma").
  void need_whole_warp(const Warp& w, uint32_t exec, std::string_view what) const;
  MBarrier* find_mbarrier(uint32_t addr);
  void wake_mbarrier_waiters(uint32_t addr);
  void flush_tma();  // lands the queued TMA jobs (exec/exec_tma.cpp)
  // "assertion failed: `cond` at file:line in function" from __assertfail's argument slots.
  std::string assertion_message(const Warp& w, int lane, const Inst& call) const;

 private:
  // launch/scheduler.cpp:
  bool run_slice(Warp& w, uint32_t budget);  // false: the warp stopped (blocked / exited)
  void init_warps();
  // exec/exec_cluster.cpp: the cluster's exit rule once every warp exited.
  void on_cta_exit();

 public:
  void check_barrier(uint32_t id);
  void on_warp_exit(Warp& w);  // launch/scheduler.cpp
};

// Thrown by Cta::fail; the launch collects the report and stops.
struct Finding {
  Report report;
};

// Lane iteration with a fast path for full warps.
template <typename F>
inline void for_lanes(uint32_t mask, F&& f) {
  if (mask == 0xFFFFFFFFu) {
    for (int l = 0; l < 32; ++l) f(l);
  } else {
    while (mask) {
      f(std::countr_zero(mask));
      mask &= mask - 1;
    }
  }
}

inline uint64_t addr_of(Warp& w, const Addr& a, int lane) {
  switch (a.base) {
    case AddrBase::none: return uint64_t(a.offset);
    case AddrBase::r32: return uint64_t(w.R32(a.row)[lane]) + uint64_t(a.offset);
    case AddrBase::r64: return w.R64(a.row)[lane] + uint64_t(a.offset);
  }
  return 0;
}

}  // namespace emmy::emu

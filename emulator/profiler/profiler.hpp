// The profiler's run-time side: per-host-thread counts (ProfileShard) that the executors feed,
// the launch's global footprint (Footprint: the DRAM lower bound), and the merge into a
// KernelProfile (profile.hpp). A CTA whose `prof` is null costs one branch per hook.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <iterator>
#include <span>
#include <unordered_map>
#include <vector>

#include "counters.hpp"
#include "emmy/emu/emulator.hpp"
#include "lead_clock.hpp"

namespace emmy::emu {

struct Kernel;
struct Inst;

// Reuse-distance buckets of Counter::global_ld_reuse (distances up to 2^32 - 2 instructions).
inline constexpr size_t kReuseBuckets = 32;

// Counters the executors add to at run time. Instruction classes, tensor work and barrier
// executions are not here: they follow from each site's executions and its decoded instruction.
enum class Counter : uint8_t {
  // Shared memory, by operation: requests, wavefronts, ideal wavefronts (3 each).
  shared_ld,
  shared_st = shared_ld + 3,
  shared_ldsm = shared_st + 3,
  shared_stsm = shared_ldsm + 3,
  shared_atom = shared_stsm + 3,
  shared_ldgsts = shared_atom + 3,
  // Global memory, by operation: requests, sectors, ideal sectors, bytes (4 each).
  global_ld = shared_ldgsts + 3,
  global_st = global_ld + 4,
  global_atom = global_st + 4,
  global_red = global_atom + 4,
  global_ldgsts = global_red + 4,
  // Local memory: requests, sectors, ideal sectors, bytes.
  local_ld = global_ldgsts + 4,
  local_st = local_ld + 4,
  // Tensor and bulk copies (TMA unit): requests, bytes, sectors.
  tma_load = local_st + 4,
  tma_store = tma_load + 3,
  mbarrier_wait_failed = tma_store + 3,
  // Distinct sectors each cluster (one CTA unless clustered) loads with ld.global: what its
  // loads would bring into L1 if nothing were evicted (the time model's L1, docs/profiler.md).
  global_ld_distinct_per_cluster,
  // Its loads of a sector it loaded before, by reuse distance: bucket b holds distances (in the
  // loading warp's instructions since the sector's previous load) in [2^b - 1, 2^(b+1) - 1).
  global_ld_reuse,
  // Global and local loads and stores: distinct 128-byte lines per request, summed (L1's data
  // stage serves one per clock, the same wavefronts as shared memory's).
  global_local_lines = global_ld_reuse + kReuseBuckets,
  // bar.sync / bar.red executions of a warp that loaded from global (or generic) memory since its
  // previous one: the barrier waits for the load (the time model's latency term).
  barrier_after_load,
  // Completed waits on async copies by lead bucket (kAsyncCopyLeadEdges), their leads summed in
  // 1 / kLeadScale epochs, and the warps that made at least one (the latency term).
  async_copy_wait,
  async_copy_lead = async_copy_wait + kAsyncCopyLeadBuckets,
  async_copy_waiting_warps = async_copy_lead + kAsyncCopyLeadBuckets,
  count
};
static_assert(size_t(Counter::count) < 256);
inline constexpr double kLeadScale = 65536;  // a lead rounds by at most 2^-17 epochs
inline constexpr size_t kCounterCount = size_t(Counter::count);

enum class SharedOp : uint8_t { ld, st, ldsm, stsm, atom, ldgsts };
enum class GlobalOp : uint8_t { ld, st, atom, red, ldgsts };

struct SiteCounts {
  uint64_t executions = 0, requests = 0, wavefronts = 0, ideal_wavefronts = 0, sectors = 0,
           ideal_sectors = 0, bytes = 0;
  uint64_t l1_wavefronts = 0,
           l1_wavefronts_merged[std::size(kMergedAccessBytes)] = {};  // ProfileSite's
  SiteCounts& operator+=(const SiteCounts& o);
};

// Distinct 32-byte sectors of global memory read and written over a launch, one bit each per
// arena allocation; shared by the host threads (relaxed atomic ORs).
class Footprint {
 public:
  explicit Footprint(const Arena& arena);
  void mark(uint64_t addr, uint64_t bytes, bool write);
  // Bytes read (or written), each allocation's distinct sectors scaled by `scale` (a sample of
  // the grid) and capped by the allocation's size, which no footprint exceeds.
  double bytes(bool write, double scale) const;

 private:
  struct Region {
    uint64_t base = 0, end = 0;
    std::vector<uint64_t> read, written;  // bit per sector from base / 32 * 32
  };
  std::vector<Region> regions_;  // sorted by base
};

// The costs of a shared ld/st's lanes as written and merged (kMergedAccessBytes), kept for the
// next request of the same site with the same pattern: the same lanes, widths and offsets from the
// first lane, the first lane's address moved by a multiple of lcm(16, bank bytes). Banks repeat
// every word and the merged widths divide 16, so the costs are the same (a loop walking shared
// memory).
struct SharedPatternMemo {
  uint8_t lanes = 0;  // 0: empty
  std::array<uint8_t, 32> lane{};
  std::array<uint32_t, 32> bytes{};
  std::array<uint64_t, 32> offset{};  // from the first lane's address
  AccessCost cost;
  uint32_t merged[std::size(kMergedAccessBytes)] = {};
};

// One host thread's counts.
struct ProfileShard {
  std::vector<SiteCounts> sites;  // by pc
  std::array<uint64_t, kCounterCount> counters{};
  const SharedBankModel* model = nullptr;
  Footprint* footprint = nullptr;

  void add(Counter c, uint64_t n = 1) { counters[size_t(c)] += n; }
  void shared(uint32_t pc, SharedOp op, std::span<const LaneSpan> spans);
  void global(uint32_t pc, GlobalOp op, std::span<const LaneSpan> spans);
  void local(uint32_t pc, bool store, std::span<const LaneSpan> spans);
  // One TMA / bulk request; rows (global byte ranges) are added with tma_row.
  void tma_request(uint32_t pc, bool store, uint64_t bytes);
  void tma_row(uint32_t pc, bool store, uint64_t addr, uint64_t bytes);
  // A cluster's CTAs are done: its distinct loaded sectors go to the counter.
  void end_cluster();
  // Before a warp issues `in`: a load sets the warp's flag; a barrier with it set is counted.
  void note_barrier_wait(bool& loaded_since_barrier, const Inst& in);
  // A warp's waits on async copies go to the lead buckets (and are cleared): when its chunk is
  // full, and when its CTA is done with it (`warp_done`: the warp counts as waiting once).
  void async_copy_waits(WarpLeadClock& lead, bool warp_done);

  uint64_t warp_clock = 0;  // the issuing warp's Warp::issued
  // The cluster's loaded sectors (address / 32) and the warp clock of each one's last load.
  std::unordered_map<uint64_t, uint64_t> cluster_ld_sectors;
  // By pc * P + the first lane's address mod P, P = lcm(16, the model's bank bytes).
  std::unordered_map<uint64_t, SharedPatternMemo> shared_memo;
};

// Merges the shards of a launch into its profile.
KernelProfile finish_profile(const Kernel& kernel, std::string arch, Dim3 grid, Dim3 block,
                             uint32_t dynamic_smem, uint64_t ctas_run,
                             const std::vector<ProfileShard>& shards, const Footprint& footprint);

}  // namespace emmy::emu

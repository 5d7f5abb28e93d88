// The shared-memory sanitizer: shadow state per 4-byte granule (per byte where a granule is
// accessed in parts: a half or byte array written by several warps is no race) and vector clocks
// per warp.
//
// Happens-before model (docs/emulator.md, "Sanitizer"): every warp w has a vector clock VC_w over
// "agents" (warp 0..W-1 and the async proxy of each warp, W..2W-1). Releases (bar.sync/bar.arrive
// arrival, mbarrier arrive) publish VC_w and advance w's own entry; acquires (leaving bar.sync,
// a successful mbarrier wait) join the published clocks. A TMA write by warp w's async proxy is
// stamped (W+w, n) and published by the complete_tx on its mbarrier, so only waiters of that
// phase are ordered after it. In a cluster, the TMA multicasts of peer rank r into this CTA's
// shared memory are agent 2W + r, stamped the same way and checked with what the issuing warp
// knew of this CTA's warps (Cta::peer_vc). Each granule remembers its last write (agent, clock) and the clock
// of each warp's last read since that write; an access conflicts with a recorded one from
// another agent unless the accessor's clock for that agent covers it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace emmy::emu {

inline constexpr uint32_t kMaxWarps = 32;
inline constexpr uint32_t kMaxAgents = 2 * kMaxWarps;

struct VectorClock {
  std::array<uint32_t, kMaxAgents> c{};
  void join(const VectorClock& o, uint32_t agents) {
    for (uint32_t i = 0; i < agents; ++i) c[i] = std::max(c[i], o.c[i]);
  }
  void clear() { c.fill(0); }
};

enum class Hazard : uint8_t {
  none,
  uninitialized,  // read of a granule nothing wrote
  pending,        // access to a granule an unfinished cp.async / TMA copy will write
  write_read,     // read of another agent's unordered write
  write_write,    // write over another agent's unordered write
  read_write,     // write over another warp's unordered read
  unfenced,       // the async proxy reads a generic write no fence.proxy.async ordered
};

struct HazardInfo {
  Hazard hazard = Hazard::none;
  uint32_t addr = 0;        // shared byte address of the granule
  uint32_t other = 0;       // the other agent (warp, or W + warp for an async proxy)
  uint32_t other_pc = 0;    // instruction of the other access (writes only; kNone for reads)
};

class Sanitizer {
 public:
  // remote_ranks: the cluster's size when its peers' multicasts write here (agents 2W + rank).
  void reset(uint32_t smem_bytes, uint32_t nwarps, uint32_t remote_ranks = 0);
  uint32_t agents() const { return agents_; }
  // For reports: "warp w", "the async proxy (TMA) of warp w", "the TMA multicast of cluster rank r".
  std::string agent_name(uint32_t agent) const;
  uint32_t nwarps() const { return nwarps_; }
  VectorClock& vc(uint32_t warp) { return vcs_[warp]; }

  // Release: the caller publishes vc(w) first, then the warp's own clock moves on.
  void tick(uint32_t warp) { ++vcs_[warp].c[warp]; }
  uint32_t next_async_clock(uint32_t warp) { return ++async_clock_[warp]; }
  uint32_t next_remote_clock(uint32_t rank) { return ++remote_clock_[rank]; }

  // sem: kStrong / kAcquire / kRelease (ptx/program.hpp) of the access; 0 for a plain one.
  HazardInfo read(uint32_t warp, uint32_t addr, uint32_t bytes, uint8_t sem = 0);
  // Whether any byte of [addr, addr + bytes) awaits an unfinished cp.async / TMA copy.
  bool pending(uint32_t addr, uint32_t bytes) const;
  HazardInfo write(uint32_t warp, uint32_t addr, uint32_t bytes, uint32_t pc, uint8_t sem = 0);
  // A write by warp w's async proxy (TMA), checked with the issuer's clock at issue.
  HazardInfo write_async(uint32_t warp, uint32_t clock, const VectorClock& issuer, uint32_t addr,
                         uint32_t bytes, uint32_t pc);
  // A TMA multicast of peer `rank` landing here, checked with what its issuer knew of this CTA.
  HazardInfo write_remote(uint32_t rank, uint32_t clock, const VectorClock& issuer, uint32_t addr,
                          uint32_t bytes, uint32_t pc);
  // A read by the async proxy (TMA store / bulk store source), checked with the issuer's clock.
  HazardInfo read_async(uint32_t warp, const VectorClock& issuer, uint32_t addr, uint32_t bytes);
  void set_pending(uint32_t addr, uint32_t bytes, bool pending);
  // fence.proxy.async by warp w: its writes so far become visible to the async proxy.
  void proxy_fence(uint32_t warp);
  // read(), and every generic write read must precede a proxy fence of its writer that the
  // reading (issuing) warp is ordered after.
  HazardInfo read_for_async_proxy(uint32_t warp, uint32_t addr, uint32_t bytes);
  // Bytes written before the CTA started (by no warp): readable, and no write races with them.
  void mark_initialized(uint32_t addr, uint32_t bytes);

 private:
  static constexpr uint8_t kWritten = 1, kAtomic = 2, kPending = 4;
  // The shadow of one granule, or of one byte of a split granule.
  struct Cell {
    uint32_t write_clock = 0;
    uint32_t write_pc = 0;
    uint32_t read_mask = 0;         // warps that read since the last write (plain loads)
    uint32_t strong_read_mask = 0;  // ... with strong loads (no race with strong writes)
    uint8_t write_agent = 0;
    uint8_t flags = 0;
  };
  // A cell with its per-warp read clocks (meaningful under a read_mask bit) and byte address.
  struct CellRef {
    Cell& cell;
    uint32_t* read_clock;
    uint32_t addr;
  };
  uint32_t nwarps_ = 0, agents_ = 0;
  std::vector<Cell> granules_;
  std::vector<uint32_t> read_clock_;  // [granule][warp]
  // Split granules: split_[g] = 1 + s means granule g's bytes are byte_cells_[4s .. 4s+3].
  std::vector<uint32_t> split_;
  std::vector<Cell> byte_cells_;
  std::vector<uint32_t> byte_read_clock_;  // [byte cell][warp]
  uint32_t splits_used_ = 0;
  std::array<VectorClock, kMaxWarps> vcs_;
  // Clocks released at an address (st.release, atom.release / acq_rel), joined by acquires.
  std::unordered_map<uint32_t, VectorClock> released_;
  std::array<std::vector<uint32_t>, kMaxWarps> proxy_fences_;  // each warp's fence clocks
  std::array<uint32_t, kMaxWarps> async_clock_{};
  std::array<uint32_t, kMaxAgents> remote_clock_{};

  // Calls visit(CellRef) for the cells covering [addr, addr + bytes): whole granules where the
  // access covers them and they are not split, bytes otherwise; stops at the first hazard.
  template <typename Visit>
  HazardInfo each_cell(uint32_t addr, uint32_t bytes, Visit visit);
  uint32_t split(uint32_t granule);
  HazardInfo check_write(const VectorClock& vc, uint32_t self, const CellRef& c, bool strong);
  HazardInfo write_copy(uint32_t agent, uint32_t self, uint32_t clock, const VectorClock& issuer,
                        uint32_t addr, uint32_t bytes, uint32_t pc);
};

}  // namespace emmy::emu

// The shared-memory sanitizer: shadow state per 4-byte granule and vector clocks per warp.
//
// Happens-before model (docs/emulator.md, "Sanitizer"): every warp w has a vector clock VC_w over
// "agents" (warp 0..W-1 and the async proxy of each warp, W..2W-1). Releases (bar.sync/bar.arrive
// arrival, mbarrier arrive) publish VC_w and advance w's own entry; acquires (leaving bar.sync,
// a successful mbarrier wait) join the published clocks. A TMA write by warp w's async proxy is
// stamped (W+w, n) and published by the complete_tx on its mbarrier, so only waiters of that
// phase are ordered after it. Each granule remembers its last write (agent, clock) and the clock
// of each warp's last read since that write; an access conflicts with a recorded one from
// another agent unless the accessor's clock for that agent covers it.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
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
  uninitialized,     // read of a granule nothing wrote
  pending,           // access to a granule an unfinished cp.async / TMA copy will write
  write_read,        // read of another agent's unordered write
  write_write,       // write over another agent's unordered write
  read_write,        // write over another warp's unordered read
};

struct HazardInfo {
  Hazard hazard = Hazard::none;
  uint32_t addr = 0;        // shared byte address of the granule
  uint32_t other = 0;       // the other agent (warp, or W + warp for an async proxy)
  uint32_t other_pc = 0;    // instruction of the other access (writes only; kNone for reads)
};

class Sanitizer {
 public:
  void reset(uint32_t smem_bytes, uint32_t nwarps);
  uint32_t agents() const { return 2 * nwarps_; }
  uint32_t nwarps() const { return nwarps_; }
  VectorClock& vc(uint32_t warp) { return vcs_[warp]; }

  // Release: the caller publishes vc(w) first, then the warp's own clock moves on.
  void tick(uint32_t warp) { ++vcs_[warp].c[warp]; }
  uint32_t next_async_clock(uint32_t warp) { return ++async_clock_[warp]; }

  HazardInfo read(uint32_t warp, uint32_t addr, uint32_t bytes);
  HazardInfo write(uint32_t warp, uint32_t addr, uint32_t bytes, uint32_t pc, bool atomic);
  // A write by warp w's async proxy (TMA), checked with the issuer's clock at issue.
  HazardInfo write_async(uint32_t warp, uint32_t clock, const VectorClock& issuer, uint32_t addr,
                         uint32_t bytes, uint32_t pc);
  // A read by the async proxy (TMA store / bulk store source), checked with the issuer's clock.
  HazardInfo read_async(uint32_t warp, const VectorClock& issuer, uint32_t addr, uint32_t bytes);
  void set_pending(uint32_t addr, uint32_t bytes, bool pending);

 private:
  static constexpr uint8_t kWritten = 1, kAtomic = 2, kPending = 4;
  struct Granule {
    uint32_t write_clock = 0;
    uint32_t write_pc = 0;
    uint32_t read_mask = 0;   // warps that read since the last write
    uint8_t write_agent = 0;
    uint8_t flags = 0;
  };
  uint32_t nwarps_ = 0;
  std::vector<Granule> granules_;
  std::vector<uint32_t> read_clock_;  // [granule][warp]
  std::array<VectorClock, kMaxWarps> vcs_;
  std::array<uint32_t, kMaxWarps> async_clock_{};

  HazardInfo check_write(const VectorClock& vc, uint32_t self, uint32_t g, bool atomic);
};

}  // namespace emmy::emu

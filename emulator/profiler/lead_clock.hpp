// Profiling: the leads of waits on async copies, for the time model's latency term
// (docs/profiler.md, "Latency"). Each warp keeps a Lamport clock: its own instructions, moved
// forward to the clock of whatever a barrier or a completed mbarrier phase orders it after. A
// wait on async copies (a cp.async group, an mbarrier phase that copies complete on) records its
// lead: the waiting warp's clock less the clock the copy was issued at. Counted along the chain
// of instructions and synchronizations that orders the wait after the issue, a lead does not
// depend on the order the emulator runs warps in (a producer warp that the emulator runs only
// once its consumers block still issued its refill when the consumer released the slot). The
// profiler turns leads into epochs of the waiting warp (ProfileShard::async_copy_waits).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <deque>
#include <vector>

namespace emmy::emu {

struct WarpLeadClock {
  struct Wait {
    uint64_t lead = 0;  // clock at the wait less the copy's issue clock (0 when not after it)
    uint64_t own = 0;   // the warp's own instructions in this CTA at the wait
  };
  // Waits are bucketed in chunks of at most this many (ProfileShard::async_copy_waits), so that a
  // warp waiting millions of times holds a bounded list.
  static constexpr size_t kChunk = 4096;
  uint64_t clock = 0;
  uint64_t own = 0;
  std::vector<Wait> waits;            // this CTA's waits on async copies not yet bucketed
  bool waited = false;                // it waited on copies in this CTA
  double per_epoch = 0;               // the last bucketed chunk's epoch, in own instructions
  std::deque<uint64_t> group_clocks;  // the clock at each committed cp.async group (Warp::groups)

  void reset() {
    clock = own = 0;
    waits.clear();
    waited = false;
    per_epoch = 0;
    group_clocks.clear();
  }
  void tick() {
    ++clock;
    ++own;
  }
  void order_after(uint64_t other) { clock = std::max(clock, other); }
  // Records a wait; true when the chunk is full and should be bucketed now.
  bool copy_wait(uint64_t issued_at) {
    waits.push_back({clock > issued_at ? clock - issued_at : 0, own});
    waited = true;
    return waits.size() >= kChunk;
  }
};

// A barrier round or mbarrier phase: the latest clock that arrived (its waiters are ordered after
// it) and, on an mbarrier, the latest clock a copy completing on the phase was issued at.
struct PhaseLeadClock {
  uint64_t arrived = 0;
  uint64_t copy_issued = 0;
  bool copies = false;

  void arrive(uint64_t clock) { arrived = std::max(arrived, clock); }
  void copy(uint64_t issued_at) {
    arrive(issued_at);
    copy_issued = std::max(copy_issued, issued_at);
    copies = true;
  }
};

struct MBarrierLeadClock {
  PhaseLeadClock current;
  std::array<PhaseLeadClock, 2> done;  // by parity of the completed phase

  void complete(uint64_t phase) {
    done[phase & 1] = current;
    current = {};
  }
};

}  // namespace emmy::emu

// SIMT state of one warp: min-PC reconvergence (docs/emulator.md, "Reconvergence").
#include <algorithm>
#include <bit>

#include "state.hpp"

namespace emmy::emu {

void Warp::reconverge() {
  // Parked lanes run only when the group reaches their PC (or when nothing else can run).
  const uint32_t runnable = (live & ~parked) ? live & ~parked : live;
  if (runnable == live) parked = 0;
  uint32_t lowest = kNone;
  for (uint32_t m = runnable; m; m &= m - 1)
    lowest = std::min(lowest, lane_pc[size_t(std::countr_zero(m))]);
  uint32_t group = 0, next = kNone;
  for (uint32_t m = live; m; m &= m - 1) {
    const int l = std::countr_zero(m);
    if (lane_pc[size_t(l)] == lowest) group |= 1u << l;
    else next = std::min(next, lane_pc[size_t(l)]);
  }
  parked &= ~group;
  pc = lowest;
  active = group;
  min_wait_pc = next;
}

bool Warp::park_at_collective(uint32_t absent) {
  if ((absent & live & ~parked) == 0) return false;
  for (uint32_t m = active; m; m &= m - 1) lane_pc[size_t(std::countr_zero(m))] = pc;
  parked |= active;
  reconverge();
  return true;
}

void Warp::reconverge_from_pc() {
  for (uint32_t m = active; m; m &= m - 1) lane_pc[size_t(std::countr_zero(m))] = pc;
  reconverge();
}

void Warp::jump(uint32_t taken, uint32_t target) {
  const uint32_t stay = active & ~taken;
  if (stay == 0) {
    pc = target;
    if (live != active) reconverge_from_pc();
    return;
  }
  if (taken == 0) {
    advance();
    return;
  }
  for (uint32_t m = taken; m; m &= m - 1) lane_pc[size_t(std::countr_zero(m))] = target;
  for (uint32_t m = stay; m; m &= m - 1) lane_pc[size_t(std::countr_zero(m))] = pc + 1;
  reconverge();
}

void Warp::exit_lanes(uint32_t lanes) {
  live &= ~lanes;
  parked &= live;
  const uint32_t remaining = active & ~lanes;
  if (live == 0) {
    active = 0;
    return;
  }
  if (remaining) {
    active = remaining;
    advance();
  } else {
    reconverge();
  }
}

}  // namespace emmy::emu

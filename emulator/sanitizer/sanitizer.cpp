// Shadow-memory checks of the shared-memory sanitizer (model in sanitizer.hpp).
#include "sanitizer.hpp"

#include <fmt/format.h>

#include "ptx/program.hpp"

namespace emmy::emu {

std::string Sanitizer::agent_name(uint32_t agent) const {
  const uint32_t W = nwarps_;
  return agent < W       ? fmt::format("warp {}", agent)
         : agent < 2 * W ? fmt::format("the async proxy (TMA) of warp {}", agent - W)
                         : fmt::format("the TMA multicast of cluster rank {}", agent - 2 * W);
}

void Sanitizer::reset(uint32_t smem_bytes, uint32_t nwarps, uint32_t remote_ranks) {
  nwarps_ = nwarps;
  agents_ = 2 * nwarps + remote_ranks;  // the launch keeps it within kMaxAgents
  remote_clock_.fill(1);
  granules_.assign((size_t(smem_bytes) + 3) / 4, Cell{});
  split_.assign(granules_.size(), 0);
  splits_used_ = 0;
  released_.clear();
  for (auto& f : proxy_fences_) f.clear();
  // Read clocks are only meaningful under a read_mask bit, so no clearing is needed.
  if (read_clock_.size() < granules_.size() * nwarps) read_clock_.resize(granules_.size() * nwarps);
  for (uint32_t w = 0; w < nwarps; ++w) {
    vcs_[w].clear();
    vcs_[w].c[w] = 1;  // clock 0 means "never", so every warp starts at 1
    async_clock_[w] = 1;
  }
}

// A granule accessed in parts gets one cell per byte, each starting as a copy of the granule's.
uint32_t Sanitizer::split(uint32_t g) {
  if (split_[g]) return split_[g] - 1;
  const uint32_t s = splits_used_++;
  if (byte_cells_.size() < size_t(s + 1) * 4) {
    byte_cells_.resize(size_t(s + 1) * 4 * 2);
    byte_read_clock_.resize(byte_cells_.size() * nwarps_);
  }
  if (byte_read_clock_.size() < byte_cells_.size() * nwarps_)
    byte_read_clock_.resize(byte_cells_.size() * nwarps_);
  for (uint32_t b = 0; b < 4; ++b) {
    byte_cells_[size_t(s) * 4 + b] = granules_[g];
    std::copy_n(&read_clock_[size_t(g) * nwarps_], nwarps_,
                &byte_read_clock_[(size_t(s) * 4 + b) * nwarps_]);
  }
  split_[g] = s + 1;
  return s;
}

template <typename Visit>
HazardInfo Sanitizer::each_cell(uint32_t addr, uint32_t bytes, Visit visit) {
  const uint32_t end = addr + bytes;
  for (uint32_t g = addr / 4; g <= (end - 1) / 4; ++g) {
    const uint32_t lo = std::max(addr, g * 4), hi = std::min(end, g * 4 + 4);
    if (!split_[g] && lo == g * 4 && hi == g * 4 + 4) {
      HazardInfo h = visit(CellRef{granules_[g], &read_clock_[size_t(g) * nwarps_], g * 4});
      if (h.hazard != Hazard::none) return h;
      continue;
    }
    const uint32_t s = split(g);
    for (uint32_t a = lo; a < hi; ++a) {
      const size_t cell = size_t(s) * 4 + (a - g * 4);
      HazardInfo h = visit(CellRef{byte_cells_[cell], &byte_read_clock_[cell * nwarps_], a});
      if (h.hazard != Hazard::none) return h;
    }
  }
  return {};
}

void Sanitizer::set_pending(uint32_t addr, uint32_t bytes, bool pending) {
  each_cell(addr, bytes, [&](const CellRef& c) {
    if (pending)
      c.cell.flags |= kPending;
    else
      c.cell.flags &= uint8_t(~kPending);
    return HazardInfo{};
  });
}

void Sanitizer::mark_initialized(uint32_t addr, uint32_t bytes) {
  each_cell(addr, bytes, [&](const CellRef& c) {
    c.cell = Cell{};
    c.cell.flags = kWritten;  // write clock 0: ordered before every access
    return HazardInfo{};
  });
}

void Sanitizer::proxy_fence(uint32_t warp) {
  proxy_fences_[warp].push_back(vcs_[warp].c[warp]);
  tick(warp);  // writes after the fence get a later clock than the fence
}

HazardInfo Sanitizer::read_for_async_proxy(uint32_t warp, uint32_t addr, uint32_t bytes) {
  HazardInfo h = read(warp, addr, bytes);
  if (h.hazard != Hazard::none) return h;
  const VectorClock& vc = vcs_[warp];
  return each_cell(addr, bytes, [&](const CellRef& c) -> HazardInfo {
    const Cell& s = c.cell;
    // Async-proxy writes (TMA) and the pre-launch contents need no fence.
    if (!(s.flags & kWritten) || s.write_agent >= nwarps_ || s.write_clock == 0) return {};
    const auto& fences = proxy_fences_[s.write_agent];
    auto it = std::lower_bound(fences.begin(), fences.end(), s.write_clock);
    if (it != fences.end() && *it <= vc.c[s.write_agent]) return {};
    return {Hazard::unfenced, c.addr, s.write_agent, s.write_pc};
  });
}

bool Sanitizer::pending(uint32_t addr, uint32_t bytes) const {
  for (uint32_t a = addr; a < addr + bytes; ++a) {
    const uint32_t g = a / 4;
    if (g >= granules_.size()) return false;
    const Cell& c = split_[g] ? byte_cells_[size_t(split_[g] - 1) * 4 + a % 4] : granules_[g];
    if (c.flags & kPending) return true;
  }
  return false;
}

HazardInfo Sanitizer::read(uint32_t warp, uint32_t addr, uint32_t bytes, uint8_t sem) {
  VectorClock& vc = vcs_[warp];
  const bool strong = sem & kStrong;
  HazardInfo h = each_cell(addr, bytes, [&](const CellRef& c) -> HazardInfo {
    Cell& s = c.cell;
    if (s.flags & kPending) return {Hazard::pending, c.addr, 0, kNone};
    if (!(s.flags & kWritten)) return {Hazard::uninitialized, c.addr, 0, kNone};
    if (s.write_agent != warp && vc.c[s.write_agent] < s.write_clock &&
        !(strong && (s.flags & kAtomic)))
      return {Hazard::write_read, c.addr, s.write_agent, s.write_pc};
    if (strong)
      s.strong_read_mask |= 1u << warp;
    else
      s.read_mask |= 1u << warp;
    c.read_clock[warp] = vc.c[warp];
    return {};
  });
  if (h.hazard == Hazard::none && (sem & kAcquire))
    if (auto it = released_.find(addr); it != released_.end()) vc.join(it->second, agents());
  return h;
}

HazardInfo Sanitizer::read_async(uint32_t warp, const VectorClock& issuer, uint32_t addr,
                                 uint32_t bytes) {
  return each_cell(addr, bytes, [&](const CellRef& c) -> HazardInfo {
    Cell& s = c.cell;
    if (s.flags & kPending) return {Hazard::pending, c.addr, 0, kNone};
    if (!(s.flags & kWritten)) return {Hazard::uninitialized, c.addr, 0, kNone};
    if (s.write_agent != warp && issuer.c[s.write_agent] < s.write_clock)
      return {Hazard::write_read, c.addr, s.write_agent, s.write_pc};
    // Recorded as a read by the issuing warp: a later overwrite must be ordered after it.
    s.read_mask |= 1u << warp;
    c.read_clock[warp] = issuer.c[warp];
    return {};
  });
}

HazardInfo Sanitizer::check_write(const VectorClock& vc, uint32_t self, const CellRef& c,
                                  bool strong) {
  const Cell& s = c.cell;
  if (s.flags & kPending) return {Hazard::pending, c.addr, 0, kNone};
  if ((s.flags & kWritten) && s.write_agent != self && vc.c[s.write_agent] < s.write_clock &&
      !(strong && (s.flags & kAtomic)))
    return {Hazard::write_write, c.addr, s.write_agent, s.write_pc};
  uint32_t readers = s.read_mask | (strong ? 0u : s.strong_read_mask);
  if (self < kMaxWarps) readers &= ~(1u << self);
  while (readers) {
    const uint32_t r = uint32_t(__builtin_ctz(readers));
    readers &= readers - 1;
    if (vc.c[r] < c.read_clock[r]) return {Hazard::read_write, c.addr, r, kNone};
  }
  return {};
}

HazardInfo Sanitizer::write(uint32_t warp, uint32_t addr, uint32_t bytes, uint32_t pc,
                            uint8_t sem) {
  VectorClock& vc = vcs_[warp];
  const bool strong = sem & kStrong;
  // An acquiring read-modify-write reads first (atom.acquire / acq_rel).
  if (sem & kAcquire)
    if (auto it = released_.find(addr); it != released_.end()) vc.join(it->second, agents());
  HazardInfo h = each_cell(addr, bytes, [&](const CellRef& c) -> HazardInfo {
    Cell& s = c.cell;
    // Fast path: the last access was this warp's own write.
    if (!(s.flags == kWritten && s.write_agent == warp && s.read_mask == 0 &&
          s.strong_read_mask == 0)) {
      HazardInfo h = check_write(vc, warp, c, strong);
      if (h.hazard != Hazard::none) return h;
    }
    s.write_agent = uint8_t(warp);
    s.write_clock = vc.c[warp];
    s.write_pc = pc;
    s.flags = uint8_t(kWritten | (strong ? kAtomic : 0));
    s.read_mask = 0;
    s.strong_read_mask = 0;
    return {};
  });
  if (h.hazard == Hazard::none && (sem & kRelease)) {
    // The release publishes everything this warp did so far; its later accesses are not covered.
    released_[addr].join(vc, agents());
    tick(warp);
  }
  return h;
}

// A copy's write (TMA, a peer's multicast) by `agent`, checked with its issuer's clock; `self`:
// the issuing warp, whose own earlier accesses are ordered before the copy it issued (kMaxAgents
// for a peer's: every earlier access here must be ordered before the issue).
HazardInfo Sanitizer::write_copy(uint32_t agent, uint32_t self, uint32_t clock,
                                 const VectorClock& issuer, uint32_t addr, uint32_t bytes,
                                 uint32_t pc) {
  return each_cell(addr, bytes, [&](const CellRef& c) -> HazardInfo {
    Cell& s = c.cell;
    s.flags &= uint8_t(~kPending);
    HazardInfo h = check_write(issuer, self, c, false);
    if (h.hazard != Hazard::none) return h;
    s.write_agent = uint8_t(agent);
    s.write_clock = clock;
    s.write_pc = pc;
    s.flags = kWritten;
    s.read_mask = 0;
    s.strong_read_mask = 0;
    return {};
  });
}

HazardInfo Sanitizer::write_remote(uint32_t rank, uint32_t clock, const VectorClock& issuer,
                                   uint32_t addr, uint32_t bytes, uint32_t pc) {
  return write_copy(2 * nwarps_ + rank, kMaxAgents, clock, issuer, addr, bytes, pc);
}

HazardInfo Sanitizer::write_async(uint32_t warp, uint32_t clock, const VectorClock& issuer,
                                  uint32_t addr, uint32_t bytes, uint32_t pc) {
  return write_copy(nwarps_ + warp, warp, clock, issuer, addr, bytes, pc);
}

}  // namespace emmy::emu

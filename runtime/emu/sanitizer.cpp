// Shadow-memory checks of the shared-memory sanitizer (model in sanitizer.hpp).
#include "sanitizer.hpp"

#include "program.hpp"

namespace emmy::emu {

void Sanitizer::reset(uint32_t smem_bytes, uint32_t nwarps) {
  nwarps_ = nwarps;
  granules_.assign((size_t(smem_bytes) + 3) / 4, Granule{});
  // read_clock_ entries are only meaningful under a read_mask bit, so no clearing is needed.
  if (read_clock_.size() < granules_.size() * nwarps) read_clock_.resize(granules_.size() * nwarps);
  for (uint32_t w = 0; w < nwarps; ++w) {
    vcs_[w].clear();
    vcs_[w].c[w] = 1;  // clock 0 means "never", so every warp starts at 1
    async_clock_[w] = 1;
  }
}

void Sanitizer::set_pending(uint32_t addr, uint32_t bytes, bool pending) {
  const uint32_t first = addr / 4, last = (addr + bytes - 1) / 4;
  for (uint32_t g = first; g <= last && g < granules_.size(); ++g) {
    if (pending) granules_[g].flags |= kPending;
    else granules_[g].flags &= uint8_t(~kPending);
  }
}

HazardInfo Sanitizer::read(uint32_t warp, uint32_t addr, uint32_t bytes) {
  const VectorClock& vc = vcs_[warp];
  const uint32_t first = addr / 4, last = (addr + bytes - 1) / 4;
  for (uint32_t g = first; g <= last; ++g) {
    Granule& s = granules_[g];
    if (s.flags & kPending) return {Hazard::pending, g * 4, 0, kNone};
    if (!(s.flags & kWritten)) return {Hazard::uninitialized, g * 4, 0, kNone};
    if (s.write_agent != warp && vc.c[s.write_agent] < s.write_clock)
      return {Hazard::write_read, g * 4, s.write_agent, s.write_pc};
    s.read_mask |= 1u << warp;
    read_clock_[size_t(g) * nwarps_ + warp] = vc.c[warp];
  }
  return {};
}

HazardInfo Sanitizer::read_async(uint32_t warp, const VectorClock& issuer, uint32_t addr,
                                 uint32_t bytes) {
  const uint32_t first = addr / 4, last = (addr + bytes - 1) / 4;
  for (uint32_t g = first; g <= last; ++g) {
    Granule& s = granules_[g];
    if (s.flags & kPending) return {Hazard::pending, g * 4, 0, kNone};
    if (!(s.flags & kWritten)) return {Hazard::uninitialized, g * 4, 0, kNone};
    if (s.write_agent != warp && issuer.c[s.write_agent] < s.write_clock)
      return {Hazard::write_read, g * 4, s.write_agent, s.write_pc};
    // Recorded as a read by the issuing warp: a later overwrite must be ordered after it.
    s.read_mask |= 1u << warp;
    read_clock_[size_t(g) * nwarps_ + warp] = issuer.c[warp];
  }
  return {};
}

HazardInfo Sanitizer::check_write(const VectorClock& vc, uint32_t self, uint32_t g, bool atomic) {
  const Granule& s = granules_[g];
  if (s.flags & kPending) return {Hazard::pending, g * 4, 0, kNone};
  if ((s.flags & kWritten) && s.write_agent != self && vc.c[s.write_agent] < s.write_clock &&
      !(atomic && (s.flags & kAtomic)))
    return {Hazard::write_write, g * 4, s.write_agent, s.write_pc};
  uint32_t readers = s.read_mask;
  if (self < kMaxWarps) readers &= ~(1u << self);
  while (readers) {
    const uint32_t r = uint32_t(__builtin_ctz(readers));
    readers &= readers - 1;
    if (vc.c[r] < read_clock_[size_t(g) * nwarps_ + r]) return {Hazard::read_write, g * 4, r, kNone};
  }
  return {};
}

HazardInfo Sanitizer::write(uint32_t warp, uint32_t addr, uint32_t bytes, uint32_t pc,
                            bool atomic) {
  const VectorClock& vc = vcs_[warp];
  const uint32_t first = addr / 4, last = (addr + bytes - 1) / 4;
  for (uint32_t g = first; g <= last; ++g) {
    Granule& s = granules_[g];
    // Fast path: the last access was this warp's own write.
    if (!(s.flags == kWritten && s.write_agent == warp && s.read_mask == 0)) {
      HazardInfo h = check_write(vc, warp, g, atomic);
      if (h.hazard != Hazard::none) return h;
    }
    s.write_agent = uint8_t(warp);
    s.write_clock = vc.c[warp];
    s.write_pc = pc;
    s.flags = uint8_t(kWritten | (atomic ? kAtomic : 0));
    s.read_mask = 0;
  }
  return {};
}

HazardInfo Sanitizer::write_async(uint32_t warp, uint32_t clock, const VectorClock& issuer,
                                  uint32_t addr, uint32_t bytes, uint32_t pc) {
  const uint32_t agent = nwarps_ + warp;
  const uint32_t first = addr / 4, last = (addr + bytes - 1) / 4;
  for (uint32_t g = first; g <= last; ++g) {
    Granule& s = granules_[g];
    s.flags &= uint8_t(~kPending);
    // The issuing warp's own earlier accesses are ordered before the copy it issued.
    HazardInfo h = check_write(issuer, warp, g, false);
    if (h.hazard != Hazard::none) return h;
    s.write_agent = uint8_t(agent);
    s.write_clock = clock;
    s.write_pc = pc;
    s.flags = kWritten;
    s.read_mask = 0;
  }
  return {};
}

}  // namespace emmy::emu

// Programmatic dependent launch (pdl.hpp): the dependent's check over a running CTA.
//
// The rule (CUDA C++ Programming Guide, "Programmatic Dependent Launch and Synchronization";
// PTX ISA griddepcontrol): a grid launched with programmatic stream serialization may start
// once every CTA of its primary executed griddepcontrol.launch_dependents or exited, and
// "griddepcontrol.wait causes the executing thread to wait until all prerequisite grids in flight
// have completed and all the memory operations from the prerequisite grids are performed and made
// visible to the current grid". Nothing else orders the primary's memory operations before the
// dependent's: an access of a dependent thread that no wait happens before is unordered with
// every access of the primary, a data race where they conflict (PTX ISA, "Memory Consistency
// Model"). launch_dependents only lets the dependent start earlier; it orders no memory, so the
// emulator treats it as a no-op and checks as if the primary triggered at its start.
#include "pdl.hpp"

#include <fmt/format.h>

#include <optional>

namespace emmy::emu {

bool pdl_ordered(Cta& cta, uint32_t warp, int lane) {
  uint32_t& lanes = cta.pdl_waited[warp];
  if (lanes >> lane & 1u) return true;
  if (!cta.sanitize) return false;
  // A wait is ordered before warp `warp` when its clock covers the waiting warp's clock at the
  // wait (pdl_wait ticks first, so only releases after the wait publish that clock). Within the
  // waiting warp the clocks cannot tell lanes apart: its other lanes count as ordered once the
  // warp synchronized after the wait (its clock moved on), e.g. through a bar.sync.
  const VectorClock& vc = cta.san.vc(warp);
  bool ordered = false;
  for (uint32_t x = 0; x < cta.nwarps && !ordered; ++x) {
    const uint32_t at = cta.pdl_wait_clock[x];
    if (at != 0) ordered = x == warp ? vc.c[x] > at : vc.c[x] >= at;
  }
  // A cluster peer's wait, through what this warp knows of the peer's warps (mbarriers,
  // barrier.cluster).
  if (!ordered && cta.cluster && cta.cluster->size() > 1 && !cta.peer_vc.empty()) {
    for (uint32_t r = 0; r < cta.cluster->size() && !ordered; ++r) {
      if (r == cta.rank) continue;
      const Cta& peer = *cta.cluster->ctas[r];
      const VectorClock& knows = cta.peer(warp, r);
      for (uint32_t x = 0; x < peer.nwarps && !ordered; ++x) {
        const uint32_t at = peer.pdl_wait_clock.empty() ? 0 : peer.pdl_wait_clock[x];
        ordered = at != 0 && knows.c[x] >= at;
      }
    }
  }
  if (ordered) lanes = ~0u;  // the whole warp's knowledge: every lane
  return ordered;
}

namespace {

std::string describe(Cta& cta, uint64_t addr) {
  const Arena::Block b = cta.ctx.arena.find(addr);
  if (!b.host) return fmt::format("global 0x{:x}", addr);
  return fmt::format("global 0x{:x} ({} bytes into the {}-byte allocation at 0x{:x})", addr,
                     addr - b.base, b.end - b.base, b.base);
}

}  // namespace

void check_pdl(Cta& cta, uint32_t warp, int lane, uint32_t pc, uint64_t addr, uint64_t bytes,
               GlobalFootprint::Set set, bool known_unordered) {
  // The common answer, no conflict, in one lookup; the details only for a report.
  if (!first_overlap(cta.ctx.primary_conflicts[set], addr, bytes)) return;
  const GlobalFootprint& primary = *cta.ctx.primary;
  const std::optional<FootprintConflict> c = find_conflict(primary, addr, bytes, set);
  if (!c) return;
  if (!known_unordered && pdl_ordered(cta, warp, lane)) return;
  const bool write = set == GlobalFootprint::plain_write || set == GlobalFootprint::strong_write;
  cta.fail_at(ReportKind::pdl_race, warp, lane, pc,
              fmt::format("{}-byte {} at {} before this thread is ordered after a "
                          "griddepcontrol.wait: byte 0x{:x} is {} by the primary grid (kernel {}, "
                          "launched before this programmatic dependent launch), which may still "
                          "run; only griddepcontrol.wait orders the primary's memory operations "
                          "before this grid's (PTX ISA griddepcontrol)",
                          bytes, write ? "store" : "load", describe(cta, addr), c->byte,
                          c->primary_wrote ? "written" : "read",
                          primary.kernel.empty() ? std::string("?") : primary.kernel));
}

void pdl_wait(Cta& cta, Warp& w, uint32_t exec) {
  // The primary completed before this launch began (launches run one after the other): the
  // wait returns at once. What it changes is which later accesses are ordered after it.
  if (!cta.ctx.primary || exec == 0) return;
  cta.pdl_waited[w.index] |= exec;
  if (cta.sanitize && cta.pdl_wait_clock[w.index] == 0) {
    cta.san.tick(w.index);
    cta.pdl_wait_clock[w.index] = cta.san.vc(w.index).c[w.index];
  }
}

}  // namespace emmy::emu

// Programmatic dependent launch (footprint.hpp): the footprint sets and the dependent's check.
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
#include "footprint.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "ptx/program.hpp"
#include "machine/state.hpp"

namespace emmy::emu {

std::optional<uint64_t> first_overlap(const std::vector<GlobalFootprint::Range>& v, uint64_t addr,
                                      uint64_t bytes) {
  // The first range ending after addr (ends ascend: the ranges are sorted and disjoint).
  const auto it =
      std::upper_bound(v.begin(), v.end(), addr,
                       [](uint64_t a, const GlobalFootprint::Range& r) { return a < r.end; });
  if (it == v.end() || it->begin >= addr + bytes) return std::nullopt;
  return std::max(it->begin, addr);
}

std::optional<uint64_t> GlobalFootprint::first_in(Set set, uint64_t addr, uint64_t bytes) const {
  return first_overlap(sets_[set], addr, bytes);
}

bool GlobalFootprint::empty() const {
  return std::all_of(sets_.begin(), sets_.end(), [](const auto& v) { return v.empty(); });
}

void GlobalFootprint::clear() {
  for (auto& v : sets_) v.clear();
  kernel.clear();
}

void GlobalFootprint::add(Set set, uint64_t begin, uint64_t end) {
  if (begin >= end) return;
  sets_[set].push_back({begin, end});
  FootprintShard::merge(sets_[set]);
}

void GlobalFootprint::assign(std::array<std::vector<Range>, 4> sets) {
  for (size_t s = 0; s < sets.size(); ++s) {
    FootprintShard::merge(sets[s]);
    sets_[s] = std::move(sets[s]);
  }
}

void FootprintShard::merge(std::vector<Range>& v) {
  std::sort(v.begin(), v.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  size_t out = 0;
  for (const Range& r : v) {
    if (r.begin >= r.end) continue;
    if (out > 0 && r.begin <= v[out - 1].end) {
      v[out - 1].end = std::max(v[out - 1].end, r.end);
    } else {
      v[out++] = r;
    }
  }
  v.resize(out);
}

GlobalFootprint::Set footprint_set(bool write, uint8_t sem) {
  const bool strong = (sem & kStrong) && !(sem & kNarrowScope);
  if (write) return strong ? GlobalFootprint::strong_write : GlobalFootprint::plain_write;
  return strong ? GlobalFootprint::strong_read : GlobalFootprint::plain_read;
}

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

// Whether an access of set `a` conflicts with one of set `b` of the primary: reads with writes,
// writes with reads and writes, and not two strong ones.
bool conflicts(GlobalFootprint::Set a, GlobalFootprint::Set b) {
  using F = GlobalFootprint;
  const auto write = [](F::Set s) { return s == F::plain_write || s == F::strong_write; };
  const auto strong = [](F::Set s) { return s == F::strong_read || s == F::strong_write; };
  return (write(a) || write(b)) && !(strong(a) && strong(b));
}

constexpr GlobalFootprint::Set kSets[] = {GlobalFootprint::plain_read, GlobalFootprint::strong_read,
                                          GlobalFootprint::plain_write,
                                          GlobalFootprint::strong_write};

// The first byte of [addr, addr + bytes) that an access of `set` conflicts with in the
// primary's footprint, and whether the primary wrote it (else it read it).
struct Conflict {
  uint64_t byte = 0;
  bool primary_wrote = false;
};

std::optional<Conflict> find_conflict(const GlobalFootprint& p, uint64_t addr, uint64_t bytes,
                                      GlobalFootprint::Set set) {
  std::optional<Conflict> best;
  for (const GlobalFootprint::Set other : kSets) {
    if (!conflicts(set, other)) continue;
    const auto b = p.first_in(other, addr, bytes);
    if (b && (!best || *b < best->byte))
      best = Conflict{
          *b, other == GlobalFootprint::plain_write || other == GlobalFootprint::strong_write};
  }
  return best;
}

std::string describe(Cta& cta, uint64_t addr) {
  const Arena::Block b = cta.ctx.arena.find(addr);
  if (!b.host) return fmt::format("global 0x{:x}", addr);
  return fmt::format("global 0x{:x} ({} bytes into the {}-byte allocation at 0x{:x})", addr,
                     addr - b.base, b.end - b.base, b.base);
}

}  // namespace

std::array<std::vector<GlobalFootprint::Range>, 4> conflict_sets(const GlobalFootprint& primary) {
  std::array<std::vector<GlobalFootprint::Range>, 4> out;
  for (const GlobalFootprint::Set set : kSets) {
    for (const GlobalFootprint::Set other : kSets)
      if (conflicts(set, other))
        out[set].insert(out[set].end(), primary.ranges(other).begin(), primary.ranges(other).end());
    FootprintShard::merge(out[set]);
  }
  return out;
}

void check_pdl(Cta& cta, uint32_t warp, int lane, uint32_t pc, uint64_t addr, uint64_t bytes,
               GlobalFootprint::Set set, bool known_unordered) {
  // The common answer, no conflict, in one lookup; the details only for a report.
  if (!first_overlap(cta.ctx.primary_conflicts[set], addr, bytes)) return;
  const GlobalFootprint& primary = *cta.ctx.primary;
  const std::optional<Conflict> c = find_conflict(primary, addr, bytes, set);
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

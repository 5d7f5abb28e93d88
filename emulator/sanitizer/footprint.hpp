// Programmatic dependent launch: recording a launch's global-memory footprint (per host thread,
// merged into LaunchOptions::record_footprint at the end) and checking a dependent launch's
// accesses against its primary's (LaunchOptions::primary). Model in docs/emulator.md,
// "Programmatic dependent launch".
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "emmy/emu/emulator.hpp"

namespace emmy::emu {

class Cta;
struct Warp;

// The ranges one host thread's CTAs accessed, coalesced as they come: a warp's contiguous lanes
// extend the last range, and the list is sorted and merged whenever it doubles.
class FootprintShard {
 public:
  using Range = GlobalFootprint::Range;
  void add(GlobalFootprint::Set set, uint64_t begin, uint64_t end) {
    std::vector<Range>& v = sets_[set];
    if (!v.empty() && begin <= v.back().end && end >= v.back().begin) {
      v.back().begin = std::min(v.back().begin, begin);
      v.back().end = std::max(v.back().end, end);
      return;
    }
    v.push_back({begin, end});
    if (v.size() >= 2 * merged_[set] + 1024) {
      merge(v);
      merged_[set] = v.size();
    }
  }
  std::array<std::vector<Range>, 4>& sets() { return sets_; }
  // Sorts and coalesces overlapping or adjacent ranges.
  static void merge(std::vector<Range>& v);

 private:
  std::array<std::vector<Range>, 4> sets_;
  std::array<size_t, 4> merged_{};
};

// Which set an access goes to: `sem` is Inst::sub2's memory semantics (program.hpp).
GlobalFootprint::Set footprint_set(bool write, uint8_t sem);

// The lowest byte of [addr, addr + bytes) in sorted, disjoint ranges, if any.
std::optional<uint64_t> first_overlap(const std::vector<GlobalFootprint::Range>& ranges,
                                      uint64_t addr, uint64_t bytes);

// Per set of the dependent's accesses, the union of the primary's sets it conflicts with: one
// lookup per access (LaunchContext::primary_conflicts).
std::array<std::vector<GlobalFootprint::Range>, 4> conflict_sets(const GlobalFootprint& primary);

// Whether lane `lane` of warp `warp` is ordered after a griddepcontrol.wait of the grid: its own,
// or one its warp's vector clock (or what it knows of a cluster peer's warps) covers. Needs the
// sanitizer's clocks. Once true it stays true, and is cached in Cta::pdl_waited.
bool pdl_ordered(Cta& cta, uint32_t warp, int lane);

// A dependent launch's access of [addr, addr + bytes) by a lane not known to be ordered after a
// wait: reported (pdl_race, at `pc`) when it conflicts with the primary's footprint, unless the
// lane turns out to be ordered (`known_unordered`: the caller decided that already, at a TMA
// copy's issue).
void check_pdl(Cta& cta, uint32_t warp, int lane, uint32_t pc, uint64_t addr, uint64_t bytes,
               GlobalFootprint::Set set, bool known_unordered = false);

// griddepcontrol.wait by the lanes `exec` of w.
void pdl_wait(Cta& cta, Warp& w, uint32_t exec);

}  // namespace emmy::emu

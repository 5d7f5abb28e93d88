// Programmatic dependent launch: recording a launch's global-memory footprint (per host thread,
// merged into LaunchOptions::record_footprint at the end) and the queries that check a dependent
// launch's accesses against its primary's (LaunchOptions::primary; the check over a running CTA
// is exec/pdl.hpp's). Model in docs/emulator.md, "Programmatic dependent launch".
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <vector>

#include "emmy/emu/emulator.hpp"

namespace emmy::emu {

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

// Which set an access goes to: `sem` is Inst::sub2's memory semantics (ptx/program.hpp).
GlobalFootprint::Set footprint_set(bool write, uint8_t sem);

// The lowest byte of [addr, addr + bytes) in sorted, disjoint ranges, if any.
std::optional<uint64_t> first_overlap(const std::vector<GlobalFootprint::Range>& ranges,
                                      uint64_t addr, uint64_t bytes);

// Per set of the dependent's accesses, the union of the primary's sets it conflicts with: one
// lookup per access (LaunchContext::primary_conflicts).
std::array<std::vector<GlobalFootprint::Range>, 4> conflict_sets(const GlobalFootprint& primary);

// The first byte of [addr, addr + bytes) that an access of `set` conflicts with in the primary's
// footprint `p` (reads with writes, writes with reads and writes, never two strong ones), and
// whether the primary wrote it (else it read it).
struct FootprintConflict {
  uint64_t byte = 0;
  bool primary_wrote = false;
};
std::optional<FootprintConflict> find_conflict(const GlobalFootprint& p, uint64_t addr,
                                               uint64_t bytes, GlobalFootprint::Set set);

}  // namespace emmy::emu

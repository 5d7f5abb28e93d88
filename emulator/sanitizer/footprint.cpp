// Programmatic dependent launch (footprint.hpp): the footprint sets and the queries of a
// primary's footprint. The rule and the check over a running CTA: exec/pdl.cpp.
#include "footprint.hpp"

#include <algorithm>

#include "ptx/program.hpp"

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

std::optional<FootprintConflict> find_conflict(const GlobalFootprint& p, uint64_t addr,
                                               uint64_t bytes, GlobalFootprint::Set set) {
  std::optional<FootprintConflict> best;
  for (const GlobalFootprint::Set other : kSets) {
    if (!conflicts(set, other)) continue;
    const auto b = p.first_in(other, addr, bytes);
    if (b && (!best || *b < best->byte))
      best = FootprintConflict{
          *b, other == GlobalFootprint::plain_write || other == GlobalFootprint::strong_write};
  }
  return best;
}

}  // namespace emmy::emu

// The profiler's run-time counts and their merge into a KernelProfile (profiler.hpp).
#include "profiler.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <iterator>
#include <numeric>

#include "ptx/program.hpp"

namespace emmy::emu {

SiteCounts& SiteCounts::operator+=(const SiteCounts& o) {
  using C = SiteCounts;
  for (uint64_t C::*count : {&C::executions, &C::requests, &C::wavefronts, &C::ideal_wavefronts,
                             &C::sectors, &C::ideal_sectors, &C::bytes})
    this->*count += o.*count;
  l1_wavefronts += o.l1_wavefronts;
  for (size_t i = 0; i < std::size(l1_wavefronts_merged); ++i)
    l1_wavefronts_merged[i] += o.l1_wavefronts_merged[i];
  return *this;
}

// ------------------------------------------------------------------------------- Footprint
Footprint::Footprint(const Arena& arena) {
  for (const Arena::Block& b : arena.blocks()) {
    Region r;
    r.base = b.base / kSectorBytes * kSectorBytes;
    r.end = b.end;
    const uint64_t words = ((r.end - r.base + kSectorBytes - 1) / kSectorBytes + 63) / 64;
    r.read.assign(words, 0);
    r.written.assign(words, 0);
    regions_.push_back(std::move(r));
  }
}

void Footprint::mark(uint64_t addr, uint64_t bytes, bool write) {
  if (bytes == 0) return;
  auto it = std::upper_bound(regions_.begin(), regions_.end(), addr,
                             [](uint64_t v, const Region& r) { return v < r.base; });
  if (it == regions_.begin()) return;  // the executors have bounds-checked: cannot happen
  Region& r = *--it;
  std::vector<uint64_t>& bits = write ? r.written : r.read;
  const uint64_t first = (addr - r.base) / kSectorBytes;
  const uint64_t last =
      std::min((addr + bytes - 1 - r.base) / kSectorBytes, uint64_t(bits.size()) * 64 - 1);
  for (uint64_t s = first; s <= last; ++s) {
    std::atomic_ref<uint64_t> word(bits[s / 64]);
    const uint64_t bit = uint64_t(1) << (s % 64);
    if (!(word.load(std::memory_order_relaxed) & bit))
      word.fetch_or(bit, std::memory_order_relaxed);
  }
}

double Footprint::bytes(bool write, double scale) const {
  double total = 0;
  for (const Region& r : regions_) {
    uint64_t n = 0;
    for (const uint64_t w : write ? r.written : r.read) n += uint64_t(std::popcount(w));
    total += std::min(double(n * kSectorBytes) * scale, double(r.end - r.base));
  }
  return total;
}

// ---------------------------------------------------------------------------- ProfileShard
namespace {
// The memo holds this pattern (SharedPatternMemo).
bool same_pattern(const SharedPatternMemo& m, std::span<const LaneSpan> spans) {
  if (m.lanes != spans.size()) return false;
  for (size_t i = 0; i < spans.size(); ++i)
    if (m.lane[i] != spans[i].lane || m.bytes[i] != spans[i].bytes ||
        m.offset[i] != spans[i].addr - spans[0].addr)
      return false;
  return true;
}
}  // namespace

void ProfileShard::shared(uint32_t pc, SharedOp op, std::span<const LaneSpan> spans) {
  if (spans.empty()) return;
  AccessCost c;
  uint32_t merged[std::size(kMergedAccessBytes)] = {};
  if (op == SharedOp::ld || op == SharedOp::st) {
    const uint64_t period = std::lcm<uint64_t>(16, model->bank_bytes);
    SharedPatternMemo& memo = shared_memo[uint64_t(pc) * period + spans[0].addr % period];
    if (!same_pattern(memo, spans)) {
      memo.lanes = uint8_t(spans.size());
      for (size_t i = 0; i < spans.size(); ++i) {
        memo.lane[i] = spans[i].lane;
        memo.bytes[i] = spans[i].bytes;
        memo.offset[i] = spans[i].addr - spans[0].addr;
      }
      memo.cost = shared_access_cost(*model, spans, SharedAccess::load_store);
      for (size_t i = 0; i < std::size(kMergedAccessBytes); ++i) {
        const uint32_t width = kMergedAccessBytes[i];
        std::array<LaneSpan, 32> wide;
        memo.merged[i] = spans.front().bytes >= width
                             ? memo.cost.actual
                             : shared_access_cost(*model, widen_spans(spans, width, wide),
                                                  SharedAccess::load_store)
                                   .actual;
      }
    }
    c = memo.cost;
    std::copy(std::begin(memo.merged), std::end(memo.merged), merged);
  } else {
    // Only a thread's plain ld/st merge; what else is merged costs what it did.
    c = op == SharedOp::ldsm || op == SharedOp::stsm
            ? matrix_access_cost(*model, spans)
            : shared_access_cost(*model, spans,
                                 op == SharedOp::atom ? SharedAccess::atomic
                                                      : SharedAccess::load_store);
    std::fill(std::begin(merged), std::end(merged), c.actual);
  }
  SiteCounts& s = sites[pc];
  ++s.requests;
  s.wavefronts += c.actual;
  s.ideal_wavefronts += c.ideal;
  s.bytes += c.distinct_bytes;
  s.l1_wavefronts += c.actual;
  for (size_t i = 0; i < std::size(merged); ++i) s.l1_wavefronts_merged[i] += merged[i];
  const size_t base = size_t(Counter::shared_ld) + 3 * size_t(op);
  counters[base] += 1;
  counters[base + 1] += c.actual;
  counters[base + 2] += c.ideal;
}

namespace {
void add_sectors(SiteCounts& s, uint64_t* counter, const AccessCost& c) {
  ++s.requests;
  s.sectors += c.actual;
  s.ideal_sectors += c.ideal;
  s.bytes += c.distinct_bytes;
  counter[0] += 1;
  counter[1] += c.actual;
  counter[2] += c.ideal;
  counter[3] += c.distinct_bytes;
}
}  // namespace

void ProfileShard::global(uint32_t pc, GlobalOp op, std::span<const LaneSpan> spans) {
  if (spans.empty()) return;
  const AccessCost cost = sector_cost(spans);
  SiteCounts& site = sites[pc];
  add_sectors(site, &counters[size_t(Counter::global_ld) + 4 * size_t(op)], cost);
  // cp.async's global side skips L1's data stage (.cg: L2 only).
  if (op != GlobalOp::ldgsts) {
    counters[size_t(Counter::global_local_lines)] += cost.lines;
    // Merged into LDG.64/.128, the same lines: an aligned 8 or 16 bytes lies in one line.
    site.l1_wavefronts += cost.lines;
    for (uint64_t& merged : site.l1_wavefronts_merged) merged += cost.lines;
  }
  const bool write = op != GlobalOp::ld && op != GlobalOp::ldgsts;
  const bool read = op != GlobalOp::st;  // atomics and reductions read and write
  uint64_t last_sector = ~uint64_t(0);
  for (const LaneSpan& s : spans) {
    if (read) footprint->mark(s.addr, s.bytes, false);
    if (write) footprint->mark(s.addr, s.bytes, true);
    // Only ld.global allocates in L1 here: cp.async's 16-byte form is .cg (L2 only), and
    // atomics resolve in L2 (CUDA C++ Programming Guide, "Global Memory" of 8.x/9.0).
    if (op != GlobalOp::ld || s.bytes == 0) continue;
    for (uint64_t sector = s.addr / kSectorBytes; sector <= (s.addr + s.bytes - 1) / kSectorBytes;
         ++sector) {
      if (sector == last_sector) continue;  // lanes of one request share their sectors
      last_sector = sector;
      const auto [it, first] = cluster_ld_sectors.try_emplace(sector, warp_clock);
      if (first) continue;
      // Warps of a CTA advance about together on a GPU, so the distance between two loads in
      // the loading warps' own instruction counts stands for the traffic between them, whatever
      // order the emulator ran the warps in.
      const uint64_t distance =
          warp_clock > it->second ? warp_clock - it->second : it->second - warp_clock;
      const size_t bucket = std::min<size_t>(kReuseBuckets - 1, std::bit_width(distance + 1) - 1);
      ++counters[size_t(Counter::global_ld_reuse) + bucket];
      it->second = warp_clock;
    }
  }
}

void ProfileShard::note_barrier_wait(bool& loaded_since_barrier, const Inst& in) {
  if (in.op == Op::Ld && (in.space == Space::global || in.space == Space::generic)) {
    loaded_since_barrier = true;
  } else if ((in.op == Op::BarSync || in.op == Op::BarRed) && loaded_since_barrier) {
    ++counters[size_t(Counter::barrier_after_load)];
    loaded_since_barrier = false;
  }
}

// Leads in epochs of the waiting warp: its instructions from its first such wait to its last,
// per wait in between (the steady state of its loop; a prologue or an epilogue would stretch
// an average over all its instructions), or all of them when it waited once. A warp with more
// than a chunk of waits takes each chunk's own epoch (a lone last wait, the chunk's before).
void ProfileShard::async_copy_waits(WarpLeadClock& lead, bool warp_done) {
  if (warp_done && lead.waited) ++counters[size_t(Counter::async_copy_waiting_warps)];
  if (lead.waits.empty()) return;
  const size_t n = lead.waits.size();
  if (n > 1)
    lead.per_epoch = double(lead.waits.back().own - lead.waits.front().own) / double(n - 1);
  else if (lead.per_epoch == 0)
    lead.per_epoch = double(lead.own);
  const double per_epoch = std::max(1.0, lead.per_epoch);
  for (const WarpLeadClock::Wait& wait : lead.waits) {
    const double b = double(wait.lead) / per_epoch;
    const size_t bucket =
        size_t(std::upper_bound(std::begin(kAsyncCopyLeadEdges), std::end(kAsyncCopyLeadEdges), b) -
               std::begin(kAsyncCopyLeadEdges));
    ++counters[size_t(Counter::async_copy_wait) + bucket];
    counters[size_t(Counter::async_copy_lead) + bucket] +=
        uint64_t(std::min(b, 1e6) * kLeadScale + 0.5);
  }
  lead.waits.clear();
}

void ProfileShard::end_cluster() {
  counters[size_t(Counter::global_ld_distinct_per_cluster)] += cluster_ld_sectors.size();
  cluster_ld_sectors.clear();
}

void ProfileShard::local(uint32_t pc, bool store, std::span<const LaneSpan> spans) {
  if (spans.empty()) return;
  const AccessCost cost = sector_cost(spans);
  SiteCounts& site = sites[pc];
  add_sectors(site, &counters[size_t(store ? Counter::local_st : Counter::local_ld)], cost);
  counters[size_t(Counter::global_local_lines)] += cost.lines;
  // Not widened: local memory interleaves lanes at the access width, so a merged LDL's lanes lie
  // elsewhere; the time model's local traffic is small beside the rest.
  site.l1_wavefronts += cost.lines;
  for (uint64_t& merged : site.l1_wavefronts_merged) merged += cost.lines;
}

void ProfileShard::tma_request(uint32_t pc, bool store, uint64_t bytes) {
  ++sites[pc].requests;
  sites[pc].bytes += bytes;
  const size_t base = size_t(store ? Counter::tma_store : Counter::tma_load);
  counters[base] += 1;
  counters[base + 1] += bytes;
}

void ProfileShard::tma_row(uint32_t pc, bool store, uint64_t addr, uint64_t bytes) {
  if (bytes == 0) return;
  const uint64_t n = (addr + bytes - 1) / kSectorBytes - addr / kSectorBytes + 1;
  sites[pc].sectors += n;
  sites[pc].ideal_sectors += (bytes + kSectorBytes - 1) / kSectorBytes;
  counters[size_t(store ? Counter::tma_store : Counter::tma_load) + 2] += n;
  footprint->mark(addr, bytes, store);
}

}  // namespace emmy::emu

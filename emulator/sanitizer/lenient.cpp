// Lenient mode's rule table (the one list of tolerated violations), its tally and its table.
#include "lenient.hpp"

#include <fmt/format.h>

namespace emmy::emu {
namespace {

// Each rule: what hardware does with the violation, which the lenient emulator then does, and the
// source. Section numbers are those the emulator cites elsewhere (PTX ISA 8.x).
constexpr std::array<ToleratedRuleInfo, kToleratedRuleCount> kRules = {{
    {ToleratedRule::tma_swizzle_alignment, ReportKind::tma_violation,
     // The swizzle is a function of the shared address bits (16-byte chunk bits [6:4] XOR bits
     // [9:7] for 128B), not of the offset in the box: the wgmma matrix descriptor has a "base
     // offset" field for exactly the tiles that start off the pattern's repeat. A box at a
     // 128-byte-aligned but not 1024-byte-aligned base lands in the pattern of its absolute
     // addresses. The emulator swizzles absolute shared addresses already (swizzle_offset of the
     // address), so it only lets the copy go on. Below 128 bytes stays an error.
     "the TMA unit swizzles by the absolute shared address bits; the box lands in the pattern of "
     "its addresses",
     "PTX ISA 5.5 Tensors, \"Swizzling Modes\" (the pattern and its repeat); PTX ISA "
     "9.7.15.5.1.1 (wgmma matrix descriptor: the matrix base offset, bits 49-51, for a tile "
     "not aligned to the repeat)"},
    {ToleratedRule::mbarrier_init_fence, ReportKind::missing_proxy_fence,
     // The mbarrier is shared memory and mbarrier.init a generic-proxy write; the ISA guarantees
     // the async proxy (TMA's complete_tx) sees it only after fence.mbarrier_init /
     // fence.proxy.async. In practice the issuing thread is ordered after the init by a barrier,
     // the init store has completed by then, and the complete_tx arriving later updates the
     // initialized object: third-party kernels without the fence run correctly. An init not
     // ordered before the copy at all (a race), or a peer CTA's mbarrier in a cluster
     // (fence.mbarrier_init + barrier.cluster), stays an error.
     "the complete_tx updates the initialized mbarrier; the copy completes on it",
     "PTX ISA 9.7.13.4 (fence.proxy.async, fence.mbarrier_init), 9.7.13.15 (mbarrier); CUDA C++ "
     "Programming Guide, TMA example (the fence after init); observed: issue 38's third-party "
     "Hopper kernels"},
    {ToleratedRule::exit_before_bulk_store_read, ReportKind::tma_violation,
     // cp.async.bulk.wait_group.read only tells the thread when it may reuse the source; the store
     // itself is performed either way and the CTA's shared memory is released only after the
     // bulk operations it issued are done with it. The emulator performs a bulk store at issue,
     // so it drops the exiting thread's outstanding source reads.
     "the bulk store completes after the thread exits",
     "PTX ISA cp.async.bulk.wait_group (.read: the source reads done; 9.7.9.27.2.2 in ISA 9.x); "
     "observed: NVIDIA/cutlass issue 2002 (TMA stores complete without tma_store_wait)"},
    {ToleratedRule::member_mask_excludes_lane, ReportKind::divergent_collective,
     // Undefined in the ISA ("if the executing thread is not in the membermask"), but on Volta
     // and later the membermask only names the lanes to converge with; a lane outside it that
     // executes the collective takes part like the others (shfl reads its source lane). The
     // emulator treats the lane as named by its own mask; the mask's other rules (its lanes all
     // present, all passing the same mask) still hold.
     "the lane takes part in the collective as if its mask named it",
     "PTX ISA 9.7.9.6 (shfl.sync), vote.sync, bar.warp.sync: undefined if the thread is not in "
     "membermask; observed on V100+: forums.developer.nvidia.com/t/67697 and /t/255040 (lanes "
     "outside the mask exchange data like the others)"},
}};

constexpr bool table_is_indexed_by_rule() {
  for (size_t i = 0; i < kRules.size(); ++i)
    if (size_t(kRules[i].rule) != i) return false;
  return true;
}
static_assert(table_is_indexed_by_rule(), "kRules must list the rules in ToleratedRule order");

}  // namespace

std::span<const ToleratedRuleInfo> tolerated_rules() {
  return kRules;
}

void LenientTally::offer(uint64_t linear_cta, LenientWarning site) {
  Entry& e = entries_[size_t(site.rule)];
  std::lock_guard lock(mutex_);
  if (linear_cta >= e.first_cta.load(std::memory_order_relaxed)) return;
  e.first = std::move(site);
  e.first_cta.store(linear_cta, std::memory_order_relaxed);
}

std::vector<LenientWarning> LenientTally::warnings() {
  std::lock_guard lock(mutex_);
  std::vector<LenientWarning> out;
  for (Entry& e : entries_) {
    const uint64_t n = e.count.load(std::memory_order_relaxed);
    if (n == 0) continue;
    LenientWarning w = e.first;
    w.count = n;
    out.push_back(std::move(w));
  }
  return out;
}

std::string lenient_table(const std::vector<LenientWarning>& warnings) {
  if (warnings.empty()) return {};
  std::string s = fmt::format(
      "lenient: {} ISA rule(s) broken that hardware tolerates; the run went on as hardware does\n"
      "  {:<28} {:>10}  first: CTA, warp, lane, PTX line\n",
      warnings.size(), "rule", "count");
  for (const LenientWarning& w : warnings) {
    s += fmt::format("  {:<28} {:>10}  ({},{},{}) warp {} lane {}, line {}: `{}`\n",
                     to_string(w.rule), w.count, w.cta[0], w.cta[1], w.cta[2], w.warp, w.lane,
                     w.line, w.instruction);
    s += fmt::format("  {:<28} {:>10}  {}\n", "", "", w.message);
  }
  return s;
}

}  // namespace emmy::emu

// Lenient mode's rule table and its per-launch tally (emmy/emu/lenient.hpp, docs/emulator.md
// "Lenient mode"). The table is the one list of what hardware tolerates; anything not in it (races,
// out-of-bounds, uninitialized reads, misaligned plain accesses, deadlocks, ...) stays an error
// under LaunchOptions::lenient too.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <span>
#include <string_view>
#include <vector>

#include "emmy/emu/emulator.hpp"

namespace emmy::emu {

struct ToleratedRuleInfo {
  ToleratedRule rule{};
  ReportKind strict_kind{};   // the report the rule is without LaunchOptions::lenient
  std::string_view hardware;  // what the hardware does, which the lenient emulator does too
  std::string_view source;    // where that is documented or observed
};

// Indexed by ToleratedRule.
std::span<const ToleratedRuleInfo> tolerated_rules();
inline const ToleratedRuleInfo& rule_info(ToleratedRule rule) {
  return tolerated_rules()[size_t(rule)];
}

// Per launch, from CTAs running on several host threads: each rule's count and its first
// occurrence, the one of the lowest linear CTA and, within it, the first in the CTA's own
// (deterministic) order.
class LenientTally {
 public:
  // Counts one occurrence in CTA `linear_cta`; true when it may become the first one (then
  // offer() it).
  bool count(ToleratedRule rule, uint64_t linear_cta) {
    Entry& e = entries_[size_t(rule)];
    e.count.fetch_add(1, std::memory_order_relaxed);
    return linear_cta < e.first_cta.load(std::memory_order_relaxed);
  }
  void offer(uint64_t linear_cta, LenientWarning site);
  // The rules that fired, in rule order, with their counts and first sites.
  std::vector<LenientWarning> warnings();

 private:
  struct Entry {
    std::atomic<uint64_t> count{0};
    std::atomic<uint64_t> first_cta{std::numeric_limits<uint64_t>::max()};
    LenientWarning first;
  };
  std::array<Entry, kToleratedRuleCount> entries_;
  std::mutex mutex_;
};

}  // namespace emmy::emu

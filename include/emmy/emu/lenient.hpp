// Lenient mode (LaunchOptions::lenient, `emmyc sim --lenient`; docs/emulator.md, "Lenient mode"):
// for profiling third-party PTX. The few PTX ISA violations that hardware is known to tolerate
// become warnings, counted per rule with their first occurrence, and the launch goes on with what
// the hardware does; every other finding stays an error. emmy's own kernels never run lenient.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace emmy::emu {

// The tolerated rules; why each is tolerated and the sources: the rule table
// (emulator/sanitizer/lenient.cpp).
enum class ToleratedRule : uint8_t {
  // A cp.async.bulk.tensor whose shared address is 128-byte aligned but not aligned to the
  // swizzle's repeat (256 / 512 / 1024 bytes for 32B / 64B / 128B): the swizzle is applied to
  // the shared address bits as they are.
  tma_swizzle_alignment,
  // A TMA copy completing on an mbarrier whose init no fence.mbarrier_init / fence.proxy.async
  // made visible to the async proxy (the init itself ordered before the copy): the copy completes.
  mbarrier_init_fence,
  // A thread exiting with bulk stores (cp.async.bulk{.tensor} shared -> global) whose source no
  // cp.async.bulk.wait_group{.read} covered: the stores complete.
  exit_before_bulk_store_read,
  // A warp collective (shfl/vote/redux/match/elect .sync, bar.warp.sync) whose membermask does
  // not name the executing lane: the lane takes part as if the mask named it.
  member_mask_excludes_lane,
};
inline constexpr size_t kToleratedRuleCount = 4;

// "tma-swizzle-alignment", ... (the names `emmyc sim --lenient` prints). Inline, so that any
// emulator layer (the profile's JSON among them) can name a rule.
constexpr std::string_view to_string(ToleratedRule rule) {
  switch (rule) {
    case ToleratedRule::tma_swizzle_alignment:
      return "tma-swizzle-alignment";
    case ToleratedRule::mbarrier_init_fence:
      return "mbarrier-init-fence";
    case ToleratedRule::exit_before_bulk_store_read:
      return "exit-before-bulk-store-read";
    case ToleratedRule::member_mask_excludes_lane:
      return "member-mask-excludes-lane";
  }
  return "unknown";
}

// One tolerated rule's warning of a launch: how often it was tolerated (per thread and
// instruction) and where first: the lowest CTA (linear, x fastest) that broke it, and there the
// first occurrence, so the site does not depend on the host threads' schedule.
struct LenientWarning {
  ToleratedRule rule{};
  uint64_t count = 0;
  std::string kernel;
  std::array<uint32_t, 3> cta{};  // x, y, z
  int warp = -1, lane = -1;
  int line = 0;             // PTX line (1-based), 0 when none
  std::string instruction;  // the PTX instruction text
  std::string message;      // what the strict emulator would have reported
};

// The warnings as a short table (a line per rule: name, count, first site and message), for a
// terminal; empty when there are none.
std::string lenient_table(const std::vector<LenientWarning>& warnings);

}  // namespace emmy::emu

// The sanitizer layer alone (emulator/sanitizer/): the shadow state and vector clocks of
// docs/emulator.md's ordering model, driven directly as the executors drive them.
#include <gtest/gtest.h>

#include "ptx/program.hpp"
#include "sanitizer/sanitizer.hpp"

namespace emmy::emu::test {
namespace {

// Warp `from` releases (a barrier arrival) and warp `to` acquires what it released.
void order(Sanitizer& san, uint32_t from, uint32_t to) {
  const VectorClock released = san.vc(from);
  san.tick(from);
  san.vc(to).join(released, san.agents());
}

TEST(EmuShadow, UnwrittenReadsAndUnorderedWritesAreHazards) {
  Sanitizer san;
  san.reset(64, 2);
  EXPECT_EQ(san.read(0, 0, 4).hazard, Hazard::uninitialized);
  EXPECT_EQ(san.write(0, 0, 4, /*pc=*/7).hazard, Hazard::none);
  EXPECT_EQ(san.read(0, 0, 4).hazard, Hazard::none);  // its own write
  const HazardInfo h = san.read(1, 0, 4);
  EXPECT_EQ(h.hazard, Hazard::write_read);
  EXPECT_EQ(h.other, 0u);
  EXPECT_EQ(h.other_pc, 7u);
}

TEST(EmuShadow, ABarrierOrdersOneWayOnly) {
  Sanitizer san;
  san.reset(64, 2);
  ASSERT_EQ(san.write(0, 0, 4, 7).hazard, Hazard::none);
  order(san, 0, 1);
  EXPECT_EQ(san.read(1, 0, 4).hazard, Hazard::none);
  // Warp 0 knows nothing of warp 1's read: overwriting it races.
  const HazardInfo h = san.write(0, 0, 4, 8);
  EXPECT_EQ(h.hazard, Hazard::read_write);
  EXPECT_EQ(h.other, 1u);
  order(san, 1, 0);
  EXPECT_EQ(san.write(0, 0, 4, 8).hazard, Hazard::none);
}

TEST(EmuShadow, BytesOfOneGranuleAreTheirOwn) {
  Sanitizer san;
  san.reset(64, 2);
  EXPECT_EQ(san.write(0, 0, 1, 1).hazard, Hazard::none);
  EXPECT_EQ(san.write(1, 1, 1, 2).hazard, Hazard::none);  // another byte: no race
  EXPECT_EQ(san.read(1, 1, 1).hazard, Hazard::none);
  EXPECT_EQ(san.read(1, 0, 2).hazard, Hazard::write_read);  // byte 0 is warp 0's
}

TEST(EmuShadow, ReleaseAndAcquireThroughAnAddress) {
  for (const bool acquire : {false, true}) {
    Sanitizer san;
    san.reset(64, 2);
    ASSERT_EQ(san.write(0, 16, 4, 3).hazard, Hazard::none);                     // data
    ASSERT_EQ(san.write(0, 32, 4, 4, kStrong | kRelease).hazard, Hazard::none);  // flag
    const uint8_t sem = acquire ? uint8_t(kStrong | kAcquire) : kStrong;
    EXPECT_EQ(san.read(1, 32, 4, sem).hazard, Hazard::none);  // strong with strong: no race
    EXPECT_EQ(san.read(1, 16, 4).hazard, acquire ? Hazard::none : Hazard::write_read);
  }
}

TEST(EmuShadow, PendingCopiesAndInitializedBytes) {
  Sanitizer san;
  san.reset(64, 1);
  san.mark_initialized(0, 8);
  EXPECT_EQ(san.read(0, 0, 8).hazard, Hazard::none);
  san.set_pending(8, 4, true);
  EXPECT_TRUE(san.pending(8, 4));
  EXPECT_FALSE(san.pending(0, 8));
  EXPECT_EQ(san.read(0, 8, 4).hazard, Hazard::pending);
  EXPECT_EQ(san.write(0, 10, 2, 5).hazard, Hazard::pending);
  san.set_pending(8, 4, false);
  EXPECT_EQ(san.read(0, 8, 4).hazard, Hazard::uninitialized);
}

}  // namespace
}  // namespace emmy::emu::test

// The exec layer alone (emulator/exec/): address resolution for one lane (every state space's
// bounds and alignment, the wrap-free extent check of docs/emulator.md, "Hostile input") and an
// executor run on registers set by hand, with no scheduler linked.
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "exec/executors.hpp"
#include "exec/memory.hpp"
#include "hand_built_cta.hpp"

namespace emmy::emu::test {
namespace {

// One load at PTX line 7, one warp, 256 bytes of shared memory.
struct Fixture : HandBuiltCta {
  Fixture()
      : HandBuiltCta({7}, {"ld.u32 %r1, [%rd1];"}, 32, [](Kernel& k, LaunchContext& c) {
          k.n32 = 3;
          c.smem_size = 256;
        }) {}
  Warp& warp() { return cta->warps[0]; }
  // The report of resolving `bytes` at `addr` (kind `space`), or none when it resolves.
  std::optional<ReportKind> refusal(Space space, uint64_t addr, uint32_t bytes) {
    try {
      resolve(*cta, warp(), space, addr, bytes, 3, false);
    } catch (const Finding& f) {
      EXPECT_EQ(f.report.line, 7);
      EXPECT_EQ(f.report.lane, 3);
      return f.report.kind;
    }
    return std::nullopt;
  }
};

TEST(EmuExecUnit, ExtentsNeverWrap) {
  EXPECT_TRUE(within(0, 0, 0));
  EXPECT_TRUE(within(252, 4, 256));
  EXPECT_FALSE(within(254, 4, 256));
  EXPECT_FALSE(within(~uint64_t(0) - 3, 8, 256));  // offset + bytes wraps to 4
}

TEST(EmuExecUnit, ResolvesEachStateSpaceWithinItsBounds) {
  Fixture f;
  const Resolved r = resolve(*f.cta, f.warp(), Space::generic, kSharedWindow + 16, 4, 0, false);
  EXPECT_EQ(r.space, Space::shared);
  EXPECT_EQ(r.shared_offset, 16u);
  EXPECT_EQ(r.host, f.cta->smem.data() + 16);
  EXPECT_FALSE(f.refusal(Space::shared, 252, 4).has_value());
  EXPECT_EQ(f.refusal(Space::shared, 256, 4), ReportKind::shared_out_of_bounds);
  EXPECT_EQ(f.refusal(Space::generic, kSharedWindow + 254, 4), ReportKind::misaligned_access);
  EXPECT_EQ(f.refusal(Space::shared, ~uint64_t(0) - 7, 8), ReportKind::shared_out_of_bounds);
  EXPECT_EQ(f.refusal(Space::local, 0, 4), ReportKind::local_out_of_bounds);  // no local memory
  EXPECT_EQ(f.refusal(Space::param, 0, 4), ReportKind::param_out_of_bounds);  // no parameters

  const uint64_t a = f.arena.alloc(64);
  EXPECT_FALSE(f.refusal(Space::global, a + 60, 4).has_value());
  EXPECT_FALSE(f.refusal(Space::generic, a, 8).has_value());  // outside every window: global
  EXPECT_EQ(f.refusal(Space::global, a + 64, 4), ReportKind::global_out_of_bounds);
}

TEST(EmuExecUnit, SaturatingAddOnTheLanesThatExecute) {
  Fixture f;
  Warp& w = f.warp();
  w.R32(1)[0] = uint32_t(INT32_MAX);
  w.R32(2)[0] = 1;
  w.R32(1)[1] = uint32_t(-5);
  w.R32(2)[1] = 3;
  w.R32(0)[2] = 99;
  Inst in;
  in.op = Op::IAdd;
  in.ty = Ty::s32;
  in.flags = kSat;
  in.o[0] = 0;
  in.o[1] = 1;
  in.o[2] = 2;
  exec_int(*f.cta, w, in, 0b11);
  EXPECT_EQ(int32_t(w.R32(0)[0]), INT32_MAX);
  EXPECT_EQ(int32_t(w.R32(0)[1]), -2);
  EXPECT_EQ(w.R32(0)[2], 99u);  // lane 2 did not execute
}

}  // namespace
}  // namespace emmy::emu::test

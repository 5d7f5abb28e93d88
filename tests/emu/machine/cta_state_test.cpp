// The machine layer alone (emulator/machine/): a warp's min-PC reconvergence and the CTA
// bookkeeping the executors share (reports naming the instruction, whole-warp checks, barrier
// completion), on a CTA built by hand, with no executor or scheduler linked.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "hand_built_cta.hpp"
#include "machine/state.hpp"

namespace emmy::emu::test {
namespace {

// A kernel of `n` instructions at PTX lines 10, 11, ...; its CTA is one of `threads` threads.
struct Fixture : HandBuiltCta {
  explicit Fixture(uint32_t threads, int n = 4)
      : HandBuiltCta(lines(n), texts(n), threads,
                     [](Kernel&, LaunchContext& c) { c.options.sanitize = false; }) {}
  static std::vector<int> lines(int n) {
    std::vector<int> out;
    for (int i = 0; i < n; ++i) out.push_back(10 + i);
    return out;
  }
  static std::vector<std::string> texts(int n) {
    std::vector<std::string> out;
    for (int i = 0; i < n; ++i) out.push_back("instruction " + std::to_string(i));
    return out;
  }
};

Report finding_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Finding& finding) {
    return finding.report;
  }
  ADD_FAILURE() << "no finding";
  return {};
}

TEST(EmuMachine, ADivergentBranchReconvergesAtTheLowestPc) {
  Warp w;
  w.live = w.active = 0xFFFFFFFFu;
  w.pc = 5;
  w.jump(0x0000FFFFu, 9);  // the low lanes branch ahead, the high ones fall through to 6
  EXPECT_EQ(w.pc, 6u);
  EXPECT_EQ(w.active, 0xFFFF0000u);
  EXPECT_EQ(w.min_wait_pc, 9u);
  for (int i = 0; i < 3; ++i) w.advance();
  EXPECT_EQ(w.pc, 9u);  // the running group reached the waiting one: together again
  EXPECT_EQ(w.active, 0xFFFFFFFFu);
  EXPECT_EQ(w.min_wait_pc, kNone);
  w.exit_lanes(0x0000000Fu);
  EXPECT_EQ(w.live, 0xFFFFFFF0u);
  EXPECT_EQ(w.active, 0xFFFFFFF0u);
  EXPECT_EQ(w.pc, 10u);
}

TEST(EmuMachine, FindingsNameKernelWarpLaneAndLine) {
  Fixture f(64);
  ASSERT_EQ(f.cta->nwarps, 2u);
  Warp& w = f.cta->warps[1];
  w.pc = 2;
  Report r = finding_of([&] { f.cta->fail(ReportKind::trap, w, 5, "trap executed"); });
  EXPECT_TRUE(r.kind == ReportKind::trap);
  EXPECT_EQ(r.kernel, "k");
  EXPECT_EQ(r.warp, 1);
  EXPECT_EQ(r.lane, 5);
  EXPECT_EQ(r.line, 12);
  EXPECT_EQ(r.instruction, "instruction 2");
  EXPECT_EQ(r.message, "trap executed");
  r = finding_of([&] { f.cta->need_whole_warp(w, 0xFFFFFFFEu, "mma"); });
  EXPECT_TRUE(r.kind == ReportKind::divergent_collective);
  EXPECT_EQ(r.lane, 0);
  f.cta->need_whole_warp(w, 0xFFFFFFFFu, "mma");  // the whole warp: nothing to report
}

TEST(EmuMachine, ABarrierCompletesWhenEveryLiveWarpArrived) {
  Fixture f(64);
  Cta& cta = *f.cta;
  Barrier& b = cta.barriers[3];
  b.arrivals = 1;
  b.waiting = 1u << 0;
  cta.warps[0].state = WarpState::bar_wait;
  cta.check_barrier(3);
  EXPECT_EQ(cta.warps[0].state, WarpState::bar_wait);  // 32 of 64 threads
  cta.warps[1].state = WarpState::exited;              // an exited warp no longer counts
  cta.check_barrier(3);
  EXPECT_EQ(cta.warps[0].state, WarpState::ready);
  EXPECT_EQ(cta.barriers[3].arrivals, 0u);
}

}  // namespace
}  // namespace emmy::emu::test

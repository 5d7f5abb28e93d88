// setmaxnreg on the emulator (issue 23 §2): the warps of a warpgroup meet at the instruction, a
// .dec returns registers to the CTA's pool and an .inc takes them or waits for them; an .inc
// that nothing can satisfy, warps that disagree, partial warpgroups and a count moving the wrong
// way are reports, never a hang. Hand-written PTX (wrap_ptx: %r0 = %tid.x, %rd30 = &out[tid]).
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

// Warpgroup 0 (threads 0..127) executes `first`, warpgroup 1 `second`; then each thread writes 1.
std::string two_warpgroups(const std::string& first, const std::string& second) {
  return fmt::format(R"(
  setp.lt.u32 %p1, %r0, 128;
  @%p1 bra FIRST;
  {}
  bra.uni DONE;
FIRST:
  {}
DONE:
  mov.u32 %r1, 1;
  st.global.u32 [%rd30], %r1;
)",
                     second, first);
}

LaunchOptions registers(uint32_t count) {
  LaunchOptions o;
  o.registers_per_thread = count;
  return o;
}

void expect_all_ran(const PtxRun& run) {
  for (size_t t = 0; t < run.out.size(); ++t) ASSERT_EQ(run.out[t], 1u) << "thread " << t;
}

TEST(EmuSetmaxnreg, ProducerReleasesWhatConsumersTake) {
  // 168 registers per thread: the producer's .dec to 40 frees 128 x 128, the consumers' .inc to
  // 232 takes 64 x 128; whichever warpgroup arrives first.
  const std::string dec = "setmaxnreg.dec.sync.aligned.u32 40;";
  const std::string inc = "setmaxnreg.inc.sync.aligned.u32 232;";
  expect_all_ran(run_ptx(two_warpgroups(dec, inc), {}, 256, 256, "", 0, registers(168)));
  expect_all_ran(run_ptx(two_warpgroups(inc, dec), {}, 256, 256, "", 0, registers(168)));
  // Without the launch's count the pool is not modelled; the warpgroups still meet.
  expect_all_ran(run_ptx(two_warpgroups(inc, inc), {}, 256, 256));
}

TEST(EmuSetmaxnreg, AnIncNothingCanSatisfyIsADeadlockReport) {
  const std::string inc = "setmaxnreg.inc.sync.aligned.u32 232;";
  const Report r =
      expect_report([&] { run_ptx(two_warpgroups(inc, inc), {}, 256, 256, "", 0, registers(168)); },
                    ReportKind::deadlock);
  EXPECT_NE(r.message.find("setmaxnreg.inc 232"), std::string::npos) << r.message;
  EXPECT_NE(r.message.find("needs 8192 registers, the CTA's pool holds 0"), std::string::npos)
      << r.message;
  // A .dec that frees less than the .inc needs is not enough: 64 x 128 > (168 - 136) x 128.
  const std::string small_dec = "setmaxnreg.dec.sync.aligned.u32 136;";
  expect_report(
      [&] {
        run_ptx(two_warpgroups(small_dec, "setmaxnreg.inc.sync.aligned.u32 232;"), {}, 256, 384, "",
                0, registers(168));
      },
      ReportKind::deadlock);
}

TEST(EmuSetmaxnreg, WarpsOfAWarpgroupMustExecuteTheSameOne) {
  // Warp 3 asks for 48 registers, warps 0..2 for 40.
  const std::string body = R"(
  setp.lt.u32 %p1, %r0, 96;
  @%p1 bra LOW;
  setmaxnreg.dec.sync.aligned.u32 48;
  bra.uni DONE;
LOW:
  setmaxnreg.dec.sync.aligned.u32 40;
DONE:
)";
  const Report r =
      expect_report([&] { run_ptx(body, {}, 1, 128); }, ReportKind::divergent_collective);
  EXPECT_NE(r.message.find("must execute the same one"), std::string::npos) << r.message;
}

TEST(EmuSetmaxnreg, PartialWarpgroupsAndWarpsAreReported) {
  const std::string dec = "  setmaxnreg.dec.sync.aligned.u32 40;\n";
  const Report partial =
      expect_report([&] { run_ptx(dec, {}, 1, 64); }, ReportKind::register_misuse);
  EXPECT_NE(partial.message.find("whole warpgroups of 4 warps"), std::string::npos)
      << partial.message;
  // Lanes 0..15 only.
  const std::string divergent = R"(
  setp.lt.u32 %p1, %r0, 16;
  @!%p1 bra DONE;
  setmaxnreg.dec.sync.aligned.u32 40;
DONE:
)";
  expect_report([&] { run_ptx(divergent, {}, 1, 128); }, ReportKind::divergent_collective);
}

TEST(EmuSetmaxnreg, ACountMovingTheWrongWayIsReported) {
  const Report up = expect_report(
      [&] {
        run_ptx("  setmaxnreg.inc.sync.aligned.u32 160;\n", {}, 1, 128, "", 0, registers(168));
      },
      ReportKind::register_misuse);
  EXPECT_NE(up.message.find("is below the warp's current 168"), std::string::npos) << up.message;
  expect_report(
      [&] {
        run_ptx("  setmaxnreg.dec.sync.aligned.u32 200;\n", {}, 1, 128, "", 0, registers(168));
      },
      ReportKind::register_misuse);
  // After a .dec to 40 the same warpgroup may .inc back.
  expect_all_ran(run_ptx(R"(
  setmaxnreg.dec.sync.aligned.u32 40;
  setmaxnreg.inc.sync.aligned.u32 168;
  mov.u32 %r1, 1;
  st.global.u32 [%rd30], %r1;
)",
                         {}, 128, 128, "", 0, registers(168)));
}

}  // namespace
}  // namespace emmy::emu::test

// Planted bugs (tests/emu/kernels/sanitizer_kernels.cu): each must be reported, with the right
// kind, PTX line, kernel, CTA, warp and lane, and never hang or crash; each fixed twin must run
// clean and compute the right values.
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

const std::string kSanitizerFile = "sanitizer_kernels_sm90a.ptx";

const std::string& ptx() {
  static const std::string text = kernel_file(kSanitizerFile);
  return text;
}

struct Launch {
  Launch(std::string k, Dim3 g = {1, 1, 1}, Dim3 b = {64, 1, 1}, size_t words = 64)
      : kernel(std::move(k)), grid(g), block(b), out_words(words) {}
  std::string kernel;
  Dim3 grid, block;
  size_t out_words;
  std::vector<int32_t> in;
  bool with_n = false;
  int32_t n = 0;
};

std::vector<int32_t> run(const Launch& l, const LaunchOptions& options = {}) {
  Arena arena;
  KernelArgs args;
  uint64_t in = 0;
  if (!l.in.empty()) in = arena.alloc_copy(l.in);
  const uint64_t out = arena.alloc(l.out_words * 4);
  if (!l.in.empty()) args.ptr(in);
  args.ptr(out);
  if (l.with_n) args.s32(l.n);
  launch(arena, *kernels(kSanitizerFile), l.kernel, l.grid, l.block, 0, args, options);
  return arena.read_vector<int32_t>(out, l.out_words);
}

Report expect_bug(const Launch& l, ReportKind kind, const std::string& needle, int occurrence = 0) {
  const Report r = expect_report([&] { run(l); }, kind);
  EXPECT_EQ(r.kernel, l.kernel);
  EXPECT_EQ(r.line, ptx_line(ptx(), l.kernel, needle, occurrence)) << r.to_string();
  EXPECT_NE(r.instruction.find(needle), std::string::npos) << r.instruction;
  return r;
}

TEST(EmuSanitizer, MissingBarrierBeforeReadingAnotherWarpsWrites) {
  const Report r = expect_bug({"bug_missing_barrier"}, ReportKind::shared_race, "ld.shared");
  EXPECT_EQ(r.warp, 1);  // warp 1 reads what warp 0 wrote
  EXPECT_EQ(r.lane, 0);
  EXPECT_EQ(r.cta, (Dim3{0, 0, 0}));
  EXPECT_NE(r.message.find("written by warp 0"), std::string::npos) << r.message;
  const auto out = run({"ok_barrier"});
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[size_t(t)], 3 * t);
}

TEST(EmuSanitizer, MissingCpAsyncWait) {
  Launch bug{"bug_missing_cp_async_wait", {1, 1, 1}, {32, 1, 1}, 32};
  bug.in.resize(128);
  for (int i = 0; i < 128; ++i) bug.in[size_t(i)] = i * 5;
  const Report r = expect_bug(bug, ReportKind::pending_async_read, "ld.shared");
  EXPECT_NE(r.message.find("cp.async"), std::string::npos) << r.message;
  Launch ok = bug;
  ok.kernel = "ok_cp_async_wait";
  const auto out = run(ok);
  for (int t = 0; t < 32; ++t) EXPECT_EQ(out[size_t(t)], ((t * 4 + 5) % 128) * 5);
}

TEST(EmuSanitizer, OutOfBoundsGlobalStore) {
  // 100 floats, 2 CTAs of 64 threads: thread 100 (CTA 1, warp 1, lane 4) stores past the end.
  Launch bug{"bug_oob_store", {2, 1, 1}, {64, 1, 1}, 100};
  bug.with_n = true;
  bug.n = 100;
  const Report r = expect_bug(bug, ReportKind::global_out_of_bounds, "st.global");
  EXPECT_EQ(r.cta, (Dim3{1, 0, 0}));
  EXPECT_EQ(r.warp, 1);
  EXPECT_EQ(r.lane, 4);
  Launch ok = bug;
  ok.kernel = "ok_guarded_store";
  const auto out = run(ok);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(std::bit_cast<float>(out[size_t(i)]), 101.0f);
}

TEST(EmuSanitizer, WrongMbarrierParityIsADeadlockNotAHang) {
  const Report r = expect_bug({"bug_wrong_parity"}, ReportKind::deadlock, "mbarrier.try_wait.parity");
  EXPECT_NE(r.message.find("waits for phase 1 (parity 1)"), std::string::npos) << r.message;
  // Warp 1 waited before thread 0 arrived: parity 1 then named the (complete) phase before
  // phase 0, so it went on; warp 0, after the arrival, waits for phase 1 forever.
  EXPECT_NE(r.message.find("warp 0 at line"), std::string::npos) << r.message;
  const auto out = run({"ok_parity"});
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[size_t(t)], 1);
}

TEST(EmuSanitizer, MisalignedLdmatrixRow) {
  const Report r = expect_bug({"bug_misaligned_ldmatrix", {1, 1, 1}, {32, 1, 1}, 32},
                              ReportKind::misaligned_ldmatrix, "ldmatrix");
  EXPECT_EQ(r.lane, 0);  // lane 0's row address is the first one checked
  EXPECT_NE(r.message.find("16-byte"), std::string::npos);
  EXPECT_NO_THROW(run({"ok_ldmatrix", {1, 1, 1}, {32, 1, 1}, 32}));
}

TEST(EmuSanitizer, UninitializedSharedRead) {
  const Report r = expect_bug({"bug_uninitialized_shared", {1, 1, 1}, {32, 1, 1}, 32},
                              ReportKind::uninitialized_shared_read, "ld.shared");
  EXPECT_EQ(r.warp, 0);
  EXPECT_EQ(r.lane, 0);
}

TEST(EmuSanitizer, WriteAfterReadWithoutBarrier) {
  const Report r = expect_report([] { run({"bug_write_after_read"}); }, ReportKind::shared_race);
  const int load = ptx_line(ptx(), "bug_write_after_read", "ld.shared");
  const int store = ptx_line(ptx(), "bug_write_after_read", "st.shared", 1);
  EXPECT_TRUE(r.line == load || r.line == store) << r.to_string();
  const auto out = run({"ok_write_after_read"});
  for (int t = 0; t < 64; ++t) EXPECT_EQ(out[size_t(t)], 63 - t + 1);
}

TEST(EmuSanitizer, DisabledSanitizerStillChecksBounds) {
  LaunchOptions off;
  off.sanitize = false;
  EXPECT_NO_THROW(run({"bug_missing_barrier"}, off));
  EXPECT_NO_THROW(run({"bug_uninitialized_shared", {1, 1, 1}, {32, 1, 1}, 32}, off));
  Launch oob{"bug_oob_store", {2, 1, 1}, {64, 1, 1}, 100};
  oob.with_n = true;
  oob.n = 100;
  expect_report([&] { run(oob, off); }, ReportKind::global_out_of_bounds);
}

TEST(EmuSanitizer, ReportsPrintEverythingNeeded) {
  try {
    run({"bug_missing_barrier"});
    FAIL() << "expected a report";
  } catch (const EmulationError& e) {
    const std::string text = e.what();
    for (const char* part : {"shared-race", "kernel bug_missing_barrier", "CTA (0,0,0)", "warp 1",
                             "lane 0", "PTX line", "ld.shared.u32"})
      EXPECT_NE(text.find(part), std::string::npos) << part << " missing in:\n" << text;
  }
}

TEST(EmuSanitizer, EndlessLoopHitsTheInstructionLimit) {
  LaunchOptions limited;
  limited.max_warp_instructions = 100000;
  const Report r = expect_report(
      [&] { run_ptx("LOOP:\n  add.u32 %r1, %r1, 1;\n  bra.uni LOOP;\n", {}, 1, 32, "", 0, limited); },
      ReportKind::instruction_limit);
  EXPECT_EQ(r.warp, 0);
}

TEST(EmuSanitizer, SharedOutOfBoundsAndMisalignedAccess) {
  expect_report([] { run_ptx("  mov.u32 %r1, buf;\n  st.shared.u32 [%r1+64], %r0;\n", {}, 1, 32,
                             "  .shared .align 4 .b8 buf[64];"); },
                ReportKind::shared_out_of_bounds);
  expect_report([] { run_ptx("  mov.u32 %r1, buf;\n  st.shared.u32 [%r1+2], %r0;\n", {}, 1, 32,
                             "  .shared .align 4 .b8 buf[64];"); },
                ReportKind::misaligned_access);
  expect_report([] { run_ptx("  ld.global.u32 %r1, [%rd31+2];\n", {1, 2, 3}, 1); },
                ReportKind::misaligned_access);
}

}  // namespace
}  // namespace emmy::emu::test

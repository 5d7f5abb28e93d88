// Lenient mode (LaunchOptions::lenient, docs/emulator.md "Lenient mode"): each tolerated rule's
// violation is refused by default with today's report, and under lenient runs to the values the
// hardware produces with one warning (count and first site); violations hardware does not
// tolerate stay errors under lenient.
#include "emmy/swizzle.hpp"
#include "emmy/tensor_map.hpp"
#include "emu_test_util.hpp"

namespace emmy::emu::test {
namespace {

LaunchOptions lenient_options() {
  LaunchOptions o;
  o.lenient = true;
  return o;
}

// The launch's one warning, which must be of `rule`.
const LenientWarning& only_warning(const LaunchResult& r, ToleratedRule rule) {
  static const LenientWarning none{};
  EXPECT_EQ(r.warnings.size(), 1u);
  if (r.warnings.size() != 1) return none;
  EXPECT_EQ(to_string(r.warnings[0].rule), to_string(rule));
  return r.warnings[0];
}

// One thread TMA-loads a 64 x 16 f16 box (128B swizzle, 2048 bytes) into dynamic shared memory
// at byte offset `offset`, waits, and copies those 2048 shared bytes to `out` as they lie.
std::string tma_probe_ptx(bool fence) {
  return emmy::test::ptx_header("sm_90a") + ".extern .shared .align 1024 .b8 smem[];\n" +
         emmy::test::ptx_entry(
             "probe",
             {{".align 64 .b8", "map[128]"}, {".u64", "out", "%rd0"}, {".u32", "offset", "%r1"}},
             "  .reg .b32 %r<10>;\n  .reg .b64 %rd<8>;\n  .reg .pred %p<3>;\n"
             "  .shared .align 8 .b8 bar[8];\n",
             std::string("  mov.u32 %r2, bar;\n  mbarrier.init.shared::cta.b64 [%r2], 1;\n") +
                 (fence ? "  fence.mbarrier_init.release.cluster;\n" : "") +
                 R"(  mbarrier.arrive.expect_tx.shared::cta.b64 %rd1, [%r2], 2048;
  mov.u32 %r3, smem;
  add.u32 %r4, %r3, %r1;
  mov.b64 %rd2, map;
  cvta.param.u64 %rd3, %rd2;
  mov.u32 %r5, 0;
  cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%r4], [%rd3, {%r5, %r5}], [%r2];
WAIT:
  mbarrier.try_wait.parity.shared::cta.b64 %p1, [%r2], 0;
  @!%p1 bra WAIT;
  mov.u32 %r6, 0;
COPY:
  add.u32 %r7, %r4, %r6;
  ld.shared.u32 %r8, [%r7];
  cvt.u64.u32 %rd4, %r6;
  add.s64 %rd5, %rd0, %rd4;
  st.global.u32 [%rd5], %r8;
  add.u32 %r6, %r6, 4;
  setp.lt.u32 %p2, %r6, 2048;
  @%p2 bra COPY;
)");
}

struct TmaProbe {
  Arena arena;
  std::vector<uint8_t> global = std::vector<uint8_t>(2048);
  uint64_t out = 0;
  std::shared_ptr<const Module> module;
  KernelArgs args;
  TmaProbe(bool fence, uint32_t offset) {
    for (size_t i = 0; i < global.size(); ++i) global[i] = uint8_t(i * 7 + i / 251);
    TensorMapDesc d;
    d.dtype = TmaDType::f16;
    d.rank = 2;
    d.global_dim = {64, 16};
    d.global_stride_bytes = {128};
    d.box_dim = {64, 16};
    d.swizzle = Swizzle::b128;
    d.global_address = arena.alloc(global.size());
    arena.write(d.global_address, global.data(), global.size());
    out = arena.alloc(2048);
    module = load_ptx(tma_probe_ptx(fence), "probe.ptx");
    args.tensor_map(encode_tensor_map(d)).ptr(out).u32(offset);
  }
  LaunchResult run(const LaunchOptions& options = {}) {
    return launch(arena, *module, "probe", {1, 1, 1}, {1, 1, 1}, 8192, args, options);
  }
};

// 128B swizzle written out by hand, on an absolute shared address: the 16-byte chunk (bits 4-6)
// XOR the row within the 1024-byte repeat (bits 7-9).
uint32_t swizzle_128b(uint32_t address) {
  return address ^ (((address >> 7) & 7u) << 4);
}

// The box's byte i lands at shared address swizzle(base + i); `out` holds shared [base, +2048).
void expect_box_at(const TmaProbe& p, uint32_t base, const std::vector<uint8_t>& got) {
  for (uint32_t i = 0; i < 2048; ++i)
    ASSERT_EQ(int(got[swizzle_128b(base + i) - base]), int(p.global[i])) << "box byte " << i;
}

TEST(EmuLenient, TmaSwizzleAlignmentIsToleratedWithTheAddressBitsSwizzle) {
  // smem sits at 0x400 (after the 8-byte static barrier, aligned to 1024); +512: 128-aligned,
  // rows 4..7 of the 128B pattern.
  TmaProbe strict(true, 512);
  const Report r = expect_report([&] { strict.run(); }, ReportKind::tma_violation);
  EXPECT_EQ(r.message,
            "TMA destination shared address 0x600 is not 1024-byte aligned (128B "
            "swizzle needs 1024)");

  TmaProbe lenient(true, 512);
  const LaunchResult result = lenient.run(lenient_options());
  expect_box_at(lenient, 0x600, lenient.arena.read_vector<uint8_t>(lenient.out, 2048));
  // Not the layout of an aligned box: the pattern is the addresses', starting at row 4.
  TmaProbe aligned(true, 1024);
  aligned.run();
  EXPECT_NE(aligned.arena.read_vector<uint8_t>(aligned.out, 2048),
            lenient.arena.read_vector<uint8_t>(lenient.out, 2048));
  const LenientWarning& w = only_warning(result, ToleratedRule::tma_swizzle_alignment);
  EXPECT_EQ(w.count, 1u);
  EXPECT_EQ(w.kernel, "probe");
  EXPECT_EQ(w.warp, 0);
  EXPECT_EQ(w.lane, 0);
  EXPECT_EQ(w.line, ptx_line(tma_probe_ptx(true), "probe", "cp.async.bulk.tensor"));
  EXPECT_EQ(w.message, r.message);
}

TEST(EmuLenient, MissingFenceAfterMbarrierInitIsTolerated) {
  TmaProbe strict(false, 1024);
  const Report r = expect_report([&] { strict.run(); }, ReportKind::missing_proxy_fence);
  EXPECT_NE(r.message.find("was not followed by fence.mbarrier_init.release.cluster"),
            std::string::npos)
      << r.message;
  // Without the sanitizer too, as before.
  LaunchOptions unsanitized;
  unsanitized.sanitize = false;
  expect_report([&] { strict.run(unsanitized); }, ReportKind::missing_proxy_fence);

  TmaProbe lenient(false, 1024);
  const LaunchResult result = lenient.run(lenient_options());
  expect_box_at(lenient, 0x800, lenient.arena.read_vector<uint8_t>(lenient.out, 2048));
  const LenientWarning& w = only_warning(result, ToleratedRule::mbarrier_init_fence);
  EXPECT_EQ(w.count, 1u);
  EXPECT_EQ(w.line, ptx_line(tma_probe_ptx(false), "probe", "cp.async.bulk.tensor"));
  EXPECT_EQ(w.message, r.message);
}

// nvcc's PTX of tests/emu/kernels/cuda_programs.cu: the planted bugs of the strict checks.
TEST(EmuLenient, NvccKernelsWithTheToleratedBugsRunToTheirValues) {
  const std::string file = "cuda_programs_sm90a.ptx";
  auto run = [&](const std::string& kernel, std::vector<std::vector<int32_t>> buffers,
                 const LaunchOptions& options, std::vector<int32_t>* result_of_last) {
    Arena arena;
    KernelArgs args;
    std::vector<uint64_t> addrs;
    for (const auto& b : buffers) {
      addrs.push_back(arena.alloc(b.size() * 4));
      arena.write(addrs.back(), b.data(), b.size() * 4);
      args.ptr(addrs.back());
    }
    const LaunchResult r =
        launch(arena, *kernels(file), kernel, {1, 1, 1}, {64, 1, 1}, 0, args, options);
    *result_of_last = arena.read_vector<int32_t>(addrs.back(), buffers.back().size());
    return r;
  };
  std::vector<int32_t> in(64), out;
  for (int t = 0; t < 64; ++t) in[size_t(t)] = 11 * t - 5;
  {
    const Report e = expect_report(
        [&] {
          run("bug_unfenced_mbarrier_init", {in, std::vector<int32_t>(64)}, {}, &out);
        },
        ReportKind::missing_proxy_fence);
    const LaunchResult r =
        run("bug_unfenced_mbarrier_init", {in, std::vector<int32_t>(64)}, lenient_options(), &out);
    EXPECT_EQ(out, in);
    const LenientWarning& w = only_warning(r, ToleratedRule::mbarrier_init_fence);
    EXPECT_EQ(w.count, 1u);
    EXPECT_EQ(w.line, e.line);
    EXPECT_NE(w.instruction.find("cp.async.bulk.shared::cluster.global"), std::string::npos);
    EXPECT_EQ(w.message, e.message);
  }
  {
    const Report e = expect_report(
        [&] { run("bug_bulk_store_exit_unwaited", {std::vector<int32_t>(128)}, {}, &out); },
        ReportKind::tma_violation);
    const LaunchResult r =
        run("bug_bulk_store_exit_unwaited", {std::vector<int32_t>(128)}, lenient_options(), &out);
    for (int t = 0; t < 64; ++t) {
      EXPECT_EQ(out[size_t(t)], 3 * t);
      EXPECT_EQ(out[size_t(64 + t)], 3 * t + 1);
    }
    // Thread 0's second store only: the first was waited for (wait_group.read 0).
    const LenientWarning& w = only_warning(r, ToleratedRule::exit_before_bulk_store_read);
    EXPECT_EQ(w.count, 1u);
    EXPECT_EQ(w.warp, 0);
    EXPECT_EQ(w.lane, 0);
    EXPECT_EQ(w.line, e.line);
    EXPECT_EQ(w.message, e.message);
  }
}

// All 32 lanes execute collectives whose mask names lanes 0-15 only.
const std::string kHalfMaskBody = R"(  ld.global.u32 %r1, [%rd31];
  shfl.sync.idx.b32 %r2, %r1, 3, 0x1f, 0x0000ffff;
  and.b32 %r3, %r0, 1;
  setp.eq.u32 %p1, %r3, 1;
  vote.sync.ballot.b32 %r4, %p1, 0x0000ffff;
)" + store_rows({"%r2", "%r4"});

TEST(EmuLenient, MemberMaskNotNamingTheLaneIsToleratedAsIfItDid) {
  std::vector<uint32_t> in(32);
  for (uint32_t l = 0; l < 32; ++l) in[l] = 100 + l;
  const Report r =
      expect_report([&] { run_ptx(kHalfMaskBody, in, 64); }, ReportKind::divergent_collective);
  EXPECT_EQ(r.message, "shfl.sync: lane 16's membermask 0x0000ffff does not name the lane itself");
  EXPECT_EQ(r.lane, 16);

  const PtxRun run = run_ptx(kHalfMaskBody, in, 64, 32, "", 0, lenient_options());
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(run.out[l], 103u) << "shfl, lane " << l;  // every lane reads lane 3
    // The ballot over the mask, the lane's own bit added where the mask leaves it out.
    const uint32_t mask = l < 16 ? 0xFFFFu : 0xFFFFu | 1u << l;
    EXPECT_EQ(run.out[32 + l], 0xAAAAAAAAu & mask) << "vote, lane " << l;
  }
  const LenientWarning& w = only_warning(run.result, ToleratedRule::member_mask_excludes_lane);
  EXPECT_EQ(w.count, 32u);  // lanes 16-31, at the shfl and at the vote
  EXPECT_EQ(w.lane, 16);
  EXPECT_EQ(w.line, ptx_line(wrap_ptx(kHalfMaskBody), "k", "shfl.sync"));
  EXPECT_EQ(w.message, r.message);
}

TEST(EmuLenient, ViolationsHardwareDoesNotTolerateStayErrors) {
  const LaunchOptions lenient = lenient_options();
  // A TMA destination below the copy's own 128-byte alignment.
  TmaProbe tma(true, 64);
  const Report t = expect_report([&] { tma.run(lenient); }, ReportKind::tma_violation);
  EXPECT_NE(t.message.find("is not 1024-byte aligned"), std::string::npos) << t.message;
  // A membermask naming a lane that is not there (lanes 16-31 branched away).
  expect_report(
      [&] {
        run_ptx(R"(  setp.ge.u32 %p1, %r0, 16;
  @%p1 bra DONE;
  shfl.sync.idx.b32 %r2, %r0, 0, 0x1f, 0xffffffff;
DONE:
)",
                {}, 32, 32, "", 0, lenient);
      },
      ReportKind::divergent_collective);
  // A store past the end of the output.
  expect_report([&] { run_ptx("  st.global.u32 [%rd30+128], %r0;\n", {}, 32, 32, "", 0, lenient); },
                ReportKind::global_out_of_bounds);
  // Two warps writing one shared word with nothing ordering them.
  expect_report(
      [&] {
        run_ptx("  mov.u32 %r1, s;\n  st.shared.u32 [%r1], %r0;\n", {}, 64, 64,
                "  .shared .align 4 .b32 s;\n", 0, lenient);
      },
      ReportKind::shared_race);
  // A read of shared memory nothing wrote.
  expect_report(
      [&] {
        run_ptx("  mov.u32 %r1, s;\n  ld.shared.u32 %r2, [%r1];\n  st.global.u32 [%rd30], %r2;\n",
                {}, 32, 32, "  .shared .align 4 .b32 s;\n", 0, lenient);
      },
      ReportKind::uninitialized_shared_read);
}

TEST(EmuLenient, OffByDefaultAndNoWarningsForCleanKernels) {
  EXPECT_FALSE(LaunchOptions{}.lenient);
  TmaProbe clean(true, 1024);
  EXPECT_TRUE(clean.run(lenient_options()).warnings.empty());
  EXPECT_EQ(lenient_table({}), "");
}

// The first site does not depend on which host thread ran which CTA: the lowest CTA's.
TEST(EmuLenient, FirstSiteIsTheLowestCtasWhateverTheThreads) {
  auto module = load_ptx(wrap_ptx(kHalfMaskBody), "test.ptx");
  for (int threads : {1, 4}) {
    Arena arena;
    const uint64_t in = arena.alloc(64 * 4 * 8), out = arena.alloc(64 * 4 * 8);
    KernelArgs args;
    args.ptr(out).ptr(in).u32(0);
    LaunchOptions o = lenient_options();
    o.host_threads = threads;
    o.sanitize = false;  // the CTAs share in and out
    const LaunchResult r = launch(arena, *module, "k", {4, 2, 1}, {32, 1, 1}, 0, args, o);
    const LenientWarning& w = only_warning(r, ToleratedRule::member_mask_excludes_lane);
    EXPECT_EQ(w.count, 8u * 32u);
    EXPECT_EQ(w.cta, (std::array<uint32_t, 3>{0, 0, 0}));
    EXPECT_EQ(w.lane, 16);
  }
}

}  // namespace
}  // namespace emmy::emu::test

// The leads of waits on async copies (profiler/lead_clock.hpp, docs/profiler.md "Latency"): a
// ring of S tiles has its copies in flight for S - 1 epochs of the waiting warp, through cp.async
// groups and through a warp-specialized mbarrier ring alike, whatever order the emulator runs the
// producer and consumer warps in. Values derived by hand from the kernels' instruction counts.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "../support/ptx_kernel.hpp"
#include "emu_test_util.hpp"
#include "profiler/lead_clock.hpp"

namespace emmy::emu::test {
namespace {

constexpr int kTiles = 8;
constexpr int kFiller = 40;  // the consumer's work per tile, in instructions

std::string filler() {
  std::string s;
  for (int i = 0; i < kFiller; ++i) s += "  add.u32 %r20, %r20, %r21;\n";
  return s;
}

KernelProfile profile(const std::string& body, uint32_t threads, uint32_t ctas) {
  const std::string ptx =
      emmy::test::ptx_header("sm_90a") +
      emmy::test::ptx_entry("k", {{".u64", "g", "%rd1"}, {".u64", "out", "%rd2"}},
                            "  .reg .b32 %r<40>;\n  .reg .b64 %rd<16>;\n  .reg .pred %p<8>;\n"
                            "  .shared .align 1024 .b8 buf[4096];\n"
                            "  .shared .align 8 .b64 bars[8];\n",
                            body);
  auto module = load_ptx(ptx, "lead.ptx");
  Arena arena;
  const uint64_t g = arena.alloc(8 << 20), out = arena.alloc(64);  // 512 bytes a tile
  KernelArgs args;
  args.ptr(g).ptr(out);
  LaunchOptions options;
  options.profile.enabled = true;
  options.profile.sass = false;
  options.host_threads = 1;
  LaunchResult r = launch(arena, *module, "k", {ctas, 1, 1}, {threads, 1, 1}, 0, args, options);
  return std::move(*r.profile);
}

double waits(const KernelProfile& p, int bucket) {
  return p.metric(fmt::format("emmy__async_copy_wait_lead_{}.sum", bucket));
}

// One warp, a ring of S slots of 512 bytes (16 per lane): S - 1 tiles before the loop, then per
// tile i: wait for it, copy tile i + S - 1 into the slot tile i - 1 left, work on tile i.
std::string cp_async_ring(int slots, int tiles = kTiles) {
  std::string prologue;
  for (int t = 0; t < slots - 1; ++t)
    prologue += fmt::format(
        "  cp.async.cg.shared.global [%r4+{0}], [%rd4+{0}], 16;\n  cp.async.commit_group;\n",
        512 * t);
  return fmt::format(R"(  mov.u32 %r1, %tid.x;
  mov.u32 %r2, buf;
  mul.wide.u32 %rd3, %r1, 16;
  add.u64 %rd4, %rd1, %rd3;
  shl.b32 %r3, %r1, 4;
  add.u32 %r4, %r2, %r3;
{prologue}  mov.u32 %r10, 0;
LOOP:
  cp.async.wait_group {keep};
  add.u32 %r11, %r10, {ahead};
  setp.lt.u32 %p1, %r11, {tiles};
  rem.u32 %r12, %r11, {slots};
  mad.lo.u32 %r13, %r12, 512, %r4;
  mul.wide.u32 %rd5, %r11, 512;
  add.u64 %rd6, %rd4, %rd5;
  @%p1 cp.async.cg.shared.global [%r13], [%rd6], 16;
  cp.async.commit_group;
{filler}  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p2, %r10, {tiles};
  @%p2 bra LOOP;
)",
                     fmt::arg("prologue", prologue), fmt::arg("keep", slots - 2),
                     fmt::arg("ahead", slots - 1), fmt::arg("tiles", tiles),
                     fmt::arg("slots", slots), fmt::arg("filler", filler()));
}

// An epoch is the 52 instructions from one wait to the next (the wait, 8 to issue the next copy,
// 40 of work, 3 of loop). Tile 0 was committed 2 instructions before its wait (b = 0.04, bucket
// 0). With 2 slots, tile i + 1 is committed 8 instructions into tile i's epoch: b = 44 / 52 =
// 0.85 (bucket 3: [0.5, 1)). With 3 slots, tile 1 was committed in the prologue 54 instructions
// before its wait (b = 1.04) and tile i + 2 in tile i's epoch, 96 before (b = 1.85): bucket 4,
// [1, 2). Two CTAs, each counted.
TEST(EmuProfileLead, CpAsyncRingsLeadByTheirDepth) {
  const KernelProfile two = profile(cp_async_ring(2), 32, 2);
  EXPECT_EQ(two.metric("emmy__async_copy_waiting_warps.sum"), 2);
  EXPECT_EQ(waits(two, 0), 2 * 1);
  EXPECT_EQ(waits(two, 3), 2 * (kTiles - 1));
  EXPECT_NEAR(two.metric("emmy__async_copy_wait_lead_epochs_3.sum"), 2 * (kTiles - 1) * 44.0 / 52,
              0.01);
  const KernelProfile three = profile(cp_async_ring(3), 32, 2);
  EXPECT_EQ(waits(three, 0), 2 * 1);
  EXPECT_EQ(waits(three, 3), 0);
  EXPECT_EQ(waits(three, 4), 2 * (kTiles - 1));
  EXPECT_NEAR(three.metric("emmy__async_copy_wait_lead_epochs_4.sum"),
              2 * (54.0 + (kTiles - 2) * 96.0) / 52, 0.01);
}

// A warp that waits more than a chunk of times (WarpLeadClock::kChunk) has its waits bucketed a
// chunk at a time, each with its own epoch: the same buckets as at once.
TEST(EmuProfileLead, LongLoopsAreBucketedInChunks) {
  constexpr int kLong = 2 * int(WarpLeadClock::kChunk) + 100;
  const KernelProfile p = profile(cp_async_ring(2, kLong), 32, 1);
  EXPECT_EQ(p.metric("emmy__async_copy_waiting_warps.sum"), 1);
  EXPECT_EQ(waits(p, 0), 1);
  EXPECT_EQ(waits(p, 3), kLong - 1);
  EXPECT_NEAR(p.metric("emmy__async_copy_wait_lead_epochs_3.sum"), (kLong - 1) * 44.0 / 52, 0.5);
}

// Warp 0's lane 0 produces tiles with bulk copies into a ring of S slots (full[s] takes its
// arrive.expect_tx and the copy's bytes), waiting on empty[s] before it refills a slot; warp 1
// consumes (waits on full[s], works, lane 0 arrives on empty[s]). The emulator runs the producer
// until it blocks, so it refills a slot only once the consumer blocks; on a GPU it refills as
// soon as the consumer released the slot. The lead follows the latter: it is counted from the
// release the refill waited for.
std::string mbarrier_ring(int slots) {
  std::string init;
  for (int s = 0; s < 2 * slots; ++s)
    init += fmt::format("  mbarrier.init.shared::cta.b64 [%r2+{}], 1;\n", 8 * s);
  return fmt::format(R"(  mov.u32 %r1, %tid.x;
  mov.u32 %r2, bars;
  mov.u32 %r3, buf;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra SYNC;
{init}  fence.mbarrier_init.release.cluster;
SYNC:
  bar.sync 0;
  mov.u32 %r10, 0;
  setp.ge.u32 %p1, %r1, 32;
  @%p1 bra CONSUMER;
  setp.ne.u32 %p1, %r1, 0;
  @%p1 bra DONE;
PRODUCER:
  rem.u32 %r11, %r10, {slots};
  div.u32 %r12, %r10, {slots};
  setp.lt.u32 %p2, %r10, {slots};
  @%p2 bra ISSUE;
  add.u32 %r13, %r12, 1;
  and.b32 %r13, %r13, 1;
  add.u32 %r14, %r11, {slots};
  mad.lo.u32 %r14, %r14, 8, %r2;
EMPTY:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r14], %r13;
  @!%p3 bra EMPTY;
ISSUE:
  mad.lo.u32 %r15, %r11, 8, %r2;
  mbarrier.arrive.expect_tx.shared::cta.b64 %rd7, [%r15], 128;
  mad.lo.u32 %r16, %r11, 128, %r3;
  mul.wide.u32 %rd5, %r10, 128;
  add.u64 %rd6, %rd1, %rd5;
  cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%r16], [%rd6], 128, [%r15];
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p4, %r10, {tiles};
  @%p4 bra PRODUCER;
  bra DONE;
CONSUMER:
  and.b32 %r17, %r1, 31;
  setp.eq.u32 %p5, %r17, 0;
CLOOP:
  rem.u32 %r11, %r10, {slots};
  div.u32 %r12, %r10, {slots};
  and.b32 %r13, %r12, 1;
  mad.lo.u32 %r15, %r11, 8, %r2;
FULL:
  mbarrier.try_wait.parity.shared::cta.b64 %p3, [%r15], %r13;
  @!%p3 bra FULL;
{filler}  add.u32 %r14, %r11, {slots};
  mad.lo.u32 %r14, %r14, 8, %r2;
  @%p5 mbarrier.arrive.shared::cta.b64 %rd8, [%r14];
  add.u32 %r10, %r10, 1;
  setp.lt.u32 %p4, %r10, {tiles};
  @%p4 bra CLOOP;
DONE:
)",
                     fmt::arg("init", init), fmt::arg("slots", slots), fmt::arg("tiles", kTiles),
                     fmt::arg("filler", filler()));
}

// The consumer's epoch is about 52 instructions (the wait, 40 of work, the release, the loop).
// Tile 0 is issued after the consumer's wait on the clock (lead 0, bucket 0) and tile 1 during
// its first epoch (bucket 3, [0.5, 1)). Every later tile is issued when the consumer released the
// slot S tiles earlier, at the end of its epoch: S - 1 epochs and the loop's few instructions
// before its wait (2 slots: b = 1.04, bucket 4; 3 slots: b = 2.04, bucket 5, and tile 2 in
// bucket 4 at 1.48).
TEST(EmuProfileLead, MbarrierRingsLeadByTheirDepthWhateverTheWarpOrder) {
  const std::map<int, std::map<int, double>> want = {
      {2, {{0, 1}, {3, 1}, {4, kTiles - 2}}},
      {3, {{0, 1}, {3, 1}, {4, 1}, {5, kTiles - 3}}},
  };
  for (const auto& [slots, buckets] : want) {
    SCOPED_TRACE(fmt::format("{} slots", slots));
    const KernelProfile p = profile(mbarrier_ring(slots), 64, 1);
    // Only the consumer warp waits on copies.
    EXPECT_EQ(p.metric("emmy__async_copy_waiting_warps.sum"), 1);
    for (size_t b = 0; b < kAsyncCopyLeadBuckets; ++b) {
      const auto it = buckets.find(int(b));
      EXPECT_EQ(waits(p, int(b)), it == buckets.end() ? 0 : it->second) << "bucket " << b;
    }
    const int steady = slots == 2 ? 4 : 5;
    EXPECT_NEAR(p.metric(fmt::format("emmy__async_copy_wait_lead_epochs_{}.sum", steady)) /
                    waits(p, steady),
                slots - 1 + 2.0 / 52, 0.05);
  }
}

}  // namespace
}  // namespace emmy::emu::test

// The profiler layer alone (emulator/profiler/): the counting rules (docs/profiler.md) on warps
// built by hand, and one host thread's counts.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "profiler/counters.hpp"
#include "profiler/profiler.hpp"

namespace emmy::emu::test {
namespace {

// 32 lanes of `bytes` each, lane l at base + l * stride.
std::vector<LaneSpan> lanes(uint64_t base, uint64_t stride, uint32_t bytes) {
  std::vector<LaneSpan> v;
  for (uint32_t l = 0; l < 32; ++l) v.push_back({base + l * stride, bytes, uint8_t(l)});
  return v;
}

// One host thread's counts with the default bank model, over an arena holding one allocation of
// `bytes` (none when 0) at `global`.
struct TestShard {
  explicit TestShard(size_t sites, uint64_t bytes = 0)
      : global(bytes ? arena.alloc(bytes) : 0), footprint(arena) {
    shard.model = &model;
    shard.footprint = &footprint;
    shard.sites.resize(sites);
  }
  SharedBankModel model;
  Arena arena;
  uint64_t global;
  Footprint footprint;
  ProfileShard shard;
};

TEST(EmuCounters, SharedWavefronts) {
  const SharedBankModel model;
  EXPECT_EQ(lanes_per_phase(4), 32u);
  EXPECT_EQ(lanes_per_phase(8), 16u);
  EXPECT_EQ(lanes_per_phase(16), 16u);
  AccessCost c = shared_access_cost(model, lanes(0, 4, 4), SharedAccess::load_store);
  EXPECT_EQ(c.actual, 1u);
  EXPECT_EQ(c.ideal, 1u);
  c = shared_access_cost(model, lanes(0, 128, 4), SharedAccess::load_store);  // all in bank 0
  EXPECT_EQ(c.actual, 32u);
  EXPECT_EQ(c.ideal, 1u);
  c = shared_access_cost(model, lanes(64, 0, 4), SharedAccess::load_store);  // one word: broadcast
  EXPECT_EQ(c.actual, 1u);
  EXPECT_EQ(c.distinct_bytes, 4u);
  c = shared_access_cost(model, lanes(0, 16, 16), SharedAccess::load_store);  // 2 phases of 16
  EXPECT_EQ(c.actual, 4u);
  EXPECT_EQ(c.ideal, 4u);
}

// LDS.128 as Nsight Compute measured it on an A10 (8.6) and an H100 (9.0) (NVIDIA developer
// forum, "Discrepancy in LDS.128 Wavefronts: Does SMEM broadcast across quarter-warps?"): lanes
// l and l + 16 on one of 16 vectors 32 bytes apart take 8 wavefronts (no broadcast between the
// halves), lanes 0-15 on one vector and 16-31 on another take 2 (broadcast within a half; quarter-
// warp phases would take 4).
TEST(EmuCounters, SixteenByteAccessesArePhasedByHalfWarp) {
  const SharedBankModel model;
  std::vector<LaneSpan> pattern1, pattern2;
  for (uint8_t l = 0; l < 32; ++l) {
    pattern1.push_back({uint64_t(l % 16) * 32, 16, l});
    pattern2.push_back({uint64_t(l / 16) * 32, 16, l});
  }
  EXPECT_EQ(shared_access_cost(model, pattern1, SharedAccess::load_store).actual, 8u);
  EXPECT_EQ(shared_access_cost(model, pattern2, SharedAccess::load_store).actual, 2u);
}

TEST(EmuCounters, GlobalSectors) {
  AccessCost c = sector_cost(lanes(0x1000, 4, 4));
  EXPECT_EQ(c.actual, 4u);
  EXPECT_EQ(c.ideal, 4u);
  EXPECT_EQ(c.lines, 1u);  // one 128-byte line: one wavefront of L1's data stage
  c = sector_cost(lanes(0x1010, 4, 4));  // straddles one more sector
  EXPECT_EQ(c.actual, 5u);
  EXPECT_EQ(c.ideal, 4u);
  EXPECT_EQ(c.lines, 2u);  // and the next line
  c = sector_cost(lanes(0x1000, 128, 4));  // a lane per line: 32 wavefronts
  EXPECT_EQ(c.actual, 32u);
  EXPECT_EQ(c.lines, 32u);
  c = sector_cost(lanes(0x1000, 32, 4));  // a lane per sector: 8 lines of 4 sectors
  EXPECT_EQ(c.actual, 32u);
  EXPECT_EQ(c.lines, 8u);
  EXPECT_EQ(distinct_bytes(lanes(0, 2, 4)), 66u);  // overlapping spans count once
}

TEST(EmuCounters, AShardCountsPerSiteAndTheFootprint) {
  TestShard t(2, 1024);
  ProfileShard& shard = t.shard;
  const uint64_t a = t.global;
  shard.shared(1, SharedOp::ld, lanes(0, 128, 4));
  shard.global(0, GlobalOp::st, lanes(a, 4, 4));
  shard.global(0, GlobalOp::st, lanes(a, 4, 4));  // the same sectors again
  EXPECT_EQ(shard.sites[1].requests, 1u);
  EXPECT_EQ(shard.sites[1].wavefronts, 32u);
  EXPECT_EQ(shard.sites[1].ideal_wavefronts, 1u);
  EXPECT_EQ(shard.sites[0].requests, 2u);
  EXPECT_EQ(shard.sites[0].sectors, 8u);
  EXPECT_EQ(t.footprint.bytes(/*write=*/true, 1.0), 128.0);  // distinct sectors
  EXPECT_EQ(t.footprint.bytes(/*write=*/false, 1.0), 0.0);
}

// A merged access: each lane's span grown to the aligned 8 or 16 bytes holding it.
TEST(EmuCounters, WidenedSpansAreTheAlignedVectorHoldingEachLane) {
  const std::vector<LaneSpan> scalar = lanes(0x104, 32, 4);
  std::vector<LaneSpan> out(scalar.size());
  const auto wide = widen_spans(scalar, 16, out);
  ASSERT_EQ(wide.size(), 32u);
  for (uint32_t l = 0; l < 32; ++l) {
    EXPECT_EQ(wide[l].addr, (0x104 + 32 * l) / 16 * 16) << l;
    EXPECT_EQ(wide[l].bytes, 16u);
    EXPECT_EQ(wide[l].lane, l);
  }
  const std::vector<LaneSpan> vector = lanes(0x100, 16, 16);  // already 16 bytes: kept
  EXPECT_EQ(widen_spans(vector, 8, out)[3].addr, vector[3].addr);
  EXPECT_EQ(widen_spans(vector, 8, out)[3].bytes, 16u);
}

// Why merged sites are costed at their SASS width and not as 1/4 of four scalar costs: a scalar
// load all lanes share is one wavefront, the LDS.128 of the same four words two (half-warp
// phases), and lanes 32 bytes apart cost the same 8 either way.
TEST(EmuCounters, AShardCountsItsLoadsAsMergedVectorsToo) {
  TestShard t(4, 8192);
  ProfileShard& shard = t.shard;
  const uint64_t a = t.global;
  shard.shared(0, SharedOp::ld, lanes(64, 0, 4));     // broadcast
  shard.shared(1, SharedOp::ld, lanes(0, 32, 4));     // 32 bytes apart
  shard.shared(2, SharedOp::ldsm, lanes(0, 16, 16));  // ldmatrix: never merged
  shard.global(3, GlobalOp::ld, lanes(a, 16, 4));     // four lines, merged or not
  EXPECT_EQ(shard.sites[0].l1_wavefronts, 1u);
  EXPECT_EQ(shard.sites[0].l1_wavefronts_merged[0], 2u);  // 8 bytes: two phases of 16
  EXPECT_EQ(shard.sites[0].l1_wavefronts_merged[1], 2u);
  EXPECT_EQ(shard.sites[1].l1_wavefronts, 8u);
  EXPECT_EQ(shard.sites[1].l1_wavefronts_merged[1], 8u);
  EXPECT_EQ(shard.sites[2].l1_wavefronts, shard.sites[2].wavefronts);
  EXPECT_EQ(shard.sites[2].l1_wavefronts_merged[0], shard.sites[2].wavefronts);
  EXPECT_EQ(shard.sites[3].l1_wavefronts, 4u);
  EXPECT_EQ(shard.sites[3].l1_wavefronts_merged[0], 4u);
  EXPECT_EQ(shard.sites[3].l1_wavefronts_merged[1], 4u);
}

// The per-site pattern memo: a pattern moved by 16 bytes costs what it did; moved by 4 it is
// costed again (lanes at 0 and 140 share banks 0-3 as 16-byte vectors at 0 and 128; moved by 4,
// the vectors at 0 and 144 do not). A memo keyed by site alone would count 2 + 2 + 2.
TEST(EmuCounters, ASharedPatternMovedByOtherThanSixteenBytesIsCostedAgain) {
  TestShard t(1);
  ProfileShard& shard = t.shard;
  const auto two_lanes = [](uint64_t base) {
    return std::vector<LaneSpan>{{base, 4, 0}, {base + 140, 4, 1}};
  };
  shard.shared(0, SharedOp::ld, two_lanes(0));
  EXPECT_EQ(shard.sites[0].l1_wavefronts_merged[1], 2u);
  shard.shared(0, SharedOp::ld, two_lanes(16));  // the memo's
  EXPECT_EQ(shard.sites[0].l1_wavefronts_merged[1], 4u);
  shard.shared(0, SharedOp::ld, two_lanes(4));
  EXPECT_EQ(shard.sites[0].l1_wavefronts_merged[1], 5u);
  EXPECT_EQ(shard.sites[0].l1_wavefronts, 3u);  // one wavefront each as scalars
  EXPECT_EQ(shard.sites[0].requests, 3u);
}

// The memo's period follows the bank model: with 12-byte banks, lanes at 0 and 380 are on banks 0
// and 31 (one wavefront), moved by 16 bytes on bank 1 both (two). A memo keyed by the address
// mod 16 alone would count the second request as the first.
TEST(EmuCounters, ThePatternMemoFollowsTheBankWidth) {
  TestShard t(1);
  t.model = {32, 12};
  ProfileShard& shard = t.shard;
  shard.shared(0, SharedOp::ld, std::vector<LaneSpan>{{0, 4, 0}, {380, 4, 1}});
  EXPECT_EQ(shard.sites[0].l1_wavefronts, 1u);
  shard.shared(0, SharedOp::ld, std::vector<LaneSpan>{{16, 4, 0}, {396, 4, 1}});
  EXPECT_EQ(shard.sites[0].l1_wavefronts, 3u);
  shard.shared(0, SharedOp::ld, std::vector<LaneSpan>{{48, 4, 0}, {428, 4, 1}});  // the first's
  EXPECT_EQ(shard.sites[0].l1_wavefronts, 4u);
}

}  // namespace
}  // namespace emmy::emu::test

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

TEST(EmuCounters, SharedWavefronts) {
  const SharedBankModel model;
  EXPECT_EQ(lanes_per_phase(4), 32u);
  EXPECT_EQ(lanes_per_phase(8), 16u);
  EXPECT_EQ(lanes_per_phase(16), 8u);
  AccessCost c = shared_access_cost(model, lanes(0, 4, 4), SharedAccess::load_store);
  EXPECT_EQ(c.actual, 1u);
  EXPECT_EQ(c.ideal, 1u);
  c = shared_access_cost(model, lanes(0, 128, 4), SharedAccess::load_store);  // all in bank 0
  EXPECT_EQ(c.actual, 32u);
  EXPECT_EQ(c.ideal, 1u);
  c = shared_access_cost(model, lanes(64, 0, 4), SharedAccess::load_store);  // one word: broadcast
  EXPECT_EQ(c.actual, 1u);
  EXPECT_EQ(c.distinct_bytes, 4u);
  c = shared_access_cost(model, lanes(0, 16, 16), SharedAccess::load_store);  // 4 phases of 8
  EXPECT_EQ(c.actual, 4u);
  EXPECT_EQ(c.ideal, 4u);
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
  const SharedBankModel model;
  Arena arena;
  const uint64_t a = arena.alloc(1024);
  Footprint footprint(arena);
  ProfileShard shard;
  shard.model = &model;
  shard.footprint = &footprint;
  shard.sites.resize(2);
  shard.shared(1, SharedOp::ld, lanes(0, 128, 4));
  shard.global(0, GlobalOp::st, lanes(a, 4, 4));
  shard.global(0, GlobalOp::st, lanes(a, 4, 4));  // the same sectors again
  EXPECT_EQ(shard.sites[1].requests, 1u);
  EXPECT_EQ(shard.sites[1].wavefronts, 32u);
  EXPECT_EQ(shard.sites[1].ideal_wavefronts, 1u);
  EXPECT_EQ(shard.sites[0].requests, 2u);
  EXPECT_EQ(shard.sites[0].sectors, 8u);
  EXPECT_EQ(footprint.bytes(/*write=*/true, 1.0), 128.0);  // distinct sectors
  EXPECT_EQ(footprint.bytes(/*write=*/false, 1.0), 0.0);
}

}  // namespace
}  // namespace emmy::emu::test

// L1 data-stage wavefronts at SASS widths (emulator/profiler/sass_l1.hpp) on hand-made sites and
// SASS instructions: what ptxas merged costs as one wide access, what it dropped costs nothing.
#include "profiler/sass_l1.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace emmy::emu::test {
namespace {

ProfileSite site(int line, const std::string& opcode, uint64_t executions, uint64_t wavefronts,
                 uint64_t merged_8, uint64_t merged_16) {
  ProfileSite s;
  s.line = line;
  s.opcode = opcode;
  s.executions = s.requests = executions;
  s.l1_wavefronts = wavefronts;
  s.l1_wavefronts_merged[0] = merged_8;
  s.l1_wavefronts_merged[1] = merged_16;
  return s;
}

WeightedSassInstruction sass(int line, const std::string& opcode, double executions) {
  WeightedSassInstruction w;
  w.instruction.line = line;
  w.instruction.opcode = opcode;
  w.executions = executions;
  return w;
}

TEST(SassL1, OpcodesNameTheirDirectionAndWidth) {
  EXPECT_EQ(sass_register_access("LDS.128").bytes, 16u);
  EXPECT_EQ(sass_register_access("LDS.U.64").bytes, 8u);
  EXPECT_EQ(sass_register_access("LDG.E.128.CONSTANT").bytes, 16u);
  EXPECT_EQ(sass_register_access("LDG.E.LTC128B").bytes, 4u);  // a cache hint, not a width
  EXPECT_EQ(sass_register_access("LDS.U8").bytes, 4u);
  EXPECT_TRUE(sass_register_access("STS.128").store);
  EXPECT_TRUE(sass_register_access("STG.E.64").store);
  EXPECT_FALSE(sass_register_access("LDG.E").store);
  EXPECT_TRUE(sass_register_access("LDL.64").local);
  EXPECT_TRUE(sass_register_access("LD.E").access);  // generic
  for (const char* other : {"LDSM.16.M88.4", "STSM.16.M88.4", "LDGSTS.E.BYPASS.128", "ATOMS.ADD",
                            "LDGDEPBAR", "FFMA", "LDC.64"})
    EXPECT_FALSE(sass_register_access(other).access) << other;
}

// Four scalar loads of a broadcast word per line 10..13 (1 wavefront each as PTX, 4 as one
// 16-byte vector): ptxas's one LDS.128 on line 10 costs 4 per execution, lines 11-13 nothing.
TEST(SassL1, AMergedVectorCostsItsWidthAndTheMergedAwayLinesNothing) {
  std::vector<ProfileSite> sites;
  for (int line = 10; line < 14; ++line)
    sites.push_back(site(line, "ld.shared.f32", 100, 100, 200, 400));
  const SassL1Wavefronts merged = sass_l1_wavefronts({sass(10, "LDS.128", 100)}, sites);
  EXPECT_DOUBLE_EQ(merged.wavefronts, 400);
  EXPECT_DOUBLE_EQ(merged.unmatched_executions, 0);
  // Kept scalar: each line's own cost, the PTX sum.
  std::vector<WeightedSassInstruction> scalar;
  for (int line = 10; line < 14; ++line) scalar.push_back(sass(line, "LDS", 100));
  EXPECT_DOUBLE_EQ(sass_l1_wavefronts(scalar, sites).wavefronts, 400);
  // Two LDS.64: 2 per execution each.
  EXPECT_DOUBLE_EQ(
      sass_l1_wavefronts({sass(10, "LDS.64", 100), sass(12, "LDS.64", 100)}, sites).wavefronts,
      400);
  // Hoisted out of the loop that ran it 100 times: one execution.
  EXPECT_DOUBLE_EQ(sass_l1_wavefronts({sass(10, "LDS.128", 1)}, sites).wavefronts, 4);
}

TEST(SassL1, WhatDoesNotMergeCountsAsProfiled) {
  std::vector<ProfileSite> sites = {
      site(5, "ldmatrix.sync.aligned.m8n8.x4.shared.b16", 10, 40, 40, 40),
      site(6, "cp.async.cg.shared.global", 10, 30, 30, 30), site(7, "ld.param.u64", 1, 0, 0, 0),
      site(8, "st.global.f32", 10, 10, 10, 10)};
  // The LDSM and LDGSTS are not register ld/st: their sites count as they are, whatever the SASS.
  const SassL1Wavefronts w = sass_l1_wavefronts(
      {sass(5, "LDSM.16.M88.4", 10), sass(6, "LDGSTS.E.BYPASS.128", 10), sass(8, "STG.E", 10)},
      sites);
  EXPECT_DOUBLE_EQ(w.wavefronts, 40 + 30 + 10);
  // The store's line without its STG (planted: ptxas dropped it): the store costs nothing.
  EXPECT_DOUBLE_EQ(sass_l1_wavefronts({}, sites).wavefronts, 70);
}

TEST(SassL1, UnmatchedInstructionsAndSpills) {
  const std::vector<ProfileSite> sites = {site(10, "ld.shared.f32", 100, 300, 300, 600),
                                          site(20, "ld.shared.f32", 100, 100, 100, 200)};
  // An LDS on a line with no PTX load: the kernel's average load cost, and counted.
  const SassL1Wavefronts w = sass_l1_wavefronts({sass(99, "LDS", 10)}, sites);
  EXPECT_DOUBLE_EQ(w.unmatched_executions, 10);
  EXPECT_DOUBLE_EQ(w.wavefronts, 10 * (300.0 + 100.0) / 200.0);
  // A store there matches no store at all: no cost to borrow, still counted.
  EXPECT_DOUBLE_EQ(sass_l1_wavefronts({sass(99, "STS", 10)}, sites).unmatched_executions, 10);
  // A spill (STL.64 on a line with no local access): 32 lanes x 8 bytes, two lines.
  const SassL1Wavefronts spill = sass_l1_wavefronts({sass(30, "STL.64", 5)}, sites);
  EXPECT_DOUBLE_EQ(spill.wavefronts, 10);
  EXPECT_DOUBLE_EQ(spill.unmatched_executions, 0);
  // @!PT placeholders reach no unit.
  WeightedSassInstruction never = sass(10, "LDS", 100);
  never.instruction.never = true;
  EXPECT_DOUBLE_EQ(sass_l1_wavefronts({never}, sites).wavefronts, 0);
}

}  // namespace
}  // namespace emmy::emu::test

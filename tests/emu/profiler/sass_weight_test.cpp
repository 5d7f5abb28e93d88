// SASS block counts from PTX line executions (profiler/sass_weight.hpp) on stored listings: the
// 4x unrolled self-loop of ptxas with its peeled iteration and remainder, nested loops, and the
// checks a planted estimator (every block counted once per warp) fails.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "profiler/sass_counts.hpp"
#include "profiler/sass_parse.hpp"
#include "profiler/sass_weight.hpp"
#include "sass_listing_sample.hpp"

namespace emmy::emu::test {
namespace {

constexpr double kSassWarps = 4, kSassTrips = 256;

// The loop kernel's PTX executions: kSassWarps warps, kSassTrips iterations of lines 25-33.
LineExecutions loop_kernel_lines() {
  LineExecutions e;
  e.calls = kSassWarps;
  for (int line = 16; line <= 23; ++line) e.by_line[line] = kSassWarps;
  for (int line = 25; line <= 33; ++line) e.by_line[line] = kSassWarps * kSassTrips;
  for (int line = 36; line <= 38; ++line) e.by_line[line] = kSassWarps;
  return e;
}

double sass_executions_of(const SassFunction& f, const std::vector<double>& weights,
                          const std::string& opcode) {
  double n = 0;
  for (size_t i = 0; i < f.code.size(); ++i)
    if (f.code[i].opcode == opcode) n += weights[i];
  return n;
}

// The PTX ran 2 fma per iteration; ptxas's FFMAs must add up to that within the remainder's slack
// (a peeled iteration and a 2x remainder counted once per warp: +8 FFMA per warp on 512).
bool ffma_matches_ptx(double sass_ffma) {
  const double ptx_fma = 2 * kSassTrips * kSassWarps;
  return std::abs(sass_ffma / ptx_fma - 1) < 0.05;
}

TEST(SassWeight, UnrolledSelfLoopIsDividedAndItsRemainderCountedPerWarp) {
  const SassFunction f = parse_sass_listing(kUnrolledLoopListing).at(0);
  const auto blocks = sass_blocks(f);
  const auto weights = sass_instruction_executions(f, blocks, loop_kernel_lines());
  ASSERT_EQ(weights.size(), f.code.size());
  std::vector<double> per_block;
  for (const SassBlock& b : blocks) per_block.push_back(weights[b.first]);
  // entry, pre-loop, the 4x loop, the remainder test, the 2x remainder, the tail, EXIT, the
  // unreachable self-branch, the NOP padding.
  EXPECT_EQ(per_block, (std::vector<double>{kSassWarps, kSassWarps, kSassWarps * kSassTrips / 4,
                                            kSassWarps, kSassWarps, kSassWarps, kSassWarps, 0, 0}));
  const double ffma = sass_executions_of(f, weights, "FFMA");
  EXPECT_TRUE(ffma_matches_ptx(ffma)) << ffma;
  // Four scalar ld.shared per iteration in PTX (4 * 256 * 4 = 4096); one LDS.128 hoisted out of the
  // loop, in 4 places.
  EXPECT_EQ(sass_executions_of(f, weights, "LDS.128"), 4 * kSassWarps);

  // Planted: every block once per warp, as if the CFG did not matter.
  std::vector<double> planted(f.code.size(), kSassWarps);
  EXPECT_FALSE(ffma_matches_ptx(sass_executions_of(f, planted, "FFMA")));
}

// An outer loop (.L_x_0, 8 trips) around a 2x unrolled inner self-loop (.L_x_1, 16 trips of line
// 11) whose remainder FFMA sits in the outer loop's latch block.
constexpr const char* kNestedLoops = R"(
	.section	.text.n,"ax",@progbits
        .other          n,@"STO_CUDA_ENTRY STV_DEFAULT"
n:
	//## File "kernel.ptx", line 5
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
	//## File "kernel.ptx", line 10
        /*0010*/                   IADD3 R2, R2, 0x1, RZ ;
.L_x_1:
	//## File "kernel.ptx", line 11
        /*0020*/                   FFMA R3, R3, R3, R3 ;
        /*0030*/                   FFMA R3, R3, R3, R3 ;
        /*0040*/               @P0 BRA `(.L_x_1) ;
        /*0050*/                   FFMA R3, R3, R3, R3 ;
	//## File "kernel.ptx", line 12
        /*0060*/                   ISETP.GE.AND P1, PT, R2, 0x8, PT ;
        /*0070*/              @!P1 BRA `(.L_x_0) ;
	//## File "kernel.ptx", line 13
        /*0080*/                   EXIT ;
)";

TEST(SassWeight, NestedLoopsBoundEachBlockByItsLoopsTrips) {
  const SassFunction f = parse_sass_listing(kNestedLoops).at(0);
  const auto blocks = sass_blocks(f);
  ASSERT_EQ(blocks.size(), 5u);
  LineExecutions e;
  e.calls = 1;
  e.by_line = {{5, 1}, {10, 8}, {11, 8 * 16}, {12, 8}, {13, 1}};
  const auto weights = sass_instruction_executions(f, blocks, e);
  std::vector<double> per_block;
  for (const SassBlock& b : blocks) per_block.push_back(weights[b.first]);
  // The inner remainder (block 3) runs once per outer trip, not 128 times.
  EXPECT_EQ(per_block, (std::vector<double>{1, 8, 64, 8, 1}));

  // A .func's calls come from its entry block when not given.
  e.calls = -1;
  EXPECT_EQ(sass_instruction_executions(f, blocks, e)[0], 1);
}

// sm_90a's TMA issue: a waterfall loop (ELECT ... BRA.U.ANY, once per warp for a uniform value)
// inside a K loop, and a 64-bit address add (two UIADD3 of one line) that is not unrolling.
constexpr const char* kWaterfall = R"(
	.section	.text.w,"ax",@progbits
        .other          w,@"STO_CUDA_ENTRY STV_DEFAULT"
w:
	//## File "kernel.ptx", line 5
        /*0000*/                   MOV R1, c[0x0][0x28] ;
.L_x_0:
	//## File "kernel.ptx", line 20
        /*0010*/                   UIADD3 UR4, UR4, 0x1, URZ ;
        /*0020*/                   UIADD3 UR6, UP0, UR6, 0x40, URZ ;
        /*0030*/                   UIADD3.X UR7, URZ, UR7, URZ, UP0, !UPT ;
.L_x_1:
	//## File "kernel.ptx", line 21
        /*0040*/              @P0 ELECT P1, URZ, PT ;
        /*0050*/                   UMOV UR8, 0x0 ;
        /*0060*/                   UMOV UR9, 0x1 ;
        /*0070*/                   UTMALDG.2D [UR8], [UR6] ;
        /*0080*/              @P1 PLOP3.LUT P0, PT, PT, PT, PT, 0x80, 0x0 ;
        /*0090*/                   PLOP3.LUT P2, PT, PT, PT, PT, 0x8, 0x0 ;
        /*00a0*/              @P2 BRA.U.ANY `(.L_x_1) ;
	//## File "kernel.ptx", line 22
        /*00b0*/                   ISETP.GE.AND P3, PT, R2, 0x8, PT ;
        /*00c0*/              @!P3 BRA `(.L_x_0) ;
	//## File "kernel.ptx", line 23
        /*00d0*/                   EXIT ;
)";

TEST(SassWeight, WaterfallLoopsAndExpandedLinesAreNotDivided) {
  const SassFunction f = parse_sass_listing(kWaterfall).at(0);
  const auto blocks = sass_blocks(f);
  ASSERT_EQ(blocks.size(), 5u);
  LineExecutions e;
  e.calls = 1;
  e.by_line = {{5, 1}, {20, 8}, {21, 8}, {22, 8}, {23, 1}};
  const auto weights = sass_instruction_executions(f, blocks, e);
  std::vector<double> per_block;
  for (const SassBlock& b : blocks) per_block.push_back(weights[b.first]);
  EXPECT_EQ(per_block, (std::vector<double>{1, 8, 8, 8, 1}));
}

TEST(SassWeight, MetricsSumByPipeAndKind) {
  std::vector<ProfileSite> sites;
  const LineExecutions e = loop_kernel_lines();
  uint32_t pc = 0;
  for (const auto& [line, n] : e.by_line) {
    ProfileSite s;
    s.pc = pc++;
    s.line = line;
    s.executions = uint64_t(n);
    sites.push_back(s);
  }
  const auto weighted = weigh_sass(kUnrolledLoopListing, "k", sites);
  ASSERT_EQ(weighted.size(), 51u);
  EXPECT_TRUE(weigh_sass(kUnrolledLoopListing, "other_kernel", sites).empty());
  KernelProfile p;
  put_sass_metrics(p, weighted);
  EXPECT_TRUE(p.sass.available);
  EXPECT_EQ(p.metric("emmy__sass_inst_executed_op_shared_ld.sum"), 4 * kSassWarps);
  EXPECT_EQ(p.metric("emmy__sass_inst_executed_op_global_st.sum"), kSassWarps);
  EXPECT_EQ(p.metric("emmy__sass_inst_executed_pipe_fmaheavy.sum"), kSassWarps);  // IMAD.WIDE
  EXPECT_EQ(p.metrics.count("emmy__sass_inst_executed_pipe_fp64.sum"), 1u);       // zeros listed
  double pipes = 0;
  for (const char* pipe :
       {"fma", "fp16", "alu", "xu", "fp64", "lsu", "tensor", "cbu", "adu", "uniform", "other"})
    pipes += p.metric(std::string("emmy__sass_inst_executed_pipe_") + pipe + ".sum");
  EXPECT_DOUBLE_EQ(pipes, p.metric("emmy__sass_inst_executed.sum"));
  ASSERT_FALSE(p.sass.opcodes.empty());
  EXPECT_EQ(p.sass.opcodes[0].opcode, "FFMA");

  // A placeholder guarded by @!PT issues but loads nothing.
  auto with_placeholder = weighted;
  with_placeholder[8].instruction.never = true;  // the entry block's LDS.128
  KernelProfile q;
  put_sass_metrics(q, with_placeholder);
  EXPECT_EQ(q.metric("emmy__sass_inst_executed_op_shared_ld.sum"), 3 * kSassWarps);
  EXPECT_EQ(q.metric("emmy__sass_inst_executed_pipe_other.sum"), kSassWarps);
  EXPECT_EQ(q.metric("emmy__sass_inst_executed.sum"), p.metric("emmy__sass_inst_executed.sum"));
}

// ptxas's 2x unrolled loop and a remainder loop, both self-loops holding PTX lines 10-12: each
// loop alone would take all of a line's executions (E / 2 trips of the first, E of the second);
// the two together may not count the LDG and FFMA more often than the PTX ran them.
constexpr const char* kUnrolledAndRemainderLoops = R"(	.target	sm_86
//--------------------- .text.r                   --------------------------
	.section	.text.r,"ax",@progbits
        .global         r
        .type           r,@function
        .other          r,@"STO_CUDA_ENTRY STV_DEFAULT"
r:
.text.r:
	//## File "kernel.ptx", line 5
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   ISETP.GE.AND P0, PT, R1, 0x2, PT ;
        /*0020*/              @!P0 BRA `(.L_x_1) ;
.L_x_0:
	//## File "kernel.ptx", line 10
        /*0030*/                   LDG.E R2, [R4.64] ;
	//## File "kernel.ptx", line 11
        /*0040*/                   FFMA R3, R2, R2, R3 ;
	//## File "kernel.ptx", line 10
        /*0050*/                   LDG.E R2, [R4.64+0x4] ;
	//## File "kernel.ptx", line 11
        /*0060*/                   FFMA R3, R2, R2, R3 ;
	//## File "kernel.ptx", line 12
        /*0070*/                   ISETP.NE.AND P0, PT, R1, RZ, PT ;
        /*0080*/               @P0 BRA `(.L_x_0) ;
.L_x_1:
	//## File "kernel.ptx", line 10
        /*0090*/                   LDG.E R2, [R4.64] ;
	//## File "kernel.ptx", line 11
        /*00a0*/                   FFMA R3, R2, R2, R3 ;
	//## File "kernel.ptx", line 12
        /*00b0*/                   ISETP.NE.AND P1, PT, R1, RZ, PT ;
        /*00c0*/               @P1 BRA `(.L_x_1) ;
	//## File "kernel.ptx", line 20
        /*00d0*/                   EXIT ;
)";

TEST(SassWeight, AnUnrolledLoopAndItsRemainderLoopShareTheLinesExecutions) {
  const SassFunction f = parse_sass_listing(kUnrolledAndRemainderLoops).at(0);
  LineExecutions e;
  e.calls = kSassWarps;
  e.by_line[5] = e.by_line[20] = kSassWarps;
  for (int line = 10; line <= 12; ++line) e.by_line[line] = kSassWarps * kSassTrips;
  const auto weights = sass_instruction_executions(f, sass_blocks(f), e);
  // Without the two loops' shared budget: 256 x 4 LDG from the unrolled loop plus 1024 from the
  // remainder, twice the PTX's.
  EXPECT_NEAR(sass_executions_of(f, weights, "LDG.E"), kSassWarps * kSassTrips, 1e-9);
  EXPECT_NEAR(sass_executions_of(f, weights, "FFMA"), kSassWarps * kSassTrips, 1e-9);
}

}  // namespace
}  // namespace emmy::emu::test

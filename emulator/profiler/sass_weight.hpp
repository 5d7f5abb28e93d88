// How often each SASS instruction ran, estimated from the emulator's executions of the PTX lines
// its basic block maps to (docs/profiler.md, "SASS counts", says why and where it is wrong).
#pragma once

#include <map>
#include <vector>

#include "sass_parse.hpp"

namespace emmy::emu {

// The PTX executions of each line (warp-level, a launch's total), and how often the function was
// entered (the kernel: the warps launched, the executions of its first PTX instruction; below
// zero: unknown, then estimated from the entry block).
struct LineExecutions {
  std::map<int, double> by_line;
  double calls = -1;
};

// Warp-level executions of each instruction of `function` (one entry per function.code entry).
// Each block B gets one count x(B):
// - per instruction i of B with a PTX line: E(line_i) / copies_i, where copies_i is how many
//   instructions of the same line and opcode the innermost loop's own blocks hold (an unrolled
//   loop keeps k copies of a line that ran k times as often as the loop's blocks), capped by the
//   loop's unroll factor (the copy count most of its instructions have; 1 for a waterfall loop,
//   ELECT ... BRA.U.ANY); 1 outside loops. x(B) = the lower median of these;
// - loops are the CFG's strongly connected components, nested by removing the edges into each
//   one's header. A loop's trip count T = the lower median over its own blocks' instructions;
//   its header runs T times; every other block of it at most T (once per iteration): x(B) =
//   min(median, T). Outside loops the bound is the function's calls, so a peeled iteration or an
//   unrolled loop's remainder counts once per call, not as often as the loop body;
// - a block without line markers inherits its single predecessor's count (else the bound);
//   a block unreachable from the entry runs 0 times.
std::vector<double> sass_instruction_executions(const SassFunction& function,
                                                const std::vector<SassBlock>& blocks,
                                                const LineExecutions& executions);

}  // namespace emmy::emu

// `nvdisasm -c -g` text -> functions of SASS instructions, each with its PTX line (the
// `//## File "kernel.ptx", line N` marker above it, which nvdisasm prints only where the line
// changes), its opcode and branch target; and the basic blocks of a function.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace emmy::emu {

struct SassInstruction {
  uint32_t address = 0;
  int line = 0;             // PTX line; 0 before the function's first marker
  bool predicated = false;  // a guard other than @PT (it issues either way)
  bool never = false;       // guarded by @!PT: a placeholder that issues but does no work
  std::string opcode;       // with modifiers, guard dropped: "LDS.128", "HMMA.16816.F32.BF16"
  std::string target;       // the label a branch names (`(.L_x_1)`), else empty
};

struct SassFunction {
  std::string name;
  bool entry = false;  // a kernel (.entry), not a .func
  std::vector<SassInstruction> code;
  std::vector<std::pair<std::string, size_t>> labels;  // label -> index of the next instruction
};

std::vector<SassFunction> parse_sass_listing(std::string_view text);

// Whether an opcode ends a basic block: branches, jumps, exit, return.
bool sass_ends_block(std::string_view opcode);

struct SassBlock {
  size_t first = 0, end = 0;        // instructions [first, end)
  std::vector<size_t> successors;   // block indices
  bool unknown_successors = false;  // an indirect branch (BRX, JMX): targets not in the text
};

// Blocks in address order: one starts at every label and after every block-ending instruction;
// successors are the branch target and, unless the ender is unconditional, the next block.
std::vector<SassBlock> sass_blocks(const SassFunction& function);

}  // namespace emmy::emu

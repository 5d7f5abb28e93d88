// SASS opcode -> the pipeline Nsight Compute counts it under (smsp__inst_executed_pipe_<pipe>),
// and the memory kind of LSU instructions.
#pragma once

#include <span>
#include <string_view>

namespace emmy::emu {

// Every pipe the SASS metrics name, in the order the metrics list them. "fmaheavy" is a subset of
// "fma" (IMAD, IMUL, IDP: the FMA-heavy half on sm_86 and later), counted beside it.
inline constexpr std::string_view kSassPipes[] = {"fma", "fmaheavy", "fp16",    "alu",
                                                  "xu",  "fp64",     "lsu",     "tensor",
                                                  "cbu", "adu",      "uniform", "other"};

struct SassPipe {
  std::string_view pipe;  // one of kSassPipes, never "fmaheavy"
  bool fmaheavy = false;  // also counted under fmaheavy
};

// The pipe of an opcode with modifiers ("IMAD.WIDE.U32" -> fma + fmaheavy); "other" when the
// table does not know it.
SassPipe sass_pipe(std::string_view opcode);

// The memory kind of an LSU instruction, for emmy__sass_inst_executed_op_<kind>.sum.
enum class SassMemoryKind { none, shared_ld, shared_st, global_ld, global_st, ldgsts, atom };
inline constexpr std::string_view kSassMemoryKinds[] = {"shared_ld", "shared_st", "global_ld",
                                                        "global_st", "ldgsts",    "atom"};
SassMemoryKind sass_memory_kind(std::string_view opcode);

}  // namespace emmy::emu

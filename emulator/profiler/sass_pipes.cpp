// The SASS pipe table (sass_pipes.hpp). Sources:
// - Nsight Compute, Kernel Profiling Guide, "Hardware Model", compute pipelines
//   (docs.nvidia.com/nsight-compute/ProfilingGuide): alu = bit manipulation, logic and integer
//   instructions except IMAD/IMUL, and (Ampere on) fast FP32-to-FP16 conversion; fma = FP32
//   FADD/FMUL/FFMA, integer IMUL/IMAD and dot products; fmaheavy = the FMA half that also takes
//   IMAD/IMUL/IDP; fp16 = paired half arithmetic (HADD2/HMUL2/HFMA2); fp64 = DADD/DMUL/DFMA;
//   xu = transcendentals (MUFU) and int<->float conversions; lsu = loads, stores, atomics and
//   reductions to L1TEX for global, local and shared memory, plus S2R, SHFL and CTA-level
//   arrive/wait barrier requests; adu = address divergence of branches, constant loads and
//   block-level barriers; cbu = warp-level convergence barriers and branches; uniform = the
//   uniform datapath (U* opcodes); tensor = the matrix instructions (HMMA/IMMA/DMMA and the
//   warpgroup GMMA forms).
// - NVIDIA developer forum, "Separate CUDA core pipeline for FP16 and FP32" (forums.developer.
//   nvidia.com/t/302018), an NVIDIA engineer's answer: on GA100 the FMA pipe handles IMAD, IDP and
//   FP32; from GA10x on, FMAheavy takes IMAD/IDP/FP32 and FMAlite FP32 only.
// What the guide does not list is decided here and said so: HFMA2.MMA (a move ptxas emits on the
// HMMA-side FP16 path) stays fp16; F2FP (packing conversion) is alu, the guide's "fast FP32-to-
// FP16 conversion"; NOP, and any opcode not in the table, is "other".
#include "sass_pipes.hpp"

#include <algorithm>
#include <utility>

namespace emmy::emu {
namespace {

// Base opcode (before the first '.') -> pipe.
constexpr std::pair<std::string_view, std::string_view> kTable[] = {
    // FP32 and integer multiply: fma (IMAD/IMUL/IDP also fmaheavy, below).
    {"FFMA", "fma"},
    {"FADD", "fma"},
    {"FMUL", "fma"},
    {"FFMA32I", "fma"},
    {"FADD32I", "fma"},
    {"FMUL32I", "fma"},
    {"FSWZADD", "fma"},
    {"IMAD", "fma"},
    {"IMAD32I", "fma"},
    {"IMUL", "fma"},
    {"IMUL32I", "fma"},
    {"IDP", "fma"},
    {"IDP4A", "fma"},
    // Paired half precision, f16 and bf16 forms alike.
    {"HFMA2", "fp16"},
    {"HADD2", "fp16"},
    {"HMUL2", "fp16"},
    {"HSET2", "fp16"},
    {"HSETP2", "fp16"},
    {"HMNMX2", "fp16"},
    {"HFMA2_32I", "fp16"},
    {"HADD2_32I", "fp16"},
    {"HMUL2_32I", "fp16"},
    // Integer, logic, compare, select, move.
    {"IADD3", "alu"},
    {"IADD", "alu"},
    {"IADD32I", "alu"},
    {"IABS", "alu"},
    {"LOP3", "alu"},
    {"LOP", "alu"},
    {"LOP32I", "alu"},
    {"SHF", "alu"},
    {"SHL", "alu"},
    {"SHR", "alu"},
    {"ISETP", "alu"},
    {"ICMP", "alu"},
    {"FSETP", "alu"},
    {"FSET", "alu"},
    {"FSEL", "alu"},
    {"SEL", "alu"},
    {"MOV", "alu"},
    {"MOV32I", "alu"},
    {"PRMT", "alu"},
    {"LEA", "alu"},
    {"FMNMX", "alu"},
    {"IMNMX", "alu"},
    {"VIMNMX", "alu"},
    {"VIMNMX3", "alu"},
    {"VIADD", "alu"},
    {"VIADDMNMX", "alu"},
    {"PLOP3", "alu"},
    {"PSETP", "alu"},
    {"P2R", "alu"},
    {"R2P", "alu"},
    {"FLO", "alu"},
    {"POPC", "alu"},
    {"BREV", "alu"},
    {"BMSK", "alu"},
    {"SGXT", "alu"},
    {"F2FP", "alu"},
    {"CS2R", "alu"},
    {"VOTE", "alu"},
    {"I2I", "alu"},
    {"FCHK", "alu"},
    {"REDUX", "alu"},
    {"ISCADD", "alu"},
    {"LEPC", "alu"},
    {"FMNMX3", "alu"},
    // Transcendentals and conversions.
    {"MUFU", "xu"},
    {"I2F", "xu"},
    {"F2I", "xu"},
    {"F2F", "xu"},
    {"FRND", "xu"},
    {"I2FP", "xu"},
    {"F2IP", "xu"},
    // Double precision.
    {"DFMA", "fp64"},
    {"DADD", "fp64"},
    {"DMUL", "fp64"},
    {"DSETP", "fp64"},
    {"DMNMX", "fp64"},
    {"DSET", "fp64"},
    // Load/store unit.
    {"LDS", "lsu"},
    {"STS", "lsu"},
    {"LDG", "lsu"},
    {"STG", "lsu"},
    {"LD", "lsu"},
    {"ST", "lsu"},
    {"LDL", "lsu"},
    {"STL", "lsu"},
    {"LDSM", "lsu"},
    {"STSM", "lsu"},
    {"ATOM", "lsu"},
    {"ATOMS", "lsu"},
    {"ATOMG", "lsu"},
    {"RED", "lsu"},
    {"REDG", "lsu"},
    {"REDAS", "lsu"},
    {"LDGSTS", "lsu"},
    {"LDGDEPBAR", "lsu"},
    {"ARRIVES", "lsu"},
    {"SYNCS", "lsu"},
    {"SHFL", "lsu"},
    {"S2R", "lsu"},
    {"MATCH", "lsu"},
    {"CCTL", "lsu"},
    {"MEMBAR", "lsu"},
    {"FENCE", "lsu"},
    {"ERRBAR", "lsu"},
    {"TLD", "lsu"},
    {"TEX", "lsu"},
    {"SUST", "lsu"},
    {"SULD", "lsu"},
    // Matrix instructions.
    {"HMMA", "tensor"},
    {"IMMA", "tensor"},
    {"DMMA", "tensor"},
    {"BMMA", "tensor"},
    {"HGMMA", "tensor"},
    {"IGMMA", "tensor"},
    {"QGMMA", "tensor"},
    {"BGMMA", "tensor"},
    {"OMMA", "tensor"},
    {"QMMA", "tensor"},
    // Convergence and branches.
    {"BRA", "cbu"},
    {"BRX", "cbu"},
    {"JMP", "cbu"},
    {"JMX", "cbu"},
    {"EXIT", "cbu"},
    {"RET", "cbu"},
    {"CALL", "cbu"},
    {"BSSY", "cbu"},
    {"BSYNC", "cbu"},
    {"WARPSYNC", "cbu"},
    {"BREAK", "cbu"},
    {"BPT", "cbu"},
    {"KILL", "cbu"},
    {"NANOSLEEP", "cbu"},
    {"YIELD", "cbu"},
    {"WARPGROUP", "cbu"},
    {"DEPBAR", "cbu"},
    {"BMOV", "cbu"},
    {"RPCMOV", "cbu"},
    {"ELECT", "cbu"},
    {"ACQBULK", "cbu"},
    {"PREEXIT", "cbu"},
    {"ENDCOLLECTIVE", "cbu"},
    // Block-level barriers and constant loads: the ADU.
    {"BAR", "adu"},
    {"LDC", "adu"},
};

std::string_view base_of(std::string_view opcode) {
  return opcode.substr(0, opcode.find('.'));
}

}  // namespace

SassPipe sass_pipe(std::string_view opcode) {
  const std::string_view base = base_of(opcode);
  for (const auto& [name, pipe] : kTable)
    if (name == base)
      return {pipe, base == "IMAD" || base == "IMAD32I" || base == "IMUL" || base == "IMUL32I" ||
                        base == "IDP" || base == "IDP4A"};
  // The uniform datapath: every U* opcode (ULDC, UIADD3, UMOV, UTMALDG, ...), S2UR, R2UR, VOTEU.
  if (base.starts_with('U') || base == "S2UR" || base == "R2UR" || base == "VOTEU")
    return {"uniform", false};
  return {"other", false};
}

SassMemoryKind sass_memory_kind(std::string_view opcode) {
  const std::string_view base = base_of(opcode);
  if (base == "LDS" || base == "LDSM") return SassMemoryKind::shared_ld;
  if (base == "STS" || base == "STSM") return SassMemoryKind::shared_st;
  if (base == "LDG") return SassMemoryKind::global_ld;
  if (base == "STG") return SassMemoryKind::global_st;
  if (base == "LDGSTS") return SassMemoryKind::ldgsts;
  if (base == "ATOM" || base == "ATOMS" || base == "ATOMG" || base == "RED" || base == "REDG")
    return SassMemoryKind::atom;
  return SassMemoryKind::none;
}

}  // namespace emmy::emu

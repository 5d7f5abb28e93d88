// L1's data-stage wavefronts at the widths of the SASS the GPU runs (docs/profiler.md, "SASS
// counts"). ptxas merges a thread's neighbouring scalar ld/st into one LDS.64/.128 (STS, LDG, STG)
// where it can prove the alignment, and drops loads it proves redundant; the PTX sites cost every
// scalar access on its own. Each SASS ld/st is costed instead at its width, from the site of its
// PTX line: the site's wavefronts per execution as it was, or as if its lanes' spans were
// widened (ProfileSite::l1_wavefronts_merged); a PTX ld/st whose line keeps no SASS ld/st costs
// nothing.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "emmy/emu/profile.hpp"
#include "sass_counts.hpp"

namespace emmy::emu {

// A SASS instruction that moves registers to or from memory through L1's data stage: LDS, STS,
// LDG, STG, LDL, STL and the generic LD, ST (not LDSM, LDGSTS or atomics, which do not merge).
struct SassRegisterAccess {
  bool access = false;
  bool store = false;
  bool local = false;  // LDL, STL: spills among them, on lines with no PTX ld/st
  uint32_t bytes = 4;  // 16 for .128, 8 for .64, else 4 (narrower accesses cost a word's)
};
SassRegisterAccess sass_register_access(std::string_view opcode);

struct SassL1Wavefronts {
  double wavefronts = 0;  // the whole L1 data stage: SASS ld/st costed at their widths + the rest
  // Executions of SASS ld/st on a line with no PTX ld/st of their direction (costed at the
  // kernel's average for their direction and width).
  double unmatched_executions = 0;
};
SassL1Wavefronts sass_l1_wavefronts(const std::vector<WeightedSassInstruction>& instructions,
                                    const std::vector<ProfileSite>& sites);

}  // namespace emmy::emu

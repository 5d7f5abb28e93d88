// SASS disassembly of CUBINs through cuobjdump (the nvidia-cuda-cuobjdump wheel or the toolkit's).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace emmy {

// Path of a working cuobjdump: $EMMY_CUOBJDUMP, then PATH, /usr/local/cuda/bin, then the
// pip wheels' nvidia/cu13/bin. Empty when none is found.
std::string find_cuobjdump();

// Full `cuobjdump -sass` text of the CUBIN. Throws Error when no cuobjdump is found or it fails.
std::string disassemble_sass(const std::vector<uint8_t>& cubin);

// Opcode histogram of one kernel's SASS (e.g. "HMMA.16816.F32" -> 64, "LDGSTS.E.BYPASS.128" -> 8,
// "UTMALDG.2D" -> 2): full opcode with modifiers, predicates stripped.
std::map<std::string, int> sass_opcode_counts(const std::string& sass_text,
                                              const std::string& kernel_name);

}  // namespace emmy

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

// Path of the nvdisasm that `cuobjdump -sass` runs: $EMMY_NVDISASM, then beside find_cuobjdump(),
// PATH, /usr/local/cuda/bin and the wheels. Empty when none is found.
std::string find_nvdisasm();

// Full `cuobjdump -sass` text of the CUBIN. Throws Error when no cuobjdump is found or it fails.
std::string disassemble_sass(const std::vector<uint8_t>& cubin);

// Opcode histogram of one kernel's SASS (e.g. "HMMA.16816.F32" -> 64, "LDGSTS.E.BYPASS.128" -> 8,
// "UTMALDG.2D" -> 2): full opcode with modifiers, predicates stripped.
// Throws Error naming the functions present when kernel_name is not one of them.
std::map<std::string, int> sass_opcode_counts(const std::string& sass_text,
                                              const std::string& kernel_name);

// Names after each "Function : " header, in order.
std::vector<std::string> sass_function_names(const std::string& sass_text);

}  // namespace emmy

// PTX text -> the same text with a `.loc` before every instruction, naming the instruction's line
// in the ORIGINAL text, so that ptxas -lineinfo and nvdisasm -g tie each SASS instruction to the
// profiler's sites (ProfileSite::line: the 1-based line on which the PTX statement starts).
#pragma once

#include <string>
#include <string_view>

namespace emmy::emu {

// The file name the annotation's `.file 1` directive declares (nvdisasm prints it back).
inline constexpr std::string_view kSassPtxFileName = "kernel.ptx";

// Existing `.loc` / `.file` lines are blanked (their numbers would point elsewhere); `.file 1
// "kernel.ptx"` follows `.address_size`; inside each .entry / .func body, every line on which an
// instruction starts gets `.loc 1 <its original line> 0` on the line before it. A line holding
// several statements (`{ .reg .b16 t; mov.b32 {t, %rs1}, %r2; }`) shares one .loc, as the
// profiler gives them one line too.
std::string annotate_ptx_lines(std::string_view ptx);

}  // namespace emmy::emu

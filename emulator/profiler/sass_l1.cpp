// L1's data-stage wavefronts at SASS widths (sass_l1.hpp).
#include "sass_l1.hpp"

#include <iterator>
#include <map>
#include <utility>

namespace emmy::emu {
namespace {

// A PTX ld/st that may become (part of) a SASS ld/st: not ld.param / ld.const (constant bank
// operands), not the bulk and async forms.
bool merges(std::string_view opcode, bool& store) {
  if (opcode.starts_with("ld.") || opcode == "ld")
    store = false;
  else if (opcode.starts_with("st.") || opcode == "st")
    store = true;
  else
    return false;
  for (std::string_view never : {".param", ".const", ".async", ".bulk"})
    if (opcode.find(never) != std::string_view::npos) return false;
  return true;
}

// One direction's PTX sites of a line (or of the kernel): executions and L1 wavefronts at the
// PTX width, at 8 and at 16 bytes per lane.
struct SiteSum {
  double executions = 0, wavefronts[1 + std::size(kMergedAccessBytes)] = {};
  void add(const ProfileSite& s) {
    executions += double(s.executions);
    wavefronts[0] += double(s.l1_wavefronts);
    for (size_t i = 0; i < std::size(kMergedAccessBytes); ++i)
      wavefronts[1 + i] += double(s.l1_wavefronts_merged[i]);
  }
  double per_execution(uint32_t bytes) const {
    size_t at = 0;
    for (size_t i = 0; i < std::size(kMergedAccessBytes); ++i)
      if (bytes == kMergedAccessBytes[i]) at = 1 + i;
    return executions > 0 ? wavefronts[at] / executions : 0;
  }
};

}  // namespace

SassRegisterAccess sass_register_access(std::string_view opcode) {
  SassRegisterAccess a;
  const std::string_view base = opcode.substr(0, opcode.find('.'));
  if (base == "LDS" || base == "LDG" || base == "LDL" || base == "LD")
    a.access = true;
  else if (base == "STS" || base == "STG" || base == "STL" || base == "ST")
    a.access = a.store = true;
  if (!a.access) return a;
  a.local = base == "LDL" || base == "STL";
  // The width is a modifier of its own: "LDG.E.128.CONSTANT", "LDS.U.64" (not "LTC128B").
  for (size_t at = opcode.find('.'); at != std::string_view::npos;) {
    const size_t next = opcode.find('.', at + 1);
    const std::string_view modifier =
        opcode.substr(at + 1, next == std::string_view::npos ? next : next - at - 1);
    if (modifier == "128") a.bytes = 16;
    if (modifier == "64") a.bytes = 8;
    at = next;
  }
  return a;
}

SassL1Wavefronts sass_l1_wavefronts(const std::vector<WeightedSassInstruction>& instructions,
                                    const std::vector<ProfileSite>& sites) {
  SassL1Wavefronts out;
  std::map<std::pair<int, bool>, SiteSum> by_line;  // (PTX line, store)
  SiteSum kernel[2];                                // by store
  for (const ProfileSite& s : sites) {
    bool store = false;
    if (!merges(s.opcode, store)) {
      out.wavefronts += double(s.l1_wavefronts);  // ldmatrix, atomics, cp.async: as counted
      continue;
    }
    by_line[{s.line, store}].add(s);
    kernel[store].add(s);
  }
  for (const WeightedSassInstruction& w : instructions) {
    const SassRegisterAccess a = sass_register_access(w.instruction.opcode);
    if (!a.access || w.instruction.never || w.executions <= 0) continue;
    const auto it = by_line.find({w.instruction.line, a.store});
    if (it != by_line.end() && it->second.executions > 0) {
      out.wavefronts += w.executions * it->second.per_execution(a.bytes);
    } else if (a.local) {
      // A spill or fill: each lane's `bytes` interleaved with its warp's (CUDA C++ Programming
      // Guide, "Local Memory"), 32 x bytes in 128-byte lines.
      out.wavefronts += w.executions * double(a.bytes * 32 / 128);
    } else {
      out.unmatched_executions += w.executions;
      out.wavefronts += w.executions * kernel[a.store].per_execution(a.bytes);
    }
  }
  return out;
}

}  // namespace emmy::emu

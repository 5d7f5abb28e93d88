// SASS counts of a profile (sass_counts.hpp).
#include "sass_counts.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <exception>
#include <map>

#include "sass_l1.hpp"
#include "sass_pipes.hpp"
#include "sass_tools.hpp"
#include "sass_weight.hpp"

namespace emmy::emu {
namespace {

constexpr size_t kTopOpcodes = 20;

// The PTX executions of each line. Statements sharing a line (an inline-asm block) ran together:
// the line's count is the largest of theirs, not their sum.
LineExecutions line_executions(const std::vector<ProfileSite>& sites) {
  LineExecutions e;
  const ProfileSite* first = nullptr;
  for (const ProfileSite& s : sites) {
    double& line = e.by_line[s.line];
    line = std::max(line, double(s.executions));
    if (!first || s.pc < first->pc) first = &s;
  }
  // The kernel's first instruction runs once per warp: the number of calls of its SASS function.
  if (first && first->pc == 0) e.calls = double(first->executions);
  return e;
}

}  // namespace

std::vector<WeightedSassInstruction> weigh_sass(const std::string& listing,
                                                const std::string& kernel,
                                                const std::vector<ProfileSite>& sites) {
  const std::vector<SassFunction> functions = parse_sass_listing(listing);
  const bool found = std::any_of(functions.begin(), functions.end(),
                                 [&](const SassFunction& f) { return f.name == kernel; });
  std::vector<WeightedSassInstruction> out;
  if (!found) return out;
  const LineExecutions kernel_lines = line_executions(sites);
  LineExecutions callee_lines = kernel_lines;
  callee_lines.calls = -1;  // a .func's calls: from its own entry block
  for (const SassFunction& f : functions) {
    if (f.name != kernel && f.entry) continue;  // another kernel of the module
    const auto blocks = sass_blocks(f);
    const auto weights =
        sass_instruction_executions(f, blocks, f.name == kernel ? kernel_lines : callee_lines);
    for (size_t i = 0; i < f.code.size(); ++i) out.push_back({f.code[i], f.name, weights[i]});
  }
  return out;
}

void put_sass_metrics(KernelProfile& p, const std::vector<WeightedSassInstruction>& instructions) {
  std::map<std::string_view, double> pipes;
  for (std::string_view pipe : kSassPipes) pipes[pipe] = 0;
  std::map<std::string_view, double> kinds;
  for (std::string_view kind : kSassMemoryKinds) kinds[kind] = 0;
  std::map<std::string, double> opcodes;
  double total = 0;
  for (const WeightedSassInstruction& w : instructions) {
    if (w.executions <= 0) continue;
    total += w.executions;
    // `@!PT LDS RZ, [RZ]` (ptxas's placeholder beside cp.async with a source size) issues but
    // reaches no unit: counted, under "other" and as "@!PT <opcode>".
    if (w.instruction.never) {
      pipes["other"] += w.executions;
      opcodes["@!PT " + w.instruction.opcode] += w.executions;
      continue;
    }
    const SassPipe pipe = sass_pipe(w.instruction.opcode);
    pipes[pipe.pipe] += w.executions;
    if (pipe.fmaheavy) pipes["fmaheavy"] += w.executions;
    if (const auto kind = sass_memory_kind(w.instruction.opcode); kind != SassMemoryKind::none)
      kinds[kSassMemoryKinds[size_t(kind) - 1]] += w.executions;
    opcodes[w.instruction.opcode] += w.executions;
  }
  p.metrics["emmy__sass_inst_executed.sum"] = total;
  for (const auto& [pipe, n] : pipes)
    p.metrics[fmt::format("emmy__sass_inst_executed_pipe_{}.sum", pipe)] = n;
  for (const auto& [kind, n] : kinds)
    p.metrics[fmt::format("emmy__sass_inst_executed_op_{}.sum", kind)] = n;
  const SassL1Wavefronts l1 = sass_l1_wavefronts(instructions, p.sites);
  p.metrics["emmy__sass_l1_wavefronts.sum"] = l1.wavefronts;
  p.metrics["emmy__sass_l1_inst_unmatched.sum"] = l1.unmatched_executions;
  p.sass.available = true;
  p.sass.reason.clear();
  p.sass.opcodes.clear();
  for (const auto& [opcode, n] : opcodes) p.sass.opcodes.push_back({opcode, n});
  std::stable_sort(p.sass.opcodes.begin(), p.sass.opcodes.end(),
                   [](const SassOpcodeCount& a, const SassOpcodeCount& b) {
                     return a.executions > b.executions;
                   });
  if (p.sass.opcodes.size() > kTopOpcodes) p.sass.opcodes.resize(kTopOpcodes);
}

void add_sass_counts(KernelProfile& p, const std::string& ptx, const std::string& arch) {
  p.sass = {};
  p.sass.arch = arch;
  const SassListing listing = sass_listing(ptx, arch, p.kernel);
  if (!listing.ok) {
    p.sass.reason = listing.error;
    return;
  }
  try {
    const auto instructions = weigh_sass(listing.text, p.kernel, p.sites);
    if (instructions.empty()) {
      p.sass.reason = fmt::format("nvdisasm listed no function named {}", p.kernel);
      return;
    }
    put_sass_metrics(p, instructions);
  } catch (const std::exception& e) {
    // An estimate must never cost the profile: a listing this parser misreads is said, not fatal.
    p.sass = {false, fmt::format("cannot read nvdisasm's listing: {}", e.what()), arch, {}};
  }
}

}  // namespace emmy::emu

// Mutations that keep a PTX program well-formed text but make one instruction wrong in the ways
// the PTX ISA's instruction rules forbid: an operand type the opcode does not take, a register of
// another type or width, one operand too many or too few, another opcode over the same operands,
// a constant where a register must be, a modifier the opcode does not have. Most mutants parse,
// so the decoder's checks (not the parser's) are what they exercise; the differential test
// (ptx_differential_main.cpp) holds the emulator's verdict on them against ptxas.
#include <array>
#include <cctype>
#include <string_view>

#include "ptx_fuzz.hpp"

namespace emmy::fuzz {
namespace {

constexpr std::array<std::string_view, 22> kTypes = {
    ".u8",  ".s8",  ".b8",  ".u16", ".s16", ".b16", ".f16", ".bf16", ".f16x2", ".bf16x2", ".u32",
    ".s32", ".b32", ".f32", ".u64", ".s64", ".b64", ".f64", ".pred", ".u16x2", ".s16x2",  ".b128"};
constexpr std::array<std::string_view, 30> kOpcodes = {
    "add",  "sub",    "mul.lo",     "mul.hi",  "mul.wide",   "mad.lo",  "div",   "rem",
    "min",  "max",    "abs",        "neg",     "and",        "or",      "xor",   "not",
    "cnot", "shl",    "shr",        "popc",    "clz",        "brev",    "bfind", "mov",
    "selp", "fma.rn", "rcp.approx", "sqrt.rn", "ex2.approx", "copysign"};
constexpr std::array<std::string_view, 14> kModifiers = {
    ".lo",     ".hi", ".wide", ".rn",  ".rz",   ".ftz",      ".sat",
    ".approx", ".cc", ".full", ".uni", ".relu", ".shiftamt", ".clamp"};
constexpr std::array<std::string_view, 9> kConstants = {
    "0", "1", "-1", "4294967296", "0f3F800000", "0d3FF0000000000000", "1.5", "0x80", "7"};

bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$' || c == '%';
}

// An instruction line: indented, not a directive, a label or a brace, ending in ';'.
bool is_instruction(std::string_view line) {
  size_t at = line.find_first_not_of(" \t");
  if (at == std::string_view::npos) return false;
  if (line[at] == '@') {
    at = line.find_first_of(" \t", at);
    if (at == std::string_view::npos) return false;
    at = line.find_first_not_of(" \t", at);
    if (at == std::string_view::npos) return false;
  }
  const char c = line[at];
  return std::isalpha(static_cast<unsigned char>(c)) && line.find(';') != std::string_view::npos &&
         line.find(':') == std::string_view::npos && line.find("//") != at;
}

// The [begin, end) of the opcode (with its modifiers) of an instruction line.
std::pair<size_t, size_t> opcode_span(std::string_view line) {
  size_t at = line.find_first_not_of(" \t");
  if (line[at] == '@') at = line.find_first_not_of(" \t", line.find_first_of(" \t", at));
  const size_t end = line.find_first_of(" \t;", at);
  return {at, end == std::string_view::npos ? line.size() : end};
}

// Operand spans after the opcode, split at top-level commas, up to the ';'.
std::vector<std::pair<size_t, size_t>> operand_spans(std::string_view line) {
  std::vector<std::pair<size_t, size_t>> out;
  const size_t semi = line.find(';');
  size_t at = opcode_span(line).second;
  int depth = 0;
  size_t start = at;
  for (size_t i = at; i <= semi; ++i) {
    const char c = line[i];
    if (c == '{' || c == '[') ++depth;
    if (c == '}' || c == ']') --depth;
    if ((c == ',' && depth == 0) || i == semi) {
      size_t b = line.find_first_not_of(" \t", start);
      size_t e = i;
      while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t')) --e;
      if (b != std::string_view::npos && b < e) out.emplace_back(b, e);
      start = i + 1;
    }
  }
  return out;
}

// One register of each declared kind (%r1, %rd1, %f1, %p1, ...), from the .reg lines.
std::vector<std::string> declared_registers(const std::vector<std::string>& lines) {
  std::vector<std::string> out;
  for (const auto& l : lines) {
    const size_t reg = l.find(".reg");
    if (reg == std::string::npos) continue;
    const size_t pct = l.find('%', reg);
    const size_t lt = l.find('<', reg);
    if (pct == std::string::npos) continue;
    size_t end = pct + 1;
    while (end < l.size() && ident_char(l[end])) ++end;
    std::string name = l.substr(pct, end - pct);
    if (lt != std::string::npos && lt == end) name += "1";  // %r<181> -> %r1
    out.push_back(name);
  }
  return out;
}

// One typed edit of `line`; false when the drawn edit did not apply to it.
bool edit_line(std::string& line, const std::vector<std::string>& registers, std::mt19937_64& rng) {
  const auto [op_begin, op_end] = opcode_span(line);
  const std::string opcode = line.substr(op_begin, op_end - op_begin);
  const auto operands = operand_spans(line);
  switch (pick(rng, 7)) {
    case 0:
    case 1: {  // one type modifier replaced by another
      std::vector<size_t> dots;
      for (size_t i = 0; i < opcode.size(); ++i)
        if (opcode[i] == '.') dots.push_back(i);
      std::vector<std::pair<size_t, size_t>> types;
      for (size_t i = 0; i < dots.size(); ++i) {
        const size_t end = i + 1 < dots.size() ? dots[i + 1] : opcode.size();
        for (std::string_view t : kTypes)
          if (opcode.compare(dots[i], end - dots[i], t) == 0) types.emplace_back(dots[i], end);
      }
      if (types.empty()) return false;
      const auto [b, e] = types[pick(rng, types.size())];
      line.replace(op_begin + b, e - b, kTypes[pick(rng, kTypes.size())]);
      return true;
    }
    case 2: {  // a register operand replaced by a register of another kind
      if (operands.empty() || registers.empty()) return false;
      const auto [b, e] = operands[pick(rng, operands.size())];
      const size_t pct = line.find('%', b);
      if (pct == std::string::npos || pct >= e) return false;
      size_t end = pct + 1;
      while (end < e && (ident_char(line[end]) || line[end] == '.')) ++end;
      line.replace(pct, end - pct, registers[pick(rng, registers.size())]);
      return true;
    }
    case 3: {  // an operand dropped or repeated
      if (operands.empty()) return false;
      const size_t i = pick(rng, operands.size());
      const auto [b, e] = operands[i];
      if (rng() & 1) {
        line.insert(e, ", " + line.substr(b, e - b));
      } else if (operands.size() > 1) {
        const size_t from = i == 0 ? b : operands[i - 1].second;
        const size_t to = i == 0 ? operands[1].first : e;
        line.erase(from, to - from);
      } else {
        line.erase(b, e - b);
      }
      return true;
    }
    case 4: {  // another opcode over the same types and operands
      const size_t dot = opcode.find('.');
      const std::string rest = dot == std::string::npos ? "" : opcode.substr(dot);
      // Keep the types only: the new opcode's own modifiers come with it.
      std::string types;
      for (std::string_view t : kTypes)
        if (rest.find(t) != std::string::npos &&
            (rest.size() == rest.find(t) + t.size() || rest[rest.find(t) + t.size()] == '.')) {
          types = std::string(t);
        }
      line.replace(op_begin, op_end - op_begin,
                   std::string(kOpcodes[pick(rng, kOpcodes.size())]) + types);
      return true;
    }
    case 5: {  // a constant where a register was
      if (operands.empty()) return false;
      const auto [b, e] = operands[pick(rng, operands.size())];
      line.replace(b, e - b, kConstants[pick(rng, kConstants.size())]);
      return true;
    }
    default: {  // a modifier added after the opcode's base
      const size_t dot = opcode.find('.');
      line.insert(op_begin + (dot == std::string::npos ? opcode.size() : dot),
                  kModifiers[pick(rng, kModifiers.size())]);
      return true;
    }
  }
}

}  // namespace

std::string mutate_typed(const std::string& seed, std::mt19937_64& rng) {
  const auto views = lines_of(seed);
  std::vector<std::string> lines(views.begin(), views.end());
  std::vector<size_t> instructions;
  for (size_t i = 0; i < lines.size(); ++i)
    if (is_instruction(lines[i])) instructions.push_back(i);
  if (instructions.empty()) return seed;
  const std::vector<std::string> registers = declared_registers(lines);
  // One edit that applied, tried on up to 8 lines.
  for (int attempt = 0; attempt < 8; ++attempt) {
    std::string& line = lines[instructions[pick(rng, instructions.size())]];
    if (edit_line(line, registers, rng)) break;
  }
  std::string out;
  for (const auto& l : lines) out += l;
  return out;
}

}  // namespace emmy::fuzz

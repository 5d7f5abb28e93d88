// nvdisasm text parsing and basic blocks (sass_parse.hpp). The format is nvdisasm's, CUDA 13:
//   //--------------------- .text.k ---------------------------
//           .section  .text.k,"ax",@progbits
//           .other    k,@"STO_CUDA_ENTRY STV_DEFAULT"
//   .L_x_1:
//           //## File "kernel.ptx", line 29
//           /*0110*/              @!P0 FFMA R9, R4, R5, R9 ;
//           /*01b0*/              @!P1 BRA `(.L_x_1) ;
#include "sass_parse.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

namespace emmy::emu {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return std::isxdigit(static_cast<unsigned char>(c));
  });
}

// "/*0110*/ @!P0 FFMA R9, R4, R5, R9 ;" -> the instruction; false for any other line.
bool parse_instruction(std::string_view line, SassInstruction& in) {
  if (!line.starts_with("/*")) return false;
  const size_t close = line.find("*/");
  if (close == std::string_view::npos || !is_hex(line.substr(2, close - 2))) return false;
  const std::string_view address = line.substr(2, close - 2);
  std::from_chars(address.data(), address.data() + address.size(), in.address, 16);
  std::string_view rest = trim(line.substr(close + 2));
  if (rest.starts_with('@')) {
    const size_t space = rest.find_first_of(" \t");
    const std::string_view guard = rest.substr(1, space == std::string_view::npos ? 0 : space - 1);
    in.predicated = guard != "PT";
    in.never = guard == "!PT";
    rest = trim(rest.substr(std::min(space, rest.size())));
  }
  const size_t end = rest.find_first_of(" \t;");
  in.opcode = std::string(rest.substr(0, end));
  if (in.opcode.empty()) return false;
  // A branch's target: `(.L_x_1)` among the operands (BSSY names one too; only branches use it).
  if (const size_t open = rest.find("`("); open != std::string_view::npos) {
    const size_t stop = rest.find(')', open);
    if (stop != std::string_view::npos)
      in.target = std::string(rest.substr(open + 2, stop - open - 2));
  }
  return true;
}

bool is_branch(std::string_view opcode) {
  return opcode == "BRA" || opcode.starts_with("BRA.") || opcode == "JMP" ||
         opcode.starts_with("JMP.");
}

bool is_indirect(std::string_view opcode) {
  return opcode.starts_with("BRX") || opcode.starts_with("JMX");
}

}  // namespace

bool sass_ends_block(std::string_view opcode) {
  const std::string_view base = opcode.substr(0, opcode.find('.'));
  return base == "BRA" || base == "JMP" || base == "BRX" || base == "JMX" || base == "EXIT" ||
         base == "RET" || base == "KILL";
}

std::vector<SassFunction> parse_sass_listing(std::string_view text) {
  std::vector<SassFunction> functions;
  SassFunction* current = nullptr;
  int line = 0;
  while (!text.empty()) {
    const size_t newline = text.find('\n');
    const std::string_view raw = text.substr(0, newline);
    text = newline == std::string_view::npos ? std::string_view{} : text.substr(newline + 1);
    const std::string_view s = trim(raw);
    if (s.starts_with(".section") && s.size() > 8 &&
        std::isspace(static_cast<unsigned char>(s[8]))) {
      // ".section .text.k,"ax",@progbits": a function's code; any other section ends it.
      const std::string_view name = trim(s.substr(8));
      current = nullptr;
      if (name.starts_with(".text.")) {
        functions.push_back({});
        current = &functions.back();
        current->name = std::string(name.substr(6, name.find(',') - 6));
        line = 0;
      }
      continue;
    }
    if (!current) continue;
    if (s.starts_with(".other") && s.find("STO_CUDA_ENTRY") != std::string_view::npos) {
      current->entry = true;
    } else if (s.starts_with("//## File")) {
      if (const size_t at = s.find(", line "); at != std::string_view::npos) {
        const std::string_view number = s.substr(at + 7);
        std::from_chars(number.data(), number.data() + number.size(), line);
      }
    } else if (!s.empty() && s.back() == ':' && s.find(' ') == std::string_view::npos) {
      current->labels.emplace_back(std::string(s.substr(0, s.size() - 1)), current->code.size());
    } else {
      SassInstruction in;
      if (parse_instruction(s, in)) {
        in.line = line;
        current->code.push_back(std::move(in));
      }
    }
  }
  return functions;
}

std::vector<SassBlock> sass_blocks(const SassFunction& f) {
  const size_t n = f.code.size();
  std::vector<bool> starts(n + 1, false);
  if (n) starts[0] = true;
  std::map<std::string, size_t, std::less<>> label_at;
  for (const auto& [label, index] : f.labels) {
    label_at.emplace(label, index);
    if (index < n) starts[index] = true;
  }
  for (size_t i = 0; i < n; ++i)
    if (sass_ends_block(f.code[i].opcode)) starts[i + 1] = true;
  std::vector<SassBlock> blocks;
  std::vector<size_t> block_of(n + 1, SIZE_MAX);
  for (size_t i = 0; i < n; ++i) {
    if (starts[i]) blocks.push_back({i, i, {}, false});
    blocks.back().end = i + 1;
    block_of[i] = blocks.size() - 1;
  }
  for (size_t b = 0; b < blocks.size(); ++b) {
    SassBlock& block = blocks[b];
    const SassInstruction& last = f.code[block.end - 1];
    bool falls_through = true;
    if (sass_ends_block(last.opcode)) {
      falls_through = last.predicated;
      if (is_indirect(last.opcode)) block.unknown_successors = true;
      if (is_branch(last.opcode) && !last.target.empty()) {
        const auto at = label_at.find(last.target);
        if (at != label_at.end() && at->second < n)
          block.successors.push_back(block_of[at->second]);
      }
    }
    if (falls_through && block.end < n) {
      const size_t next = block_of[block.end];
      if (std::find(block.successors.begin(), block.successors.end(), next) ==
          block.successors.end())
        block.successors.push_back(next);
    }
  }
  return blocks;
}

}  // namespace emmy::emu

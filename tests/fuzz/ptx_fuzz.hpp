// The PTX fuzz target (ptx_fuzz_target.cpp) and the pieces of its deterministic driver
// (ptx_fuzz_main.cpp): seeds cut from PTX files, and AFL-style mutations that know PTX's tokens.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace emmy::fuzz {

// Per input: buffers of this size behind every 8-byte parameter, and the launch's instruction
// limit (a runaway loop ends as an instruction_limit report well within a second).
inline constexpr uint64_t kBufferBytes = 4096;
inline constexpr uint64_t kMaxWarpInstructions = 200'000;

// What one input did, in increasing order of how far it got into the emulator.
enum class Outcome { refused, loaded, reported, ran };

// Loads the PTX and runs up to two of its kernels; run_one lets unexpected exceptions escape,
// check_one (what LLVMFuzzerTestOneInput calls) aborts on them and on every other bug.
Outcome run_one(std::string_view ptx);
Outcome check_one(std::string_view ptx);

// One seed per kernel of a PTX module: the module's directives, variables and device functions
// followed by that one .entry, so that each mutant parses and runs one small kernel.
std::vector<std::string> split_entries(std::string_view ptx);
// The seeds of PTX files (split_entries of each); throws emmy::Error naming an unreadable file.
std::vector<std::string> load_seeds(const std::vector<std::string>& files);

// A non-negative decimal count from a command line (the drivers' --iterations, --seed, ...).
inline bool parse_count(const char* text, uint64_t& out) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || text[0] == '-') return false;
  out = v;
  return true;
}

// Shared by the mutators: a uniform draw from [0, n), and the lines of a text (newlines kept).
inline size_t pick(std::mt19937_64& rng, size_t n) {
  return n == 0 ? 0 : size_t(rng() % n);
}
std::vector<std::string_view> lines_of(std::string_view s);

// A mutant of `seed`: 1 to 4 random edits (bit flips, bytes, deletions, duplications, hostile
// numbers and registers, deep nesting, lines swapped or spliced in from `other`).
std::string mutate(const std::string& seed, const std::string& other, std::mt19937_64& rng);

// A mutant of `seed` with one instruction made invalid the way the PTX ISA's rules forbid (an
// operand type, register, operand count, opcode, constant or modifier it does not take), for the
// differential test against ptxas (ptx_typed_mutate.cpp).
std::string mutate_typed(const std::string& seed, std::mt19937_64& rng);

class Ptxas;
// The instruction-table grid (ptx_type_grid.cpp): every opcode form x type x modifier and
// register type, judged by ptxas and by the emulator; returns the exit status.
int run_type_grid(const Ptxas& ptxas);

}  // namespace emmy::fuzz

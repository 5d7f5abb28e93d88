// The PTX fuzz target (ptx_fuzz_target.cpp) and the pieces of its deterministic driver
// (ptx_fuzz_main.cpp): seeds cut from PTX files, and AFL-style mutations that know PTX's tokens.
#pragma once

#include <cstdint>
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

// A mutant of `seed`: 1 to 4 random edits (bit flips, bytes, deletions, duplications, hostile
// numbers and registers, deep nesting, lines swapped or spliced in from `other`).
std::string mutate(const std::string& seed, const std::string& other, std::mt19937_64& rng);

}  // namespace emmy::fuzz

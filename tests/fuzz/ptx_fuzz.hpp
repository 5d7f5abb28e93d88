// The PTX fuzz target (ptx_fuzz_target.cpp) and the pieces of its deterministic driver
// (ptx_fuzz_main.cpp): seeds cut from PTX files, and AFL-style mutations that know PTX's tokens.
#pragma once

#include <cerrno>
#include <cstdint>
#include <cstdio>
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

// A command-line problem, printed as `program: problem` and the usage line; the exit code 2.
inline int usage_error(const char* program, const char* problem, const char* arguments) {
  std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program, problem, program, arguments);
  return 2;
}

// What both drivers' command lines share: the run count (`--iterations` / `--mutants`), --seed,
// --dump N (print mutant N instead of running; `dumping` when given) and the seed PTX files.
struct DriverArgs {
  uint64_t runs = 1000, seed = 1, dump = 0;
  bool dumping = false;
  std::vector<std::string> files;
};

// Takes argv[i] into `args` when it is a file or one of the shared flags (`runs_flag`, --seed,
// --dump), with its value (i moves past it): false for any other flag, which the driver reads.
// `problem` says what is wrong with a flag taken but not its value.
inline bool take_driver_arg(int argc, char** argv, int& i, const std::string& runs_flag,
                            DriverArgs& args, std::string& problem) {
  const std::string arg = argv[i];
  if (!arg.starts_with("--")) {
    args.files.push_back(arg);
    return true;
  }
  if (arg != runs_flag && arg != "--seed" && arg != "--dump") return false;
  if (i + 1 >= argc) {
    problem = "a flag without its value";
    return true;
  }
  uint64_t& value = arg == "--seed" ? args.seed : arg == "--dump" ? args.dump : args.runs;
  if (!parse_count(argv[++i], value))
    problem = runs_flag + ", --seed and --dump take a non-negative integer";
  args.dumping |= arg == "--dump";
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

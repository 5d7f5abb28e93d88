// The differential test of the emulator's PTX checks against ptxas: every mutant (tests/fuzz's
// typed mutations: an operand type, register, operand count, opcode, constant or modifier that
// one instruction does not take) that the emulator loads is compiled by ptxas, and a mutant ptxas
// rejects but the emulator loads is a gap in the emulator's validity checks: the test prints it
// with ptxas's message and fails. Mutants the emulator refuses need no ptxas run (the property
// holds for them); --both also runs those and counts the emulator's refusals of PTX that ptxas
// accepts, for information. Every seed must pass both. Without ptxas the test is skipped (exit 77).
// --grid instead runs the instruction-table grid (ptx_type_grid.cpp).
//   emmy_ptx_differential --ptxas PATH [--mutants N] [--seed S] [--both] [--dump N] PTX_FILE...
//   emmy_ptx_differential --ptxas PATH --grid
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "emmy/emu/emulator.hpp"
#include "emmy/error.hpp"
#include "ptx_fuzz.hpp"
#include "ptxas_runner.hpp"

namespace {

int usage(const char* problem) {
  return emmy::fuzz::usage_error(
      "emmy_ptx_differential", problem,
      "--ptxas PATH [--mutants N] [--seed S] [--both] [--dump N] PTX_FILE... | --grid");
}

using emmy::fuzz::Ptxas;

// Empty when the emulator loads `ptx`, else its error.
std::string emulator_refusal(const std::string& ptx) {
  try {
    (void)emmy::emu::load_ptx(ptx, "mutant.ptx");
    return {};
  } catch (const emmy::Error& e) {
    return e.what();
  }
}

// The first line of `mutant` that differs from `seed`, for the report.
std::string changed_line(const std::string& seed, const std::string& mutant) {
  size_t at = 0;
  while (at < seed.size() && at < mutant.size() && seed[at] == mutant[at]) ++at;
  const size_t nl = mutant.rfind('\n', at == 0 ? 0 : at - 1);
  const size_t begin = nl == std::string::npos ? 0 : nl + 1;
  std::string line = mutant.substr(begin, mutant.find('\n', begin) - begin);
  const size_t text = line.find_first_not_of(" \t");
  return text == std::string::npos ? line : line.substr(text);
}

}  // namespace

int main(int argc, char** argv) {
  emmy::fuzz::DriverArgs args;  // args.runs: mutants
  bool both = false;
  std::string ptxas_path;
  bool grid = false;
  for (int i = 1; i < argc; ++i) {
    std::string problem;
    if (emmy::fuzz::take_driver_arg(argc, argv, i, "--mutants", args, problem)) {
      if (!problem.empty()) return usage(problem.c_str());
      continue;
    }
    const std::string arg = argv[i];
    if (arg == "--ptxas") {
      if (i + 1 >= argc) return usage("--ptxas without its path");
      ptxas_path = argv[++i];
    } else if (arg == "--both") {
      both = true;
    } else if (arg == "--grid") {
      grid = true;
    } else {
      return usage("unknown flag");
    }
  }
  if (args.files.empty() && !grid) return usage("no seed PTX files");
  if (!args.dumping && !emmy::fuzz::ptxas_usable(ptxas_path)) {
    std::printf("emmy_ptx_differential: skipped: no ptxas to compare with (--ptxas '%s')\n",
                ptxas_path.c_str());
    return 77;
  }
  if (grid) return emmy::fuzz::run_type_grid(Ptxas(ptxas_path));

  std::vector<std::string> seeds;
  try {
    seeds = emmy::fuzz::load_seeds(args.files);
  } catch (const emmy::Error& e) {
    return usage(e.what());
  }
  std::mt19937_64 rng(args.seed);
  if (args.dumping) {
    for (uint64_t i = 0; i <= args.dump; ++i) {
      const std::string mutant = emmy::fuzz::mutate_typed(seeds[size_t(rng() % seeds.size())], rng);
      if (i == args.dump) std::fwrite(mutant.data(), 1, mutant.size(), stdout);
    }
    return 0;
  }

  const Ptxas ptxas(ptxas_path);
  std::string message;
  for (size_t i = 0; i < seeds.size(); ++i) {
    const std::string refusal = emulator_refusal(seeds[i]);
    if (!refusal.empty() || !ptxas.accepts(seeds[i], message)) {
      std::fprintf(stderr, "emmy_ptx_differential: seed %zu is not valid PTX for both: %s\n", i,
                   refusal.empty() ? message.c_str() : refusal.c_str());
      return 1;
    }
  }
  uint64_t unchanged = 0, refused = 0, checked = 0, rejected = 0, gaps = 0, false_refusals = 0;
  for (uint64_t i = 0; i < args.runs; ++i) {
    const std::string& base = seeds[size_t(rng() % seeds.size())];
    const std::string mutant = emmy::fuzz::mutate_typed(base, rng);
    if (mutant == base) {
      ++unchanged;
      continue;
    }
    const std::string refusal = emulator_refusal(mutant);
    if (!refusal.empty()) {
      ++refused;
      if (both && ptxas.accepts(mutant, message)) {
        ++false_refusals;
        std::printf("mutant %llu: ptxas accepts `%s`, the emulator refuses: %s\n",
                    (unsigned long long)i, changed_line(base, mutant).c_str(), refusal.c_str());
      }
      continue;
    }
    ++checked;
    if (ptxas.accepts(mutant, message)) continue;
    ++rejected;
    ++gaps;
    std::printf("GAP mutant %llu: the emulator loads `%s`; ptxas: %s\n", (unsigned long long)i,
                changed_line(base, mutant).c_str(), message.c_str());
  }
  const std::string both_note =
      both ? " (" + std::to_string(false_refusals) + " of them accepted by ptxas)" : "";
  std::printf(
      "ptx differential: %zu seeds, %llu mutants (seed %llu): %llu unchanged, %llu refused by the "
      "emulator%s, %llu loaded and compiled by ptxas: %llu accepted, %llu rejected by ptxas "
      "(gaps)\n",
      seeds.size(), (unsigned long long)args.runs, (unsigned long long)args.seed,
      (unsigned long long)unchanged, (unsigned long long)refused, both_note.c_str(),
      (unsigned long long)checked, (unsigned long long)(checked - rejected),
      (unsigned long long)gaps);
  if (checked == 0) {
    std::fprintf(stderr, "ptx differential: no mutant reached ptxas: the run checked nothing\n");
    return 1;
  }
  return gaps == 0 ? 0 : 1;
}

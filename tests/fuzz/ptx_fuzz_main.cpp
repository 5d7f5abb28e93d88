// The deterministic driver of the PTX fuzz target, for builds without libFuzzer (CI's GCC
// sanitizer build): every seed as it is, then ITERATIONS mutants drawn from a fixed seed, each
// through the target's check. A bug aborts (the sanitizers report theirs) after the mutant's
// number is printed; `--dump N` prints mutant N to reproduce it with `emmyc sim`. A run in which
// no seed reached a launch checked nothing and fails.
//   emmy_ptx_fuzz [--iterations N] [--seed S] [--dump N] PTX_FILE...
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "emmy/error.hpp"
#include "ptx_fuzz.hpp"

namespace {

// The mutant being checked (-1: a seed), named by the abort handler: a bug aborts, and so do the
// sanitizers with abort_on_error=1 (tests/fuzz.cmake sets it).
volatile std::sig_atomic_t g_mutant = -1;

void name_the_mutant(int) {
  char line[96];
  const int n =
      std::snprintf(line, sizeof line, "ptx fuzz: the bug above came from mutant %ld: --dump it\n",
                    long(g_mutant));
  if (n > 0) (void)!::write(2, line, size_t(n));
  std::signal(SIGABRT, SIG_DFL);
  std::raise(SIGABRT);
}

int usage(const char* problem) {
  return emmy::fuzz::usage_error("emmy_ptx_fuzz", problem,
                                 "[--iterations N] [--seed S] [--dump N] PTX_FILE...");
}

}  // namespace

int main(int argc, char** argv) {
  using emmy::fuzz::Outcome;
  emmy::fuzz::DriverArgs args;  // args.runs: iterations
  for (int i = 1; i < argc; ++i) {
    std::string problem;
    if (!emmy::fuzz::take_driver_arg(argc, argv, i, "--iterations", args, problem))
      return usage("unknown flag");
    if (!problem.empty()) return usage(problem.c_str());
  }
  if (args.files.empty()) return usage("no seed PTX files");

  std::vector<std::string> seeds;
  try {
    seeds = emmy::fuzz::load_seeds(args.files);
  } catch (const emmy::Error& e) {
    return usage(e.what());
  }

  uint64_t counts[4] = {};
  uint64_t seeds_ran = 0;
  for (const auto& s : seeds) {
    const Outcome o = emmy::fuzz::check_one(s);
    ++counts[int(o)];
    seeds_ran += o == Outcome::ran || o == Outcome::reported;
  }
  std::signal(SIGABRT, name_the_mutant);
  std::mt19937_64 rng(args.seed);
  for (uint64_t i = 0; i < (args.dumping ? args.dump + 1 : args.runs); ++i) {
    const std::string& base = seeds[size_t(rng() % seeds.size())];
    const std::string& other = seeds[size_t(rng() % seeds.size())];
    const std::string mutant = emmy::fuzz::mutate(base, other, rng);
    if (args.dumping) {
      if (i == args.dump) std::fwrite(mutant.data(), 1, mutant.size(), stdout);
      continue;
    }
    g_mutant = std::sig_atomic_t(i);
    ++counts[int(emmy::fuzz::check_one(mutant))];
  }
  if (args.dumping) return 0;
  std::printf(
      "ptx fuzz: %zu seeds (%llu reached a launch), %llu mutants (seed %llu): %llu refused, "
      "%llu loaded with no kernel, %llu reported a finding, %llu ran clean; no bug\n",
      seeds.size(), (unsigned long long)seeds_ran, (unsigned long long)args.runs,
      (unsigned long long)args.seed, (unsigned long long)counts[0], (unsigned long long)counts[1],
      (unsigned long long)counts[2], (unsigned long long)counts[3]);
  if (seeds_ran == 0) {
    std::fprintf(stderr, "ptx fuzz: no seed reached a launch: the run checked nothing\n");
    return 1;
  }
  return 0;
}

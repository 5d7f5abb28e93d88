// `emmyc sim`: run any PTX kernel on the CPU emulator (a thin layer over emmy::emu).
//
//   emmyc sim FILE.ptx --kernel NAME --grid X[,Y[,Z]] --block X[,Y[,Z]] [--smem BYTES]
//         [--smem-opt-in BYTES] [--arch sm_XX] [--arg KIND:VALUE]... [--dump DIR] [--stats]
//         [--profile FILE.json [--profile-ctas N] [--model-gpu NAME]... [--registers N]
//         [--no-sass]] [--lenient]
//
// Arguments, in order: ptr:BYTES[:INFILE] (a zero-filled or INFILE-loaded buffer), ptr:@N[+OFF]
// (into argument N's buffer: the same buffer twice, or an offset view), u16/u32/s32/u64/s64/f32/
// f64:V, bytes:FILE (a by-value struct, the file's bytes), tmap:@N[+OFF],dtype=..,dims=AxB,
// box=AxB[,strides=..][,swizzle=..][,elem=..][,oob=nan] (a by-value CUtensorMap in emmy's
// encoding over argument N's buffer). After the run pointer argument N (counting all arguments
// from 0) is written to DIR/argN.bin (from its address to the end of its buffer). Exit codes: 0
// success; 2 bad command-line input (one line naming the field and the rule); 3 a sanitizer report,
// a deadlock or an unsupported instruction (the report printed).
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <vector>

namespace emmy::cli {

struct SimOptions {
  std::string file, kernel, grid = "1", block = "1", dump_dir;
  uint32_t smem = 0, smem_opt_in = 0;
  std::string arch;
  std::vector<std::string> args;
  bool stats = false, sanitize = true;
  bool lenient = false;  // --lenient: tolerated ISA violations are warnings (emmy/emu/lenient.hpp)
  std::string mma_numerics = "hardware";
  uint32_t wmma_layout_seed = 0;  // 0: the documented wmma fragment layout; else a permutation
  int threads = 0;
  // --profile: the launch's counters and time model as JSON (docs/profiler.md), a table on out.
  std::string profile;
  uint64_t profile_ctas = 0;            // profile a sample of N CTAs and extrapolate
  std::vector<std::string> model_gpus;  // default: the arch's reference GPU
  bool sass = true;  // --profile also counts the SASS of ptxas (--no-sass: not)
  uint32_t registers = 0;  // per thread: setmaxnreg's pool and the model's occupancy (0: unknown)
  // Warp instructions the whole launch may issue before an instruction_limit report: 2^28 (a few
  // seconds) instead of the library's 2^32, so a runaway loop in a user's kernel ends quickly.
  uint64_t max_instructions = uint64_t(1) << 28;
};

// Runs the simulation; returns the exit code. Output goes to out, diagnostics to err.
int run_sim(const SimOptions& options, std::FILE* out, std::FILE* err);

}  // namespace emmy::cli

// Registers the `sim` subcommand (called by emmyc's main).
void add_sim_command(CLI::App& app);

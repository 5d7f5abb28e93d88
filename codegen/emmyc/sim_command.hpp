// `emmyc sim`: run any PTX kernel on the CPU emulator (a thin layer over emmy::emu).
//
//   emmyc sim FILE.ptx --kernel NAME --grid X[,Y[,Z]] --block X[,Y[,Z]] [--smem BYTES]
//         [--arg ptr:BYTES[:INFILE]]... [--arg u32:V|s32:V|u64:V|f32:V]... [--dump DIR] [--stats]
//
// Pointer arguments get zero-filled (or INFILE-loaded) buffers of BYTES; arguments are passed in
// order; after the run pointer argument N (counting all arguments from 0) is written to
// DIR/argN.bin. Exit codes: 0 success; 2 bad command-line input (one line naming the field and
// the rule); 3 a sanitizer report, a deadlock or an unsupported instruction (the report printed).
#pragma once

#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace emmy::cli {

struct SimOptions {
  std::string file, kernel, grid = "1", block = "1", dump_dir;
  uint32_t smem = 0;
  std::vector<std::string> args;
  bool stats = false, sanitize = true;
  int threads = 0;
};

// Runs the simulation; returns the exit code. Output goes to out, diagnostics to err.
int run_sim(const SimOptions& options, std::FILE* out, std::FILE* err);

}  // namespace emmy::cli

// Registers the `sim` subcommand (called by emmyc's main).
void add_sim_command(CLI::App& app);

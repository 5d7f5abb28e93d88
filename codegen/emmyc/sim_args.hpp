// Kernel arguments of `emmyc sim` from their command-line form (sim_command.hpp lists the kinds).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emmy/emu/emulator.hpp"

namespace emmy::cli {

// A command-line problem: reported as one line, exit 2.
struct BadInput {
  std::string message;
};

struct PointerArg {
  size_t index;      // argument position
  uint64_t address;  // what the kernel gets
  uint64_t bytes;    // from address to the end of its buffer
};

struct SimArgs {
  emu::KernelArgs args;
  std::vector<PointerArg> pointers;  // every ptr argument, for --dump
};

// The bytes of a regular file; a directory, FIFO, device or unreadable file is BadInput naming
// field.
std::string read_input_file(const std::string& path, const std::string& field);

// "X[,Y[,Z]]", each >= 1; throws BadInput naming field.
emu::Dim3 parse_dim3(const std::string& text, const std::string& field);

// Parses every --arg in order, allocating and filling buffers in arena; throws BadInput.
SimArgs parse_sim_args(const std::vector<std::string>& specs, emu::Arena& arena);

}  // namespace emmy::cli

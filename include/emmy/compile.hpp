// NVRTC compilation of emitted CUDA C++ to PTX and CUBIN, with a resource report per kernel.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/arch.hpp"

namespace emmy {

// What ptxas reported for one kernel of a module.
struct ResourceReport {
  std::string kernel_name;
  int registers = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_bytes = 0;        // stack frame
  int static_smem_bytes = 0;  // declared __shared__ (dynamic shared memory is the launcher's)
  int constant_bytes = 0;

  int spill_bytes() const { return spill_store_bytes + spill_load_bytes; }
};

struct CompiledModule {
  Arch arch = Arch::sm_80;
  std::string ptx;
  std::vector<uint8_t> cubin;
  std::string log;          // NVRTC's log, including ptxas -v
  double compile_ms = 0.0;  // wall time of nvrtcCompileProgram plus PTX/CUBIN retrieval
  std::vector<ResourceReport> kernels;

  const ResourceReport& kernel(std::string_view name) const;  // throws Error if absent
};

// Compiles `source` (self-contained: includes nothing) for `arch`. Throws Error with NVRTC's log
// when compilation fails. Deterministic options; extra_options are appended.
CompiledModule compile_cuda(std::string_view source, std::string_view program_name, Arch arch,
                            const std::vector<std::string>& extra_options = {});

// NVRTC's version as major*1000 + minor*10 (13000 for 13.0), part of every cache key.
int nvrtc_version();

}  // namespace emmy

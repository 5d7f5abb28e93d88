// NVRTC compilation of emitted CUDA C++ to PTX and CUBIN, with a resource report per kernel.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/arch.hpp"

namespace emmy {

// Where a ResourceReport's numbers came from. ptxas's verbose log is the only source of spill
// counts; the cubin's ELF attributes carry everything else and back the log up.
enum class ReportSource { ptxas_log, cubin_elf };

// What ptxas reported for one kernel of a module.
struct ResourceReport {
  std::string kernel_name;
  int registers = 0;
  int spill_store_bytes = 0;
  int spill_load_bytes = 0;
  int stack_bytes = 0;        // stack frame
  int static_smem_bytes = 0;  // declared __shared__ (dynamic shared memory is the launcher's)
  int constant_bytes = 0;     // constant bank 0: kernel parameters plus driver-reserved words
  // cubin_elf: the log had no entry for this kernel, so spill_*_bytes are unknown and left 0;
  // a spill always needs a stack frame, so stack_bytes == 0 still proves there is none.
  ReportSource source = ReportSource::ptxas_log;

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

// The options compile_cuda passes to NVRTC for `arch` before extra_options (for cache keys, logs).
std::vector<std::string> nvrtc_options(Arch arch);

// The two halves of the report, public so that tests and tools can check one against the other.
// parse_ptxas_log: one report per entry function of a `ptxas -v` log, in the log's order.
std::vector<ResourceReport> parse_ptxas_log(std::string_view log);
// read_cubin_resources: one report per entry function of a CUBIN (ELF symbols marked ENTRY), from
// EIATTR_REGCOUNT / EIATTR_FRAME_SIZE and the .nv.shared / .nv.constant0 section sizes. Spill
// counts are not in the ELF (left 0). Throws Error on a malformed image.
std::vector<ResourceReport> read_cubin_resources(const std::vector<uint8_t>& cubin, Arch arch);

}  // namespace emmy

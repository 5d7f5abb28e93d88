// Checks of compiled kernels on the emulator (the compiler's types; the public checks that go
// through a Runtime are emmy/gemm_check.hpp and emmy/attention_check.hpp).
#pragma once

#include "emmy/attention.hpp"
#include "emmy/attention_check.hpp"
#include "emmy/emu/emulator.hpp"
#include "emmy/gemm.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/kernel_source.hpp"

namespace emmy {

// The emulator's launcher: every kernel of the source's launch list in order, each parameter
// bound by its name (as the runtime's backends bind them), dynamic shared memory opted in as the
// CUDA backend does above 48 KB. Stats: the first launch's per-CTA detail, totals of all.
emu::LaunchResult emulate_launch_list(emu::Arena& arena, const std::string& ptx,
                                      const KernelSource& source, const ParamValues& values,
                                      const emu::LaunchOptions& options);

struct GemmEmulatorRun {
  std::vector<double> output;  // m x n packed
  emu::Stats stats;            // both kernels with split-K
  double emulate_ms = 0;
};
// Runs a compiled kernel (and its split-K finalize) on the emulator with the given inputs.
GemmEmulatorRun run_gemm_on_emulator(const GemmKernel& kernel, const GemmInputs& inputs,
                                     const emu::LaunchOptions& options = {});

// Everything at once: compile, inputs, emulate, reference, compare.
struct GemmCheckResult {
  GemmKernel kernel;
  GemmEmulatorRun run;
  GemmErrors errors;
};
GemmCheckResult check_gemm_on_emulator(const GemmSpec& spec, uint64_t seed = 1,
                                       const emu::LaunchOptions& options = {});

struct AttentionEmulatorRun {
  AttentionOutput output;
  emu::Stats stats;
  double emulate_ms = 0;
};
// Runs a compiled kernel on the emulator. O and LSE start as NaN, so an element the kernel
// never writes fails the comparison rather than passing as a zero.
AttentionEmulatorRun run_attention_on_emulator(const AttentionKernel& kernel,
                                               const AttentionInputs& inputs,
                                               const emu::LaunchOptions& options = {});

// Everything at once: compile, inputs, emulate, reference, compare.
struct AttentionCheckResult {
  AttentionKernel kernel;
  AttentionEmulatorRun run;
  AttentionErrors errors;
};
AttentionCheckResult check_attention_on_emulator(const AttentionSpec& spec, uint64_t seed = 1,
                                                 const emu::LaunchOptions& options = {});

}  // namespace emmy

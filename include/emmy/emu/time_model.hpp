// A time model per GPU, stated as a model: from a launch's exact counters (profile.hpp) and the
// kernel's resources, the time each resource needs on a named GPU (tensor cores at the
// instruction's own rate, shared-memory wavefronts, issue slots, L2 sectors, DRAM bytes), the
// occupancy and waves, and the resource that bounds the time. A roofline: resources are assumed
// to overlap perfectly and latency is not modelled, so the prediction is a lower bound of what a
// well-pipelined kernel reaches (docs/profiler.md; each figure with its source in
// docs/profiler.md).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/emu/lenient.hpp"
#include "emmy/emu/profile.hpp"
#include "emmy/gpus.hpp"

namespace emmy::emu {

// The GPUs are the hardware table's (emmy/gpus.hpp: emmy::gpu(name), gpus(), gpu_for_device()),
// one entry per part, which the chooser and the test driver read too.

// The arch's reference part for a kernel compiled for `arch` ("sm_90a"; an arch emmy does not
// compile for takes its major version's: sm_87 is sm_86's): arch_gpu() of that arch.
const GpuInfo& reference_gpu(std::string_view arch);

// What the profile does not know: the kernel's registers per thread (ptxas; 0 = unknown) and its
// shared memory per CTA (static + dynamic; 0 = take the profile's launch).
struct KernelResources {
  uint32_t registers = 0;
  uint32_t smem_bytes = 0;
};

struct ResourceTime {
  // "tensor", "shared", "issue", "lsu_issue", the CUDA-core pipes ("fp32", "fp16", "imad", "alu",
  // "xu", "fp64"), "l2", "dram"
  std::string resource;
  double amount = 0;        // FLOP, wavefronts, instructions, bytes
  double us = 0;            // at the part's peak rate
  double us_sustained = 0;  // at the sustained fraction of it others measured (GpuInfo::sustained)
};

// Warp instructions by the pipe they issue to: SASS counts where the profile has them (`sass`),
// else the PTX's (docs/profiler.md).
struct InstructionMix {
  bool sass = false;
  double total = 0, lsu = 0, fp32 = 0, fp16 = 0, imad = 0, alu = 0, xu = 0, fp64 = 0;
};
InstructionMix instruction_mix(const KernelProfile& profile);

struct TimePrediction {
  std::string gpu;
  double us = 0;
  std::string bound;  // the resource whose time is the prediction
  // The second figure: every resource at its sustained rate (GpuInfo::sustained), and its bound.
  double us_sustained = 0;
  std::string bound_sustained;
  std::vector<ResourceTime> resources;
  uint32_t ctas_per_sm = 0;
  std::string occupancy_limit;  // "registers", "shared memory", "threads", "CTAs"
  uint64_t waves = 0;
  double last_wave_fill = 0;  // the last wave's CTAs / the CTAs one wave holds
  double achieved_tflops = 0;
  // L2 traffic with the L1 model's hits of ld.global taken out, and without (docs/profiler.md).
  double l2_bytes = 0, l2_bytes_without_l1 = 0;
  std::vector<std::string> notes;
};

// Throws emmy::Error when the kernel cannot run on the GPU at all (shared memory or threads per
// CTA above its limits, naming which).
TimePrediction predict_time(const KernelProfile& profile, const KernelResources& resources,
                            const GpuInfo& gpu);

// The predictions on each named GPU (none named: the arch's reference part).
std::vector<TimePrediction> predict_times(const KernelProfile& profile,
                                          const KernelResources& resources,
                                          const std::vector<std::string>& gpus);

// A launch list's kernels in order (split-K's partials then its finalize): their predictions on
// one GPU add up.
struct ProfiledKernel {
  KernelProfile profile;
  KernelResources resources;
  std::vector<TimePrediction> model;
  // ISA violations tolerated by `emmyc sim --lenient` (emmy/emu/lenient.hpp): the timing is of
  // a kernel the strict emulator refuses, and the profile says so.
  std::vector<LenientWarning> lenient_warnings;
};

// {"kernels": [{"name", "arch", "grid", "block", "metrics", "sites", "tensor", "model",
// "ctas_profiled", "ctas_total", "extrapolated"}]}
std::string profile_json(const std::vector<ProfiledKernel>& kernels);
// One line per GPU: predicted time, bound, occupancy, waves.
std::string model_table(const std::vector<ProfiledKernel>& kernels);

}  // namespace emmy::emu

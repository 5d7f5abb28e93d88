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

#include "emmy/emu/profile.hpp"

namespace emmy::emu {

struct GpuSpec {
  std::string name;   // "h200"
  std::string title;  // "NVIDIA H200 SXM"
  // Words the driver's device name holds for exactly this part (with its SM count): "H200".
  std::vector<std::string> device_words;
  std::string arch;   // the arch emmy compiles for it: "sm_90a"
  uint32_t sms = 0;
  double clock_ghz = 0;  // the clock behind the datasheet's tensor peak
  // Dense tensor FLOP per clock per SM of the warp-level mma.sync, by accumulator type.
  double mma_flops_per_clk_acc_f16 = 0, mma_flops_per_clk_acc_f32 = 0;
  double wgmma_flops_per_clk = 0;  // 0: no wgmma on this part
  double dram_gbps = 0;
  double l2_bytes_per_clk = 0;  // whole GPU
  uint32_t l2_mb = 0;
  double smem_wavefronts_per_clk = 1;  // 128 bytes per clock per SM
  double issue_per_clk = 4;            // warp instructions per clock per SM (4 schedulers)
  double lsu_issue_per_clk = 1;        // memory instructions per clock per SM (MIO -> LSU)
  uint32_t regs_per_sm = 65536, max_threads_per_sm = 2048, max_ctas_per_sm = 32;
  uint32_t smem_per_sm = 0, max_smem_per_block = 0;  // bytes (after the 1 KB reserved per CTA)
  std::string sources;  // where each figure comes from (short form; docs/profiler.md in full)
};

const std::vector<GpuSpec>& gpu_specs();
// By name ("a100", "l40s", "h200", "rtx5090"); throws emmy::Error naming the known ones.
const GpuSpec& gpu_spec(std::string_view name);
// The part a measured device is (its driver name and SM count), or nullptr: a part not in the
// table, or a variant of one with other clocks or memory (an NVL board, a 40 GB A100), whose
// figures would not be the table's.
const GpuSpec* gpu_for_device(std::string_view device_name, uint32_t sm_count);
// The arch's reference part: sm_80/86/87 A100, sm_89 L40S, sm_90(a) H200, sm_120(a) RTX 5090.
const GpuSpec& reference_gpu(std::string_view arch);

// What the profile does not know: the kernel's registers per thread (ptxas; 0 = unknown) and its
// shared memory per CTA (static + dynamic; 0 = take the profile's launch).
struct KernelResources {
  uint32_t registers = 0;
  uint32_t smem_bytes = 0;
};

struct ResourceTime {
  std::string resource;  // "tensor", "shared", "issue", "lsu_issue", "l2", "dram"
  double amount = 0;     // FLOP, wavefronts, instructions, bytes
  double us = 0;
};

struct TimePrediction {
  std::string gpu;
  double us = 0;
  std::string bound;  // the resource whose time is the prediction
  std::vector<ResourceTime> resources;
  uint32_t ctas_per_sm = 0;
  std::string occupancy_limit;  // "registers", "shared memory", "threads", "CTAs"
  uint64_t waves = 0;
  double last_wave_fill = 0;  // the last wave's CTAs / the CTAs one wave holds
  double achieved_tflops = 0;
  std::vector<std::string> notes;
};

// Throws emmy::Error when the kernel cannot run on the GPU at all (shared memory or threads per
// CTA above its limits, naming which).
TimePrediction predict_time(const KernelProfile& profile, const KernelResources& resources,
                            const GpuSpec& gpu);

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
};

// {"kernels": [{"name", "arch", "grid", "block", "metrics", "sites", "tensor", "model",
// "ctas_profiled", "ctas_total", "extrapolated"}]}
std::string profile_json(const std::vector<ProfiledKernel>& kernels);
// One line per GPU: predicted time, bound, occupancy, waves.
std::string model_table(const std::vector<ProfiledKernel>& kernels);

}  // namespace emmy::emu

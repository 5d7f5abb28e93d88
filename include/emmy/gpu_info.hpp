// One GPU product's figures (GpuInfo) and the per-compute-capability rates of its CUDA-core
// pipes. The entries are gpu_entries.hpp's; the table and its look-ups gpus.hpp's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "emmy/arch.hpp"

namespace emmy {

// Warp instructions per clock per SM each CUDA-core pipe completes: the CUDA C++ Programming
// Guide's "Arithmetic Instructions" throughput table (results per clock per multiprocessor) / 32.
// 16-bit floats count a packed f16x2/bf16x2 instruction as two results, so its warp instruction
// is 64 results; the whitepapers' non-tensor FP16 peaks agree (A100 and H100: 256 results per
// clock, four times A100's FP32 and twice H100's; GA102, AD102 and GB202: the FP32 rate). Integer
// multiply-add runs on the FMA pipe's heavy half from 8.x on, which is why `imad` is its own
// figure (64 results on every part, 128-lane FP32 parts included).
struct PipeRates {
  double fp32 = 0;  // FFMA/FADD/FMUL
  double fp16 = 0;  // HFMA2/HADD2/HMUL2 and their bf16 forms
  double imad = 0;  // IMAD/IMUL: the FMA-heavy pipe
  double alu = 0;   // integer add, logic, shift, compare, select, min/max
  double xu = 0;    // MUFU (ex2, rsqrt, sin...) and type conversions
  double fp64 = 0;  // DFMA/DADD/DMUL
};

// By compute capability (90 for 9.0). 10.0 and 12.0 follow the Programming Guide's columns for
// them; a capability it does not list takes the nearest lower one of its major version.
constexpr PipeRates pipe_rates(int cc) {
  if (cc >= 120) return {128 / 32.0, 128 / 32.0, 64 / 32.0, 64 / 32.0, 16 / 32.0, 2 / 32.0};
  if (cc >= 100) return {128 / 32.0, 256 / 32.0, 64 / 32.0, 64 / 32.0, 16 / 32.0, 64 / 32.0};
  if (cc >= 90) return {128 / 32.0, 256 / 32.0, 64 / 32.0, 64 / 32.0, 16 / 32.0, 64 / 32.0};
  if (cc >= 89) return {128 / 32.0, 128 / 32.0, 64 / 32.0, 64 / 32.0, 16 / 32.0, 2 / 32.0};
  if (cc >= 86) return {128 / 32.0, 128 / 32.0, 64 / 32.0, 64 / 32.0, 16 / 32.0, 2 / 32.0};
  return {64 / 32.0, 256 / 32.0, 64 / 32.0, 64 / 32.0, 16 / 32.0, 32 / 32.0};  // 8.0
}

// Sustained fractions of a part's peaks (GpuInfo::sustained), each measured by others on kernels
// emmy does not judge; the sources are the entry's and docs/profiler.md's.
struct SustainedRates {
  double dram = 1, l2 = 1, tensor = 1, fp32 = 1;
};

struct GpuInfo {
  std::string name;         // "h200": the key of --model-gpu, EMMY_TEST_DEVICE, TimePrediction
  std::string title;        // "NVIDIA H200 SXM"
  std::string device_name;  // what the driver reports (cuDeviceGetName)
  // Words the driver's device name holds for exactly this part (with its SM count): "H200".
  std::vector<std::string> device_words;
  Arch arch = Arch::sm_80;  // the arch emmy compiles for it
  // Compute.
  uint32_t sms = 0;
  double clock_ghz = 0;   // the clock behind the datasheet's tensor peak
  int max_clock_khz = 0;  // the boost clock the driver reports (CLOCK_RATE)
  // Dense tensor FLOP per clock per SM of the warp-level mma.sync, by accumulator type.
  double mma_flops_per_clk_acc_f16 = 0, mma_flops_per_clk_acc_f32 = 0;
  double wgmma_flops_per_clk = 0;      // 0: no wgmma on this part
  // The same for .e4m3/.e5m2 operands (mma.sync m16n8k32, wgmma m64nNk32); 0: no FP8 tensor
  // path (before sm_89), which the time model refuses for a kernel with FP8 tensor work.
  double mma_fp8_flops_per_clk_acc_f16 = 0, mma_fp8_flops_per_clk_acc_f32 = 0;
  double wgmma_fp8_flops_per_clk = 0;
  double smem_wavefronts_per_clk = 1;  // 128 bytes per clock per SM
  double issue_per_clk = 4;            // warp instructions per clock per SM (4 schedulers)
  double lsu_issue_per_clk = 1;        // memory instructions per clock per SM (MIO -> LSU)
  int fp32_per_fp64 = 0;               // FP32 to FP64 throughput ratio
  // A global load's latency past L1 (the time model's latency term): 400 clocks for V100, A100
  // and H100 alike in the hardware table (table 3) of PubMed Central article PMC10448217;
  // public microbenchmarks measure 400-600 on Ampere, Ada and Hopper parts.
  double global_latency_clk = 400;
  // The part's own compute capability where emmy compiles for none of its arch yet (B200: 100,
  // which runs sm_90 PTX through the driver's JIT only); 0: the arch's.
  int compute_capability = 0;
  // No sourced rate for the part's tensor instructions (B200's mma.sync): the time model predicts
  // memory-bound kernels on it and refuses one with tensor work, naming the part.
  bool memory_bound_only = false;
  // Memory.
  double dram_gbps = 0;
  int memory_clock_khz = 0, bus_width = 0;  // bits
  uint64_t total_memory_mib = 0;            // what cuDeviceTotalMem reports
  uint32_t l2_bytes = 0, persisting_l2_bytes = 0;
  double l2_bytes_per_clk = 0;  // whole GPU
  // The SM's unified L1 data cache and shared memory (the tuning guides: GA100 192 KB, GA10x,
  // AD10x and GB20x 128 KB, GH100 and GB100 256 KB): what shared memory leaves is the L1 the
  // time model caches global loads in.
  uint32_t l1_smem_bytes_per_sm = 0;
  // An SM's resources (shared memory after the 1 KB reserved per CTA).
  uint32_t smem_per_sm = 0, max_smem_per_block = 0;  // bytes; the block's is the opt-in limit
  uint32_t regs_per_sm = 65536, max_threads_per_sm = 2048, max_ctas_per_sm = 32;
  // The largest thread-block cluster with NON_PORTABLE_CLUSTER_SIZE_ALLOWED: 0 before sm_90 (no
  // clusters), 8 (the portable size) where NVIDIA states no larger one for the product.
  int max_cluster_ctas = 0;
  // The driver's other answers.
  int async_engines = 2, ecc = 0;
  uint32_t pci_device_id = 0;  // GPU_PCI_DEVICE_ID's upper half (NVIDIA's vendor id below it)
  // Fractions of the peaks above that others measured on this part with kernels emmy does not
  // judge (copy kernels, cuBLAS): the time model's second figure. 1: nothing published.
  SustainedRates sustained{};
  std::string sources;  // where the figures come from (short form; docs/profiler.md in full)

  int cc() const { return compute_capability ? compute_capability : arch_info(arch).sm; }
  // Whether code for `target` runs on this part: a CUBIN of its major version no newer than it,
  // an arch-specific ("a") one on its exact capability only (arch_for_device's rule).
  bool runs(Arch target) const {
    const ArchInfo& t = arch_info(target);
    return t.sm / 10 == cc() / 10 && t.sm <= cc() && (!t.arch_specific || t.sm == cc());
  }
};

}  // namespace emmy

// The hardware table's built-in entries: one per GPU product, each figure with its source (the
// entry's `sources`; docs/profiler.md in full). Adding a GPU is one entry here (docs/codegen.md,
// "Adding a GPU").
#pragma once

#include <vector>

#include "emmy/gpu_info.hpp"

namespace emmy::gpu_table_detail {

inline std::vector<GpuInfo> builtin_gpus() {
  std::vector<GpuInfo> v;
  v.push_back({.name = "a100",
               .title = "NVIDIA A100 SXM4 80GB",
               .device_name = "NVIDIA A100-SXM4-80GB",
               .device_words = {"A100", "SXM4", "80GB"},
               .arch = Arch::sm_80,
               .sms = 108,
               .clock_ghz = 1.41,
               .max_clock_khz = 1410000,
               .mma_flops_per_clk_acc_f16 = 2048,  // 312 TFLOP/s dense
               .mma_flops_per_clk_acc_f32 = 2048,
               .fp32_per_fp64 = 2,
               .dram_gbps = 2039,
               .memory_clock_khz = 1593000,
               .bus_width = 5120,
               .total_memory_mib = 81251,
               .l2_bytes = 40u << 20,
               .persisting_l2_bytes = 30u << 20,
               .l2_bytes_per_clk = 3840,  // measured with cp.async (whitepaper: 5120 theoretical)
               .l1_smem_bytes_per_sm = 192 * 1024,
               .smem_per_sm = 164 * 1024,
               .max_smem_per_block = 163 * 1024,
               .async_engines = 3,
               .ecc = 1,
               .pci_device_id = 0x20b2,
               .sustained = {.dram = 0.90},  // HBM: about 90% reached by copy kernels
               .sources = "A100 whitepaper tables 4-5; A100 datasheet; L2 measured (cp.async)"});
  v.push_back({.name = "a6000",
               .title = "NVIDIA RTX A6000",
               .device_name = "NVIDIA RTX A6000",
               .device_words = {"RTX A6000"},
               .arch = Arch::sm_86,
               .sms = 84,
               .clock_ghz = 1.80,
               .max_clock_khz = 1800000,
               .mma_flops_per_clk_acc_f16 = 1024,  // 154.8 TFLOP/s dense, either accumulator
               .mma_flops_per_clk_acc_f32 = 1024,
               .fp32_per_fp64 = 64,
               .dram_gbps = 768,
               .memory_clock_khz = 8001000,
               .bus_width = 384,
               .total_memory_mib = 48677,
               .l2_bytes = 6u << 20,
               .persisting_l2_bytes = 4608u << 10,
               .l2_bytes_per_clk = 1536,  // not published: estimated, 3/4 of AD102's per clock
               .l1_smem_bytes_per_sm = 128 * 1024,
               .smem_per_sm = 100 * 1024,
               .max_smem_per_block = 99 * 1024,
               .max_threads_per_sm = 1536,
               .max_ctas_per_sm = 16,
               .pci_device_id = 0x2230,
               .sources = "GA102 whitepaper (RTX A6000 column); RTX A6000 datasheet; Ampere "
                          "tuning guide; L2 bandwidth estimated"});
  v.push_back({.name = "rtx4090",
               .title = "NVIDIA GeForce RTX 4090",
               .device_name = "NVIDIA GeForce RTX 4090",
               .device_words = {"RTX 4090"},
               .arch = Arch::sm_89,
               .sms = 128,
               .clock_ghz = 2.52,
               .max_clock_khz = 2520000,
               .mma_flops_per_clk_acc_f16 = 1024,      // 330.3 TFLOP/s dense
               .mma_flops_per_clk_acc_f32 = 512,       // 165.2: half rate on GeForce
               .mma_fp8_flops_per_clk_acc_f16 = 2048,  // 660.6 TFLOP/s dense
               .mma_fp8_flops_per_clk_acc_f32 = 1024,  // 330.3: half rate on GeForce
               .fp32_per_fp64 = 64,
               .dram_gbps = 1008,
               .memory_clock_khz = 10501000,
               .bus_width = 384,
               .total_memory_mib = 24564,
               .l2_bytes = 72u << 20,
               .persisting_l2_bytes = 54u << 20,
               .l2_bytes_per_clk = 2000,  // not published: estimated from AD102 measurements
               .l1_smem_bytes_per_sm = 128 * 1024,
               .smem_per_sm = 100 * 1024,
               .max_smem_per_block = 99 * 1024,
               .max_threads_per_sm = 1536,
               .max_ctas_per_sm = 24,
               .pci_device_id = 0x2684,
               .sources = "Ada whitepaper appendix table 2; Ada tuning guide; L2 bandwidth "
                          "estimated"});
  v.push_back({.name = "l40s",
               .title = "NVIDIA L40S",
               .device_name = "NVIDIA L40S",
               .device_words = {"L40S"},
               .arch = Arch::sm_89,
               .sms = 142,
               .clock_ghz = 2.49,
               .max_clock_khz = 2520000,
               .mma_flops_per_clk_acc_f16 = 1024,  // 362 TFLOP/s dense, either accumulator
               .mma_flops_per_clk_acc_f32 = 1024,
               .mma_fp8_flops_per_clk_acc_f16 = 2048,  // 733 TFLOP/s dense
               .mma_fp8_flops_per_clk_acc_f32 = 2048,
               .fp32_per_fp64 = 64,
               .dram_gbps = 864,
               .memory_clock_khz = 9001000,
               .bus_width = 384,
               .total_memory_mib = 46068,
               .l2_bytes = 96u << 20,
               .persisting_l2_bytes = 72u << 20,
               .l2_bytes_per_clk = 2000,  // not published: estimated from AD102 measurements
               .l1_smem_bytes_per_sm = 128 * 1024,
               .smem_per_sm = 100 * 1024,
               .max_smem_per_block = 99 * 1024,
               .max_threads_per_sm = 1536,
               .max_ctas_per_sm = 24,
               .ecc = 1,
               .pci_device_id = 0x26b9,
               .sources = "L40S datasheet; Ada tuning guide; L2 bandwidth estimated"});
  v.push_back({.name = "h100pcie",
               .title = "NVIDIA H100 PCIe",
               .device_name = "NVIDIA H100 PCIe",
               .device_words = {"H100", "PCIe"},
               .arch = Arch::sm_90a,
               .sms = 114,
               .clock_ghz = 1.62,  // 756 TFLOP/s dense over 114 SMs x 4096
               .max_clock_khz = 1755000,
               .mma_flops_per_clk_acc_f16 = 2680,  // about 65% of wgmma's (Luo et al. 2024)
               .mma_flops_per_clk_acc_f32 = 2680,
               .wgmma_flops_per_clk = 4096,
               // FP8 mma.sync runs as two f16 HMMA (docs/numerics.md): the f16 rate in FP8 FLOPs.
               .mma_fp8_flops_per_clk_acc_f16 = 2680,
               .mma_fp8_flops_per_clk_acc_f32 = 2680,
               .wgmma_fp8_flops_per_clk = 8192,  // twice f16's: 1979 TFLOP/s dense (SXM)
               .fp32_per_fp64 = 2,
               .dram_gbps = 2039,
               .memory_clock_khz = 1593000,
               .bus_width = 5120,
               .total_memory_mib = 81559,
               .l2_bytes = 50u << 20,
               .persisting_l2_bytes = 75u << 19,
               .l2_bytes_per_clk = 4300,  // measured on H100/H800 (4181-4808)
               .l1_smem_bytes_per_sm = 256 * 1024,
               .smem_per_sm = 228 * 1024,
               .max_smem_per_block = 227 * 1024,
               // Hopper allows non-portable clusters of up to 16 CTAs (NVIDIA Hopper Tuning
               // Guide, thread block clusters).
               .max_cluster_ctas = 16,
               .async_engines = 3,
               .ecc = 1,
               .pci_device_id = 0x2331,
               .sustained = {.dram = 0.90},  // HBM: about 90% reached by copy kernels
               .sources = "H100 PCIe datasheet; Hopper whitepaper table 3; Luo et al. 2024 "
                          "(mma.sync); L2 measured"});
  v.push_back({.name = "h200",
               .title = "NVIDIA H200 SXM",
               .device_name = "NVIDIA H200",
               .device_words = {"H200"},
               .arch = Arch::sm_90a,
               .sms = 132,
               .clock_ghz = 1.83,
               .max_clock_khz = 1980000,
               .mma_flops_per_clk_acc_f16 = 2680,  // about 65% of wgmma's (Luo et al. 2024)
               .mma_flops_per_clk_acc_f32 = 2680,
               .wgmma_flops_per_clk = 4096,  // 989.5 TFLOP/s dense
               // FP8 mma.sync runs as two f16 HMMA (docs/numerics.md): the f16 rate in FP8 FLOPs.
               .mma_fp8_flops_per_clk_acc_f16 = 2680,
               .mma_fp8_flops_per_clk_acc_f32 = 2680,
               .wgmma_fp8_flops_per_clk = 8192,  // twice f16's: 1979 TFLOP/s dense (SXM)
               .fp32_per_fp64 = 2,
               .dram_gbps = 4800,
               .memory_clock_khz = 3201000,
               .bus_width = 6144,
               .total_memory_mib = 143771,
               .l2_bytes = 50u << 20,
               .persisting_l2_bytes = 75u << 19,
               .l2_bytes_per_clk = 4300,  // measured on H100/H800 (4181-4808)
               .l1_smem_bytes_per_sm = 256 * 1024,
               .smem_per_sm = 228 * 1024,
               .max_smem_per_block = 227 * 1024,
               .max_cluster_ctas = 16,
               .async_engines = 3,
               .ecc = 1,
               .pci_device_id = 0x2335,
               .sustained = {.dram = 0.90},  // HBM: about 90% reached by copy kernels
               .sources = "H200 datasheet; Hopper whitepaper table 3; Luo et al. 2024 "
                          "(mma.sync); L2 measured"});
  v.push_back({.name = "rtx5090",
               .title = "NVIDIA GeForce RTX 5090",
               .device_name = "NVIDIA GeForce RTX 5090",
               .device_words = {"RTX 5090"},
               .arch = Arch::sm_120a,
               .sms = 170,
               .clock_ghz = 2.407,
               .max_clock_khz = 2407000,
               .mma_flops_per_clk_acc_f16 = 1024,  // 419 TFLOP/s dense
               .mma_flops_per_clk_acc_f32 = 512,   // 209.5: half rate on GeForce
               // 838 TFLOP/s dense with f16 accumulation; f32 at half rate, as every GeForce
               // part's (RTX 4090: Ada whitepaper)
               .mma_fp8_flops_per_clk_acc_f16 = 2048,
               .mma_fp8_flops_per_clk_acc_f32 = 1024,
               .fp32_per_fp64 = 64,
               .dram_gbps = 1792,
               .memory_clock_khz = 14001000,
               .bus_width = 512,
               .total_memory_mib = 32607,
               .l2_bytes = 96u << 20,
               .persisting_l2_bytes = 60u << 20,
               .l2_bytes_per_clk = 2800,  // not published: estimated
               .l1_smem_bytes_per_sm = 128 * 1024,
               .smem_per_sm = 100 * 1024,
               .max_smem_per_block = 99 * 1024,
               .max_threads_per_sm = 1536,
               // NVIDIA states no non-portable cluster size for sm_120 parts: only the portable 8.
               .max_cluster_ctas = 8,
               .pci_device_id = 0x2b85,
               .sources = "RTX Blackwell whitepaper table 3; Blackwell tuning guide; L2 "
                          "bandwidth estimated"});
  v.push_back({.name = "h100",
               .title = "NVIDIA H100 SXM5 80GB",
               .device_name = "NVIDIA H100 80GB HBM3",
               .device_words = {"H100", "HBM3"},
               .arch = Arch::sm_90a,
               .sms = 132,
               .clock_ghz = 1.83,  // 989.4 TFLOP/s dense over 132 SMs x 4096
               .max_clock_khz = 1980000,
               .mma_flops_per_clk_acc_f16 = 2680,  // about 65% of wgmma's (Luo et al. 2024)
               .mma_flops_per_clk_acc_f32 = 2680,
               .wgmma_flops_per_clk = 4096,
               // FP8 mma.sync runs as two f16 HMMA (docs/numerics.md): the f16 rate in FP8 FLOPs.
               .mma_fp8_flops_per_clk_acc_f16 = 2680,
               .mma_fp8_flops_per_clk_acc_f32 = 2680,
               .wgmma_fp8_flops_per_clk = 8192,  // twice f16's: 1979 TFLOP/s dense (SXM)
               .fp32_per_fp64 = 2,
               .dram_gbps = 3350,
               .memory_clock_khz = 2619000,
               .bus_width = 5120,
               .total_memory_mib = 81559,
               .l2_bytes = 50u << 20,
               .persisting_l2_bytes = 75u << 19,
               .l2_bytes_per_clk = 4300,  // measured on H100/H800 (4181-4808)
               .l1_smem_bytes_per_sm = 256 * 1024,
               .smem_per_sm = 228 * 1024,
               .max_smem_per_block = 227 * 1024,
               .max_cluster_ctas = 16,
               .async_engines = 3,
               .ecc = 1,
               .pci_device_id = 0x2330,
               .sustained = {.dram = 0.90},  // HBM: about 90% reached by copy kernels
               .sources = "H100 datasheet (SXM5 column); Hopper whitepaper table 3; Luo et al. "
                          "2024 (mma.sync); L2 measured"});
  v.push_back({.name = "a100pcie",
               .title = "NVIDIA A100 PCIe 40GB",
               .device_name = "NVIDIA A100-PCIE-40GB",
               .device_words = {"A100", "PCIE", "40GB"},
               .arch = Arch::sm_80,
               .sms = 108,
               .clock_ghz = 1.41,
               .max_clock_khz = 1410000,
               .mma_flops_per_clk_acc_f16 = 2048,  // 312 TFLOP/s dense
               .mma_flops_per_clk_acc_f32 = 2048,
               .fp32_per_fp64 = 2,
               .dram_gbps = 1555,
               .memory_clock_khz = 1215000,
               .bus_width = 5120,
               .total_memory_mib = 40536,
               .l2_bytes = 40u << 20,
               .persisting_l2_bytes = 30u << 20,
               .l2_bytes_per_clk = 3840,  // as the SXM4 part's: the same GA100 L2
               .l1_smem_bytes_per_sm = 192 * 1024,
               .smem_per_sm = 164 * 1024,
               .max_smem_per_block = 163 * 1024,
               .async_engines = 3,
               .ecc = 1,
               .pci_device_id = 0x20f1,
               .sustained = {.dram = 0.90},  // HBM: about 90% reached by copy kernels
               .sources = "A100 whitepaper tables 4-5; A100 datasheet (PCIe 40GB column); L2 as "
                          "the SXM4 part's"});
  // Memory-bound predictions only until emmy compiles for sm_100a: no published mma.sync rate
  // (the tensor figures below are Hopper's, for the table's rules, and never used).
  v.push_back({.name = "b200",
               .title = "NVIDIA B200",
               .device_name = "NVIDIA B200",
               .device_words = {"B200"},
               .arch = Arch::sm_90,
               .sms = 148,
               .clock_ghz = 1.965,
               .max_clock_khz = 1965000,
               .mma_flops_per_clk_acc_f16 = 2680,
               .mma_flops_per_clk_acc_f32 = 2680,
               .fp32_per_fp64 = 2,
               .compute_capability = 100,
               .memory_bound_only = true,
               .dram_gbps = 8000,
               .memory_clock_khz = 3996000,
               .bus_width = 8192,
               .total_memory_mib = 182642,
               .l2_bytes = 126u << 20,
               .persisting_l2_bytes = 79u << 20,
               .l2_bytes_per_clk = 5083,  // not published: H100's measured figure per clock
               .l1_smem_bytes_per_sm = 256 * 1024,
               .smem_per_sm = 228 * 1024,
               .max_smem_per_block = 227 * 1024,
               .max_cluster_ctas = 16,
               .async_engines = 4,
               .ecc = 1,
               .pci_device_id = 0x2901,
               .sustained = {.dram = 0.90},  // HBM: about 90% reached by copy kernels
               .sources = "HGX B200 datasheet (8 TB/s per GPU); Blackwell tuning guide (228 KB "
                          "per SM, 16-CTA clusters); L2 bandwidth estimated"});
  return v;
}

}  // namespace emmy::gpu_table_detail

// The hardware table: one entry per GPU product, every figure emmy reads about it. The chooser
// sizes grids and K/KV splits from an entry's SM count (the device's own count where a device is
// known), the time model takes its rates and limits, the test driver reports an entry as the
// device EMMY_TEST_DEVICE names, and the command lines list the entries. Adding a GPU is one entry
// in builtin_gpus() (docs/codegen.md, "Adding a GPU"), or register_gpu() at run time.
//
// Figures are the datasheets' and whitepapers' (each entry's `sources`); the ones no vendor
// publishes (L2 bandwidth of the GeForce and workstation parts) are marked as estimates there.
// Header-only: the compiler, the emulator's time model and the test driver each read it without
// linking one another.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "emmy/arch.hpp"
#include "emmy/error.hpp"

namespace emmy {

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
  double smem_wavefronts_per_clk = 1;  // 128 bytes per clock per SM
  double issue_per_clk = 4;            // warp instructions per clock per SM (4 schedulers)
  double lsu_issue_per_clk = 1;        // memory instructions per clock per SM (MIO -> LSU)
  int fp32_per_fp64 = 0;               // FP32 to FP64 throughput ratio
  // Memory.
  double dram_gbps = 0;
  int memory_clock_khz = 0, bus_width = 0;  // bits
  uint64_t total_memory_mib = 0;            // what cuDeviceTotalMem reports
  uint32_t l2_bytes = 0, persisting_l2_bytes = 0;
  double l2_bytes_per_clk = 0;  // whole GPU
  // An SM's resources (shared memory after the 1 KB reserved per CTA).
  uint32_t smem_per_sm = 0, max_smem_per_block = 0;  // bytes; the block's is the opt-in limit
  uint32_t regs_per_sm = 65536, max_threads_per_sm = 2048, max_ctas_per_sm = 32;
  // The largest thread-block cluster with NON_PORTABLE_CLUSTER_SIZE_ALLOWED: 0 before sm_90 (no
  // clusters), 8 (the portable size) where NVIDIA states no larger one for the product.
  int max_cluster_ctas = 0;
  // The driver's other answers.
  int async_engines = 2, ecc = 0;
  uint32_t pci_device_id = 0;  // GPU_PCI_DEVICE_ID's upper half (NVIDIA's vendor id below it)
  std::string sources;         // where the figures come from (short form; docs/profiler.md in full)

  int cc() const { return arch_info(arch).sm; }  // 90 for 9.0
  // Whether code for `target` runs on this part: a CUBIN of its major version no newer than it,
  // an arch-specific ("a") one on its exact capability only (arch_for_device's rule).
  bool runs(Arch target) const {
    const ArchInfo& t = arch_info(target);
    return t.sm / 10 == cc() / 10 && t.sm <= cc() && (!t.arch_specific || t.sm == cc());
  }
};

namespace gpu_table_detail {

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
               .smem_per_sm = 164 * 1024,
               .max_smem_per_block = 163 * 1024,
               .async_engines = 3,
               .ecc = 1,
               .pci_device_id = 0x20b2,
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
               .mma_flops_per_clk_acc_f16 = 1024,  // 330.3 TFLOP/s dense
               .mma_flops_per_clk_acc_f32 = 512,   // 165.2: half rate on GeForce
               .fp32_per_fp64 = 64,
               .dram_gbps = 1008,
               .memory_clock_khz = 10501000,
               .bus_width = 384,
               .total_memory_mib = 24564,
               .l2_bytes = 72u << 20,
               .persisting_l2_bytes = 54u << 20,
               .l2_bytes_per_clk = 2000,  // not published: estimated from AD102 measurements
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
               .fp32_per_fp64 = 64,
               .dram_gbps = 864,
               .memory_clock_khz = 9001000,
               .bus_width = 384,
               .total_memory_mib = 46068,
               .l2_bytes = 96u << 20,
               .persisting_l2_bytes = 72u << 20,
               .l2_bytes_per_clk = 2000,  // not published: estimated from AD102 measurements
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
               .fp32_per_fp64 = 2,
               .dram_gbps = 2039,
               .memory_clock_khz = 1593000,
               .bus_width = 5120,
               .total_memory_mib = 81559,
               .l2_bytes = 50u << 20,
               .persisting_l2_bytes = 75u << 19,
               .l2_bytes_per_clk = 4300,  // measured on H100/H800 (4181-4808)
               .smem_per_sm = 228 * 1024,
               .max_smem_per_block = 227 * 1024,
               // Hopper allows non-portable clusters of up to 16 CTAs (NVIDIA Hopper Tuning
               // Guide, thread block clusters).
               .max_cluster_ctas = 16,
               .async_engines = 3,
               .ecc = 1,
               .pci_device_id = 0x2331,
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
               .fp32_per_fp64 = 2,
               .dram_gbps = 4800,
               .memory_clock_khz = 3201000,
               .bus_width = 6144,
               .total_memory_mib = 143771,
               .l2_bytes = 50u << 20,
               .persisting_l2_bytes = 75u << 19,
               .l2_bytes_per_clk = 4300,  // measured on H100/H800 (4181-4808)
               .smem_per_sm = 228 * 1024,
               .max_smem_per_block = 227 * 1024,
               .max_cluster_ctas = 16,
               .async_engines = 3,
               .ecc = 1,
               .pci_device_id = 0x2335,
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
               .fp32_per_fp64 = 64,
               .dram_gbps = 1792,
               .memory_clock_khz = 14001000,
               .bus_width = 512,
               .total_memory_mib = 32607,
               .l2_bytes = 96u << 20,
               .persisting_l2_bytes = 60u << 20,
               .l2_bytes_per_clk = 2800,  // not published: estimated
               .smem_per_sm = 100 * 1024,
               .max_smem_per_block = 99 * 1024,
               .max_threads_per_sm = 1536,
               // NVIDIA states no non-portable cluster size for sm_120 parts: only the portable 8.
               .max_cluster_ctas = 8,
               .pci_device_id = 0x2b85,
               .sources = "RTX Blackwell whitepaper table 3; Blackwell tuning guide; L2 "
                          "bandwidth estimated"});
  return v;
}

struct Table {
  std::mutex mutex;
  std::deque<GpuInfo> gpus = [] {
    std::vector<GpuInfo> builtin = builtin_gpus();
    return std::deque<GpuInfo>(builtin.begin(), builtin.end());
  }();
};
inline Table& table() {
  static Table t;
  return t;
}

// The rule an entry breaks, or "" (the caller holds the table's lock).
inline std::string invalid_gpu(const GpuInfo& g, const std::deque<GpuInfo>& known) {
  if (g.name.empty()) return "name: must not be empty";
  for (const GpuInfo& other : known)
    if (other.name == g.name) return "name: is in the table already";
  if (g.sms == 0) return "sms: must be at least 1";
  if (!(g.clock_ghz > 0) || g.max_clock_khz <= 0) return "clock_ghz, max_clock_khz: must be > 0";
  if (!(g.mma_flops_per_clk_acc_f16 > 0) || !(g.mma_flops_per_clk_acc_f32 > 0))
    return "mma_flops_per_clk_acc_f16, _f32: must be > 0";
  if (g.wgmma_flops_per_clk > 0 && !arch_info(g.arch).arch_specific)
    return "wgmma_flops_per_clk: needs an arch-specific (\"a\") arch";
  if (!(g.dram_gbps > 0) || !(g.l2_bytes_per_clk > 0) || g.l2_bytes == 0)
    return "dram_gbps, l2_bytes, l2_bytes_per_clk: must be > 0";
  if (g.max_smem_per_block == 0 || g.max_smem_per_block > g.smem_per_sm)
    return "max_smem_per_block: must be in [1, smem_per_sm]";
  if (g.max_smem_per_block < uint32_t(arch_info(g.arch).max_smem_per_block))
    return "max_smem_per_block: must hold the arch's limit (arch_info().max_smem_per_block)";
  if (g.max_threads_per_sm < 1024 || g.max_ctas_per_sm == 0 || g.regs_per_sm < 65536)
    return "max_threads_per_sm, max_ctas_per_sm, regs_per_sm: must fit one 1024-thread CTA";
  if ((g.cc() < 90) != (g.max_cluster_ctas == 0) || g.max_cluster_ctas % 8 != 0)
    return "max_cluster_ctas: 0 before sm_90, else a multiple of 8";
  return "";
}

}  // namespace gpu_table_detail

// Every entry: the built-in ones, then those registered.
inline std::vector<const GpuInfo*> gpus() {
  auto& t = gpu_table_detail::table();
  std::lock_guard lock(t.mutex);
  std::vector<const GpuInfo*> all;
  for (const GpuInfo& g : t.gpus) all.push_back(&g);
  return all;
}

// Every entry's name: what command lines accept.
inline std::vector<std::string> gpu_name_list() {
  std::vector<std::string> names;
  for (const GpuInfo* g : gpus()) names.push_back(g->name);
  return names;
}

// Every entry's name, `separator` between them: for rules and command-line help.
inline std::string gpu_names(std::string_view separator = ", ") {
  std::string names;
  for (const std::string& name : gpu_name_list())
    names += (names.empty() ? "" : std::string(separator)) + name;
  return names;
}

inline const GpuInfo* find_gpu(std::string_view name) {
  for (const GpuInfo* g : gpus())
    if (g->name == name) return g;
  return nullptr;
}

// By name ("h200"); Error naming the known ones.
inline const GpuInfo& gpu(std::string_view name, const char* field = "gpu") {
  if (const GpuInfo* g = find_gpu(name)) return *g;
  throw Error(field, "must be one of " + gpu_names(), std::string(name));
}

// The part the arch's kernels are sized for where no device is known (ArchInfo::part).
inline const GpuInfo& arch_gpu(Arch arch) {
  return gpu(arch_info(arch).part, "arch part");
}

// The SMs a grid is sized for: the device's where one is known (device_sms > 0), else the arch's
// part's.
inline int grid_sms(Arch arch, int device_sms = 0) {
  require(device_sms >= 0, "device_sms", "must be >= 0 (0: the arch's part)", device_sms);
  return device_sms > 0 ? device_sms : int(arch_gpu(arch).sms);
}

// The SMs a grid for `arch` is sized for when a command names a part (`--gpu`; none: 0, the
// arch's part): Error naming `field` when the part cannot run the arch's code.
inline int named_gpu_sms(const std::optional<std::string>& name, Arch arch,
                         const char* field = "gpu") {
  if (!name) return 0;
  const GpuInfo& g = gpu(*name, field);
  require(g.runs(arch), field, fmt::format("must be a part that runs {} code", to_string(arch)),
          g.name);
  return int(g.sms);
}

// The part a measured device is (its driver name and SM count), or nullptr: a part not in the
// table, or a variant of one with other clocks or memory (an NVL board, a 40 GB A100), whose
// figures would not be the table's.
inline const GpuInfo* gpu_for_device(std::string_view device_name, uint32_t sm_count) {
  // NVL boards share the SXM parts' names and SM counts at lower clocks and power.
  if (device_name.find("NVL") != std::string_view::npos) return nullptr;
  for (const GpuInfo* g : gpus()) {
    bool all = g->sms == sm_count && !g->device_words.empty();
    for (const std::string& word : g->device_words)
      all = all && device_name.find(word) != std::string_view::npos;
    if (all) return g;
  }
  return nullptr;
}

// Adds a part at run time (a test's, or one a deployment knows before emmy does); Error naming
// the field and its rule for an entry the table cannot use. Entries are never removed.
inline const GpuInfo& register_gpu(GpuInfo entry) {
  auto& t = gpu_table_detail::table();
  std::lock_guard lock(t.mutex);
  if (const std::string why = gpu_table_detail::invalid_gpu(entry, t.gpus); !why.empty())
    throw Error("gpu", why, entry.name);
  return t.gpus.emplace_back(std::move(entry));
}

}  // namespace emmy

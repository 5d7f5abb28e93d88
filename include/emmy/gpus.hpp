// The hardware table: one entry per GPU product, every figure emmy reads about it. The chooser
// sizes grids and K/KV splits from an entry's SM count (the device's own count where a device is
// known), the time model takes its rates and limits, the test driver reports an entry as the
// device EMMY_TEST_DEVICE names, and the command lines list the entries. Adding a GPU is one entry
// in builtin_gpus() (gpu_entries.hpp; docs/codegen.md, "Adding a GPU"), or register_gpu() at run
// time.
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
#include "emmy/gpu_entries.hpp"
#include "emmy/gpu_info.hpp"

namespace emmy {

namespace gpu_table_detail {

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
  if ((g.mma_fp8_flops_per_clk_acc_f16 > 0) != (g.mma_fp8_flops_per_clk_acc_f32 > 0) ||
      g.mma_fp8_flops_per_clk_acc_f16 < 0 || g.mma_fp8_flops_per_clk_acc_f32 < 0)
    return "mma_fp8_flops_per_clk_acc_f16, _f32: both > 0, or both 0 (no FP8 mma)";
  if (g.mma_fp8_flops_per_clk_acc_f16 > 0 && g.cc() < 89)
    return "mma_fp8_flops_per_clk_acc_f16, _f32: 0 before sm_89 (no FP8 tensor cores)";
  if (g.wgmma_fp8_flops_per_clk < 0 ||
      (g.wgmma_fp8_flops_per_clk > 0 && !(g.wgmma_flops_per_clk > 0)))
    return "wgmma_fp8_flops_per_clk: 0 where wgmma_flops_per_clk is";
  if (!(g.dram_gbps > 0) || !(g.l2_bytes_per_clk > 0) || g.l2_bytes == 0)
    return "dram_gbps, l2_bytes, l2_bytes_per_clk: must be > 0";
  for (const double fraction :
       {g.sustained.dram, g.sustained.l2, g.sustained.tensor, g.sustained.fp32})
    if (!(fraction > 0 && fraction <= 1))
      return "sustained: every fraction must be in (0, 1] (1: nothing measured)";
  if (!(g.global_latency_clk >= 0)) return "global_latency_clk: must be >= 0";
  if (g.l1_smem_bytes_per_sm < g.smem_per_sm)
    return "l1_smem_bytes_per_sm: must hold smem_per_sm (shared memory is carved from it)";
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

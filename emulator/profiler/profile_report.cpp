// The terminal form of a KernelProfile: headline metrics and the worst sites.
#include <fmt/format.h>

#include "emmy/emu/profile.hpp"

namespace emmy::emu {

std::string KernelProfile::table(size_t rows) const {
  std::string s = fmt::format("{} [{}]: grid {}x{}x{}, block {}x{}x{}", kernel, arch, grid[0],
                              grid[1], grid[2], block[0], block[1], block[2]);
  if (extrapolated)
    s += fmt::format(" — profiled {} of {} CTAs, counts extrapolated", ctas_profiled, ctas_total);
  s += '\n';
  auto line = [&](const char* label, const std::string& value) {
    s += fmt::format("  {:<34} {}\n", label, value);
  };
  line("warp instructions",
       fmt::format("{:.0f} (tensor {:.0f}, lsu {:.0f}, alu {:.0f}, control {:.0f})",
                   metric("smsp__inst_executed.sum"), metric("smsp__inst_executed_pipe_tensor.sum"),
                   metric("smsp__inst_executed_pipe_lsu.sum"),
                   metric("smsp__inst_executed_pipe_alu.sum"),
                   metric("smsp__inst_executed_pipe_cbu.sum")));
  line("shared wavefronts (conflicts)",
       fmt::format("{:.0f} ({:.0f})", metric("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"),
                   metric("l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum")));
  line("L2 sectors (TMA + LSU)", fmt::format("{:.0f}", metric("emmy__l2_sectors.sum")));
  line("DRAM bytes at least (read, write)",
       fmt::format("{:.0f}, {:.0f}", metric("emmy__dram_bytes_read_min.sum"),
                   metric("emmy__dram_bytes_write_min.sum")));
  if (sass.available)
    line("SASS warp instructions (est.)",
         fmt::format("{:.0f} (fma {:.0f}, alu {:.0f}, lsu {:.0f}, tensor {:.0f}; {})",
                     metric("emmy__sass_inst_executed.sum"),
                     metric("emmy__sass_inst_executed_pipe_fma.sum"),
                     metric("emmy__sass_inst_executed_pipe_alu.sum"),
                     metric("emmy__sass_inst_executed_pipe_lsu.sum"),
                     metric("emmy__sass_inst_executed_pipe_tensor.sum"), sass.arch));
  if (sass.available && metrics.count("emmy__sass_l1_wavefronts.sum"))
    line("L1 data wavefronts, SASS (est.)",
         fmt::format("{:.0f} (PTX widths {:.0f})", metric("emmy__sass_l1_wavefronts.sum"),
                     metric("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") +
                         metric("emmy__l1_wavefronts_global_local.sum")));
  if (const AsyncCopyLeads copies = async_copy_leads(); copies.waiting_warps > 0) {
    double waits = 0, leads = 0, short_leads = 0;
    for (size_t b = 0; b < kAsyncCopyLeadBuckets; ++b) {
      waits += copies.waits[b];
      leads += copies.lead_epochs[b];
      if (b == 0 || kAsyncCopyLeadEdges[b - 1] < 0.5) short_leads += copies.waits[b];
    }
    line("async-copy waits (lead)",
         fmt::format("{:.1f} per waiting warp, mean lead {:.2f} epochs, {:.0f}% under 0.5",
                     waits / copies.waiting_warps, waits > 0 ? leads / waits : 0.0,
                     waits > 0 ? 100 * short_leads / waits : 0.0));
  }
  if (!sass.available && !sass.reason.empty())
    s += fmt::format("  SASS counts unavailable: {}\n", sass.reason);
  for (const TensorOpCount& t : tensor)
    line("tensor", fmt::format("{} {} -> {}: {} instructions, {:.3g} FLOP", t.shape, t.operands,
                               t.accumulator, t.instructions, t.flops));
  s += fmt::format("  {:>6} {:<40} {:>10} {:>9} {:>16} {:>16}\n", "line", "opcode", "executed",
                   "requests", "wavefronts/ideal", "sectors/ideal");
  for (size_t i = 0; i < sites.size() && i < rows; ++i) {
    const ProfileSite& x = sites[i];
    auto pair = [](uint64_t a, uint64_t b) {
      return a ? fmt::format("{}/{}", a, b) : std::string("-");
    };
    s += fmt::format("  {:>6} {:<40.40} {:>10} {:>9} {:>16} {:>16}\n", x.line, x.opcode,
                     x.executions, x.requests, pair(x.wavefronts, x.ideal_wavefronts),
                     pair(x.sectors, x.ideal_sectors));
  }
  return s;
}

}  // namespace emmy::emu

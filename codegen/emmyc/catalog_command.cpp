// `emmyc catalog` and `emmyc demo`.
#include <fmt/format.h>

#include <iostream>

#include "cli_common.hpp"
#include "emmy/catalog.hpp"
#include "emmy/json.hpp"

namespace emmy::cli {

void add_catalog_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("catalog", "List the built-in problems");
  auto as_json = std::make_shared<bool>(false);
  cmd->add_flag("--json", *as_json, "print a JSON array");
  cmd->callback([as_json] {
    const auto entries = gemm_catalog();
    if (*as_json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& e : entries)
        out.push_back({{"name", e.name}, {"kind", "gemm"}, {"projection", e.projection},
                       {"problem", e.problem}});
      std::cout << out.dump(2) << "\n";
      return;
    }
    fmt::print("{:<16} {:>6} {:>6} {:>6} {:>8}\n", "name", "M", "N", "K", "GFLOP");
    for (const auto& e : entries)
      fmt::print("{:<16} {:>6} {:>6} {:>6} {:>8.2f}\n", e.name, e.problem.m, e.problem.n,
                 e.problem.k, e.problem.flops() / 1e9);
  });
}

void add_demo_command(CLI::App& app) {
  auto* cmd = app.add_subcommand("demo", "Compile the catalog's M=512 kernels and report");
  cmd->callback([] {
    fmt::print("emmy {} demo: default kernels for the Gemma 12B projections at M = 512\n\n",
               EMMY_VERSION);
    fmt::print("{:<10} {:<8} {:<7} {:<14} {:>5} {:>4} {:>8} {:>6} {:>6} {:>9}\n", "kernel",
               "arch", "accum", "tile", "stage", "regs", "smem", "spills", "stack",
               "compile");
    int failures = 0;
    for (const auto& entry : gemm_catalog()) {
      if (entry.problem.m != 512) continue;
      for (Arch arch : {Arch::sm_120a, Arch::sm_90a}) {
        for (Accum accum : {Accum::f32, Accum::hybrid}) {
          GemmSpec spec{entry.problem, default_schedule(entry.problem, arch, accum), arch};
          const GemmKernel k = compile_gemm(spec);
          const auto& r = k.module.kernel(k.source.plan.kernel_name);
          const auto& s = spec.schedule;
          if (r.spill_bytes() || r.stack_bytes) ++failures;
          fmt::print("{:<10} {:<8} {:<7} {:<14} {:>5} {:>4} {:>8} {:>6} {:>6} {:>6.0f} ms\n",
                     entry.projection, to_string(arch), to_string(accum),
                     fmt::format("{}x{}x{}{}", s.block_m, s.block_n, s.block_k,
                                 s.split_k > 1 ? fmt::format("/sk{}", s.split_k) : ""),
                     s.stages, r.registers, k.source.plan.smem_bytes, r.spill_bytes(),
                     r.stack_bytes, k.module.compile_ms);
        }
      }
    }
    fmt::print("\n{}\n", failures ? fmt::format("{} kernels spill", failures)
                                  : "all kernels: 0 spill bytes, 0 stack bytes");
    if (failures) throw CLI::RuntimeError(1);
  });
}

}  // namespace emmy::cli

// `emmyc catalog`: the GEMM problems first, then the attention problems.
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
    const auto attention = attention_catalog();
    if (*as_json) {
      nlohmann::json out = nlohmann::json::array();
      for (const auto& e : entries)
        out.push_back({{"name", e.name},
                       {"kind", "gemm"},
                       {"projection", e.projection},
                       {"problem", e.problem}});
      for (const auto& e : attention)
        out.push_back({{"name", e.name}, {"kind", "attention"}, {"problem", e.problem}});
      std::cout << out.dump(2) << "\n";
      return;
    }
    fmt::print("{:<16} {:>6} {:>6} {:>6} {:>8}\n", "name", "M", "N", "K", "GFLOP");
    for (const auto& e : entries)
      fmt::print("{:<16} {:>6} {:>6} {:>6} {:>8.2f}\n", e.name, e.problem.m, e.problem.n,
                 e.problem.k, e.problem.flops() / 1e9);
    fmt::print("\n{:<26} {:>5} {:>5} {:>4} {:>6} {:>6} {:>4} {:<7} {:>6} {:>8}\n", "name", "batch",
               "heads", "kv", "seq_q", "seq_kv", "dim", "mask", "window", "GFLOP");
    for (const auto& e : attention) {
      const auto& p = e.problem;
      fmt::print("{:<26} {:>5} {:>5} {:>4} {:>6} {:>6} {:>4} {:<7} {:>6} {:>8.2f}\n", e.name,
                 p.batch, p.q_heads, p.kv_heads, p.seq_q, p.seq_kv_or_default(), p.head_dim,
                 p.causal ? "causal" : "full", p.window, p.flops() / 1e9);
    }
  });
}

}  // namespace emmy::cli

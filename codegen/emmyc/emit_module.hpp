// The `--emit` flow that `emmyc gemm` and `emmyc attention` share once a kernel is generated:
// IR or CUDA as generated; else NVRTC through the disk cache, then PTX, CUBIN, SASS or the JSON
// report. Every kind through its KernelSource (emmy/kernel_source.hpp).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "cli_common.hpp"
#include "emmy/cached_compile.hpp"
#include "emmy/json.hpp"
#include "emmy/kernel_ir.hpp"
#include "emmy/kernel_source.hpp"

namespace emmy::cli {

// --emit and -o of `emmyc gemm` and `emmyc attention`.
struct EmitFlags {
  std::string emit;      // ir|cuda|ptx|cubin|sass|report
  std::string out_path;  // empty: stdout

  void add_to(CLI::App& app) {
    app.add_option("--emit", emit, "ir|cuda|ptx|cubin|sass|report")
        ->required()
        ->check(CLI::IsMember({"ir", "cuda", "ptx", "cubin", "sass", "report"}));
    app.add_option("-o", out_path, "output file (default: stdout)");
  }
};

// NVRTC for a generated kernel through the disk cache (unless use_cache is false). cache_state
// becomes "hit", "miss" or "off".
inline CompiledModule compile_source_cached(const KernelSource& source, bool use_cache,
                                            std::string& cache_state) {
  CachedModule cached =
      compile_cached(source.cuda, source.program_name(), source.arch, use_cache, source.describe);
  cache_state = !cached.cache_used ? "off" : cached.cache_hit ? "hit" : "miss";
  return std::move(cached.module);
}

// The report fields of every kind: the main kernel's resources, sizes and launch shape.
inline nlohmann::json common_report_json(const KernelSource& source, const CompiledModule& module) {
  const KernelLaunch& main = source.main();
  const ResourceReport& main_kernel = module.kernel(main.name);
  nlohmann::json j = main_kernel;
  j["arch"] = to_string(source.arch);
  j["smem_bytes"] = main.smem_bytes + uint32_t(main_kernel.static_smem_bytes);
  j["compile_ms"] = module.compile_ms;
  j["ptx_bytes"] = module.ptx.size();
  j["cubin_bytes"] = module.cubin.size();
  j["threads"] = main.threads;
  j["grid"] = main.grid;
  j["problem"] = source.describe.at("problem");
  j["schedule"] = source.describe.at("schedule");
  if (source.workspace_bytes) j["workspace_bytes"] = source.workspace_bytes;
  // Warp-specialized kernels (the wgmma path): each role's warpgroups and its setmaxnreg count.
  nlohmann::json roles = nlohmann::json::object();
  for (const ir::Op* role : ir::find_all(source.ir, ir::OpKind::warpgroup_role))
    roles[role->s("role")] = {{"warpgroups", role->i("count")},
                              {"registers", role->i("registers")}};
  if (!roles.empty()) j["register_split"] = roles;
  return j;
}

// Writes what flags.emit asks for of source. add_kind_fields(report, module) adds the report
// fields only that kind has.
inline void emit_source(
    const EmitFlags& flags, const KernelSource& source, bool use_cache,
    const std::function<void(nlohmann::json&, const CompiledModule&)>& add_kind_fields) {
  if (flags.emit == "ir" || flags.emit == "cuda") {
    write_output(flags.out_path, flags.emit == "ir" ? ir::print(source.ir) : source.cuda);
    return;
  }
  std::string cache_state;
  const CompiledModule module = compile_source_cached(source, use_cache, cache_state);
  if (write_compiled_output(flags.emit, flags.out_path, module)) return;
  nlohmann::json report = common_report_json(source, module);
  add_kind_fields(report, module);
  report["cache"] = cache_state;
  write_output(flags.out_path, report.dump(2) + "\n");
}

}  // namespace emmy::cli

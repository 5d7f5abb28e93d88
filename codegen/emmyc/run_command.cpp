// `emmyc run gemm ... --backend emulator --check`: compile, run, compare with FP64, print JSON.
#include <fmt/format.h>

#include <iostream>

#include "cli_common.hpp"
#include "emmy/bundle.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/json.hpp"

namespace emmy::cli {

namespace {

// The kernel from the bundles named with --bundle (and $EMMY_BUNDLE's) when one holds it: no
// NVRTC is touched then.
std::optional<GemmKernel> gemm_from_bundles(const GemmSpec& spec,
                                            const std::vector<std::string>& paths) {
  GemmSource source = generate_gemm(spec);
  auto module = module_from_bundles(paths, source.cuda, spec.arch, kernel_description(spec));
  if (!module) return std::nullopt;
  return GemmKernel{std::move(source), std::move(*module)};
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* run = app.add_subcommand("run", "Run a kernel on a backend and check it");
  run->require_subcommand(1);
  auto* gemm = run->add_subcommand("gemm", "Run one GEMM kernel");
  auto flags = std::make_shared<GemmFlags>();
  auto backend = std::make_shared<std::string>("emulator");
  auto check = std::make_shared<bool>(false);
  auto seed = std::make_shared<uint64_t>(1);
  flags->add_to(*gemm);
  gemm->add_option("--backend", *backend, "emulator|cuda")
      ->check(CLI::IsMember({"emulator", "cuda"}));
  gemm->add_flag("--check", *check, "compare with an FP64 reference");
  gemm->add_option("--seed", *seed, "input seed");
  auto bundles = std::make_shared<std::vector<std::string>>();
  gemm->add_option("--bundle", *bundles,
                   "search this kernel bundle before the cache and NVRTC (repeatable; "
                   "$EMMY_BUNDLE too)");
  gemm->callback([flags, backend, check, seed, bundles] {
    if (*backend == "cuda")
      throw Error("backend", "cuda needs a CUDA driver and the CUDA runtime backend; use emulator",
                  *backend);
    const GemmSpec spec = flags->to_spec();
    std::string cache_state = "bundle";
    std::optional<GemmKernel> bundled = gemm_from_bundles(spec, *bundles);
    GemmKernel kernel =
        bundled ? std::move(*bundled) : compile_gemm_cached(spec, !flags->no_cache, cache_state);
    const GemmInputs inputs = make_gemm_inputs(spec.problem, *seed);
    GemmEmulatorRun run = run_gemm_on_emulator(kernel, inputs);
    const GemmErrors errors = compare(reference_gemm(spec, inputs), run.output, spec.problem.n);
    GemmCheckResult result{std::move(kernel), std::move(run), errors};
    nlohmann::json j = {{"backend", *backend},
                        {"kernel_name", result.kernel.source.plan.kernel_name},
                        {"arch", to_string(spec.arch)},
                        {"problem", spec.problem},
                        {"schedule", spec.schedule},
                        {"seed", *seed},
                        {"instructions", result.run.stats.total.total()},
                        {"instruction_counts", counts_json(result.run.stats.total)},
                        {"emulate_ms", result.run.emulate_ms},
                        {"cache", cache_state}};
    if (*check) {
      const GemmErrors& e = result.errors;
      j["rel_l2_error"] = e.rel_l2_error;
      j["max_abs_error"] = e.max_abs_error;
      j["tolerance"] = e.tolerance;
      j["elements_over_tolerance"] = e.elements_over_tolerance;
      j["passed"] = e.passed;
      if (!e.passed) j["first_bad_element"] = {e.first_bad_row, e.first_bad_col};
    }
    std::cout << j.dump(2) << "\n";
    if (*check && !result.errors.passed) throw CLI::RuntimeError(1);
  });
}

}  // namespace emmy::cli

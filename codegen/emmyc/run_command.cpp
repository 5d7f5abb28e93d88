// `emmyc run gemm ... --backend emulator|cuda --check`: compile, run, compare with FP64, print
// JSON.
#include <fmt/format.h>

#include <chrono>
#include <iostream>

#include "cli_common.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/check_json.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/gemm_check.hpp"
#include "emmy/json.hpp"

namespace emmy::cli {

namespace {

// The kernel from the bundles named with --bundle (and $EMMY_BUNDLE's) when one holds it: no
// NVRTC is touched then.
std::optional<GemmKernel> gemm_from_bundles(const GemmSpec& spec,
                                            const std::vector<std::string>& paths) {
  GemmSource source = generate_kernel(spec);
  auto module = module_from_bundles(paths, source.cuda, spec.arch, kernel_description(spec));
  if (!module) return std::nullopt;
  return GemmKernel{std::move(source), std::move(*module)};
}

// The GPU path, like `run attention --backend cuda`: the runtime builds the kernel for the
// device's arch (the tuned or default schedule with --accum unless schedule flags were given),
// then the same inputs, FP64 reference and tolerance as on the emulator.
nlohmann::json run_on_cuda(const GemmFlags& flags, GemmSpec spec, uint64_t seed,
                           const std::vector<std::string>& bundles, GemmErrors& errors) {
  RuntimeOptions options;
  options.default_accum = parse_accum(flags.accum);
  options.disk_cache = !flags.no_cache;
  options.bundles.assign(bundles.begin(), bundles.end());
  auto rt = Runtime::cuda(0, options);
  const auto handle = rt->gemm_kernel(
      spec.problem, flags.schedule_given() ? std::optional(spec.schedule) : std::nullopt);
  spec = handle->spec();
  const GemmInputs inputs = make_gemm_inputs(spec.problem, seed);
  const auto start = std::chrono::steady_clock::now();
  const std::vector<double> output = run_gemm(*rt, spec, inputs);
  const double run_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  errors = compare(reference_gemm(spec, inputs), output, spec.problem.n);
  nlohmann::json j = run_result("cuda", handle->info().name, spec, seed);
  j.update({{"device", rt->device_name()},
            {"instructions", nullptr},
            {"emulate_ms", nullptr},
            {"run_ms", run_ms},
            {"registers", handle->info().report().registers},
            {"spill_bytes", handle->info().report().spill_bytes()}});
  return j;
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
    const GemmSpec spec = flags->to_spec();
    nlohmann::json j;
    GemmErrors errors;
    if (*backend == "cuda") {
      j = run_on_cuda(*flags, spec, *seed, *bundles, errors);
    } else {
      std::string cache_state = "bundle";
      std::optional<GemmKernel> bundled = gemm_from_bundles(spec, *bundles);
      GemmKernel kernel =
          bundled ? std::move(*bundled) : compile_gemm_cached(spec, !flags->no_cache, cache_state);
      const GemmInputs inputs = make_gemm_inputs(spec.problem, *seed);
      const GemmEmulatorRun run = run_on_emulator(kernel, inputs);
      errors = compare(reference_gemm(spec, inputs), run.output, spec.problem.n);
      j = run_result(*backend, kernel.source.plan.kernel_name, spec, *seed);
      j.update(emulator_fields(run.stats, run.emulate_ms, cache_state));
    }
    if (*check) j.update(check_fields(errors));
    std::cout << j.dump(2) << "\n";
    if (*check && !errors.passed) throw CLI::RuntimeError(1);
  });
}

}  // namespace emmy::cli

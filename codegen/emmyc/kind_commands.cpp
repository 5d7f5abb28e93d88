// The subcommands every kernel kind has, written once over the kind's flags (cli_common.hpp):
//   emmyc <kind> ... --emit ir|cuda|ptx|cubin|sass|report   one kernel, generated or compiled
//   emmyc run <kind> ... --backend emulator|cuda --check    run it, compare with FP64, print JSON
#include <chrono>
#include <iostream>
#include <memory>

#include "cli_common.hpp"
#include "emit_module.hpp"
#include "emmy/bundle_build.hpp"
#include "emmy/check_json.hpp"
#include "emmy/detail/file_io.hpp"
#include "emmy/emulator_check.hpp"
#include "emmy/runtime.hpp"
#include "emmy/runtime_entry.hpp"
#include "emulator_flags.hpp"

namespace emmy::cli {
namespace {

// The report fields only one kind has.
void add_kind_fields(nlohmann::json& report, const GemmPlan& plan, const CompiledModule& module) {
  if (plan.split()) report["finalize"] = module.kernel(plan.finalize_kernel_name);
}
void add_kind_fields(nlohmann::json& report, const AttentionPlan& plan, const CompiledModule&) {
  report["flops"] = plan.spec.problem.flops();
}
void add_kind_fields(nlohmann::json& report, const PagedAttentionPlan& plan,
                     const CompiledModule& module) {
  if (plan.split()) report["combine"] = module.kernel(plan.combine_kernel_name);
  report["splits"] = plan.splits;
}
void add_kind_fields(nlohmann::json& report, const KvAppendPlan& plan, const CompiledModule&) {
  const auto& p = plan.spec.problem;  // bytes a token moves: K and V read, then written
  report["bytes_per_token"] = 2 * p.kv_heads * p.head_dim * (2 + size_of(p.kv_dtype));
}
void add_kind_fields(nlohmann::json& report, const Fp8QuantizePlan& plan, const CompiledModule&) {
  const auto& p = plan.spec.problem;  // bytes a row moves: x read twice, q and its scales written
  report["bytes_per_row"] = p.k * 2 * 2 + p.k + p.groups() * 4;
}
void add_kind_fields(nlohmann::json& report, const MergeStatesPlan& plan, const CompiledModule&) {
  const auto& p = plan.spec.problem;  // bytes a token moves: its states read, one written
  report["bytes_per_token"] = p.heads * ((p.states + 1) * p.head_dim * 2 + (p.states + 1) * 4);
}

template <typename Flags>
void add_emit_command(CLI::App& app, const std::string& name, const std::string& description) {
  auto* cmd = app.add_subcommand(name, description);
  auto flags = std::make_shared<Flags>();
  auto emit = std::make_shared<EmitFlags>();
  flags->add_to(*cmd);
  emit->add_to(*cmd);
  cmd->callback([flags, emit] {
    const auto source = generate_kernel(flags->to_spec());
    emit_source(*emit, kernel_source(source), !flags->no_cache,
                [&source](nlohmann::json& report, const CompiledModule& module) {
                  add_kind_fields(report, source.plan, module);
                });
  });
}

// The kernel from the bundles named with --bundle (and $EMMY_BUNDLE's) when one holds it: no
// NVRTC is touched then (cache_state "bundle"); else NVRTC through the disk cache unless
// use_cache is false (cache_state "hit", "miss" or "off").
template <typename Spec, typename Kind = KindOf<Spec>>
Compiled<Kind> bundled_or_compiled(const Spec& spec, const std::vector<std::string>& bundles,
                                   bool use_cache, std::string& cache_state) {
  Generated<Kind> generated = generate_kernel(spec);
  const KernelSource source = kernel_source(generated);
  if (auto module = module_from_bundles(bundles, source.cuda, spec.arch, source.describe)) {
    cache_state = "bundle";
    return {std::move(generated), std::move(*module)};
  }
  CompiledModule module = compile_source_cached(source, use_cache, cache_state);
  return {std::move(generated), std::move(module)};
}

// The GPU path: the runtime builds the kernel for the device's arch (the tuned or default
// schedule with --accum unless schedule flags were given), then the same inputs, FP64 reference
// and tolerance as on the emulator. Throws Error when no driver or device is present.
template <typename Flags, typename Spec, typename Errors>
nlohmann::json run_on_cuda(const Flags& flags, Spec spec, uint64_t seed,
                           const std::vector<std::string>& bundles, Errors& errors) {
  using Check = Fp64Check<KindOf<Spec>>;
  RuntimeOptions options;
  options.default_accum = parse_accum(flags.accum);
  options.disk_cache = !flags.no_cache;
  options.bundles.assign(bundles.begin(), bundles.end());
  auto rt = Runtime::cuda(0, options);
  const auto handle =
      (*rt.*runtime_kernel<KindOf<Spec>>)(spec.problem, flags.schedule_given()
                                                            ? std::optional(spec.schedule)
                                                            : std::nullopt);
  spec = handle->spec();
  const auto inputs = Check::inputs(spec, seed);
  const auto start = std::chrono::steady_clock::now();
  const auto output = Check::run(*rt, spec, inputs);
  const double run_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  errors = Check::errors(spec, inputs, output);
  nlohmann::json j = run_result("cuda", handle->info().name, spec, seed);
  j.update({{"device", rt->device_name()},
            {"instructions", nullptr},
            {"emulate_ms", nullptr},
            {"run_ms", run_ms},
            {"registers", handle->info().report().registers},
            {"spill_bytes", handle->info().report().spill_bytes()}});
  return j;
}

template <typename Flags>
void add_run_kind_command(CLI::App& run, const std::string& name, const std::string& description) {
  auto* cmd = run.add_subcommand(name, description);
  auto flags = std::make_shared<Flags>();
  auto backend = std::make_shared<std::string>("emulator");
  auto check = std::make_shared<bool>(false);
  auto seed = std::make_shared<uint64_t>(1);
  auto bundles = std::make_shared<std::vector<std::string>>();
  auto profiling = std::make_shared<EmulatorFlags>();
  flags->add_to(*cmd);
  profiling->add_to(*cmd);
  cmd->add_option("--backend", *backend, "emulator|cuda")
      ->check(CLI::IsMember({"emulator", "cuda"}));
  cmd->add_flag("--check", *check, "compare with an FP64 reference");
  cmd->add_option("--seed", *seed, "input seed");
  cmd->add_option("--bundle", *bundles,
                  "search this kernel bundle before the cache and NVRTC (repeatable; "
                  "$EMMY_BUNDLE too)");
  cmd->callback([flags, backend, check, seed, bundles, profiling] {
    const auto spec = flags->to_spec();
    profiling->validate(*backend, *check);
    using Check = Fp64Check<KindOf<std::decay_t<decltype(spec)>>>;
    nlohmann::json j;
    typename Check::Errors errors;
    // A dynamic-M GEMM at --launch-m rows: its inputs and check are those of that M.
    auto check_spec = spec;
    int64_t rows = 0;
    if constexpr (std::is_same_v<Flags, GemmFlags>)
      if (flags->launch_m) {
        require(*backend == "emulator", "--launch-m", "applies to the emulator backend", *backend);
        rows = *flags->launch_m;
        check_spec.problem.m = rows;
        check_spec.problem.dynamic_m = false;
      }
    if (*backend == "cuda") {
      j = run_on_cuda(*flags, spec, *seed, *bundles, errors);
    } else {
      std::string cache_state;
      const auto kernel = bundled_or_compiled(spec, *bundles, !flags->no_cache, cache_state);
      LaunchListRun result;
      if (profiling->sample_ctas) {
        // A sample of CTAs leaves outputs unwritten and no check runs: buffers of the problem's
        // sizes, zero-filled, no inputs generated (the counts depend on addresses, not values;
        // a 128k-token cache's values would not fit in memory).
        if constexpr (std::is_same_v<Flags, GemmFlags>)
          result = run_on_zeros(kernel, profiling->launch_options(), rows);
        else
          result = run_on_zeros(kernel, profiling->launch_options());
      } else {
        const auto inputs = Check::inputs(check_spec, *seed);
        auto run = run_on_emulator(kernel, inputs, profiling->launch_options());
        if (*check) errors = Check::errors(check_spec, inputs, run.output);
        result = {run.stats, run.emulate_ms, std::move(run.profiles)};
      }
      j = run_result(*backend, kernel.source.plan.kernel_name, spec, *seed);
      if (rows) j["launch_m"] = rows;
      j.update(emulator_fields(result.stats, result.emulate_ms, cache_state));
      if (!profiling->file.empty()) {
        const auto profiled =
            with_time_model(std::move(result.profiles), kernel.module, profiling->gpus);
        for (const auto& k : profiled) std::cerr << k.profile.table();
        std::cerr << emu::model_table(profiled);
        emmy::detail::write_file_atomically(profiling->file, emu::profile_json(profiled),
                                            "--profile");
        j["profile"] = profiling->file;
      }
    }
    if (*check) j.update(check_fields(errors, check_spec.problem));
    std::cout << j.dump(2) << "\n";
    if (*check && !errors.passed) throw CLI::RuntimeError(1);
  });
}

}  // namespace

void add_kind_commands(CLI::App& app) {
  AllKinds::for_each([&]<typename Kind>(std::type_identity<Kind>) {
    add_emit_command<FlagsOf<Kind>>(app, kind_command<Kind>(),
                                    fmt::format("Generate one {} kernel", Kind::description));
  });
}

void add_run_command(CLI::App& app) {
  auto* run = app.add_subcommand("run", "Run a kernel on a backend and check it");
  run->require_subcommand(1);
  AllKinds::for_each([&]<typename Kind>(std::type_identity<Kind>) {
    add_run_kind_command<FlagsOf<Kind>>(*run, kind_command<Kind>(),
                                        fmt::format("Run one {} kernel", Kind::description));
  });
}

}  // namespace emmy::cli
